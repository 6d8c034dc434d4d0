"""The backlog: the URLs waiting in a rank's frontier, as records in append-only logs, one
per priority, in RAM up to a budget and on disk past it (as IRLbot and BUbiNG keep theirs),
so a waiting URL costs its record, and the CBT holds only the logs' heads (``queue.py``).

Past ``memory`` bytes of tails the largest go to their segment files
(``DIR/frontier/rank-NNNN/qLLLL-SSSSSSSS.seg``), read back a chunk at a time. A segment is
written once, then only read; one read whole is deleted unless a kept checkpoint names it
(``pinned``). A checkpoint fsyncs the tails and names the segments, copying nothing.

Record layout, little-endian: int64 fingerprint, int32 depth, int32 hops, uint32 URL
length, then the URL's UTF-8 bytes.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bspcrawl.durable import sync_dir
from bspcrawl.messages import Link

HEADER = struct.Struct("<qiiI")  # fingerprint, depth, hops, URL bytes
SEGMENT_BYTES = 1 << 24  # a segment file's size at most
CHUNK = 1 << 16  # bytes read from a segment at a time


def record(fp: int, link: Link) -> bytes:
    """The record of a waiting URL (not its anchor text: credited on arrival)."""
    url = link.url.encode()
    return HEADER.pack(fp, link.depth, link.hops, len(url)) + url


def parse(data: bytes | bytearray | memoryview, at: int = 0) -> tuple[int, Link, int]:
    """The record at ``data[at:]``: (fingerprint, link, offset after it)."""
    fp, depth, hops, n = HEADER.unpack_from(data, at)
    start = at + HEADER.size
    return fp, Link(bytes(data[start:start + n]).decode(), depth, hops), start + n


def parse_all(data: bytes) -> Iterator[tuple[int, Link]]:
    """The (fingerprint, link) of each record of ``data``."""
    at = 0
    while at < len(data):
        fp, link, at = parse(data, at)
        yield fp, link


@dataclass
class BacklogState:
    """The logs at a checkpoint, a row per priority: the log's number, the read position
    (segment, offset), the records past it, the last segment and its size on disk."""

    prio: np.ndarray  # float64
    log: np.ndarray
    seg: np.ndarray
    pos: np.ndarray
    count: np.ndarray
    last: np.ndarray
    size: np.ndarray

    def files(self) -> set[str]:
        """The names of the segment files the state refers to."""
        return {segment_file(f"q{n:04d}", s) for n, seg, last, size in zip(
            self.log.tolist(), self.seg.tolist(), self.last.tolist(), self.size.tolist(),
            strict=True) for s in range(seg, last + (size > 0))}


def segment_file(name: str, seg: int) -> str:
    """The file name of segment ``seg`` of the log ``name``."""
    return f"{name}-{seg:08d}.seg"


class Log:
    """An append-only log of bytes in segment files (without a directory, one endless
    segment in RAM): segment ``last`` has ``written`` bytes on disk, then ``tail`` in RAM;
    ``sealed`` holds the sizes of earlier segments still in use."""

    def __init__(self, directory: Path | None, name: str, last: int = 0,
                 written: int = 0) -> None:
        self.dir, self.name = directory, name
        self.last, self.written = last, written
        self.tail = bytearray()
        self.sealed: dict[int, int] = {}

    def path(self, seg: int) -> Path:
        """The file of segment ``seg``."""
        assert self.dir is not None
        return self.dir / segment_file(self.name, seg)

    def end(self) -> tuple[int, int]:
        """(segment, offset) just past the last byte appended."""
        return self.last, self.written + len(self.tail)

    def segment_size(self, seg: int) -> int:
        """Bytes of segment ``seg`` so far."""
        return self.written + len(self.tail) if seg == self.last else self.sealed[seg]

    def append(self, data: bytes) -> None:
        """Append whole records (a segment ends at a record's end)."""
        self.tail += data
        if self.dir is not None and self.written + len(self.tail) >= SEGMENT_BYTES:
            self.spill()
            self.sealed[self.last] = self.written
            self.last, self.written = self.last + 1, 0

    def spill(self, sync: bool = False) -> int:
        """Append the tail to its file (fsynced if ``sync``); the bytes it held."""
        n = len(self.tail)
        if self.dir is None or not (n or sync and self.written):
            return 0
        self.dir.mkdir(parents=True, exist_ok=True)
        with open(self.path(self.last), "ab") as f:
            f.write(self.tail)
            if sync:
                f.flush()
                os.fsync(f.fileno())
        self.written += n
        self.tail = bytearray()
        return n

    def read(self, seg: int, start: int, size: int) -> bytes:
        """Up to ``size`` bytes of segment ``seg`` from ``start`` (fewer at its end)."""
        on_disk = self.written if seg == self.last else self.sealed[seg]
        out = b""
        if start < on_disk:
            with open(self.path(seg), "rb") as f:
                f.seek(start)
                out = f.read(min(size, on_disk - start))
        if seg == self.last and len(out) < size:
            at = start + len(out) - self.written
            out += bytes(self.tail[at:at + size - len(out)])
        return out


class Queue:
    """The records of one priority, first in first out: read at (``seg``, ``pos``) of its
    :class:`Log`, ``count`` records past it."""

    def __init__(self, log: Log, count: int = 0, seg: int = 0, pos: int = 0) -> None:
        self.log, self.count, self.seg, self.pos = log, count, seg, pos

    def take(self, n: int, done: set[str]) -> list[tuple[int, Link]]:
        """The next ``n`` records; the files read whole go to ``done``. A log read to its end
        goes on in a new segment, its tail dropped unwritten."""
        out: list[tuple[int, Link]] = []
        log = self.log
        while len(out) < n and self.count:
            if self.pos >= log.segment_size(self.seg):
                done.add(log.path(self.seg).name)
                del log.sealed[self.seg]
                self.seg, self.pos = self.seg + 1, 0
                continue
            chunk = log.read(self.seg, self.pos, CHUNK)
            at = 0
            while len(out) < n and self.count and at + HEADER.size <= len(chunk):
                size = HEADER.size + HEADER.unpack_from(chunk, at)[3]
                if at + size > len(chunk):
                    if at == 0:  # a record longer than CHUNK
                        chunk = log.read(self.seg, self.pos, size)
                        continue
                    break
                fp, link, at = parse(chunk, at)
                out.append((fp, link))
                self.count -= 1
            self.pos += at
        if not self.count and (self.seg, self.pos) != (log.last, 0):
            done.update(log.path(s).name for s in self.segments() if log.dir is not None)
            log.sealed.clear()
            log.last, log.written, log.tail = log.last + 1, 0, bytearray()
            self.seg, self.pos = log.last, 0
        return out

    def segments(self) -> range:
        """The segments still to be read."""
        return range(self.seg, self.log.last + 1)


class Backlog:
    """Every waiting URL of a rank that the CBT does not hold, a :class:`Queue` per
    priority, on disk in ``directory`` past ``memory`` bytes of tails.

    Invariants (:meth:`_check`): a queue's ``count`` is its records from its read position
    on; the tails hold at most ``memory`` bytes after a :meth:`put`.
    """

    def __init__(self, directory: Path | None = None, memory: int = 64 << 20) -> None:
        self.dir, self.memory = directory, memory
        self.queues: dict[float, Queue] = {}
        self.logs: dict[float, int] = {}  # priority -> its log's number
        self.pinned: set[str] = set()  # files a kept checkpoint names (checkpoint.Retention)
        self.first = 0  # the first segment number of a new log

    def __len__(self) -> int:
        return sum(q.count for q in self.queues.values())

    @property
    def ram(self) -> int:
        """Bytes of records held in RAM."""
        return sum(len(q.log.tail) for q in self.queues.values())

    def _queue(self, prio: float) -> Queue:
        q = self.queues.get(prio)
        if q is None:
            n = self.logs.setdefault(prio, len(self.logs))
            log = Log(self.dir, f"q{n:04d}", self.first)
            q = self.queues[prio] = Queue(log, 0, self.first)
        return q

    def start_after_existing(self) -> None:
        """Number new segments after the directory's files (a checkpoint's, left as they are)."""
        self.first = next_segment(self.dir, "q*.seg")

    def put(self, prio: float, records: list[bytes]) -> None:
        """Append records; past ``memory`` bytes of tails, spill the largest to half of it."""
        q = self._queue(prio)
        q.log.append(b"".join(records))
        q.count += len(records)
        if self.dir is not None and (ram := self.ram) > self.memory:
            for x in sorted(self.queues.values(), key=lambda x: -len(x.log.tail)):
                ram -= x.log.spill()
                if ram <= self.memory // 2:
                    break

    def waiting(self) -> dict[float, int]:
        """Records waiting per priority that has some."""
        return {p: q.count for p, q in self.queues.items() if q.count}

    def take(self, prio: float, n: int) -> list[tuple[int, Link]]:
        """The next ``n`` records of ``prio``; files read whole and not pinned are deleted."""
        done: set[str] = set()
        out = self.queues[prio].take(n, done)
        if self.dir is not None:
            for name in done - self.pinned:
                (self.dir / name).unlink(missing_ok=True)
        return out

    def records(self) -> Iterator[tuple[float, int, Link]]:
        """Every waiting record as (priority, fingerprint, link), left in place."""
        for prio, q in self.queues.items():
            for fp, link in _peek(q):
                yield prio, fp, link

    def state(self) -> BacklogState:
        """Fsync every tail to its file; name the logs."""
        if self.dir is None:
            raise RuntimeError("a backlog without a directory cannot be checkpointed")
        qs = list(self.queues.items())
        self.dir.mkdir(parents=True, exist_ok=True)
        for _, q in qs:
            q.log.spill(sync=True)
        sync_dir(self.dir)
        col = lambda f: np.array([f(q) for _, q in qs], np.int64)  # noqa: E731
        return BacklogState(np.array([p for p, _ in qs], np.float64),
                            np.array([self.logs[p] for p, _ in qs], np.int64),
                            col(lambda q: q.seg), col(lambda q: q.pos),
                            col(lambda q: q.count), col(lambda q: q.log.last),
                            col(lambda q: q.log.written))

    def live(self) -> set[str]:
        """The segment files still to be read."""
        return {q.log.path(s).name for q in self.queues.values() for s in q.segments()}

    def _check(self) -> None:
        for prio, q in self.queues.items():
            n = sum(1 for _ in _peek(q))
            assert n == q.count, (prio, n, q.count)
            if self.dir is not None:
                assert set(q.log.sealed) == set(range(q.seg, q.log.last)), "a lost segment"
        assert self.dir is None or self.ram <= self.memory or len(self.queues) == 0


def _peek(q: Queue) -> Iterator[tuple[int, Link]]:
    """Read a queue to its end, leaving it as it is."""
    log = Log(q.log.dir, q.log.name, q.log.last, q.log.written)
    log.tail, log.sealed = q.log.tail, dict(q.log.sealed)
    copy = Queue(log, q.count, q.seg, q.pos)
    while copy.count:
        yield from copy.take(CHUNK, set())


def replay(directory: Path, state: BacklogState) -> Iterator[tuple[float, int, Link]]:
    """Every record waiting in the logs ``state`` names in ``directory``, only read."""
    for prio, n, seg, pos, count, last, size in zip(*(getattr(state, k).tolist() for k in (
            "prio", "log", "seg", "pos", "count", "last", "size")), strict=True):
        log = Log(directory, f"q{n:04d}", last, size)
        log.sealed = {s: log.path(s).stat().st_size for s in range(seg, last)}
        for fp, link in _peek(Queue(log, count, seg, pos)):
            yield prio, fp, link


def next_segment(directory: Path | None, pattern: str) -> int:
    """One past the highest segment number of the files matching ``pattern``."""
    if directory is None or not directory.exists():
        return 0
    return 1 + max((int(p.stem.rsplit("-", 1)[1]) for p in directory.glob(pattern)),
                   default=-1)
