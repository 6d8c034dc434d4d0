"""Per-rank WARC files (ISO 28500, WARC/1.1) of every fetch: request, response, revisit.

The history's bodies live here, each record its own gzip member, read by seeking to the
(file, offset, length) :meth:`WarcWriter.write_fetch` returns; records are written byte
for byte as warcio's ``WARCWriter`` would (the tests check it) and read with warcio.

- A fetch gives a ``response`` and a ``request`` record; a 304, or a 200 whose body equals
  the newest archived one, a ``revisit`` naming the record that holds the body. Failed
  fetches are not archived.
- BEWARE: a response record holds libcurl's decoded body (what was hashed and indexed),
  so Content-/Transfer-Encoding are renamed ``X-Archive-Orig-*`` and Content-Length is
  the stored length (docs/revisits.md).
- Rank r writes ``rank-RRRR-IIIII.warc.gz``, named ``*.open`` until finished. One fetch's
  records go out in one ``write`` (they survive a process crash) and :meth:`sync` makes
  them survive a machine crash; a new writer first runs :func:`recover` on its rank's
  ``.open`` files, cutting a torn last record.
"""

from __future__ import annotations

import base64
import hashlib
import os
import re
import socket
import time
import uuid
import zlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from http import HTTPStatus
from pathlib import Path

import xxhash
from isal import isal_zlib
from warcio.archiveiterator import ArchiveIterator
from warcio.exceptions import ArchiveLoadFailed
from warcio.statusandheaders import StatusAndHeaders

from bspcrawl import __version__
from bspcrawl.durable import sync_dir
from bspcrawl.index.history import Version
from bspcrawl.messages import FetchResult

OPEN = ".open"
MAX_BYTES = 1 << 30  # default size at which a file is finished and the next one begun
LEVEL = 1  # ISA-L (plain gzip members, faster than zlib) levels are 0..3
NOT_MODIFIED = "http://netpreserve.org/warc/1.1/revisit/server-not-modified"
IDENTICAL = "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest"
_RENAMED = ("content-encoding", "transfer-encoding")
_REQUEST, _RESPONSE = "application/http; msgtype=request", "application/http; msgtype=response"


@dataclass(frozen=True, slots=True)
class Location:
    """Where a record is: file index, offset of its gzip member, and the member's length."""

    file: int
    offset: int
    length: int


@dataclass(frozen=True, slots=True)
class Archived:
    """The records written for one fetch."""

    record: Location  # the response or revisit record
    request: Location  # the request record
    body: Location  # the response record holding the body (for a revisit: the original's)
    revisit: bool
    digest: str = ""  # the record's WARC-Payload-Digest ('': none, a 304's revisit)


def warc_name(rank: int, index: int) -> str:
    return f"rank-{rank:04d}-{index:05d}.warc.gz"


def warc_date(t: float) -> str:
    """WARC-Date of ``t`` to the microsecond: a revisit names its original by its time."""
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def warc_digest(*parts: bytes) -> str:
    """``sha1:`` and base32 of the concatenated *parts*, as warcio writes it."""
    sha1 = hashlib.sha1()
    for part in parts:
        sha1.update(part)
    return "sha1:" + base64.b32encode(sha1.digest()).decode()


_NO_PAYLOAD = warc_digest()  # a request record's: a GET has no body


def field_lines(fields: Iterable[tuple[str, str]]) -> str:
    """``name: value`` lines, each ended by CRLF (WARC headers, warcinfo's fields)."""
    return "".join([f"{name}: {value}\r\n" for name, value in fields])


def record_bytes(fields: Sequence[tuple[str, str]], *block: bytes) -> bytes:
    """One WARC/1.1 record: the header *fields*, Content-Length, then *block* (its parts)."""
    head = f"WARC/1.1\r\n{field_lines(fields)}Content-Length: {sum(map(len, block))}\r\n\r\n"
    return b"".join([head.encode(), *block, b"\r\n\r\n"])


def http_response_headers(status: int, headers: Mapping[str, str], length: int) -> bytes:
    """The response head stored for a decoded body of ``length`` bytes, as warcio's
    ``to_ascii_bytes()`` writes it; non-ASCII header text is percent-encoded."""
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
        return StatusAndHeaders(statusline, list(fields), protocol="HTTP/1.1").to_ascii_bytes()
    except UnicodeEncodeError:  # ... but not names, nor a value with ";" whose non-ASCII
        pass  # part is not a "=value": then every non-ASCII byte is, here
    fields = [(_percent_encoded(name), _percent_encoded(value)) for name, value in fields]
    return StatusAndHeaders(statusline, fields, protocol="HTTP/1.1").to_ascii_bytes()


def _percent_encoded(text: str) -> str:
    """``text``'s non-ASCII characters percent-encoded as latin-1 bytes (else UTF-8)."""
    if text.isascii():
        return text
    return "".join(c if c.isascii() else "".join(
        f"%{b:02X}" for b in c.encode("latin-1" if ord(c) < 256 else "utf-8")) for c in text)


