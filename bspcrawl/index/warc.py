"""Per-rank WARC files (ISO 28500, WARC/1.1) of every fetch: request, response, revisit.

The bodies of the history (:mod:`bspcrawl.index.history`, after Yioop's cache history,
``../shared/seeds/002_*``) live here, in the archive format of the Internet Archive and
Heritrix. Each record is its own gzip member, so a record is read by seeking to its offset;
:meth:`WarcWriter.write_fetch` returns the (file, offset, length) of what it wrote for the
HDF5 history to keep. Records are read with warcio, and written byte for byte as warcio's
``WARCWriter`` would write them (:mod:`bspcrawl.index.records`).

**Records** (made by :mod:`bspcrawl.index.records`). A fetch gives a ``response`` record
and a ``request`` record pointing at it (``WARC-Concurrent-To``). A 304, or a 200 whose
body equals the newest archived one (same content fingerprint), gives a ``revisit`` record
instead: the HTTP headers only, with ``WARC-Profile`` server-not-modified or identical-
payload-digest and ``WARC-Refers-To-Target-URI`` / ``WARC-Refers-To-Date`` naming the
response record that holds the body; its location is what the history keeps as the
version's body. Failed fetches (no HTTP response) are not archived. Each file starts with a
``warcinfo`` record.

**What a response record holds** (BEWARE: a rebuilt message, not the bytes on the wire).
libcurl hands the crawler the body *after* undoing Content-Encoding (gzip, br, ...) and
chunking, and the header fields as a dict (lower-case names, the last of repeated fields).
The record stores exactly that body, so :func:`read_body` returns ``FetchResult.body`` byte
for byte: what ``/pages/content_fp`` hashes and the index parsed, and what the server sent
whenever it sent no Content-Encoding. To keep the HTTP message consistent with it,
``Content-Encoding`` and ``Transfer-Encoding`` are renamed ``X-Archive-Orig-Content-Encoding``
and ``X-Archive-Orig-Transfer-Encoding`` and ``Content-Length`` is the stored length (the
server's value, if different, is kept as ``X-Archive-Orig-Content-Length``), the convention
of pywb and the Wayback Machine for rewritten headers; the status line says ``HTTP/1.1``
(libcurl may have spoken HTTP/2). The request record holds a request head rebuilt from
the URL and the header lines the job carried (the conditional ones of a revisit).
Archiving the raw bytes instead would need the fetcher to turn off libcurl's decoding
(``CURLOPT_HTTP_CONTENT_DECODING = 0``) and decode at commit time.

**Files and crashes.** Rank r writes ``rank-RRRR-IIIII.warc.gz`` (I = 0, 1, ...) in its
folder; a file is named ``*.warc.gz.open`` while it is written and renamed when it is
finished, at ``max_bytes`` or :meth:`WarcWriter.close`. The records of one fetch go to the
file in one unbuffered ``write``, so once :meth:`WarcWriter.write_fetch` has returned they
survive a crash of the process; :meth:`WarcWriter.sync` (fsync) makes them survive a crash
of the machine: call it before sealing the HDF5 segment that refers to them. A crash can
leave a torn record at the end of an ``.open`` file (``warcio check`` lists it as a record
without headers; stricter readers stop there); every new :class:`WarcWriter` first runs
:func:`recover` on its rank's ``.open`` files (cut after the last complete record, fsync,
rename), and the files it then writes get new indices. Records already reported written
are never touched by recovery.
"""

from __future__ import annotations

import os
import re
import socket
import time
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import xxhash
from warcio.archiveiterator import ArchiveIterator
from warcio.exceptions import ArchiveLoadFailed

from bspcrawl import __version__
from bspcrawl.durable import sync_dir
from bspcrawl.index.history import Version
from bspcrawl.index.records import (
    LEVEL,
    Made,
    Records,
    field_lines,
    record_bytes,
    warc_date,
    warc_digest,
)
from bspcrawl.messages import FetchResult

OPEN = ".open"
MAX_BYTES = 1 << 30  # default size at which a file is finished and the next one begun
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
    """File name of a finished WARC file: ``rank-RRRR-IIIII.warc.gz``."""
    return f"rank-{rank:04d}-{index:05d}.warc.gz"


