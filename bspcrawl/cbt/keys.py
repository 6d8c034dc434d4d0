"""Priority keys, the total order of items, and the queues' shared argument checks.

Every queue orders items by priority descending, then id ascending. A float64
priority becomes an int64 sort key (:func:`encode`) ascending in that order, with an
exact round trip (:func:`decode`), so queues compare (key, id) int64 pairs.

>>> k = encode(np.array([2.0, -1.0, 0.5]))
>>> bool(k[0] < k[2] < k[1]), decode(k).tolist()
(True, [2.0, -1.0, 0.5])
"""

from __future__ import annotations

import operator

import numpy as np

PAD = np.iinfo(np.int64).max  # the key of an empty slot: after every real key
_FLIP = np.int64(0x7FFF_FFFF_FFFF_FFFF)
INT64 = (-(2**63), 2**63 - 1)


def encode(priorities: np.ndarray) -> np.ndarray:
    """float64 priorities (no NaN) -> int64 keys, ascending = higher priority first."""
    bits = (0.0 - priorities).view(np.int64)  # 0.0 - x also folds -0.0 into +0.0
    return bits ^ ((bits >> 63) & _FLIP)


def decode(keys: np.ndarray) -> np.ndarray:
    """Inverse of :func:`encode`."""
    bits = keys ^ ((keys >> 63) & _FLIP)
    return 0.0 - bits.view(np.float64)


def order(keys: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """Argsort of items by (key, id): best first."""
    o = np.argsort(keys, kind="stable")
    sk = keys[o]
    if (sk[1:] == sk[:-1]).any():
        o = np.lexsort((ids, keys))
    return o


def before(ka: np.ndarray, ia: np.ndarray, kb: np.ndarray, ib: np.ndarray) -> np.ndarray:
    """Elementwise: does item (ka, ia) come before item (kb, ib)?"""
    return (ka < kb) | ((ka == kb) & (ia < ib))


def rank(sk: np.ndarray, si: np.ndarray, keys: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """For each item (keys, ids), how many of the sorted items (sk, si) come before it."""
    lo = np.searchsorted(sk, keys, "left")
    hi = np.searchsorted(sk, keys, "right")
    for j in np.flatnonzero(hi > lo).tolist():  # equal keys: the ids decide (rare)
        lo[j] += int(np.searchsorted(si[lo[j]:hi[j]], ids[j]))
    return lo


def as_count(r: object) -> int:
    if isinstance(r, bool):
        raise TypeError("r must be an int")
    r = operator.index(r)  # type: ignore[arg-type]
    if r < 0:
        raise ValueError(f"r must be >= 0, got {r}")
    return r


def as_ids(ids: object) -> np.ndarray:
    a = np.asarray(ids)
    if a.ndim != 1:
        raise ValueError(f"ids must be 1-D, got shape {a.shape}")
    if a.size == 0 and a.dtype.kind in "iuf":
        return np.empty(0, np.int64)
    if a.dtype.kind not in "iu":
        raise TypeError(f"ids must be integers, got dtype {a.dtype}")
    if a.dtype == np.uint64 and (a > INT64[1]).any():
        raise ValueError("ids must fit in int64")
    return a.astype(np.int64)


def as_priorities(priorities: object, shape: tuple[int, ...]) -> np.ndarray:
    p = np.asarray(priorities)
    if p.size and p.dtype.kind not in "iuf":
        raise TypeError(f"priorities must be real numbers, got dtype {p.dtype}")
    p = p.astype(np.float64)
    if p.shape != shape:
        raise ValueError(f"priorities have shape {p.shape}, ids {shape}")
    if np.isnan(p).any():
        raise ValueError("priorities must not be NaN")
    return p


def as_priority(priority: object) -> float:
    if isinstance(priority, bool) or not isinstance(priority, int | float | np.number):
        raise TypeError(f"priority must be a real number, got {type(priority).__name__}")
    p = float(priority)
    if p != p:
        raise ValueError("priority must not be NaN")
    return p


def as_id(item: object) -> int | None:
    """An id to look up: the int, or None if it cannot be queued (out of int64)."""
    if isinstance(item, bool):
        raise TypeError("ids are integers, not bool")
    key = operator.index(item)  # type: ignore[arg-type]
    return key if INT64[0] <= key <= INT64[1] else None
