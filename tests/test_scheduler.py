"""The scheduler's receive and run steps with a fake clock and a fake fetcher: robots.txt
first, commits in schedule order at superstep ``seq + fetch_workers``, retries, stragglers,
dead fetcher threads, paced hosts and draining; against a real frontier, window, archive
and store."""

from __future__ import annotations

import random
from collections import Counter, deque
from pathlib import Path

import h5py
import pytest

from bspcrawl.commit import Committer
from bspcrawl.counters import Stats
from bspcrawl.frontier import Frontier
from bspcrawl.index.archive import Archive
from bspcrawl.index.store import RankStore, rank_path
from bspcrawl.index.window import Window
from bspcrawl.messages import FetchJob, FetchResult, Link
from bspcrawl.scheduler import IDLE_MAX, IDLE_SLEEP, MAX_RESCHEDULES, Scheduler
from bspcrawl.settings import Settings

UNPACED = {"politeness_min_host_delay": 0.0, "politeness_response_factor": 0.0}
NOT_FOUND = {"status": 404}
EPOCH = 1.7e9  # the fake wall clock is EPOCH + the fake monotonic clock
HOUR = 1000.0 + 3600  # no test's fake clock gets that far


def page(*hrefs: str, words: str = "") -> dict:
    """A canned HTML 200 answer linking to ``hrefs``."""
    anchors = "".join(f'<a href="{h}">link</a> ' for h in hrefs)
    return {"status": 200, "content_type": "text/html; charset=utf-8",
            "body": f"<html><head><title>t</title></head><body>{words} {anchors}"
                    f"</body></html>".encode()}


class Clock:
    """A monotonic clock that moves only when told to, or waited on (``slept``: each
    wait for a result that ended with none)."""

    def __init__(self, t: float = 1000.0) -> None:
        self.t = t
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.t

    def wall(self) -> float:
        return EPOCH + self.t

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.t += seconds


class Web:
    """Canned answers by URL (a dict, or a list of dicts used in turn, the last repeated),
    shared by every fake fetcher of a test; also the fetcher factory.

    ``hold``: URLs not answered while listed (stragglers, hung transfers). ``shuffle``: each
    ``get`` answers a random part of the jobs waiting, in random order (results of several
    schedules interleave); otherwise all of them, last submitted first. ``lifetime``: each
    new fetcher reports itself unhealthy after that many ``get`` calls.
    """

    def __init__(self, clock: Clock, pages: dict, seed: int = 0) -> None:
        self.clock = clock
        self.pages = {u: a if isinstance(a, list) else [a] for u, a in pages.items()}
        self.hold: set[str] = set()
        self.shuffle = False
        self.lifetime: int | None = None
        self.rng = random.Random(seed)
        self.fetchers: list[FakeFetcher] = []
        self.answered: list[FetchResult] = []  # every result handed out, in order
        self.count: Counter[str] = Counter()

    def __call__(self, settings: Settings) -> FakeFetcher:
        fetcher = FakeFetcher(self)
        self.fetchers.append(fetcher)
        return fetcher

    def answer(self, job: FetchJob) -> FetchResult:
        answers = self.pages.get(job.url, [NOT_FOUND])
        spec = answers[min(self.count[job.url], len(answers) - 1)]
        self.count[job.url] += 1
        result = FetchResult(job, status=spec.get("status", 200), error=spec.get("error", ""),
                             content_type=spec.get("content_type", ""),
                             location=spec.get("location", ""), body=spec.get("body", b""),
                             started=self.clock.wall(), elapsed=0.01, ended=self.clock(),
                             retry_after=spec.get("retry_after"),
                             headers=dict(spec.get("headers", {})))
        self.answered.append(result)
        return result

    def submitted(self) -> list[tuple[float, FetchJob]]:
        """(clock, job) of every submission to any fetcher, in order."""
        return [x for f in self.fetchers for x in f.submitted]


