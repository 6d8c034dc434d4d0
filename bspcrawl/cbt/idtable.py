"""A vectorised hash table from int64 ids to non-negative ints (the CBT's ``Leaf[]``).

Items are 64-bit URL fingerprints, so ``Leaf[]`` of Marin, Paredes and Bonacic (WIDM
2008) cannot be an array indexed by id, and a ``dict`` costs a Python round trip per
item. Open addressing with linear probing over ``cap`` (a power of two) slots::

    keys  int64[cap]  the id stored in the slot
    vals  int64[cap]  its value (>= 0), EMPTY (-1) or TOMB (-2: deleted, probing goes on)

A slot is an id's *handle* until the next rehash, which returns ``remap[old] -> new``.
Batches probe all ids at once, one step per numpy round; of ids claiming one slot the
earliest in the batch wins (deterministic). A rehash to 3-6 slots per live id runs when
live + tombstones pass cap / 2 or the table is mostly empty.
"""

from __future__ import annotations

import h5py
import numpy as np

EMPTY, TOMB = -1, -2
_MULT = np.uint64(0x9E3779B97F4A7C15)  # Fibonacci hashing: multiply, keep the top bits
_SCALAR = 32  # probe sequences still open when this few remain finish in a Python loop


class IdTable:
    """Map distinct int64 ids to int64 values >= 0; batch operations are vectorised.

    >>> t = IdTable()
    >>> h = t.insert(np.array([7, -3], dtype=np.int64))
    >>> t.vals[h] = [10, 20]
    >>> int(t.vals[t.find(-3)]), t.find(5), len(t)
    (20, -1, 2)
    """

    def __init__(self, capacity: int = 16) -> None:
        self._alloc(max(16, 1 << int(capacity - 1).bit_length()))

    def _alloc(self, cap: int) -> None:
        self.cap = cap
        self.mask = cap - 1
        self.shift = np.uint64(64 - (cap.bit_length() - 1))
        self.keys = np.zeros(cap, np.int64)
        self.vals = np.full(cap, EMPTY, np.int64)
        self.live = 0
        self.tomb = 0

    def __len__(self) -> int:
        return self.live

    def _home(self, keys: np.ndarray) -> np.ndarray:
        return ((keys.view(np.uint64) * _MULT) >> self.shift).astype(np.int64)

    def find(self, key: int) -> int:
        """Handle of ``key``, or -1 if absent.  Expected O(1)."""
        p = int(self._home(np.array([key], dtype=np.int64))[0])
        keys, vals = self.keys, self.vals
        while True:
            v = vals[p]
            if v == EMPTY:
                return -1
            if v >= 0 and keys[p] == key:
                return p
            p = (p + 1) & self.mask

    def reserve(self, extra: int) -> np.ndarray | None:
        """Make room for ``extra`` more ids.  Rehashes (O(cap)) when live + tombstones +
        extra would pass half the slots, or fill less than 1/16 of a large table; then
        returns ``remap`` (old handle -> new handle, -1 where no id lived), else None."""
        need = self.live + extra
        if 2 * (need + self.tomb) <= self.cap and (self.cap <= 1024 or 16 * need >= self.cap):
            return None
        live = np.flatnonzero(self.vals >= 0)
        keys, vals, old_cap = self.keys[live], self.vals[live], self.cap
        cap = 16
        while cap < 3 * (live.size + extra):
            cap *= 2
        self._alloc(cap)
        new = self.insert(keys, check=False)
        self.vals[new] = vals
        remap = np.full(old_cap, -1, np.int64)
        remap[live] = new
        return remap

    def insert(self, keys: np.ndarray, check: bool = True) -> np.ndarray:
        """Insert distinct new ids (int64 array) with value 0; return their handles.

        Raises ValueError, leaving the table unchanged, if an id is already present or
        repeated in ``keys`` (``check=False`` skips that test, for a rehash).  The
        caller must have called ``reserve(len(keys))``.  Expected O(len(keys))."""
        m = keys.size
        if 2 * (self.live + self.tomb + m) > self.cap:
            raise RuntimeError("IdTable.insert without reserve()")
        kt, vt, mask = self.keys, self.vals, self.mask
        # Phase 1: each id's first free slot (a tombstone may be reused), and, when
        # checking, the proof that the id is absent: an EMPTY slot ends its sequence.
        cand = np.full(m, -1, np.int64)
        pos = self._home(keys)
        pending = np.arange(m)
        while pending.size > _SCALAR:
            p = pos[pending]
            v = vt[p]
            if check:
                live = v >= 0
                hit = kt[p[live]] == keys[pending[live]]
                if hit.any():
                    raise ValueError(f"id {int(keys[pending[live][hit][0]])} is already queued")
            tomb = (v == TOMB) & (cand[pending] < 0)
            cand[pending[tomb]] = p[tomb]
            end = (v == EMPTY) if check else (v < 0)
            done = pending[end]
            cand[done] = np.where(cand[done] < 0, p[end], cand[done])
            pending = pending[~end]
            pos[pending] = (p[~end] + 1) & mask
        for i in pending.tolist():  # the few long probe sequences: one at a time
            p, key, c = int(pos[i]), int(keys[i]), int(cand[i])
            while (v := vt[p]) != EMPTY and (check or v >= 0):
                if v >= 0 and kt[p] == key:
                    raise ValueError(f"id {key} is already queued")
                if v == TOMB and c < 0:
                    c = p
                p = (p + 1) & mask
            cand[i] = c if c >= 0 else p
        # Phase 2: claim the slots.  Claims are codes < TOMB written into vals; the
        # smallest batch index wins, the others probe on to the next free slot.
        handles = np.empty(m, np.int64)
        todo = np.arange(m)
        first = True
        while todo.size:
            c = cand[todo]
            was_tomb = vt[c] == TOMB
            np.minimum.at(vt, c, todo - (m + 3))
            owner = vt[c] + (m + 3)
            won = owner == todo
            if first and check and not won.all():
                # Equal ids share their probe sequence, so they collide in this round.
                met = np.unique(np.concatenate((todo[~won], owner[~won])))
                ids, n_ids = np.unique(keys[met], return_counts=True)
                if (n_ids > 1).any():
                    vt[c] = np.where(was_tomb, TOMB, EMPTY)
                    raise ValueError(f"id {int(ids[n_ids > 1][0])} is repeated")
            first = False
            w, cw = todo[won], c[won]
            kt[cw] = keys[w]
            vt[cw] = 0
            handles[w] = cw
            self.tomb -= int(np.count_nonzero(was_tomb[won]))
            todo = todo[~won]
            if todo.size:  # losers: the next slot that is neither live nor claimed
                p = (cand[todo] + 1) & mask
                while (busy := vt[p] >= 0).any():
                    p[busy] = (p[busy] + 1) & mask
                cand[todo] = p
        self.live += m
        return handles

    def remove(self, handles: np.ndarray) -> None:
        """Delete the ids at these (live, distinct) handles.  O(len(handles)) expected.

        A tombstone followed by an EMPTY slot ends no probe sequence, so it becomes
        EMPTY, and so may the tombstones before it: most deletions leave none."""
        vals, mask = self.vals, self.mask
        vals[handles] = TOMB
        self.live -= handles.size
        self.tomb += handles.size
        p = handles
        while p.size:
            p = p[(vals[p] == TOMB) & (vals[(p + 1) & mask] == EMPTY)]
            vals[p] = EMPTY
            self.tomb -= p.size
            p = (p - 1) & mask

    def save(self, group: h5py.Group) -> None:
        """Write the table to ``group`` (datasets ``keys``, ``vals``): an exact copy."""
        group.create_dataset("keys", data=self.keys)
        group.create_dataset("vals", data=self.vals)
        group.attrs["live"], group.attrs["tomb"] = self.live, self.tomb

    @classmethod
    def load(cls, group: h5py.Group) -> IdTable:
        """The table :meth:`save` wrote."""
        keys, vals = group["keys"][()], group["vals"][()]
        t = cls(keys.size)
        if t.cap != keys.size or vals.shape != keys.shape:
            raise ValueError(f"bad id table in {group.name}: {keys.size} slots")
        t.keys, t.vals = keys.astype(np.int64), vals.astype(np.int64)
        t.live, t.tomb = int(group.attrs["live"]), int(group.attrs["tomb"])
        return t
