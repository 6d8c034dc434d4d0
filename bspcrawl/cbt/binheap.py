"""The binary heap baseline of Marin, Paredes and Bonacic (WIDM 2008, Figs. 8 and 9).

The paper's BHeap does a bulk operation one item at a time (R sift-ups, R root
removals), so those loops run in Python on numpy arrays; ``insert_many`` of a batch of
at least ``HEAPIFY_RATIO`` times the heap uses Floyd's bottom-up construction instead,
one numpy step per level. Layout: ``heap[0 .. N-1]``, children of ``i`` at ``2i + 1``
and ``2i + 2``; ``vals[handle]`` is the item's index. Work: a sift-up step is 1
comparison, a sift-down step 2 (1 with one child); heap index ``i`` is slot ``i``.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence

import h5py
import numpy as np

from bspcrawl.cbt.base import BulkQueue
from bspcrawl.cbt.cost import BlockCache
from bspcrawl.cbt.keys import before

HEAPIFY_RATIO = 1.0  # insert_many rebuilds bottom-up when batch >= ratio * heap size
MIN_CAP = 16


class BinaryHeap(BulkQueue):
    """Bulk priority queue on a binary heap (:class:`~bspcrawl.cbt.base.BulkQueue` API).

    >>> q = BinaryHeap()
    >>> q.insert_many(np.array([5, -2, 9, 4]), np.array([0.5, 2.0, 0.5, 1.0]))
    >>> q.update(9, 3.0)
    >>> q.delete(4)
    >>> q.extract_many(5)[0].tolist()
    [9, -2, 5]
    """

    counter_names = ("binheap/sift_steps",)

    def __init__(self, caches: Sequence[BlockCache] = ()) -> None:
        super().__init__(caches)
        self._alloc(MIN_CAP)

    def _alloc(self, cap: int) -> None:
        self._key = np.zeros(cap, np.int64)
        self._hnd = np.zeros(cap, np.int64)

    def _resize(self, cap: int) -> None:
        n = self._size
        keys, hnd = self._key[:n], self._hnd[:n]
        self._alloc(cap)
        self._key[:n], self._hnd[:n] = keys, hnd

    # ------------------------------------------------------------------ sifting

    def _sift_up(self, i: int, k: int, h: int, trace: list[int] | None) -> None:
        """Place item (key k, handle h) at hole i or above it."""
        key, hnd, vals, ids = self._key, self._hnd, self._table.vals, self._table.keys
        ident = ids.item(h)
        steps = 0
        if trace is not None:
            trace.append(i)
        while i > 0:
            p = (i - 1) >> 1
            pk = key.item(p)
            steps += 1
            if trace is not None:
                trace.append(p)
            if pk < k or (pk == k and ids.item(hnd.item(p)) < ident):
                break
            ph = hnd.item(p)
            key[i], hnd[i], vals[ph] = pk, ph, i
            i = p
        key[i], hnd[i], vals[h] = k, h, i
        self._stepped(steps, steps)

    def _sift_down(self, i: int, n: int, k: int, h: int, trace: list[int] | None) -> None:
        """Place item (key k, handle h) at hole i or below it, in a heap of n items."""
        key, hnd, vals, ids = self._key, self._hnd, self._table.vals, self._table.keys
        ident = ids.item(h)
        steps = cmp = 0
        while (c := 2 * i + 1) < n:
            ck = key.item(c)
            steps += 1
            if trace is not None:
                trace.extend((c, c + 1))
            if c + 1 < n:
                cmp += 1
                c2k = key.item(c + 1)
                if c2k < ck or (c2k == ck and ids.item(hnd.item(c + 1)) < ids.item(hnd.item(c))):
                    c, ck = c + 1, c2k
            cmp += 1
            if k < ck or (k == ck and ident < ids.item(hnd.item(c))):
                break
            ch = hnd.item(c)
            key[i], hnd[i], vals[ch] = ck, ch, i
            i = c
        key[i], hnd[i], vals[h] = k, h, i
        self._stepped(steps, cmp)

    def _stepped(self, steps: int, comparisons: int) -> None:
        self.counters["binheap/sift_steps"] += steps
        self._compared(comparisons)

    def _traced(self, trace: list[int] | None) -> None:
        if trace:
            self._touch_items(np.array(trace), write=True)

    def _heapify(self, n: int) -> None:
        """Floyd's construction: sift down every internal node, deepest level first,
        a whole level at a time."""
        key, hnd, vals, ids = self._key, self._hnd, self._table.vals, self._table.keys
        last = (n - 2) // 2  # the last internal node
        for depth in range((last + 1).bit_length() - 1, -1, -1):
            node = np.arange((1 << depth) - 1, min((2 << depth) - 2, last) + 1)
            k, h = key[node], hnd[node]
            ident = ids[h]
            at = node.copy()  # the hole of each sifting item
            live = np.arange(node.size)
            while live.size:
                p = at[live]
                c = 2 * p + 1
                inside = c < n
                live, p, c = live[inside], p[inside], c[inside]
                two = c + 1 < n
                c2 = np.where(two, c + 1, c)
                right = two & before(key[c2], ids[hnd[c2]], key[c], ids[hnd[c]])
                c = np.where(right, c2, c)
                down = before(key[c], ids[hnd[c]], k[live], ident[live])
                self._stepped(live.size, live.size + int(np.count_nonzero(two)))
                if self.caches:
                    self._touch_items(np.column_stack((p, c)).ravel(), write=True)
                p, c = p[down], c[down]
                key[p], hnd[p] = key[c], hnd[c]
                vals[hnd[p]] = p
                at[live[down]] = c
                live = live[down]
            key[at], hnd[at] = k, h
            vals[h] = at

    # ------------------------------------------------------------------ the queue steps

    def _insert(self, keys: np.ndarray, ids: np.ndarray, handles: np.ndarray) -> None:
        n, m = self._size, keys.size
        if n + m > self._key.size:
            self._resize(1 << (2 * (n + m) - 1).bit_length())
        if m >= HEAPIFY_RATIO * n:
            self._key[n:n + m], self._hnd[n:n + m] = keys, handles
            self._table.vals[handles] = np.arange(n, n + m)
            self._touch_range(n, n + m, write=True)
            self._heapify(n + m)
            return
        trace: list[int] | None = [] if self.caches else None
        for i, (k, h) in enumerate(zip(keys.tolist(), handles.tolist(), strict=True)):
            self._sift_up(n + i, k, h, trace)
        self._traced(trace)

    def _extract(self, r: int) -> tuple[np.ndarray, np.ndarray]:
        key, hnd = self._key, self._hnd
        out_k, out_h = np.empty(r, np.int64), np.empty(r, np.int64)
        trace: list[int] | None = [] if self.caches else None
        n = self._size
        for j in range(r):
            out_k[j], out_h[j] = key.item(0), hnd.item(0)
            n -= 1
            if n:
                if trace is not None:
                    trace.extend((0, n))
                self._sift_down(0, n, key.item(n), hnd.item(n), trace)
        self._traced(trace)
        return out_k, out_h

    def _peek(self, r: int) -> tuple[np.ndarray, np.ndarray]:
        """Best-first search from the root: O(r log r)."""
        key, hnd, ids, n = self._key, self._hnd, self._table.keys, self._size
        front = [(key.item(0), ids.item(hnd.item(0)), 0)]
        out: list[int] = []
        cmp = 0
        while len(out) < r:
            cmp += len(front).bit_length()
            i = heapq.heappop(front)[2]
            out.append(i)
            for c in (2 * i + 1, 2 * i + 2):
                if c < n:
                    cmp += len(front).bit_length()
                    heapq.heappush(front, (key.item(c), ids.item(hnd.item(c)), c))
        self._compared(cmp)
        at = np.array(out)
        self._touch_items(at, write=False)
        return key[at], hnd[at]

    def _place(self, i: int, n: int, k: int, h: int) -> None:
        """Put item (k, h) at hole i of a heap of n items: up if it beats the parent."""
        trace: list[int] | None = [] if self.caches else None
        p = (i - 1) >> 1
        if i > 0:
            self._compared(1)
        ids = self._table.keys
        if i > 0 and before(k, ids.item(h), self._key.item(p), ids.item(self._hnd.item(p))):
            self._sift_up(i, k, h, trace)
        else:
            self._sift_down(i, n, k, h, trace)
        self._traced(trace)

    def _update(self, handle: int, key: int) -> None:
        self._place(int(self._table.vals[handle]), self._size, key, handle)

    def _delete(self, handle: int) -> None:
        i, n = int(self._table.vals[handle]), self._size - 1
        if i < n:
            self._place(i, n, self._key.item(n), self._hnd.item(n))

    def _remap(self, remap: np.ndarray) -> None:
        self._hnd[:self._size] = remap[self._hnd[:self._size]]

    def _settle(self) -> None:
        """Halve the arrays while they are more than 8x too large."""
        if self._key.size > 1024 and 8 * self._size < self._key.size:
            self._resize(max(MIN_CAP, 1 << (2 * self._size).bit_length()))

    # ------------------------------------------------------------------ state

    def _save(self, group: h5py.Group) -> None:
        group.create_dataset("keys", data=self._key[:self._size])
        group.create_dataset("handles", data=self._hnd[:self._size])
        group.attrs["capacity"] = self._key.size

    def _load(self, group: h5py.Group) -> None:
        self._alloc(int(group.attrs["capacity"]))
        self._key[:self._size], self._hnd[:self._size] = group["keys"][()], group["handles"][()]

    def _check(self) -> None:
        n = self._size
        assert n == len(self._table) <= self._key.size == self._hnd.size
        keys, hnd = self._key[:n], self._hnd[:n]
        assert np.unique(hnd).size == n == self._table.live
        assert (self._table.vals[hnd] == np.arange(n)).all()
        ids = self._table.keys[hnd]
        parent = (np.arange(1, n) - 1) >> 1
        assert before(keys[parent], ids[parent], keys[1:], ids[1:]).all(), "heap order broken"
