"""The history of every URL: each fetched version, where its body is, nearest-in-time lookup.

After Yioop's cache history (A. Kukreti, "Yioop full historical indexing in cache
navigation", 2013): every fetched version is kept, listed by year and month, and a date is
answered with the nearest version, as the Wayback Machine does. A rank's history is
append-only columns, one row per fetch in commit order; bodies live in WARC records::

    row  url_fp  time          status  content_fp  warc_file  warc_offset  warc_length
    0    42      1704067200.5  200     0x9e..      0          1183         5120
    1    7       1704067201.0  404     0x11..      0          6303         700
    2    42      1706745600.0  304     0x9e..      0          1183         5120  <- body of row 0
    3    42      1709251200.0  200     0x3a..      2          0            6011

``warc_*`` locate the record holding the version's *body* (for a 304 or an unchanged 200,
the earlier response record); ``warc_file`` is -1 when no body was archived.

A URL's rows are found through a :class:`~bspcrawl.sortedkeys.SortedKeys` of fingerprints
whose row indexes ``last`` (the URL's newest row); each row links to the URL's row before
(``prev``, -1 for the first). In the example::

    urls: {7: 1, 42: 0}    last = [3, 1]    prev = [-1, -1, 0, 2]

so the rows of 42 are 3, 2, 0, newest first: O(log n + versions) a query, however queries
and appends interleave.
"""

from __future__ import annotations

import math
from dataclasses import astuple, dataclass
from typing import Literal

import h5py
import numpy as np
from numpy.typing import ArrayLike

from bspcrawl.sortedkeys import SortedKeys, grown

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

    API: fill :meth:`append`, :meth:`extend`; query :meth:`versions`, :meth:`latest`,
    :meth:`original`, :meth:`nearest`, ``len``; disk :meth:`save`, :meth:`load`. The
    scheduler thread owns it.
    """

    def __init__(self) -> None:
        self._cols = {name: np.zeros(0, dtype) for name, dtype in FIELDS.items()}
        self._prev = np.zeros(0, np.int64)  # per row: the URL's row before it, -1 none
        self._urls = SortedKeys()
        self._last = np.zeros(0, np.int64)  # per URL: its newest row
        self._n = 0

    def __len__(self) -> int:
        return self._n

    # ------------------------------------------------------------------ fill

    def append(self, version: Version) -> None:
        """Add one version. Raises ValueError for a time that is not finite."""
        self.extend(**{name: [value] for name, value in
                       zip(FIELDS, astuple(version), strict=True)})

    def extend(self, url_fp: ArrayLike, time: ArrayLike, status: ArrayLike,
               content_fp: ArrayLike, warc_file: ArrayLike | None = None,
               warc_offset: ArrayLike | None = None,
               warc_length: ArrayLike | None = None, host: ArrayLike | None = None) -> None:
        """Add a batch of versions, one array-like per column (``warc_*`` default to no
        body, ``host`` to 0)."""
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
        for name, c in cols.items():
            self._cols[name] = grown(self._cols[name], need)
            self._cols[name][self._n : need] = c
        self._link(cols["url_fp"], np.arange(self._n, need))
        self._n = need

    def _link(self, url_fp: np.ndarray, rows: np.ndarray) -> None:
        """Chain new ``rows`` (in append order) to their URLs' earlier rows."""
        if not len(rows):
            return
        known = len(self._urls)
        self._urls.add(url_fp)
        urls = self._urls.find(url_fp)
        self._last = grown(self._last, len(self._urls))
        self._last[known:] = -1
        order = np.argsort(urls, kind="stable")
        urls, rows = urls[order], rows[order]
        first = np.ones(len(urls), bool)
        first[1:] = urls[1:] != urls[:-1]
        prev = np.empty(len(rows), np.int64)
        prev[1:] = rows[:-1]
        prev[first] = self._last[urls[first]]
        self._prev = grown(self._prev, self._n + len(rows))
        self._prev[rows] = prev
        last = np.append(first[1:], True)
        self._last[urls[last]] = rows[last]

    # ----------------------------------------------------------------- query

    def _rows(self, fp: int) -> np.ndarray:
        """Rows of ``fp`` sorted by time (equal times: in append order)."""
        url = int(self._urls.find([fp])[0])
        newest_first = []
        row = int(self._last[url]) if url >= 0 else -1
        while row >= 0:
            newest_first.append(row)
            row = int(self._prev[row])
        rows = np.array(newest_first[::-1], np.int64)
        return rows[np.argsort(self._cols["time"][rows], kind="stable")]

    def _version(self, row: int) -> Version:
        return Version(*(self._cols[name][row].item() for name in FIELDS))

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
        """The version of ``fp`` nearest in time to ``t`` (Unix s): ``before``/``after`` the
        nearest on that side (at ``t`` included), ``nearest`` the closer (a tie: the
        earlier); None if there is none."""
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

    # ------------------------------------------------------------------ disk

    def save(self, group: h5py.Group) -> None:
        """Write every row into the empty HDF5 ``group``, one dataset per column."""
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
