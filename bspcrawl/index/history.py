"""The history of every URL: each fetched version, where its body is, nearest-in-time lookup.

After the cache history of Yioop (Kukreti 2013, ``../shared/seeds/002_*``): every version
of a page the crawler fetched is kept, the versions of a URL are listed by year and month,
and a request for a date is answered with the version nearest to it, as the Wayback
Machine does. Yioop kept them as cache files per crawl; here one rank's history is a set of
append-only columns (one row per fetch, in commit order) and the body of a version lives in
a WARC record (:mod:`bspcrawl.index.warc`)::

    row  url_fp  time          status  content_fp  warc_file  warc_offset  warc_length
    0    42      1704067200.5  200     0x9e..      0          1183         5120
    1    7       1704067201.0  404     0x11..      0          6303         700
    2    42      1706745600.0  304     0x9e..      0          1183         5120  <- body of row 0
    3    42      1709251200.0  200     0x3a..      2          0            6011

``warc_*`` locate the record that holds the version's *body*: for a 304 or an unchanged
200 (written as a revisit record) that is the earlier response record with the same body,
so :func:`bspcrawl.index.warc.read_body` works for every row; ``warc_file`` is -1 when no
body was archived (a failed fetch).

Queries go through an index sorted by (url_fp, time) built lazily with ``np.lexsort``;
rows appended since the last build (the *tail*, at most 1/32 of the rows) are scanned
with one vectorised compare, so queries interleaved with appends (the crawl asks
:meth:`History.original` when it commits a revisit) cost O(log n + tail) amortised.
"""

from __future__ import annotations

import math
from dataclasses import astuple, dataclass
from datetime import UTC, datetime
from typing import Literal

import h5py
import numpy as np
from numpy.typing import ArrayLike

FORMAT = "bspcrawl-history"
VERSION = 1
FIELDS: dict[str, type] = {
    "url_fp": np.int64,  # fingerprint of the canonical URL (as /pages/url_fp)
    "time": np.float64,  # Unix time the fetch started (as /pages/fetch_time)
    "status": np.int16,  # HTTP status; 0 when there was no response
    "content_fp": np.uint64,  # xxh3-64 of the body (0: none); a 304 keeps the earlier one
    "warc_file": np.int32,  # index of the WARC file holding the body's record; -1: none
    "warc_offset": np.int64,  # offset of that record (its gzip member) in the file
    "warc_length": np.int64,  # length of that record (compressed), bytes
    "host": np.int64,  # urls.host_hash of the URL's host key (how a recrawl deals it)
}


@dataclass(frozen=True, slots=True)
class Version:
    """One fetched version of a URL (one history row)."""

    url_fp: int
    time: float
    status: int
    content_fp: int
    warc_file: int = -1
    warc_offset: int = -1
    warc_length: int = 0
    host: int = 0

    @property
    def has_body(self) -> bool:
        """Whether a WARC record holds this version's body."""
        return self.warc_file >= 0