def http_request_headers(url: str, lines: Sequence[str]) -> bytes:
    """A rebuilt request head: ``GET``, ``Host`` and the header *lines* sent, as warcio
    writes it."""
    authority, _, path = url.partition("://")[2].partition("/")
    fields = [("Host", authority.rpartition("@")[2])]
    for line in lines:
        name, _, value = line.partition(":")
        fields.append((name.strip(), value.strip()))
    head = f"GET /{path} HTTP/1.1\r\n{field_lines(fields)}\r\n"
    if head.isascii():
        return head.encode()
    return StatusAndHeaders(head.partition("\r\n")[0], fields,
                            is_http_request=True).to_ascii_bytes()


class WarcWriter:
    """Writes one rank's fetches to rotating WARC files in ``folder``; owned by the thread
    that commits."""

    def __init__(self, folder: Path, rank: int = 0, *, max_bytes: int = MAX_BYTES,
                 level: int = LEVEL, info: Mapping[str, str] | None = None) -> None:
        if max_bytes < 1 or not 0 <= level <= 3:
            raise ValueError("max_bytes must be >= 1 and level 0..3")
        self.folder, self.rank = Path(folder), rank
        self.max_bytes, self.level = max_bytes, level
        self.info = {"software": f"bspcrawl/{__version__}",
                     "hostname": socket.gethostname(), "format": "WARC File Format 1.1",
                     "conformsTo": "https://iso.org/standard/68004.html", **(info or {})}
        self.folder.mkdir(parents=True, exist_ok=True)
        self.index = files_used(self.folder, rank)  # the file being (or to be) written
        self._fd: int | None = None
        self._size = 0

    def path(self, index: int) -> Path:
        """The path of file ``index`` (``*.open`` while written; its records are whole)."""
        path = self.folder / warc_name(self.rank, index)
        if self._fd is not None and index == self.index:
            return path.with_name(path.name + OPEN)
        return path

    def __enter__(self) -> WarcWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def write_fetch(self, result: FetchResult, *, request_headers: Sequence[str] = (),
                    original: Version | None = None,
                    content_fp: int | None = None) -> Archived | None:
        """Archive one fetch; where its records went, or None without an HTTP response.
        A 304 or a body equal to ``original``'s (the newest archived) is a revisit of it."""
        if result.error or result.status <= 0:
            return None
        if self._fd is not None and self._size >= self.max_bytes:
            self._finish()
        if self._fd is None:
            self._start()
        url, body, date = result.job.url, result.body, warc_date(result.started)
        if content_fp is None:
            content_fp = xxhash.xxh3_64_intdigest(body) if body else 0
        revisit = original is not None and original.has_body and (
            result.status == 304 or (bool(body) and content_fp == original.content_fp))
        http = http_response_headers(result.status, result.headers, len(body))
        record_id = self._record_id()
        fields = [("WARC-Date", date), ("WARC-Record-ID", record_id)]
        digest = "" if revisit and result.status == 304 else warc_digest(body)
        if revisit:
            assert original is not None
            fields += [("WARC-Profile", NOT_MODIFIED if result.status == 304 else IDENTICAL),
                       ("WARC-Refers-To-Target-URI", url),
                       ("WARC-Refers-To-Date", warc_date(original.time))]
            if digest:
                fields.append(("WARC-Payload-Digest", digest))
            fields += [("WARC-Type", "revisit"), ("WARC-Target-URI", url),
                       ("WARC-Block-Digest", warc_digest(http)), ("Content-Type", _RESPONSE)]
            block = (http,)
        else:
            fields += [("WARC-Type", "response"), ("WARC-Target-URI", url),
                       ("WARC-Payload-Digest", digest),
                       ("WARC-Block-Digest", warc_digest(http, body)),
                       ("Content-Type", _RESPONSE)]
            if result.truncated:  # WARC 1.1 section 5.13: cut at the configured length
                fields.append(("WARC-Truncated", "length"))
            block = (http, body)
        request = http_request_headers(url, request_headers)
        members = [self._member(record_bytes(fields, *block)), self._member(record_bytes(
            [("WARC-Date", date), ("WARC-Record-ID", self._record_id()),
             ("WARC-Concurrent-To", record_id), ("WARC-Type", "request"),
             ("WARC-Target-URI", url), ("WARC-Payload-Digest", _NO_PAYLOAD),
             ("WARC-Block-Digest", warc_digest(request)), ("Content-Type", _REQUEST)],
            request))]
        start = self._size
        self._write(b"".join(members))
        at = Location(self.index, start, len(members[0]))
        body_at = (Location(original.warc_file, original.warc_offset, original.warc_length)
                   if revisit and original is not None else at)
        return Archived(at, Location(self.index, start + len(members[0]), len(members[1])),
                        body_at, revisit, digest)

    def sync(self) -> None:
        """fsync: the records written survive a machine crash."""
        if self._fd is not None:
            os.fsync(self._fd)

    def close(self) -> None:
        """Finish the current file; the next write starts a new one."""
        if self._fd is not None:
            self._finish()

    def _record_id(self) -> str:
        return f"<urn:uuid:{uuid.uuid4()}>"

    def _member(self, record: bytes) -> bytes:
        return isal_zlib.compress(record, self.level, 31)

    def _write(self, data: bytes) -> None:
        """Append whole records or none: a failed write (a full disk) is cut off again."""
        assert self._fd is not None
        view = memoryview(data)
        try:
            while view:
                view = view[os.write(self._fd, view):]
        except OSError:
            self._cut()
            raise
        self._size += len(data)

    def _cut(self) -> None:
        """Truncate to the last whole record; failing that, leave it to :func:`recover`."""
        assert self._fd is not None
        try:
            os.ftruncate(self._fd, self._size)
        except OSError:
            os.close(self._fd)
            self._fd = None
            self.index += 1

    def _start(self) -> None:
        name = warc_name(self.rank, self.index)
        self._fd = os.open(self.folder / (name + OPEN), os.O_WRONLY | os.O_CREAT | os.O_EXCL,
                           0o644)
        self._size = 0
        info = field_lines(self.info.items()).encode()
        self._write(self._member(record_bytes([
            ("WARC-Type", "warcinfo"), ("WARC-Record-ID", self._record_id()),
            ("WARC-Filename", name), ("WARC-Date", warc_date(time.time())),
            ("WARC-Block-Digest", warc_digest(info)),
            ("Content-Type", "application/warc-fields")], info)))

    def _finish(self) -> None:
        assert self._fd is not None
        os.fsync(self._fd)
        os.close(self._fd)
        self._fd = None
        name = warc_name(self.rank, self.index)
        os.replace(self.folder / (name + OPEN), self.folder / name)
        sync_dir(self.folder)
        self.index += 1


