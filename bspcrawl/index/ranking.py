"""The index for ranking: per-field term frequencies, document lengths, titles, phrase pairs
and anchor text, in the ``/search`` group of each rank file (``docs/search.md``).

After the Compass report (``../shared/seeds/003_*``): a term counts more in the title or a
heading than in the body, by Compass's tag weights (title 0.30, h1 0.10, h2 0.08, h3 0.066,
h4 0.04, h5 0.033, any other text 0.01). The weights are used relative to the body's, so
a word of the title counts as 30 words of the body; the anchor text of the links pointing
to a page is a field of its own (``index_weight_anchor``, 0.10 by default: an h1).

Layout of ``/search`` (term hashes as :func:`bspcrawl.index.terms.term_hash`)::

    terms    int64    [-9, 4, 17]           sorted distinct term hashes
    offsets  int64    [0, 2, 3, 5]          CSR row pointer into the posting columns
    docs     int32    [0, 3 | 1 | 0, 2]     doc ids of each term's postings, increasing
    tf       int32    [2, 1 | 1 | 0, 3]     raw count in the page text (title, headings, body)
    wtf      float32  [31, 1 | 1 | 0, 3]    tag-weighted count: sum of weight(tag) x count
    atf      int32    [0, 0 | 0 | 2, 0]     count in the anchor text of the links to the doc
    length   int32    one row per /pages row: terms in the page text
    wlength  float32  ... and their tag-weighted sum
    alength  int32    ... terms of anchor text pointing to the page
    title    str      ... the page's <title>
    pairs/terms, pairs/offsets, pairs/docs: the same CSR for the adjacent term pairs of the
             page text (32-bit ``terms.pair_hash``), each doc once, for phrase hits

    anchor/fp, anchor/term, anchor/tf: the anchor text received, by target URL
             fingerprint, whether the page was fetched or not (kept for a resume)

Postings arrive in doc order (as pages are committed); one sort by term hash, then doc,
gives each term's docs increasing. Everything loads with one read per column into numpy.

While the crawl runs, :class:`SearchBuffer` collects each committed page's postings and
the anchor text of the links this rank receives (for the pages of the hosts it owns,
fetched yet or not), keyed by the target's URL fingerprint; each segment holds a
``search`` group of what its stretch added (the only copy of its pages' postings: the
join makes ``/index`` of them too), and :func:`credited` credits the anchor text to the
pages fetched (by ``/pages/url_fp``) when the segments become the rank file.
"""

from __future__ import annotations

from dataclasses import dataclass

import h5py
import numpy as np

from bspcrawl.index.terms import TermCounts

__all__ = ["COMPASS_WEIGHTS", "FIELDS", "GROUP", "Postings", "SearchBuffer", "collect",
           "credited", "csr", "save", "split", "weights_of", "write"]

GROUP = "search"
FORMAT = "bspcrawl-search"
VERSION = 1
FIELDS = ("title", "h1", "h2", "h3", "h4", "h5", "body")
"""The tag classes of a page's text; a word counts in the innermost one it is in."""
COMPASS_WEIGHTS = {"title": 0.30, "h1": 0.10, "h2": 0.08, "h3": 0.066, "h4": 0.04,
                   "h5": 0.033, "body": 0.01, "anchor": 0.10}
"""Compass's tag weights (``body``: any other text), and the anchor text's."""


@dataclass(slots=True)
class Postings:
    """Flat postings, each (term, doc) once: ``term`` (int64 hash), ``doc`` (int32), ``tf``
    (int32), ``wtf`` (float32), ``atf`` (int32)."""

    term: np.ndarray
    doc: np.ndarray
    tf: np.ndarray
    wtf: np.ndarray
    atf: np.ndarray


