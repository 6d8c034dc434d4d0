"""T CBTs worked by T threads (Marin, Paredes, Bonacic, WIDM 2008, Table 1 and Fig. 10).

Section 5 of the paper splits a processor's queue into T CBTs, one per thread, each bulk
operation running as T operations of R/T items.

* Item ``i`` lives in tree ``splitmix64(i) mod T`` (not the id table's Fibonacci hash,
  whose top bits would cluster each tree's table), so ``update``, ``delete`` and ``in``
  go to one tree and ids spread evenly.
* ``extract_many(R)`` returns the union of each tree's own top R/T, best first (the
  paper's reading: no global selection), not the global top R; other trees make up for
  a short one, so a batch has min(R, len) items.
* ``insert_many`` is all-or-nothing: repeated or queued ids are refused before any tree
  keeps its part.
* One task per tree per call on a pool of ``threads`` workers: a tree is touched by one
  task at a time, so there are no locks; each tree keeps its own ``counters``.

>>> q = ParallelCBT(trees=2, bucket_size=4)
>>> q.insert_many(np.arange(8), np.arange(8.0))      # item i has priority i
>>> q.tree_of(np.arange(8)).tolist()
[1, 1, 0, 1, 0, 0, 0, 1]
>>> q.extract_many(4)[0].tolist()    # 6, 5 from tree 0 and 7, 3 from tree 1; not 4
[7, 6, 5, 3]
>>> q.close()
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Self, TypeVar

import h5py
import numpy as np

from bspcrawl.cbt.base import FORMAT
from bspcrawl.cbt.keys import as_count, as_id, as_ids, as_priorities, encode, order
from bspcrawl.cbt.tree import CBT

T = TypeVar("T")
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)


def _positive_int(value: object, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if value < 1:
        raise ValueError(f"{name} must be >= 1, got {value}")
    return int(value)


class ParallelCBT:
    """T CBTs behind the CBT's API; bulk operations run one thread per tree.

    Build / change: :meth:`insert_many`, :meth:`update`, :meth:`delete`.
    Read: :meth:`extract_many` (each tree's top R/T, see the module doc),
    :meth:`peek`, ``len(q)``, ``bool(q)``, ``id in q``.
    Work: :meth:`flush`, ``trees`` (each with its ``counters``), ``counters`` (summed).
    Persist: :meth:`save`, :meth:`load`.  Threads: :meth:`close` or ``with``.
    """

    def __init__(self, trees: int = 2, bucket_size: int = 256,
                 threads: int | None = None) -> None:
        t = _positive_int(trees, "trees")
        self.trees = [CBT(bucket_size) for _ in range(t)]
        self._threads = t if threads is None else _positive_int(threads, "threads")
        self._pool: ThreadPoolExecutor | None = None

    # ------------------------------------------------------------------ threads

    def _run(self, fn: Callable[[CBT, object], T], args: Iterable[object]) -> list[T]:
        """``fn(tree, arg)`` for every tree with its argument, one task each; all tasks
        finish before the first exception (if any) is raised."""
        jobs = list(zip(self.trees, args, strict=True))
        if self._threads == 1 or len(jobs) == 1:
            return [fn(t, a) for t, a in jobs]
        if self._pool is None:
            self._pool = ThreadPoolExecutor(self._threads, thread_name_prefix="cbt")
        futures = [self._pool.submit(fn, t, a) for t, a in jobs]
        for f in futures:
            f.exception()  # wait for every task
        return [f.result() for f in futures]

    def close(self) -> None:
        """Stop the worker threads (a later bulk call starts them again)."""
        if self._pool is not None:
            self._pool.shutdown()
            self._pool = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ public API

    def tree_of(self, ids: np.ndarray) -> np.ndarray:
        """The tree of each id: splitmix64(id) mod T."""
        x = as_ids(ids).view(np.uint64) + _GOLDEN
        x = (x ^ (x >> np.uint64(30))) * _MIX1
        x = (x ^ (x >> np.uint64(27))) * _MIX2
        x ^= x >> np.uint64(31)
        return (x % np.uint64(len(self.trees))).astype(np.int64)

    def __len__(self) -> int:
        return sum(len(t) for t in self.trees)

    def __bool__(self) -> bool:
        return any(self.trees)

    def __contains__(self, item: object) -> bool:
        try:
            key = as_id(item)
        except TypeError:
            return False
        return key is not None and key in self._tree(key)

    @property
    def counters(self) -> dict[str, int]:
        """The trees' counters, summed."""
        total = dict.fromkeys(self.trees[0].counters, 0)
        for t in self.trees:
            for k, v in t.counters.items():
                total[k] += v
        return total

    def insert_many(self, ids: np.ndarray, priorities: np.ndarray) -> None:
        """Insert R new items, each into its tree, the trees in parallel.  Arguments and
        errors as :meth:`CBT.insert_many`; nothing is inserted if one is refused."""
        ids = as_ids(ids)
        prios = as_priorities(priorities, ids.shape)
        uniq, counts = np.unique(ids, return_counts=True)
        if (counts > 1).any():
            raise ValueError(f"id {int(uniq[counts > 1][0])} is repeated")
        parts = self._split(ids, prios)
        errors = self._run(_try_insert, parts)
        failed = [e for e in errors if e is not None]
        if failed:
            self._run(_undo_insert, [(p[0], e is None) for p, e in zip(parts, errors,
                                                                       strict=True)])
            raise failed[0]

    def extract_many(self, r: int) -> tuple[np.ndarray, np.ndarray]:
        """Remove and return min(r, len) items: each tree's best r/T (see the module
        doc), the union ordered by non-increasing priority, ties to the smaller id."""
        return self._union(self._run(CBT.extract_many, self._quotas(as_count(r))))

    def peek(self, r: int = 1) -> tuple[np.ndarray, np.ndarray]:
        """The items ``extract_many(r)`` would return, without removing them."""
        return self._union(self._run(CBT.peek, self._quotas(as_count(r))))

    def update(self, item: int, priority: float) -> None:
        """Give queued id ``item`` a new priority in its tree (KeyError if absent)."""
        self._tree(item).update(item, priority)

    def delete(self, item: int) -> None:
        """Remove queued id ``item`` from its tree (KeyError if absent)."""
        self._tree(item).delete(item)

    def flush(self) -> None:
        """Replay every tree's pending matches, the trees in parallel."""
        self._run(lambda t, _: t.flush(), [None] * len(self.trees))

    def save(self, group: h5py.Group) -> None:
        """Write every tree into the (empty) HDF5 ``group``: ``tree_0``, ``tree_1``, ..."""
        group.attrs["kind"] = type(self).__name__
        group.attrs["format"] = FORMAT
        group.attrs["trees"] = len(self.trees)
        for i, t in enumerate(self.trees):
            t.save(group.create_group(f"tree_{i}"))

    @classmethod
    def load(cls, group: h5py.Group, threads: int | None = None) -> Self:
        """The queue :meth:`save` wrote (ValueError if ``group`` holds something else)."""
        kind, fmt = group.attrs.get("kind"), group.attrs.get("format")
        if kind != cls.__name__ or fmt != FORMAT:
            raise ValueError(f"{group.name} holds {kind!r} format {fmt}, "
                             f"not a {cls.__name__} format {FORMAT}")
        trees = [CBT.load(group[f"tree_{i}"]) for i in range(int(group.attrs["trees"]))]
        q = cls(len(trees), trees[0].bucket_size, threads)
        q.trees = trees
        return q

    # ------------------------------------------------------------------ helpers

    def _tree(self, item: object) -> CBT:
        key = as_id(item)
        if key is None:
            raise KeyError(item)
        return self.trees[int(self.tree_of(np.array([key]))[0])]

    def _split(self, ids: np.ndarray, prios: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
        which = self.tree_of(ids)
        o = np.argsort(which, kind="stable")
        cuts = np.cumsum(np.bincount(which, minlength=len(self.trees)))[:-1]
        return list(zip(np.split(ids[o], cuts), np.split(prios[o], cuts), strict=True))

    def _quotas(self, r: int) -> list[int]:
        """r // T from each tree; what a small tree cannot give, and r mod T, come from
        the trees with the most items left."""
        sizes = np.array([len(t) for t in self.trees])
        q = np.minimum(sizes, r // len(self.trees))
        rest = min(r, int(sizes.sum())) - int(q.sum())
        while rest > 0:
            room = sizes - q
            live = np.flatnonzero(room)
            share = rest // live.size
            if share == 0:
                q[live[np.argsort(-room[live], kind="stable")[:rest]]] += 1
                break
            add = np.minimum(room[live], share)
            q[live] += add
            rest -= int(add.sum())
        return q.tolist()

    @staticmethod
    def _union(parts: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
        ids = np.concatenate([p[0] for p in parts])
        prios = np.concatenate([p[1] for p in parts])
        o = order(encode(prios), ids)
        return ids[o], prios[o]

    def _check(self) -> None:
        """Assert every tree's invariants, and that each item is in its own tree."""
        for i, t in enumerate(self.trees):
            t._check()
            ids = t.peek(len(t))[0]
            assert (self.tree_of(ids) == i).all(), f"tree {i} holds another tree's item"

    def __repr__(self) -> str:
        return f"ParallelCBT(trees={len(self.trees)}, sizes={[len(t) for t in self.trees]})"


def _try_insert(tree: CBT, part: tuple[np.ndarray, np.ndarray]) -> ValueError | None:
    try:
        tree.insert_many(*part)
    except ValueError as e:
        return e
    return None


def _undo_insert(tree: CBT, job: tuple[np.ndarray, bool]) -> None:
    ids, inserted = job
    if inserted:
        for i in ids.tolist():
            tree.delete(i)
