"""Searching: BM25 and BM25F scores against a hand computation on a tiny corpus, phrase
hits, anchor text credited at the join, duplicates folded, the CLI's output and errors."""

import collections
import json
import math
import re
import subprocess
import sys

import numpy as np
import pytest

from bspcrawl.index import ranking
from bspcrawl.index.output import join
from bspcrawl.index.store import RankStore
from bspcrawl.index.terms import count_terms, page_pairs, term_hash
from bspcrawl.messages import FetchJob, FetchResult
from bspcrawl.search import K1, MIX, B, Query, Searcher, open_shards, query_words, search
from bspcrawl.settings import Settings

PAGES = [  # url, title, body text
    ("http://a.test/1", "apple pie", "apple apple banana"),
    ("http://a.test/2", "banana split", "cherry banana"),
    ("http://a.test/3", "cherry", "date"),
    ("http://a.test/4", "fig", "grape apple pie fig"),
]


def build(out, pages=PAGES, anchors=(), bodies=None):
    """A one-rank crawl of ``pages`` written through the store, with ``anchors`` ((target
    url, text)) received; ``bodies``: the content fingerprint of each page."""
    store = RankStore(out, 0, 1, Settings().to_dict(), flush_pages=2)
    for i, (url, title, body) in enumerate(pages):
        job = FetchJob(seq=i, index=0, url=url, host="a.test")
        result = FetchResult(job, status=200, content_type="text/html", started=1e9 + i)
        text = f"{title}\n{body}".encode()
        terms = count_terms(text)
        heading = count_terms(title.encode())
        store.commit(result, i + 100, "", [], terms, bodies[i] if bodies else i + 1, None,
                     title, {"title": (heading.hashes, heading.tf)}, page_pairs(terms))
        if i == 1:
            store.seal(1)  # the anchors and pages of two segments are joined
    fps = {url: i + 100 for i, (url, _, _) in enumerate(pages)}
    for url, text in anchors:
        counts = count_terms(text.encode())
        store.search.add_anchors(np.full(len(counts), fps.get(url, 7)), counts.hashes,
                                 counts.tf)
    store.close(2)
    join(out, 1, {"supersteps": 2, "urls_seen": len(pages), "wall_s": 1.0,
                  "stopped": "done", "seeds": pages[0][0]})
    return out


def idf(df, n):
    return math.log(1 + (n - df + 0.5) / (df + 0.5))


def words(text):
    return text.split()


def test_query_words_cut_as_the_index_does():
    text = "Ünïcode café, the CAT-flap x" + "z" * 70 + " 42"
    assert sorted(term_hash(w) for w in set(query_words(text))) == \
        count_terms(text.encode()).hashes.tolist()
    assert query_words("The cat of the hat", stop_words=True) == [b"cat", b"hat"]


def test_plain_bm25_equals_a_hand_computation(tmp_path):
    searcher = Searcher(open_shards(build(tmp_path)), plain=True)
    texts = [words(f"{t} {b}") for _, t, b in PAGES]
    avg = sum(map(len, texts)) / len(texts)

    def expect(doc, query):
        total = 0.0
        for q in query:
            tf = texts[doc].count(q)
            df = sum(q in t for t in texts)
            total += idf(df, len(texts)) * tf / (tf + K1 * (1 - B + B * len(texts[doc]) / avg))
        return total

    hits = searcher.top(Query.parse("apple banana"), 10)
    assert [h.doc for h in hits] == [0, 1, 3]
    for h in hits:
        assert h.score == pytest.approx(expect(h.doc, ["apple", "banana"]), rel=1e-6)


