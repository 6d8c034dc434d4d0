"""The CBT priority queue with bucket leaves (Marin, Paredes, Bonacic, WIDM 2008, section 3).

Section 3 of the paper ("Priority queues: log worst case approach") keeps the frontier
in a complete binary tree ``CBT[2N]`` whose internal nodes hold the id of the leaf that
won a continuous tournament below them, with ``Leaf[]`` (item -> leaf) and ``Prio[]``
(the priorities).  For bulk work each leaf holds a *bucket* of up to ``n`` items, and
the tournament keeps the buckets in heap order along every path: Fig. 1
(``insertion-update-cbt``) and Fig. 2 (``extraction-update-cbt``) move items between
the buckets met along a path with ``SELECT(Prio[a] U Prio[b], n)``, the winner keeping
the best part.  Priorities here: HIGHER = extracted first.

How this module maps to the paper
---------------------------------
* ``_cbt`` is ``CBT[2L]``: ``L`` (a power of two) leaves are nodes ``L..2L-1``, leaf
  ``j`` at node ``L + j``; internal node ``v`` has children ``2v`` and ``2v+1`` and
  holds the winning leaf.  ``_cbt[L + j] == j`` so every level reads alike.
* ``_s`` / ``_h`` / ``_cnt`` are ``Prio[]``: row ``j`` is leaf ``j``'s bucket, its
  first ``_cnt[j]`` entries sorted best first (padding: ``PAD`` and handle 0).
  ``_s`` is an order-preserving int64 *sort key* of ``-priority`` (smaller = better,
  exact round trip); ``_h`` holds the items' handles in the id table.
* ``_table`` (:class:`~bspcrawl.cbt.idtable.IdTable`) is ``Leaf[]``: a vectorised
  hash table id -> handle, and ``_table.vals[handle]`` is the item's leaf.  A Python
  dict would cost a Python object and a round trip per item on every bulk operation.
* Order: items compare by (priority descending, id ascending); this total order is
  also the tie rule of every output.  A bucket's *key* is its worst item (empty
  buckets: worst of all).  The winner of a match is the child winner with the better
  key -- the ``x := MIN(Prio[CBT[a]]); if x < y then swap(a, b)`` of Fig. 2.
* Invariant (heap order along paths): at every internal node, every item of the
  winner's bucket beats every item of the loser's bucket.  So the winner of node
  ``v`` holds the best ``_cnt`` items of ``v``'s subtree, and the champion
  ``CBT[1]`` the best of all.
* ``_match`` is one step of Fig. 2 (read ``Prio[a]`` there as ``Prio[CBT[a]]``,
  ``MIN`` as the worst item, since Fig. 1's ``x >= e`` keeps the best; ``CBT[..] :=
  a`` stores the winning leaf): pick the winner by key, then -- only if the two
  buckets overlap -- pool them and give the winner its best ``|Prio[w]|`` items and
  the loser the rest (SELECT, done as a merge of two sorted rows).  The paper keeps
  ``n``; we keep each bucket's size, which is ``n`` for full buckets and is what
  makes the step sound for partial ones: the loser's key does not change and the
  winner's only improves, so the subtrees below stay valid.  Hence replaying the
  matches bottom-up along the path of a leaf whose bucket changed in *any* way
  restores the invariant.  Several changed leaves are replayed together, one
  vectorised numpy step per level for all dirty nodes of that level: the
  bulk-synchronous form of the paper.
* Fig. 1 puts a new set S in a new leaf ``i`` by walking the root-to-leaf path once,
  keeping at each distinct winner ``a`` the best of ``Prio[a] U S`` and passing the
  rest down to ``Prio[i]``.  We write S into the new leaf first and replay its path
  bottom-up: every match on the path does the same SELECT between the bucket coming
  up from ``i``'s side and the winner of the other side, and the result satisfies the
  same invariant.  One replay routine then serves insert, update, delete and extract.
* Replays are deferred: mutations only mark leaves dirty, and the next read of the
  order (extract, peek, ``_check``) replays them all at once, so an insert-many
  followed by an extract-many (one superstep) replays each dirty path once.
* ``extract_many(r)``: the paper extracts the champion's bucket and runs Fig. 2 once
  per bucket.  We visit buckets best-first from the champion down the heap of
  buckets (the children of bucket ``b`` are the losers along ``b``'s winning path)
  until the items seen that beat every unseen bucket number at least ``r``, take the
  best ``r`` of them (a prefix of each bucket), and replay the emptied buckets'
  paths all at once; the buckets left non-empty keep their key.
* Insertion writes the sorted batch as full buckets into empty leaves (the paper's
  new rightmost leaves; the tree doubles when none are left), the remainder into
  the fullest partial bucket where it fits (else into a new leaf), and marks them
  dirty.  When more than a quarter of the buckets are partial, those are repacked.

Worked example (``bucket_size=2``, priorities shown instead of sort keys)::

    >>> q = CBT(bucket_size=2)
    >>> q.insert_many(np.array([10, 11, 12, 13, 14, 15, 16]),
    ...               np.array([0.5, 0.9, 0.1, 0.7, 0.3, 0.8, 0.6]))
    >>> q._flush()
    >>> q._cbt.tolist()                    # node 1 (root) .. 3, then leaves 4..7
    [0, 0, 0, 2, 0, 1, 2, 3]
    >>> [q._decode(q._s[j, :q._cnt[j]]).tolist() for j in range(4)]
    [[0.9, 0.8], [0.7, 0.6], [0.5, 0.3], [0.1]]

Leaf 0 holds the two best items and wins the root; node 2 (leaves 0, 1) is won by
leaf 0, node 3 (leaves 2, 3) by leaf 2, whose worst item 0.3 beats leaf 3's 0.1.
``_table.vals[_table.find(16)] == 1``: item 16 (0.6) sits in leaf 1.

Complexity (N items, n = bucket size, L ~ N/n leaves, h = log2 L):
``insert_many(R)``: O(R log R) to sort the batch, O(R) expected for the id table,
plus the deferred replay: O(n) per dirty node, at most (R/n + 1) * h nodes.
``extract_many(r)``: O(r log r) to select among the visited buckets (typically
O(r/n) of them, O(h) each to list their children), plus the replay of the emptied
buckets' paths as above.  ``update`` / ``delete``: O(n) in the bucket plus a replay
of one path, O(n log L).  ``peek(r)``: as extract, without the replay.
``len``, ``in``: O(1) expected.
"""