class FakeFetcher:
    """``scheduler.FetcherLike``: answers from the :class:`Web` when asked for results;
    ``alive = False`` is a dead robots thread (no answers, ``healthy`` False)."""

    def __init__(self, web: Web) -> None:
        self.web = web
        self.waiting: list[FetchJob] = []
        self.results: deque[FetchResult] = deque()
        self.submitted: list[tuple[float, FetchJob]] = []
        self.alive, self.closed, self.gets = True, False, 0

    def submit(self, jobs: list[FetchJob]) -> None:
        assert not self.closed, "a job submitted to a closed fetcher"
        self.submitted += [(self.web.clock(), j) for j in jobs]
        self.waiting += jobs

    def get(self, timeout: float | None = None) -> FetchResult | None:
        self.gets += 1
        if self.web.lifetime is not None and self.gets > self.web.lifetime:
            self.alive = False
        if self.alive:
            self._work()
        if self.results:
            return self.results.popleft()
        if timeout:
            self.web.clock.sleep(timeout)  # blocked that long, for nothing
            assert self.web.clock.t < HOUR, "the scheduler waits for a result forever"
        return None

    def _work(self) -> None:
        web = self.web
        ready = [j for j in self.waiting if j.url not in web.hold]
        if web.shuffle and ready:
            web.rng.shuffle(ready)
            ready = ready[:web.rng.randint(1, len(ready))]
        else:
            ready.reverse()
        done = {id(j) for j in ready}
        self.waiting = [j for j in self.waiting if id(j) not in done]
        self.results.extend(web.answer(j) for j in ready)

    def healthy(self, stall: float) -> bool:
        return self.alive

    def close(self, wait: float = 10.0) -> None:
        self.closed = True


class Recorder(Committer):
    """The real commit pipeline, logging (superstep, result) of each commit."""

    step = 0

    def commit(self, result: FetchResult) -> list[Link]:
        self.log.append((self.step, result))
        return super().commit(result)


class Rig:
    """One rank's scheduler with a fake clock, wall and fetcher, driven superstep
    by superstep as ``superstep.Crawl.run`` does on P = 1 (links found at one superstep are
    received at the next)."""

    def __init__(self, tmp_path: Path, pages: dict, seeds: list[str] | list[Link],
                 warc: bool = False, idle_max: float = IDLE_SLEEP, **settings: object) -> None:
        self.out = tmp_path
        self.settings = Settings(**{**UNPACED, "fetch_workers": 2, **settings}).validate()
        self.clock = Clock()
        self.web = Web(self.clock, pages)
        self.stats = Stats()
        self.frontier = Frontier(self.settings, self.stats, clock=self.clock)
        self.window = Window(self.settings.fetch_workers)
        self.archive = Archive(tmp_path, 0, warc=warc)
        self.store = RankStore(tmp_path, 0, 1, {}, flush_pages=10**6, archive=self.archive)
        self.committer = Recorder(self.archive, self.store, self.settings.agent_token,
                                  self.frontier.fingerprints)
        self.committer.log = []
        self.scheduler = Scheduler(self.settings, self.frontier, self.window, self.archive,
                                   self.committer, self.stats, fetcher=self.web,
                                   clock=self.clock, wall=self.clock.wall,
                                   idle_max=idle_max)
        self.inbox = [x if isinstance(x, Link) else Link(x) for x in seeds]
        self.superstep = 0

    @property
    def fetcher(self) -> FakeFetcher:
        return self.scheduler.fetcher

    def step(self, draining: bool = False) -> list[Link]:
        self.stats.start_step()
        self.committer.step = self.superstep
        self.scheduler.receive(self.inbox)
        links = self.scheduler.run(draining)
        self.frontier._check()
        self.window._check()
        self.inbox = links
        self.superstep += 1
        return links

    def busy(self) -> bool:
        return bool(len(self.frontier) or self.scheduler.unreleased() or self.inbox)

    def crawl(self, most: int = 500) -> None:
        """Supersteps until nothing is left to fetch or commit."""
        while self.busy():
            assert self.superstep < most, "the crawl does not end"
            self.step()

    def committed(self) -> list[tuple[int, FetchResult]]:
        return self.committer.log

    def submitted_pages(self) -> list[FetchJob]:
        return [j for _, j in self.web.submitted() if not j.robotstxt]

    def rows(self) -> dict[str, list]:
        """The store's page rows, after closing it."""
        self.store.close(self.superstep)
        with h5py.File(rank_path(self.out, 0)) as f:
            p = f["pages"]
            return {"url": p["url"].asstr()[:].tolist(), "seq": p["seq"][:].tolist(),
                    "doc_id": p["doc_id"][:].tolist(), "status": p["status"][:].tolist(),
                    "error": p["error"].asstr()[:].tolist(), "depth": p["depth"][:].tolist()}


