"""Searching a crawl (``bspcrawl search``): BM25F over title, headings, body and anchor
text, mixed with phrase hits and PageRank after the Compass search engine; ``plain`` is
Lucene's BM25 over raw counts. The formulas and how a query runs are in ``docs/search.md``.

Each rank file is a :class:`Shard`; a :class:`Searcher` scores them with statistics summed
over all shards (under ``mpiexec``, over every rank's), so scores are those of one index of
the whole crawl. A query's work follows the postings of its rarer terms: short lists are
summed whole (:func:`_every`), long ones pruned with MaxScore (:func:`_pruned`).
"""

from __future__ import annotations

import math
import re
from dataclasses import astuple, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import h5py
import numpy as np

from bspcrawl.index import ranking
from bspcrawl.index.duplicates import cluster_of
from bspcrawl.index.history import History
from bspcrawl.index.inspect import open_crawl
from bspcrawl.index.store import rank_path
from bspcrawl.index.terms import pair_hash, term_hash
from bspcrawl.index.terms import words as index_words
from bspcrawl.index.warc import read_body
from bspcrawl.robots.links import LinkCache, parse_html

if TYPE_CHECKING:
    from mpi4py import MPI

K1, B = 1.5, 0.75
"""BM25's saturation and length normalisation (bm25s's defaults)."""
MIX = {"text": 0.35, "hit": 0.45, "pagerank": 0.20}
"""The weights of the score's parts (Compass's)."""
STOP_WORDS = frozenset(
    b"a an and are as at be but by for from has have in is it its of on or that the this "
    b"to was were will with".split())
"""Dropped from a query with ``stop_words`` (the index keeps every word)."""
SNIPPET_CHARS = 200


class SearchError(Exception):
    """A query or crawl that cannot be searched (the message says why)."""


def query_words(query: str, stop_words: bool = False) -> list[bytes]:
    """The words of ``query``, cut as the index cuts page text; ``stop_words`` drops
    :data:`STOP_WORDS`.

    >>> query_words("The Cat's HAT", stop_words=True)
    [b'cat', b's', b'hat']
    """
    found = index_words(query.encode("utf-8", "replace"))
    return [w for w in found if w not in STOP_WORDS] if stop_words else found


@dataclass(slots=True)
class Query:
    """A query's words, its distinct term hashes and its adjacent word pairs' hashes."""

    words: list[bytes]
    terms: np.ndarray
    pairs: np.ndarray

    @classmethod
    def parse(cls, text: str, stop_words: bool = False) -> Query:
        """The query ``text``; :class:`SearchError` if it has no word."""
        words = query_words(text, stop_words)
        if not words:
            raise SearchError(f"the query {text!r} has no word to search for")
        return cls.of_hashes(words, np.array([term_hash(w) for w in words], np.int64))

    @classmethod
    def of_hashes(cls, words: list[bytes], hashes: np.ndarray) -> Query:
        """The query of the term ``hashes`` in order (``words``: their text)."""
        pairs = np.unique(pair_hash(hashes[:-1], hashes[1:])) if len(hashes) > 1 \
            else np.zeros(0, np.int64)
        _, first = np.unique(hashes, return_index=True)
        return cls(words, hashes[np.sort(first)], pairs)


def _span(keys: np.ndarray, offsets: np.ndarray, key: int) -> tuple[int, int]:
    """The posting range of ``key`` in a CSR (empty when absent)."""
    i = _find(keys, key)
    return (int(offsets[i]), int(offsets[i + 1])) if i is not None else (0, 0)


@dataclass(slots=True)
class Totals:
    """Statistics summed over every shard: documents (pages with text or anchor text),
    their summed lengths, and pages."""

    docs: int = 0
    length: float = 0.0
    wlength: float = 0.0
    alength: float = 0.0
    pages: int = 0

    def average(self, name: str) -> float:
        """The mean of a length over the documents (1 for none, so norms stay finite)."""
        total = getattr(self, name)
        return total / self.docs if self.docs and total else 1.0


