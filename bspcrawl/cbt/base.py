"""The bulk interface of the queues of Marin, Paredes and Bonacic (WIDM 2008, section 5).

The paper runs the CBT, the QuickHeap and the binary heap through a superstep's
insert-many and extract-many of R URLs. :class:`BulkQueue` keeps what they share
(argument checks, the id table, size, work counters, block caches, HDF5 saving); each
queue supplies ``_insert``, ``_extract``, ``_peek``, ``_update``, ``_delete``,
``_remap``, ``_settle``, ``_check``, ``_save`` and ``_load``. Items are distinct int64
ids with float64 priorities in numpy arrays; order: priority descending, ties to the
smaller id.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import ClassVar, Self

import h5py
import numpy as np

from bspcrawl.cbt.cost import BlockCache
from bspcrawl.cbt.idtable import IdTable
from bspcrawl.cbt.keys import as_count, as_id, as_ids, as_priorities, as_priority, decode, encode

FORMAT = 1  # version of the saved layout


class BulkQueue(ABC):
    """Bulk priority queue of int64 ids with float64 priorities (higher = first).

    Build / change: :meth:`insert_many`, :meth:`update`, :meth:`delete`.
    Read: :meth:`extract_many`, :meth:`peek`, ``len(q)``, ``bool(q)``, ``id in q``.
    Persist: :meth:`save`, :meth:`load`.
    Work: ``counters["queue/comparisons"]`` (key comparisons, counted analytically,
    see :mod:`bspcrawl.cbt.cost`) plus the queue's own counters; block I/O in each
    :class:`~bspcrawl.cbt.cost.BlockCache` passed as ``caches``.
    Debug: :meth:`_check` asserts every invariant.
    """

    counter_names: ClassVar[tuple[str, ...]] = ()  # the queue's own counters

    def __init__(self, caches: Sequence[BlockCache] = ()) -> None:
        self._table = IdTable()
        self._size = 0
        self.caches = list(caches)
        self.counters = dict.fromkeys(("queue/comparisons", *self.counter_names), 0)

    # ------------------------------------------------------------------ public API

    def __len__(self) -> int:
        """Number of items.  O(1)."""
        return self._size

    def __bool__(self) -> bool:
        return self._size > 0

    def __contains__(self, item: object) -> bool:
        """Whether id ``item`` is queued.  O(1) expected."""
        try:
            key = as_id(item)
        except TypeError:
            return False
        return key is not None and self._table.find(key) >= 0

    def insert_many(self, ids: np.ndarray, priorities: np.ndarray) -> None:
        """Insert R new items.

        ``ids``: 1-D integers (converted to int64; floats, bools, objects: TypeError);
        ``priorities``: 1-D reals of the same length (converted to float64; NaN:
        ValueError).  ValueError, and nothing inserted, if an id is already queued or
        repeated in ``ids``; use :meth:`update` to change a priority."""
        ids = as_ids(ids)
        prios = as_priorities(priorities, ids.shape)
        if ids.size == 0:
            return
        remap = self._table.reserve(ids.size)
        if remap is not None:
            self._remap(remap)
        handles = self._table.insert(ids)
        self._insert(encode(prios), ids, handles)
        self._size += ids.size
        self._settle()

    def extract_many(self, r: int) -> tuple[np.ndarray, np.ndarray]:
        """Remove and return the min(r, len) best items: (int64 ids, float64
        priorities), by non-increasing priority (ties: smaller id first)."""
        r = min(as_count(r), self._size)
        if r == 0:
            return np.empty(0, np.int64), np.empty(0, np.float64)
        keys, handles = self._extract(r)
        ids = self._table.keys[handles]
        self._table.remove(handles)
        self._size -= r
        self._settle()
        return ids, decode(keys)

    def peek(self, r: int = 1) -> tuple[np.ndarray, np.ndarray]:
        """The items ``extract_many(r)`` would return, without removing them."""
        r = min(as_count(r), self._size)
        if r == 0:
            return np.empty(0, np.int64), np.empty(0, np.float64)
        keys, handles = self._peek(r)
        return self._table.keys[handles], decode(keys)

    def update(self, item: int, priority: float) -> None:
        """Give queued id ``item`` a new priority (KeyError if absent)."""
        key = int(encode(np.array([as_priority(priority)]))[0])
        self._update(self._find(item), key)
        self._settle()

    def delete(self, item: int) -> None:
        """Remove queued id ``item`` (KeyError if absent)."""
        handle = self._find(item)
        self._delete(handle)
        self._table.remove(np.array([handle]))
        self._size -= 1
        self._settle()

    def save(self, group: h5py.Group) -> None:
        """Write the queue's whole state into the (empty) HDF5 ``group``; :meth:`load`
        gives back an identical queue (same layout, same future behaviour).  The
        block caches are instruments, not state: they are not saved."""
        group.attrs["kind"] = type(self).__name__
        group.attrs["format"] = FORMAT
        group.attrs["size"] = self._size
        group.attrs["counters"] = json.dumps(self.counters)
        self._table.save(group.create_group("table"))
        self._save(group)

    @classmethod
    def load(cls, group: h5py.Group, caches: Sequence[BlockCache] = ()) -> Self:
        """The queue :meth:`save` wrote into ``group``.  ValueError if the group holds
        another kind of queue or another format."""
        kind, fmt = group.attrs.get("kind"), group.attrs.get("format")
        if kind != cls.__name__ or fmt != FORMAT:
            raise ValueError(f"{group.name} holds {kind!r} format {fmt}, "
                             f"not a {cls.__name__} format {FORMAT}")
        q = cls.__new__(cls)
        BulkQueue.__init__(q, caches)
        q._table = IdTable.load(group["table"])
        q._size = int(group.attrs["size"])
        q._load(group)
        q.counters.update(json.loads(group.attrs["counters"]))
        return q

    # ------------------------------------------------------------------ for the queues

    def _find(self, item: object) -> int:
        key = as_id(item)
        handle = -1 if key is None else self._table.find(key)
        if handle < 0:
            raise KeyError(item)
        return handle

    def _compared(self, n: int) -> None:
        self.counters["queue/comparisons"] += n

    def _touch_range(self, first: int, stop: int, write: bool) -> None:
        for c in self.caches:
            c.touch_range(first, stop, write)

    def _touch_items(self, slots: np.ndarray, write: bool) -> None:
        for c in self.caches:
            c.touch_items(slots, write)

    def _touch_ranges(self, starts: np.ndarray, counts: np.ndarray, write: bool) -> None:
        for c in self.caches:
            c.touch_ranges(starts, counts, write)

    @abstractmethod
    def _settle(self) -> None:
        """Housekeeping after each change (resizing, repacking)."""

    @abstractmethod
    def _insert(self, keys: np.ndarray, ids: np.ndarray, handles: np.ndarray) -> None:
        """Place new items (handles already in the table; set their ``vals``)."""

    @abstractmethod
    def _extract(self, r: int) -> tuple[np.ndarray, np.ndarray]:
        """Take out the best r items (0 < r <= len): (keys, handles), best first.  The
        caller removes the handles from the table."""

    @abstractmethod
    def _peek(self, r: int) -> tuple[np.ndarray, np.ndarray]:
        """The best r items (0 < r <= len): (keys, handles), best first."""

    @abstractmethod
    def _update(self, handle: int, key: int) -> None:
        """Give the item at ``handle`` the sort key ``key``."""

    @abstractmethod
    def _delete(self, handle: int) -> None:
        """Take out the item at ``handle`` (the caller updates the table)."""

    @abstractmethod
    def _remap(self, remap: np.ndarray) -> None:
        """The id table rehashed: translate the stored handles (old -> new)."""

    @abstractmethod
    def _check(self) -> None:
        """Assert every invariant."""

    @abstractmethod
    def _save(self, group: h5py.Group) -> None:
        """Write the queue's own arrays and attributes."""

    @abstractmethod
    def _load(self, group: h5py.Group) -> None:
        """Read what :meth:`_save` wrote (the table is loaded already)."""
