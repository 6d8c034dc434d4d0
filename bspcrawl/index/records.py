"""The WARC/1.1 records of a fetch, as bytes: their heads, digests and gzip members.

What :class:`bspcrawl.index.warc.WarcWriter` appends to its files, made apart from any
file, so that a parse helper (:mod:`bspcrawl.analysis`), which has the page's body, can make
a fetched page's records ahead of its commit: on pages of a few KB the records cost the
scheduler a tenth of its time a page (their two SHA-1 digests, their heads, the gzip of
each), and there the scheduler, not the analysis, bounds a rank. Records are built byte
for byte as warcio's ``WARCWriter`` builds them (same fields, order and digests; the tests
check it): warcio's record builder cost ~0.2 ms of CPU a fetch in header bookkeeping and
pure-Python base32, as much as the compression; the HTTP heads are still warcio's
(``StatusAndHeaders``, which percent-encodes non-ASCII header values) when not ASCII.

Compression: ISA-L (python-isal), whose gzip members are plain gzip. On 300 testweb pages
(23 KB each) here, zlib level 1 / 6 compress 55 / 17 MB/s, ISA-L level 1 179 MB/s to a
smaller output than zlib's level 1: 0.13 ms of CPU for a page instead of 0.42 (with zlib's
level 1, a crawl that archived took 1.37x the CPU per page of one that did not).
"""

from __future__ import annotations

import hashlib
import os
import random
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from http import HTTPStatus
from typing import NamedTuple

from isal import isal_zlib

LEVEL = 1  # ISA-L levels are 0..3
NOT_MODIFIED = "http://netpreserve.org/warc/1.1/revisit/server-not-modified"
IDENTICAL = "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest"
_RENAMED = ("content-encoding", "transfer-encoding")
_UUID_CLEAR = ~((0xF000 << 64) | (0xC000 << 48)) & ((1 << 128) - 1)  # version, variant bits
_UUID_V4 = (0x4000 << 64) | (0x8000 << 48)  # version 4, RFC 4122 variant
_BASE32 = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
_BASE32_PAIRS = [a + b for a in _BASE32 for b in _BASE32]  # 10 bits -> 2 letters
_REQUEST, _RESPONSE = "application/http; msgtype=request", "application/http; msgtype=response"


def warc_date(t: float) -> str:
    """WARC-Date of Unix time ``t``, to the microsecond (WARC/1.1): the same ``t`` always
    gives the same string, so a revisit can name its original by the history's time."""
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def warc_digest(*parts: bytes) -> str:
    """The WARC digest of the concatenated *parts*: ``sha1:`` and base32, as warcio writes
    it (``base64.b32encode`` is pure Python, ~13 µs a digest; this takes ~2)."""
    sha1 = hashlib.sha1()
    for part in parts:
        sha1.update(part)
    n = int.from_bytes(sha1.digest(), "big")  # 160 bits: 16 pairs of letters
    return "sha1:" + "".join([_BASE32_PAIRS[(n >> shift) & 1023]
                              for shift in range(150, -1, -10)])


_NO_PAYLOAD = warc_digest()  # a request record's: a GET has no body


def field_lines(fields: Iterable[tuple[str, str]]) -> str:
    """``name: value`` lines, each ended by CRLF (WARC headers, warcinfo's fields)."""
    return "".join([f"{name}: {value}\r\n" for name, value in fields])


def record_bytes(fields: Sequence[tuple[str, str]], *block: bytes) -> bytes:
    """One WARC/1.1 record: the header *fields*, Content-Length, then *block* (its parts)."""
    head = f"WARC/1.1\r\n{field_lines(fields)}Content-Length: {sum(map(len, block))}\r\n\r\n"
    return b"".join([head.encode(), *block, b"\r\n\r\n"])


def http_response_headers(status: int, headers: Mapping[str, str], length: int) -> bytes:
    """The response head stored for a body of ``length`` decoded bytes (see the module
    docstring: encodings renamed, Content-Length the stored length), as warcio's
    ``StatusAndHeaders.to_ascii_bytes()`` writes it, built directly when it is ASCII (a
    fifth of the cost); non-ASCII header text is percent-encoded, by warcio where it can
    (values), else here (names too)."""
    try:
        reason = HTTPStatus(status).phrase
    except ValueError:
        reason = ""
    fields = []
    for name, value in headers.items():
        if name in _RENAMED:
            fields.append((f"X-Archive-Orig-{name.title()}", value))
        elif name == "content-length":
            if value.strip() != str(length):
                fields.append(("X-Archive-Orig-Content-Length", value))
        else:
            fields.append((name, value))
    if status != 304 or "content-length" in headers:
        fields.append(("Content-Length", str(length)))
    statusline = f"{status} {reason}".rstrip()
    head = f"HTTP/1.1 {statusline}\r\n{field_lines(fields)}\r\n"
    if head.isascii():
        return head.encode()
    try:  # warcio percent-encodes non-ASCII values (RFC 8187) ...
        return _warcio_head(statusline, list(fields), protocol="HTTP/1.1")
    except UnicodeEncodeError:  # ... but not names, nor a value with ";" whose non-ASCII
        pass  # part is not a "=value": then every non-ASCII byte is, here
    fields = [(_percent_encoded(name), _percent_encoded(value)) for name, value in fields]
    return _warcio_head(statusline, fields, protocol="HTTP/1.1")


