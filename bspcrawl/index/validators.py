"""Cache validators of one rank's URLs: ETag, Last-Modified, freshness, last fetch, content.

After Yioop's cache page validation (A. Kukreti, "Yioop full historical indexing in cache
navigation", 2013): a schedule's URLs are looked up in one batch; a URL still *fresh*
(``Expires`` or ``max-age`` in the future) is not fetched, the others are fetched with
``If-None-Match`` / ``If-Modified-Since``, so an unchanged page costs a 304 and no body.

**Layout**: the URL fingerprints are the keys of a
:class:`~bspcrawl.sortedkeys.SortedKeys`; each key's row indexes five parallel columns,
overwritten in place when the URL is fetched again::

    keys          SortedKeys  {-7: row 1, 3: row 0, 12: row 2}
    etag          object      ['',  'W/"5e1f-4a3b"', '"x"']   exact, as received; '' none
    last_modified uint32      [ 0,  t1,   0]
    expires       uint32      [ 0,   0,  t2]                   fresh until; 0: not fresh
    fetched       uint32      [t3,  t4,  t5]                   the last fetch
    content_fp    uint64      [ a,   b,   c]                   xxh3-64 of the body

Times are whole Unix seconds in uint32; 0 means "none". ``expires`` is computed at fetch
time from ``max-age`` (which wins) or ``Expires`` (RFC 9111 4.2.1), so one comparison tells
freshness. An ETag is kept exactly as received, to be sent back byte for byte.
"""

from __future__ import annotations

import calendar
import datetime
import email.utils
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import h5py
import numpy as np

from bspcrawl.sortedkeys import SortedKeys, grown, increasing

FORMAT = "bspcrawl-validators"
VERSION = 2
UINT32_MAX = 2**32 - 1
ETAG_MAX = 255  # bytes between the quotes of an ETag we keep (longer ones are ignored)
COLUMNS: dict[str, type] = {
    "etag": object, "last_modified": np.uint32, "expires": np.uint32, "fetched": np.uint32,
    "content_fp": np.uint64,
}
TIMES = ("last_modified", "expires", "fetched")

_ETAG_CHARS = re.compile(r"[\x21-\x7e\x80-\xff]+")  # RFC 9110 8.8.3 etagc, W/ and quotes
_DIRECTIVE = re.compile(r'\s*([^\s=,]+)\s*(?:=\s*("(?:[^"\\]|\\.)*"|[^\s,]*))?\s*(?:,|$)')
_DELTA_SECONDS = re.compile(r"\d+")


# ------------------------------------------------------------------- HTTP header parsing


def parse_http_date(value: str) -> int | None:
    """Unix seconds of an HTTP-date (IMF-fixdate, RFC 850 or asctime, RFC 9110 5.6.7), or
    None when it is invalid or outside what uint32 holds.

    >>> parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT")
    784111777
    >>> parse_http_date("0") is None
    True
    """
    try:
        parts = email.utils.parsedate_tz(value)
        if parts is None:
            return None
        year, month, day, hour, minute, second = parts[:6]
        datetime.datetime(year, month, day, hour, minute, min(second, 59))  # validates
        seconds = calendar.timegm(parts[:6]) - (parts[9] or 0)
    except (TypeError, ValueError, OverflowError, IndexError):
        return None
    return seconds if 0 < seconds <= UINT32_MAX else None


def format_http_date(seconds: int) -> str:
    """The IMF-fixdate of Unix ``seconds``, as sent in If-Modified-Since.

    >>> format_http_date(784111777)
    'Sun, 06 Nov 1994 08:49:37 GMT'
    """
    return email.utils.formatdate(seconds, usegmt=True)


def parse_etag(value: str) -> str:
    """The ETag to keep, exactly as received; '' when absent or invalid (control
    characters or spaces, or more than ``ETAG_MAX`` bytes between the quotes)."""
    value = value.strip()
    return value if _valid_etag(value) else ""


def _valid_etag(etag: str) -> bool:
    return bool(_ETAG_CHARS.fullmatch(etag)) and len(_opaque(etag)) <= ETAG_MAX


def parse_cache_control(value: str) -> dict[str, str | None]:
    """Cache-Control directives: lower-case name -> argument (unquoted) or None; the first
    occurrence of a directive wins (RFC 9111 4.2.1).

    >>> parse_cache_control('public, max-age=60, no-cache="Set-Cookie"')
    {'public': None, 'max-age': '60', 'no-cache': 'Set-Cookie'}
    """
    out: dict[str, str | None] = {}
    for m in _DIRECTIVE.finditer(value):
        name, arg = m.group(1).lower(), m.group(2)
        if arg is not None and arg.startswith('"'):
            arg = re.sub(r"\\(.)", r"\1", arg[1:-1])
        out.setdefault(name, arg)
    return out


