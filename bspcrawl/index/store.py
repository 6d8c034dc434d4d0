"""One rank's HDF5 index: pages, link graph, inverted index and per-superstep stats.

Owned by the scheduler thread alone (h5py is not thread-safe). Pages arrive through
:meth:`RankStore.commit` in commit order and get dense doc ids 0, 1, 2, ... in that order.
While a crawl runs, what was committed since the last seal goes to a new *segment*
(``DIR/segments/rank-NNNN/SSSSSSSSSS.h5``, S its superstep) every ``index_flush_pages``
pages and at every checkpoint, so a killed process leaves only whole segments and a
resume drops those sealed after its checkpoint. At the end the segments are joined,
streaming, into ``DIR/rank-NNNN.h5``. Every file is written on disk as it is filled and
renamed into place (:func:`write_atomically`): a reader sees it whole or not at all.
The layout is in ``docs/output.md`` (its tables generated from :data:`PAGES`); a file of
another :data:`LAYOUT` is refused with :class:`LayoutError`.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import h5py
import numpy as np

from bspcrawl import __version__
from bspcrawl.counters import STATS_DTYPE
from bspcrawl.durable import sync_dir
from bspcrawl.index import archive as archive_mod
from bspcrawl.index import ranking
from bspcrawl.index.archive import Archive
from bspcrawl.index.columns import concat, on_disk, rows
from bspcrawl.index.simhash import simhash
from bspcrawl.index.terms import EMPTY, TermCounts
from bspcrawl.messages import FetchResult
from bspcrawl.sortedkeys import SortedKeys

STR = h5py.string_dtype()
VOCAB = h5py.string_dtype("ascii")  # a term's raw bytes, as they are (segments)
PAGES: tuple[tuple[str, np.dtype | type, str], ...] = (  # /pages/*: name, dtype, meaning
    ("url", STR, "the URL fetched (UTF-8)"),
    ("url_fp", np.int64, "64-bit fingerprint of the URL's seen-set key"),
    ("status", np.int16, "HTTP status; 0 when there was no response (see `error`)"),
    ("error", STR, "'' or the failure kind (timeout, dns, connect, ...)"),
    ("content_type", STR, "the Content-Type header"),
    ("length", np.int64, "body bytes received (restored, for a revisit)"),
    ("fetch_time", np.float64, "Unix time the transfer started"),
    ("elapsed", np.float32, "transfer duration, seconds"),
    ("depth", np.int32, "links followed from a seed"),
    ("seq", np.int64, "sequence number of the schedule it came in"),
    ("doc_id", np.int64, "dense per-rank document id (= row number)"),
    ("content_fp", np.uint64, "xxh3-64 of the body (0: no body); equal = duplicate"),
    ("redirect", STR, "resolved Location of a 3xx, else ''"),
    ("revisit", np.uint8, "0 fetched; 1 304 Not Modified; 2 still fresh, not fetched "
     "(body restored from the archive)"),
    ("truncated", np.uint8, "1: the body is the first `--fetch-max-bytes` of a longer one"),
    ("simhash", np.uint64, "64-bit SimHash of the word pairs of its indexed text (0: none); within "
     "3 bits = near-duplicate (`index/simhash.py`)"),
)
PAGE_FIELDS: dict[str, np.dtype | type] = {name: dtype for name, dtype, _ in PAGES}


FORMAT = "bspcrawl-rank"
LAYOUT = 2  # of segments and rank files: raised when what they hold changes


def answered_ok(status: np.ndarray, revisit: np.ndarray) -> np.ndarray:
    """The pages whose body is indexed (``pages_ok``): answered 2xx, or restored from the
    archive on a revisit."""
    return ((status >= 200) & (status < 300)) | (revisit > 0)


def rank_path(out: Path, rank: int) -> Path:
    return out / f"rank-{rank:04d}.h5"


def segment_dir(out: Path, rank: int) -> Path:
    return out / "segments" / f"rank-{rank:04d}"


def segments(out: Path, rank: int) -> list[tuple[int, Path]]:
    """(superstep, path) of a rank's sealed segments, oldest first."""
    folder = segment_dir(out, rank)
    found = [(int(p.stem), p) for p in folder.glob("*.h5")] if folder.is_dir() else []
    return sorted(found)


class LayoutError(Exception):
    """A segment or rank file of another :data:`LAYOUT` (an older bspcrawl's)."""


def check_layout(f: h5py.File) -> None:
    if f.attrs.get("layout") != LAYOUT:
        raise LayoutError(f"{f.filename} was written by an older bspcrawl; crawl again "
                          "with this version to use it")


def write_atomically(path: Path, fill: Callable[[h5py.File], None], edit: bool = False) -> None:
    """Write ``path`` through ``fill`` into a temporary file, fsynced and renamed, so a
    reader sees the whole file or none; a failed write raises one OSError and leaves no
    temporary file. ``edit``: ``fill`` changes a copy of the existing file."""
    tmp = path.with_name(path.name + ".tmp")
    try:
        if edit:
            shutil.copyfile(path, tmp)
        with open(tmp, "r+b" if edit else "w+b", buffering=0) as raw:
            with on_disk(raw, "r+" if edit else "w") as f:
                fill(f)
            os.fsync(raw.fileno())
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    os.replace(tmp, path)
    sync_dir(path.parent)


