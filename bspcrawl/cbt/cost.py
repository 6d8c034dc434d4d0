"""Work counters of the queues: key comparisons (Fig. 8) and block I/O (Fig. 9) of
Marin, Paredes and Bonacic (WIDM 2008).

numpy's own comparisons say nothing about the algorithm, so each queue counts what its
algorithm does into ``counters["queue/comparisons"]`` (a partition or a merge of m
items: m - 1; a sift step: 1 or 2). A :class:`BlockCache` is a simulated LRU memory of
``memory`` items in blocks of ``block`` items; queues report the slots they read or
write, a miss is one block read and evicting a written block one block write.

>>> c = BlockCache(memory=4, block=2)        # two blocks of two items
>>> c.touch_range(0, 6, write=True)          # slots 0..5: blocks 0, 1, 2; block 0 evicted
>>> c.touch_items(np.array([1, 0, 5]), write=False)   # block 0 again (evicts 1), block 2
>>> c.reads, c.writes, c.io
(4, 2, 6)
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Iterable

import numpy as np


def sort_comparisons(m: int) -> int:
    """Worst case of a merge sort of m items: m*ceil(lg m) - 2**ceil(lg m) + 1."""
    if m < 2:
        return 0
    c = (m - 1).bit_length()
    return m * c - (1 << c) + 1


def merge_comparisons(m: int, runs: int = 2) -> int:
    """Merging sorted runs until m items are out: m - 1 for two runs, m lg(runs)
    (rounded up) with a tournament of more runs."""
    if runs < 2 or m < 2:
        return 0
    return m - 1 if runs == 2 else math.ceil(m * math.log2(runs))


class BlockCache:
    """LRU memory of ``memory`` items (at least one block) in blocks of ``block`` items."""

    def __init__(self, memory: int, block: int) -> None:
        if block < 1 or memory < 1:
            raise ValueError(f"memory and block must be >= 1, got {memory}, {block}")
        self.memory = memory
        self.block = block
        self.capacity = max(1, memory // block)  # blocks held
        self.reads = 0
        self.writes = 0
        self._lru: OrderedDict[int, bool] = OrderedDict()  # block -> written since read

    @property
    def io(self) -> int:
        """Block reads plus block writes."""
        return self.reads + self.writes

    def touch_blocks(self, blocks: Iterable[int], write: bool) -> None:
        """Access these blocks in order."""
        lru, cap = self._lru, self.capacity
        for b in blocks:
            if b in lru:
                lru.move_to_end(b)
                if write:
                    lru[b] = True
                continue
            self.reads += 1
            lru[b] = write
            if len(lru) > cap and lru.popitem(last=False)[1]:
                self.writes += 1

    def touch_range(self, first: int, stop: int, write: bool) -> None:
        """Access item slots first .. stop - 1 in order."""
        if stop > first:
            self.touch_blocks(range(first // self.block, (stop - 1) // self.block + 1), write)

    def touch_items(self, slots: np.ndarray, write: bool) -> None:
        """Access these item slots in order (repeats of one block count once)."""
        self._touch_array(np.asarray(slots, np.int64) // self.block, write)

    def touch_ranges(self, starts: np.ndarray, counts: np.ndarray, write: bool) -> None:
        """Access the slot ranges [starts[i], starts[i] + counts[i]) one after another."""
        keep = counts > 0
        first = starts[keep] // self.block
        n = (starts[keep] + counts[keep] - 1) // self.block - first + 1
        self._touch_array(spans(first, n), write)

    def _touch_array(self, b: np.ndarray, write: bool) -> None:
        if b.size:
            self.touch_blocks(b[np.r_[True, b[1:] != b[:-1]]].tolist(), write)


def spans(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Concatenated aranges: starts[i] .. starts[i] + lengths[i] - 1 for each i."""
    total = int(lengths.sum())
    if total == 0:
        return np.empty(0, np.int64)
    ends = np.cumsum(lengths)
    return np.repeat(starts - ends + lengths, lengths) + np.arange(total)