def small_web() -> dict:
    return {
        "http://a.test/robots.txt": {"status": 200,
                                     "body": b"User-agent: *\nDisallow: /private\n"},
        "http://a.test/": page("/1", "/2", "/private/x", "http://b.test/"),
        "http://a.test/1": page("/2", "/3"),
        "http://a.test/2": page("/"),
        "http://a.test/3": page("http://b.test/1"),
        "http://b.test/": page("/1", "http://a.test/1"),
        "http://b.test/1": page("/2"),
        "http://b.test/2": page(),
    }


def test_robots_txt_first_and_pages_only_once_it_is_committed(tmp_path):
    rig = Rig(tmp_path, small_web(), ["http://a.test/"], fetch_workers=2)
    rig.crawl()
    jobs = [j for _, j in rig.web.submitted()]
    for host in ("a.test:80", "b.test:80"):
        mine = [j for j in jobs if j.host == host]
        assert mine[0].robotstxt and sum(j.robotstxt for j in mine) == 1
        # its host's pages come in a later schedule, once it is committed
        assert min(j.seq for j in mine[1:]) > mine[0].seq
    urls = [j.url for j in rig.submitted_pages()]
    assert sorted(urls) == sorted(u for u in small_web() if not u.endswith("robots.txt"))
    assert rig.stats["frontier/robots_denied"] == 1
    assert rig.stats["robotstxt/fetched"] == 2
    rows = rig.rows()
    assert rows["url"] == urls  # each page committed once, no robots.txt among them
    assert rows["doc_id"] == list(range(len(urls)))


def test_results_out_of_order_are_committed_in_schedule_order_fetch_workers_later(tmp_path):
    hosts = "abcd"
    pages = {f"http://{h}.test/{i}": page(*(f"/{j}" for j in range(i + 1, min(i + 4, 12))),
                                         f"http://{hosts[(k + 1) % 4]}.test/{i}")
             for k, h in enumerate(hosts) for i in range(12)}
    for workers in (1, 3):
        out = tmp_path / str(workers)
        rig = Rig(out, pages, ["http://a.test/0"], fetch_workers=workers,
                  window_straggler_timeout=0.0)
        rig.web.shuffle = True
        rig.crawl()
        answered = [(r.job.seq, r.job.index) for r in rig.web.answered]
        if workers > 1:
            assert answered != sorted(answered), "the fake fetcher should answer out of order"
        log = rig.committed()
        order = [(r.job.seq, r.job.index) for _, r in log]
        assert order == sorted(order) and len(set(order)) == len(order)
        # never an empty schedule: a superstep without a job commits the oldest instead
        opened = sorted({j.seq for _, j in rig.web.submitted()})
        assert opened == list(range(rig.window.next_seq))
        assert rig.superstep < 2 * len(opened) + workers
        assert [r.job.url for _, r in log] == [j.url for j in rig.submitted_pages()]
        assert len(log) == len(pages)
        rows = rig.rows()
        assert rows["seq"] == sorted(rows["seq"])
        assert rows["url"] == [j.url for j in rig.submitted_pages()]
        assert rows["doc_id"] == list(range(len(pages)))


def test_a_pages_links_come_back_from_run_one_level_deeper(tmp_path):
    pages = {"http://a.test/p/": page("q#frag", "/r?x=1#", "http://b.test/s", "#top",
                                      "mailto:x@a.test")}
    rig = Rig(tmp_path, pages, [Link("http://a.test/p/", depth=2, hops=1)], fetch_workers=2)
    found = []
    while not rig.committed():
        found.append(rig.step())
    (step,) = [i for i, x in enumerate(found) if x]
    assert len(found) == step + 1  # the links come back from the run that commits it
    assert found[step] == [Link("http://a.test/p/q", 3, 0, "link"),
                           Link("http://a.test/r?x=1", 3, 0, "link"),
                           Link("http://b.test/s", 3, 0, "link"),
                           Link("http://a.test/p/", 3)]  # (no anchor text for itself)
    assert all(x == [] for i, x in enumerate(found) if i != step)
    assert rig.stats["exchange/urls_found"] == 4


