"""The seen set's journal: every fingerprint a rank accepts, so that a checkpoint writes the
seen set whole only now and then; an incremental one names the journal's end, and a resume
reads its base's seen set and the journal between the marks (:func:`read`). Files are
``seen-SSSSSSSS.seg`` (a :class:`~bspcrawl.backlog.Log`): int64 keys, little-endian.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from bspcrawl.backlog import Log, next_segment, segment_file

NAME = "seen"
TAIL_BYTES = 1 << 20  # keys kept in RAM before they are appended to the file

Mark = tuple[int, int]  # (segment, offset): the journal's end at a checkpoint


class Journal:
    """Keys appended in order; :meth:`mark` makes them durable and names the end."""

    def __init__(self, directory: Path | None) -> None:
        self.log = Log(directory, NAME)

    def append(self, keys: np.ndarray) -> None:
        """Append int64 keys."""
        if self.log.dir is None:
            return
        self.log.append(np.asarray(keys, "<i8").tobytes())
        if len(self.log.tail) >= TAIL_BYTES:
            self.log.spill()

    def mark(self) -> Mark:
        """Fsync the tail; the end."""
        if self.log.dir is None:
            raise RuntimeError("a journal without a directory cannot be checkpointed")
        self.log.dir.mkdir(parents=True, exist_ok=True)
        self.log.spill(sync=True)
        return self.log.end()

    def start_after_existing(self) -> None:
        """Start a new segment after the directory's files (a checkpoint's)."""
        self.log.last = next_segment(self.log.dir, f"{NAME}-*.seg")


def files_of(start: Mark, stop: Mark) -> set[str]:
    """The segment files holding the keys from mark ``start`` to ``stop``."""
    if tuple(start) == tuple(stop):
        return set()
    return {segment_file(NAME, seg) for seg in range(start[0], stop[0] + (stop[1] > 0))}


def read(directory: Path, start: Mark, stop: Mark) -> np.ndarray:
    """The keys of the journal in ``directory`` from mark ``start`` to ``stop``."""
    if tuple(start) == tuple(stop):
        return np.zeros(0, np.int64)
    parts = []
    for seg in range(start[0], stop[0] + 1):
        a = start[1] if seg == start[0] else 0
        with open(directory / segment_file(NAME, seg), "rb") as f:
            f.seek(a)
            data = f.read(stop[1] - a) if seg == stop[0] else f.read()
        parts.append(np.frombuffer(data, "<i8"))
    return np.concatenate(parts).astype(np.int64) if parts else np.zeros(0, np.int64)
