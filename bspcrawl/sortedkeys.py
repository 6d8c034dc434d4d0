"""Sorted int64 keys, each with the row it was added as: the one exact-membership structure.

The seen set, the validators, the history and the vocabulary all ask one question of a
batch of 64-bit fingerprints: which of them are known, and where is each one's data. A
:class:`SortedKeys` answers it with one vectorised binary search a batch (the batch style
of IRLbot's DRUM; Lee, Leonard, Wang, Loguinov, "IRLbot: Scaling to 6 Billion Pages and
Beyond", WWW 2008), 16 bytes a key, no false positives.

Each key gets a *row* when it is first added: the number of distinct keys added before
it, so a user keeps its per-key data in plain append-only arrays indexed by row. The keys
live in two sorted levels: ``keys``, the bulk, and ``recent``, keys added since the last
merge, which are folded into ``keys`` (one ``np.insert``, O(n)) when they outnumber
``recent_max``: an add costs O(b log n + recent_max), and each merge O(n). A worked
example, with ``recent_max`` = 2::

    add([30, 10, 20])       keys = [10, 20, 30]   rows = [1, 2, 0]   (an empty set: at once)
    add([25, 10, 5, 25])    -> new [True, False, True, False]
                            recent = [5, 25]      recent_rows = [4, 3]
    find([25, 7, 30])       -> [3, -1, 0]
    add([1])                recent has 3 > 2 keys: merged
                            keys = [1, 5, 10, 20, 25, 30]   rows = [5, 4, 1, 2, 3, 0]
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

Keys = np.ndarray | Sequence[int]
RECENT_MAX = 1 << 16  # recent keys merged into the bulk past this many


def as_keys(keys: Keys) -> np.ndarray:
    """``keys`` as a 1-D int64 array (no copy when it is one already)."""
    return np.ascontiguousarray(keys, dtype=np.int64).ravel()


def increasing(a: np.ndarray) -> bool:
    """Strictly increasing? (``np.diff`` of int64 keys would overflow.)"""
    return bool(np.all(a[1:] > a[:-1]))


def positions(run: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """Where each of ``keys`` is in the sorted ``run``, -1 where it is not."""
    if not len(run):
        return np.full(len(keys), -1, np.int64)
    at = np.minimum(np.searchsorted(run, keys), len(run) - 1)
    return np.where(run[at] == keys, at, -1)


def grown(column: np.ndarray, rows: int) -> np.ndarray:
    """A per-row array with room for ``rows`` rows: itself, or a zero-padded copy at least
    a quarter longer (amortised O(1) a row)."""
    if len(column) >= rows:
        return column
    out = np.zeros(max(rows, len(column) * 5 // 4), column.dtype)
    out[:len(column)] = column
    return out


class SortedKeys:
    """An exact set of int64 keys, each mapped to its row (the order it was added in).

    API: :meth:`add`, :meth:`find`, :meth:`contains`, ``len``, :meth:`merge`,
    :meth:`to_array`; each batch call O(b log n) plus amortised merges. Invariants
    (:meth:`_check`): ``keys`` and ``recent`` strictly increasing and disjoint; their rows
    together 0 .. len - 1, each once.
    """

    def __init__(self, recent_max: int = RECENT_MAX) -> None:
        if recent_max < 1:
            raise ValueError(f"recent_max must be >= 1, not {recent_max}")
        self.recent_max = recent_max
        self._keys = self._recent = np.empty(0, np.int64)
        self._rows = self._recent_rows = np.empty(0, np.int64)

    def __len__(self) -> int:
        return len(self._keys) + len(self._recent)

    @property
    def nbytes(self) -> int:
        """Bytes of the arrays (16 a key)."""
        return 16 * len(self)

    def find(self, keys: Keys) -> np.ndarray:
        """The row of each key, -1 for a key not in the set."""
        keys = as_keys(keys)
        rows = np.full(len(keys), -1, np.int64)
        for run, run_rows in ((self._keys, self._rows), (self._recent, self._recent_rows)):
            at = positions(run, keys)
            hit = at >= 0
            rows[hit] = run_rows[at[hit]]
        return rows

    def contains(self, keys: Keys) -> np.ndarray:
        """A bool per key: is it in the set?"""
        return self.find(keys) >= 0

    def add(self, keys: Keys) -> np.ndarray:
        """Add the keys; a bool per key: was it new? Of a key repeated in the batch only the
        first is new. New keys get the next rows in the order of their first occurrence."""
        keys = as_keys(keys)
        new = np.zeros(len(keys), bool)
        unique, first = np.unique(keys, return_index=True)
        fresh = ~self.contains(unique)
        if not fresh.any():
            return new
        unique, first = unique[fresh], first[fresh]
        new[first] = True
        rows = np.empty(len(unique), np.int64)
        rows[np.argsort(first)] = np.arange(len(self), len(self) + len(unique))
        if not len(self._keys) and not len(self._recent):
            self._keys, self._rows = unique, rows  # e.g. a checkpoint into an empty set
            return new
        at = np.searchsorted(self._recent, unique)
        self._recent = np.insert(self._recent, at, unique)
        self._recent_rows = np.insert(self._recent_rows, at, rows)
        if len(self._recent) > self.recent_max:
            self.merge()
        return new

    def merge(self) -> None:
        """Fold the recent keys into the bulk (O(n))."""
        if len(self._recent):
            at = np.searchsorted(self._keys, self._recent)
            self._keys = np.insert(self._keys, at, self._recent)
            self._rows = np.insert(self._rows, at, self._recent_rows)
            self._recent = self._recent_rows = np.empty(0, np.int64)

    def to_array(self) -> np.ndarray:
        """Every key, sorted (a new array)."""
        return np.insert(self._keys, np.searchsorted(self._keys, self._recent), self._recent)

    def _check(self) -> None:
        """Assert the invariants of the class docstring (the stress test calls it)."""
        assert increasing(self._keys) and increasing(self._recent), "levels not sorted"
        assert len(self._keys) == len(self._rows) and len(self._recent) == len(self._recent_rows)
        assert not (positions(self._keys, self._recent) >= 0).any(), "a key in both levels"
        rows = np.sort(np.concatenate([self._rows, self._recent_rows]))
        assert np.array_equal(rows, np.arange(len(self))), "rows not 0 .. len - 1"
