"""The superstep's collectives on one rank (``MPI.COMM_SELF`` and a duplicate of it), no
mpiexec: what a rank sends itself comes back byte for byte, counts and sums included."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mpi4py import MPI

from bspcrawl import bsp
from bspcrawl.counters import SYNCED, Stats, synced
from bspcrawl.messages import Link
from bspcrawl.partition import Directory, host_pair, pack, unpack
from bspcrawl.urls import host_hash, host_key

LINKS = [
    Link("http://a.test/"),
    Link("http://b.test:8080/p?q=1&r=2", depth=3, hops=2),
    Link("http://c.test/東京/café?x=ü", depth=1),  # non-ASCII: more bytes than characters
    Link("https://a.test/" + "x" * 70_000, depth=12, hops=5),  # longer than any socket buffer
    Link("http://d.test/%E2%82%AC"),
]


@pytest.fixture(params=["self", "dup"])
def comm(request):
    """COMM_SELF, and a duplicate of it (its own context: another communicator works)."""
    if request.param == "self":
        yield MPI.COMM_SELF
    else:
        dup = MPI.COMM_SELF.Dup()
        yield dup
        dup.Free()


def counters(**values: int) -> np.ndarray:
    stats = Stats()
    for name, value in values.items():
        stats[name] = value
    return stats.vector()


def test_sync_returns_counts_hosts_and_the_counters_of_the_one_rank(comm):
    vector = counters(**{"pages/committed": 7, "frontier/size": 123456789012,
                         "window/unreleased": 3, "exchange/undelivered": 1})
    agreed = bsp.sync(comm, np.array([42], np.int64), 5, vector)
    assert agreed.recv_counts.tolist() == [42]
    assert agreed.found.tolist() == [5]
    assert agreed.any_sent
    assert agreed.totals.tolist() == vector.tolist()  # a rank with itself: its own vector
    got = synced(agreed.totals)
    assert got["pages/committed"] == 7 and got["frontier/size"] == 123456789012
    assert list(got) == list(SYNCED)


def test_sync_without_links_sends_nothing(comm):
    agreed = bsp.sync(comm, np.zeros(1, np.int64), 0, counters())
    assert not agreed.any_sent
    assert agreed.recv_counts.tolist() == [0] and agreed.found.tolist() == [0]
    assert agreed.totals.tolist() == [0] * len(SYNCED)


def test_announce_returns_the_hosts_found(comm):
    hosts = np.array([host_hash(host_key(x.url)) for x in LINKS], np.int64)
    got = bsp.announce(comm, hosts, np.array([len(hosts)], np.int64))
    assert got.dtype == np.int64
    assert got.tolist() == hosts.tolist()


def test_announce_of_no_host_is_empty_and_calls_no_collective():
    class NoCollective:
        def __getattr__(self, name):
            raise AssertionError(f"announce called comm.{name} with no host to announce")

    got = bsp.announce(NoCollective(), np.zeros(0, np.int64), np.array([0], np.int64))
    assert got.dtype == np.int64 and got.shape == (0,)


@pytest.mark.parametrize("links", [LINKS, [], [Link("http://é.test/ß")], LINKS[3:4]],
                         ids=["mixed", "none", "idn", "long"])
def test_exchange_delivers_the_packed_bytes_and_unpack_gives_the_links_back(comm, links):
    buf, counts = pack([links])
    assert counts.tolist() == [sum(len(f"{x.depth} {x.hops} {x.url}\n".encode())
                                   for x in links)]  # bytes, not characters
    agreed = bsp.sync(comm, counts, 0, counters())
    assert agreed.any_sent == bool(links)
    got = bsp.exchange(comm, buf, counts, agreed.recv_counts)
    assert got.dtype == np.uint8
    assert got.tobytes() == buf.tobytes()
    assert unpack(got, agreed.recv_counts) == links


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(
    st.text(st.characters(blacklist_categories=("Cs", "Zl", "Zp", "Cc")), max_size=40),
    st.integers(0, 300), st.integers(0, 9)), max_size=20))
def test_any_batch_survives_the_exchange(items):
    links = [Link(f"http://h{i % 3}.test/{path.replace(' ', '%20')}", depth, hops)
             for i, (path, depth, hops) in enumerate(items)]
    buf, counts = pack([links])
    got = bsp.exchange(MPI.COMM_SELF, buf, counts, counts.copy())
    assert unpack(got, counts) == links


def test_wait_on_a_complete_request_returns_without_sleeping(monkeypatch):
    req = MPI.COMM_SELF.Ibarrier()
    req.Wait()

    def no_sleep(seconds):
        raise AssertionError("wait slept on a request already complete")

    monkeypatch.setattr(bsp.time, "sleep", no_sleep)
    bsp.wait([req])
    bsp.wait([])


def test_wait_polls_with_a_growing_capped_backoff(monkeypatch):
    greq = MPI.Grequest.Start(lambda status: None, lambda: None, lambda completed: None)
    slept: list[float] = []

    def sleep(seconds):
        slept.append(seconds)
        if len(slept) == 12:
            greq.Complete()

    monkeypatch.setattr(bsp.time, "sleep", sleep)
    bsp.wait([greq])
    assert len(slept) == 12, "wait returned before the request completed"
    assert slept[0] == 0.0 and slept[1] == bsp.POLL_MIN
    assert all(b == min(bsp.POLL_MAX, 2 * a) for a, b in zip(slept[1:], slept[2:], strict=False))
    assert max(slept) == bsp.POLL_MAX


def test_barrier_returns(comm, monkeypatch):
    slept = []
    monkeypatch.setattr(bsp.time, "sleep", slept.append)
    for _ in range(3):
        bsp.barrier(comm)
    assert all(s <= bsp.POLL_MAX for s in slept)  # polls, never one long sleep


def test_a_superstep_delivers_the_links_of_assigned_hosts_and_holds_the_others(comm):
    known = ["http://a.test/", "http://b.test:8080/"]
    directory = Directory(comm.Get_size())
    directory.assign(host_pair(host_key(u)) for u in known)
    found = [
        Link("http://a.test/1", 1), Link("http://new.test/x", 2), Link("http://b.test:8080/é", 1),
        Link("http://b.test/other-port", 1), Link("http://a.test/" + "y" * 5000, 4, 1),
        Link("http://new.test/y", 2),
    ]
    mine = [x for x in found if host_key(x.url) in ("a.test:80", "b.test:8080")]
    boxes, held, _ = directory.bucket(found)
    assert boxes == [mine]
    assert held == [x for x in found if x not in mine]  # b.test:80 is another host

    buf, counts = pack(boxes)
    new_hosts = np.array(sorted({host_pair(host_key(x.url)) for x in held}), np.int64).ravel()
    stats = Stats()
    stats["exchange/undelivered"] = len(mine) + len(held)
    agreed = bsp.sync(comm, counts, len(new_hosts), stats.vector())
    assert agreed.any_sent and agreed.found.tolist() == [4]  # two (host, domain) pairs
    assert synced(agreed.totals)["exchange/undelivered"] == len(found)
    announced = bsp.announce(comm, new_hosts, agreed.found).reshape(-1, 2)
    directory.assign(map(tuple, announced.tolist()))
    inbox = unpack(bsp.exchange(comm, buf, counts, agreed.recv_counts), agreed.recv_counts)
    assert inbox == mine

    # the next superstep: the held links' hosts are dealt now, so they are delivered
    boxes, still_held, _ = directory.bucket(held)
    assert still_held == [] and boxes == [held]
    buf, counts = pack(boxes)
    agreed = bsp.sync(comm, counts, 0, Stats().vector())
    assert agreed.found.tolist() == [0]
    assert bsp.announce(comm, np.zeros(0, np.int64), agreed.found).size == 0
    assert unpack(bsp.exchange(comm, buf, counts, agreed.recv_counts),
                  agreed.recv_counts) == held