class Shard:
    """One rank file's ``/search`` index in memory, with its ``/pages`` columns."""

    def __init__(self, path: Path, number: int = 0, first_row: int = 0) -> None:
        self.path, self.number, self.first_row = path, number, first_row
        self.history: History | None = None
        with h5py.File(path, "r") as f:
            g = f[ranking.GROUP]
            (self.terms, self.offsets, self.docs, self.tf, self.wtf, self.atf, self.length,
             self.wlength, self.alength) = (g[name][:] for name in (
                 "terms", "offsets", "docs", "tf", "wtf", "atf", "length", "wlength", "alength"))
            self.pair_terms, self.pair_offsets = g["pairs/terms"][:], g["pairs/offsets"][:]
            self.pair_docs = g["pairs/docs"][:]
            self.weights = dict(zip(g.attrs["fields"], g.attrs["weights"].tolist(),
                                    strict=True))
            self.title_list: list[str] | None = None
            self.fetch_time = f["pages/fetch_time"][:]
            self.url_fp = f["pages/url_fp"][:]
            self.pagerank = f["rank/pagerank"][:] if "rank/pagerank" in f else None
        self.parts: dict[object, np.ndarray] = {}  # plain, ("highest", plain) -> parts
        self.scratch = np.zeros(len(self.length), np.float32)

    def totals(self) -> Totals:
        indexed = (self.length > 0) | (self.alength > 0)
        return Totals(int(indexed.sum()), float(self.length.sum(dtype=np.float64)),
                      float(self.wlength.sum(dtype=np.float64)),
                      float(self.alength.sum(dtype=np.float64)), len(self.length))

    def df(self, terms: np.ndarray) -> np.ndarray:
        """The number of this shard's documents holding each term."""
        return np.array([b - a for a, b in (_span(self.terms, self.offsets, int(t))
                                            for t in terms)], np.int64)

    def term_parts(self, totals: Totals, plain: bool, k1: float, b: float) -> np.ndarray:
        """``t~ / (k1 + t~)`` of every posting, computed once per mode."""
        if plain not in self.parts:
            doc = self.docs
            if plain:  # as bm25s: the float64 quotient of float32 counts, rounded once
                norm = k1 * ((1 - b) + b * self.length / totals.average("length"))
                tf = self.tf.astype(np.float32)
                self.parts[plain] = (tf / (norm[doc] + tf)).astype(np.float32)
            else:
                page = 1 / ((1 - b) + b * self.wlength / totals.average("wlength"))
                anchor = self.weights["anchor"] / self.weights["body"] / (
                    (1 - b) + b * self.alength / totals.average("alength"))
                t = self.wtf * page[doc] + self.atf * anchor[doc]
                self.parts[plain] = (t / (k1 + t)).astype(np.float32)
        return self.parts[plain]

    def highest_parts(self, plain: bool) -> np.ndarray:
        """The highest term part of each term's postings (after :meth:`term_parts`)."""
        key = ("highest", plain)
        if key not in self.parts:
            parts = self.parts[plain]
            self.parts[key] = np.maximum.reduceat(parts, self.offsets[:-1]) if len(parts) \
                else np.zeros(0, np.float32)
        return self.parts[key]

    def pagerank_part(self, totals: Totals) -> np.ndarray | None:
        """``ln(1 + n PR) / ln(1 + n)`` per page, at most 1; None without ``/rank``."""
        if self.pagerank is None:
            return None
        n = max(totals.pages, 1)
        return np.minimum(np.log1p(n * self.pagerank) / math.log1p(n), 1.0)

    def title(self, doc: int) -> str:
        if self.title_list is None:
            with h5py.File(self.path, "r") as f:
                self.title_list = f[ranking.GROUP]["title"].asstr()[:].tolist()
        return self.title_list[doc]

    def url(self, doc: int) -> str:
        with h5py.File(self.path, "r") as f:
            return f["pages/url"].asstr()[doc]


@dataclass(slots=True)
class Hit:
    """One scored doc: ``shard`` (index in the searcher's shards), ``doc``, ``score``."""

    shard: int
    doc: int
    score: float