def test_bm25f_weights_the_title_and_adds_phrase_hits(tmp_path):
    searcher = Searcher(open_shards(build(tmp_path)))
    w = ranking.COMPASS_WEIGHTS["title"] / ranking.COMPASS_WEIGHTS["body"]
    wtf = [{q: words(b).count(q) + w * words(t).count(q) for q in ("apple", "pie", "fig")}
           for _, t, b in PAGES]
    wlen = [len(words(b)) + w * len(words(t)) for _, t, b in PAGES]
    avg = sum(wlen) / len(wlen)

    def expect(doc, hit, query=("apple", "pie")):
        idfs = {q: idf(sum(wtf[d][q] > 0 for d in range(4)), 4) for q in query}
        bm25 = 0.0
        for q, i in idfs.items():
            t = wtf[doc][q] / (1 - B + B * wlen[doc] / avg)
            bm25 += i * t / (K1 + t)
        return MIX["text"] * bm25 / sum(idfs.values()) + MIX["hit"] * hit

    hits = searcher.top(Query.parse("apple pie"), 10)
    assert [h.doc for h in hits] == [0, 3]  # both hold "apple pie"; doc 0 in its title
    assert hits[0].score == pytest.approx(expect(0, 1.0), rel=1e-5)
    assert hits[1].score == pytest.approx(expect(3, 1.0), rel=1e-5)
    explained = searcher.explain(Query.parse("apple pie"), hits[0])
    assert explained["hit"] == 1.0 and explained["phrase_pairs"] == "1 of 1"
    assert [t["tf"] for t in explained["terms"]] == [3, 1]
    assert "not computed" in explained["pagerank_note"]
    # "apple fig" is no phrase of any page: text only
    apart = searcher.top(Query.parse("apple fig"), 10)
    assert apart[0].doc == 3
    assert apart[0].score == pytest.approx(expect(3, 0.0, ("apple", "fig")), rel=1e-5)


def test_anchor_text_is_credited_to_the_target_page(tmp_path):
    anchors = [("http://a.test/3", "zucchini recipes"), ("http://a.test/9", "zucchini")]
    searcher = Searcher(open_shards(build(tmp_path, anchors=anchors)))
    hits = searcher.top(Query.parse("zucchini"), 10)
    assert [h.doc for h in hits] == [2]  # the page not fetched gets nothing
    assert searcher.explain(Query.parse("zucchini"), hits[0])["terms"][0]["anchor_tf"] == 1
    assert searcher.totals.alength == 2


def test_duplicates_fold_into_the_best_result(tmp_path):
    pages = [(f"http://a.test/{i}", "same", "kiwi kiwi") for i in range(3)]
    pages.append(("http://a.test/x", "other", "kiwi"))
    out = build(tmp_path, pages, bodies=[5, 5, 5, 6])
    results = search(Searcher(open_shards(out)), out, "kiwi", k=10)
    assert [(r.url, r.duplicates) for r in results] == [("http://a.test/0", 2),
                                                       ("http://a.test/x", 0)]


def run(*args):
    return subprocess.run([sys.executable, "-m", "bspcrawl", "search", *map(str, args)],
                          capture_output=True, text=True, timeout=60)


def test_cli_json_shape_and_errors(tmp_path):
    out = build(tmp_path / "crawl")
    res = run(out, "apple pie", "--json", "--explain", "--top", "1")
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    assert doc["query"] == "apple pie" and len(doc["results"]) == 1
    first = doc["results"][0]
    assert set(first) == {"url", "title", "snippet", "score", "fetch_time", "duplicates",
                          "explain"}
    assert first["url"] == "http://a.test/1" and first["title"] == "apple pie"
    assert first["fetch_time"] == 1e9
    text = run(out, "cherry")
    assert text.returncode == 0 and "http://a.test/3" in text.stdout.splitlines()[1]
    for args in ((tmp_path / "nowhere", "x"), (out, " ,; "), (out, "x", "--top", "0")):
        bad = run(*args)
        assert bad.returncode == 2 and bad.stdout == ""
        assert bad.stderr.startswith("bspcrawl: error: ") and len(bad.stderr.splitlines()) == 1


