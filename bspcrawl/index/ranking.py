"""The inverted index of a rank (``/search``): per-field term counts, lengths, titles,
phrase pairs and anchor text; its datasets are in ``docs/search.md``.

A term counts more in the title or a heading than in the body, by the tag weights of the
Compass search engine, relative to the body's; the anchor text of the links to a page is a
field of its own. While the crawl runs, :class:`SearchBuffer` collects the postings of
committed pages and the anchor text received, and seals them into each segment sorted by
(term, doc). :func:`join` credits anchor text to the fetched pages and merges the segments'
sorted runs in batches of bounded size (:func:`merged`), so the join's memory does not
grow with the crawl and a query reads one index, not blocks to merge.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

import h5py
import numpy as np

from bspcrawl.index.columns import Appender, concat, on_disk
from bspcrawl.index.terms import TermCounts

GROUP = "search"
FORMAT = "bspcrawl-search"
VERSION = 1
FIELDS = ("title", "h1", "h2", "h3", "h4", "h5", "body")
"""The tag classes of a page's text; a word counts in the innermost one it is in."""
COMPASS_WEIGHTS = {"title": 0.30, "h1": 0.10, "h2": 0.08, "h3": 0.066, "h4": 0.04,
                   "h5": 0.033, "body": 0.01, "anchor": 0.10}
"""Compass's tag weights (``body``: any other text), and the anchor text's."""


class SearchBuffer:
    """One rank's postings and anchor text since the last segment; ``weights``: of each of
    :data:`FIELDS` and ``anchor``, only their ratios to the body's matter."""

    def __init__(self, weights: dict[str, float]) -> None:
        self.relative = {name: w / weights["body"] for name, w in weights.items()}
        self.clear()

    def clear(self) -> None:
        """Forget what was sealed."""
        self.term: list[np.ndarray] = []
        self.doc: list[np.ndarray] = []
        self.tf: list[np.ndarray] = []
        self.wtf: list[np.ndarray] = []
        self.pages: list[tuple[int, int, float, str]] = []  # doc, length, wlength, title
        self.pair_hash: list[np.ndarray] = []
        self.pair_doc: list[np.ndarray] = []
        self.anchor_fp: list[np.ndarray] = []
        self.anchor_term: list[np.ndarray] = []
        self.anchor_tf: list[np.ndarray] = []

    def add_page(self, doc: int, terms: TermCounts, title: str,
                 fields: dict[str, tuple[np.ndarray, np.ndarray]], pairs: np.ndarray) -> None:
        """Index page ``doc``: ``terms`` counts all its text, ``fields`` the (hashes, counts)
        of its title and headings, where a word counts that field's weight, not the body's."""
        wtf = terms.tf.astype(np.float32)
        if fields and len(terms):
            hashes = np.concatenate([h for h, _ in fields.values()])
            extra = np.concatenate([(self.relative[name] - 1) * tf
                                    for name, (_, tf) in fields.items()])
            at = np.minimum(np.searchsorted(terms.hashes, hashes), len(terms) - 1)
            ok = terms.hashes[at] == hashes
            np.add.at(wtf, at[ok], extra[ok])
            np.maximum(wtf, 0, out=wtf)
        self.pages.append((doc, int(terms.tf.sum()), float(wtf.sum()), title))
        if len(terms):
            self.term.append(terms.hashes)
            self.doc.append(np.full(len(terms), doc, np.int32))
            self.tf.append(terms.tf)
            self.wtf.append(wtf)
        if len(pairs):
            self.pair_hash.append(pairs)
            self.pair_doc.append(np.full(len(pairs), doc, np.int32))

    def add_anchors(self, fps: np.ndarray, terms: np.ndarray, tf: np.ndarray) -> None:
        """Credit ``tf[i]`` words ``terms[i]`` of anchor text to the URL ``fps[i]``."""
        if len(fps):
            self.anchor_fp.append(np.asarray(fps, np.int64))
            self.anchor_term.append(np.asarray(terms, np.int64))
            self.anchor_tf.append(np.asarray(tf, np.int32))

    def seal(self, f: h5py.File) -> None:
        """Write what was added since the last :meth:`clear` into the segment ``f``,
        postings and pairs sorted by (term, doc), each pair once."""
        g = f.create_group(GROUP)
        term, doc = _concat(self.term, np.int64), _concat(self.doc, np.int32)
        order = np.lexsort((doc, term))
        g["postings/term"], g["postings/doc"] = term[order], doc[order]
        g["postings/tf"] = _concat(self.tf, np.int32)[order]
        g["postings/wtf"] = _concat(self.wtf, np.float32)[order]
        docs, lengths, wlengths, titles = (zip(*self.pages, strict=True) if self.pages
                                           else ((), (), (), ()))
        g["pages/doc"] = np.array(docs, np.int64)
        g["pages/length"] = np.array(lengths, np.int32)
        g["pages/wlength"] = np.array(wlengths, np.float32)
        g.create_dataset("pages/title", data=np.array(titles, dtype=object),
                         dtype=h5py.string_dtype())
        key = np.sort((_concat(self.pair_hash, np.uint64) << np.uint64(32))
                      | _concat(self.pair_doc, np.uint64))  # by pair, then doc
        key = key[np.concatenate(([True], key[1:] != key[:-1]))] if len(key) else key
        g["pairs/term"] = (key >> np.uint64(32)).astype(np.int64)
        g["pairs/doc"] = (key & np.uint64(0xFFFFFFFF)).astype(np.int32)
        g["anchor/fp"] = _concat(self.anchor_fp, np.int64)
        g["anchor/term"] = _concat(self.anchor_term, np.int64)
        g["anchor/tf"] = _concat(self.anchor_tf, np.int32)