def _best(docs: np.ndarray, scores: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` best of distinct ``docs`` by score, then doc id, so ties do not depend on
    the postings' order."""
    if len(scores) > k:
        keep = np.flatnonzero(scores >= np.partition(scores, -k)[-k])
        docs, scores = docs[keep], scores[keep]
    order = np.lexsort((docs, -scores))[:k]
    return docs[order], scores[order]


ENUMERATED = 1 << 16
"""Postings a query enumerates before it tries to prune (see :func:`_pruned`)."""


@dataclass(slots=True)
class _List:
    """One query term's (or pair's) postings in a shard: docs, term parts (None: 1 each),
    weight, and the most any doc can get from it."""

    docs: np.ndarray
    parts: np.ndarray | None
    weight: np.float32
    bound: float

    def values(self, at: np.ndarray | slice = slice(None)) -> np.ndarray:
        """Weight x term part of the postings ``at`` (float32, as bm25s rounds)."""
        if self.parts is None:
            return np.full(len(self.docs[at]), self.weight, np.float32)
        return self.parts[at] * self.weight

    def lookup(self, docs: np.ndarray) -> np.ndarray:
        """Weight x term part for each of ``docs`` (increasing); 0 where absent."""
        at = np.minimum(np.searchsorted(self.docs, docs), len(self.docs) - 1)
        return np.where(self.docs[at] == docs, self.values(at), np.float32(0))


def _every(scratch: np.ndarray, lists: list[_List], pagerank: np.ndarray | None,
           k: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` best docs by every posting of ``lists``, summed into ``scratch`` (zeros,
    one per doc, left zero) in query order, as bm25s sums."""
    for x in lists:
        np.add.at(scratch, x.docs, x.values())
    if 4 * sum(len(x.docs) for x in lists) < len(scratch):
        docs = _union([x.docs for x in lists])
        scores = scratch[docs]
        scratch[docs] = 0
        if pagerank is not None:
            scores = scores + pagerank[docs]
        return _best(docs, scores, k)
    if pagerank is not None:
        np.add(scratch, pagerank, out=scratch, where=scratch > 0)
    kth = np.partition(scratch, -k)[-k] if k < len(scratch) else 0
    docs = np.flatnonzero(scratch >= kth) if kth > 0 else np.flatnonzero(scratch)
    scores = scratch[docs]
    scratch.fill(0)
    return _best(docs, scores, k)


def _pruned(lists: list[_List], pagerank: np.ndarray | None, k: int
            ) -> tuple[np.ndarray, np.ndarray] | None:
    """The ``k`` best docs by MaxScore (Turtle and Flood, "Query evaluation: strategies and
    optimizations"): the docs of the shortest lists are the candidates; a doc in none of
    them scores at most ``bound``, the other lists' bounds summed, so only the candidates
    that can reach the k-th best partial score are scored exactly. None when that cannot
    prove the best (then every posting is summed)."""
    order = sorted(range(len(lists)), key=lambda i: len(lists[i].docs))
    enumerated, count = [], 0
    for i in order:
        if count + len(lists[i].docs) > ENUMERATED:
            break
        enumerated.append(i)
        count += len(lists[i].docs)
    rest = [x for i, x in enumerate(lists) if i not in enumerated]
    if not rest or not enumerated:
        return None
    bound = sum(x.bound for x in rest) + (float(pagerank.max()) if pagerank is not None
                                          else 0.0)
    docs = _union([lists[i].docs for i in enumerated])
    partial = sum(lists[i].lookup(docs) for i in enumerated)
    if len(docs) < k:
        return None
    if pagerank is not None:
        partial = partial + pagerank[docs]
    floor = np.partition(partial, -k)[-k]
    docs = docs[partial >= floor - bound * (1 + 1e-6) - 1e-6]  # (float32 rounding)
    scores = np.zeros(len(docs), np.float32)
    for x in lists:  # in query order, as _every sums
        scores += x.lookup(docs)
    if pagerank is not None:
        scores = scores + pagerank[docs]
    kth = np.partition(scores, -k)[-k]
    return _best(docs, scores, k) if kth > bound else None


def _union(arrays: list[np.ndarray]) -> np.ndarray:
    """The sorted distinct values of sorted ``arrays`` (a stable sort merges their runs,
    cheaper than ``np.unique``'s hashing)."""
    merged = np.sort(np.concatenate(arrays), kind="stable")
    return merged[np.concatenate(([True], merged[1:] != merged[:-1]))]


def _find(keys: np.ndarray, key: int) -> int | None:
    """The index of ``key`` in the sorted ``keys``, or None."""
    i = int(np.searchsorted(keys, key))
    return i if i < len(keys) and keys[i] == key else None


class Searcher:
    """Scores queries over ``shards`` with statistics of every rank's (``comm``);
    ``plain``: Lucene's BM25 over raw counts only."""

    def __init__(self, shards: list[Shard], plain: bool = False, k1: float = K1,
                 b: float = B, mix: dict[str, float] | None = None,
                 comm: MPI.Comm | None = None) -> None:
        self.shards, self.plain, self.k1, self.b = shards, plain, k1, b
        self.mix = dict(MIX if mix is None else mix)
        self.comm = comm
        mine = [s.totals() for s in shards]
        every = [t for part in comm.allgather(mine) for t in part] if comm else mine
        self.totals = totals = Totals(*map(sum, zip(*map(astuple, every), strict=True)))
        self.pageranks = [s.pagerank_part(totals) for s in shards]
        self.pagerank_scores = [None if pr is None or plain else
                                (self.mix["pagerank"] * pr).astype(np.float32)
                                for pr in self.pageranks]  # weighted, once
        self.clusters: np.ndarray | None = None  # each crawl.h5 row's duplicate cluster

    def idf(self, query: Query) -> np.ndarray:
        """idf of each query term, over every shard (float32, as bm25s)."""
        df = sum((s.df(query.terms) for s in self.shards), np.zeros(len(query.terms), np.int64))
        if self.comm is not None:
            df = self.comm.allreduce(df)
        n = self.totals.docs
        return np.log(1 + (n - df + 0.5) / (df + 0.5)).astype(np.float32) * (df > 0)

    def top(self, query: Query, k: int = 10) -> list[Hit]:
        """The ``k`` best hits of this process's shards, best first."""
        idf = self.idf(query)
        hits: list[Hit] = []
        for number, shard in enumerate(self.shards):
            docs, scores = self._score(shard, self.pagerank_scores[number], query, idf, k)
            hits += [Hit(number, d, s) for d, s in zip(docs.tolist(), scores.tolist(),
                                                       strict=True)]
        hits.sort(key=lambda h: (-h.score, h.shard, h.doc))
        return hits[:k]

    def _score(self, shard: Shard, pagerank: np.ndarray | None, query: Query,
               idf: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """The ``k`` best docs of one shard and their scores."""
        parts = shard.term_parts(self.totals, self.plain, self.k1, self.b)
        highest = shard.highest_parts(self.plain)
        scale = idf if self.plain else idf * np.float32(
            self.mix["text"] / max(float(idf.sum()), 1e-30))
        lists: list[_List] = []
        for t, w in zip(query.terms.tolist(), scale.tolist(), strict=True):
            i = _find(shard.terms, t)
            if i is not None:
                a, e = shard.offsets[i], shard.offsets[i + 1]
                lists.append(_List(shard.docs[a:e], parts[a:e], np.float32(w),
                                   w * float(highest[i])))
        if not self.plain and len(query.pairs):
            w = np.float32(self.mix["hit"] / len(query.pairs))
            for p in query.pairs.tolist():
                i = _find(shard.pair_terms, p)
                if i is not None:
                    a, e = shard.pair_offsets[i], shard.pair_offsets[i + 1]
                    lists.append(_List(shard.pair_docs[a:e], None, w, float(w)))
        if not lists:
            return np.zeros(0, np.int64), np.zeros(0, np.float32)
        if len(lists) == 1 and pagerank is None:
            only = lists[0]  # the best parts are the best scores
            values = only.parts if only.parts is not None else np.ones(len(only.docs),
                                                                        np.float32)
            docs, best = _best(only.docs, values, k)
            return docs, best * only.weight
        found = _pruned(lists, pagerank, k) if sum(len(x.docs) for x in lists) > ENUMERATED \
            else None
        return found if found is not None else _every(shard.scratch, lists, pagerank, k)

    def explain(self, query: Query, hit: Hit) -> dict[str, object]:
        """Each part of ``hit``'s score: per term its counts, idf and BM25F share; the
        phrase pairs found; PageRank; the weights."""
        shard = self.shards[hit.shard]
        idf = self.idf(query)
        parts = shard.term_parts(self.totals, self.plain, self.k1, self.b)
        terms, bm25 = [], 0.0
        for word, t, i in zip(dict.fromkeys(query.words), query.terms.tolist(), idf.tolist(),
                              strict=True):
            at = _posting(shard.terms, shard.offsets, shard.docs, t, hit.doc)
            found = at is not None
            part = float(parts[at]) if found else 0.0
            terms.append({"term": word.decode("utf-8", "replace"), "idf": round(i, 6),
                          "tf": int(shard.tf[at]) if found else 0,
                          "weighted_tf": round(float(shard.wtf[at]), 4) if found else 0.0,
                          "anchor_tf": int(shard.atf[at]) if found else 0,
                          "bm25": round(i * part, 6)})
            bm25 += i * part
        out: dict[str, object] = {"terms": terms, "bm25": round(bm25, 6)}
        if self.plain:
            return out
        pairs = [p for p in query.pairs.tolist()
                 if _posting(shard.pair_terms, shard.pair_offsets, shard.pair_docs, p,
                             hit.doc) is not None]
        text = bm25 / max(float(idf.sum()), 1e-30)
        hits = len(pairs) / len(query.pairs) if len(query.pairs) else 0.0
        pr = self.pageranks[hit.shard]
        out.update(text=round(text, 6), hit=round(hits, 6),
                   phrase_pairs=f"{len(pairs)} of {len(query.pairs)}",
                   pagerank=round(float(pr[hit.doc]), 6) if pr is not None else 0.0,
                   weights=self.mix)
        if pr is None:
            out["pagerank_note"] = "not computed (run 'bspcrawl rank DIR'): counts 0"
        else:
            out["pagerank_raw"] = float(shard.pagerank[hit.doc])
        return out


def _posting(keys: np.ndarray, offsets: np.ndarray, docs: np.ndarray, key: int, doc: int
             ) -> int | None:
    """The index of ``doc``'s posting of ``key`` in a CSR, or None."""
    a, e = _span(keys, offsets, key)
    at = a + int(np.searchsorted(docs[a:e], doc))
    return at if at < e and docs[at] == doc else None


@dataclass(slots=True)
class Result:
    """One search result, as ``bspcrawl search`` prints it."""

    url: str
    title: str
    snippet: str
    score: float
    fetch_time: float
    duplicates: int = 0  # exact and near duplicates folded into this result
    explain: dict[str, object] | None = None


def open_shards(out: Path, rank: int = 0, size: int = 1) -> list[Shard]:
    """The shards process ``rank`` of ``size`` searches: files ``rank``, ``rank + size``, ..."""
    with open_crawl(out) as f:
        ranks = int(f.attrs["ranks"])
        counts = np.bincount(f["pages/rank"][:], minlength=ranks)
    first = np.cumsum(counts) - counts
    return [Shard(rank_path(out, r), r, int(first[r])) for r in range(rank, ranks, size)]


def search(searcher: Searcher, out: Path, text: str, k: int = 10, explain: bool = False,
           stop_words: bool = False) -> list[Result]:
    """The ``k`` best results of ``text`` over the whole crawl, exact and near duplicates
    folded into the best of them; under MPI every rank calls it and gets the same list."""
    query = Query.parse(text, stop_words)
    comm = searcher.comm
    if searcher.clusters is None:
        searcher.clusters = cluster_of(out)
    want = 2 * k + 8
    while True:
        local = [(h.score, s.number, h.doc, int(searcher.clusters[s.first_row + h.doc]))
                 for h in searcher.top(query, want) for s in [searcher.shards[h.shard]]]
        gathered = comm.allgather(local) if comm else [local]
        merged = sorted((c for part in gathered for c in part), key=lambda c: (-c[0], c[1],
                                                                              c[2]))
        kept: dict[int, list] = {}
        for score, number, doc, key in merged:
            if key in kept:
                kept[key][3] += 1
            elif len(kept) < k:
                kept[key] = [score, number, doc, 0]
        if len(kept) >= k or all(len(part) < want for part in gathered):
            break
        want *= 4
    mine = {s.number: i for i, s in enumerate(searcher.shards)}
    results = {(number, doc): _result(searcher, out, query, Hit(mine[number], doc, score),
                                      folded, explain)
               for score, number, doc, folded in kept.values() if number in mine}
    if comm:
        results = {key: r for part in comm.allgather(results) for key, r in part.items()}
    return [results[(number, doc)] for _, number, doc, _ in kept.values()]


def _result(searcher: Searcher, out: Path, query: Query, hit: Hit, folded: int,
            explain: bool) -> Result:
    shard = searcher.shards[hit.shard]
    url = shard.url(hit.doc)
    return Result(url, shard.title(hit.doc), snippet(out, shard, hit.doc, url, query.words),
                  round(hit.score, 6), float(shard.fetch_time[hit.doc]), folded,
                  searcher.explain(query, hit) if explain else None)


def snippet(out: Path, shard: Shard, doc: int, url: str, words: list[bytes]) -> str:
    """About :data:`SNIPPET_CHARS` characters of the page's stored text around the first
    query word in it ('' when no body was kept)."""
    with h5py.File(shard.path, "r") as f:
        if shard.history is None:
            shard.history = History.load(f["history"])
        version = shard.history.latest(int(shard.url_fp[doc]), with_body=True)
        if version is None:
            return ""
        path = out / f["warc/files"].asstr()[version.warc_file]
    try:
        body = read_body(path, version.warc_offset)
    except (OSError, ValueError):
        return ""
    text = parse_html(body, url, LinkCache()).text.decode("utf-8", "replace")
    text = text.partition("\n")[2] or text  # the body text, after the title
    found = [m.start() for w in words for m in [re.search(
        rf"(?<![^\W_]){re.escape(w.decode('utf-8', 'replace'))}(?![^\W_])", text, re.I)]
        if m]
    start = max(0, min(found, default=0) - SNIPPET_CHARS // 4)
    if start:  # from the start of a word
        start = max(text.find(" ", start, min(found) if found else start + 20) + 1, start)
    piece = " ".join(text[start:start + SNIPPET_CHARS].split())
    return ("..." if start else "") + piece + ("..." if start + SNIPPET_CHARS < len(text)
                                               else "")