def csr(keys: np.ndarray) -> tuple[np.ndarray | slice, np.ndarray, np.ndarray]:
    """(order, distinct sorted keys, offsets): ``keys[order]`` sorted (stable, so docs
    stay increasing within a key), and each key's block in that order. Keys sorted
    already (the rank file's postings and pairs: their sort by term and doc makes them
    so) keep their order: ``slice(None)``, no sort, no copy (on pandas' pages, 2,610 of
    them, a seventh of the rank file's join)."""
    if len(keys) < 2 or not (keys[1:] < keys[:-1]).any():
        order: np.ndarray | slice = slice(None)
        ordered = keys
    else:
        order = np.argsort(keys, kind="stable")
        ordered = keys[order]
    starts = np.flatnonzero(np.concatenate(([True], ordered[1:] != ordered[:-1]))) \
        if len(ordered) else np.zeros(0, np.int64)
    offsets = np.append(starts, len(ordered)).astype(np.int64)
    return order, ordered[starts], offsets


def write(f: h5py.File | h5py.Group, postings: Postings, pairs: tuple[np.ndarray, np.ndarray],
          length: np.ndarray, wlength: np.ndarray, alength: np.ndarray, titles: list[str],
          weights: dict[str, float]) -> None:
    """Write the ``/search`` group into ``f`` (see the module docstring). ``pairs``: the
    (pair hash, doc) of the adjacent term pairs of each page, repeats allowed; ``length``,
    ``wlength``, ``alength`` and ``titles``: one row per page."""
    g = f.create_group(GROUP)
    g.attrs.update(format=FORMAT, version=VERSION, weights=[weights[n] for n in
                                                            (*FIELDS, "anchor")],
                   fields=[*FIELDS, "anchor"])
    order, terms, offsets = csr(postings.term)
    g["terms"], g["offsets"] = terms, offsets
    for name in ("doc", "tf", "wtf", "atf"):
        g[name + "s" if name == "doc" else name] = getattr(postings, name)[order]
    g["length"] = length.astype(np.int32)
    g["wlength"] = wlength.astype(np.float32)
    g["alength"] = alength.astype(np.int32)
    g.create_dataset("title", data=np.array(titles, dtype=object),
                     dtype=h5py.string_dtype())
    hashes, docs = pairs
    key = np.sort((hashes.astype(np.uint64) << np.uint64(32))
                  | docs.astype(np.uint64))  # by pair, then doc
    key = key[np.concatenate(([True], key[1:] != key[:-1]))] if len(key) else key
    _, terms, offsets = csr((key >> np.uint64(32)).astype(np.int64))
    g["pairs/terms"], g["pairs/offsets"] = terms, offsets
    g["pairs/docs"] = (key & np.uint64(0xFFFFFFFF)).astype(np.int32)


def relative_weights(weights: dict[str, float]) -> dict[str, float]:
    """The weights divided by the body's (so a word of the body counts 1)."""
    return {name: w / weights["body"] for name, w in weights.items()}


_NO_INT = np.zeros(0, np.int64)


class SearchBuffer:
    """One rank's index for ranking since the last segment (see the module docstring).

    ``weights``: the weight of each of :data:`FIELDS` and of ``anchor`` (absolute, as
    Compass's table; only their ratios to the body's matter).
    """

    def __init__(self, weights: dict[str, float]) -> None:
        self.weights = dict(weights)
        self.relative = relative_weights(weights)
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
        """Index page ``doc``: ``terms`` counts all its text; ``fields`` the (term hashes,
        counts) of the text of some of :data:`FIELDS` (title, h1 ... h5: a word there counts
        that field's weight instead of the body's); ``pairs`` its ``terms.page_pairs``."""
        wtf = terms.tf.astype(np.float32)
        if fields and len(terms):  # all fields at once: one search, one add
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
        """Credit anchor text: ``tf[i]`` words ``terms[i]`` (hashes) to the page of URL
        fingerprint ``fps[i]``."""
        if len(fps):
            self.anchor_fp.append(np.asarray(fps, np.int64))
            self.anchor_term.append(np.asarray(terms, np.int64))
            self.anchor_tf.append(np.asarray(tf, np.int32))

    def seal(self, f: h5py.File) -> None:
        """Write what was added since the last :meth:`clear` into the segment ``f``."""
        g = f.create_group(GROUP)
        cat = _concat
        g["postings/term"], g["postings/doc"] = cat(self.term, np.int64), cat(self.doc, np.int32)
        g["postings/tf"], g["postings/wtf"] = cat(self.tf, np.int32), cat(self.wtf, np.float32)
        docs, lengths, wlengths, titles = (zip(*self.pages, strict=True) if self.pages
                                           else ((), (), (), ()))
        g["pages/doc"] = np.array(docs, np.int64)
        g["pages/length"] = np.array(lengths, np.int32)
        g["pages/wlength"] = np.array(wlengths, np.float32)
        g.create_dataset("pages/title", data=np.array(titles, dtype=object),
                         dtype=h5py.string_dtype())
        g["pairs/hash"] = cat(self.pair_hash, np.uint32)  # (32-bit: terms.pair_hash)
        g["pairs/doc"] = cat(self.pair_doc, np.int32)
        g["anchor/fp"], g["anchor/term"] = cat(self.anchor_fp, np.int64), cat(self.anchor_term,
                                                                               np.int64)
        g["anchor/tf"] = cat(self.anchor_tf, np.int32)


