"""Pages analysed by the worker pool (``--parse-processes``) give what the scheduler's
thread gives, in any order of commits, and a crawl's index is the same when a worker
dies."""

from __future__ import annotations

import multiprocessing
import os
import random
import re
import signal
from concurrent import futures

import numpy as np
import pytest

from bspcrawl.analysis import AUTO, Analysis, LinkKeys, Pool, analyse, workers_for
from bspcrawl.counters import Stats
from bspcrawl.messages import FetchJob, FetchResult
from bspcrawl.robots.links import LinkCache
from bspcrawl.settings import Settings
from bspcrawl.testweb.hostile import HostileConfig, HostileWeb
from tests.crawling import serve
from tests.sites import crawl_here


def page(i: int, rng: random.Random) -> tuple[bytes, str, str | None, bool]:
    """Page ``i``: (body, URL, charset, whether to index): links, headings, a title, now
    and then a noindex, a Latin-1 charset, a page without words, a 3 MB page; a link with
    a tracking parameter (its seen-set key has it cut)."""
    words = " ".join(rng.choice(["alpha", "beta", "gamma", "café", "delta"])
                     for _ in range(rng.randrange(0, 400)))
    links = "".join(f'<a href="p{rng.randrange(100)}.html">link {j}</a>'
                    for j in range(rng.randrange(0, 50)))
    links += f'<a href="p{i}.html?utm_source=feed&amp;id={i % 4}">a tracked link</a>'
    meta = '<meta name="robots" content="noindex">' if i % 7 == 3 else ""
    html = (f"<html><head><title>Page {i}</title>{meta}</head><body><h1>Head {i}</h1>"
            f"<h3>{words[:40]}</h3><p>{words}</p>{links}</body></html>")
    if i % 11 == 5:
        html += "<p>" + "many words here " * 200_000 + "</p>"  # 3.2 MB
    charset = "iso-8859-1" if i % 5 == 2 else None
    body = html.encode(charset or "utf-8", "replace")
    return body, f"http://site{i % 3}.test/dir/page{i}.html", charset, i % 13 != 4


def same(a: Analysis, b: Analysis) -> None:
    """Assert two analyses are equal (the arrays by value)."""
    assert a.page == b.page and a.simhash == b.simhash
    for name in ("hashes", "tf"):
        assert np.array_equal(getattr(a.terms, name), getattr(b.terms, name)), name
    assert np.array_equal(a.pairs, b.pairs) and np.array_equal(a.keys, b.keys)
    assert a.keys.tolist() == LinkKeys(STRIP)(list(a.page.links)).tolist()
    assert a.terms.as_dict() == b.terms.as_dict()
    assert (a.parts is None) == (b.parts is None)
    for x, y in zip(a.parts or (), b.parts or (), strict=True):
        assert np.array_equal(x, y)


def result(i: int, body: bytes, url: str) -> FetchResult:
    return FetchResult(FetchJob(i, 0, url, "h:80"), status=200, body=body,
                       content_type="text/html")


PAGES = [page(i, random.Random(i)) for i in range(60)]
STRIP = Settings().url_strip_params


def started(workers: int, stats: Stats) -> Pool:
    """A pool whose workers have all started (a crawl does not wait for them: its first
    pages are analysed by the rank meanwhile; the tests wait, to know where pages go)."""
    pool = Pool(workers, STRIP, stats)
    futures.wait(pool.starting)
    return pool