def test_a_429_is_fetched_again_after_its_rest_and_committed_once(tmp_path):
    pages = {"http://a.test/busy": [{"status": 429, "retry_after": 0.2}, page()],
             "http://a.test/ok": page()}
    rig = Rig(tmp_path, pages, ["http://a.test/busy", "http://a.test/ok"], fetch_workers=2,
              politeness_retries=2)
    rig.crawl(most=200)
    busy = [(t, j) for t, j in rig.web.submitted() if j.url == "http://a.test/busy"]
    assert len(busy) == 2 and [j.attempt for _, j in busy] == [0, 1]
    first = next(r for r in rig.web.answered if r.job is busy[0][1])
    assert busy[1][0] >= first.ended + 0.2  # the host rested after the 429
    assert busy[1][1].seq > busy[0][1].seq
    assert IDLE_SLEEP in rig.clock.slept and min(rig.clock.slept) >= IDLE_SLEEP  # no spin
    assert rig.stats["fetch/retried"] == 1
    committed = [r for _, r in rig.committed() if r.job.url == "http://a.test/busy"]
    assert [(r.status, r.job.seq) for r in committed] == [(200, busy[1][1].seq)]
    rows = rig.rows()
    assert sorted(rows["url"]) == ["http://a.test/busy", "http://a.test/ok"]
    assert 429 not in rows["status"]


def test_a_503_without_retries_left_is_committed(tmp_path):
    pages = {"http://a.test/busy": {"status": 503, "retry_after": 0.0}}
    rig = Rig(tmp_path, pages, ["http://a.test/busy"], politeness_retries=1)
    rig.crawl(most=50)
    assert [(r.status, r.job.attempt) for _, r in rig.committed()] == [(503, 1)]
    assert rig.stats["fetch/retried"] == 1


def test_a_straggler_is_deferred_and_committed_once_when_it_arrives(tmp_path):
    pages = {"http://fast.test/": page(*(f"/{i}" for i in range(6)))}
    rig = Rig(tmp_path, pages, ["http://slow.test/", "http://fast.test/"], fetch_workers=2,
              window_straggler_timeout=2.0)
    rig.web.hold.add("http://slow.test/")
    while not any(j.url == "http://slow.test/" for j in rig.submitted_pages()):
        rig.step()
    while not rig.stats["window/deferred"]:  # until slow's schedule is due
        t0 = rig.clock()
        rig.step()  # then it is waited for, and deferred
        assert rig.superstep < 100
    assert 2.0 <= rig.clock() - t0 < 2.5
    assert rig.stats["window/deferred"] == 1 and rig.stats["time/wait"] >= 2.0
    assert rig.scheduler.unreleased() >= 1 and rig.window.deferred
    assert "http://slow.test/" not in [r.job.url for _, r in rig.committed()]
    before = len(rig.committed())
    for _ in range(6):  # later schedules are committed meanwhile, without waiting
        t0 = rig.clock()
        rig.step()
        assert rig.clock() - t0 < 0.5
    assert len(rig.committed()) > before
    assert rig.stats["window/late"] == 0
    rig.web.hold.clear()
    rig.step()
    assert rig.stats["window/late"] == 1
    rig.crawl()
    log = [r.job.url for _, r in rig.committed()]
    assert log.count("http://slow.test/") == 1 and len(log) == len(set(log)) == 8
    assert rig.stats["window/deferred"] == 1 and rig.stats["window/late"] == 1
    rows = rig.rows()
    assert rows["url"].count("http://slow.test/") == 1