def _concat(arrays: list[np.ndarray], dtype: type) -> np.ndarray:
    return np.concatenate(arrays).astype(dtype, copy=False) if arrays else np.zeros(0, dtype)


COLUMNS = {"postings/term": np.int64, "postings/doc": np.int32, "postings/tf": np.int32,
           "postings/wtf": np.float32, "pages/doc": np.int64, "pages/length": np.int32,
           "pages/wlength": np.float32, "pairs/hash": np.uint32, "pairs/doc": np.int32,
           "anchor/fp": np.int64, "anchor/term": np.int64, "anchor/tf": np.int32}
"""The columns of a segment's ``search`` group (and ``pages/title``, str)."""


def weights_of(settings: dict) -> dict[str, float]:
    """The field weights of a crawl's settings (``index_weight_*``; Compass's when a
    crawl of an older bspcrawl has none)."""
    return {name: float(settings.get(f"index_weight_{name}", w))
            for name, w in COMPASS_WEIGHTS.items()}


def collect(parts: list[h5py.File]) -> dict[str, np.ndarray]:
    """The ``search`` columns of every segment, concatenated. A segment of a bspcrawl
    before the index for ranking has none, only its pages' postings (``postings/*``): those
    count, with their tf as tag-weighted tf."""
    columns: dict[str, list[np.ndarray]] = {name: [] for name in COLUMNS}
    titles: list[str] = []
    for p in parts:
        if GROUP in p:
            for name in COLUMNS:
                columns[name].append(p[GROUP][name][:])
            titles += p[GROUP]["pages/title"].asstr()[:].tolist()
        elif "postings/term" in p:
            for name in ("term", "doc", "tf"):
                columns[f"postings/{name}"].append(p[f"postings/{name}"][:])
            columns["postings/wtf"].append(p["postings/tf"][:])
    out = {name: _concat(columns[name], dtype) for name, dtype in COLUMNS.items()}
    out["pages/title"] = np.array(titles, dtype=object)
    return out


