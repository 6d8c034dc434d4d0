"""The frontier against a model (hypothesis state machine): links received over a few hosts
(duplicates, too deep, blacklisted), schedules, random answers (429/503 retries, robots.txt
that disallow, fail or vanish), a fake clock, revisits, checkpoint and restore.

The model follows every URL accepted: waiting, out (scheduled, not committed), done, denied
by robots.txt, or due for a revisit. A URL is scheduled only while waiting, so never twice
unless it was retried, revisited or handed back by a restore; the frontier's size is the
model's waiting URLs plus its revisits. Each host is modelled too: its robots.txt rules
(RFC 9309: 2xx parsed, 4xx allow all, 5xx or no answer retried, then disallow all; kept
``robotstxt_ttl``), its delay and its rest (``robots/politeness.py``'s rule, written out
again here): no host gets a job before its rest is over or while its rules are unknown or
expired, a URL is scheduled only if its host's rules allow it and dropped (counted) only
if they do not, a URL answered 429/503 is its host's next, and with wall-clock politeness
a host never has two jobs out.
"""

from __future__ import annotations

import math
import shutil
import tempfile
from pathlib import Path

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from bspcrawl.counters import Stats
from bspcrawl.frontier import Frontier
from bspcrawl.messages import FetchJob, FetchResult, Link
from bspcrawl.robots.politeness import BACKOFF_BASE, RETRY_STATUSES
from bspcrawl.settings import Settings
from bspcrawl.urls import host_key
from tests.machines import machine_test

HOSTS = ("a.test", "b.test", "c.test")
PATHS = ("/", "/p1", "/p2", "/p3", "/private/x", "/private/y", "/logout")
MAX_DEPTH = 3
RETRIES = 1  # politeness_retries and robotstxt_retries
TTL = 60.0  # robotstxt_ttl
MAX_BACKOFF = 10.0
URLS = st.builds(lambda h, p: f"http://{h}{p}", st.sampled_from(HOSTS), st.sampled_from(PATHS))
LINKS = st.builds(Link, URLS, st.integers(0, MAX_DEPTH + 1))
PAGE_ANSWERS = st.sampled_from([200, 200, 404, 429, 503, 0])
ROBOTS_ANSWERS = st.sampled_from([200, 200, 404, 500, 0])
ALLOW_ALL, DENY_ALL = (), ("/",)  # a host's rules: the path prefixes disallowed


def robots_txt(rules: list[str], delay: int | None) -> bytes:
    return ("User-agent: *\n" + "".join(f"Disallow: {p}\n" for p in rules)
            + (f"Crawl-delay: {delay}\n" if delay else "")).encode()


def parsed(body: bytes) -> tuple[tuple[str, ...], float]:
    """The rules and Crawl-delay of one of the robots.txt bodies drawn here."""
    lines = body.decode().splitlines()
    rules = tuple(x.split(": ")[1] for x in lines if x.startswith("Disallow"))
    delays = [float(x.split(": ")[1]) for x in lines if x.startswith("Crawl-delay")]
    return rules, delays[0] if delays else 0.0


def allowed(rules: tuple[str, ...], url: str) -> bool:
    path = "/" + url.split("/", 3)[3]
    return not any(path.startswith(prefix) for prefix in rules)


ROBOTS = st.builds(robots_txt,
                   st.lists(st.sampled_from(["/private", "/p1", "/p2", "/logout"]), max_size=2),
                   st.sampled_from([None, None, None, 1, 3]))


