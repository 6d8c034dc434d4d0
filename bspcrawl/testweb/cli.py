"""Command-line hooks of the test web: ``bspcrawl testweb serve | truth | seeds``.

:func:`add_arguments` adds the :class:`WebConfig` options (one per field, plus
``--adversarial``: every adversarial behaviour on, :data:`~.model.ADVERSARIAL`, unless an
option says otherwise) and a command's own options to a parser, :func:`config_from_args`
turns parsed arguments back into a WebConfig, and
``cmd_serve`` / ``cmd_truth`` / ``cmd_seeds`` run a command and return its exit code.
Mistakes raise ValueError (or OSError) with a one-line message for the caller to print.
``python -m bspcrawl.testweb`` wires them up on its own (see :func:`main`).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Sequence
from pathlib import Path

from bspcrawl.testweb.model import ADVERSARIAL, Web, WebConfig

_HELP = {
    "seed": "RNG seed of the whole web",
    "pages": "number of HTML pages",
    "hosts": "number of sites (127.1.0.1, 127.1.0.2, ...)",
    "port": "TCP port of every site",
    "min_kb": "smallest page, KiB",
    "max_kb": "largest page, KiB",
    "cross_host": "fraction of links to another host",
    "site_skew": "site sizes ~ 1/rank**skew (1: Zipf; 0: all alike)",
    "dead_links": "fraction of links that answer 404",
    "redirects": "fraction of pages reachable only through a 301/302",
    "unreachable": "fraction of pages linked from nowhere",
    "seed_hosts": "default seeds: home pages of this many hosts",
    "max_links": "largest number of links on a page",
    "epoch": "crawl epoch: some pages change between epochs (0: today's web)",
    "change": "chance that a page changes between two epochs",
    "expires": "fraction of pages with an Expires a year ahead (they never change)",
    "latency_ms": "median per-host delay before each response, ms (0: none)",
    "latency_sigma": "lognormal sigma of per-host delays and bandwidths (0: all the same)",
    "bandwidth_kb": "median per-host bandwidth, KiB/s (0: unlimited)",
    "dead_hosts": "hosts that refuse connections",
    "reset_hosts": "hosts that reset connections",
    "slow_hosts": "hosts that answer after 1 s at 2 KiB/s",
    "throttle_hosts": "hosts that answer 429 + Retry-After to requests < 1 s apart",
    "flaky_hosts": "hosts that answer bursts of 5xx (503 + Retry-After)",
    "soft404": "fraction of sites answering unknown paths 200 'not found'",
    "mirrors": "hosts serving a copy of a site",
    "redirect_traps": "a host with redirect loops and an 8-hop chain",
    "junk": "a host of non-HTML, broken, nested and mis-encoded pages",
    "huge": "a 5 MiB page",
    "bomb": "a gzip bomb (1 GiB inflated)",
    "traps": "spider traps: comma-separated calendar,session,deep, or all",
    "trap_budget": "per-host page budget of a correct crawler (0: auto)",
}
_TYPES = {"int": int, "float": float, "str": str}
KINDS = ("must_fetch", "must_not", "may_give_up", "trap_limit")


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
    """Add the WebConfig options and ``--adversarial``, plus ``serve``'s (``--latency``,
    ``--log``) and ``truth``'s (``--seeds``, ``--kind``) when ``command`` names them (all
    when it is None). Options default to None: :func:`config_from_args` fills them in."""
    group = parser.add_argument_group("test web")
    group.add_argument(
        "--adversarial",
        action="store_true",
        help="every adversarial behaviour on, with seeded defaults (other options win): "
        + ", ".join(f"{k}={v}" for k, v in ADVERSARIAL.items()),
    )
    for f in dataclasses.fields(WebConfig):
        flag = "--" + f.name.replace("_", "-")
        if f.type == "bool":
            group.add_argument(
                flag, action=argparse.BooleanOptionalAction, help=f"{_HELP[f.name]} (default: off)"
            )
            continue
        kind = _TYPES[str(f.type)]
        group.add_argument(
            flag,
            type=kind,
            metavar={int: "N", float: "F", str: "S"}[kind],
            help=f"{_HELP[f.name]} (default: {f.default!r})",
        )
    if command in (None, "serve"):
        parser.add_argument(
            "--latency",
            type=_latency,
            default=None,
            metavar="LO[,HI]",
            help="delay each response by a random time in [LO, HI] seconds",
        )
        parser.add_argument(
            "--log",
            type=Path,
            default=None,
            metavar="FILE",
            help="append one line per request: host, path, start, end, status",
        )
    if command in (None, "truth"):
        parser.add_argument(
            "--seeds",
            type=Path,
            default=None,
            metavar="FILE",
            help="seed URLs, one per line (default: the web's default seeds)",
        )
        parser.add_argument(
            "--kind",
            choices=KINDS,
            default="must_fetch",
            help="which URLs: must_fetch (the truth), must_not (must never be requested), "
            "may_give_up (may fail or be skipped), trap_limit (each trap host's origin "
            "and page limit, tab-separated) (default: %(default)s)",
        )


def config_from_args(args: argparse.Namespace) -> WebConfig:
    """The WebConfig named by parsed arguments (missing options take their defaults, or
    with ``--adversarial`` those of :data:`~.model.ADVERSARIAL`)."""
    values = dict(ADVERSARIAL) if getattr(args, "adversarial", False) else {}
    for f in dataclasses.fields(WebConfig):
        if getattr(args, f.name, None) is not None:
            values[f.name] = getattr(args, f.name)
    return WebConfig(**values)


def config_argv(config: WebConfig) -> list[str]:
    """Command-line options that :func:`config_from_args` turns back into ``config``."""
    argv = []
    for f in dataclasses.fields(WebConfig):
        value, flag = getattr(config, f.name), f.name.replace("_", "-")
        if isinstance(value, bool):
            argv.append(f"--{flag}" if value else f"--no-{flag}")
        else:
            argv += [f"--{flag}", value if isinstance(value, str) else repr(value)]
    return argv


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

    web = Web(config_from_args(args))
    serve_forever(
        web,
        latency=getattr(args, "latency", None),
        log=getattr(args, "log", None),
        announce=lambda line: print(line, flush=True),
    )
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


COMMANDS = {"serve": cmd_serve, "truth": cmd_truth, "seeds": cmd_seeds}


def add_subcommands(subparsers: argparse._SubParsersAction) -> None:
    """Add ``serve``, ``truth`` and ``seeds`` parsers (with ``func`` set) to ``subparsers``."""
    for name, func in COMMANDS.items():
        sub = subparsers.add_parser(
            name, help=func.__doc__.splitlines()[0].rstrip("."), description=func.__doc__
        )
        add_arguments(sub, name)
        sub.set_defaults(func=func)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m bspcrawl.testweb serve|truth|seeds [options]``."""
    parser = argparse.ArgumentParser(
        prog="python -m bspcrawl.testweb", description="A deterministic local web on loopback."
    )
    add_subcommands(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except (OSError, ValueError) as e:
        print(f"{parser.prog} {args.command}: error: {e}", file=sys.stderr)
        return 2