class RankStore:
    """Collects one rank's pages, links, postings and stats and seals them into segments
    (with ``archive``'s rows); ``resume_at``: continue from that superstep's checkpoint."""

    def __init__(self, out: Path, rank: int, ranks: int, settings: dict, flush_pages: int,
                 resume_at: int | None = None, archive: Archive | None = None) -> None:
        self.out, self.rank, self.ranks = out, rank, ranks
        self.archive = archive
        self.settings = settings
        self.flush_pages = flush_pages
        self.started = time.time()
        self.buffer: dict[str, list] = {name: [] for name in PAGE_FIELDS}
        self.stats_buffer: list[np.ndarray] = []
        self.link_buffer: list[np.ndarray] = []
        self.link_counts: list[int] = []
        # hashes of the terms met (bspcrawl.index.terms): those in a segment in ``vocab``,
        # a batch a segment; the others in ``new_terms``, with their terms
        self.vocab = SortedKeys()
        self.new_terms: dict[int, bytes] = {}
        self.docs = self.pages_ok = self.errors = self.bytes = 0
        self.search = ranking.SearchBuffer(ranking.weights_of(settings))
        segment_dir(out, rank).mkdir(parents=True, exist_ok=True)
        if resume_at is not None:
            self._resume(resume_at)

    def _resume(self, superstep: int) -> None:
        """Drop segments sealed after ``superstep``; read back counters and vocabulary."""
        for step, path in segments(self.out, self.rank):
            if step > superstep:
                path.unlink()
                continue
            with h5py.File(path, "r") as f:
                check_layout(f)
                if self.archive is not None:
                    self.archive.replay(f)
                self.vocab.add(f["vocab_hash"][:])
                a = f.attrs
                self.docs, self.pages_ok = int(a["docs"]), int(a["pages_ok"])
                self.errors, self.bytes = int(a["errors"]), int(a["bytes"])
                self.started = float(a["started"])

    @property
    def buffered(self) -> int:
        """Pages committed since the last seal."""
        return len(self.buffer["url"])

    def commit(self, result: FetchResult, url_fp: int, redirect: str,
               link_fps: Sequence[int] | np.ndarray, terms: TermCounts, content_fp: int,
               fingerprint: int | None = None, title: str = "",
               fields: dict[str, tuple[np.ndarray, np.ndarray]] | None = None,
               pairs: np.ndarray = EMPTY.sequence) -> int:
        """Append one page with its out-links and postings; returns its doc id.
        ``fingerprint``: the SimHash of ``terms`` when the caller computed it already."""
        doc = self.docs
        self.docs += 1
        job = result.job
        row = dict(url=job.url, url_fp=url_fp, status=result.status, error=result.error,
                   content_type=result.content_type, length=len(result.body),
                   fetch_time=result.started, elapsed=result.elapsed, depth=job.depth,
                   seq=job.seq, doc_id=doc, content_fp=content_fp, redirect=redirect,
                   revisit=result.revisit, truncated=result.truncated,
                   simhash=simhash(terms) if fingerprint is None else fingerprint)
        for name, value in row.items():
            self.buffer[name].append(value)
        self.link_buffer.append(np.asarray(link_fps, dtype=np.int64))
        self.link_counts.append(len(link_fps))
        if len(terms):
            unseen = np.flatnonzero(~self.vocab.contains(terms.hashes)).tolist()
            new = [i for i, h in zip(unseen, terms.hashes[unseen].tolist(), strict=True)
                   if h not in self.new_terms]
            if new:
                fresh = terms.hashes[new].tolist()
                self.new_terms.update(zip(fresh, terms.terms(new), strict=True))
            self.search.add_page(doc, terms, title, fields or {}, pairs)
        self.bytes += 0 if result.revisit else len(result.body)
        if result.error:
            self.errors += 1
        elif 200 <= result.status < 300 or result.revisit:
            self.pages_ok += 1
        return doc

    def add_stats(self, row: np.ndarray) -> None:
        """Append one superstep's ``STATS_DTYPE`` row, sealed with the next segment."""
        self.stats_buffer.append(row)

    def seal(self, superstep: int, rows: Callable[[h5py.File], None] | None = None) -> None:
        """Write everything buffered as the segment of ``superstep``, with the archive's rows
        (or what ``rows`` writes instead)."""

        def fill(f: h5py.File) -> None:
            pages = f.create_group("pages")
            for name, dtype in PAGE_FIELDS.items():
                pages.create_dataset(name, data=np.asarray(self.buffer[name], dtype=dtype))
            f["links/counts"] = np.asarray(self.link_counts, dtype=np.int32)
            f["links/targets"] = np.concatenate(self.link_buffer or [np.zeros(0, np.int64)])
            f.create_dataset("vocab", data=np.array(list(self.new_terms.values()),
                                                    dtype=object), dtype=VOCAB)
            f["vocab_hash"] = np.fromiter(self.new_terms, np.int64, len(self.new_terms))
            f.create_dataset("stats", data=np.array(self.stats_buffer, dtype=STATS_DTYPE))
            self.search.seal(f)
            f.attrs.update(superstep=superstep, layout=LAYOUT, docs=self.docs,
                           pages_ok=self.pages_ok, errors=self.errors, bytes=self.bytes,
                           started=self.started)
            if rows is not None:
                rows(f)
            elif self.archive is not None:
                self.archive.drain(f)

        write_atomically(segment_dir(self.out, self.rank) / f"{superstep:010d}.h5", fill)
        self.vocab.add(np.fromiter(self.new_terms, np.int64, len(self.new_terms)))
        self.new_terms = {}
        for column in self.buffer.values():
            column.clear()
        self.stats_buffer.clear()
        self.link_buffer, self.link_counts = [], []
        self.search.clear()

    def carry(self, previous: Path, owns: Callable[[int], bool]) -> None:
        """Begin a recrawl: seal this rank's share of ``previous``'s history and validators
        (the hosts it ``owns``) as the carried segment, and load it into the archive."""
        assert self.archive is not None
        self.seal(archive_mod.PREVIOUS, rows=lambda f: archive_mod.carry(
            previous, self.out, owns, f))
        with h5py.File(segments(self.out, self.rank)[0][1], "r") as f:
            self.archive.replay(f)

    def close(self, superstep: int, complete: bool = True) -> Path:
        """Seal what is buffered, then join every segment into ``DIR/rank-NNNN.h5``."""
        if self.buffered or self.stats_buffer or not segments(self.out, self.rank):
            self.seal(superstep)
        return join_segments(self.out, self.rank, self.ranks, self.settings, complete)