def test_an_unhealthy_fetcher_is_replaced_and_its_jobs_handed_on(tmp_path):
    pages = {f"http://{h}.test/{i}": page(f"/{i + 1}") for h in "abc" for i in range(8)}
    rig = Rig(tmp_path, pages, [f"http://{h}.test/0" for h in "abc"], fetch_workers=4)
    hang = "http://a.test/2"
    rig.web.hold.add(hang)
    while not any(j.url == hang for j in rig.submitted_pages()):
        rig.step()
    (hung,) = [(j.seq, j.index) for j in rig.submitted_pages() if j.url == hang]
    for n in range(1, MAX_RESCHEDULES + 2):  # each step starts with a dead fetcher
        old = rig.fetcher
        old.alive = False
        unanswered = sorted([(s.seq, i) for s in rig.window.outstanding.values()
                             for i, r in enumerate(s.results) if r is None]
                            + list(rig.window.deferred))  # due and deferred, or not
        assert hung in unanswered
        before = rig.stats["window/rescheduled"]
        rig.step()
        assert rig.stats["fetcher/replaced"] == n and old.closed
        assert rig.fetcher is rig.web.fetchers[-1] and len(rig.web.fetchers) == n + 1
        if n > MAX_RESCHEDULES:  # the hung job outlived MAX_RESCHEDULES fetchers: given up
            unanswered.remove(hung)
        handed = sorted((j.seq, j.index) for _, j in rig.fetcher.submitted[:len(unanswered)])
        assert handed == unanswered  # the new fetcher's first jobs
        assert rig.stats["window/rescheduled"] - before == len(unanswered)
    rig.crawl()
    log = [r for _, r in rig.committed()]
    assert [(r.status, r.error) for _, r in rig.committed() if r.job.url == hang] \
        == [(0, "robot_hang")]
    urls = [r.job.url for r in log]
    reachable = {f"http://{h}.test/{i}" for h in "bc" for i in range(9)} | {
        "http://a.test/0", "http://a.test/1", hang}  # the hung page's links are not known
    assert len(urls) == len(set(urls)) and set(urls) == reachable
    assert hang not in [r.job.url for r in rig.web.answered]
    rows = rig.rows()
    assert rows["error"][rows["url"].index(hang)] == "robot_hang"


def test_fetchers_that_keep_dying_while_a_schedule_is_awaited(tmp_path):
    """The window waits for a hung job with no straggler timeout: the fetchers die under
    it, each is replaced, and the job becomes ``robot_hang`` after MAX_RESCHEDULES."""
    pages = {"http://a.test/": page("/x", "/y"), "http://a.test/x": page()}
    rig = Rig(tmp_path, pages, ["http://a.test/"], fetch_workers=2,
              window_straggler_timeout=0.0)
    rig.web.hold.add("http://a.test/y")
    rig.web.lifetime = 50
    rig.crawl(most=100)
    log = [r for _, r in rig.committed()]
    assert sorted((r.job.url, r.error) for r in log) == [
        ("http://a.test/", ""), ("http://a.test/x", ""), ("http://a.test/y", "robot_hang")]
    assert rig.stats["fetcher/replaced"] >= MAX_RESCHEDULES + 1


def test_a_paced_host_waits_for_its_rest_on_the_clock(tmp_path):
    pages = {"http://a.test/robots.txt": {"status": 200,
                                          "body": b"User-agent: *\nCrawl-delay: 2\n"},
             "http://a.test/": page("/1", "/2", "/3")}
    rig = Rig(tmp_path, pages, ["http://a.test/"], fetch_workers=2,
              politeness_min_host_delay=0.5)
    while not rig.submitted_pages():
        rig.step()
        assert rig.superstep < 1000
    (robots,) = [r for r in rig.web.answered if r.job.robotstxt]
    when, first = rig.web.submitted()[1]
    assert robots.ended + 0.5 <= when < robots.ended + 0.5 + 0.1
    assert IDLE_SLEEP in rig.clock.slept and min(rig.clock.slept) >= IDLE_SLEEP
    # the next page waits for the first to be answered, then its Crawl-delay
    for _ in range(5):
        rig.step()
    assert len(rig.submitted_pages()) == 1
    rig.crawl(most=3000)
    jobs = rig.web.submitted()
    assert [j.url for _, j in jobs[:2]] == ["http://a.test/robots.txt", "http://a.test/"]
    assert sorted(j.url for _, j in jobs[2:]) == [f"http://a.test/{i}" for i in (1, 2, 3)]
    ended = {id(r.job): r.ended for r in rig.web.answered}
    for (_, a), (t, _) in zip(jobs[1:], jobs[2:], strict=False):
        assert ended[id(a)] + 2.0 <= t < ended[id(a)] + 2.1
    assert rig.scheduler.unreleased() == 0 and rig.window.in_flight() == 0


