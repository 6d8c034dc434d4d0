"""The frontier's scheduling rules, driven directly with fake fetch results."""

import dataclasses
import json
import random
import re
import time

import numpy as np
import pytest

from bspcrawl import checkpoint
from bspcrawl.frontier import Frontier
from bspcrawl.messages import FetchResult, Link
from bspcrawl.partition import Directory, host_pair
from bspcrawl.settings import Settings
from bspcrawl.urls import TRACKING_PARAMS, strip_params

UNPACED = {"politeness_min_host_delay": 0.0, "politeness_response_factor": 0.0}


def frontier(backlog_dir=None, **kw):
    return Frontier(Settings(**{**UNPACED, **kw}).validate(), clock=lambda: 0.0,
                    backlog_dir=backlog_dir)


def answer(f, jobs, status=200, body=b"", **extra):
    """Commit results for jobs; returns the done() verdicts."""
    return [f.done(FetchResult(j, status=status, body=body, ended=0.0, **extra)) for j in jobs]


def urls(jobs):
    return [j.url for j in jobs]


def test_robots_first_then_one_job_per_host_per_schedule():
    f = frontier(fetch_workers=2)
    f.receive([Link(f"http://a.test/{i}") for i in range(5)] + [Link("http://b.test/0")]
              + [Link(f"http://c.test/{i}") for i in range(2)])
    first = f.next_jobs(0)
    assert {(j.url, j.robotstxt) for j in first} == {(f"http://{h}.test/robots.txt", True)
                                                  for h in "abc"}
    assert f.next_jobs(1) == []  # URLs wait for their robots.txt
    answer(f, first, status=404)
    second, third = f.next_jobs(2), f.next_jobs(3)
    assert sorted(j.host for j in second) == ["a.test:80", "b.test:80", "c.test:80"]
    # unpaced: again, while one is in flight
    assert sorted(j.host for j in third) == ["a.test:80", "c.test:80"]
    assert len(f) == 3


def test_with_fewer_hosts_than_workers_each_fills_its_part_of_the_schedule():
    f = frontier(fetch_workers=8, queue_batch=10)
    f.receive([Link(f"http://a.test/{i}") for i in range(9)] + [Link("http://b.test/0")])
    answer(f, f.next_jobs(0), status=404)
    jobs = f.next_jobs(1)  # 2 hosts < 8 workers: up to 10 // 2 jobs each, in one schedule
    a = [j.url for j in jobs if j.host == "a.test:80"]
    assert len(set(a)) == 5 and set(a) <= {f"http://a.test/{i}" for i in range(9)}
    assert [j.url for j in jobs if j.host == "b.test:80"] == ["http://b.test/0"]


def test_unpaced_hosts_with_long_queues_get_jobs_in_proportion():
    # 4 hosts served with 1 robot: at most 4 jobs each; a's queue (39 after its first job)
    # is about 4x the mean (10.5), the others' below it
    for paced, expected in ((False, {"a": 4, "b": 1, "c": 1, "d": 1}),
                            (True, {"a": 1, "b": 1, "c": 1, "d": 1})):
        f = frontier(fetch_workers=1, politeness_min_host_delay=1.0 if paced else 0.0)
        f.receive([Link(f"http://a.test/{i}") for i in range(40)]
                  + [Link(f"http://{h}.test/{i}") for h in "bcd" for i in range(2)])
        answer(f, f.next_jobs(0, now=0.0), status=404)  # a paced host rests 1 s after it
        jobs = f.next_jobs(1, now=1.0)
        assert {h: sum(j.host == f"{h}.test:80" for j in jobs) for h in "abcd"} == expected
        assert len({j.url for j in jobs}) == len(jobs)
        assert [j.index for j in jobs] == list(range(len(jobs)))
    f = frontier(fetch_workers=2)  # 4 hosts, 2 robots: at most 2 jobs each
    f.receive([Link(f"http://{h}.test/{i}") for h in "abcd" for i in range(40 if h == "a" else 2)])
    answer(f, f.next_jobs(0), status=404)
    assert sum(j.host == "a.test:80" for j in f.next_jobs(1)) == 2


