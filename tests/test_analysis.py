"""Pages analysed in helper processes (``--parse-processes``) give what the scheduler's
thread gives, in any order of commits, through full pipes, and when a helper dies."""

from __future__ import annotations

import os
import random
import re
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

from bspcrawl import analysis
from bspcrawl.analysis import (
    AUTO,
    Analysis,
    AnalysisPool,
    LinkKeys,
    Spare,
    Strings,
    analyse,
    analyse_many,
    cpu_quota,
    decode,
    encode,
    helpers_for,
)
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
    """Assert two analyses are equal (the arrays by value; the terms' sequence is not sent
    through the pipe: the pairs and the SimHash made from it are)."""
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


def started(n: int, stats: Stats | None = None) -> AnalysisPool:
    """A pool of *n* helpers that have all started (a crawl does not wait for them: the
    tests do, to know where pages go)."""
    pool = AnalysisPool(n, Stats() if stats is None else stats, STRIP)
    assert pool.wait_ready(60)
    return pool


def test_strings_read_as_the_list_they_hold():
    items = ["http://a.test/", "", "é", "http://b.test/x?y#", "z" * 300]
    held = Strings.of(items)
    assert held == items and list(held) == items and len(held) == 5
    assert [held[i] for i in range(-5, 5)] == items + items
    for a in range(-6, 7):
        for b in range(-6, 7):
            assert list(held[a:b]) == items[a:b] and held[a:b] == items[a:b]
    assert held[1:][1:3] == items[2:4]
    with pytest.raises(IndexError):
        held[5]
    assert Strings.of([]) == [] and len(Strings.of([])) == 0
    assert held != items[:4] and held != "http://a.test/"
    with pytest.raises(TypeError):
        hash(held)


def test_encode_then_decode_gives_the_analysis_back():
    cache = LinkCache()
    for body, url, charset, index in PAGES:
        local = analyse(body, url, charset, index, cache, LinkKeys(STRIP))
        same(decode(encode(local)), local)
    assert decode(encode(None)) is None


@pytest.mark.parametrize("helpers", [1, 3])
def test_the_pool_gives_the_local_analysis_in_any_order(helpers, monkeypatch):
    monkeypatch.setattr(analysis, "HAND", len(PAGES))  # every page in a helper's hands
    stats = Stats()
    pool = started(helpers, stats)
    try:
        results = [result(i, *p[:2]) for i, p in enumerate(PAGES)]
        for r, (body, url, charset, index) in zip(results, PAGES, strict=True):
            pool.submit(r, body, url, charset, index)  # ~18 MB in all: the pipes fill up
        order = list(range(len(PAGES)))
        random.Random(7).shuffle(order)
        cache = LinkCache()
        for i in order:
            body, url, charset, index = PAGES[i]
            got = pool.take(results[i])
            assert got is not None
            same(got, analyse(body, url, charset, index, cache, LinkKeys(STRIP)))
        assert pool.take(results[0]) is None  # taken already: the caller analyses it
        assert not pool.sent and not pool.answers
        assert stats["analysis/ahead"] == len(PAGES)
    finally:
        pool.close()
    assert all(h.proc.returncode == 0 for h in pool.helpers)


def test_pages_past_the_hands_wait_for_room_and_for_a_new_helper(monkeypatch):
    monkeypatch.setattr(analysis, "HAND", 4)
    stats = Stats()
    pool = started(1, stats)
    try:
        results = [result(i, *p[:2]) for i, p in enumerate(PAGES[:24])]
        for r, page_i in zip(results, PAGES, strict=False):
            pool.submit(r, *page_i)
        first = pool.helpers[0]
        assert len(first.keys) == 4 and len(pool.queued) == 20
        pool.grow()  # the new helper takes 4 of those waiting once it has started (the
        assert pool.wait_ready(60)  # first may have taken more meanwhile)
        second = pool.helpers[1]
        assert len(second.keys) == 4 and len(pool.queued) <= 16
        queued = len(pool.queued)
        made = analyse(*PAGES[23], LinkCache(), LinkKeys(STRIP))
        assert pool.take(results[-1], lambda: time.sleep(0.05) or made) is made  # still
        assert len(pool.queued) == queued - 1  # waiting: the caller made it, in time counted as
        assert stats["time/helpers"] >= 0.05  # waiting (the helpers do not keep up)
        cache = LinkCache()
        went = []
        for r, (body, url, charset, index) in zip(results[:-1], PAGES, strict=False):
            went.append(pool.where[pool.sent[id(r)][0]])  # handed out before its turn
            got = pool.take(r)  # in order, as the commits go
            assert got is not None
            same(got, analyse(body, url, charset, index, cache, LinkKeys(STRIP)))
        assert not pool.sent and not pool.queued and not pool.where and not pool.answers
        assert stats["analysis/ahead"] == 23
        assert went.count(first) > 4 and went.count(second) >= 4  # then as they had room
    finally:
        pool.close()