def test_idle_ranks_wait_out_a_crawl_delay_in_few_supersteps_and_on_time(tmp_path):
    """Every rank idle (``idle_max=IDLE_MAX``): a host under a Crawl-delay of 2 s costs a
    few supersteps a rest, not one every ``IDLE_SLEEP``; its jobs still start on time."""
    pages = {"http://a.test/robots.txt": {"status": 200,
                                          "body": b"User-agent: *\nCrawl-delay: 2\n"},
             "http://a.test/": page("/1", "/2", "/3")}
    counts = {}
    for idle_max in (IDLE_SLEEP, IDLE_MAX):
        rig = Rig(tmp_path / str(idle_max), pages, ["http://a.test/"], idle_max=idle_max)
        rig.crawl(most=3000)
        jobs = rig.web.submitted()
        assert len(jobs) == 5
        ended = {id(r.job): r.ended for r in rig.web.answered}
        for (_, a), (t, _) in zip(jobs[1:], jobs[2:], strict=False):
            assert ended[id(a)] + 2.0 <= t < ended[id(a)] + 2.0 + IDLE_SLEEP + 1e-9
        assert max(rig.clock.slept) <= idle_max
        counts[idle_max] = rig.superstep
    assert counts[IDLE_SLEEP] > 3 * 2.0 / IDLE_SLEEP  # three rests of 2 s, 5 ms at a time
    assert counts[IDLE_MAX] <= 3 * 2.0 / IDLE_MAX + 20  # (+ robots.txt, commits)


def test_draining_commits_every_outstanding_schedule_and_opens_none(tmp_path):
    pages = {f"http://{h}.test/{i}": page(f"/{i + 1}", f"http://{h}.test/{i + 2}")
             for h in "ab" for i in range(20)}
    rig = Rig(tmp_path, pages, ["http://a.test/0", "http://b.test/0"], fetch_workers=3)
    rig.web.shuffle = True
    while not any(not j.robotstxt for s in rig.window.outstanding.values() for j in s.jobs):
        rig.step()  # until pages are outstanding
        assert rig.superstep < 100
    next_seq, sent = rig.window.next_seq, len(rig.web.submitted())
    outstanding = sorted((j.seq, j.index) for s in rig.window.outstanding.values()
                         for j in s.jobs if not j.robotstxt)
    assert outstanding
    before = len(rig.committed())
    links = rig.step(draining=True)
    assert len(rig.window) == 0 and rig.window.next_seq == next_seq
    assert len(rig.web.submitted()) == sent
    drained = [r for _, r in rig.committed()[before:]]
    assert sorted((r.job.seq, r.job.index) for r in drained) == outstanding
    assert links and rig.scheduler.unreleased() == 0 and rig.window.in_flight() == 0
    assert rig.step(draining=True) == [] and rig.window.next_seq == next_seq
    assert len(rig.web.submitted()) == sent
    urls = [r.job.url for _, r in rig.committed()]
    assert len(urls) == len(set(urls))


def test_the_schedule_is_stamped_with_the_wall_clock(tmp_path):
    rig = Rig(tmp_path, {}, ["http://a.test/"], fetch_workers=2)
    rig.clock.t = 5.0
    rig.step()
    assert rig.window.outstanding[0].schedule_time == EPOCH + 5.0


@pytest.mark.parametrize("warc", [False, True])
def test_a_crawl_of_the_small_web_commits_each_page_once(tmp_path, warc):
    rig = Rig(tmp_path, small_web(), ["http://a.test/"], warc=warc, fetch_workers=3)
    rig.web.shuffle = True
    rig.crawl()
    rig.archive.close()
    rows = rig.rows()
    assert sorted(rows["url"]) == sorted(u for u in small_web()
                                         if not u.endswith("robots.txt"))
    assert rows["depth"][rows["url"].index("http://b.test/2")] == 3
    assert (tmp_path / "warc").is_dir() == warc