def test_pagerank_part_once_the_crawl_is_ranked(tmp_path):
    import h5py

    out = build(tmp_path)
    with h5py.File(out / "rank-0000.h5", "r+") as f:
        f["rank/pagerank"] = np.array([0.0, 0.0, 0.0, 1.0])
    searcher = Searcher(open_shards(out))
    hits = searcher.top(Query.parse("apple"), 10)
    assert [h.doc for h in hits] == [3, 0]  # PageRank lifts page 4 over the better text
    explained = searcher.explain(Query.parse("apple"), hits[0])
    assert explained["pagerank"] == 1.0  # ln(1 + 4 x 1) / ln(1 + 4)
    assert explained["pagerank_raw"] == 1.0 and "pagerank_note" not in explained
    assert hits[0].score == pytest.approx(MIX["text"] * explained["text"]
                                          + MIX["pagerank"] * explained["pagerank"], rel=1e-5)


def test_a_crawl_of_an_older_bspcrawl_is_one_error_line(tmp_path):
    import h5py

    out = build(tmp_path / "crawl")
    with h5py.File(out / "crawl.h5", "r+") as f:
        f.attrs["layout"] = 1
    bad = run(out, "apple")
    assert bad.returncode == 2 and "older bspcrawl" in bad.stderr
    assert len(bad.stderr.splitlines()) == 1


@pytest.mark.parametrize("enumerated", [50, 1 << 16])
def test_pruned_and_exhaustive_top_10_equal_a_brute_force_bm25(tmp_path, monkeypatch,
                                                                 enumerated):
    import bspcrawl.search as engine

    monkeypatch.setattr(engine, "ENUMERATED", enumerated)  # 50: MaxScore prunes often
    rng = np.random.default_rng(5)
    vocab = [f"w{i}" for i in range(300)]
    p = 1 / np.arange(1, 301)
    texts = [list(rng.choice(vocab, rng.integers(5, 40), p=p / p.sum())) for _ in range(600)]
    pages = [(f"http://a.test/{i}", "", " ".join(t)) for i, t in enumerate(texts)]
    searcher = Searcher(open_shards(build(tmp_path, pages)), plain=True)
    texts = [["\n"] + t for t in texts]  # the title line is empty
    lengths = np.array([len(t) - 1 for t in texts])
    avg = lengths.mean()
    for size in [1, 2, 3, 4] * 15:
        query = list(dict.fromkeys(rng.choice(vocab, size, p=p / p.sum()).tolist()))
        scores = np.zeros(len(texts))
        for q in query:
            tf = np.array([t.count(q) for t in texts])
            scores += idf((tf > 0).sum(), len(texts)) * tf / (
                tf + K1 * (1 - B + B * lengths / avg))
        hits = searcher.top(Query.parse(" ".join(query)), 10)
        expect = sorted(np.flatnonzero(scores), key=lambda d: (-scores[d], d))[:10]
        assert [h.score for h in hits] == pytest.approx(scores[expect].tolist(), rel=1e-5)
        assert [scores[h.doc] for h in hits] == pytest.approx([h.score for h in hits], rel=1e-5)


@pytest.fixture(scope="module")
def testweb_crawl(tmp_path_factory):
    """A crawl of 300 pages of the local web (P = 1), with the title of each page as
    served (read from its archived body, not from the index)."""
    from bspcrawl.index.inspect import body, urls, versions
    from tests.crawling import crawl, serve

    out = tmp_path_factory.mktemp("web") / "crawl"
    with serve(pages=300, hosts=6) as web:
        done = crawl(1, web.seeds(), out)
        assert done.returncode == 0, done.stderr
    titles = {}
    for url, status in urls(out):
        if status == 200:
            html = body(*versions(out, url)[-1]).decode("utf-8", "replace")
            found = re.search(r"<title>(.*?)</title>", html, re.S)
            if found:
                titles[url] = found.group(1)
    return out, titles