from __future__ import annotations

import heapq
import operator

import numpy as np

from bspcrawl.cbt.idtable import IdTable

PAD = np.iinfo(np.int64).max  # sort key of an empty bucket slot: after every real key
_FLIP = np.int64(0x7FFF_FFFF_FFFF_FFFF)
_INT64 = (-(2**63), 2**63 - 1)


def _encode(priorities: np.ndarray) -> np.ndarray:
    """float64 priorities (no NaN) -> int64 keys, ascending = higher priority first."""
    bits = (0.0 - priorities).view(np.int64)  # 0.0 - x also folds -0.0 into +0.0
    return bits ^ ((bits >> 63) & _FLIP)


def _decode(keys: np.ndarray) -> np.ndarray:
    """Inverse of :func:`_encode`."""
    bits = keys ^ ((keys >> 63) & _FLIP)
    return 0.0 - bits.view(np.float64)


class CBT:
    """Bulk priority queue of int64 ids with float64 priorities (higher = first).

    Build / change: :meth:`insert_many`, :meth:`update`, :meth:`delete`.
    Read: :meth:`extract_many`, :meth:`peek`, ``len(q)``, ``bool(q)``, ``id in q``.
    Debug: :meth:`_check` asserts every invariant; ``counters`` counts tree work.
    Ties between equal priorities go to the smaller id.

    >>> q = CBT(bucket_size=4)
    >>> q.insert_many(np.array([5, -2, 9]), np.array([0.5, 2.0, 0.5]))
    >>> q.update(9, 3.0)
    >>> ids, prios = q.extract_many(2)
    >>> ids.tolist(), prios.tolist()
    ([9, -2], [3.0, 2.0])
    >>> len(q), 5 in q, 9 in q
    (1, True, False)
    """

    _decode = staticmethod(_decode)

    def __init__(self, bucket_size: int = 256) -> None:
        if isinstance(bucket_size, bool) or not isinstance(bucket_size, int | np.integer):
            raise TypeError(f"bucket_size must be an int, got {type(bucket_size).__name__}")
        if bucket_size < 1:
            raise ValueError(f"bucket_size must be >= 1, got {bucket_size}")
        self._n = int(bucket_size)
        self._col = np.arange(self._n)
        self.counters: dict[str, int] = {"cbt/matches": 0, "cbt/exchanges": 0,
                                         "cbt/exchange_items": 0, "cbt/repacks": 0,
                                         "cbt/rebuilds": 0}
        self._reset()

    def _reset(self, leaves: int = 1) -> None:
        """Empty queue with ``leaves`` (a power of two) empty buckets."""
        self._table = IdTable()
        self._size = 0
        self._alloc(leaves)

    def _alloc(self, leaves: int) -> None:
        self._L = leaves
        self._s = np.full((leaves, self._n), PAD, np.int64)
        self._h = np.zeros((leaves, self._n), np.int64)
        self._cnt = np.zeros(leaves, np.int64)
        self._cbt = np.zeros(2 * leaves, np.int64)
        self._cbt[leaves:] = np.arange(leaves)
        self._dirty: set[int] = set()
        self._build()

    # ------------------------------------------------------------------ public API

    @property
    def bucket_size(self) -> int:
        """The bucket size n (items per leaf)."""
        return self._n

    def __len__(self) -> int:
        """Number of items.  O(1)."""
        return self._size

    def __bool__(self) -> bool:
        return self._size > 0

    def __contains__(self, item: object) -> bool:
        """Whether id ``item`` is queued.  O(1) expected."""
        try:
            key = operator.index(item)  # type: ignore[arg-type]
        except TypeError:
            return False
        if isinstance(item, bool) or not _INT64[0] <= key <= _INT64[1]:
            return False
        return self._table.find(key) >= 0

    def insert_many(self, ids: np.ndarray, priorities: np.ndarray) -> None:
        """Insert R new items.  O(R log R) plus the deferred replay (see module doc).

        ``ids``: 1-D integers (converted to int64; floats, bools, objects: TypeError);
        ``priorities``: 1-D reals of the same length (converted to float64; NaN:
        ValueError).  ValueError, and nothing inserted, if an id is already queued or
        repeated in ``ids``; use :meth:`update` to change a priority."""
        ids = _as_ids(ids)
        prios = _as_priorities(priorities, ids.shape)
        if ids.size == 0:
            return
        keys = _encode(prios)
        remap = self._table.reserve(ids.size)
        if remap is not None:
            self._remap(remap)
        handles = self._table.insert(ids)
        order = self._order(keys, ids)
        self._place(keys[order], handles[order])
        self._size += ids.size
        self._maintain()

    def extract_many(self, r: int) -> tuple[np.ndarray, np.ndarray]:
        """Remove and return the min(r, len) best items: (int64 ids, float64 priorities),
        by non-increasing priority (ties: smaller id first).
        O(r log r + (r/n) log L) plus the replay of the emptied buckets."""
        r = min(_as_count(r), self._size)
        if r == 0:
            return np.empty(0, np.int64), np.empty(0, np.float64)
        if r == self._size:
            ids, prios = self._all()
            self._reset()
            return ids, prios
        rows, take, keys, handles = self._top(r)
        n, s, h, cnt = self._n, self._s, self._h, self._cnt
        left = cnt[rows] - take
        src = np.minimum(take[:, None] + self._col, n - 1) + (rows * n)[:, None]
        keep = self._col < left[:, None]
        s[rows] = np.where(keep, s.ravel()[src], PAD)
        h[rows] = np.where(keep, h.ravel()[src], 0)
        cnt[rows] = left
        self._dirty.update(rows[left == 0].tolist())
        ids = self._table.keys[handles]
        self._table.remove(handles)
        self._size -= r
        self._maintain()
        return ids, _decode(keys)

    def peek(self, r: int = 1) -> tuple[np.ndarray, np.ndarray]:
        """The items ``extract_many(r)`` would return, without removing them."""
        r = min(_as_count(r), self._size)
        if r == 0:
            return np.empty(0, np.int64), np.empty(0, np.float64)
        if r == self._size:
            return self._all()
        _, _, keys, handles = self._top(r)
        return self._table.keys[handles], _decode(keys)

    def update(self, item: int, priority: float) -> None:
        """Give queued id ``item`` a new priority (KeyError if absent).
        O(n) in its bucket plus the replay of one path, O(n log L)."""
        key = int(_encode(np.array([_as_priority(priority)]))[0])
        handle = self._find(item)
        row = int(self._table.vals[handle])
        c = int(self._cnt[row])
        rs, rh = self._s[row, :c], self._h[row, :c]
        i = int(np.flatnonzero(rh == handle)[0])
        rs, rh = np.delete(rs, i), np.delete(rh, i)
        ident = int(self._table.keys[handle])
        j = int(np.count_nonzero((rs < key) | ((rs == key) & (self._table.keys[rh] < ident))))
        self._s[row, :c] = np.insert(rs, j, key)
        self._h[row, :c] = np.insert(rh, j, handle)
        self._dirty.add(row)

    def delete(self, item: int) -> None:
        """Remove queued id ``item`` (KeyError if absent).  Cost as :meth:`update`."""
        handle = self._find(item)
        row = int(self._table.vals[handle])
        c = int(self._cnt[row])
        i = int(np.flatnonzero(self._h[row, :c] == handle)[0])
        self._s[row, i:c - 1] = self._s[row, i + 1:c]
        self._h[row, i:c - 1] = self._h[row, i + 1:c]
        self._s[row, c - 1] = PAD
        self._h[row, c - 1] = 0
        self._cnt[row] = c - 1
        self._table.remove(np.array([handle]))
        self._size -= 1
        self._dirty.add(row)
        self._maintain()

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
            lo //= 2

    def _flush(self) -> None:
        """Replay the matches on the paths of all dirty leaves, level by level (Fig. 2)."""
        if not self._dirty:
            return
        nodes = np.fromiter(self._dirty, np.int64, len(self._dirty)) + self._L
        self._dirty.clear()
        while self._L > 1 and nodes[0] > 1:
            nodes = np.unique(nodes >> 1)
            self._match(nodes)

    def _match(self, v: np.ndarray) -> None:
        """Play the matches at internal nodes v (all on one level)."""
        a, b = self._cbt[2 * v], self._cbt[2 * v + 1]
        a_wins, ws, wi = self._winners(a, b)
        w, lo = np.where(a_wins, a, b), np.where(a_wins, b, a)
        self._cbt[v] = w
        self.counters["cbt/matches"] += v.size
        # The loser must not hold an item that beats the winner's worst one.
        bs, bi = self._s[lo, 0], self._ids(self._h[lo, 0])
        clash = (self._cnt[lo] > 0) & ((bs < ws) | ((bs == ws) & (bi < wi)))
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
        self.counters["cbt/exchanges"] += k
        self.counters["cbt/exchange_items"] += int(cw.sum() + cl.sum())

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

    def _order(self, keys: np.ndarray, ids: np.ndarray) -> np.ndarray:
        """Argsort of one batch by (key, id)."""
        o = np.argsort(keys, kind="stable")
        sk = keys[o]
        if (sk[1:] == sk[:-1]).any():
            o = np.lexsort((ids, keys))
        return o

    # ------------------------------------------------------------------ bulk steps

    def _top(self, r: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The best r items (0 < r < len): (bucket rows, items taken from each row's
        front, keys, handles), best first.  Visits buckets best-first from the champion
        until the items seen that beat every unseen bucket number at least r."""
        self._flush()
        s, h, cnt, cbt, L = self._s, self._h, self._cnt, self._cbt, self._L
        keys = self._table.keys

        def entry(b: int) -> tuple[int, int, int]:  # (key, id) of b's best item, b
            return s.item(b, 0), keys.item(h.item(b, 0)), b

        frontier = [entry(cbt.item(1))]
        seen: list[int] = []
        total, target = 0, r
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
            if got >= r:
                break
            target = total + r - got
        gs, gh = rs[good], rh[good]
        o = self._order(gs, keys[gh])[:r]
        take = np.bincount(np.nonzero(good)[0][o], minlength=rows.size)
        return rows, take, gs[o], gh[o]

    def _all(self) -> tuple[np.ndarray, np.ndarray]:
        """Every item, best first.  O(N log N)."""
        valid = self._col < self._cnt[:, None]
        keys, hand = self._s[valid], self._h[valid]
        ids = self._ids(hand)
        o = self._order(keys, ids)
        return ids[o], _decode(keys[o])

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
            rows = np.append(rows, host)
        self._dirty.update(rows.tolist())

    def _free_leaves(self, need: int) -> np.ndarray:
        """``need`` empty leaves, dirty ones first (their paths get replayed anyway);
        doubles the tree when there are too few."""
        empty = np.flatnonzero(self._cnt == 0)
        if empty.size < need:
            self._flush()
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

    def _remap(self, remap: np.ndarray) -> None:
        """The id table rehashed: translate the handles stored in the buckets."""
        valid = self._col < self._cnt[:, None]
        self._h[valid] = remap[self._h[valid]]

    def _maintain(self) -> None:
        """Keep buckets mostly full and the tree at most ~8x larger than needed."""
        used = int(np.count_nonzero(self._cnt))
        if self._L > 16 and 8 * used < self._L:
            self._rebuild()
            return
        partial = np.flatnonzero((self._cnt > 0) & (self._cnt < self._n))
        if partial.size > 4 + used // 4:
            self._repack(partial)

    def _repack(self, rows: np.ndarray) -> None:
        """Merge the items of these buckets into as few full buckets as possible."""
        valid = self._col < self._cnt[rows][:, None]
        keys, hand = self._s[rows][valid], self._h[rows][valid]
        o = self._order(keys, self._ids(hand))
        self._s[rows] = PAD
        self._h[rows] = 0
        self._cnt[rows] = 0
        self._dirty.update(rows.tolist())
        self._place(keys[o], hand[o])
        self.counters["cbt/repacks"] += 1

    def _rebuild(self) -> None:
        """Lay every item out again in sorted full buckets (heap order holds trivially)."""
        valid = self._col < self._cnt[:, None]
        keys, hand = self._s[valid], self._h[valid]
        o = self._order(keys, self._ids(hand))
        keys, hand = keys[o], hand[o]
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
        self._build()
        self.counters["cbt/rebuilds"] += 1

    def _find(self, item: object) -> int:
        if isinstance(item, bool):
            raise TypeError("ids are integers, not bool")
        key = operator.index(item)  # type: ignore[arg-type]
        handle = self._table.find(key) if _INT64[0] <= key <= _INT64[1] else -1
        if handle < 0:
            raise KeyError(item)
        return handle

    # ------------------------------------------------------------------ invariants

    def _check(self) -> None:
        """Assert every invariant (replaying pending matches first)."""
        self._flush()
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


def _as_count(r: object) -> int:
    if isinstance(r, bool):
        raise TypeError("r must be an int")
    r = operator.index(r)  # type: ignore[arg-type]
    if r < 0:
        raise ValueError(f"r must be >= 0, got {r}")
    return r


def _as_ids(ids: object) -> np.ndarray:
    a = np.asarray(ids)
    if a.ndim != 1:
        raise ValueError(f"ids must be 1-D, got shape {a.shape}")
    if a.size == 0 and a.dtype.kind in "iuf":
        return np.empty(0, np.int64)
    if a.dtype.kind not in "iu":
        raise TypeError(f"ids must be integers, got dtype {a.dtype}")
    if a.dtype == np.uint64 and (a > _INT64[1]).any():
        raise ValueError("ids must fit in int64")
    return a.astype(np.int64)


def _as_priorities(priorities: object, shape: tuple[int, ...]) -> np.ndarray:
    p = np.asarray(priorities)
    if p.size and p.dtype.kind not in "iuf":
        raise TypeError(f"priorities must be real numbers, got dtype {p.dtype}")
    p = p.astype(np.float64)
    if p.shape != shape:
        raise ValueError(f"priorities have shape {p.shape}, ids {shape}")
    if np.isnan(p).any():
        raise ValueError("priorities must not be NaN")
    return p


def _as_priority(priority: object) -> float:
    if isinstance(priority, bool) or not isinstance(priority, int | float | np.number):
        raise TypeError(f"priority must be a real number, got {type(priority).__name__}")
    p = float(priority)
    if p != p:
        raise ValueError("priority must not be NaN")
    return p