def _concat(arrays: list[np.ndarray], dtype: type) -> np.ndarray:
    return np.concatenate(arrays).astype(dtype, copy=False) if arrays else np.zeros(0, dtype)


def weights_of(settings: dict) -> dict[str, float]:
    """The field weights of a crawl's settings (Compass's for any not given)."""
    return {name: float(settings.get(f"index_weight_{name}", w))
            for name, w in COMPASS_WEIGHTS.items()}


Run = dict[str, "h5py.Dataset | np.ndarray"]
"""Columns of equal length sorted by (``term``, ``doc``); a column it lacks reads as 0."""
MERGE_ROWS = 1 << 20
"""Rows a merge batch reads at most, over all runs ..."""
MERGE_MIN = 1024
"""... unless that leaves fewer than this to each run."""
POSTING_COLUMNS = {"tf": np.int32, "wtf": np.float32, "atf": np.int32}


def merged(runs: list[Run], columns: dict[str, type]) -> Iterator[dict[str, np.ndarray]]:
    """The rows of ``runs`` in (term, doc) order, those of one (term, doc) summed, in
    batches of at most a chunk of each run: a batch ends at the smallest last key of the
    buffers whose run goes on, so every row is read once."""
    chunk = max(MERGE_MIN, MERGE_ROWS // max(len(runs), 1))
    kinds = {"term": np.int64, "doc": np.int32, **columns}
    at = [0] * len(runs)
    size = [len(run["term"]) for run in runs]
    buffers: list[dict[str, np.ndarray]] = [{name: np.zeros(0, kind) for name, kind
                                             in kinds.items()} for _ in runs]
    while True:
        for i, run in enumerate(runs):
            if not len(buffers[i]["term"]) and at[i] < size[i]:
                end = min(at[i] + chunk, size[i])
                buffers[i] = {name: run[name][at[i]:end] if name in run
                              else np.zeros(end - at[i], kind) for name, kind in kinds.items()}
                at[i] = end
        live = [b for b in buffers if len(b["term"])]
        if not live:
            return
        bound = min(((b["term"][-1], b["doc"][-1]) for i, b in enumerate(buffers)
                     if at[i] < size[i]), default=None)  # (their buffers are not empty)
        batch: dict[str, list[np.ndarray]] = {name: [] for name in kinds}
        for b in live:
            n = len(b["term"]) if bound is None else _upto(b["term"], b["doc"], *bound)
            for name in kinds:
                batch[name].append(b[name][:n])
                b[name] = b[name][n:]
        term, doc = _concat(batch["term"], np.int64), _concat(batch["doc"], np.int32)
        order = np.lexsort((doc, term))
        term, doc = term[order], doc[order]
        first = np.flatnonzero(np.concatenate(([True], (term[1:] != term[:-1])
                                               | (doc[1:] != doc[:-1])))) if len(term) \
            else np.zeros(0, np.int64)
        out = {"term": term[first], "doc": doc[first]}
        for name, kind in columns.items():
            v = _concat(batch[name], kind)[order]
            out[name] = np.add.reduceat(v, first).astype(kind) if len(v) else v
        yield out


def _upto(term: np.ndarray, doc: np.ndarray, bound_term: int, bound_doc: int) -> int:
    """How many of the sorted (term, doc) rows are at most (bound_term, bound_doc)."""
    lo, hi = np.searchsorted(term, bound_term, "left"), np.searchsorted(term, bound_term, "right")
    return int(lo + np.searchsorted(doc[lo:hi], bound_doc, "right"))


class _Csr:
    """A CSR index written batch by batch, from rows sorted by (term, doc)."""

    def __init__(self, g: h5py.Group, columns: dict[str, type]) -> None:
        self.terms = Appender(g, "terms", np.int64)
        self.offsets = Appender(g, "offsets", np.int64)
        self.columns = {name: Appender(g, name, dtype)
                        for name, dtype in {"docs": np.int32, **columns}.items()}
        self.rows, self.last = 0, None

    def append(self, batch: dict[str, np.ndarray]) -> None:
        term = batch["term"]
        if not len(term):
            return
        new = np.concatenate(([term[0] != self.last], term[1:] != term[:-1]))
        starts = np.flatnonzero(new)
        self.terms.append(term[starts])
        self.offsets.append(starts + self.rows)
        self.columns["docs"].append(batch["doc"])
        for name, column in self.columns.items():
            if name != "docs":
                column.append(batch[name])
        self.rows += len(term)
        self.last = term[-1]

    def write(self, batches: Iterator[dict[str, np.ndarray]]) -> None:
        """Append every batch, then the final offset."""
        for batch in batches:
            self.append(batch)
        self.offsets.append(np.array([self.rows], np.int64))


def join(f: h5py.File, parts: list[h5py.File], weights: dict[str, float], scratch: Path
         ) -> None:
    """Write ``/search`` into the rank file ``f`` (its ``/pages`` written) from its
    segments: postings plus the anchor text credited to the indexed pages (a URL's latest
    row), summed by (term, doc). The credits wait, sorted in runs, in a temporary file in
    ``scratch``."""
    g = f.create_group(GROUP)
    g.attrs.update(format=FORMAT, version=VERSION, weights=[weights[n] for n in
                                                            (*FIELDS, "anchor")],
                   fields=[*FIELDS, "anchor"])
    s = [p[GROUP] for p in parts]
    n = f["pages/url"].shape[0]
    length, wlength, title = (g.create_dataset(name, (n,), dtype) for name, dtype in (
        ("length", np.int32), ("wlength", np.float32), ("title", h5py.string_dtype())))
    indexed = np.zeros(n, bool)
    first = 0
    for p, part in zip(parts, s, strict=True):
        rows = p["pages/url"].shape[0]
        doc = part["pages/doc"][:] - first
        indexed[doc + first] = True
        for column, name, dtype in ((length, "length", np.int32),
                                    (wlength, "wlength", np.float32)):
            values = np.zeros(rows, dtype)
            values[doc] = part[f"pages/{name}"][:]
            if rows:
                column[first:first + rows] = values
        titles = np.full(rows, "", dtype=object)
        titles[doc] = part["pages/title"].asstr()[:]
        if rows:
            title[first:first + rows] = titles
        first += rows
    concat(g, "vocab", parts, "vocab", h5py.string_dtype("ascii"))
    concat(g, "vocab_hash", parts, "vocab_hash", np.int64)
    for name, dtype in (("fp", np.int64), ("term", np.int64), ("tf", np.int32)):
        concat(g, f"anchor/{name}", s, f"anchor/{name}", dtype)
    fps, docs = _targets(f["pages/url_fp"][:], indexed)
    alength = np.zeros(n, np.int32)
    with tempfile.TemporaryFile(dir=scratch, buffering=0) as raw, on_disk(raw, "w") as runs_file:
        runs: list[Run] = [part["postings"] for part in s]
        credit: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        for i, part in enumerate(s):
            a_fp = part["anchor/fp"][:]
            at = np.minimum(np.searchsorted(fps, a_fp), max(len(fps) - 1, 0))
            hit = fps[at] == a_fp if len(fps) else np.zeros(len(a_fp), bool)
            credit.append((part["anchor/term"][:][hit], docs[at[hit]],
                           part["anchor/tf"][:][hit]))
            np.add.at(alength, credit[-1][1], credit[-1][2])
            if i == len(s) - 1 or sum(len(c[0]) for c in credit) >= MERGE_ROWS:
                a_term, a_doc, a_tf = (np.concatenate(c) for c in zip(*credit, strict=True))
                order = np.lexsort((a_doc, a_term))
                run = runs_file.create_group(str(i))
                run["term"], run["doc"], run["atf"] = a_term[order], a_doc[order], a_tf[order]
                runs.append(run)
                credit.clear()
        _Csr(g, POSTING_COLUMNS).write(merged(runs, POSTING_COLUMNS))
    g["alength"] = alength
    _Csr(g.create_group("pairs"), {}).write(merged([part["pairs"] for part in s], {}))


def _targets(url_fp: np.ndarray, indexed: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sorted fingerprints and docs of the pages credited with anchor text: each URL's
    latest row, if indexed."""
    order = np.argsort(url_fp, kind="stable")
    fp = url_fp[order]
    last = np.flatnonzero(np.append(fp[1:] != fp[:-1], True)) if len(fp) else order
    docs = order[last]
    keep = indexed[docs]
    return fp[last][keep], docs[keep].astype(np.int32)


def split(f: h5py.File, g: h5py.File) -> None:
    """Copy the rank file ``f``'s ``/search`` into the segment ``g`` (inverse of :func:`join`)."""
    s, out = f[GROUP], g.create_group(GROUP)
    term = np.repeat(s["terms"][:], np.diff(s["offsets"][:]))
    tf, wtf = s["tf"][:], s["wtf"][:]
    page = (tf > 0) | (wtf > 0)  # not the postings of anchor text alone
    out["postings/term"], out["postings/doc"] = term[page], s["docs"][:][page]
    out["postings/tf"], out["postings/wtf"] = tf[page], wtf[page]
    length, wlength = s["length"][:], s["wlength"][:]
    titles = s["title"].asstr()[:]
    doc = np.flatnonzero((length > 0) | (titles != ""))
    out["pages/doc"] = doc.astype(np.int64)
    out["pages/length"], out["pages/wlength"] = length[doc], wlength[doc]
    out.create_dataset("pages/title", data=titles[doc].astype(object),
                       dtype=h5py.string_dtype())
    out["pairs/term"] = np.repeat(s["pairs/terms"][:], np.diff(s["pairs/offsets"][:]))
    out["pairs/doc"] = s["pairs/docs"][:]
    for name in ("fp", "term", "tf"):
        f.copy(s[f"anchor/{name}"], out, f"anchor/{name}")