def test_pages_are_not_left_waiting_for_a_helper_that_is_starting():
    """A helper is handed pages once it says it has started (its imports take ~0.1 s): the
    first pages of a crawl are analysed by the scheduler meanwhile, not waited for; a helper
    closed before it started holds nothing and is killed, not waited for."""
    stats = Stats()
    pool = AnalysisPool(1, stats, STRIP)
    try:
        early = result(0, *PAGES[0][:2])
        pool.submit(early, *PAGES[0])
        made = analyse(*PAGES[0], LinkCache(), LinkKeys(STRIP))
        assert not pool.helpers[0].ready and not pool.where
        assert pool.take(early, lambda: made) is made and stats["analysis/ahead"] == 0
        assert pool.wait_ready(60)
        late = result(1, *PAGES[1][:2])
        pool.submit(late, *PAGES[1])
        assert pool.where[pool.sent[id(late)][0]] is pool.helpers[0]
        same(pool.take(late), analyse(*PAGES[1], LinkCache(), LinkKeys(STRIP)))
        assert stats["analysis/ahead"] == 1
    finally:
        pool.close()
    assert pool.helpers[0].proc.returncode == 0
    starting = AnalysisPool(1, Stats(), STRIP)
    starting.close()
    assert starting.helpers[0].proc.returncode == -signal.SIGKILL


def test_the_helpers_go_on_while_the_scheduler_seals(monkeypatch):
    """Pages past the helpers' hands and pipes (3 MB ones among them) are analysed while the
    caller's thread is busy elsewhere (a seal), their answers read for it."""
    monkeypatch.setattr(analysis, "HAND", 8)
    pool = started(2)
    try:
        results = [result(i, *p[:2]) for i, p in enumerate(PAGES[:40])]
        for r, page_i in zip(results, PAGES, strict=False):
            pool.submit(r, *page_i)
        assert len(pool.queued) == 24 and not pool.answers
        with pool.meanwhile():  # the caller seals: it does not touch the pool
            deadline = time.monotonic() + 60
            while len(pool.answers) < len(results) and time.monotonic() < deadline:
                time.sleep(0.01)
        assert len(pool.answers) == len(results) and not pool.queued
        cache = LinkCache()
        for r, (body, url, charset, index) in zip(results, PAGES, strict=False):
            same(pool.take(r), analyse(body, url, charset, index, cache, LinkKeys(STRIP)))
        with pytest.raises(KeyError), pool.meanwhile():  # nothing to do: no thread
            raise KeyError
        pool.submit(results[0], *PAGES[0])
        with pytest.raises(KeyError), pool.meanwhile():  # the thread ends with the block
            raise KeyError
        assert not [t for t in threading.enumerate() if t.name == "bspcrawl-pump"]
    finally:
        pool.close()


def test_a_rank_that_may_take_a_helper_queues_its_pages_for_it(tmp_path):
    never = Spare(0.0, 2, str(tmp_path / "no-proc-stat"))  # (its looks never say grow)
    pool = AnalysisPool(0, Stats(), STRIP, never)
    alone = AnalysisPool(0, Stats(), STRIP)  # no spare: it never has a helper
    try:
        results = [result(i, *p[:2]) for i, p in enumerate(PAGES[:10])]
        for r, page_i in zip(results, PAGES, strict=False):
            pool.submit(r, *page_i)
            alone.submit(r, *page_i)
        assert len(pool.queued) == 10 and not alone.sent
        made = analyse(*PAGES[0], LinkCache(), LinkKeys(STRIP))
        assert pool.take(results[0], lambda: made) is made  # no helper yet: made here
        assert pool.stats["time/helpers"] == 0  # (with none, nothing waited for one)
        pool.grow()  # the helper started later takes the pages fetched before it
        assert pool.wait_ready(60)
        assert len(pool.queued) == 0 and len(pool.where) == 9
        cache = LinkCache()
        for r, (body, url, charset, index) in zip(results[1:], PAGES[1:], strict=False):
            same(pool.take(r), analyse(body, url, charset, index, cache, LinkKeys(STRIP)))
        assert pool.stats["analysis/ahead"] == 9
    finally:
        pool.close()
        alone.close()


