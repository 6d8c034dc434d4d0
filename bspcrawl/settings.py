"""Every setting of a crawl: one dataclass, its defaults, docs, units and validation.

Fields are grouped by prefix (``fetch_*``, ``politeness_*``, ``queue_*``, ``crawl_*``,
``index_*``). The CLI (``bspcrawl run --help``), a TOML file (``--config``, keys are the
field names) and the scripts all build a :class:`Settings` and call :meth:`validate` once.
Command-line options override the TOML file, which overrides the defaults.
"""

from __future__ import annotations

import argparse
import dataclasses
import difflib
import re
import sys
import tomllib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from bspcrawl import __version__
from bspcrawl.index.ranking import COMPASS_WEIGHTS as WEIGHTS
from bspcrawl.robots.addresses import parse_networks
from bspcrawl.urls import TRACKING_PARAMS


class SettingsError(ValueError):
    """A setting has a bad value or a configuration file cannot be used."""


def _opt(default: Any, doc: str, unit: str = "") -> Any:
    metadata = {"doc": doc, "unit": unit}
    if isinstance(default, list):
        return field(default_factory=list, metadata=metadata)
    return field(default=default, metadata=metadata)


MAX_PARSE_PROCESSES = 64  # per rank: more is a typo, not a machine


@dataclass
class Settings:
    """One crawl's configuration; ``docs/options.md`` has the table of every field."""

    seeds: str = _opt("", "file of seed URLs, one per line ('#' starts a comment)")
    out: str = _opt("", "output directory (HDF5 files, per rank and joined)")
    overwrite: bool = _opt(False, "replace an earlier crawl's files in --out")
    recrawl: str = _opt("", "crawl again after the crawl in this directory: its history is "
                        "kept, unchanged pages cost a 304 or nothing (default seeds: its own)")

    fetch_workers: int = _opt(8, "fetch workers per rank (concurrent transfers; Marin's "
                              "robots), and the sequence window's size in schedules")
    fetch_connect_timeout: float = _opt(5.0, "TCP/TLS connect timeout", "s")
    fetch_timeout: float = _opt(30.0, "whole-transfer timeout", "s")
    fetch_low_speed: int = _opt(100, "abort a transfer slower than this for fetch_timeout/3", "B/s")
    fetch_max_bytes: int = _opt(16 * 1024 * 1024, "a longer body is cut after this many "
                                "(decoded) bytes, kept, parsed and marked truncated", "bytes")
    fetch_max_redirects: int = _opt(5, "redirect hops followed from one link")
    fetch_allow_net: list[str] = _opt([], "also connect to this non-public IP network (CIDR; "
                                      "repeatable). By default loopback, private, link-local, "
                                      "multicast and reserved addresses are refused")
    fetch_proxy: str = _opt("", "HTTP(S) proxy URL for every request (''; none: the http_proxy "
                            "and https_proxy variables are ignored). BEWARE: the address guard "
                            "then checks the proxy's address, not the sites'")
    fetch_user_agent: str = _opt(
        f"bspcrawl/{__version__} (+https://github.com/bspcrawl/bspcrawl)",
        "User-Agent header; its product token is matched against robots.txt groups",
    )

    politeness_min_host_delay: float = _opt(1.0, "pause between two requests to one host", "s")
    politeness_response_factor: float = _opt(
        1.0, "also pause k x the host's last response time (k; 0: off)")
    politeness_max_crawl_delay: float = _opt(30.0, "cap on a robots.txt Crawl-delay", "s")
    politeness_retries: int = _opt(2, "retries of a URL answered 429 or 503")
    politeness_max_backoff: float = _opt(300.0, "cap on Retry-After and backoff rests", "s")
    politeness_host_connections: int = _opt(
        1, "transfers at once to one unpaced host (--min-host-delay 0 --response-factor 0, "
        "no Crawl-delay: servers of one's own), like Scrapy's CONCURRENT_REQUESTS_PER_DOMAIN; "
        "a paced host always has one")

    robotstxt_ttl: float = _opt(86400.0, "keep a host's robots.txt this long, then refetch", "s")
    robotstxt_retries: int = _opt(3, "refetches of a robots.txt answered 5xx or not at all")

    window_straggler_timeout: float = _opt(
        10.0, "commit a schedule without a fetch this late; its result is committed later", "s")

    queue_batch: int = _opt(256, "URLs extracted from the CBT per superstep (R)")
    queue_bucket: int = _opt(256, "items per CBT leaf bucket (n)")
    queue_pending_max: int = _opt(1_000_000, "stop extracting while Q holds this many URLs")
    queue_seen_memory: int = _opt(512 * 1024 * 1024, "RAM for the seen set (8 bytes per URL) "
                                  "before its sorted shards spill to "
                                  "DIR/seen/rank-NNNN (0: all of them)", "bytes")
    queue_memory_budget: int = _opt(64 * 1024 * 1024, "RAM for the records of the URLs "
                                    "waiting in the frontier (~50 bytes + the URL each) "
                                    "before they go to segment files in "
                                    "DIR/frontier/rank-NNNN (0: all of them)", "bytes")

    url_max_length: int = _opt(2048, "ignore URLs longer than this", "characters")
    url_strip_params: str = _opt(TRACKING_PARAMS, "regex of query/path parameter names left "
                                 "out of the seen-set key (tracking, session ids; '': none)")
    url_max_segments: int = _opt(40, "ignore URLs whose path has more segments (a spider "
                                 "trap; real trees are 20 deep at most; 0: no limit)")
    url_max_repeats: int = _opt(3, "ignore URLs whose path repeats a segment, or a run of up "
                                "to three, this many times in a row (/a/a/a; 0: no limit)")
    crawl_max_outlinks: int = _opt(20_000, "follow at most this many links of one page, in "
                                   "document order (0: no limit)")
    crawl_max_page_hosts: int = _opt(1000, "follow links of one page to at most this many "
                                     "hosts, in document order (0: no limit)")
    url_blacklist: list[str] = _opt([], "ignore URLs matching this regex (repeatable)")

    crawl_max_pages: int = _opt(0, "stop after about this many pages (0: no limit)")
    crawl_max_host_pages: int = _opt(1_000_000, "take at most this many URLs of one host, "
                                     "counted as they arrive (0: no limit)")
    crawl_max_domain_pages: int = _opt(10_000_000, "take at most this many URLs of one "
                                       "registered domain, counted as they arrive (0: no limit)")
    crawl_max_domain_hosts: int = _opt(10_000, "take URLs of at most this many hosts of one "
                                       "registered domain (a subdomain flood; 0: no limit)")
    crawl_deal_hosts: int = _opt(1 << 16, "deal this many hosts to the ranks round-robin "
                                 "(even load on small webs; every rank holds their list), "
                                 "then own a new host by its hash mod P")
    crawl_max_seconds: float = _opt(0.0, "stop after this wall time (0: no limit)", "s")
    crawl_max_depth: int = _opt(50, "ignore links more than this many links from a seed (a "
                                "shallow trap such as an endless calendar; 0: no limit)")
    crawl_revisit_after: float = _opt(0.0, "fetch each page again this long after its last "
                                      "fetch (0: never; such a crawl ends at a limit)", "s")

    index_flush_pages: int = _opt(2000, "pages buffered before an index segment is written")
    index_no_warc: bool = _opt(False, "keep no bodies (no WARC files; no revisits either)")
    index_parse_processes: int = _opt(
        -1, "worker processes per rank that parse pages while the rank commits earlier ones "
        "(0: the rank does it; -1: two if the machine has two cores a rank, else none)")
    index_weight_title: float = _opt(WEIGHTS["title"], "search: weight of a word of the "
                                     "<title> (Compass's tag weights; only their ratios to "
                                     "the body's matter)")
    index_weight_h1: float = _opt(WEIGHTS["h1"], "search: weight of a word of an <h1>")
    index_weight_h2: float = _opt(WEIGHTS["h2"], "search: weight of a word of an <h2>")
    index_weight_h3: float = _opt(WEIGHTS["h3"], "search: weight of a word of an <h3>")
    index_weight_h4: float = _opt(WEIGHTS["h4"], "search: weight of a word of an <h4>")
    index_weight_h5: float = _opt(WEIGHTS["h5"], "search: weight of a word of an <h5> (or <h6>)")
    index_weight_body: float = _opt(WEIGHTS["body"], "search: weight of a word of any other text")
    index_weight_anchor: float = _opt(WEIGHTS["anchor"], "search: weight of a word of the "
                                      "anchor text of the links to a page")
    checkpoint_every: int = _opt(1000, "checkpoint every this many supersteps (0: only when "
                                 "the crawl stops)")
    log_interval: float = _opt(2.0, "seconds between progress lines", "s")
    status_port: int = _opt(0, "serve a live status page (counters, charts, a stop button) "
                            "on this port, from rank 0 (0: none)")
    status_host: str = _opt("127.0.0.1", "the address the live status page listens on "
                            "(loopback unless you mean to open it)")

    def validate(self) -> Settings:
        """Check every value; raise :class:`SettingsError` naming the first bad one."""
        positive = ("fetch_workers", "politeness_host_connections", "fetch_connect_timeout",
                    "fetch_timeout", "fetch_max_bytes", "queue_batch", "queue_bucket",
                    "queue_pending_max", "index_flush_pages",
                    "log_interval", *(f"index_weight_{n}" for n in WEIGHTS))
        non_negative = ("fetch_low_speed", "fetch_max_redirects", "politeness_min_host_delay",
                        "politeness_response_factor", "politeness_max_crawl_delay",
                        "politeness_retries", "politeness_max_backoff", "robotstxt_ttl",
                        "robotstxt_retries", "window_straggler_timeout", "crawl_max_pages",
                        "crawl_max_host_pages", "crawl_max_seconds", "crawl_max_depth",
                        "url_max_segments", "url_max_repeats", "crawl_max_outlinks",
                        "crawl_max_page_hosts", "crawl_max_domain_hosts", "crawl_max_domain_pages",
                        "crawl_revisit_after", "queue_seen_memory", "queue_memory_budget",
                        "crawl_deal_hosts", "checkpoint_every")
        for name in positive:
            if not getattr(self, name) > 0:
                raise SettingsError(f"{_flag(name)} must be > 0, got {getattr(self, name)}")
        for name in non_negative:
            if not getattr(self, name) >= 0:
                raise SettingsError(f"{_flag(name)} must be >= 0, got {getattr(self, name)}")
        if not self.fetch_user_agent.strip() or "\n" in self.fetch_user_agent:
            raise SettingsError("--user-agent must be one non-empty line")
        try:
            parse_networks(self.fetch_allow_net)
        except ValueError as e:
            raise SettingsError(str(e)) from None
        for name, regex in [("--url-strip-params", self.url_strip_params)] + [
                ("--url-blacklist", b) for b in self.url_blacklist]:
            try:
                re.compile(regex)
            except re.error as e:
                raise SettingsError(f"{name}: bad regular expression {regex!r}: {e}") from None
        if not 0 <= self.status_port <= 65535:
            raise SettingsError(f"--status-port must be 0..65535, got {self.status_port}")
        if not -1 <= self.index_parse_processes <= MAX_PARSE_PROCESSES:
            raise SettingsError(f"--parse-processes must be -1 (auto) or 0..{MAX_PARSE_PROCESSES}"
                                f" (per rank), got {self.index_parse_processes}")
        if self.url_max_length < 16:
            raise SettingsError(f"--url-max-length must be >= 16, got {self.url_max_length}")
        return self

    @property
    def agent_token(self) -> str:
        """The user agent's product token ('bspcrawl'), used for robots.txt matching."""
        return self.fetch_user_agent.split("/", 1)[0].split()[0]

    def to_dict(self) -> dict[str, Any]:
        """All fields as a plain dict (stored in the HDF5 attributes as JSON)."""
        return dataclasses.asdict(self)