def test_disallowed_urls_are_dropped_and_counted():
    f = frontier()
    f.receive([Link("http://a.test/private/x"), Link("http://a.test/ok")])
    answer(f, f.next_jobs(0), body=b"User-agent: *\nDisallow: /private/\n")
    assert urls(f.next_jobs(1) + f.next_jobs(2)) == ["http://a.test/ok"]
    assert f.stats["frontier/robots_denied"] == 1 and len(f) == 0


def test_a_paced_host_gets_one_job_at_a_time_and_rests():
    f = Frontier(Settings(politeness_min_host_delay=10.0).validate(), clock=lambda: 0.0)
    f.receive([Link("http://a.test/1"), Link("http://a.test/2")])
    answer(f, f.next_jobs(0, now=0.0), status=404)
    assert f.next_jobs(1, now=5.0) == []  # the robots.txt request counts: resting until 10
    (job,) = f.next_jobs(1, now=10.0)
    assert f.next_jobs(2, now=10.0) == []  # one at a time
    f.done(FetchResult(job, status=200, ended=100.0, elapsed=0.5))
    assert f.next_jobs(3, now=105.0) == []  # resting until 110
    (last,) = f.next_jobs(4, now=110.0)
    assert {job.url, last.url} == {"http://a.test/1", "http://a.test/2"}


def test_tracking_and_session_parameters_do_not_make_a_url_new():
    f = frontier()
    new = f.receive([Link("http://a.test/p?id=1"), Link("http://a.test/p?id=1&utm_source=x"),
                     Link("http://a.test/p?sid=77&id=1"), Link("http://a.test/p;jsessionid=Q?id=1"),
                     Link("http://a.test/p?id=2")])
    assert new == 2 and f.stats["frontier/duplicates"] == 3


def test_filters_length_blacklist_depth_and_host_cap():
    f = frontier(url_max_length=40, url_blacklist=[r"/logout", r"\.pdf$"], crawl_max_depth=2,
                 crawl_max_host_pages=2)
    new = f.receive([Link("http://a.test/" + "x" * 40), Link("http://a.test/logout"),
                     Link("http://a.test/f.pdf"), Link("http://a.test/deep", depth=3)]
                    + [Link(f"http://a.test/{i}") for i in range(4)])
    assert new == 2 and f.stats["frontier/filtered"] == 3
    assert f.stats["frontier/too_deep"] == 1
    assert f.stats["frontier/host_cap"] == 2  # counted as the URLs arrive: memory bounded
    assert len(f) == 2 and len(f.seen) == 2
    f.receive([Link("http://a.test/0"), Link("http://b.test/0")])  # seen, another host
    assert f.stats["frontier/duplicates"] == 1 and f.stats["frontier/host_cap"] == 2
    answer(f, f.next_jobs(0), status=404)
    taken = [j for seq in range(1, 6) for j in f.next_jobs(seq)]
    assert len(taken) == 3


def test_host_budget_survives_a_checkpoint(tmp_path):
    f = frontier(tmp_path, crawl_max_host_pages=2)
    f.receive([Link("http://a.test/0"), Link("http://a.test/1")])
    g = frontier(tmp_path, crawl_max_host_pages=2)
    g.restore([f.state([])], lambda key: True)
    assert g.receive([Link("http://a.test/2")]) == 0 and g.stats["frontier/host_cap"] == 1


def test_a_429_puts_the_url_back_and_its_final_answer_is_committed():
    f = frontier(politeness_retries=1)
    f.receive([Link("http://a.test/busy")])
    answer(f, f.next_jobs(0), status=404)
    (job,) = f.next_jobs(1)
    assert answer(f, [job], status=429, retry_after=0.0) == [False]
    (again,) = f.next_jobs(2, now=time.monotonic() + 1)
    assert again.url == job.url
    assert answer(f, [again], status=429) == [True]  # retries used up: commit the 429
    assert f.hosts.retries == {}


def test_strip_params_keeps_everything_else():
    pat = re.compile(TRACKING_PARAMS, re.I)
    assert strip_params("http://a.test/x?b=2&a=1", pat) == "http://a.test/x?b=2&a=1"
    assert strip_params("http://a.test/x?UTM_Medium=e", pat) == "http://a.test/x"
    assert strip_params("http://a.test/x;v=1;sessionid=9", pat) == "http://a.test/x;v=1"
    assert strip_params("http://a.test/x?page=2&q=s", pat) == "http://a.test/x?page=2&q=s"
    assert strip_params("http://a.test/x?utm_a=1", None) == "http://a.test/x?utm_a=1"


