"""Cache validators of one rank's URLs: ETag, Last-Modified, freshness, last fetch, content.

After the cache page validation of Yioop (Kukreti 2013, ``../shared/seeds/002_*``, 7.4 and
8.1): when a schedule is built, every URL's validators are looked up; a URL still *fresh*
(``Expires`` or ``Cache-Control: max-age`` in the future) is not fetched, the others are
fetched with ``If-None-Match`` / ``If-Modified-Since`` so that an unchanged page costs a
304 and no body. Yioop kept the validators in a B-tree of PHP-serialised nodes, one lookup
per URL, and building a schedule became ~14 s slower (its 8.1). Here the lookup of a whole
schedule is one vectorised binary search over sorted numpy arrays (about 2 ms for 5,000
URLs in 10^7 entries, ``scripts/bench_validators.py``).

**Layout** (an LSM tree of two levels): ``main`` and a small ``delta`` hold the same four
sorted columns; :meth:`ValidatorStore.update` upserts a batch into ``delta``, and when
``delta`` reaches ``delta_max`` entries it is merged into ``main`` in bulk (one
``np.insert`` per column, O(n) memcpy). A row in ``delta`` wins over the same URL in
``main``. A radix directory on the top bits of ``main.fp`` (16 to 32 rows a bucket) bounds
each probe, and the binary search runs over all probes at once (:func:`_search`).

What only some responses have (ETag, Last-Modified, Expires) lives in a variable-length
*record* in a byte heap; a row without any of them has record 0 and costs no heap byte::

    main.fp          int64    [-7,   3,  12]    sorted, unique
    main.content_fp  uint64   [ a,   b,   c]
    main.fetched     uint32   [t0,  t1,  t2]    Unix seconds of the last fetch
    main.record      uint32   [ 1,   0,  16]    offset of the row's record in heap; 0: none
    heap  uint8      [0 | 0x0d lm lm lm lm 9 5 e 1 f - 4 a 3 b | 0x02 ex ex ex ex | ...]
                      ^reserved ^record 1: flags, Last-Modified, ETag  ^record 16: Expires

A record is ``flags`` (uint8: 1 Last-Modified, 2 Expires, 4 ETag, 8 ETag quoted, 16 ETag
weak), then the little-endian uint32 Last-Modified and Expires if flagged, then the ETag as
one length byte and the bytes between its quotes (``W/"..."`` and ``"..."`` are stored as
flags, so ``W/"5e1f-4a3b"`` costs 10 bytes). A record replaced by a newer fetch becomes
garbage; the heap is compacted when garbage exceeds the live bytes.

Memory (``scripts/bench_validators.py``, 10^7 rows): 24 bytes a row, under half a byte of
directory, plus its record: 38.4 B a row on average with the validator mix the HTTP Archive
measured (47% of responses with an ETag, 73% with Last-Modified; 25% fresh-until assumed),
48.4 B when every row has an nginx-style ETag (``"5e1f0a2b-4a3b"``), Last-Modified and
Expires, 66.4 B with MD5 ETags (32 hex digits) instead.

Times are whole Unix seconds in uint32 (1970 to 2106); 0 means "none". ``expires`` is the
*fresh-until* time computed at fetch time from ``max-age`` (which wins) or ``Expires``
(RFC 9111 4.2.1), so that one comparison tells freshness. An ETag is kept exactly as
received, so it can be sent back byte for byte.

BEWARE: the heap is addressed with uint32 offsets: at most 4 GiB of records per rank
(about 3 * 10^8 URLs); :meth:`ValidatorStore.update` raises ``OverflowError`` beyond.
"""

from __future__ import annotations

import calendar
import datetime
import email.utils
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import h5py
import numpy as np

FORMAT = "bspcrawl-validators"
VERSION = 1
UINT32_MAX = 2**32 - 1
ETAG_MAX = 255  # bytes between the quotes of an ETag we keep (longer ones are ignored)
DELTA_MAX = 65536  # default size of the delta level before it is merged into main