class FrontierMachine(RuleBasedStateMachine):
    @initialize(paced=st.booleans(), batch=st.integers(1, 6), workers=st.integers(1, 3),
                budget=st.sampled_from([0, 64, 1 << 20]))
    def start(self, paced: bool, batch: int, workers: int, budget: int) -> None:
        self.now = 100.0
        self.paced = paced
        self.settings = Settings(
            politeness_min_host_delay=1.0 if paced else 0.0,
            politeness_response_factor=0.5 if paced else 0.0,
            politeness_retries=RETRIES, politeness_max_backoff=MAX_BACKOFF,
            robotstxt_retries=RETRIES, robotstxt_ttl=TTL, crawl_max_depth=MAX_DEPTH,
            url_blacklist=[r"/logout$"], queue_batch=batch, fetch_workers=workers,
            url_strip_params="", queue_memory_budget=budget).validate()
        self.stats = Stats()
        self.dir = Path(tempfile.mkdtemp(prefix="bspcrawl-machine-"))
        self.frontier = Frontier(self.settings, self.stats, clock=lambda: self.now,
                                 backlog_dir=self.dir)
        self.full_state = None  # the last full snapshot
        self.frontier.wall = lambda: self.now
        self.seq = 0
        self.restored_at = self.drained_at = 0  # seq of the last restore and drain
        self.restored_now = 0.0  # clock of the last restore
        self.state: dict[str, str] = {}  # url -> waiting, out, done, denied, revisit
        self.fp: dict[str, int] = {}
        self.out: list[FetchJob] = []  # jobs scheduled, not answered
        self.tries: dict[str, int] = {}  # 429/503 answers of a URL not yet committed
        self.ready: dict[str, float] = {}  # host -> earliest time of its next job
        self.rules: dict[str, tuple[str, ...] | None] = {}  # host -> rules (None: unknown)
        self.until: dict[str, float] = {}  # host -> when its rules expire
        self.failures: dict[str, int] = {}  # host -> robots.txt failures in a row
        self.delay: dict[str, float] = {}  # host -> its delay
        self.retried: dict[str, list[str]] = {}  # host -> URLs answered 429/503, last on top
        self.revisit_due: dict[str, float] = {}
        self.expected = {"frontier/filtered": 0, "frontier/too_deep": 0,
                         "frontier/duplicates": 0, "frontier/robots_denied": 0,
                         "fetch/retried": 0, "robotstxt/fetched": 0}

    # ------------------------------------------------------------------ rules

    @rule(links=st.lists(LINKS, max_size=6), data=st.data(),
          seconds=st.sampled_from([0.0, 0.0, 0.5, 1.0, 2.5, 10.0, 70.0]))
    def superstep(self, links: list[Link], data: st.DataObject, seconds: float) -> None:
        """A superstep's worth of the scheduler's calls, each part maybe empty: links
        received, some jobs out answered (in any order), a schedule, time passing."""
        self.receive(links)
        self.answer_some(data)
        if data.draw(st.booleans()):
            self.schedule()
        self.now += seconds

    def receive(self, links: list[Link]) -> None:
        new = 0
        for link in links:
            if link.url in self.state:  # known: no filter looks at it again
                self.expected["frontier/duplicates"] += 1
            elif link.url.endswith("/logout"):
                self.expected["frontier/filtered"] += 1
            elif link.depth > MAX_DEPTH:
                self.expected["frontier/too_deep"] += 1
            else:
                self.state[link.url] = "waiting"
                new += 1
        assert self.frontier.receive(links) == new
        for url in self.state:
            self.fp.setdefault(url, int(self.frontier.fingerprints([url])[0]))

    def schedule(self) -> None:
        f = self.frontier
        for url, due in list(self.revisit_due.items()):
            if due <= self.now:
                del self.revisit_due[url]
                self.state[url] = "waiting"
        waiting_before = {u for u, s in self.state.items() if s == "waiting"}
        busy = {h: sum(o.host == h for o in self.out) for h in f.hosts.hosts}
        paced = {key: self.paced or d > 0 for key, d in self.delay.items()}
        robots_out = {o.host for o in self.out if o.robotstxt}
        denied_before = self.stats["frontier/robots_denied"]
        jobs = f.next_jobs(self.seq)
        assert len(jobs) <= self.settings.queue_batch
        assert [(j.seq, j.index) for j in jobs] == [(self.seq, i) for i in range(len(jobs))]
        hosts_in_schedule: list[str] = []
        for job in jobs:
            key = job.host
            assert self.now >= self.ready.get(key, 0.0), "a host served before its rest"
            assert key not in robots_out, "a job for a host whose robots.txt is out"
            if paced.get(key, self.paced):
                assert busy.get(key, 0) == 0 and key not in hosts_in_schedule, \
                    "a paced host got a second job out"
            hosts_in_schedule.append(key)
            delay = self.delay.setdefault(key, self.settings.politeness_min_host_delay)
            assert job.delay == delay, (job, delay, self.rules.get(key), self.until.get(key))
            if job.robotstxt:
                assert job.url == f"http://{key.removesuffix(':80')}/robots.txt"
                assert self.rules.get(key) is None or self.now >= self.until[key], \
                    "robots.txt fetched again while its rules are valid"
                assert job.attempt == self.failures.get(key, 0)
                self.rules[key] = None
                robots_out.add(key)
            else:
                assert host_key(job.url) == key
                assert self.state.get(job.url) == "waiting", \
                    f"{job.url} scheduled while {self.state.get(job.url)}"
                rules = self.rules.get(key)
                assert rules is not None and self.now < self.until[key], \
                    "a page scheduled while its host's rules are unknown or expired"
                assert allowed(rules, job.url), f"{job.url} scheduled against robots.txt"
                assert job.attempt == self.tries.get(job.url, 0)
                assert job.fp == self.fp[job.url]
                self.state[job.url] = "out"
            self.out.append(job)
        # the waiting URLs that left the frontier unscheduled were denied by robots.txt
        waiting = f.waiting_links()
        gone = {u for u in waiting_before if self.state[u] == "waiting"
                and self.fp[u] not in waiting}
        for url in gone:
            rules = self.rules.get(host_key(url))
            assert rules is not None and not allowed(rules, url), f"{url} dropped"
            self.state[url] = "denied"
        self.expected["frontier/robots_denied"] += len(gone)
        assert self.stats["frontier/robots_denied"] - denied_before == len(gone)
        # a URL answered 429/503 goes first: a host that got a page took it (or dropped it)
        for key, stack in self.retried.items():
            if stack and any(j.host == key and not j.robotstxt for j in jobs):
                assert self.state[stack[-1]] != "waiting", "a retried URL was passed over"
            stack[:] = [u for u in stack if self.state[u] == "waiting"]
        self.seq += 1

    def answer_some(self, data: st.DataObject) -> None:
        if not self.out:
            return
        order = data.draw(st.permutations(range(len(self.out))))
        picked = order[:data.draw(st.integers(0, len(order)))]
        for i in picked:
            self._answer(self.out[i], data)
        self.out = [o for i, o in enumerate(self.out) if i not in picked]

    def _answer(self, job: FetchJob, data: st.DataObject) -> None:
        if job.robotstxt:
            status = data.draw(ROBOTS_ANSWERS)
            body = data.draw(ROBOTS)  # a 4xx or 5xx body is no robots.txt
        else:
            status, body = data.draw(PAGE_ANSWERS), b"<html></html>"
        retry_after = data.draw(st.sampled_from([None, 0.0, 2.0]))
        elapsed = data.draw(st.sampled_from([0.0, 0.1, 4.0]))
        self._done(job, status, body, retry_after, elapsed)

    @precondition(lambda self: any(s == "done" for s in self.state.values()))
    @rule(data=st.data())
    def revisit(self, data: st.DataObject) -> None:
        url = data.draw(st.sampled_from(sorted(u for u, s in self.state.items() if s == "done")))
        after = data.draw(st.sampled_from([0.0, 1.0, 30.0]))
        self.frontier.revisit_later(Link(url), self.fp[url], self.now + after)
        self.state[url] = "revisit"
        self.revisit_due[url] = self.now + after

    @precondition(lambda self: self.out and self.seq - self.restored_at >= 4)
    @rule(full=st.booleans())
    def checkpoint_and_restore(self, full: bool) -> None:
        """What a resumed crawl does: snapshot with the jobs out (the window is lost),
        restore into a new frontier; pages out are to be fetched again, robots.txt too.
        An incremental state is completed by the last full one, as ``checkpoint.read``
        does."""
        old = self.frontier
        state = old.state(list(self.out), full)
        if state.intake.seen is not None:
            self.full_state = state
        else:
            state = state.over(self.full_state)
        self.stats = Stats()
        self.stats.restore(old.stats.totals())
        self.frontier = Frontier(self.settings, self.stats, clock=lambda: self.now,
                                 backlog_dir=self.dir)
        self.frontier.wall = lambda: self.now
        self.frontier.restore([state], lambda key: True)
        assert self.frontier.seen.to_array().tolist() == old.seen.to_array().tolist()
        assert self.frontier.hosts.retries == old.hosts.retries
        for o in self.out:
            if not o.robotstxt:
                self.state[o.url] = "waiting"
        self.out = []
        self.restored_at, self.restored_now = self.seq, self.now
        self.retried = {}  # every URL is back in the CBT
        for key, rules in self.rules.items():
            if rules is None:  # until its robots.txt is parsed again: --min-host-delay
                self.delay[key] = self.settings.politeness_min_host_delay

    @precondition(lambda self: self.seq - self.drained_at >= 12)
    @rule(data=st.data())
    def drain(self, data: st.DataObject) -> None:
        """Answer everything (pages 200, robots.txt as drawn) until nothing waits: no URL
        is stuck."""
        for _ in range(300):
            for out in self.out:
                if out.robotstxt:
                    status = data.draw(ROBOTS_ANSWERS)
                    body = data.draw(ROBOTS)  # a 4xx or 5xx body is no robots.txt
                    self._done(out, status, body, None, 0.0)
                else:
                    self._done(out, 200, b"", None, 0.0)
            self.out = []
            if not len(self.frontier):
                break
            before = self.seq
            self.schedule()
            if len(self.out) == 0 and self.seq == before + 1:
                ready = self.frontier.next_ready()
                self.now = max(self.now, ready if ready < math.inf else self.now + 1.0)
        assert not len(self.frontier) and not self.out, "URLs stuck in the frontier"
        assert all(s in ("done", "denied") for s in self.state.values())
        self.drained_at = self.seq

    # ------------------------------------------------------------- the model

    def _done(self, job: FetchJob, status: int, body: bytes, retry_after: float | None,
              elapsed: float) -> None:
        result = FetchResult(job, status=status, error="" if status else "timeout", body=body,
                             ended=self.now, elapsed=elapsed, retry_after=retry_after)
        committed = self.frontier.done(result)
        key, s = job.host, self.settings
        rest = max(job.delay, s.politeness_response_factor * elapsed)
        if status in RETRY_STATUSES or job.robotstxt and not 200 <= status < 500:
            hint = BACKOFF_BASE * 2 ** job.attempt if retry_after is None else retry_after
            rest = max(rest, min(hint, MAX_BACKOFF))
        if rest:
            self.ready[key] = max(self.ready.get(key, 0.0), self.now + rest)
        if job.robotstxt:
            assert committed is False
            self.expected["robotstxt/fetched"] += 1
            if 200 <= status < 500:
                self.failures[key] = 0
                rules, crawl_delay = parsed(body) if status < 300 else (ALLOW_ALL, 0.0)
            else:
                self.failures[key] = self.failures.get(key, 0) + 1
                if self.failures[key] <= s.robotstxt_retries:
                    return
                rules, crawl_delay = DENY_ALL, 0.0
            self.rules[key], self.until[key] = rules, self.now + TTL
            self.delay[key] = max(s.politeness_min_host_delay, crawl_delay)
            return
        tries = self.tries.pop(job.url, 0) + 1
        if status in RETRY_STATUSES and tries <= RETRIES:
            assert committed is False, "a 429/503 with retries left was committed"
            self.tries[job.url] = tries
            self.expected["fetch/retried"] += 1
            self.state[job.url] = "waiting"
            self.retried.setdefault(key, []).append(job.url)
        else:
            assert committed is True
            self.state[job.url] = "done"

    def teardown(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)

    @invariant()
    def consistent(self) -> None:
        f = self.frontier
        f._check()
        waiting = {self.fp[u] for u, s in self.state.items() if s == "waiting"}
        revisits = sum(s == "revisit" for s in self.state.values())
        assert set(f.waiting_links()) == waiting
        assert len(f) == len(waiting) + revisits
        assert sorted(set(self.fp[u] for u in self.state)) == f.seen.to_array().tolist()
        for name, value in self.expected.items():
            assert self.stats[name] == value, name
        for key, host in f.hosts.hosts.items():
            assert host.outstanding == sum(o.host == key for o in self.out)
            if self.paced:
                assert host.outstanding <= 1
            # and it rests no longer than the rule says (a restore may round up to now)
            assert host.ready_at <= max(self.ready.get(key, 0.0), self.restored_now)


TestFrontierMachine = machine_test(FrontierMachine, 120, 50)


def test_a_restored_host_keeps_the_min_host_delay(tmp_path):
    now = 0.0
    settings = Settings(politeness_min_host_delay=1.0).validate()
    f = Frontier(settings, clock=lambda: now, backlog_dir=tmp_path)
    f.receive([Link("http://a.test/x")])
    (robots,) = f.next_jobs(0)
    assert robots.delay == 1.0
    # checkpointed with robots.txt out
    restored = Frontier(settings, clock=lambda: now, backlog_dir=tmp_path)
    restored.restore([f.state([])], lambda key: True)
    (again,) = restored.next_jobs(1)
    assert again.robotstxt and again.delay == 1.0  # so the host rests 1 s after it
