"""Work counting (bspcrawl.cbt.cost): comparison formulas and the LRU block cache."""

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from bspcrawl.cbt.cost import BlockCache, merge_comparisons, sort_comparisons, spans


class NaiveLRU:
    """Item by item, a list in recency order: the reference for BlockCache."""

    def __init__(self, memory: int, block: int) -> None:
        self.cap, self.block = max(1, memory // block), block
        self.order: list[int] = []
        self.dirty: set[int] = set()
        self.reads = self.writes = 0

    def touch(self, slot: int, write: bool) -> None:
        b = slot // self.block
        if b in self.order:
            self.order.remove(b)
        else:
            self.reads += 1
        self.order.append(b)
        if write:
            self.dirty.add(b)
        if len(self.order) > self.cap:
            old = self.order.pop(0)
            if old in self.dirty:
                self.dirty.discard(old)
                self.writes += 1


ACCESS = st.tuples(st.integers(0, 200), st.integers(0, 40), st.booleans(), st.booleans())


@settings(max_examples=200, deadline=None)
@given(memory=st.integers(1, 60), block=st.integers(1, 9), accesses=st.lists(ACCESS))
def test_block_cache_against_a_naive_lru(memory, block, accesses):
    cache, model = BlockCache(memory, block), NaiveLRU(memory, block)
    for first, count, write, as_range in accesses:
        if as_range:
            cache.touch_range(first, first + count, write)
        else:
            cache.touch_ranges(np.array([first, first + 7]), np.array([count, 3]), write)
        slots = list(range(first, first + count))
        if not as_range:
            slots += [first + 7, first + 8, first + 9]
        for s in slots:
            model.touch(s, write)
    assert (cache.reads, cache.writes) == (model.reads, model.writes)
    assert cache.io == model.reads + model.writes


def test_formulas():
    assert [sort_comparisons(m) for m in range(6)] == [0, 0, 1, 3, 5, 8]  # merge sort
    for m in (10, 1000, 8000):
        assert m * math.log2(m) - 1.5 * m < sort_comparisons(m) <= m * math.ceil(math.log2(m))
    assert merge_comparisons(10) == 9 and merge_comparisons(1) == 0
    assert merge_comparisons(100, 8) == 300 and merge_comparisons(100, 1) == 0
    assert spans(np.array([5, 0, 9]), np.array([2, 0, 3])).tolist() == [5, 6, 9, 10, 11]