def test_claim_gives_the_pages_no_helper_has_and_leaves_the_others(monkeypatch):
    # one helper with room for 2 pages: the first two go to it, the third waits in the
    # pool; a claim analyses the waiting one and the one never submitted here, and leaves
    # the helper's to take()
    monkeypatch.setattr(analysis, "HAND", 2)
    pool = started(1)
    try:
        results = [result(i, *PAGES[i][:2]) for i in range(4)]
        for r, (body, url, charset, index) in zip(results[:3], PAGES[:3], strict=True):
            pool.submit(r, body, url, charset, index)
        asked = []

        def here(those: list[FetchResult]) -> list[Analysis | None]:
            asked.append([results.index(r) for r in those])
            return analyse_many([PAGES[results.index(r)] for r in those], LinkCache(),
                                LinkKeys(STRIP))

        claimed = pool.claim(results, here)
        assert claimed[:2] == [None, None] and asked == [[2, 3]]
        for i in (2, 3):
            same(claimed[i], analyse(*PAGES[i], LinkCache(), LinkKeys(STRIP)))
        assert not pool.queued and len(pool.sent) == 2
        for i in (0, 1):
            same(pool.take(results[i], lambda: pytest.fail("a helper has it")),
                 analyse(*PAGES[i], LinkCache(), LinkKeys(STRIP)))
    finally:
        pool.close()


def test_analyse_many_gives_each_page_its_analysis_and_none_where_it_raised(monkeypatch):
    cache = LinkCache()
    many = analyse_many(PAGES, cache, LinkKeys(STRIP))
    for got, page in zip(many, PAGES, strict=True):
        assert got is not None
        same(got, analyse(*page, LinkCache(), LinkKeys(STRIP)))
    real = analysis.parse_html
    monkeypatch.setattr(analysis, "parse_html", lambda body, *a, **k: real(body, *a, **k)
                        if body != PAGES[1][0] else 1 / 0)
    many = analyse_many(PAGES[:3], cache, LinkKeys(STRIP))
    assert many[1] is None and many[0] is not None and many[2] is not None


def test_a_discarded_page_leaves_nothing_behind():
    pool = started(1)
    try:
        results = [result(i, *p[:2]) for i, p in enumerate(PAGES[:5])]
        for r, (body, url, charset, index) in zip(results, PAGES, strict=False):
            pool.submit(r, body, url, charset, index)
        pool.discard(results[1])
        for i in (0, 2, 3, 4):
            assert pool.take(results[i]) is not None
        assert not pool.sent and not pool.answers and not pool.where
    finally:
        pool.close()


def test_a_lost_helper_leaves_its_pages_to_the_scheduler():
    stats = Stats()
    pool = started(2, stats)
    try:
        results = [result(i, *p[:2]) for i, p in enumerate(PAGES[:20])]
        for r, (body, url, charset, index) in zip(results, PAGES, strict=False):
            pool.submit(r, body, url, charset, index)
        dead = pool.helpers[0]
        dead.proc.kill()
        dead.proc.wait()
        lost = {id(r) for r in results if pool.where[pool.sent[id(r)][0]] is dead}
        assert lost
        for r in results:
            got = pool.take(r)
            # the survivor's pages come back; the dead one's, if not answered before it died,
            # are left to the caller (None)
            assert got is not None or id(r) in lost
        assert stats["analysis/helpers_lost"] == 1
        assert not dead.alive and pool.helpers[1].alive
        late = result(99, *PAGES[0][:2])
        pool.submit(late, *PAGES[0])
        assert pool.where[pool.sent[id(late)][0]] is pool.helpers[1]  # only the survivor
        assert pool.take(late) is not None
    finally:
        pool.close()


def test_closing_with_answers_unread_ends_the_helpers_without_a_kill():
    """Pages sent and never taken (a crawl stopped with schedules outstanding): the
    helpers, blocked writing answers nobody reads, end on their own."""
    pool = started(2)
    for i, (body, url, charset, index) in enumerate(PAGES):
        pool.submit(result(i, body, url), body, url, charset, index)
    pool.close()
    assert [h.proc.returncode for h in pool.helpers] == [0, 0]


