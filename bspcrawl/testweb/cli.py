"""Command-line hooks of the test web: ``bspcrawl testweb serve | truth | seeds | hostile``.

Each ``cmd_*`` turns parsed arguments into a web, runs and returns its exit code; mistakes
raise ValueError (or OSError) with a one-line message for the caller to print. The server
modules (asyncio) are imported only when a command serves.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Sequence
from pathlib import Path

from bspcrawl.testweb.model import Web
from bspcrawl.testweb.options import add_config_arguments, config_from_args

KINDS = ("must_fetch", "must_not", "may_give_up", "trap_limit", "copies")


def _latency(text: str) -> tuple[float, float]:
    try:
        values = [float(v) for v in text.split(",")]
    except ValueError:
        values = []
    if len(values) == 1:
        values *= 2
    if len(values) != 2 or not 0 <= values[0] <= values[1]:
        raise argparse.ArgumentTypeError(f"expected LO,HI seconds with 0 <= LO <= HI: {text!r}")
    return values[0], values[1]


def add_arguments(parser: argparse.ArgumentParser, command: str | None = None) -> None:
    """Add the WebConfig options, plus those of ``command`` (of every command when None)."""
    add_config_arguments(parser)
    if command in (None, "serve"):
        parser.add_argument("--latency", type=_latency, default=None, metavar="LO[,HI]",
                            help="delay each response by a random time in [LO, HI] seconds")
        parser.add_argument("--log", type=Path, default=None, metavar="FILE",
                            help="append one line per request: host, path, start, end, status")
    if command in (None, "truth"):
        parser.add_argument("--seeds", type=Path, default=None, metavar="FILE",
                            help="seed URLs, one per line (default: the web's default seeds)")
        parser.add_argument(
            "--kind", choices=KINDS, default="must_fetch",
            help="which URLs: must_fetch (the truth), must_not (must never be requested), "
            "may_give_up (may fail or be skipped), trap_limit (each trap host's origin "
            "and page limit, tab-separated), copies (each mirrored page's URL, the URL "
            "it copies and exact or near, tab-separated) (default: %(default)s)")


def read_seeds(path: str | Path) -> list[str]:
    """Seed URLs of a file: one per line, blank lines and ``#`` comments skipped."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise ValueError(f"cannot read seeds file {path}: {e}") from None
    lines = (line.strip() for line in text.splitlines())
    return [line for line in lines if line and not line.startswith("#")]


def cmd_serve(args: argparse.Namespace) -> int:
    """Serve the web until SIGINT/SIGTERM."""
    from bspcrawl.testweb.server import serve_forever  # asyncio: imported only to serve

    serve_forever(Web(config_from_args(args)), latency=getattr(args, "latency", None),
                  log=getattr(args, "log", None), announce=lambda line: print(line, flush=True))
    return 0


def cmd_truth(args: argparse.Namespace) -> int:
    """Print the URLs a correct crawl from the seeds fetches, one per line, sorted
    (``--kind``: or those it must not fetch, or may give up; or the trap limits)."""
    web = Web(config_from_args(args))
    path = getattr(args, "seeds", None)
    seeds = read_seeds(path) if path is not None else None
    if seeds is not None and not seeds:
        raise ValueError(f"seeds file {path} has no URLs")
    kind = getattr(args, "kind", "must_fetch")
    if kind == "trap_limit":
        lines = [f"{o}\t{web.trap_limit(o)}" for o in web.trap_hosts()]
    elif kind == "copies":
        lines = ["\t".join(copy) for copy in web.copies()]
    elif kind == "must_fetch":
        lines = web.truth(seeds)
    else:
        truth = web.categories(seeds)
        lines = truth.must_not if kind == "must_not" else truth.may
    sys.stdout.write("".join(line + "\n" for line in lines))
    return 0


def cmd_seeds(args: argparse.Namespace) -> int:
    """Print the web's default seed URLs, one per line."""
    sys.stdout.write("".join(u + "\n" for u in Web(config_from_args(args)).seeds()))
    return 0


def add_hostile_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``hostile``: the fields of a HostileConfig, ``--log`` and ``--seeds``."""
    parser.add_argument("--seed", type=int, default=1, help="RNG seed of every answer "
                        "(default: %(default)s)")
    parser.add_argument("--hosts", type=int, default=8, help="hosts that answer, 127.1.0.1, "
                        "127.1.0.2, ... (default: %(default)s)")
    parser.add_argument("--pages", type=int, default=50, help="pages /p/0 .. /p/N-1 of each "
                        "host, besides its home / (default: %(default)s)")
    parser.add_argument("--port", type=int, default=8766, help="TCP port of every host; 0: a "
                        "free one, shown in the first line (default: %(default)s)")
    parser.add_argument("--refused", type=int, default=8, help="hosts linked to where nothing "
                        "listens, the addresses after the web's (at most 50) "
                        "(default: %(default)s)")
    parser.add_argument("--max-stall", type=float, default=2.0, metavar="S",
                        help="longest stall, trickle or hold of an answer, seconds "
                        "(default: %(default)s)")
    parser.add_argument("--log", type=Path, default=None, metavar="FILE",
                        help="append one line per request: host, target, start, end, kind "
                        "(status/view/shape/connection)")
    parser.add_argument("--seeds", action="store_true",
                        help="print the seed URLs (every host's home page) and exit")


def cmd_hostile(args: argparse.Namespace) -> int:
    """Serve the hostile web of the fuzzer (seeded hostile answers) until SIGINT/SIGTERM.

    The first line printed says where it listens (it holds ``127.1.``); ``--seeds``
    prints the seed URLs instead."""
    from bspcrawl.testweb import hostile  # asyncio: imported only to serve

    config = hostile.HostileConfig(**{f.name: getattr(args, f.name)
                                      for f in dataclasses.fields(hostile.HostileConfig)})
    if args.seeds:
        sys.stdout.write("".join(u + "\n" for u in config.seeds()))
        return 0
    if not config.port:
        config = config.on_free_port()
    hostile.serve_forever(config, log=args.log, announce=lambda line: print(line, flush=True))
    return 0


COMMANDS = {"serve": cmd_serve, "truth": cmd_truth, "seeds": cmd_seeds, "hostile": cmd_hostile}


def add_subcommands(subparsers: argparse._SubParsersAction) -> None:
    """Add the parsers of :data:`COMMANDS` (``func`` set) to ``subparsers``."""
    for name, func in COMMANDS.items():
        sub = subparsers.add_parser(name, help=func.__doc__.splitlines()[0].rstrip("."),
                                    description=func.__doc__)
        if name == "hostile":
            add_hostile_arguments(sub)
        else:
            add_arguments(sub, name)
        sub.set_defaults(func=func)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m bspcrawl.testweb serve|truth|seeds|hostile [options]``."""
    parser = argparse.ArgumentParser(prog="python -m bspcrawl.testweb",
                                     description="A deterministic local web on loopback.")
    add_subcommands(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except (OSError, ValueError) as e:
        print(f"{parser.prog} {args.command}: error: {e}", file=sys.stderr)
        return 2