def test_a_robots_txt_of_any_bytes_survives_a_checkpoint(tmp_path):
    # regression (issue 14): a robots.txt in UTF-16 (NUL bytes) made the checkpoint raise
    # in h5py (variable-length strings cannot hold NUL): the crawl died, and its resume too
    f = frontier(tmp_path)
    f.receive([Link("http://a.test/x"), Link("http://a.test/ok"), Link("http://b.test/y"),
               Link("http://b.test/deep", 40_000, 3)])  # depth past int16 (issue 14)
    utf16 = "User-agent: *\nDisallow: /x\n".encode("utf-16")
    jobs = f.next_jobs(0)
    for job in jobs:
        body = utf16 if job.host == "a.test:80" else b"\x00\xff\x00junk"
        f.done(FetchResult(job, status=200, body=body, ended=0.0))
    state = checkpoint.RankState.of(f.state([]), Directory(1).state(), [], [])
    checkpoint.write(tmp_path, 0, 5, state, {})
    state, _ = checkpoint.read(tmp_path, 0, 5)
    g = frontier(tmp_path)
    g.restore([state.frontier], lambda key: True)
    f_hosts, g_hosts = f.hosts.hosts, g.hosts.hosts
    assert {k: h.robots_txt for k, h in g_hosts.items()} == {
        k: h.robots_txt for k, h in f_hosts.items()}
    for key in f_hosts:  # the same rules, whatever bytes the robots.txt held
        assert [g_hosts[key].rules.allowed(f"http://{key}/{p}") for p in ("x", "ok")] == [
            f_hosts[key].rules.allowed(f"http://{key}/{p}") for p in ("x", "ok")]
    assert sorted((x.url, x.depth, x.hops) for x in g.waiting_links().values()) == sorted(
        (x.url, x.depth, x.hops) for x in f.waiting_links().values())
    g._check()


def test_a_host_at_a_refused_address_has_its_urls_fetched_as_blocked_not_denied():
    # regression (issue 14): a private host's robots.txt failed as blocked_address, was
    # retried, then disallowed everything: its URLs vanished as frontier/robots_denied
    f = frontier()
    f.receive([Link("http://10.0.0.1/a"), Link("http://10.0.0.1/b")])
    (robots,) = f.next_jobs(0)
    assert f.done(FetchResult(robots, error="blocked_address", ended=0.0)) is False
    assert f.hosts.hosts["10.0.0.1:80"].ready_at == 0.0  # no backoff: it would be refused again
    jobs = f.next_jobs(1) + f.next_jobs(2)
    assert sorted(j.url for j in jobs) == ["http://10.0.0.1/a", "http://10.0.0.1/b"]
    assert f.stats["frontier/robots_denied"] == 0 and f.stats["robotstxt/errors"] == 0


def test_robots_txt_applies_to_its_own_scheme_host_and_port():
    # RFC 9309 2.3: the rules of http://a.test/robots.txt bind http://a.test:80 only
    f = frontier()
    f.receive([Link("http://a.test/x"), Link("https://a.test/y"), Link("http://a.test:8080/z")])
    jobs = f.next_jobs(0)
    assert sorted(j.url for j in jobs) == ["http://a.test/robots.txt",
                                           "http://a.test:8080/robots.txt",
                                           "https://a.test/robots.txt"]
    for job in jobs:
        body = b"User-agent: *\nDisallow: /\n" if job.url == "http://a.test/robots.txt" else b""
        f.done(FetchResult(job, status=200, body=body, ended=0.0))
    assert sorted(j.url for j in f.next_jobs(1)) == ["http://a.test:8080/z", "https://a.test/y"]
    assert f.stats["frontier/robots_denied"] == 1


def test_trap_shaped_paths_are_dropped_on_arrival():
    # issue 14: a default crawl of an ever-deeper trap never ended
    f = frontier()
    new = f.receive([Link("http://a.test/x/x/x/"), Link("http://a.test/" + "d/" * 41),
                     Link("http://a.test/a/b/")])
    assert new == 1 and f.stats["frontier/trap_path"] == 2