def test_the_pool_gives_the_local_analysis_in_any_order():
    stats = Stats()
    pool = started(2, stats)
    try:
        tasks = [pool.submit(PAGES[i:i + 3]) for i in range(0, len(PAGES), 3)]  # ~18 MB
        order = list(range(len(PAGES)))
        random.Random(7).shuffle(order)
        cache = LinkCache()
        for i in order:
            local = analyse(*PAGES[i], cache, LinkKeys(STRIP))
            got = pool.result(tasks[i // 3], i % 3, lambda: pytest.fail("analysed here"))
            same(got, local)
        assert stats["analysis/ahead"] == len(PAGES)
    finally:
        pool.close()


def test_an_analysis_that_raises_or_a_dead_worker_leaves_the_page_to_the_caller():
    stats = Stats()
    pool = started(1, stats)
    try:
        _, url, charset, index = PAGES[0]
        # a page that raises in the worker (not bytes) leaves the task's others alone
        task = pool.submit([(5, url, charset, index), PAGES[1]])
        assert pool.result(task, 0, lambda: "here") == "here"
        same(pool.result(task, 1, lambda: pytest.fail("analysed here")),
             analyse(*PAGES[1], LinkCache(), LinkKeys(STRIP)))
        (worker,) = multiprocessing.active_children()
        os.kill(worker.pid, signal.SIGKILL)
        worker.join()
        task = pool.submit(PAGES[:3])
        got = [pool.result(task, i, lambda: "here") for i in range(3)] if task else []
        assert set(got) <= {"here"}  # the pool is broken: every page analysed here
        assert pool.submit(PAGES[:1]) is None
        assert stats["analysis/helpers_lost"] == 1 and stats["analysis/ahead"] == 1
    finally:
        pool.close()


def test_hostile_answers_give_the_same_analysis_through_the_pool():
    """Every answer body of a small hostile web (broken markup, odd charsets, floods,
    binary claimed as HTML), sent to helpers and analysed here, agrees."""
    config = HostileConfig(seed=3, hosts=2, pages=30, refused=0, port=8766)
    web = HostileWeb(config)
    pages = []
    for netloc in web.netlocs:
        for target in ["/", *(f"/p/{n}" for n in range(config.pages))]:
            for k in range(2):
                plan = web.plan(netloc, target, k)
                found = re.search(rb"\ncontent-type: [^\r\n]*charset=([^\r\n;]*)",
                                  plan.head.lower())
                pages.append((plan.body, f"http://{netloc}{target}",
                              found and found[1].decode("latin-1"), True))
    pages = [p for p in pages if p[0]]
    assert len(pages) > 80
    pool = started(2, Stats())
    try:
        task = pool.submit(pages)
        cache = LinkCache()
        for i, page_args in enumerate(pages):
            same(pool.result(task, i, lambda: pytest.fail("analysed here")),
                 analyse(*page_args, cache, LinkKeys(STRIP)))
    finally:
        pool.close()


def test_auto_gives_a_rank_two_workers_when_its_share_of_the_cores_is_two(monkeypatch):
    for cores, ranks, workers in [(2, 1, 2), (2, 2, 0), (1, 1, 0), (8, 4, 2), (8, 5, 0),
                                  (16, 1, 2)]:
        monkeypatch.setattr(os, "sched_getaffinity", lambda pid, n=cores: set(range(n)))
        assert workers_for(AUTO, ranks) == workers, (cores, ranks)
    assert workers_for(3, 8) == 3 and workers_for(0, 1) == 0  # as given


def test_a_worker_killed_mid_crawl_loses_no_page(tmp_path, monkeypatch):
    """A crawl whose worker is killed as its 50th page goes to the pool (the 49 before it
    analysed): the same index as without workers, the pool counted lost once."""
    names = ("pages/url", "search/terms", "search/offsets", "search/docs", "search/tf",
             "links/targets", "pages/simhash", "search/wtf")
    submit, submitted = Pool.submit, []

    def killing(self, *page):
        future = submit(self, *page)
        submitted.extend([future] if future is not None else [])
        if len(submitted) == 50 and future is not None:
            futures.wait(submitted[:-1])
            os.kill(multiprocessing.active_children()[0].pid, signal.SIGKILL)
        return future

    monkeypatch.setattr(Pool, "submit", killing)
    indexes = []
    with serve(pages=400, hosts=4, latency="0,0.01") as web:
        for run, workers in enumerate([0, 2]):
            (tmp_path / str(run)).mkdir()
            with crawl_here(tmp_path / str(run), web.seeds(), index_parse_processes=workers,
                            index_flush_pages=100) as f:
                indexes.append({n: f[f"ranks/0000/{n}"][:] for n in names})
                stats = f["ranks/0000/stats"]
                assert stats["analysis/helpers_lost"].max() == (1 if workers else 0)
                assert stats["analysis/ahead"].max() >= 49 * (workers > 0)
    for name in names:
        assert np.array_equal(indexes[0][name], indexes[1][name]), name