@pytest.mark.slow
def test_a_crawled_page_is_found_first_by_its_title(testweb_crawl):
    """Known-item search: the testweb's titles are phrases of its shared text, of a small
    vocabulary, so some titles hold only words that nearly every page has many times
    (idf ~0.002): those may lose to a page holding the same words more often. All but
    a few pages of a unique title must come first, and every one in the top 3 but those
    of such words only."""
    out, titles = testweb_crawl
    searcher = Searcher(open_shards(out))
    counts = collections.Counter(titles.values())
    unique = [(u, t) for u, t in titles.items() if counts[t] == 1]
    assert len(unique) > 200
    ranks = {}
    for url, title in unique:
        results = search(searcher, out, title, k=3)
        found = [r.url for r in results]
        ranks[title] = found.index(url) + 1 if url in found else 0
        if ranks[title] == 1:
            assert results[0].title == title and results[0].snippet
        elif float(searcher.idf(Query.parse(title)).max()) > 0.01:
            assert ranks[title] in (2, 3), title
    assert sum(r == 1 for r in ranks.values()) >= 0.9 * len(unique), ranks


@pytest.mark.slow
def test_cli_search_of_a_crawl(testweb_crawl):
    out, titles = testweb_crawl
    title = next(iter(titles.values()))
    res = run(out, title, "--json", "--top", "3")
    got = json.loads(res.stdout)["results"]
    expect = search(Searcher(open_shards(out)), out, title, k=3)
    assert [(r["url"], r["title"], r["score"]) for r in got] == \
        [(r.url, r.title, r.score) for r in expect]
    assert all(r["fetch_time"] > 1e9 and r["snippet"] for r in got)
    text = run(out, title, "--explain")
    assert "weights" in text.stdout and "pagerank_note" in text.stdout


def test_the_search_index_survives_a_split_for_resume(tmp_path):
    import h5py

    from bspcrawl.index.store import split_rank_file

    anchors = [("http://a.test/3", "zucchini recipes"), ("http://a.test/9", "later page")]
    out = build(tmp_path, anchors=anchors)

    def arrays():
        with h5py.File(out / "rank-0000.h5", "r") as f:
            return {name: f["search"][name][()] for name in (
                "terms", "offsets", "docs", "tf", "wtf", "atf", "length", "wlength", "alength",
                "title", "pairs/terms", "pairs/offsets", "pairs/docs", "anchor/fp")}

    before = arrays()
    split_rank_file(out, 0, 5)  # what resuming a stopped crawl does
    RankStore(out, 0, 1, Settings().to_dict(), flush_pages=2, resume_at=5).close(6)
    after = arrays()
    assert before.keys() == after.keys()
    for name in before:
        assert np.array_equal(before[name], after[name]), name


def test_pruning_gives_the_exhaustive_top_10_with_every_part(tmp_path, monkeypatch):
    """BM25F, phrase hits and PageRank: MaxScore pruning (few postings enumerated) gives
    the same top 10 as summing every posting."""
    import h5py

    import bspcrawl.search as engine

    rng = np.random.default_rng(9)
    vocab = [f"w{i}" for i in range(200)]
    p = 1 / np.arange(1, 201)
    p /= p.sum()
    pages = [(f"http://a.test/{i}", " ".join(rng.choice(vocab, 3, p=p)),
              " ".join(rng.choice(vocab, rng.integers(5, 60), p=p))) for i in range(500)]
    out = build(tmp_path, pages)
    with h5py.File(out / "rank-0000.h5", "r+") as f:
        f["rank/pagerank"] = rng.dirichlet(np.ones(500))
    searcher = Searcher(open_shards(out))
    pruned_ok = []
    real = engine._pruned
    monkeypatch.setattr(engine, "_pruned", lambda *a: pruned_ok.append(real(*a)) or
                        pruned_ok[-1])
    for size in [2, 3, 4] * 20:
        query = Query.parse(" ".join(rng.choice(vocab, size, p=p)))
        monkeypatch.setattr(engine, "ENUMERATED", 40)
        pruned = [(h.doc, h.score) for h in searcher.top(query, 10)]
        monkeypatch.setattr(engine, "ENUMERATED", 0)
        every = [(h.doc, h.score) for h in searcher.top(query, 10)]
        assert [d for d, _ in pruned] == [d for d, _ in every]
        assert [s for _, s in pruned] == pytest.approx([s for _, s in every], rel=1e-5)
    assert sum(x is not None for x in pruned_ok) >= 10  # the pruned path answered often
