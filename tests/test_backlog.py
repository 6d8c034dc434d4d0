"""The backlog (bspcrawl.backlog): per-priority logs of records, in RAM up to a budget and in
segment files past it; and the frontier over it, whose scheduling must not depend on the
budget, and whose incremental snapshots must restore what full ones do."""

import random

import numpy as np
import pytest

from bspcrawl import backlog, checkpoint, journal
from bspcrawl.backlog import Backlog, record
from bspcrawl.frontier import Frontier
from bspcrawl.messages import FetchResult, Link
from bspcrawl.partition import Directory
from bspcrawl.settings import Settings

UNPACED = {"politeness_min_host_delay": 0.0, "politeness_response_factor": 0.0}


@pytest.fixture
def small_segments(monkeypatch):
    monkeypatch.setattr(backlog, "SEGMENT_BYTES", 200)
    monkeypatch.setattr(backlog, "CHUNK", 64)  # records longer than a chunk too


def links(n, start=0):
    return [(i, Link(f"http://h{i % 3}.test/{'x' * (i % 50)}/{i}", i % 4, i % 2))
            for i in range(start, start + n)]


def test_a_queue_is_first_in_first_out_across_segments_and_spills(tmp_path, small_segments):
    b = Backlog(tmp_path, memory=100)
    got = []
    for n in (7, 1, 30, 0, 12):
        b.put(-1.0, [record(fp, x) for fp, x in links(n, len(got) + len(b))])
        assert b.ram <= 100  # past the budget, the tails went to files
        got += b.take(-1.0, 5)
        b._check()
    got += b.take(-1.0, 1000)
    assert got == links(50)
    assert b.ram == 0 and not list(tmp_path.iterdir())  # read whole: every file deleted


def test_files_a_checkpoint_names_are_kept_and_a_resume_reads_them_as_they_were(
        tmp_path, small_segments):
    b = Backlog(tmp_path, memory=0)
    b.put(-1.0, [record(fp, x) for fp, x in links(20)])
    b.put(-2.0, [record(fp, x) for fp, x in links(3, 100)])
    first = b.take(-1.0, 4)
    marks = b.state()
    b.pinned = marks.files()
    b.take(-1.0, 10)
    b.put(-1.0, [record(fp, x) for fp, x in links(5, 200)])  # after the checkpoint
    b.put(-3.0, [record(fp, x) for fp, x in links(5, 300)])
    assert marks.files() <= {p.name for p in tmp_path.iterdir()}
    for _ in range(2):  # a resume from the checkpoint, killed, again
        again = Backlog(tmp_path, memory=0)
        again.start_after_existing()
        for prio, fp, x in backlog.replay(tmp_path, marks):
            again.put(prio, [record(fp, x)])
        again._check()
        assert again.waiting() == {-1.0: 16, -2.0: 3}
        assert first + again.take(-1.0, 100) == links(20)
        assert again.take(-2.0, 100) == links(3, 100)


def crawl_jobs(budget, tmp_path, steps=40, seed=3):
    """The jobs a frontier schedules for a seeded stream of links and answers."""
    f = Frontier(Settings(**UNPACED, queue_batch=7, queue_memory_budget=budget).validate(),
                 clock=lambda: 0.0, backlog_dir=tmp_path)
    rng = random.Random(seed)
    out, spilled = [], 0
    for seq in range(steps):
        f.receive([Link(f"http://h{rng.randrange(9)}.test/{rng.randrange(400)}",
                        rng.randrange(4)) for _ in range(30)])
        spilled = max(spilled, len(list(tmp_path.glob("q*.seg"))))
        jobs = f.next_jobs(seq)
        out += [(j.url, j.depth, j.fp, j.robotstxt) for j in jobs]
        for j in jobs:
            f.done(FetchResult(j, status=404 if j.robotstxt else 200, ended=0.0))
        f._check()
    return out, spilled


def test_the_budget_changes_where_urls_wait_never_what_is_scheduled_or_when(tmp_path):
    big, spilled_big = crawl_jobs(1 << 30, tmp_path / "big")
    tiny, spilled_tiny = crawl_jobs(0, tmp_path / "tiny")
    assert spilled_big == 0 and spilled_tiny > 0
    assert tiny == big and len(big) > 200


def frontier_at(tmp_path, steps, snapshots):
    """A frontier after ``steps`` schedules of a seeded stream; ``snapshots[k]`` (full or
    not) taken after schedule k."""
    f = Frontier(Settings(**UNPACED, queue_batch=5, queue_memory_budget=64).validate(),
                 clock=lambda: 0.0, backlog_dir=tmp_path)
    rng = random.Random(7)
    states = {}
    for seq in range(steps):
        f.receive([Link(f"http://h{rng.randrange(5)}.test/{rng.randrange(10**6)}",
                        rng.randrange(3)) for _ in range(40)])
        for j in f.next_jobs(seq):
            f.done(FetchResult(j, status=404 if j.robotstxt else 200, ended=0.0))
        if seq in snapshots:
            states[seq] = f.state([], full=snapshots[seq])
    return f, states


def resumed(tmp_path, state):
    g = Frontier(Settings(**UNPACED, queue_batch=5).validate(), clock=lambda: 0.0,
                 backlog_dir=tmp_path)
    g.restore([state], lambda key: True)
    g._check()
    return g


