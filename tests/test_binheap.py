"""The binary heap baseline (bspcrawl.cbt.binheap) against a sorted-list model."""

import doctest

import numpy as np

from bspcrawl.cbt import BinaryHeap, BlockCache, binheap
from tests.machines import machine_test
from tests.test_cbt import QueueMachine, pairs, reloaded


class BinaryHeapMachine(QueueMachine):
    @staticmethod
    def make(variant: int) -> BinaryHeap:
        return BinaryHeap()


TestBinaryHeapMachine = machine_test(BinaryHeapMachine, 100, 40)


def test_docstring_examples():
    assert doctest.testmod(binheap).failed == 0


def test_sift_counts():
    q = BinaryHeap()
    q.insert_many(np.arange(1000), np.arange(1000.0))  # >= heap size: Floyd's heapify
    q._check()
    c = dict(q.counters)
    q.insert_many(np.array([5000]), np.array([1e9]))  # the new best climbs to the root
    assert q.counters["queue/comparisons"] - c["queue/comparisons"] == 9  # depth of slot 1000
    assert q.counters["binheap/sift_steps"] - c["binheap/sift_steps"] == 9
    q.extract_many(1)  # the last item sinks from the root: 2 comparisons a level,
    steps = q.counters["binheap/sift_steps"] - c["binheap/sift_steps"] - 9
    cmps = q.counters["queue/comparisons"] - c["queue/comparisons"] - 9
    assert 1 <= steps <= 9 and 2 * steps - 1 <= cmps <= 2 * steps  # one child: 1
    q._check()


def test_small_batches_sift_up_large_ones_heapify():
    rng = np.random.default_rng(2)
    q = BinaryHeap()
    q.insert_many(np.arange(100), rng.random(100))
    steps = q.counters["binheap/sift_steps"]
    q.insert_many(np.arange(100, 150), rng.random(50))  # 50 < 100: sift-ups, <= 6 steps each
    assert q.counters["binheap/sift_steps"] - steps <= 50 * 6
    q.insert_many(np.arange(150, 500), rng.random(350))  # 350 >= 150: heapify everything
    q._check()
    ids, prios = q.extract_many(500)
    assert sorted(ids.tolist()) == list(range(500)) and (np.diff(prios) <= 0).all()


def test_block_io():
    big, small = BlockCache(10**6, 32), BlockCache(256, 32)
    q = BinaryHeap(caches=[big, small])
    rng = np.random.default_rng(4)
    q.insert_many(np.arange(10_000), rng.random(10_000))
    q.extract_many(200)
    q.insert_many(np.arange(10_000, 10_200), rng.random(200))
    assert big.reads <= 10_000 // 32 + 1 and big.writes == 0
    assert small.reads > 4 * big.reads and small.writes > 0  # pops jump between blocks


def test_save_load_keeps_the_future():
    rng = np.random.default_rng(9)
    q = BinaryHeap()
    q.insert_many(np.arange(3000), rng.random(3000))
    q.extract_many(100)
    copy = reloaded(q)
    assert np.array_equal(copy._key[:len(q)], q._key[:len(q)])
    for a in (q, copy):
        a.insert_many(np.arange(-40, 0), np.linspace(0, 1, 40))
        a.update(-3, 7.0)
        a.delete(-5)
    assert pairs(q.extract_many(500)) == pairs(copy.extract_many(500))
    assert copy.counters == q.counters
    copy._check()
