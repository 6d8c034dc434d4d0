"""The QuickHeap (Marin, Paredes, Bonacic, WIDM 2008, Figs. 4 and 5; after Navarro and
Paredes' quickheaps): a priority queue made of the pivots incremental quickselect leaves.

Items sit in a circular array ``heap[cap]`` from ``idx``; positions are absolute, cell
``p`` is ``heap[p mod cap]``. A stack ``S`` of pivot positions cuts it into chunks
(``S[0]``: the tail, a fictitious +infinity pivot; ``S[top]``: the smallest pivot); items
between two pivots lie between them in the order, so the best are in
``heap[idx .. S[top] - 1]``. ``vals[handle]`` in the id table is the item's position.

Worked example (ids shown instead of (key, id) items, best = smallest)::

    position  10 11 12 13 14 15 16 17        idx = 10, S = [18, 15, 12]
    heap       4  1 [5] 9  7 [11] 14 12      pivots 5 (at 12) and 11 (at 15)

Chunks: {4, 1} < 5 < {9, 7} < 11 < {14, 12}.

* ``insert`` (Fig. 4): each pivot larger than the item moves one cell right, the first
  item of its chunk to the freed cell; ``insert_many`` moves each pivot once.
* ``extractR`` (Fig. 5): whole chunks up to ``idx + R - 1`` are taken; a chunk crossing
  it is partitioned by quickselect (pivots pushed on S) until a pivot lands there. Our
  ``extract_many`` then sorts the R items best first.
* ``delete`` is Fig. 4 backwards; ``update`` is a delete and an insert.

Work: ``queue/comparisons``, ``quickheap/partitions``, ``quickheap/moves``; block I/O:
cell ``p`` is slot ``p mod cap``, the pivot stack is resident.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from itertools import pairwise

import h5py
import numpy as np

from bspcrawl.cbt.base import BulkQueue
from bspcrawl.cbt.cost import BlockCache, sort_comparisons, spans
from bspcrawl.cbt.keys import before, order, rank

MIN_CAP = 16


class QuickHeap(BulkQueue):
    """Bulk priority queue on a quickheap (:class:`~bspcrawl.cbt.base.BulkQueue` API).

    ``seed`` seeds the random pivots of quickselect.

    >>> q = QuickHeap(seed=1)
    >>> q.insert_many(np.array([5, -2, 9, 4]), np.array([0.5, 2.0, 0.5, 1.0]))
    >>> q.update(9, 3.0)
    >>> ids, prios = q.extract_many(2)
    >>> ids.tolist(), prios.tolist()
    ([9, -2], [3.0, 2.0])
    >>> q.delete(4)
    >>> len(q), 5 in q
    (1, True)
    """

    counter_names = ("quickheap/partitions", "quickheap/moves", "quickheap/order_comparisons")

    def __init__(self, seed: int = 0, caches: Sequence[BlockCache] = ()) -> None:
        super().__init__(caches)
        self._rng = np.random.default_rng(seed)
        self._alloc(MIN_CAP)
        self._idx = 0
        self._stack = [0]  # S: positions, S[0] = tail, descending to the top

    def _alloc(self, cap: int) -> None:
        self._cap, self._mask = cap, cap - 1
        self._key = np.zeros(cap, np.int64)
        self._hnd = np.zeros(cap, np.int64)

    def _relayout(self, cap: int) -> None:
        """Move the items into a circular array of ``cap`` cells (same positions)."""
        at = np.arange(self._idx, self._stack[0])
        keys, hnd = self._key[at & self._mask], self._hnd[at & self._mask]
        self._alloc(cap)
        self._key[at & self._mask], self._hnd[at & self._mask] = keys, hnd

    def _touch(self, first: int, stop: int, write: bool) -> None:
        """Report cells first .. stop - 1 (circular) to the block caches."""
        if not self.caches or stop <= first:
            return
        s = first & self._mask
        e = s + stop - first
        self._touch_range(s, min(e, self._cap), write)
        if e > self._cap:
            self._touch_range(0, e - self._cap, write)

    def _item(self, positions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(keys, ids, handles) of the items at these positions."""
        at = positions & self._mask
        h = self._hnd[at]
        return self._key[at], self._table.keys[h], h

    # ------------------------------------------------------------------ Fig. 4

    def _insert(self, keys: np.ndarray, ids: np.ndarray, handles: np.ndarray) -> None:
        m, tail = keys.size, self._stack[0]
        if tail - self._idx + m > self._cap:
            self._relayout(1 << (2 * (tail - self._idx + m) - 1).bit_length())
        piv = np.array(self._stack[:0:-1], np.int64)  # real pivots, ascending
        pk, pid, _ = self._item(piv)
        c = rank(pk, pid, keys, ids)  # the chunk of each new item
        self._compared(int((piv.size - c).sum() + np.count_nonzero(c)))
        k = np.bincount(c, minlength=piv.size + 1)  # new items per chunk
        shift = np.cumsum(k)  # pivot j moves right by the new items in chunks 0..j
        before_j = shift - k
        bounds = np.concatenate(([self._idx - 1], piv, [tail]))
        a, b = bounds[:-1] + 1, bounds[1:] - 1  # chunk j's old cells: a[j] .. b[j]
        movers = np.minimum(before_j, b - a + 1)  # its first cells, now the left's
        free = np.maximum(a + before_j, b + 1)  # its first free cell after the shift
        src = np.concatenate((spans(a, movers), piv))
        dst = np.concatenate((spans(free, movers), piv + shift[:-1]))
        new = spans(free + movers, k)
        o = np.argsort(c, kind="stable")
        mask = self._mask
        sk, sh = self._key[src & mask], self._hnd[src & mask]
        self._touch_cells(src, write=False)
        self._key[dst & mask], self._hnd[dst & mask] = sk, sh
        self._key[new & mask], self._hnd[new & mask] = keys[o], handles[o]
        self._table.vals[sh] = dst
        self._table.vals[handles[o]] = new
        self._touch_cells(np.concatenate((dst, new)), write=True)
        self.counters["quickheap/moves"] += int(src.size) + m
        self._stack = [tail + m, *(piv + shift[:-1])[::-1].tolist()]

    def _touch_cells(self, positions: np.ndarray, write: bool) -> None:
        if self.caches:
            self._touch_items(positions & self._mask, write)

    # ------------------------------------------------------------------ Fig. 5

    def _select(self, final: int) -> None:
        """Partition until a pivot (or the tail) sits at ``final`` or ``final + 1``:
        then cells idx .. final hold the best items."""
        st = self._stack
        i = len(st) - 1
        while st[i] < final:
            i -= 1
        if st[i] - final <= 1:
            return
        first = st[i + 1] + 1 if i + 1 < len(st) else self._idx
        last = st[i] - 1
        while True:
            p = self._partition(first, last, int(self._rng.integers(first, last + 1)))
            if p < final:
                first = p + 1
                continue
            i += 1
            st.insert(i, p)
            if p - final <= 1:
                return
            last = p - 1

    def _partition(self, first: int, last: int, pivot: int) -> int:
        """Partition cells first .. last around the item at ``pivot``; its new position."""
        pos = np.arange(first, last + 1)
        keys, ids, hnd = self._item(pos)
        j = pivot - first
        less = before(keys, ids, keys[j], ids[j])
        more = ~less
        more[j] = False
        nl = int(np.count_nonzero(less))
        at = pos & self._mask
        self._key[at] = np.concatenate((keys[less], keys[j:j + 1], keys[more]))
        h = np.concatenate((hnd[less], hnd[j:j + 1], hnd[more]))
        self._hnd[at] = h
        self._table.vals[h] = pos
        self._compared(last - first)
        self.counters["quickheap/partitions"] += 1
        self._touch(first, last + 1, write=True)
        return first + nl

    def _front(self, r: int) -> tuple[np.ndarray, np.ndarray]:
        """The best r items, in front after :meth:`_select`, sorted."""
        self._select(self._idx + r - 1)
        keys, ids, hnd = self._item(np.arange(self._idx, self._idx + r))
        self._touch(self._idx, self._idx + r, write=False)
        o = order(keys, ids)
        n = sort_comparisons(r)
        self._compared(n)
        self.counters["quickheap/order_comparisons"] += n
        return keys[o], hnd[o]

    def _extract(self, r: int) -> tuple[np.ndarray, np.ndarray]:
        keys, hnd = self._front(r)
        self._idx += r
        while self._stack[-1] < self._idx:  # the chunks (and pivots) consumed
            self._stack.pop()
        return keys, hnd

    def _peek(self, r: int) -> tuple[np.ndarray, np.ndarray]:
        return self._front(r)

    # ------------------------------------------------------------------ delete, update

    def _move(self, src: int, dst: int) -> None:
        mask = self._mask
        h = int(self._hnd[src & mask])
        self._key[dst & mask], self._hnd[dst & mask] = self._key[src & mask], h
        self._table.vals[h] = dst
        self.counters["quickheap/moves"] += 1
        self._touch(src, src + 1, write=False)
        self._touch(dst, dst + 1, write=True)

    def _remove_at(self, p: int) -> None:
        """Close the hole at position p: Fig. 4 backwards, towards the tail."""
        st = self._stack
        if p in st:
            st.remove(p)  # a pivot leaves: its two chunks become one
        j = len(st) - 1
        while st[j] < p:
            j -= 1
        hole = p
        while True:
            q = st[j]
            if q - 1 != hole:
                self._move(q - 1, hole)  # the last item of the hole's chunk
            if j == 0:
                st[0] = q - 1
                return
            self._move(q, q - 1)  # the pivot steps left; the hole opens the next chunk
            st[j], hole = q - 1, q
            j -= 1

    def _delete(self, handle: int) -> None:
        self._remove_at(int(self._table.vals[handle]))

    def _update(self, handle: int, key: int) -> None:
        self._remove_at(int(self._table.vals[handle]))
        self._insert(np.array([key]), self._table.keys[[handle]], np.array([handle]))

    def _remap(self, remap: np.ndarray) -> None:
        at = np.arange(self._idx, self._stack[0]) & self._mask
        self._hnd[at] = remap[self._hnd[at]]

    def _settle(self) -> None:
        """Halve the array while it is more than 8x too large."""
        size = self._stack[0] - self._idx
        if self._cap > 1024 and 8 * size < self._cap:
            self._relayout(max(MIN_CAP, 1 << (2 * size).bit_length()))

    # ------------------------------------------------------------------ state

    def _save(self, group: h5py.Group) -> None:
        keys, _, hnd = self._item(np.arange(self._idx, self._stack[0]))
        group.create_dataset("keys", data=keys)
        group.create_dataset("handles", data=hnd)
        group.create_dataset("stack", data=np.array(self._stack, np.int64))
        group.attrs["capacity"], group.attrs["idx"] = self._cap, self._idx
        group.attrs["rng"] = json.dumps(self._rng.bit_generator.state)

    def _load(self, group: h5py.Group) -> None:
        self._alloc(int(group.attrs["capacity"]))
        self._idx = int(group.attrs["idx"])
        self._stack = group["stack"][()].tolist()
        at = np.arange(self._idx, self._stack[0]) & self._mask
        self._key[at], self._hnd[at] = group["keys"][()], group["handles"][()]
        self._rng = np.random.Generator(np.random.PCG64())
        self._rng.bit_generator.state = json.loads(group.attrs["rng"])

    def _check(self) -> None:
        st, idx, tail = self._stack, self._idx, self._stack[0]
        assert tail - idx == self._size == len(self._table) <= self._cap
        assert all(x > y for x, y in pairwise(st)) and st[-1] >= idx
        assert self._cap >= MIN_CAP and self._cap & self._mask == 0
        pos = np.arange(idx, tail)
        keys, ids, hnd = self._item(pos)
        assert np.unique(hnd).size == hnd.size == self._table.live
        assert (self._table.vals[hnd] == pos).all()
        piv = np.array(st[:0:-1], np.int64)
        if piv.size == 0:
            return
        pk, pid, _ = self._item(piv)
        assert before(pk[:-1], pid[:-1], pk[1:], pid[1:]).all(), "pivots out of order"
        c = np.searchsorted(piv, pos)  # pivots before each cell
        item = piv[np.minimum(c, piv.size - 1)] != pos
        right = item & (c < piv.size)
        r = c[right]
        assert before(keys[right], ids[right], pk[r], pid[r]).all(), "item after its pivot"
        left = item & (c > 0)
        r = c[left] - 1
        assert before(pk[r], pid[r], keys[left], ids[left]).all(), "item before its pivot"