def fresh_until(headers: Mapping[str, str], fetched: int) -> int:
    """When a response fetched at ``fetched`` (Unix s) stops being fresh, or 0 if stale at
    once: ``max-age`` wins over ``Expires - Date``, minus ``Age``; ``no-cache``, ``no-store``
    or an invalid value mean stale (RFC 9111 4.2.1, 5.3). No heuristic freshness: the
    crawler's own policy revisits the other pages."""
    cc = parse_cache_control(headers.get("cache-control", ""))
    if "no-cache" in cc or "no-store" in cc:
        return 0
    if "max-age" in cc:
        arg = cc["max-age"] or ""
        if not _DELTA_SECONDS.fullmatch(arg):
            return 0
        lifetime = int(arg)
    elif "expires" in headers:
        expires = parse_http_date(headers["expires"])
        if expires is None:
            return 0
        lifetime = expires - (parse_http_date(headers.get("date", "")) or fetched)
    else:
        return 0
    age = headers.get("age", "").strip()
    until = fetched + lifetime - (int(age) if _DELTA_SECONDS.fullmatch(age) else 0)
    return min(until, UINT32_MAX) if until > fetched else 0


@dataclass(frozen=True, slots=True)
class Validators:
    """One URL's row: what its last fetch said. Times are Unix seconds, 0 for none."""

    etag: str = ""  # exact ETag as received, e.g. 'W/"5e1f-4a3b"'; '' none
    last_modified: int = 0
    expires: int = 0  # fresh until (from max-age or Expires); 0: not fresh
    fetched: int = 0  # the last fetch
    content_fp: int = 0  # xxh3-64 of the body (0: no body), as /pages/content_fp

    @classmethod
    def from_response(cls, headers: Mapping[str, str], fetched: float, content_fp: int = 0,
                      previous: Validators | None = None) -> Validators:
        """Parse a response's headers (lower-case names). For a 304, what it does not repeat
        is kept from ``previous`` (RFC 9111 4.3.4), the freshness lifetime included."""
        now = int(fetched)
        etag = parse_etag(headers.get("etag", ""))
        modified = parse_http_date(headers.get("last-modified", "")) or 0
        until = fresh_until(headers, now)
        if previous is not None:
            etag = etag or previous.etag
            modified = modified or previous.last_modified
            content_fp = previous.content_fp
            if ("cache-control" not in headers and "expires" not in headers
                    and previous.expires > previous.fetched):
                until = min(now + previous.expires - previous.fetched, UINT32_MAX)
        return cls(etag, modified, until, now, content_fp)


def revalidate(etag: str, last_modified: int) -> tuple[str, ...]:
    """The request header lines that revalidate a URL of that ETag ('' none) and
    Last-Modified (0 none); both are sent when known (RFC 9110 13.1.3).

    >>> revalidate('"5e1f-4a3b"', 784111777)
    ('If-None-Match: "5e1f-4a3b"', 'If-Modified-Since: Sun, 06 Nov 1994 08:49:37 GMT')
    """
    if not last_modified:
        return (f"If-None-Match: {etag}",) if etag else ()
    since = f"If-Modified-Since: {format_http_date(last_modified)}"
    return (f"If-None-Match: {etag}", since) if etag else (since,)


# ------------------------------------------------------------------------- the store


@dataclass(slots=True)
class Found:
    """:meth:`ValidatorStore.lookup`'s answer, one entry per fingerprint (0 or '' where
    not found)."""

    found: np.ndarray  # bool
    content_fp: np.ndarray  # uint64
    fetched: np.ndarray  # int64 Unix s
    last_modified: np.ndarray  # int64 Unix s
    expires: np.ndarray  # int64 Unix s, fresh until
    etag: list[str]

    def __len__(self) -> int:
        return len(self.found)

    def row(self, i: int) -> Validators | None:
        """Entry ``i`` as a :class:`Validators`, None if that URL is unknown."""
        if not self.found[i]:
            return None
        return Validators(self.etag[i], int(self.last_modified[i]), int(self.expires[i]),
                          int(self.fetched[i]), int(self.content_fp[i]))

    def fresh(self, now: float) -> np.ndarray:
        """Boolean mask of the entries still fresh at ``now`` (not to be fetched)."""
        return self.expires > now


def _opaque(etag: str) -> str:
    """The part of an ETag between its quotes (all of it when unquoted)."""
    if len(etag) >= 4 and etag.startswith('W/"') and etag.endswith('"'):
        return etag[3:-1]
    if len(etag) >= 2 and etag.startswith('"') and etag.endswith('"'):
        return etag[1:-1]
    return etag


def _last_of_each(fps: np.ndarray) -> np.ndarray:
    """Indices of each distinct value's last occurrence, by value."""
    order = np.argsort(fps, kind="stable")
    s = fps[order]
    last = np.ones(len(s), bool)
    last[:-1] = s[1:] != s[:-1]
    return order[last]


