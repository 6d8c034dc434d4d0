"""The seen set: every URL fingerprint a rank has accepted, exact, tested a batch at a time.

As IRLbot's DRUM (Lee, Leonard, Wang, Loguinov, "IRLbot: Scaling to 6 Billion Pages and
Beyond", WWW 2008) URLs are checked a batch (a superstep) at a time against sorted int64
arrays of fingerprints, with no false positives. Unlike the other users of
:class:`~bspcrawl.sortedkeys.SortedKeys` it must keep within a memory budget by spilling to
disk, so its bulk is a list of *shards*, sorted arrays over disjoint key ranges (some
memory-mapped files), and only the keys in no shard yet, the *delta*, are a ``SortedKeys``.
A worked example (``shard_max`` = 4, ``delta_min`` = 4)::

    shards = [[-9, -4, 2, 5], [8, 11, 20]]   # each sorted; disjoint ranges, in key order
    lows   = [INT64_MIN, 8]                  # shard i holds the keys in [lows[i], lows[i+1])
    delta  = SortedKeys {-1, 3, 7}           # in no shard

``contains_batch([7, 6, 20])`` asks the delta, then cuts the sorted batch at ``lows[1:]``
and searches each shard for its slice: ``[True, False, True]``. A shard is searched
through its *fences* (every ``FENCE``-th key, in RAM), so a probe of a spilled shard reads
one block. ``add_batch([6, 6, 8])`` puts 6 in the delta once: ``[True, False, False]``.

When the delta outgrows ``max(delta_min, len / 16)`` keys it is merged into the shards one
shard at a time (long ones cut at ``shard_max``). Past ``memory`` bytes in RAM, whole shards
spill to ``spill_dir`` as ``.npy`` files searched memory-mapped. Spill files are a cache:
a checkpoint writes :meth:`SeenSet.to_array`, and a new set deletes a killed one's files.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import numpy as np

from bspcrawl.sortedkeys import SortedKeys, as_keys, increasing

SHARD_MAX = 1 << 20  # keys per shard before it is cut
DELTA_MIN = 1 << 16  # the delta may hold this many keys before a merge, whatever len is
FENCE = 64  # a shard's fences are every FENCE-th key
INT64_MIN = np.iinfo(np.int64).min


def _found_fenced(run: np.ndarray, fences: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """Which of the sorted ``keys`` are in ``run``: the block from its ``fences``, then
    binary lifting within it."""
    if not len(run):
        return np.zeros(len(keys), dtype=bool)
    at = np.searchsorted(fences, keys, side="right") - 1
    np.maximum(at, 0, out=at)
    at *= FENCE  # the last key <= key is in run[at:at + FENCE]
    last, step = len(run) - 1, FENCE // 2
    while step:
        ahead = np.minimum(at + step, last)
        at = np.where(run[ahead] <= keys, ahead, at)
        step //= 2
    return np.asarray(run[at] == keys)


class SeenSet:
    """An exact set of int64 URL fingerprints, tested and grown a batch at a time.

    API: :meth:`contains_batch`, :meth:`add_batch`, ``in``, ``len``; :meth:`to_array` for
    checkpoints; :meth:`close` deletes the spill files.

    Invariants (:meth:`_check`): every shard is strictly increasing, within its range
    ``[lows[i], lows[i+1])``, and its fences are its every FENCE-th key; no delta key is in
    a shard; ``len`` counts them all; a spilled shard is a read-only map of its file in
    ``spill_dir``, and no other file is there.
    """

    def __init__(self, memory: int = 1 << 30, spill_dir: Path | None = None,
                 shard_max: int = SHARD_MAX, delta_min: int = DELTA_MIN) -> None:
        if shard_max < 2 or delta_min < 1 or memory < 0:
            raise ValueError("shard_max must be >= 2, delta_min >= 1, memory >= 0")
        self.memory, self.spill_dir = memory, spill_dir
        self.shard_max, self.delta_min = shard_max, delta_min
        self._shards: list[np.ndarray] = [np.empty(0, np.int64)]
        self._fences: list[np.ndarray] = [np.empty(0, np.int64)]  # in RAM, spilled or not
        self._lows = np.array([INT64_MIN], dtype=np.int64)
        self._delta = SortedKeys()
        self._len = 0
        self._files = 0  # spill files written, for their names
        if spill_dir is not None and spill_dir.exists():
            for old in spill_dir.glob("run-*.npy*"):  # a killed process's cache
                old.unlink()

    def __len__(self) -> int:
        return self._len

    def __contains__(self, fp: int) -> bool:
        return bool(self.contains_batch(np.array([fp], dtype=np.int64))[0])

    @property
    def ram_bytes(self) -> int:
        """Bytes of keys held in RAM (the delta, the fences and the shards not spilled)."""
        return self._delta.nbytes + 8 * (
            sum(map(len, self._fences))
            + sum(len(s) for s in self._shards if not isinstance(s, np.memmap)))

    @property
    def disk_bytes(self) -> int:
        """Bytes of keys in spill files."""
        return 8 * sum(len(s) for s in self._shards if isinstance(s, np.memmap))

    def contains_batch(self, fps: np.ndarray | list[int]) -> np.ndarray:
        """A bool per fingerprint: is it in the set? O(b log n)."""
        keys = as_keys(fps)
        order = np.argsort(keys, kind="stable")
        found = self._delta.contains(keys)
        found[order] |= self._in_shards(keys[order])
        return found

    def _in_shards(self, ordered: np.ndarray) -> np.ndarray:
        hit = np.zeros(len(ordered), dtype=bool)
        cuts = np.searchsorted(ordered, self._lows[1:]).tolist()
        for shard, fences, a, b in zip(self._shards, self._fences, [0, *cuts],
                                       [*cuts, len(ordered)], strict=True):
            if a < b:
                hit[a:b] = _found_fenced(shard, fences, ordered[a:b])
        return hit

    def add_batch(self, fps: np.ndarray | list[int]) -> np.ndarray:
        """Add the fingerprints; a bool per fingerprint: was it new (a repeat's first only)?
        Amortised O(b log n)."""
        keys = as_keys(fps)
        unique, first = np.unique(keys, return_index=True)
        fresh = ~self._in_shards(unique)
        fresh[fresh] = self._delta.add(unique[fresh])
        new = np.zeros(len(keys), dtype=bool)
        new[first[fresh]] = True
        self._len += int(fresh.sum())
        if len(self._delta) > self._delta_limit():
            self._flush()
        return new

    def to_array(self) -> np.ndarray:
        """Every fingerprint, sorted (a checkpoint's copy)."""
        shards = np.concatenate(self._shards)  # in key order: one sorted run
        delta = self._delta.to_array()
        return np.insert(shards, np.searchsorted(shards, delta), delta)

    def close(self) -> None:
        """Delete the spill files and their directory if empty (the set is unusable after)."""
        for i, shard in enumerate(self._shards):
            if isinstance(shard, np.memmap):
                self._unlink(shard)
                self._shards[i] = self._fences[i] = np.empty(0, np.int64)
        if self.spill_dir is not None:
            with contextlib.suppress(OSError):
                self.spill_dir.rmdir()

    def _delta_limit(self) -> int:
        limit = max(self.delta_min, self._len // 16)
        return max(1, min(limit, self.memory // 64)) if self.spill_dir else limit

    def _flush(self) -> None:
        """Merge the delta into the shards, cut long ones, then spill while RAM holds more
        than ``memory`` bytes (at most one spilled shard loaded at a time)."""
        delta = self._delta.to_array()
        self._delta = SortedKeys()
        cuts = [0, *np.searchsorted(delta, self._lows[1:]).tolist(), len(delta)]
        shards: list[np.ndarray] = []
        fences: list[np.ndarray] = []
        lows: list[int] = []
        for i, shard in enumerate(self._shards):
            self._shards[i] = delta[:0]  # let it go once merged: one shard at a time
            part = delta[cuts[i]:cuts[i + 1]]
            if not len(part):
                shards.append(shard)
                fences.append(self._fences[i])
                lows.append(int(self._lows[i]))
                continue
            spilled = isinstance(shard, np.memmap)
            merged = np.insert(shard, np.searchsorted(shard, part), part)
            if spilled:
                self._unlink(shard)
            pieces = -(-len(merged) // self.shard_max)  # enough pieces of at most shard_max
            for k, piece in enumerate(np.array_split(merged, pieces)):
                piece = piece if pieces == 1 else piece.copy()  # no piece keeps all alive
                fences.append(piece[::FENCE].copy())
                shards.append(self._spill(piece) if spilled else piece)
                lows.append(int(self._lows[i]) if k == 0 else int(piece[0]))
        self._shards, self._fences = shards, fences
        self._lows = np.array(lows, dtype=np.int64)
        if self.spill_dir is not None:
            ram = self.ram_bytes
            for i in sorted(range(len(shards)), key=lambda i: -len(shards[i])):
                if ram <= self.memory:
                    break
                if len(shards[i]) and not isinstance(shards[i], np.memmap):
                    ram -= 8 * len(shards[i])
                    self._shards[i] = self._spill(shards[i])

    def _spill(self, keys: np.ndarray) -> np.ndarray:
        assert self.spill_dir is not None
        self.spill_dir.mkdir(parents=True, exist_ok=True)
        path = self.spill_dir / f"run-{self._files:08d}.npy"
        self._files += 1
        np.save(path, keys)
        return np.load(path, mmap_mode="r")

    @staticmethod
    def _unlink(shard: np.memmap) -> None:
        os.unlink(shard.filename)  # its pages stay readable until the map is dropped

    def _check(self) -> None:
        """Assert the invariants of the class docstring (the stress test calls it)."""
        assert len(self._shards) == len(self._lows) >= 1 and self._lows[0] == INT64_MIN
        assert increasing(self._lows), "shard ranges out of order"
        bounds = [*self._lows[1:].tolist(), None]
        assert len(self._fences) == len(self._shards)
        for shard, low, high, fences in zip(self._shards, self._lows.tolist(), bounds,
                                            self._fences, strict=True):
            assert increasing(shard), "a shard not strictly increasing"
            assert np.array_equal(fences, shard[::FENCE]), "a shard's fences are stale"
            assert not len(shard) or shard[0] >= low and (high is None or shard[-1] < high)
        self._delta._check()
        delta = self._delta.to_array()
        assert not self._in_shards(delta).any(), "a key both in the delta and a shard"
        assert self._len == len(delta) + sum(map(len, self._shards))
        files = {Path(s.filename).name for s in self._shards if isinstance(s, np.memmap)}
        on_disk = ({p.name for p in self.spill_dir.glob("run-*")} if self.spill_dir
                   else set())
        assert files == on_disk, (files, on_disk)