class WarcWriter:
    """Writes one rank's fetches to rotating WARC files in ``folder``.

    API by role:

    * write: :meth:`write_fetch` (the records of one fetch; their locations)
    * durability: :meth:`sync` (fsync), :meth:`close` (finish the file); a context manager
    * naming: :meth:`path` of a file index

    Owned by the scheduler thread (it writes at commit time, like the HDF5 store).
    """

    def __init__(self, folder: Path, rank: int = 0, *, max_bytes: int = MAX_BYTES,
                 level: int = LEVEL, info: Mapping[str, str] | None = None) -> None:
        if max_bytes < 1:
            raise ValueError("max_bytes must be >= 1")
        self.folder, self.rank = Path(folder), rank
        self.max_bytes, self.level = max_bytes, level
        self.info = {"software": f"bspcrawl/{__version__}",
                     "hostname": socket.gethostname(), "format": "WARC File Format 1.1",
                     "conformsTo": "https://iso.org/standard/68004.html", **(info or {})}
        self.folder.mkdir(parents=True, exist_ok=True)
        self.index = files_used(self.folder, rank)  # the file being (or to be) written
        self._fd: int | None = None
        self._size = 0
        self.records = Records(level)

    def path(self, index: int) -> Path:
        """The path of file ``index`` (the history's ``warc_file``): the file being written
        is still ``*.warc.gz.open``; its records are whole on disk, so it can be read."""
        path = self.folder / warc_name(self.rank, index)
        if self._fd is not None and index == self.index:
            return path.with_name(path.name + OPEN)
        return path

    def __enter__(self) -> WarcWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ----------------------------------------------------------------- write

    def write_fetch(self, result: FetchResult, *, request_headers: Sequence[str] = (),
                    original: Version | None = None,
                    content_fp: int | None = None, made: Made | None = None
                    ) -> Archived | None:
        """Archive one fetch; returns where its records went, or None for a fetch without
        an HTTP response (``result.error``).

        ``original``: the version holding the newest archived body of the URL
        (:meth:`History.original`); with it, a 304 or an unchanged body is written as a
        revisit of that record. ``request_headers``: the header lines sent, for the
        request record. ``content_fp``: xxh3-64 of the body, if already computed.
        ``made``: the response and request records of this fetch as a parse helper made
        them (:meth:`Records.fetch`), written as they are unless the fetch is a revisit.
        """
        if result.error or result.status <= 0:
            return None
        if self._fd is not None and self._size >= self.max_bytes:
            self._finish()
        if self._fd is None:
            self._start()
        body = result.body
        if content_fp is None:
            content_fp = xxhash.xxh3_64_intdigest(body) if body else 0
        revisit = original is not None and original.has_body and (
            result.status == 304 or (bool(body) and content_fp == original.content_fp))
        if made is None or revisit:
            made = self.records.fetch(
                result.job.url, result.started, result.status, result.headers, body,
                truncated=result.truncated, request_headers=request_headers,
                refers_to=original.time if revisit and original is not None else None)
        start = self._size
        self._write(made.record + made.request)
        at = Location(self.index, start, len(made.record))
        body_at = (Location(original.warc_file, original.warc_offset, original.warc_length)
                   if revisit and original is not None else at)
        return Archived(at, Location(self.index, start + len(made.record), len(made.request)),
                        body_at, revisit, made.digest)

    def sync(self) -> None:
        """Make every record written so far survive a machine crash (fsync)."""
        if self._fd is not None:
            os.fsync(self._fd)

    def close(self) -> None:
        """Finish the current file (fsync, rename to ``*.warc.gz``); the next write
        starts a new one."""
        if self._fd is not None:
            self._finish()

    # -------------------------------------------------------------- internals

    def _write(self, data: bytes) -> None:
        """Append whole records, or none: a failed write (a full disk: ENOSPC, EDQUOT,
        EFBIG) is cut off again before the error is raised, so no finished file ever holds
        a torn record."""
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
        """Truncate the open file to its last whole record; if even that fails, leave it
        unfinished (``*.open``) for :func:`recover`, and go on in a new file."""
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
        self._write(self.records.member(record_bytes([
            ("WARC-Type", "warcinfo"), ("WARC-Record-ID", self.records.record_id()),
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
    """Finish (:func:`recover`) the files a killed writer of ``rank`` left open in
    ``folder``; returns the number of file indices used (the last index + 1)."""
    name = re.compile(rf"rank-{rank:04d}-(\d{{5,}})\.warc\.gz")
    for stale in sorted(folder.glob(f"rank-{rank:04d}-*.warc.gz{OPEN}")):
        if name.fullmatch(stale.name[: -len(OPEN)]):
            recover(stale)
    used = [int(m.group(1)) for p in folder.iterdir() if (m := name.fullmatch(p.name))]
    return max(used, default=-1) + 1


def record_ends(path: Path) -> list[int]:
    """End offsets of the complete WARC records (gzip members that inflate whole and begin
    with ``WARC/``) at the start of ``path``; reading stops at the first torn one."""
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
    """Finish the ``*.warc.gz.open`` file a crashed writer left: cut it after its last
    complete record, or at ``keep`` bytes (the end of the last record a checkpoint refers
    to: it must be a record end), fsync it and rename it to ``*.warc.gz``. Returns the new
    path, or None if no record was left (the file is removed)."""
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
    """The HTTP body stored in the response record at ``offset`` of ``path``: exactly the
    ``FetchResult.body`` that was written. ValueError if there is no response record
    there (a revisit's body is at the location the history keeps for it)."""
    return read_response(path, offset)[1]


def read_response(path: Path, offset: int) -> tuple[dict[str, str], bytes]:
    """The HTTP header fields (lower-case names, as stored: see "What a response record
    holds") and the body of the response record at ``offset`` of ``path``. ValueError if
    there is no response record there."""
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
