"""The command-line options of a :class:`~.config.WebConfig`, in both directions: one option
per field (``--junk`` / ``--no-junk`` for switches) plus ``--adversarial``
(:data:`~.config.ADVERSARIAL` under the options given); :func:`config_argv` writes a
WebConfig back as the options that give it (the server's child process starts with them).
"""

from __future__ import annotations

import argparse
import dataclasses

from bspcrawl.testweb.config import ADVERSARIAL, WebConfig

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
    "near_mirrors": "hosts serving a copy of a site, each page with a small edit "
    "(near-duplicates; not in --adversarial)",
    "redirect_traps": "a host with redirect loops and an 8-hop chain",
    "junk": "a host of non-HTML, broken, nested and mis-encoded pages",
    "huge": "a 5 MiB page",
    "bomb": "a gzip bomb (1 GiB inflated)",
    "traps": "spider traps: comma-separated calendar,session,deep, or all",
    "trap_budget": "per-host page budget of a correct crawler (0: auto)",
}
_TYPES = {"int": int, "float": float, "str": str}


def add_config_arguments(parser: argparse.ArgumentParser) -> None:
    """Add a "test web" group to ``parser``: ``--adversarial`` and one option per WebConfig
    field (``--no-`` forms for the switches), each defaulting to None."""
    group = parser.add_argument_group("test web")
    group.add_argument("--adversarial", action="store_true",
                       help="every adversarial behaviour on, with seeded defaults (other "
                       "options win): " + ", ".join(f"{k}={v}" for k, v in ADVERSARIAL.items()))
    for f in dataclasses.fields(WebConfig):
        flag = "--" + f.name.replace("_", "-")
        if f.type == "bool":
            group.add_argument(flag, action=argparse.BooleanOptionalAction,
                               help=f"{_HELP[f.name]} (default: off)")
            continue
        kind = _TYPES[str(f.type)]
        group.add_argument(flag, type=kind, metavar={int: "N", float: "F", str: "S"}[kind],
                           help=f"{_HELP[f.name]} (default: {f.default!r})")


def config_from_args(args: argparse.Namespace) -> WebConfig:
    """The WebConfig named by parsed arguments (missing options take their defaults, or
    with ``--adversarial`` those of :data:`~.config.ADVERSARIAL`)."""
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
