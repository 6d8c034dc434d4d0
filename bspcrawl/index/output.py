"""The output directory: checked before a crawl, joined into ``crawl.h5`` after it.

:func:`prepare` refuses a directory holding anything but a crawl's files, and an earlier
crawl's files unless ``overwrite`` is set, so a mistyped ``--out`` never destroys data.
:func:`join` writes ``crawl.h5`` without copies: virtual datasets over the rank files and
links to them, so ``h5py.File("DIR/crawl.h5")`` shows the whole crawl (``docs/output.md``).
"""

from __future__ import annotations

import contextlib
import re
import shutil
import time
from pathlib import Path

import h5py
import numpy as np

from bspcrawl import __version__
from bspcrawl.counters import STATS_DTYPE
from bspcrawl.index.store import LAYOUT, PAGE_FIELDS, rank_path, write_atomically

CRAWL_FILE = "crawl.h5"
STOP_FILE = "stop"  # ``bspcrawl stop DIR`` creates DIR/stop: the crawl stops soon after
SEEN_DIR = "seen"  # DIR/seen/rank-NNNN: a running rank's spilled seen set (a cache)
FRONTIER_DIR = "frontier"  # DIR/frontier/rank-NNNN: backlog and journal (not a cache)
# what a crawl leaves, a killed one's temporary files too
_OURS = re.compile(r"(crawl|rank-\d{4})\.h5(\.tmp)?|segments|checkpoint|seen|frontier|stop"
                   r"|warc|indexes|\.bspcrawl-write-test")


class OutputError(Exception):
    """The output directory cannot be used (the message says why and what to do)."""


def prepare(out: Path, overwrite: bool) -> None:
    """Make ``out`` ready for a new crawl, or raise :class:`OutputError`."""
    if out.exists() and not out.is_dir():
        raise OutputError(f"output {out} exists and is not a directory")
    if out.is_dir():
        names = sorted(p.name for p in out.iterdir())
        foreign = [n for n in names if not _OURS.fullmatch(n)]
        if foreign:
            raise OutputError(f"output directory {out} holds files that are not a crawl's "
                              f"(e.g. {foreign[0]!r}); choose an empty or new directory")
        if names and not overwrite:
            raise OutputError(f"output directory {out} holds an earlier crawl; "
                              "pass --overwrite to replace it")
        for name in names:
            path = out / name
            shutil.rmtree(path) if path.is_dir() else path.unlink()
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = out / ".bspcrawl-write-test"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as e:
        raise OutputError(f"cannot write to output directory {out}: {e.strerror}") from None


def request_stop(out: Path) -> None:
    """Ask the crawl running in ``out`` to stop at its next superstep; OutputError if none
    runs there."""
    if not (out / "segments").is_dir():
        raise OutputError(f"{out} holds no running crawl")
    (out / STOP_FILE).touch()


def join(out: Path, ranks: int, summary: dict) -> Path:
    """Write ``out/crawl.h5`` over the rank files (more than ``ranks`` when a crawl was
    resumed with fewer ranks); returns its path."""
    ranks = max(ranks, len(list(out.glob("rank-[0-9][0-9][0-9][0-9].h5"))))
    files = [h5py.File(rank_path(out, r), "r") for r in range(ranks)]
    try:
        sizes = [f["pages/url"].shape[0] for f in files]
        stat_sizes = [f["stats"].shape[0] for f in files]
        ranked = (all("rank/pagerank" in f for f in files)  # and of one run of rank
                  and len({float(f["rank"].attrs["computed"]) for f in files}) == 1)
        rank_attrs = dict(files[0]["rank"].attrs) if ranked and files else {}
    finally:
        for f in files:
            f.close()

    def fill(crawl: h5py.File) -> None:
        crawl.attrs.update(format="bspcrawl-crawl", layout=LAYOUT, version=__version__, ranks=ranks,
                           joined=time.time(), **summary)
        pages = crawl.create_group("pages")
        for name, dtype in PAGE_FIELDS.items():
            _concat(pages, name, f"pages/{name}", dtype, sizes, ranks)
        _concat(crawl, "stats", "stats", STATS_DTYPE, stat_sizes, ranks)
        pages.create_dataset("rank", data=np.repeat(np.arange(ranks, dtype=np.int16), sizes))
        if ranked:
            _concat(crawl, "rank/pagerank", "rank/pagerank", np.float64, sizes, ranks)
            crawl["rank"].attrs.update(rank_attrs)
        for r in range(ranks):
            crawl[f"ranks/{r:04d}"] = h5py.ExternalLink(rank_path(out, r).name, "/")

    write_atomically(out / CRAWL_FILE, fill)
    with contextlib.suppress(OSError):  # every rank has joined its segments by now
        (out / "segments").rmdir()
    shutil.rmtree(out / SEEN_DIR, ignore_errors=True)  # a cache; of a killed rank's too
    return out / CRAWL_FILE


def _concat(group: h5py.Group, name: str, path: str, dtype: np.dtype | type,
            sizes: list[int], ranks: int) -> None:
    layout = h5py.VirtualLayout(shape=(sum(sizes),), dtype=dtype)
    at = 0
    for r, n in zip(range(ranks), sizes, strict=True):
        if n:
            layout[at:at + n] = h5py.VirtualSource(rank_path(Path("."), r).name, path,
                                                   shape=(n,), dtype=dtype)
        at += n
    group.create_virtual_dataset(name, layout, fillvalue=None)