# Record flags.
LAST_MODIFIED, EXPIRES, ETAG, QUOTED, WEAK = 1, 2, 4, 8, 16

COLUMNS: dict[str, type] = {
    "fp": np.int64, "content_fp": np.uint64, "fetched": np.uint32, "record": np.uint32,
}
Level = dict[str, np.ndarray]

_ETAG_CHARS = re.compile(r"[\x21-\x7e\x80-\xff]+")  # RFC 9110 8.8.3 etagc, W/ and quotes
_DIRECTIVE = re.compile(r'\s*([^\s=,]+)\s*(?:=\s*("(?:[^"\\]|\\.)*"|[^\s,]*))?\s*(?:,|$)')
_DELTA_SECONDS = re.compile(r"\d+")


# ------------------------------------------------------------------- HTTP header parsing


def parse_http_date(value: str) -> int | None:
    """Unix seconds of an HTTP-date (IMF-fixdate, RFC 850 or asctime, RFC 9110 5.6.7), or
    None when it is invalid or outside what uint32 holds (1970-01-01 00:00:01 to 2106).

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
    t = time.gmtime(seconds)
    return (f"{_DAYS[t.tm_wday]}, {t.tm_mday:02d} {_MONTHS[t.tm_mon - 1]} {t.tm_year} "
            f"{t.tm_hour:02d}:{t.tm_min:02d}:{t.tm_sec:02d} GMT")


_DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


def parse_etag(value: str) -> str:
    """The ETag to keep, exactly as received; '' when absent or invalid (control
    characters or spaces, or more than ``ETAG_MAX`` bytes between the quotes)."""
    value = value.strip()
    if not _ETAG_CHARS.fullmatch(value):
        return ""
    return value if len(_split_etag(value)[0]) <= ETAG_MAX else ""


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
    """When a response fetched at ``fetched`` (Unix s) stops being fresh, or 0 if it is stale
    at once: ``max-age`` wins over ``Expires - Date`` (RFC 9111 4.2.1), minus ``Age``;
    ``no-cache``/``no-store`` or an invalid value (a bad date, ``Expires: 0``, a non-numeric
    max-age) mean stale (RFC 9111 4.2.1, 5.3). No heuristic freshness: a crawler revisits
    pages without explicit freshness by its own policy."""
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
        """Parse a response's headers (lower-case names, as FetchResult.headers).

        ``previous``: for a 304, the row the request's validators came from; what the 304
        does not repeat is kept (RFC 9111 4.3.4): ETag, Last-Modified, the content
        fingerprint and, without new Cache-Control or Expires, the freshness lifetime.
        """
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


def conditional_headers(row: Validators | None) -> list[str]:
    """The request header lines (pycurl HTTPHEADER form) that revalidate ``row``.

    Both validators are sent when known: a server that knows ETags ignores
    If-Modified-Since next to If-None-Match (RFC 9110 13.1.3), one that does not uses it.

    >>> conditional_headers(Validators(etag='"5e1f-4a3b"', last_modified=784111777))
    ['If-None-Match: "5e1f-4a3b"', 'If-Modified-Since: Sun, 06 Nov 1994 08:49:37 GMT']
    """
    return list(revalidate(row.etag, row.last_modified)) if row is not None else []


def revalidate(etag: str, last_modified: int) -> tuple[str, ...]:
    """:func:`conditional_headers` of an ETag ('' none) and a Last-Modified (0 none)."""
    if not last_modified:
        return (f"If-None-Match: {etag}",) if etag else ()
    since = f"If-Modified-Since: {format_http_date(last_modified)}"
    return (f"If-None-Match: {etag}", since) if etag else (since,)


def fresh(row: Validators | None, now: float) -> bool:
    """Whether ``row`` may be reused at ``now`` without fetching (Expires/max-age ahead)."""
    return row is not None and row.expires > now


# ------------------------------------------------------------------------- the store


@dataclass(slots=True)
class Found:
    """The answer of :meth:`ValidatorStore.lookup`: one entry per fingerprint asked.

    Where ``found`` is False every column holds 0 (or '').
    """

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


def _split_etag(etag: str) -> tuple[bytes, int]:
    """(bytes to store, QUOTED/WEAK flags) of an ETag: quotes and ``W/`` become flags."""
    raw = etag.encode("latin-1")
    if len(raw) >= 4 and raw.startswith(b'W/"') and raw.endswith(b'"'):
        return raw[3:-1], QUOTED | WEAK
    if len(raw) >= 2 and raw.startswith(b'"') and raw.endswith(b'"'):
        return raw[1:-1], QUOTED
    return raw, 0


def _gather(src: np.ndarray, starts: np.ndarray, sizes: np.ndarray,
            chunk: int = 1 << 20) -> np.ndarray:
    """Concatenate ``src[starts[i]:starts[i] + sizes[i]]`` for every i (vectorised; index
    arrays are built ``chunk`` ranges at a time to bound temporary memory)."""
    out = np.empty(int(sizes.sum()), dtype=src.dtype)
    at = 0
    for lo in range(0, len(starts), chunk):
        s, z = starts[lo:lo + chunk].astype(np.int64), sizes[lo:lo + chunk].astype(np.int64)
        total = int(z.sum())
        begin = np.cumsum(z) - z  # where each range starts in this chunk's output
        out[at:at + total] = src[np.repeat(s - begin, z) + np.arange(total)]
        at += total
    return out


def _u32(heap: np.ndarray, at: np.ndarray) -> np.ndarray:
    """The little-endian uint32 stored at each offset ``at`` of ``heap``, as int64."""
    v = np.zeros(len(at), np.int64)
    for k in range(4):
        v |= heap[at + k].astype(np.int64) << (8 * k)
    return v


def _encode(etags: Sequence[str], modified: np.ndarray, expires: np.ndarray
            ) -> tuple[np.ndarray, np.ndarray]:
    """Records of a batch: (heap bytes, offset of each row's record in them or -1).

    Vectorised over the batch: the ETags are joined into one byte string and their quotes
    and ``W/`` found with array compares, so a million rows take about a second.
    """
    n = len(etags)
    try:
        blob = np.frombuffer("".join(etags).encode("latin-1"), np.uint8)
    except UnicodeEncodeError:
        raise ValueError("invalid ETag (not Latin-1; use parse_etag)") from None
    size = np.fromiter(map(len, etags), np.int64, n)  # Latin-1: characters == bytes
    start = np.cumsum(size) - size
    if ((blob < 0x21) | (blob == 0x7F)).any():
        bad = np.searchsorted(start, np.flatnonzero((blob < 0x21) | (blob == 0x7F))[0], "right")
        raise ValueError(f"invalid ETag (use parse_etag): {etags[bad - 1]!r}")
    at = np.flatnonzero(size)  # rows with an ETag
    s, z = start[at], size[at]
    last = blob[s + z - 1] == 0x22
    quoted = (z >= 2) & (blob[s] == 0x22) & last
    weak = (z >= 4) & (blob[s] == 0x57) & (blob[np.minimum(s + 1, len(blob) - 1)] == 0x2F)
    weak &= (blob[np.minimum(s + 2, len(blob) - 1)] == 0x22) & last
    cut = np.where(weak, 3, np.where(quoted, 1, 0))
    body_start, body_len = s + cut, z - np.where(weak, 4, np.where(quoted, 2, 0))
    if (body_len > ETAG_MAX).any():
        raise ValueError(f"ETag longer than {ETAG_MAX} bytes: use parse_etag")
    flags = np.where(modified != 0, LAST_MODIFIED, 0) | np.where(expires != 0, EXPIRES, 0)
    flags[at] |= ETAG | np.where(weak, QUOTED | WEAK, np.where(quoted, QUOTED, 0))
    elen = np.zeros(n, np.int64)
    elen[at] = body_len
    has = flags != 0
    rec = np.where(has, 1 + 4 * (modified != 0) + 4 * (expires != 0)
                   + np.where(flags & ETAG, 1 + elen, 0), 0)
    begin = np.cumsum(rec) - rec
    out = np.zeros(int(rec.sum()), np.uint8)
    out[begin[has]] = flags[has]
    p = begin + 1
    for column, flag in ((modified, LAST_MODIFIED), (expires, EXPIRES)):
        m = (flags & flag) != 0
        for k in range(4):
            out[p[m] + k] = (column[m] >> (8 * k)) & 0xFF
        p = p + 4 * m
    out[p[at]] = body_len
    total = int(body_len.sum())
    offset = np.cumsum(body_len) - body_len
    out[np.repeat(p[at] + 1 - offset, body_len) + np.arange(total)] = _gather(
        blob, body_start, body_len)
    return out, np.where(has, begin, -1)


def _empty() -> Level:
    return {name: np.zeros(0, dtype) for name, dtype in COLUMNS.items()}


def _upsert(level: Level, batch: Level) -> tuple[Level, np.ndarray]:
    """Insert the sorted, unique ``batch`` into the sorted ``level`` (a batch row replaces
    the level's row of the same fp). Returns the new level and the replaced records."""
    fp, new_fp = level["fp"], batch["fp"]
    pos = np.searchsorted(fp, new_fp)
    hit = pos < len(fp)
    hit[hit] = fp[pos[hit]] == new_fp[hit]
    replaced = level["record"][pos[hit]]
    miss = ~hit
    out = {}
    for name, column in level.items():
        column[pos[hit]] = batch[name][hit]  # in place: level arrays are never shared
        out[name] = np.insert(column, pos[miss], batch[name][miss]) if miss.any() else column
    return out, replaced


def _last_of_each(fps: np.ndarray) -> np.ndarray:
    """Indices of the last occurrence of each distinct value of ``fps``, by value."""
    order = np.argsort(fps, kind="stable")
    s = fps[order]
    last = np.ones(len(s), bool)
    last[:-1] = s[1:] != s[:-1]
    return order[last]


def _directory(fp: np.ndarray) -> tuple[np.ndarray, int]:
    """A radix directory over the sorted ``fp``: rows of bucket b (the top ``bits`` bits of
    fp, offset to be >= 0) are ``dir[b]:dir[b + 1]``; 16 to 32 rows a bucket on average,
    so it costs at most half a byte a row. Returns (dir, bits)."""
    bits = max(1, (len(fp) // 32).bit_length())
    counts = np.bincount(_bucket(fp, bits), minlength=1 << bits)
    out = np.zeros((1 << bits) + 1, np.int64)
    np.cumsum(counts, out=out[1:])
    return out, bits


def _bucket(fp: np.ndarray, bits: int) -> np.ndarray:
    return (fp >> (64 - bits)) + (1 << (bits - 1))


def _search(fp: np.ndarray, q: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """``np.searchsorted(fp, q)`` given bounds ``lo <= answer <= hi``, as a binary search
    vectorised over the queries: each step is one gather of independent loads, which the
    CPU overlaps, where ``searchsorted`` waits for each cache miss in turn (0.7 ms against
    8 ms for 5,000 queries in 10^7 rows here)."""
    last = len(fp) - 1
    while True:
        active = lo < hi
        if not active.any():
            return lo
        mid = (lo + hi) >> 1
        less = (fp[np.minimum(mid, last)] < q) & active
        lo = np.where(less, mid + 1, lo)
        hi = np.where(active & ~less, mid, hi)


class ValidatorStore:
    """Per-URL validators of one rank (see the module docstring for the layout).

    API by role:

    * fill: :meth:`update` (a batch, e.g. one committed schedule), :meth:`add` (one row)
    * query: :meth:`lookup` (one schedule, vectorised), :meth:`get`, ``len()``
    * disk: :meth:`save` into an HDF5 group, :meth:`load` back (exact round trip)
    * upkeep: :meth:`merge`, :meth:`compact`, :attr:`nbytes`, :meth:`_check`

    Not thread-safe: the scheduler thread owns it, like the HDF5 store.
    """

    def __init__(self, delta_max: int = DELTA_MAX) -> None:
        if delta_max < 1:
            raise ValueError(f"delta_max must be >= 1, not {delta_max}")
        self.delta_max = delta_max
        self._main, self._delta = _empty(), _empty()
        self._dir, self._bits = _directory(self._main["fp"])
        self._heap = np.zeros(1 << 12, np.uint8)  # byte 0 is reserved: record 0 is "none"
        self._used = 1
        self._garbage = 0  # bytes of records no row points to any more

    def __len__(self) -> int:
        """Distinct URLs stored. O(log n) when the delta is empty."""
        if not len(self._delta["fp"]):
            return len(self._main["fp"])
        d = self._delta["fp"]
        pos = np.minimum(np.searchsorted(self._main["fp"], d), len(self._main["fp"]) - 1)
        shadowed = int((self._main["fp"][pos] == d).sum()) if len(self._main["fp"]) else 0
        return len(self._main["fp"]) + len(d) - shadowed

    @property
    def nbytes(self) -> int:
        """Bytes of the numpy arrays (columns of both levels, and the heap's capacity)."""
        levels = [c.nbytes for level in (self._main, self._delta) for c in level.values()]
        return sum(levels) + self._heap.nbytes + self._dir.nbytes

    @property
    def heap_used(self) -> int:
        """Bytes of the heap in use (live records, garbage and the reserved byte)."""
        return self._used

    # ------------------------------------------------------------------ fill

    def update(self, fps: Sequence[int] | np.ndarray, etags: Sequence[str],
               last_modified: Sequence[int] | np.ndarray, expires: Sequence[int] | np.ndarray,
               fetched: Sequence[float] | np.ndarray,
               content_fp: Sequence[int] | np.ndarray) -> None:
        """Store what a batch of fetches said (the last one wins for a repeated fp).

        ``etags``: exact ETags ('' none; see :func:`parse_etag`); ``last_modified``,
        ``expires`` (fresh until), ``fetched``: Unix seconds (0: none; fractions dropped);
        ``content_fp``: uint64. Amortised O(delta_max) memcpy per call plus, every
        ``delta_max`` rows, an O(n) merge. Raises ValueError for mismatched lengths or
        out-of-range values.
        """
        fp = np.asarray(fps, np.int64)
        n = len(fp)
        try:
            content = np.asarray(content_fp, np.uint64)
            times = {name: np.asarray(values, np.float64) for name, values in (
                ("last_modified", last_modified), ("expires", expires), ("fetched", fetched))}
        except (OverflowError, TypeError) as e:
            raise ValueError(f"update: {e}") from None
        if len(etags) != n or any(len(c) != n for c in (content, *times.values())):
            raise ValueError("update: every column needs one value per fingerprint")
        if not n:
            return
        for name, t in times.items():
            if not (t >= 0).all() or not (t < UINT32_MAX + 1).all():
                raise ValueError(f"update: {name} outside 0..2**32-1 (Unix seconds)")
            times[name] = np.floor(t).astype(np.int64)
        keep = _last_of_each(fp)
        blob, rel = _encode([etags[i] for i in keep], times["last_modified"][keep],
                            times["expires"][keep])
        base = self._append(blob)
        batch = {
            "fp": fp[keep],
            "content_fp": content[keep],
            "fetched": times["fetched"][keep].astype(np.uint32),
            "record": np.where(rel >= 0, rel + base, 0).astype(np.uint32),
        }
        self._delta, replaced = _upsert(self._delta, batch)
        self._garbage += int(self._sizes(replaced).sum())
        if len(self._delta["fp"]) >= self.delta_max:
            self.merge()

    def add(self, fp: int, row: Validators) -> None:
        """Store one URL's row (a batch of one: prefer :meth:`update` for many)."""
        self.update([fp], [row.etag], [row.last_modified], [row.expires], [row.fetched],
                    [row.content_fp])

    def merge(self) -> None:
        """Merge the delta level into main (O(n) copy); compact the heap if half garbage."""
        if len(self._delta["fp"]):
            self._main, replaced = _upsert(self._main, self._delta)
            self._dir, self._bits = _directory(self._main["fp"])
            self._garbage += int(self._sizes(replaced).sum())
            self._delta = _empty()
        if self._garbage > (self._used - 1) // 2:
            self.compact()

    def compact(self) -> None:
        """Rewrite the heap with the live records only, in row order (O(heap))."""
        live = [(level, level["record"] != 0) for level in (self._main, self._delta)]
        recs = np.concatenate([level["record"][m] for level, m in live])
        sizes = self._sizes(recs)
        heap = np.zeros(1 + int(sizes.sum()), np.uint8)
        heap[1:] = _gather(self._heap, recs, sizes)
        new = 1 + np.cumsum(sizes) - sizes
        at = 0
        for level, m in live:
            k = int(m.sum())
            level["record"][m] = new[at:at + k]
            at += k
        self._heap, self._used, self._garbage = heap, len(heap), 0

    def _append(self, blob: np.ndarray) -> int:
        """Copy ``blob`` to the end of the heap; its offset. The heap grows by 1/16 at least:
        at most 6% of it is slack (and every byte is copied ~16 times as it grows)."""
        need = self._used + len(blob)
        if need > UINT32_MAX and self._garbage:
            self.merge()
            self.compact()
            need = self._used + len(blob)
        if need > UINT32_MAX:
            raise OverflowError("validator heap would exceed 4 GiB (uint32 offsets)")
        if need > len(self._heap):
            grown = np.zeros(min(max(need, len(self._heap) * 17 // 16), UINT32_MAX), np.uint8)
            grown[:self._used] = self._heap[:self._used]
            self._heap = grown
        base = self._used
        self._heap[base:need] = blob
        self._used = need
        return base

    def _sizes(self, records: np.ndarray) -> np.ndarray:
        """Byte size of each record (0 for record 0)."""
        r = records.astype(np.int64)
        m = r != 0
        out = np.zeros(len(r), np.int64)
        f = self._heap[r[m]].astype(np.int64)
        head = 1 + 4 * ((f & LAST_MODIFIED) != 0) + 4 * ((f & EXPIRES) != 0)
        e = (f & ETAG) != 0
        tail = np.zeros(len(f), np.int64)
        tail[e] = 1 + self._heap[r[m][e] + head[e]].astype(np.int64)
        out[m] = head + tail
        return out

    # ----------------------------------------------------------------- query

    def lookup(self, fps: Sequence[int] | np.ndarray) -> Found:
        """The rows of ``fps`` (one schedule): O(k log n) vectorised, k = len(fps)."""
        q = np.asarray(fps, np.int64)
        k = len(q)
        found = np.zeros(k, bool)
        content_fp = np.zeros(k, np.uint64)
        fetched = np.zeros(k, np.int64)
        record = np.zeros(k, np.int64)
        fp = self._main["fp"]
        if len(fp):
            b = _bucket(q, self._bits)
            pos = np.minimum(_search(fp, q, self._dir[b], self._dir[b + 1]), len(fp) - 1)
            self._take(self._main, pos, fp[pos] == q, found, content_fp, fetched, record)
        fp = self._delta["fp"]  # the newer level: it overrides main
        if len(fp):
            pos = np.minimum(np.searchsorted(fp, q), len(fp) - 1)
            self._take(self._delta, pos, fp[pos] == q, found, content_fp, fetched, record)
        modified, expires = np.zeros(k, np.int64), np.zeros(k, np.int64)
        etag = [""] * k
        has = np.flatnonzero(record)
        if len(has):
            heap = self._heap
            r = record[has]
            f = heap[r].astype(np.int64)
            p = r + 1
            for out, flag in ((modified, LAST_MODIFIED), (expires, EXPIRES)):
                m = (f & flag) != 0
                out[has[m]] = _u32(heap, p[m])
                p = p + 4 * m
            e = (f & ETAG) != 0
            if e.any():
                sizes = heap[p[e]].astype(np.int64)
                text = _gather(heap, p[e] + 1, sizes).tobytes().decode("latin-1")
                ends = np.cumsum(sizes).tolist()
                starts = [0, *ends[:-1]]
                for i, fl, a, b in zip(has[e].tolist(), f[e].tolist(), starts, ends,
                                       strict=True):
                    body = text[a:b]
                    etag[i] = (('W/"' if fl & WEAK else '"') + body + '"') if fl & QUOTED \
                        else body
        return Found(found, content_fp, fetched, modified, expires, etag)

    @staticmethod
    def _take(level: Level, pos: np.ndarray, hit: np.ndarray, *out: np.ndarray) -> None:
        """Copy the level's rows ``pos[hit]`` into the outputs (found, content_fp, fetched,
        record) at the entries ``hit``."""
        found, content_fp, fetched, record = out
        at = pos[hit]
        found[hit] = True
        content_fp[hit] = level["content_fp"][at]
        fetched[hit] = level["fetched"][at]
        record[hit] = level["record"][at]

    def get(self, fp: int) -> Validators | None:
        """The row of one URL, or None."""
        return self.lookup([fp]).row(0)

    def fingerprints(self) -> np.ndarray:
        """Every stored fp, sorted (merges the delta first)."""
        self.merge()
        return self._main["fp"].copy()

    # ------------------------------------------------------------------ disk

    def save(self, group: h5py.Group) -> None:
        """Write the store into the empty HDF5 ``group`` (merges the delta first).

        Datasets: ``fp`` int64 (sorted), ``content_fp`` uint64, ``fetched`` uint32 (Unix s),
        ``record`` uint32 (offset into ``heap``, 0: none), ``heap`` uint8 (records, see the
        module docstring); attributes ``format``, ``version``, ``garbage``.
        """
        self.merge()
        for name, dtype in COLUMNS.items():
            group.create_dataset(name, data=self._main[name], dtype=dtype)
        group.create_dataset("heap", data=self._heap[:self._used], dtype=np.uint8)
        group.attrs.update(format=FORMAT, version=VERSION, garbage=self._garbage)

    @classmethod
    def load(cls, group: h5py.Group, delta_max: int = DELTA_MAX) -> ValidatorStore:
        """The store :meth:`save` wrote into ``group``; ValueError if it is not one."""
        if group.attrs.get("format") != FORMAT or int(group.attrs.get("version", 0)) > VERSION:
            raise ValueError(f"{group.name}: not a {FORMAT} group (version <= {VERSION})")
        store = cls(delta_max)
        store._main = {name: group[name][:].astype(dtype, copy=False)
                       for name, dtype in COLUMNS.items()}
        heap = group["heap"][:]
        if not len(heap):
            raise ValueError(f"{group.name}: empty heap")
        store._heap, store._used = heap, len(heap)
        store._dir, store._bits = _directory(store._main["fp"])
        store._garbage = int(group.attrs["garbage"])
        fp, rec = store._main["fp"], store._main["record"]
        if (len({len(c) for c in store._main.values()}) != 1 or (fp[1:] <= fp[:-1]).any()
                or (len(rec) and int(rec.max()) >= store._used)):
            raise ValueError(f"{group.name}: corrupt validator store")
        return store

    # ----------------------------------------------------------------- check

    def _check(self) -> None:
        """Assert every invariant (tests call it after each step)."""
        assert self._heap[0] == 0 and 1 <= self._used <= len(self._heap)
        total = 0
        for level in (self._main, self._delta):
            assert len({len(c) for c in level.values()}) == 1
            assert all(level[name].dtype == dtype for name, dtype in COLUMNS.items())
            assert (level["fp"][1:] > level["fp"][:-1]).all(), "fps sorted and unique"
            rec = level["record"]
            assert not len(rec) or int(rec.max()) < self._used
            sizes = self._sizes(rec)
            assert (rec.astype(np.int64) + sizes <= self._used).all()
            total += int(sizes.sum())
        assert len(self._delta["fp"]) < self.delta_max
        d, bits = _directory(self._main["fp"])
        assert bits == self._bits and (d == self._dir).all(), "directory up to date"
        assert total + self._garbage == self._used - 1, "live + garbage == heap in use"