def files_used(folder: Path, rank: int) -> int:
    """:func:`recover` the files a killed writer of ``rank`` left open; the indices used."""
    name = re.compile(rf"rank-{rank:04d}-(\d{{5,}})\.warc\.gz")
    for stale in sorted(folder.glob(f"rank-{rank:04d}-*.warc.gz{OPEN}")):
        if name.fullmatch(stale.name[: -len(OPEN)]):
            recover(stale)
    used = [int(m.group(1)) for p in folder.iterdir() if (m := name.fullmatch(p.name))]
    return max(used, default=-1) + 1


def record_ends(path: Path) -> list[int]:
    """End offsets of the complete WARC records of ``path``, up to the first torn one."""
    ends: list[int] = []
    pos = 0
    z, head = zlib.decompressobj(31), b""
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 20):
            while chunk:
                try:
                    out = z.decompress(chunk)
                except zlib.error:  # not gzip (e.g. zeros a crash left): stop here
                    return ends
                if len(head) < 5:
                    head += out[:5]
                    if len(head) >= 5 and not head.startswith(b"WARC/"):
                        return ends
                if not z.eof:
                    pos += len(chunk)
                    break
                pos += len(chunk) - len(z.unused_data)
                ends.append(pos)
                chunk = z.unused_data
                z, head = zlib.decompressobj(31), b""
    return ends


def recover(path: Path, keep: int | None = None) -> Path | None:
    """Finish a crashed writer's ``*.open`` file: cut it after its last complete record
    (or at record end ``keep``, a checkpoint's), fsync, rename; None if none was left."""
    path = Path(path)
    if not path.name.endswith(OPEN):
        raise ValueError(f"{path}: not an unfinished WARC file (*{OPEN})")
    ends = record_ends(path)
    end = ends[-1] if ends else 0
    if keep is not None:
        if keep and keep not in ends:
            raise ValueError(f"{path}: {keep} is not the end of a complete record")
        end = keep
    if not end:
        path.unlink()
        return None
    with open(path, "rb+") as fh:
        fh.truncate(end)
        os.fsync(fh.fileno())
    final = path.with_name(path.name[: -len(OPEN)])
    os.replace(path, final)
    sync_dir(path.parent)
    return final


def read_body(path: Path, offset: int) -> bytes:
    """The ``FetchResult.body`` stored in the response record at ``offset``."""
    return read_response(path, offset)[1]


def read_response(path: Path, offset: int) -> tuple[dict[str, str], bytes]:
    """The header fields (lower-case names) and body of the response record at
    ``offset``; ValueError if there is none."""
    with open(path, "rb") as fh:
        fh.seek(offset)
        if fh.read(2) != b"\x1f\x8b":  # every record is a gzip member
            raise ValueError(f"{path}@{offset}: no WARC record (not a gzip member)")
        fh.seek(offset)
        try:
            for record in ArchiveIterator(fh):
                if record.format != "warc":  # warcio falls back to parsing ARC
                    break
                if record.rec_type != "response":
                    raise ValueError(f"{path}@{offset}: a {record.rec_type} record has no body")
                fields = record.http_headers.headers if record.http_headers else []
                return {k.lower(): v for k, v in fields}, record.raw_stream.read()
        except ArchiveLoadFailed as e:
            raise ValueError(f"{path}@{offset}: no WARC record ({e})") from None
    raise ValueError(f"{path}@{offset}: no WARC record")
