"""``bspcrawl export DIR --wacz FILE``: a finished crawl as one WACZ file (WACZ 1.1.1,
https://specs.webrecorder.net/wacz/1.1.1/), which ReplayWeb.page and pywb open directly.

The ZIP holds ``archive/*.warc.gz`` (stored, not recompressed: readers seek into them by
the index's offsets), ``indexes/index.cdxj`` (the merged CDXJ index),
``pages/pages.jsonl`` (one line per HTML page answered 2xx) and ``datapackage.json`` with
every file's size and SHA-256, plus ``datapackage-digest.json``. After a recrawl, revisit
records refer to earlier crawls' WARC files, which are not packaged: export each crawl.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
import zipfile
from datetime import datetime
from pathlib import Path

from bspcrawl import __version__
from bspcrawl.browse.view import CrawlView
from bspcrawl.index.archive import WARC_DIR
from bspcrawl.index.cdxj import INDEXES_DIR, MERGED, merge
from bspcrawl.index.output import OutputError

WACZ_VERSION = "1.1.1"
PAGES_HEADER = {"format": "json-pages-1.0", "id": "pages", "title": "All Pages"}
CHUNK = 1 << 20


def iso_time(ts: str) -> str:
    """RFC 3339 time of a 14-digit timestamp: ``20240102030405`` -> ``2024-01-02T03:04:05Z``."""
    return datetime.strptime(ts, "%Y%m%d%H%M%S").strftime("%Y-%m-%dT%H:%M:%SZ")


def pages_jsonl(view: CrawlView) -> bytes:
    """``pages/pages.jsonl`` of the crawl: the header, then one line per page."""
    lines = [PAGES_HEADER] + [
        {"url": p.url, "ts": iso_time(p.ts), **({"title": p.title} if p.title else {})}
        for p in view.catalogue()]
    return "".join(json.dumps(x) + "\n" for x in lines).encode()


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(CHUNK):
            h.update(chunk)
    return "sha256:" + h.hexdigest()


def export(out: Path, wacz: Path) -> Path:
    """Write the crawl in ``out`` as the WACZ file ``wacz``; returns its path. OutputError
    if ``out`` is not a finished crawl with WARC files."""
    view = CrawlView(out)
    warcs = sorted((out / WARC_DIR).glob("*.warc.gz"))
    if not warcs:
        raise OutputError(f"{out} holds no WARC files (crawled with --no-warc?): "
                          "nothing to package")
    index = out / INDEXES_DIR / MERGED
    if not index.exists():  # a crawl of an earlier bspcrawl, or a resumed one: index it now
        merge(out)
    resources, tmp = [], wacz.with_name(wacz.name + ".tmp")
    created = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    try:
        with zipfile.ZipFile(tmp, "w", zipfile.ZIP_STORED, allowZip64=True) as z:
            for path, name in [(w, f"archive/{w.name}") for w in warcs] + [
                    (index, f"indexes/{MERGED}")]:
                z.write(path, name)
                resources.append({"name": path.name.lower(), "path": name,
                                  "hash": _sha256(path), "bytes": path.stat().st_size})
            jsonl = pages_jsonl(view)
            z.writestr("pages/pages.jsonl", jsonl, zipfile.ZIP_DEFLATED)
            resources.append({"name": "pages.jsonl", "path": "pages/pages.jsonl",
                              "hash": "sha256:" + hashlib.sha256(jsonl).hexdigest(),
                              "bytes": len(jsonl)})
            package = json.dumps({
                "profile": "data-package", "wacz_version": WACZ_VERSION,
                "title": f"bspcrawl crawl {out.resolve().name}", "created": created,
                "software": f"bspcrawl {__version__}", "resources": resources},
                indent=2).encode()
            z.writestr("datapackage.json", package, zipfile.ZIP_DEFLATED)
            z.writestr("datapackage-digest.json", json.dumps({
                "path": "datapackage.json",
                "hash": "sha256:" + hashlib.sha256(package).hexdigest()}, indent=2),
                zipfile.ZIP_DEFLATED)
        os.replace(tmp, wacz)
    except OSError as e:
        tmp.unlink(missing_ok=True)
        raise OutputError(f"cannot write {wacz}: {e.strerror or e}") from None
    return wacz