_TYPES = {f.name: f.type for f in fields(Settings)}
_SHORT = {"fetch_workers": "workers", "fetch_allow_net": "allow-net",
          "politeness_response_factor": "response-factor",
          "politeness_min_host_delay": "min-host-delay",
          "politeness_host_connections": "host-connections",
          "fetch_user_agent": "user-agent", "crawl_max_pages": "max-pages",
          "crawl_max_seconds": "max-seconds", "crawl_max_depth": "max-depth",
          "crawl_max_host_pages": "max-host-pages", "crawl_revisit_after": "revisit-after",
          "crawl_max_domain_hosts": "max-domain-hosts",
          "crawl_max_domain_pages": "max-domain-pages",
          "index_no_warc": "no-warc", "index_parse_processes": "parse-processes",
          "queue_memory_budget": "memory-budget"}


def _stderr_note(message: str) -> None:
    print(f"bspcrawl: note: {message}", file=sys.stderr)


def _flag(name: str) -> str:
    """The command-line option of a field: ``--min-host-delay`` for ``politeness_min...``."""
    return "--" + _SHORT.get(name, name.replace("_", "-"))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add one option per field (defaults shown in ``--help``) and ``--config``."""
    parser.add_argument("--config", metavar="TOML", help="read settings from a TOML file")
    for f in fields(Settings):
        unit = f" [{f.metadata['unit']}]" if f.metadata["unit"] else ""
        default = [] if f.type == "list[str]" else f.default  # a list field has a factory
        shown = "" if default in ("", []) or default is False else f" (default: {default!r})"
        help_ = f"{f.metadata['doc']}{unit}{shown}"
        if f.type == "list[str]":
            parser.add_argument(_flag(f.name), dest=f.name, action="append", default=None,
                                metavar=f.name.split("_")[-1].upper(), help=help_)
        elif f.type in ("bool", bool):
            parser.add_argument(_flag(f.name), dest=f.name, action="store_true", default=None,
                                help=help_)
        else:
            kind = {"int": int, "float": float}.get(str(f.type), str)
            parser.add_argument(_flag(f.name), dest=f.name, type=kind, default=None,
                                metavar=f.name.split("_")[-1].upper(), help=help_)


def from_args(args: argparse.Namespace, base: dict[str, Any] | None = None,
              note: Callable[[str], None] = _stderr_note) -> Settings:
    """Build and validate Settings from defaults (or ``base``, a resumed crawl's stored
    settings), then ``--config``, then the options given. A stored setting this bspcrawl
    does not know is dropped and reported through ``note``, once the settings are valid
    (a mistake is one error line alone)."""
    values: dict[str, Any] = dict(base or {})
    notes = [f"the stored setting {key!r} is unknown to this bspcrawl: ignored"
             for key in values if key not in _TYPES]
    values = {k: v for k, v in values.items() if k in _TYPES}
    if getattr(args, "config", None):
        values.update(load_toml(Path(args.config)))
    for f in fields(Settings):
        given = getattr(args, f.name, None)
        if given is not None:
            values[f.name] = given
    settings = Settings(**values).validate()
    for message in notes:
        note(message)
    return settings


def _hint(key: str, names: Iterable[str]) -> str:
    """What an unknown config *key* may have meant: the key of the option it names
    ("workers", "--min-host-delay"), else the closest key."""
    by_flag = {_flag(name)[2:]: name for name in names}
    flag = key.lstrip("-").replace("_", "-")
    if flag in by_flag:
        return f" (option --{flag} is {by_flag[flag]!r} in a config)"
    close = difflib.get_close_matches(key, list(names), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def load_toml(path: Path) -> dict[str, Any]:
    """Read settings from a TOML file; unknown keys and wrong types are errors."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise SettingsError(f"cannot read config {path}: {e.strerror}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise SettingsError(f"config {path} is not valid TOML: {e}") from None
    for key, value in data.items():
        if key not in _TYPES:
            raise SettingsError(f"config {path}: unknown setting {key!r}{_hint(key, _TYPES)}")
        want = {"int": int, "float": (int, float), "bool": bool, "str": str,
                "list[str]": list}[str(_TYPES[key])]
        if _TYPES[key] == "list[str]" and isinstance(value, list):
            value = value if all(isinstance(v, str) for v in value) else None
        if not isinstance(value, want) or (isinstance(value, bool) and _TYPES[key] != "bool"):
            raise SettingsError(f"config {path}: {key} has the wrong type ({value!r})")
    return data