def test_a_hung_helper_is_killed_and_its_pages_left_to_the_scheduler(monkeypatch):
    monkeypatch.setattr(analysis, "STALL", 0.5)
    stats = Stats()
    pool = started(1, stats)
    try:
        (helper,) = pool.helpers
        helper.proc.send_signal(signal.SIGSTOP)  # hangs as a parser in a loop would
        r = result(0, *PAGES[0][:2])
        pool.submit(r, *PAGES[0])
        assert pool.take(r) is None
        assert stats["analysis/helpers_lost"] == 1 and helper.proc.returncode == -9
    finally:
        pool.close()


def test_a_helper_of_another_wire_format_stops_with_one_line():
    run = subprocess.run([sys.executable, "-m", "bspcrawl.analysis", "<Q", "<Q", STRIP],
                         input=b"", capture_output=True)
    assert run.returncode != 0 and run.stdout == b""
    assert run.stderr.count(b"\n") == 1 and b"changed under the crawl" in run.stderr


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
    pool = started(2)
    try:
        results = [result(i, body, url) for i, (body, url, _, _) in enumerate(pages)]
        for r, page_args in zip(results, pages, strict=True):
            pool.submit(r, *page_args)
        cache = LinkCache()
        for r, (body, url, charset, index) in zip(results, pages, strict=True):
            got = pool.take(r)
            assert got is not None
            same(got, analyse(body, url, charset, index, cache, LinkKeys(STRIP)))
    finally:
        pool.close()


def test_auto_gives_a_rank_a_helper_when_the_machine_has_a_core_to_spare_for_each(
        monkeypatch, tmp_path):
    none = tmp_path / "no-cgroup"
    # (at the start, the most): the rank's share of the cores, two at most, at the start if
    # a core is spare for each rank; later up to its share, or two where the other ranks
    # leave cores idle
    for cores, ranks, helpers in [(2, 1, (2, 2)), (2, 2, (0, 2)), (1, 1, (0, 1)),
                                  (8, 4, (2, 2)), (8, 5, (0, 2)), (16, 1, (2, 16)),
                                  (3, 1, (2, 3))]:
        monkeypatch.setattr(os, "sched_getaffinity", lambda pid, n=cores: set(range(n)))
        assert helpers_for(AUTO, ranks, none) == helpers, (cores, ranks)
    assert helpers_for(3, 8) == (3, 3) and helpers_for(0, 1) == (0, 0)  # as given
    # a container's CPU quota caps the cores (cgroup v2, v1), and then nothing grows
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(8)))
    v2, v1 = tmp_path / "v2", tmp_path / "v1"
    v2.mkdir()
    (v1 / "cpu").mkdir(parents=True)
    (v1 / "cpu" / "cpu.cfs_period_us").write_text("100000\n")
    for quota, helpers in [("150000 100000", (0, 0)), ("400000 100000", (2, 2)),
                           ("max 100000", (2, 4))]:
        (v2 / "cpu.max").write_text(quota + "\n")
        assert helpers_for(AUTO, 2, v2) == helpers, quota
    for quota, helpers in [("100000", (0, 0)), ("-1", (2, 4))]:
        (v1 / "cpu" / "cpu.cfs_quota_us").write_text(quota + "\n")
        assert helpers_for(AUTO, 2, v1) == helpers, quota
    assert cpu_quota(v2) is None and cpu_quota(v1) is None and cpu_quota(none) is None


def _stat(path, idle_jiffies):
    """A /proc/stat whose two cores have spent 1,000 jiffies each since the machine
    started, ``idle_jiffies`` of them idle (split between idle and iowait)."""
    rows = [f"cpu{i} {1000 - idle} 0 0 {idle // 2} {idle - idle // 2} 0 0 0 0 0"
            for i, idle in enumerate(idle_jiffies)]
    path.write_text("cpu 0 0 0 0 0 0 0 0 0 0\n" + "\n".join(rows) + "\nintr 1 2 3\n")