def check_saved(group: h5py.Group) -> None:
    """Raise ValueError unless ``group`` is what :meth:`ValidatorStore.save` writes."""
    if group.attrs.get("format") != FORMAT or int(group.attrs.get("version", 0)) != VERSION:
        raise ValueError(f"{group.name}: not a {FORMAT} group (version {VERSION})")


class ValidatorStore:
    """Per-URL validators of one rank (layout: module docstring).

    API: fill :meth:`update`; query :meth:`lookup`, :meth:`get`, ``len``; disk :meth:`save`,
    :meth:`load`. Invariant (:meth:`_check`): the keys' rows are 0 .. len - 1 and every
    column has room for them. The scheduler thread owns it.
    """

    def __init__(self) -> None:
        self._keys = SortedKeys()
        self._cols = {name: np.zeros(0, dtype) for name, dtype in COLUMNS.items()}

    def __len__(self) -> int:
        return len(self._keys)

    @property
    def nbytes(self) -> int:
        """Bytes of the numpy arrays (the ETags' ``str`` objects left out)."""
        return self._keys.nbytes + sum(c.nbytes for c in self._cols.values())

    def update(self, fps: Sequence[int] | np.ndarray, etags: Sequence[str],
               last_modified: Sequence[int] | np.ndarray, expires: Sequence[int] | np.ndarray,
               fetched: Sequence[float] | np.ndarray,
               content_fp: Sequence[int] | np.ndarray) -> None:
        """Store what a batch of fetches said (the last wins for a repeated fp); times in
        Unix seconds. ValueError, and nothing changed, for mismatched lengths or values
        out of range."""
        fp = np.asarray(fps, np.int64)
        n = len(fp)
        try:
            cols = {"etag": np.array(etags, object).reshape(-1),
                    "content_fp": np.asarray(content_fp, np.uint64)}
            times = {name: np.asarray(values, np.float64) for name, values in (
                ("last_modified", last_modified), ("expires", expires), ("fetched", fetched))}
        except (OverflowError, TypeError) as e:
            raise ValueError(f"update: {e}") from None
        if any(len(c) != n for c in (*cols.values(), *times.values())):
            raise ValueError("update: every column needs one value per fingerprint")
        for name, t in times.items():
            if not (t >= 0).all() or not (t < UINT32_MAX + 1).all():
                raise ValueError(f"update: {name} outside 0..2**32-1 (Unix seconds)")
            cols[name] = np.floor(t).astype(np.uint32)
        for etag in set(cols["etag"].tolist()):
            if etag and not _valid_etag(etag):
                raise ValueError(f"update: invalid ETag (use parse_etag): {etag!r}")
        keep = _last_of_each(fp)
        self._keys.add(fp[keep])
        rows = self._keys.find(fp[keep])
        for name, column in cols.items():
            self._cols[name] = grown(self._cols[name], len(self._keys))
            self._cols[name][rows] = column[keep]

    def lookup(self, fps: Sequence[int] | np.ndarray) -> Found:
        """The rows of ``fps`` (one schedule): O(k log n) vectorised, k = len(fps)."""
        rows = self._keys.find(fps)
        found = rows >= 0
        out = {}
        for name, column in self._cols.items():
            out[name] = np.zeros(len(rows), np.int64 if name in TIMES else column.dtype)
            out[name][found] = column[rows[found]]
        out["etag"][~found] = ""
        return Found(found, out["content_fp"], out["fetched"], out["last_modified"],
                     out["expires"], out["etag"].tolist())

    def get(self, fp: int) -> Validators | None:
        """The row of one URL, or None."""
        return self.lookup([fp]).row(0)

    def save(self, group: h5py.Group) -> None:
        """Write the store into the empty HDF5 ``group``: ``fp`` sorted and one dataset per
        column."""
        fps = self._keys.to_array()
        rows = self._keys.find(fps)
        group.create_dataset("fp", data=fps)
        for name, column in self._cols.items():
            dtype = h5py.string_dtype() if name == "etag" else column.dtype
            group.create_dataset(name, data=column[rows], dtype=dtype)
        group.attrs.update(format=FORMAT, version=VERSION)

    @classmethod
    def load(cls, group: h5py.Group) -> ValidatorStore:
        """The store :meth:`save` wrote into ``group``; ValueError if it is not one."""
        check_saved(group)
        fp = group["fp"][:]
        cols = {name: (group[name].asstr()[:].astype(object) if dtype is object
                       else group[name][:].astype(dtype)) for name, dtype in COLUMNS.items()}
        if not increasing(fp) or any(len(c) != len(fp) for c in cols.values()):
            raise ValueError(f"{group.name}: corrupt validator store")
        store = cls()
        store._keys.add(fp)  # sorted into an empty set: the rows are 0 .. len - 1
        store._cols = cols
        return store

    def _check(self) -> None:
        """Assert the invariants of the class docstring (tests call it after each step)."""
        self._keys._check()
        assert all(len(c) >= len(self._keys) for c in self._cols.values())