def join_segments(out: Path, rank: int, ranks: int, settings: dict, complete: bool) -> Path:
    """Join a rank's segments, one at a time, into ``DIR/rank-NNNN.h5`` and remove them."""
    parts = [h5py.File(path, "r") for _, path in segments(out, rank)]
    try:
        for p in parts:
            check_layout(p)
        started = float(parts[0].attrs["started"]) if parts else time.time()

        def fill(f: h5py.File) -> None:
            f.attrs.update(format=FORMAT, layout=LAYOUT, version=__version__, rank=rank,
                           ranks=ranks, settings=json.dumps(settings), started=started,
                           finished=time.time(), complete=complete)
            for name, dtype in PAGE_FIELDS.items():
                concat(f, f"pages/{name}", parts, f"pages/{name}", dtype, maxshape=(None,))
            offsets = f.create_dataset("links/offsets", (1 + rows(parts, "links/counts"),),
                                       np.int64)  # (row 0: 0, the fill value)
            row, total = 1, 0
            for p in parts:
                counts = p["links/counts"][:]
                if len(counts):
                    offsets[row:row + len(counts)] = total + np.cumsum(counts, dtype=np.int64)
                row, total = row + len(counts), total + int(counts.sum())
            concat(f, "links/targets", parts, "links/targets", np.int64)
            concat(f, "stats", parts, "stats", STATS_DTYPE, maxshape=(None,))
            archive_mod.join(f, parts, out, rank)
            ranking.join(f, parts, ranking.weights_of(settings), segment_dir(out, rank))

        path = rank_path(out, rank)
        write_atomically(path, fill)
    finally:
        for p in parts:
            p.close()
    shutil.rmtree(segment_dir(out, rank))
    return path


def split_rank_file(out: Path, rank: int, superstep: int) -> None:
    """Turn ``DIR/rank-NNNN.h5`` back into one segment of ``superstep`` (the inverse of
    :func:`join_segments`), to resume a crawl that stopped and joined its files."""
    path = rank_path(out, rank)
    segment_dir(out, rank).mkdir(parents=True, exist_ok=True)
    with h5py.File(path, "r") as f:
        check_layout(f)
        status, revisit = f["pages/status"][:], f["pages/revisit"][:]
        length, error = f["pages/length"][:], f["pages/error"][:]

        def fill(g: h5py.File) -> None:
            for name in PAGE_FIELDS:
                f.copy(f[f"pages/{name}"], g, f"pages/{name}")
            g["links/counts"] = np.diff(f["links/offsets"][:]).astype(np.int32)
            f.copy(f["links/targets"], g, "links/targets")
            f.copy(f["stats"], g, "stats")
            f.copy(f[f"{ranking.GROUP}/vocab"], g, "vocab")
            f.copy(f[f"{ranking.GROUP}/vocab_hash"], g, "vocab_hash")
            g.attrs.update(superstep=superstep, layout=LAYOUT, docs=len(status),
                           pages_ok=int(answered_ok(status, revisit).sum()),
                           errors=int((error != b"").sum()),
                           bytes=int(length[revisit == 0].sum()),
                           started=float(f.attrs["started"]))
            archive_mod.split(f, g)
            ranking.split(f, g)

        write_atomically(segment_dir(out, rank) / f"{superstep:010d}.h5", fill)
    path.unlink()
