"""The QuickHeap (bspcrawl.cbt.quickheap, Figs. 4 and 5) against a sorted-list model."""

import doctest

import numpy as np

from bspcrawl.cbt import BlockCache, QuickHeap, cost, quickheap
from bspcrawl.cbt.keys import encode
from tests.machines import machine_test
from tests.test_cbt import QueueMachine, pairs, reloaded


class QuickHeapMachine(QueueMachine):
    @staticmethod
    def make(variant: int) -> QuickHeap:
        return QuickHeap(seed=variant)


TestQuickHeapMachine = machine_test(QuickHeapMachine, 100, 40)


def test_docstring_examples():
    assert doctest.testmod(quickheap).failed == 0


def filled(m: int, seed: int = 0) -> QuickHeap:
    rng = np.random.default_rng(seed)
    q = QuickHeap(seed=seed)
    q.insert_many(rng.choice(10**9, m, replace=False), rng.random(m))
    return q


def test_insert_counts_the_pivots_it_passes():
    """Fig. 4: a new item is compared with the pivots from the largest down to the first
    one not larger than it."""
    q = filled(2000)
    q.extract_many(10)  # quickselect leaves pivots on the stack
    piv = q._stack[:0:-1]
    assert len(piv) >= 3
    pk, pid, _ = q._item(np.array(piv))
    rng = np.random.default_rng(1)
    new = rng.random(300)
    keys, ids = encode(new), np.arange(-300, 0)
    want = 0
    for k, i in zip(keys.tolist(), ids.tolist(), strict=True):
        for j in range(len(piv) - 1, -1, -1):  # pivots from the largest down
            want += 1
            if (pk[j], pid[j]) <= (k, i):
                break
    before = q.counters["queue/comparisons"]
    q.insert_many(ids, new)
    assert q.counters["queue/comparisons"] - before == want
    q._check()


def test_extract_is_partitions_plus_the_output_sort():
    q = filled(5000)
    q.extract_many(1)
    c = q.counters
    partitions = c["queue/comparisons"] - c["quickheap/order_comparisons"]
    assert c["quickheap/partitions"] >= 1 and partitions >= 4999  # the first: m - 1
    assert c["quickheap/order_comparisons"] == 0  # one item needs no sorting
    before = dict(q.counters)
    got = q.extract_many(len(q))  # everything: no partition, just the sort
    assert q.counters["quickheap/partitions"] == before["quickheap/partitions"]
    assert q.counters["queue/comparisons"] - before["queue/comparisons"] == \
        cost.sort_comparisons(4999)
    assert (np.diff(got[1]) <= 0).all()


def test_delete_and_update_across_pivots_and_the_wrap():
    rng = np.random.default_rng(3)
    q = QuickHeap(seed=3)
    model = {}
    for step in range(60):  # idx moves on, so the circular array wraps around
        ids = np.arange(step * 100, step * 100 + 60)
        p = rng.random(60)
        q.insert_many(ids, p)
        model.update(zip(ids.tolist(), p.tolist(), strict=True))
        for i in rng.choice(list(model), 5, replace=False).tolist():
            if rng.random() < 0.5:
                q.delete(i)
                del model[i]
            else:
                model[i] = float(rng.random())
                q.update(i, model[i])
        q._check()
        got = q.extract_many(50)
        want = sorted(model.items(), key=lambda kv: (-kv[1], kv[0]))[:50]
        assert pairs(got) == want
        for i, _ in want:
            del model[i]
    assert q._idx > q._cap  # positions went round the array


def test_block_io():
    big, small = BlockCache(10**6, 64), BlockCache(512, 64)
    q = QuickHeap(caches=[big, small])
    rng = np.random.default_rng(4)
    q.insert_many(np.arange(20_000), rng.random(20_000))
    q.extract_many(100)
    assert big.reads <= q._cap // 64 and big.writes == 0
    assert small.reads > big.reads and small.writes > 0


def test_save_load_keeps_the_future():
    q = filled(3000, seed=9)
    q.extract_many(100)
    copy = reloaded(q)
    assert copy._stack == q._stack and copy._idx == q._idx and copy.counters == q.counters
    for a in (q, copy):  # the same random pivots from here on
        a.insert_many(np.arange(-40, 0), np.linspace(0, 1, 40))
        a.update(-3, 7.0)
        a.delete(-5)
    assert pairs(q.extract_many(500)) == pairs(copy.extract_many(500))
    assert copy.counters == q.counters and copy._stack == q._stack
    copy._check()