def schedule(f, start, n=30):
    out = []
    for seq in range(start, start + n):
        jobs = f.next_jobs(seq)
        out += [(j.url, j.robotstxt) for j in jobs]
        for j in jobs:
            f.done(FetchResult(j, status=404 if j.robotstxt else 200, ended=0.0))
    return out


def test_an_incremental_chain_resumes_as_a_full_checkpoint_and_a_kill_loses_nothing(tmp_path):
    chain, states = frontier_at(tmp_path / "chain", 25, {5: True, 12: False, 20: False})
    assert states[20].intake.seen is None and states[12].intake.seen is None
    _, full = frontier_at(tmp_path / "full", 21, {20: True})
    assert len(chain.seen) > len(states[5].intake.seen)
    waiting = chain.waiting_links()  # (what was accepted after 20 is lost with the kill)
    state = states[20].over(states[5])  # as checkpoint.read gives it
    g, h = resumed(tmp_path / "chain", state), resumed(tmp_path / "full", full[20])
    assert np.array_equal(g.seen.to_array(), h.seen.to_array())
    assert g.waiting_links() == h.waiting_links()
    assert len(waiting) > len(g.waiting_links()) > 0
    assert schedule(g, 100) == schedule(h, 100)


def test_a_checkpoint_whose_backlog_file_is_gone_is_unreadable_not_a_crash(tmp_path):
    f, states = frontier_at(checkpoint.frontier_dir(tmp_path, 0), 6, {5: True})
    state = checkpoint.RankState.of(states[5], Directory(1).state(), [], [])
    checkpoint.write(tmp_path, 0, 5, state, {"base": 5})
    assert checkpoint.read(tmp_path, 0, 5)[0].frontier.queue.backlog.count.sum() > 0
    victim = sorted(states[5].queue.backlog.files())[0]
    (checkpoint.frontier_dir(tmp_path, 0) / victim).unlink()
    with pytest.raises(checkpoint.CheckpointError, match=f"refers to .*{victim}, which is"):
        checkpoint.read(tmp_path, 0, 5)


def test_an_incremental_snapshot_writes_only_the_hosts_changed_since_the_full_one(tmp_path):
    f = Frontier(Settings(**UNPACED).validate(), clock=lambda: 0.0, backlog_dir=tmp_path)
    f.receive([Link("http://a.test/1"), Link("http://b.test/1"), Link("http://b.test/2")])
    for j in f.next_jobs(0):  # robots.txt: a's disallows /x, b's is missing
        body = b"User-agent: *\nDisallow: /x\n" if j.host == "a.test:80" else b""
        f.done(FetchResult(j, status=200 if j.host == "a.test:80" else 404, body=body))
    full = f.state([])
    f.receive([Link("http://a.test/x"), Link("http://a.test/2")])
    for j in f.next_jobs(1):
        if j.host == "a.test:80":
            f.done(FetchResult(j, status=200))
    delta = f.state([], full=False)
    assert delta.hosts.key.tolist() == ["a.test:80"] and len(full.hosts.key) == 2
    g = resumed(tmp_path, delta.over(full))
    hosts = g.hosts.hosts
    assert sorted(hosts) == ["a.test:80", "b.test:80"]
    assert not hosts["a.test:80"].rules.allowed("http://a.test/x")
    assert hosts["b.test:80"].rules.allowed("http://b.test/x")
    assert g.waiting_links() == f.waiting_links()


def test_retention_keeps_what_the_last_two_checkpoints_name_and_deletes_the_rest(
        tmp_path, small_segments, monkeypatch):
    monkeypatch.setattr(journal, "TAIL_BYTES", 8)  # the journal in its files at once
    f = Frontier(Settings(**UNPACED, queue_batch=5, queue_memory_budget=0).validate(),
                 clock=lambda: 0.0, backlog_dir=checkpoint.frontier_dir(tmp_path, 0))
    retention = checkpoint.Retention(tmp_path, 0, f.queue.backlog)
    rng = random.Random(3)
    kept = []
    for k in range(1, 9):
        for seq in range(3):
            f.receive([Link(f"http://h{rng.randrange(5)}.test/{rng.randrange(10**6)}",
                            rng.randrange(3)) for _ in range(20)])
            for j in f.next_jobs(10 * k + seq):
                f.done(FetchResult(j, status=404 if j.robotstxt else 200, ended=0.0))
        state = f.state([], full=k % 3 == 1)
        base = retention.base_of(k, state)
        checkpoint.write(tmp_path, 0, k, checkpoint.RankState.of(
            state, Directory(1).state(), [], []), {"base": base})
        retention.keep(k, state, base)
        kept = (kept + [(k, base)])[-2:]
        for step, _ in kept:  # every kept checkpoint is whole
            checkpoint.read(tmp_path, 0, step)
    files = {p.name for p in checkpoint.frontier_dir(tmp_path, 0).iterdir()}
    needed = set().union(*(checkpoint.needs(checkpoint.read(tmp_path, 0, k)[0].frontier)
                           for k, _ in kept))
    assert files == needed | (f.queue.backlog.live() & files)
    assert {int(p.stem.split("-")[2]) for p in (tmp_path / "checkpoint").glob("*.h5")} == {
        step for pair in kept for step in pair}
