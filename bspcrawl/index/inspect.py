"""Reading a finished crawl: what ``bspcrawl inspect`` shows (summary, URLs, history, bodies).

Every reader opens ``crawl.h5`` through :func:`open_crawl`, which turns a missing,
foreign or older file into one :class:`OutputError` line.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import h5py
import numpy as np

from bspcrawl.counters import summarise
from bspcrawl.index.history import History, Version
from bspcrawl.index.output import CRAWL_FILE, OutputError
from bspcrawl.index.store import LAYOUT, answered_ok
from bspcrawl.index.warc import read_body
from bspcrawl.urls import key_fingerprints, parse, strip_pattern


def open_crawl(out: Path) -> h5py.File:
    """Open ``out/crawl.h5`` read-only, or raise :class:`OutputError` saying why not."""
    path = out / CRAWL_FILE
    if not out.is_dir():
        raise OutputError(f"{out} is not a directory")
    if not path.exists():
        raise OutputError(f"{out} holds no {CRAWL_FILE} (not a crawl, or one that did not end)")
    try:
        f = h5py.File(path, "r")
    except OSError as e:
        raise OutputError(f"{path} is not a readable HDF5 file ({e})") from None
    if f.attrs.get("format") != "bspcrawl-crawl":
        f.close()
        raise OutputError(f"{path} was not written by bspcrawl")
    if f.attrs.get("layout") != LAYOUT:
        f.close()
        raise OutputError(f"{path} was written by an older bspcrawl; crawl again with this "
                          "version to read it")
    return f


def summary(out: Path) -> dict:
    """The crawl's summary: pages, bytes, wall time, errors by kind, every counter over the
    whole crawl, and PageRank's attributes once ``bspcrawl rank`` has run."""
    with open_crawl(out) as f:
        pages = f["pages"]
        status = pages["status"][:]
        errors = Counter(e for e in pages["error"].asstr()[:] if e)
        for code in status[(status >= 400)].tolist():
            errors[f"http_{code // 100}xx"] += 1
        per_rank = np.bincount(pages["rank"][:], minlength=int(f.attrs["ranks"]))
        revisit, length = pages["revisit"][:], pages["length"][:]
        a = f.attrs
        return {
            "ranks": int(a["ranks"]),
            "supersteps": int(a["supersteps"]),
            "pages_fetched": int(status.size),
            "pages_ok": int(answered_ok(status, revisit).sum()),
            "redirects": int(((status >= 300) & (status < 400) & (revisit == 0)).sum()),
            "urls_seen": int(a["urls_seen"]),
            "bytes": int(length[revisit == 0].sum()),
            "not_modified": int((revisit == 1).sum()),
            "fetches_saved": int((revisit == 2).sum()),
            "bytes_saved": int(length[revisit > 0].sum()),
            "wall_s": round(float(a["wall_s"]), 3),
            "pages_per_s": round(status.size / max(float(a["wall_s"]), 1e-9), 1),
            "stopped": str(a["stopped"]),
            "errors": dict(sorted(errors.items())),
            "pages_per_rank": per_rank.tolist(),
            "counters": summarise(f["stats"][:], int(a["ranks"])),
            "files": [str(out / CRAWL_FILE)] + [
                str(out / f"rank-{r:04d}.h5") for r in range(int(a["ranks"]))],
            "pagerank": {k: v.item() for k, v in f["rank"].attrs.items()} if "rank" in f
            else None,
        }


def urls(out: Path) -> Iterator[tuple[str, int]]:
    """Every fetched URL with its HTTP status (0: no response), in rank then doc order."""
    with open_crawl(out) as f:
        yield from zip(f["pages/url"].asstr()[:], f["pages/status"][:].tolist(), strict=True)


def versions(out: Path, url: str) -> list[tuple[Version, Path | None]]:
    """Every archived version of ``url``, oldest first, with the WARC file of its body
    (None: no body kept)."""
    canonical = parse(url)
    if canonical is None:
        raise OutputError(f"not an absolute http(s) URL: {url[:200]!r}")
    found: list[tuple[Version, Path | None]] = []
    with open_crawl(out) as f:
        for r in range(int(f.attrs["ranks"])):
            rank = f[f"ranks/{r:04d}"]
            strip = strip_pattern(json.loads(rank.attrs["settings"])["url_strip_params"])
            fp = int(key_fingerprints([canonical], strip)[0])
            if not (rank["history/url_fp"][:] == fp).any():
                continue
            files = rank["warc/files"].asstr()[:].tolist()
            found += [(v, out / files[v.warc_file] if v.has_body else None)
                      for v in History.load(rank["history"]).versions(fp)]
    return sorted(found, key=lambda item: item[0].time)


def nearest(found: list[tuple[Version, Path | None]], t: float
            ) -> tuple[Version, Path | None] | None:
    """The version nearest in time to ``t`` (a tie goes to the earlier one), or None."""
    return min(found, key=lambda item: (abs(item[0].time - t), item[0].time), default=None)


def body(version: Version, path: Path | None) -> bytes:
    """The stored body of a version; OutputError if none was kept or its file is gone."""
    if path is None:
        raise OutputError("no body was kept for that version (a failed fetch, or --no-warc)")
    try:
        return read_body(path, version.warc_offset)
    except (OSError, ValueError) as e:
        raise OutputError(f"cannot read the body from {path}: {e}") from None


def parse_time(text: str) -> float:
    """Unix time of ``@SECONDS``, Wayback's ``YYYY[MM[DD[hh[mm[ss]]]]]`` or ISO 8601 (UTC
    unless an offset is given); OutputError if it is none of these."""
    try:
        if text.startswith("@"):
            return float(text[1:])
        if text.isdigit() and len(text) in (4, 6, 8, 10, 12, 14):
            parts = [int(text[i:i + 2]) for i in range(4, len(text), 2)]
            return datetime(int(text[:4]), *(parts + [1, 1][len(parts):]),
                            tzinfo=UTC).timestamp()
        when = datetime.fromisoformat(text)
        return (when if when.tzinfo else when.replace(tzinfo=UTC)).timestamp()
    except (ValueError, OverflowError):
        raise OutputError(f"--at {text!r}: not a time (use @UNIX_SECONDS, YYYYMMDDhhmmss "
                          "or ISO 8601 like 2024-01-02T03:04:05Z)") from None


def format_version(version: Version, path: Path | None, out: Path) -> str:
    """One line: time (UTC), status, content fingerprint and where the body is."""
    when = datetime.fromtimestamp(version.time, UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]
    where = (f"{path.relative_to(out) if path.is_relative_to(out) else path}"
             f"@{version.warc_offset}" if path else "no body")
    return f"{when}Z  {version.status}  content {version.content_fp:016x}  {where}"
