"""Reading a finished crawl: the summary and URL list behind ``bspcrawl inspect``."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import h5py
import numpy as np

from bspcrawl.index.output import CRAWL_FILE, OutputError


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
    return f


def summary(out: Path) -> dict:
    """The crawl's summary: ranks, supersteps, pages, bytes, wall time, errors by kind."""
    with open_crawl(out) as f:
        pages = f["pages"]
        status = pages["status"][:]
        errors = Counter(e for e in pages["error"].asstr()[:] if e)
        for code in status[(status >= 400)].tolist():
            errors[f"http_{code // 100}xx"] += 1
        per_rank = np.bincount(pages["rank"][:], minlength=int(f.attrs["ranks"]))
        a = f.attrs
        return {
            "ranks": int(a["ranks"]),
            "supersteps": int(a["supersteps"]),
            "pages_fetched": int(status.size),
            "pages_ok": int(((status >= 200) & (status < 300)).sum()),
            "redirects": int(((status >= 300) & (status < 400)).sum()),
            "urls_seen": int(a["urls_seen"]),
            "bytes": int(pages["length"][:].sum()),
            "wall_s": round(float(a["wall_s"]), 3),
            "pages_per_s": round(status.size / max(float(a["wall_s"]), 1e-9), 1),
            "stopped": str(a["stopped"]),
            "errors": dict(sorted(errors.items())),
            "pages_per_rank": per_rank.tolist(),
            "files": [str(out / CRAWL_FILE)] + [
                str(out / f"rank-{r:04d}.h5") for r in range(int(a["ranks"]))],
        }


def urls(out: Path) -> Iterator[tuple[str, int]]:
    """Every fetched URL with its HTTP status (0: no response), in rank then doc order."""
    with open_crawl(out) as f:
        yield from zip(f["pages/url"].asstr()[:], f["pages/status"][:].tolist(), strict=True)