def _warcio_head(statusline: str, fields: list[tuple[str, str]], **options: object) -> bytes:
    """warcio's ASCII bytes of an HTTP head (imported here: warcio takes ~30 ms to import,
    and a parse helper needs it only for a head that is not ASCII)."""
    from warcio.statusandheaders import StatusAndHeaders

    return StatusAndHeaders(statusline, fields, **options).to_ascii_bytes()


def _percent_encoded(text: str) -> str:
    """``text`` with each non-ASCII character percent-encoded: header text is the server's
    bytes decoded as latin-1, so a character is a byte (above U+00FF: its UTF-8)."""
    if text.isascii():
        return text
    return "".join(c if c.isascii() else "".join(
        f"%{b:02X}" for b in c.encode("latin-1" if ord(c) < 256 else "utf-8")) for c in text)


def http_request_headers(url: str, lines: Sequence[str]) -> bytes:
    """A rebuilt request head: ``GET target HTTP/1.1``, ``Host`` and the given header
    lines (``"Name: value"``, as for pycurl's HTTPHEADER), as warcio's
    ``to_ascii_bytes()`` writes it. ``url`` is in ``bspcrawl.urls`` form (the target is
    what follows the authority, "/" if nothing does)."""
    authority, _, path = url.partition("://")[2].partition("/")
    fields = [("Host", authority.rpartition("@")[2])]
    for line in lines:
        name, _, value = line.partition(":")
        fields.append((name.strip(), value.strip()))
    head = f"GET /{path} HTTP/1.1\r\n{field_lines(fields)}\r\n"
    if head.isascii():
        return head.encode()
    return _warcio_head(head.partition("\r\n")[0], fields, is_http_request=True)


class Made(NamedTuple):
    """The records of one fetch, each a gzip member, not yet written."""

    record: bytes
    """The response record (or the revisit record)."""
    request: bytes
    """The request record, ``WARC-Concurrent-To`` the first."""
    digest: str
    """The first record's ``WARC-Payload-Digest`` ('': none, a 304's revisit)."""


class Records:
    """Makes records: their ids (random, version 4 UUIDs) and gzip members at ``level``."""

    def __init__(self, level: int = LEVEL) -> None:
        if not 0 <= level <= 3:
            raise ValueError("level must be 0..3")
        self.level = level
        self._random = random.Random(os.urandom(16))  # record ids: unique, not secret

    def record_id(self) -> str:
        """A WARC-Record-ID: a random (version 4) UUID URN, drawn without a system call
        (warcio's ``uuid4`` reads os.urandom each time: 38 us here), its hex formatted
        here (``uuid.UUID``'s would take 5 us)."""
        h = f"{self._random.getrandbits(128) & _UUID_CLEAR | _UUID_V4:032x}"
        return f"<urn:uuid:{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}>"

    def member(self, record: bytes) -> bytes:
        """``record`` as one gzip member (ISA-L in one call: a compress object took 1.5
        µs more, and made a 285-byte request record 198 bytes instead of 65)."""
        return isal_zlib.compress(record, self.level, 31)

    def fetch(self, url: str, started: float, status: int, headers: Mapping[str, str],
              body: bytes, *, truncated: bool = False, request_headers: Sequence[str] = (),
              refers_to: float | None = None) -> Made:
        """The records of the fetch of ``url`` (its transfer ``started`` then; the
        response's ``status``, ``headers`` and decoded ``body``; ``truncated``: the body is
        cut at the configured length; the ``request_headers`` lines sent). With
        ``refers_to``, the time of the archived version holding the same body, a revisit
        record (of a 304: server-not-modified; else identical-payload-digest) instead of
        the response record."""
        date = warc_date(started)
        http = http_response_headers(status, headers, len(body))
        record_id = self.record_id()
        fields = [("WARC-Date", date), ("WARC-Record-ID", record_id)]
        revisit = refers_to is not None
        digest = "" if revisit and status == 304 else warc_digest(body)
        if refers_to is not None:
            fields += [("WARC-Profile", NOT_MODIFIED if status == 304 else IDENTICAL),
                       ("WARC-Refers-To-Target-URI", url),
                       ("WARC-Refers-To-Date", warc_date(refers_to))]
            if digest:
                fields.append(("WARC-Payload-Digest", digest))
            fields += [("WARC-Type", "revisit"), ("WARC-Target-URI", url),
                       ("WARC-Block-Digest", warc_digest(http)), ("Content-Type", _RESPONSE)]
            block: tuple[bytes, ...] = (http,)
        else:
            fields += [("WARC-Type", "response"), ("WARC-Target-URI", url),
                       ("WARC-Payload-Digest", digest),
                       ("WARC-Block-Digest", warc_digest(http, body)),
                       ("Content-Type", _RESPONSE)]
            if truncated:  # WARC 1.1 section 5.13: cut at the configured length
                fields.append(("WARC-Truncated", "length"))
            block = (http, body)
        request = http_request_headers(url, request_headers)
        return Made(self.member(record_bytes(fields, *block)), self.member(record_bytes(
            [("WARC-Date", date), ("WARC-Record-ID", self.record_id()),
             ("WARC-Concurrent-To", record_id), ("WARC-Type", "request"),
             ("WARC-Target-URI", url), ("WARC-Payload-Digest", _NO_PAYLOAD),
             ("WARC-Block-Digest", warc_digest(request)), ("Content-Type", _REQUEST)],
            request)), digest)