def test_spare_gives_a_busy_rank_a_helper_when_a_core_idles(tmp_path, monkeypatch):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1})
    stat = tmp_path / "stat"

    def looks(idle_after, waits, seconds=1.0, on_helpers=0.0, helpers=0):
        stat.write_text("cpu0 0 0 0 0 0 0 0 0 0 0\ncpu1 0 0 0 0 0 0 0 0 0 0\n")
        spare = Spare(100.0, 4, str(stat))
        _stat(stat, idle_after)
        return [spare.look(100.0 + seconds * (i + 1) / len(waits), w, on_helpers, helpers)
                for i, w in enumerate(waits)]

    assert looks([1000, 0], [0.1]) == [True]  # one core idle all along, the rank busy
    assert looks([400, 400], [0.1]) == [True]  # 0.8 core's worth, spread on both
    assert looks([300, 300], [0.1]) == [True]  # 0.6: half a core or more
    assert looks([200, 200], [0.1]) == [False]  # 0.4: no core to spare
    assert looks([1000, 0], [0.2, 0.2]) == [False, False]  # the rank waited 40%: not busy
    assert looks([1000, 0], [0.0, 0.0], seconds=0.45) == [False, False]  # not half a second
    # with helpers: one more when the commits waited for them a quarter of the time or more
    # and a quarter of a core idled
    assert looks([150, 150], [0.0], on_helpers=0.3, helpers=1) == [True]
    assert looks([1000, 0], [0.0], on_helpers=0.2, helpers=1) == [False]  # they keep up
    assert looks([100, 100], [0.0], on_helpers=0.9, helpers=2) == [False]  # no core idles
    assert looks([1000, 0], [0.0], on_helpers=0.9, helpers=4) == [False]  # it has the most
    # looked at as it commits: the superstep's counters so far, each counted once
    def spare_idling() -> Spare:
        stat.write_text("cpu0 0 0 0 0 0 0 0 0 0 0\ncpu1 0 0 0 0 0 0 0 0 0 0\n")
        spare = Spare(100.0, 4, str(stat))
        _stat(stat, [1000, 0])
        return spare

    spare = spare_idling()
    assert not spare.look(100.3, 0.1, 0.0, 0, ended=False)  # not half a second yet
    assert spare.look(100.6, 0.1, 0.0, 0, ended=False)  # waited 0.1 s of 0.6: busy
    spare = spare_idling()
    assert not spare.look(100.3, 0.1, 0.0, 0, ended=False)
    assert not spare.look(100.6, 0.2, 0.0, 0, ended=True)  # 0.2 s of 0.6: 33%, it waited
    spare = spare_idling()
    assert not spare.look(100.3, 0.05, 0.0, 0, ended=True)
    assert spare.look(100.6, 0.08, 0.0, 0, ended=False)  # a new superstep: 0.13 s of 0.6
    spare = spare_idling()
    assert not spare.look(100.15, 0.0, 0.0, 0)  # not half a second yet
    assert spare.look(100.3, 0.0, 0.0, 0, hurry=True)  # another rank of the machine is
    spare = spare_idling()  # free: a tenth of a second will do
    assert not spare.look(100.05, 0.0, 0.0, 0, hurry=True)
    missing = Spare(100.0, 4, str(tmp_path / "none"))  # no /proc: never
    assert not missing.look(105.0, 0.0, 0.0, 0) and not missing.look(110.0, 0.0, 5.0, 1)
    stat.write_text("\ncpu0 1 2\ncpu1 x y z w v u t s\n")  # unreadable: never either
    assert not Spare(100.0, 4, str(stat)).look(105.0, 0.0, 0.0, 0)


def test_a_helper_taken_mid_crawl_gives_the_same_index(tmp_path, monkeypatch):
    # --parse-processes -1 on one core starts with no helper; Spare gives the rank one at
    # its third look (forced here: the machine's idle time is not the test's to set)
    names = ("pages/url", "search/terms", "search/offsets", "search/docs", "search/tf",
             "links/targets", "pages/simhash", "search/wtf")
    looks = iter(range(1, 10**6))
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0})
    monkeypatch.setattr(analysis, "CGROUP", tmp_path / "no-cgroup")  # no CPU quota
    monkeypatch.setattr(Spare, "look", lambda self, *args, **kw: next(looks) == 3)
    indexes = []
    with serve(pages=400, hosts=4, latency="0,0.01") as web:
        for run, helpers in enumerate([0, AUTO]):
            (tmp_path / str(run)).mkdir()
            with crawl_here(tmp_path / str(run), web.seeds(), index_parse_processes=helpers,
                            index_flush_pages=100) as f:
                indexes.append({n: f[f"ranks/0000/{n}"][:] for n in names})
                ahead = f["ranks/0000/stats"]["analysis/ahead"].max()
                assert (ahead > 100) == (helpers == AUTO), ahead
    for name in names:
        assert np.array_equal(indexes[0][name], indexes[1][name]), name


def test_without_an_affinity_call_every_cpu_counts(monkeypatch, tmp_path):
    monkeypatch.delattr(os, "sched_getaffinity")  # macOS has none
    monkeypatch.setattr(os, "cpu_count", lambda: 4)
    assert analysis._cpus() == {0, 1, 2, 3}
    assert helpers_for(AUTO, 2, tmp_path) == (2, 2)  # (no cgroup files there)