def test_a_url_twice_in_one_batch_is_taken_once_unless_the_first_was_filtered():
    f = frontier(crawl_max_depth=2)
    new = f.receive([Link("http://a.test/x", depth=3), Link("http://a.test/x", depth=1),
                     Link("http://a.test/x", depth=0), Link("http://a.test/y")])
    assert new == 2 and f.stats["frontier/too_deep"] == 1
    assert f.stats["frontier/duplicates"] == 1
    assert f.waiting_links()[int(f.fingerprints(["http://a.test/x"])[0])].depth == 1
    assert f.receive([Link("http://a.test/y"), Link("http://a.test/x")]) == 0
    assert f.stats["frontier/duplicates"] == 3 and len(f.seen) == 2


def same(a, b):
    """Are two checkpoint states equal, field by field?"""
    if dataclasses.is_dataclass(a):
        return type(a) is type(b) and all(same(getattr(a, f.name), getattr(b, f.name))
                                          for f in dataclasses.fields(a))
    if isinstance(a, np.ndarray):
        return a.dtype.kind == np.asarray(b).dtype.kind and a.tolist() == b.tolist()
    return a == b


def test_every_part_state_survives_its_file_and_a_restore(tmp_path):
    """A seeded stream of links, answers (robots.txt of any bytes, 429s), revisits and
    budgets; each part's state written and read back is the same, and a frontier restored
    from it gives the same state again."""
    rng = random.Random(5)
    f = frontier(checkpoint.frontier_dir(tmp_path, 0), queue_batch=4,
                 crawl_max_host_pages=30, crawl_max_domain_pages=60,
                 queue_memory_budget=256, politeness_retries=2)
    for seq in range(30):
        f.receive([Link(f"http://h{rng.randrange(6)}.test/{rng.randrange(200)}",
                        rng.randrange(3), rng.randrange(2), "anchor") for _ in range(12)])
        for job in f.next_jobs(seq):
            body = rng.choice([b"", b"\x00\xffUser-agent: *\nDisallow: /1\n"])
            status = rng.choice([200, 200, 404, 429]) if not job.robotstxt else 200
            if f.done(FetchResult(job, status=status, body=body, ended=0.0)) and status == 200:
                f.revisit_later(Link(job.url, job.depth, job.hops), job.fp, 50.0 + seq)
    directory = Directory(2)
    directory.assign(host_pair(f"h{i}.test:80") for i in range(6))
    held = [Link("http://new.test/", 2, 1, "the manual")]
    state = checkpoint.RankState.of(f.state([]), directory.state(), [], held)
    assert len(state.frontier.revisits.left) and len(state.frontier.hosts.retry_fp)
    checkpoint.write(tmp_path, 0, 3, state, {"base": 3})
    back, attrs = checkpoint.read(tmp_path, 0, 3)
    assert attrs == {"base": 3} and same(back, state) and back.links("held") == held
    assert Directory.from_state(back.directory, 2).owners == directory.owners
    g = frontier(checkpoint.frontier_dir(tmp_path, 0), queue_batch=4, crawl_max_host_pages=30,
                 crawl_max_domain_pages=60)
    g.restore([back.frontier], lambda key: True)
    g._check()
    assert g.waiting_links() == f.waiting_links()
    again, now = g.state([]), f.state([])
    # (but the journal and backlog, which go on in new segments, and the wall clock)
    again.intake.journal_base, again.intake.journal_end = (now.intake.journal_base,
                                                           now.intake.journal_end)
    again.queue.backlog, again.hosts.wall = now.queue.backlog, now.hosts.wall
    assert same(again, now)


def test_a_checkpoint_of_an_older_bspcrawl_is_refused_clearly(tmp_path):
    (tmp_path / "checkpoint").mkdir()
    (tmp_path / "checkpoint" / "checkpoint.json").write_text(json.dumps(
        {"format": "bspcrawl-checkpoint", "superstep": 4, "ranks": 1}))
    with pytest.raises(checkpoint.CheckpointError, match="of an older bspcrawl"):
        checkpoint.latest(tmp_path)
