"""The CBT priority queue with bucket leaves (Marin, Paredes, Bonacic, WIDM 2008, Figs. 1-2).

Section 3 of the paper keeps the frontier in a complete binary tree ``CBT[2N]`` whose
internal nodes hold the leaf that won a tournament below them, with ``Leaf[]`` (item ->
leaf) and ``Prio[]``. Each leaf holds a *bucket* of up to ``n`` items; Fig. 1
(insertion-update-cbt) and Fig. 2 (extraction-update-cbt) keep the buckets in heap order
along every path with ``SELECT(Prio[a] U Prio[b], n)``. Priorities: HIGHER = first.

* ``_cbt`` is ``CBT[2L]``: leaf ``j`` is node ``L + j`` (``_cbt[L + j] == j``); node ``v``
  has children ``2v``, ``2v+1`` and holds the winning leaf.
* ``_s`` / ``_h`` / ``_cnt`` are ``Prio[]``: row ``j`` is leaf ``j``'s bucket, its first
  ``_cnt[j]`` entries sorted best first; ``_s`` holds order-preserving int64 sort keys of
  ``-priority``, ``_h`` the items' handles. ``_table`` (an ``IdTable``) is ``Leaf[]``.
* Items compare by (priority descending, id ascending). A bucket's key is its worst item;
  a match's winner is the child winner with the better key.
* Invariant: at every internal node every item of the winner's bucket beats every item
  of the loser's, so ``CBT[1]`` holds the best items of all.
* ``_match`` is one step of Fig. 2: pick the winner, and if the buckets overlap, merge
  them and give the winner its best ``|Prio[w]|`` items. Keeping each bucket's size
  (not ``n``) makes it sound for partial buckets, so replaying a changed leaf's path
  bottom-up restores the invariant; insert, update, delete and extract all use it.
  Replays are deferred to the next read of the order, one numpy step per level for all
  dirty nodes (the bulk-synchronous form of the paper); :meth:`CBT.flush` runs them now.
* ``extract_many(r)`` visits buckets best first down the heap of buckets (a bucket's
  children are the losers along its winning path) until ``r`` seen items beat every
  unseen bucket, takes the best ``r``, and replays the emptied paths together.
* Insertion writes a sorted batch as full buckets into empty leaves (the tree doubles
  when none are left), the remainder into the fullest partial bucket it fits; when more
  than a quarter of the buckets are partial they are repacked.

Worked example (``bucket_size=2``, priorities shown instead of sort keys)::

    >>> q = CBT(bucket_size=2)
    >>> q.insert_many(np.array([10, 11, 12, 13, 14, 15, 16]),
    ...               np.array([0.5, 0.9, 0.1, 0.7, 0.3, 0.8, 0.6]))
    >>> q.flush()
    >>> q._cbt.tolist()                    # node 1 (root) .. 3, then leaves 4..7
    [0, 0, 0, 2, 0, 1, 2, 3]
    >>> [q._decode(q._s[j, :q._cnt[j]]).tolist() for j in range(4)]
    [[0.9, 0.8], [0.7, 0.6], [0.5, 0.3], [0.1]]

Leaf 0 holds the two best items and wins the root; node 2 (leaves 0, 1) is won by
leaf 0, node 3 (leaves 2, 3) by leaf 2, whose worst item 0.3 beats leaf 3's 0.1.
``_table.vals[_table.find(16)] == 1``: item 16 (0.6) sits in leaf 1.

Work is counted as in :mod:`bspcrawl.cbt.cost`: the slots of bucket ``j`` are
``j*n .. j*n + n - 1``; the tournament, counts and bucket keys are taken as resident.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence

import h5py
import numpy as np

from bspcrawl.cbt.base import BulkQueue
from bspcrawl.cbt.cost import BlockCache, merge_comparisons, sort_comparisons
from bspcrawl.cbt.keys import PAD, decode, order


class CBT(BulkQueue):
    """Bulk priority queue of int64 ids with float64 priorities (higher = first).

    The API of :class:`~bspcrawl.cbt.base.BulkQueue`, plus :meth:`flush`.  Ties
    between equal priorities go to the smaller id.  ``counters`` also counts the
    tournament's work (``cbt/matches``, ``cbt/exchanges``, ...).

    >>> q = CBT(bucket_size=4)
    >>> q.insert_many(np.array([5, -2, 9]), np.array([0.5, 2.0, 0.5]))
    >>> q.update(9, 3.0)
    >>> ids, prios = q.extract_many(2)
    >>> ids.tolist(), prios.tolist()
    ([9, -2], [3.0, 2.0])
    >>> len(q), 5 in q, 9 in q
    (1, True, False)
    """

    counter_names = ("cbt/matches", "cbt/exchanges", "cbt/exchange_items", "cbt/repacks",
                     "cbt/rebuilds")
    _decode = staticmethod(decode)

    def __init__(self, bucket_size: int = 256, caches: Sequence[BlockCache] = ()) -> None:
        if isinstance(bucket_size, bool) or not isinstance(bucket_size, int | np.integer):
            raise TypeError(f"bucket_size must be an int, got {type(bucket_size).__name__}")
        if bucket_size < 1:
            raise ValueError(f"bucket_size must be >= 1, got {bucket_size}")
        super().__init__(caches)
        self._n = int(bucket_size)
        self._col = np.arange(self._n)
        self._alloc(1)

    def _alloc(self, leaves: int) -> None:
        """Empty buckets: ``leaves`` (a power of two) of them."""
        self._L = leaves
        self._s = np.full((leaves, self._n), PAD, np.int64)
        self._h = np.zeros((leaves, self._n), np.int64)
        self._cnt = np.zeros(leaves, np.int64)
        self._cbt = np.zeros(2 * leaves, np.int64)
        self._cbt[leaves:] = np.arange(leaves)
        self._dirty: set[int] = set()
        self._build()

    @property
    def bucket_size(self) -> int:
        """The bucket size n (items per leaf)."""
        return self._n

    def flush(self) -> None:
        """Replay the matches on the paths of all dirty leaves now, level by level
        (Fig. 2); otherwise the next extract or peek does it."""
        if not self._dirty:
            return
        nodes = np.fromiter(self._dirty, np.int64, len(self._dirty)) + self._L
        self._dirty.clear()
        while self._L > 1 and nodes[0] > 1:
            nodes = np.unique(nodes >> 1)
            self._match(nodes)

    # ------------------------------------------------------------------ the queue steps

    def _insert(self, keys: np.ndarray, ids: np.ndarray, handles: np.ndarray) -> None:
        """Sort the batch, write it into buckets; O(R log R) plus the deferred replay."""
        o = order(keys, ids)
        self._compared(sort_comparisons(keys.size))
        self._place(keys[o], handles[o])

    def _extract(self, r: int) -> tuple[np.ndarray, np.ndarray]:
        """The best r items leave the fronts of the buckets visited; the emptied
        buckets are marked dirty.  O(r log r + (r/n) log L) plus their replay."""
        if r == self._size:
            keys, handles = self._all()
            self._alloc(1)
            return keys, handles
        rows, take, keys, handles = self._top(r)
        n, s, h, cnt = self._n, self._s, self._h, self._cnt
        left = cnt[rows] - take
        if self.caches:
            self._touch_ranges(rows * n, cnt[rows], write=True)
        src = np.minimum(take[:, None] + self._col, n - 1) + (rows * n)[:, None]
        keep = self._col < left[:, None]
        s[rows] = np.where(keep, s.ravel()[src], PAD)
        h[rows] = np.where(keep, h.ravel()[src], 0)
        cnt[rows] = left
        self._dirty.update(rows[left == 0].tolist())
        return keys, handles

    def _peek(self, r: int) -> tuple[np.ndarray, np.ndarray]:
        if r == self._size:
            return self._all()
        _, _, keys, handles = self._top(r)
        return keys, handles

    def _update(self, handle: int, key: int) -> None:
        """Move the item within its bucket: O(n), plus the replay of one path."""
        row = int(self._table.vals[handle])
        c = int(self._cnt[row])
        rs, rh = self._s[row, :c], self._h[row, :c]
        i = int(np.flatnonzero(rh == handle)[0])
        rs, rh = np.delete(rs, i), np.delete(rh, i)
        ident = int(self._table.keys[handle])
        j = int(np.count_nonzero((rs < key) | ((rs == key) & (self._table.keys[rh] < ident))))
        self._compared(c - 1)
        self._s[row, :c] = np.insert(rs, j, key)
        self._h[row, :c] = np.insert(rh, j, handle)
        self._touch_range(row * self._n, row * self._n + c, write=True)
        self._dirty.add(row)

    def _delete(self, handle: int) -> None:
        """Close the gap in its bucket: O(n), plus the replay of one path."""
        row = int(self._table.vals[handle])
        c = int(self._cnt[row])
        i = int(np.flatnonzero(self._h[row, :c] == handle)[0])
        self._s[row, i:c - 1] = self._s[row, i + 1:c]
        self._h[row, i:c - 1] = self._h[row, i + 1:c]
        self._s[row, c - 1] = PAD
        self._h[row, c - 1] = 0
        self._cnt[row] = c - 1
        self._touch_range(row * self._n, row * self._n + c, write=True)
        self._dirty.add(row)

    def _remap(self, remap: np.ndarray) -> None:
        valid = self._col < self._cnt[:, None]
        self._h[valid] = remap[self._h[valid]]

    def _settle(self) -> None:
        """Keep buckets mostly full and the tree at most ~8x larger than needed."""
        used = int(np.count_nonzero(self._cnt))
        if self._L > 16 and 8 * used < self._L:
            self._rebuild()
            return
        partial = np.flatnonzero((self._cnt > 0) & (self._cnt < self._n))
        if partial.size > 4 + used // 4:
            self._repack(partial)

    # ------------------------------------------------------------------ the tournament

    def _ids(self, handles: np.ndarray) -> np.ndarray:
        return self._table.keys[handles]

    def _worst(self, leaves: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(count, key, id) of each bucket's worst item; empty buckets: (0, PAD, *)."""
        c = self._cnt[leaves]
        last = np.maximum(c - 1, 0)
        return c, self._s[leaves, last], self._ids(self._h[leaves, last])

    def _winners(self, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Matches of leaves a against leaves b: (a wins?, winner's worst key and id).
        The better worst item wins; of two empty buckets, a."""
        ca, sa, ia = self._worst(a)
        _, sb, ib = self._worst(b)
        a_wins = (sa < sb) | ((sa == sb) & ((ca == 0) | (ia < ib)))
        return a_wins, np.where(a_wins, sa, sb), np.where(a_wins, ia, ib)

    def _build(self) -> None:
        """Recompute every internal node from the keys alone (valid when the buckets
        already satisfy the heap order, e.g. after growth).  O(L)."""
        lo = self._L // 2
        while lo >= 1:
            v = np.arange(lo, 2 * lo)
            a, b = self._cbt[2 * v], self._cbt[2 * v + 1]
            self._cbt[v] = np.where(self._winners(a, b)[0], a, b)
            self._compared(lo)
            lo //= 2

    def _match(self, v: np.ndarray) -> None:
        """Play the matches at internal nodes v (all on one level)."""
        a, b = self._cbt[2 * v], self._cbt[2 * v + 1]
        a_wins, ws, wi = self._winners(a, b)
        w, lo = np.where(a_wins, a, b), np.where(a_wins, b, a)
        self._cbt[v] = w
        self.counters["cbt/matches"] += v.size
        # The loser must not hold an item that beats the winner's worst one.
        bs, bi = self._s[lo, 0], self._ids(self._h[lo, 0])
        busy = self._cnt[lo] > 0
        self._compared(v.size + int(np.count_nonzero(busy)))
        clash = busy & ((bs < ws) | ((bs == ws) & (bi < wi)))
        if clash.any():
            self._exchange(w[clash], lo[clash])

    def _exchange(self, w: np.ndarray, lo: np.ndarray) -> None:
        """SELECT: pool each pair of buckets, winner w keeps its size in best items."""
        n, k, col = self._n, w.size, self._col
        keys = np.concatenate((self._s[w], self._s[lo]), axis=1)
        hand = np.concatenate((self._h[w], self._h[lo]), axis=1)
        keys, hand = self._sort_rows(keys, hand)
        cw, cl = self._cnt[w][:, None], self._cnt[lo][:, None]
        keep = col < cw
        self._s[w] = np.where(keep, keys[:, :n], PAD)
        self._h[w] = np.where(keep, hand[:, :n], 0)
        src = cw + col + (np.arange(k) * 2 * n)[:, None]  # loser: the next cl items, then PAD
        ls, lh = keys.ravel()[src], hand.ravel()[src]
        self._s[lo], self._h[lo] = ls, lh
        vals = self._table.vals
        vals[hand[:, :n][keep]] = np.broadcast_to(w[:, None], keep.shape)[keep]
        lkeep = col < cl
        vals[lh[lkeep]] = np.broadcast_to(lo[:, None], lkeep.shape)[lkeep]
        items = int(cw.sum() + cl.sum())
        self.counters["cbt/exchanges"] += k
        self.counters["cbt/exchange_items"] += items
        self._compared(items - k)
        if self.caches:
            starts = np.column_stack((w, lo)).ravel() * n
            self._touch_ranges(starts, np.column_stack((cw, cl)).ravel(), write=True)

    def _sort_rows(self, keys: np.ndarray, hand: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Sort each row by (key, id); PAD slots last.  Rows made of sorted runs cost O(m)
        (timsort); equal keys fall back to lexsort."""
        k, m = keys.shape
        o = np.argsort(keys, axis=1, kind="stable")
        flat = o + (np.arange(k) * m)[:, None]
        sk = keys.ravel()[flat]
        if ((sk[:, 1:] == sk[:, :-1]) & (sk[:, 1:] != PAD)).any():
            o = np.lexsort((self._ids(hand), keys), axis=1)
            flat = o + (np.arange(k) * m)[:, None]
            sk = keys.ravel()[flat]
        return sk, hand.ravel()[flat]

    # ------------------------------------------------------------------ bulk steps

    def _top(self, r: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The best r items (0 < r < len): (bucket rows, items taken from each row's
        front, keys, handles), best first.  Visits buckets best-first from the champion
        until the items seen that beat every unseen bucket number at least r."""
        self.flush()
        s, h, cnt, cbt, L = self._s, self._h, self._cnt, self._cbt, self._L
        keys = self._table.keys

        def entry(b: int) -> tuple[int, int, int]:  # (key, id) of b's best item, b
            return s.item(b, 0), keys.item(h.item(b, 0)), b

        frontier = [entry(cbt.item(1))]
        seen: list[int] = []
        total, target, work = 0, r, 0
        while True:
            while frontier and total < target:
                b = heapq.heappop(frontier)[2]
                seen.append(b)
                total += cnt.item(b)
                v = L + b
                while v > 1 and cbt.item(v >> 1) == b:  # b's children: the losers it beat
                    c = cbt.item(v ^ 1)
                    if cnt.item(c):
                        heapq.heappush(frontier, entry(c))
                    v >>= 1
            rows = np.array(seen)
            rs, rh = s[rows], h[rows]
            if not frontier:
                good = rs != PAD
                break
            ms, mid, _ = frontier[0]  # the best item not seen yet
            good = rs < ms
            tie = rs == ms
            if tie.any():
                good |= tie & (keys[rh] < mid)
            got = int(np.count_nonzero(good))
            work += int(np.count_nonzero(good.sum(1) < cnt[rows]))  # scans that stopped
            if got >= r:
                break
            target = total + r - got
        gs, gh = rs[good], rh[good]
        o = order(gs, keys[gh])[:r]
        take = np.bincount(np.nonzero(good)[0][o], minlength=rows.size)
        runs = int(np.count_nonzero(good.any(1)))
        heap_ops = 2 * len(seen) + len(frontier) - 1  # pops, and pushes of all but the root
        work += heap_ops * max(1, len(frontier).bit_length())
        self._compared(work + gs.size + merge_comparisons(r, runs))
        if self.caches:
            self._touch_ranges(rows * self._n, cnt[rows], write=False)
        return rows, take, gs[o], gh[o]

    def _all(self) -> tuple[np.ndarray, np.ndarray]:
        """Every item, best first: a merge of the sorted buckets.  O(N log N)."""
        valid = self._col < self._cnt[:, None]
        keys, hand = self._s[valid], self._h[valid]
        o = order(keys, self._ids(hand))
        self._compared(merge_comparisons(keys.size, int(np.count_nonzero(self._cnt))))
        self._touch_range(0, self._L * self._n, write=False)
        return keys[o], hand[o]

    def _place(self, keys: np.ndarray, hand: np.ndarray) -> None:
        """Write a sorted batch into buckets: full buckets into empty leaves, the rest
        into the fullest partial bucket with room (else a new leaf); mark them dirty."""
        n, m = self._n, keys.size
        full, rest = divmod(m, n)
        host = -1
        if rest:
            room = n - self._cnt
            fits = (self._cnt > 0) & (room >= rest)
            if fits.any():
                host = int(np.argmin(np.where(fits, room, n + 1)))
        need = full + (1 if rest and host < 0 else 0)
        free = self._free_leaves(need)
        rows = free[:full]
        self._s[rows] = keys[: full * n].reshape(full, n)
        self._h[rows] = hand[: full * n].reshape(full, n)
        self._cnt[rows] = n
        self._table.vals[hand[: full * n]] = np.repeat(rows, n)
        if self.caches:
            self._touch_ranges(rows * n, np.full(full, n), write=True)
        if rest:
            tk, th = keys[full * n:], hand[full * n:]
            if host < 0:
                host = int(free[full])
            c = int(self._cnt[host])
            rk, rh = self._sort_rows(np.concatenate((self._s[host, :c], tk))[None],
                                     np.concatenate((self._h[host, :c], th))[None])
            self._s[host, : c + rest] = rk[0]
            self._h[host, : c + rest] = rh[0]
            self._cnt[host] = c + rest
            self._table.vals[th] = host
            self._compared(merge_comparisons(c + rest) if c else 0)
            self._touch_range(host * n, host * n + c + rest, write=True)
            rows = np.append(rows, host)
        self._dirty.update(rows.tolist())

    def _free_leaves(self, need: int) -> np.ndarray:
        """``need`` empty leaves, dirty ones first (their paths get replayed anyway);
        doubles the tree when there are too few."""
        empty = np.flatnonzero(self._cnt == 0)
        if empty.size < need:
            self.flush()
            leaves = self._L
            while leaves - (self._L - empty.size) < need:
                leaves *= 2
            self._resize(leaves)
            empty = np.flatnonzero(self._cnt == 0)
        if self._dirty:
            dirty = np.zeros(self._L, bool)
            dirty[list(self._dirty)] = True
            empty = np.concatenate((empty[dirty[empty]], empty[~dirty[empty]]))
        return empty[:need]

    def _resize(self, leaves: int) -> None:
        """Grow to ``leaves`` leaves; the old tree becomes the leftmost subtree."""
        old_s, old_h, old_cnt = self._s, self._h, self._cnt
        keep = old_cnt.size
        self._L = leaves
        self._s = np.full((leaves, self._n), PAD, np.int64)
        self._h = np.zeros((leaves, self._n), np.int64)
        self._cnt = np.zeros(leaves, np.int64)
        self._s[:keep], self._h[:keep], self._cnt[:keep] = old_s, old_h, old_cnt
        self._cbt = np.zeros(2 * leaves, np.int64)
        self._cbt[leaves:] = np.arange(leaves)
        self._build()

    def _repack(self, rows: np.ndarray) -> None:
        """Merge the items of these buckets into as few full buckets as possible."""
        valid = self._col < self._cnt[rows][:, None]
        keys, hand = self._s[rows][valid], self._h[rows][valid]
        o = order(keys, self._ids(hand))
        self._compared(merge_comparisons(keys.size, rows.size))
        if self.caches:
            self._touch_ranges(rows * self._n, self._cnt[rows], write=False)
        self._s[rows] = PAD
        self._h[rows] = 0
        self._cnt[rows] = 0
        self._dirty.update(rows.tolist())
        self._place(keys[o], hand[o])
        self.counters["cbt/repacks"] += 1

    def _rebuild(self) -> None:
        """Lay every item out again in sorted full buckets (heap order holds trivially)."""
        keys, hand = self._all()
        remap = self._table.reserve(0)  # the table may shrink too
        if remap is not None:
            hand = remap[hand]
        rows = max(1, -(-keys.size // self._n))
        leaves = 1 << (rows - 1).bit_length()
        flat_s = np.full(leaves * self._n, PAD, np.int64)
        flat_h = np.zeros(leaves * self._n, np.int64)
        flat_s[: keys.size], flat_h[: keys.size] = keys, hand
        self._alloc(leaves)
        self._s, self._h = flat_s.reshape(leaves, self._n), flat_h.reshape(leaves, self._n)
        self._cnt[:] = np.clip(keys.size - np.arange(leaves) * self._n, 0, self._n)
        self._table.vals[hand] = np.arange(keys.size) // self._n
        self._touch_range(0, keys.size, write=True)
        self._build()
        self.counters["cbt/rebuilds"] += 1

    # ------------------------------------------------------------------ state

    def _save(self, group: h5py.Group) -> None:
        valid = self._col < self._cnt[:, None]
        group.attrs["bucket_size"] = self._n
        group.create_dataset("keys", data=self._s[valid])
        group.create_dataset("handles", data=self._h[valid])
        group.create_dataset("counts", data=self._cnt)
        group.create_dataset("tournament", data=self._cbt)
        group.create_dataset("dirty", data=np.array(sorted(self._dirty), np.int64))

    def _load(self, group: h5py.Group) -> None:
        self._n = int(group.attrs["bucket_size"])
        self._col = np.arange(self._n)
        cnt = group["counts"][()].astype(np.int64)
        self._alloc(cnt.size)
        valid = self._col < cnt[:, None]
        self._cnt[:] = cnt
        self._s[valid] = group["keys"][()]
        self._h[valid] = group["handles"][()]
        self._cbt[:] = group["tournament"][()]
        self._dirty = set(group["dirty"][()].tolist())

    def _check(self) -> None:
        """Assert every invariant (replaying pending matches first)."""
        self.flush()
        n, L, s, h, cnt, cbt = self._n, self._L, self._s, self._h, self._cnt, self._cbt
        assert L >= 1 and L & (L - 1) == 0 and s.shape == h.shape == (L, n)
        assert cnt.shape == (L,) and cbt.shape == (2 * L,)
        assert ((cnt >= 0) & (cnt <= n)).all()
        assert int(cnt.sum()) == self._size == len(self._table)
        valid = self._col < cnt[:, None]
        assert (s[valid] < PAD).all() and (s[~valid] == PAD).all() and (h[~valid] == 0).all()
        # Buckets sorted by (key, id), strictly: ids are distinct.
        ids = self._ids(h)
        pair = valid[:, 1:]
        a, b = s[:, :-1], s[:, 1:]
        assert ((a < b) | ((a == b) & (ids[:, :-1] < ids[:, 1:])))[pair].all()
        # Leaf[]: every queued item sits in exactly the leaf the table says.
        hv = h[valid]
        assert np.unique(hv).size == hv.size == self._table.live
        assert (self._table.vals[hv] == np.nonzero(valid)[0]).all()
        # Tournament: leaves, winners by key, heap order between winner and loser.
        assert (cbt[L:] == np.arange(L)).all()
        if L > 1:
            v = np.arange(1, L)
            x, y = cbt[2 * v], cbt[2 * v + 1]
            a_wins, ws, wi = self._winners(x, y)
            assert (cbt[v] == np.where(a_wins, x, y)).all()
            lo = np.where(a_wins, y, x)
            bs, bi = s[lo, 0], self._ids(h[lo, 0])
            ok = (cnt[lo] == 0) | (ws < bs) | ((ws == bs) & (wi < bi))
            assert ok.all(), "heap order broken between a winner and its loser"