class History:
    """Every version of one rank's URLs.

    API by role:

    * fill: :meth:`append` (one version), :meth:`extend` (a batch of columns)
    * query: :meth:`versions` (by time), :meth:`latest`, :meth:`original` (what a revisit
      refers to), :meth:`nearest`, :meth:`grouped` (year -> month -> versions),
      :meth:`column`, ``len()``
    * disk: :meth:`save` into an HDF5 group, :meth:`load` back (exact round trip)

    Not thread-safe: the scheduler thread owns it.
    """

    def __init__(self) -> None:
        self._cols = {name: np.zeros(1024, dtype) for name, dtype in FIELDS.items()}
        self._n = 0
        self._order = np.zeros(0, np.int64)  # rows indexed so far, by (url_fp, time)
        self._keys = np.zeros(0, np.int64)  # url_fp of those rows, in that order

    def __len__(self) -> int:
        return self._n

    def column(self, name: str) -> np.ndarray:
        """A copy of one column (``FIELDS``), in append order."""
        return self._cols[name][: self._n].copy()

    # ------------------------------------------------------------------ fill

    def append(self, version: Version) -> None:
        """Add one version. Raises ValueError for a time that is not finite."""
        self.extend(**{name: [value] for name, value in
                       zip(FIELDS, astuple(version), strict=True)})

    def extend(self, url_fp: ArrayLike, time: ArrayLike, status: ArrayLike,
               content_fp: ArrayLike, warc_file: ArrayLike | None = None,
               warc_offset: ArrayLike | None = None,
               warc_length: ArrayLike | None = None, host: ArrayLike | None = None) -> None:
        """Add a batch of versions, one array-like per column (``FIELDS``; the ``warc_*``
        columns default to "no body", ``host`` to 0). Amortised O(batch)."""
        n = len(np.asarray(url_fp))
        given = {"url_fp": url_fp, "time": time, "status": status, "content_fp": content_fp,
                 "warc_file": [-1] * n if warc_file is None else warc_file,
                 "warc_offset": [-1] * n if warc_offset is None else warc_offset,
                 "warc_length": [0] * n if warc_length is None else warc_length,
                 "host": [0] * n if host is None else host}
        try:
            cols = {name: np.asarray(given[name], dtype) for name, dtype in FIELDS.items()}
        except (OverflowError, TypeError) as e:
            raise ValueError(f"extend: {e}") from None
        if any(len(c) != n for c in cols.values()):
            raise ValueError("extend: every column needs one value per version")
        if not np.isfinite(cols["time"]).all():
            raise ValueError("extend: times must be finite Unix times")
        need = self._n + n
        if need > len(self._cols["url_fp"]):
            size = max(need, 2 * len(self._cols["url_fp"]))
            for name, old in self._cols.items():
                grown = np.zeros(size, old.dtype)
                grown[: self._n] = old[: self._n]
                self._cols[name] = grown
        for name, c in cols.items():
            self._cols[name][self._n : need] = c
        self._n = need

    # ----------------------------------------------------------------- query

    def _rows(self, fp: int) -> np.ndarray:
        """Rows of ``fp`` sorted by time (equal times: in append order)."""
        indexed = len(self._order)
        if self._n - indexed > max(4096, self._n // 32):
            n = self._n
            self._order = np.lexsort((self._cols["time"][:n], self._cols["url_fp"][:n]))
            self._keys = self._cols["url_fp"][:n][self._order]
            indexed = n
        lo = int(np.searchsorted(self._keys, fp, "left"))
        hi = int(np.searchsorted(self._keys, fp, "right"))
        rows = self._order[lo:hi]
        tail = np.flatnonzero(self._cols["url_fp"][indexed : self._n] == fp) + indexed
        if len(tail):
            rows = np.concatenate([rows, tail])
            rows = rows[np.lexsort((rows, self._cols["time"][rows]))]
        return rows

    def _version(self, row: int) -> Version:
        c = self._cols
        return Version(int(c["url_fp"][row]), float(c["time"][row]), int(c["status"][row]),
                       int(c["content_fp"][row]), int(c["warc_file"][row]),
                       int(c["warc_offset"][row]), int(c["warc_length"][row]),
                       int(c["host"][row]))

    def versions(self, fp: int) -> list[Version]:
        """Every version of ``fp``, oldest first (equal times: in append order)."""
        return [self._version(r) for r in self._rows(fp).tolist()]

    def latest(self, fp: int, with_body: bool = False) -> Version | None:
        """The newest version of ``fp`` (``with_body``: the newest with an archived body,
        which is what a revisit record refers to), or None."""
        rows = self._rows(fp)
        if with_body:
            rows = rows[self._cols["warc_file"][rows] >= 0]
        return self._version(int(rows[-1])) if len(rows) else None

    def original(self, fp: int) -> Version | None:
        """The version whose own response record holds the newest archived body of ``fp``
        (the oldest row pointing at that record): its ``time`` is the record's WARC-Date,
        which a revisit record refers to. None if no body of ``fp`` was archived."""
        rows = self._rows(fp)
        c = self._cols
        rows = rows[c["warc_file"][rows] >= 0]
        if not len(rows):
            return None
        last = rows[-1]
        same = rows[(c["warc_file"][rows] == c["warc_file"][last])
                    & (c["warc_offset"][rows] == c["warc_offset"][last])]
        return self._version(int(same[0]))

    def nearest(self, fp: int, t: float,
                side: Literal["nearest", "before", "after"] = "nearest") -> Version | None:
        """The version of ``fp`` nearest in time to ``t`` (Unix s), like the Wayback
        Machine: ``before`` the newest at or before ``t``, ``after`` the oldest at or after
        ``t``, ``nearest`` the closer of the two (a tie goes to the earlier one). None if
        there is none on that side. O(log n + versions of fp)."""
        if side not in ("nearest", "before", "after"):
            raise ValueError(f"side must be nearest, before or after, not {side!r}")
        if math.isnan(t):
            raise ValueError("t must be a number")
        rows = self._rows(fp)
        times = self._cols["time"][rows]
        i = int(np.searchsorted(times, t, "right"))  # versions at or before t: rows[:i]
        j = int(np.searchsorted(times, t, "left"))  # versions at or after t: rows[j:]
        before = int(rows[i - 1]) if i > 0 else None
        after = int(rows[j]) if j < len(rows) else None
        if side == "before" or (side == "nearest" and after is None):
            pick = before
        elif side == "after" or before is None:
            pick = after
        else:
            pick = before if t - times[i - 1] <= times[j] - t else after
        return None if pick is None else self._version(pick)

    def grouped(self, fp: int) -> dict[int, dict[int, list[Version]]]:
        """The versions of ``fp`` by UTC year, then month (1-12), both ascending and each
        list oldest first, as Yioop's history page shows them."""
        out: dict[int, dict[int, list[Version]]] = {}
        for v in self.versions(fp):
            when = datetime.fromtimestamp(v.time, UTC)
            out.setdefault(when.year, {}).setdefault(when.month, []).append(v)
        return out

    # ------------------------------------------------------------------ disk

    def save(self, group: h5py.Group) -> None:
        """Write every row into the empty HDF5 ``group``: one 1-D dataset per column of
        ``FIELDS`` (dtypes as there), in append order; attributes ``format``, ``version``."""
        for name, dtype in FIELDS.items():
            group.create_dataset(name, data=self._cols[name][: self._n], dtype=dtype,
                                 maxshape=(None,))
        group.attrs.update(format=FORMAT, version=VERSION)

    @classmethod
    def load(cls, group: h5py.Group) -> History:
        """The history :meth:`save` wrote into ``group``; ValueError if it is not one."""
        if group.attrs.get("format") != FORMAT or int(group.attrs.get("version", 0)) > VERSION:
            raise ValueError(f"{group.name}: not a {FORMAT} group (version <= {VERSION})")
        missing = [name for name in FIELDS if name not in group]
        if missing:
            raise ValueError(f"{group.name}: missing datasets {missing}")
        history = cls()
        history.extend(**{name: group[name][:] for name in FIELDS})
        return history