def credited(c: dict[str, np.ndarray], url_fp: np.ndarray) -> tuple[Postings, np.ndarray]:
    """A rank file's postings, from its segments' columns ``c`` (:func:`collect`): the
    pages' postings and the anchor text credited to the fetched pages that were indexed
    (``url_fp``: ``/pages/url_fp``; the latest row of a URL fetched twice), summed by
    (term, doc), sorted by term hash then doc; and each page's terms of anchor text."""
    n = len(url_fp)
    a_fp, a_tf = c["anchor/fp"], c["anchor/tf"]
    last = n - 1 - np.unique(url_fp[::-1], return_index=True)[1]  # latest row of each fp
    by_fp = last[np.argsort(url_fp[last])]
    at = np.minimum(np.searchsorted(url_fp[by_fp], a_fp), max(len(by_fp) - 1, 0))
    indexed = np.zeros(n, bool)
    indexed[c["pages/doc"]] = True  # (not a page without text, nor a noindex one)
    hit = (url_fp[by_fp[at]] == a_fp) & indexed[by_fp[at]] if len(by_fp) \
        else np.zeros(len(a_fp), bool)
    a_doc = by_fp[at[hit]].astype(np.int32)
    alength = np.bincount(a_doc, a_tf[hit], minlength=n)
    # page postings and anchor postings, summed by (term, doc), by term then doc
    term = np.concatenate((c["postings/term"], c["anchor/term"][hit]))
    doc = np.concatenate((c["postings/doc"], a_doc))
    order = np.lexsort((doc, term))
    term, doc = term[order], doc[order]
    first = np.flatnonzero(np.concatenate(([True], (term[1:] != term[:-1])
                                           | (doc[1:] != doc[:-1])))) if len(term) else _NO_INT
    pages, anchors = len(c["postings/term"]), int(hit.sum())

    def summed(page: np.ndarray | None, anchor: np.ndarray | None, dtype: type) -> np.ndarray:
        v = np.concatenate((np.zeros(pages, dtype) if page is None else page,
                            np.zeros(anchors, dtype) if anchor is None else anchor))[order]
        return np.add.reduceat(v, first).astype(dtype) if len(v) else v.astype(dtype)

    postings = Postings(term[first], doc[first], summed(c["postings/tf"], None, np.int32),
                        summed(c["postings/wtf"], None, np.float32),
                        summed(None, a_tf[hit], np.int32))
    return postings, alength


def save(f: h5py.File, c: dict[str, np.ndarray], postings: Postings, alength: np.ndarray,
         weights: dict[str, float]) -> None:
    """Write ``/search`` into the rank file ``f``: its segments' columns ``c``
    (:func:`collect`) and what :func:`credited` made of them."""
    n = len(alength)
    page_doc = c["pages/doc"]
    length, wlength = np.zeros(n, np.int32), np.zeros(n, np.float32)
    length[page_doc], wlength[page_doc] = c["pages/length"], c["pages/wlength"]
    titles = np.full(n, "", dtype=object)
    titles[page_doc] = c["pages/title"]
    write(f, postings, (c["pairs/hash"], c["pairs/doc"]), length, wlength, alength,
          titles.tolist(), weights)
    g = f[GROUP]
    g["anchor/fp"], g["anchor/term"], g["anchor/tf"] = (c["anchor/fp"], c["anchor/term"],
                                                        c["anchor/tf"])


def split(f: h5py.File, g: h5py.File) -> None:
    """Copy the rank file ``f``'s ``/search`` into the segment ``g`` (the inverse of
    :func:`save`, to resume a crawl whose files were joined)."""
    if GROUP not in f:
        return
    s = f[GROUP]
    buffer = SearchBuffer(dict(zip(s.attrs["fields"], s.attrs["weights"].tolist(),
                                   strict=True)))
    term = np.repeat(s["terms"][:], np.diff(s["offsets"][:]))
    doc, tf, wtf = s["docs"][:], s["tf"][:], s["wtf"][:]
    page = (tf > 0) | (wtf > 0)
    order = np.lexsort((term[page], doc[page]))
    for name, column in (("term", term), ("doc", doc), ("tf", tf), ("wtf", wtf)):
        getattr(buffer, name).append(column[page][order])
    length, wlength = s["length"][:], s["wlength"][:]
    titles = s["title"].asstr()[:]
    buffer.pages = [(d, int(length[d]), float(wlength[d]), titles[d])
                    for d in np.flatnonzero((length > 0) | (titles != "")).tolist()]
    pair_doc = s["pairs/docs"][:]
    pair_hash_ = np.repeat(s["pairs/terms"][:], np.diff(s["pairs/offsets"][:]))
    order = np.argsort(pair_doc, kind="stable")
    buffer.pair_hash.append(pair_hash_[order])
    buffer.pair_doc.append(pair_doc[order])
    buffer.anchor_fp.append(s["anchor/fp"][:])
    buffer.anchor_term.append(s["anchor/term"][:])
    buffer.anchor_tf.append(s["anchor/tf"][:])
    buffer.seal(g)
