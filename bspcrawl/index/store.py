"""One rank's HDF5 index: pages, link graph (CSR), inverted index and per-superstep stats.

The file ``DIR/rank-NNNN.h5`` is owned by the scheduler thread alone (h5py is not
thread-safe). Pages arrive through :meth:`RankStore.commit` in commit order, which is the
sequence window's schedule order, and get dense doc ids 0, 1, 2, ... in that order.

Layout (every dataset 1-D, one row per page unless said otherwise):

===========================  ==========  ===================================================
``/pages/url``               str         the URL fetched (UTF-8)
``/pages/url_fp``            int64       64-bit fingerprint of the canonical URL
``/pages/status``            int16       HTTP status; 0 when no response (see ``error``)
``/pages/error``             str         '' or the failure kind (timeout, dns, too_large...)
``/pages/content_type``      str         the Content-Type header
``/pages/length``            int64       body bytes received
``/pages/fetch_time``        float64     Unix time the transfer started
``/pages/elapsed``           float32     transfer duration, seconds
``/pages/depth``             int16       links followed from a seed
``/pages/seq``               int64       sequence number of the schedule it came in
``/pages/doc_id``            int64       dense per-rank document id (= row number)
``/pages/content_fp``        uint64      xxh3-64 of the body (0: no body); equal = duplicate
``/pages/redirect``          str         resolved Location of a 3xx, else ''
``/links/offsets``           int64       CSR row pointer, n_pages + 1 entries
``/links/targets``           int64       url_fp of each out-link, page by page
``/index/terms``             str         sorted terms
``/index/offsets``           int64       CSR row pointer into docs/tf, n_terms + 1 entries
``/index/docs``              int64       doc ids of each term's postings, increasing
``/index/tf``                int32       term frequency in that doc
``/stats``                   compound    one row per superstep (fields: ``STATS_DTYPE``)
===========================  ==========  ===================================================

Root attributes: ``format`` ("bspcrawl-rank"), ``version``, ``rank``, ``ranks``,
``settings`` (JSON), ``started``, ``finished`` (Unix times) and ``complete`` (bool).
The inverted index is built in memory, compactly: at each flush the batch's terms become
int32 term ids (one dict lookup per distinct term occurrence, in C), so a posting costs
12 bytes until :meth:`close` sorts them into the CSR arrays.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import h5py
import numpy as np
import xxhash

from bspcrawl import __version__
from bspcrawl.robots.fetcher import FetchResult

STR = h5py.string_dtype()
PAGE_FIELDS: dict[str, np.dtype | type] = {
    "url": STR, "url_fp": np.int64, "status": np.int16, "error": STR, "content_type": STR,
    "length": np.int64, "fetch_time": np.float64, "elapsed": np.float32, "depth": np.int16,
    "seq": np.int64, "doc_id": np.int64, "content_fp": np.uint64, "redirect": STR,
}
STATS_DTYPE = np.dtype([
    ("rank", np.int32), ("superstep", np.int64), ("time", np.float64), ("pages", np.int64),
    ("pages_ok", np.int64), ("errors", np.int64), ("bytes", np.int64),
    ("frontier", np.int64), ("in_flight", np.int64), ("seen", np.int64),
    ("urls_in", np.int64), ("urls_out", np.int64), ("new_urls", np.int64),
    ("duplicates", np.int64), ("robots_denied", np.int64), ("filtered", np.int64),
    ("retried", np.int64), ("deferred", np.int64), ("late", np.int64), ("wait_s", np.float64),
])
FORMAT = "bspcrawl-rank"


def rank_path(out: Path, rank: int) -> Path:
    """``DIR/rank-NNNN.h5``."""
    return out / f"rank-{rank:04d}.h5"


def _appendable(group: h5py.Group, name: str, dtype: np.dtype | type) -> h5py.Dataset:
    return group.create_dataset(name, shape=(0,), maxshape=(None,), dtype=dtype,
                                chunks=(4096,))


def _append(ds: h5py.Dataset, values: np.ndarray | list) -> None:
    n = ds.shape[0]
    ds.resize((n + len(values),))
    ds[n:] = values


class RankStore:
    """Writes one rank's pages, links, postings and stats to ``DIR/rank-NNNN.h5``."""

    def __init__(self, out: Path, rank: int, ranks: int, settings: dict, flush_pages: int):
        self.path = rank_path(out, rank)
        self.file = h5py.File(self.path, "w")
        a = self.file.attrs
        a.update(format=FORMAT, version=__version__, rank=rank, ranks=ranks,
                 settings=json.dumps(settings), started=time.time(), finished=0.0,
                 complete=False)
        pages = self.file.create_group("pages")
        for name, dtype in PAGE_FIELDS.items():
            _appendable(pages, name, dtype)
        links = self.file.create_group("links")
        _appendable(links, "offsets", np.int64)
        _appendable(links, "targets", np.int64)
        _append(links["offsets"], [0])
        self.stats = _appendable(self.file, "stats", STATS_DTYPE)
        self.stats_buffer: list[np.ndarray] = []
        self.flush_pages = flush_pages
        self.buffer: dict[str, list] = {name: [] for name in PAGE_FIELDS}
        self.link_buffer: list[int] = []
        self.link_counts: list[int] = []
        self.link_total = 0
        self.vocab: dict[bytes, int] = {}  # term -> term id, in order of first use
        self.batch_terms: list[bytes] = []  # terms of the buffered pages, page by page
        self.batch_tfs: list[int] = []
        self.batch_docs: list[int] = []  # doc ids of the buffered pages
        self.batch_lens: list[int] = []  # and their number of distinct terms
        self.postings: list[np.ndarray] = []  # flushed (term id, doc, tf) int arrays
        self.docs = 0
        self.pages_ok = 0
        self.errors = 0
        self.bytes = 0

    def commit(self, result: FetchResult, url_fp: int, redirect: str,
               link_fps: list[int], terms: dict[bytes, int]) -> int:
        """Append one fetched page with its out-links and term counts; returns its doc id."""
        doc = self.docs
        self.docs += 1
        job, b = result.job, self.buffer
        b["url"].append(job.url)
        b["url_fp"].append(url_fp)
        b["status"].append(result.status)
        b["error"].append(result.error)
        b["content_type"].append(result.content_type)
        b["length"].append(len(result.body))
        b["fetch_time"].append(result.started)
        b["elapsed"].append(result.elapsed)
        b["depth"].append(job.depth)
        b["seq"].append(job.seq)
        b["doc_id"].append(doc)
        b["content_fp"].append(xxhash.xxh3_64_intdigest(result.body) if result.body else 0)
        b["redirect"].append(redirect)
        self.link_buffer.extend(link_fps)
        self.link_counts.append(len(link_fps))
        self.batch_terms.extend(terms)
        self.batch_tfs.extend(terms.values())
        self.batch_docs.append(doc)
        self.batch_lens.append(len(terms))
        self.bytes += len(result.body)
        if result.error:
            self.errors += 1
        elif 200 <= result.status < 300:
            self.pages_ok += 1
        if len(b["url"]) >= self.flush_pages:
            self.flush()
        return doc

    def add_stats(self, row: np.ndarray) -> None:
        """Append one ``STATS_DTYPE`` row (one superstep); written at the next flush."""
        self.stats_buffer.append(row)

    def flush(self) -> None:
        """Write the buffered pages and links to the file; turn terms into term ids."""
        if self.batch_terms:
            vocab = self.vocab
            for term in set(self.batch_terms).difference(vocab):
                vocab[term] = len(vocab)
            n = len(self.batch_terms)
            batch = np.empty((3, n), dtype=np.int32)
            batch[0] = np.fromiter(map(vocab.__getitem__, self.batch_terms), np.int32, n)
            batch[1] = np.repeat(np.asarray(self.batch_docs, dtype=np.int32), self.batch_lens)
            batch[2] = np.fromiter(self.batch_tfs, np.int32, n)
            self.postings.append(batch)
            self.batch_terms, self.batch_tfs = [], []
        self.batch_docs, self.batch_lens = [], []
        if self.stats_buffer:
            _append(self.stats, np.stack(self.stats_buffer))
            self.stats_buffer.clear()
        if not self.buffer["url"]:
            return
        pages = self.file["pages"]
        for name, dtype in PAGE_FIELDS.items():
            _append(pages[name], np.asarray(self.buffer[name], dtype=dtype))
            self.buffer[name].clear()
        ends = self.link_total + np.cumsum(np.asarray(self.link_counts, dtype=np.int64))
        self.link_total = int(ends[-1])
        _append(self.file["links/offsets"], ends)
        _append(self.file["links/targets"], np.asarray(self.link_buffer, dtype=np.int64))
        self.link_buffer.clear()
        self.link_counts.clear()
        self.file.flush()

    def close(self, complete: bool = True) -> None:
        """Flush, write the inverted index, mark the file complete and close it."""
        self.flush()
        terms = sorted(self.vocab)  # bytes order
        rank_of = np.empty(len(terms), dtype=np.int64)  # term id -> position in ``terms``
        rank_of[[self.vocab[t] for t in terms]] = np.arange(len(terms))
        ids, docs, tfs = (np.concatenate(self.postings, axis=1) if self.postings
                          else np.zeros((3, 0), dtype=np.int32))
        keys = rank_of[ids]
        order = np.argsort(keys, kind="stable")  # by term, then doc (docs were increasing)
        offsets = np.zeros(len(terms) + 1, dtype=np.int64)
        np.cumsum(np.bincount(keys, minlength=len(terms)), out=offsets[1:])
        index = self.file.create_group("index")
        index.create_dataset("terms", data=np.array([t.decode("utf-8", "replace")
                                                     for t in terms], dtype=object), dtype=STR)
        index.create_dataset("offsets", data=offsets)
        index.create_dataset("docs", data=docs[order].astype(np.int64))
        index.create_dataset("tf", data=tfs[order])
        self.file.attrs.update(finished=time.time(), complete=complete)
        self.file.close()
