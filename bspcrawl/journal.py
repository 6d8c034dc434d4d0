"""The seen set's journal: every fingerprint a rank accepts, appended to segment files, so
that a checkpoint writes the seen set whole only now and then.

A *full* checkpoint writes the seen set as one sorted array (8 bytes per URL) and the
journal's end, its *base mark*; an *incremental* one writes only the journal's end: the
keys accepted since the full one are the journal between the two marks, already on disk
but for the last tail (fsynced at the checkpoint). A resume reads the full checkpoint's
array and the journal between the marks (:func:`read`); a resumed rank appends to new
segments after the existing ones. Files are ``seen-SSSSSSSS.seg``
beside the backlog's (``backlog.py``, whose :class:`~bspcrawl.backlog.Log` this is):
int64 keys, little-endian.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from bspcrawl.backlog import Log, next_segment

NAME = "seen"
TAIL_BYTES = 1 << 20  # keys kept in RAM before they are appended to the file (1 MiB)

Mark = tuple[int, int]  # (segment, offset): the journal's end at a checkpoint


class Journal:
    """Keys appended in order; :meth:`mark` makes them durable and names the end."""

    def __init__(self, directory: Path | None) -> None:
        self.log = Log(directory, NAME)

    def append(self, keys: np.ndarray) -> None:
        """Append keys (int64)."""
        if self.log.dir is None:
            return
        self.log.append(np.asarray(keys, "<i8").tobytes())
        if len(self.log.tail) >= TAIL_BYTES:
            self.log.spill()

    def mark(self) -> Mark:
        """Write the tail, fsync it; the end."""
        if self.log.dir is None:
            raise RuntimeError("a journal without a directory cannot be checkpointed")
        self.log.dir.mkdir(parents=True, exist_ok=True)
        self.log.spill(sync=True)
        return self.log.end()

    def start_after_existing(self) -> None:
        """Start a new segment after every file in the directory (see
        :meth:`~bspcrawl.backlog.Backlog.start_after_existing`)."""
        self.log.last = next_segment(self.log.dir, f"{NAME}-*.seg")


def files_of(start: Mark, stop: Mark) -> set[str]:
    """The names of the segment files holding the keys from mark ``start`` to ``stop``."""
    if tuple(start) == tuple(stop):
        return set()
    return {f"{NAME}-{seg:08d}.seg" for seg in range(start[0], stop[0] + (stop[1] > 0))}


def read(directory: Path, start: Mark, stop: Mark) -> np.ndarray:
    """The keys a rank's journal in ``directory`` holds from mark ``start`` to ``stop``."""
    if tuple(start) == tuple(stop):
        return np.zeros(0, np.int64)
    parts = []
    for seg in range(start[0], stop[0] + 1):
        path = directory / f"{NAME}-{seg:08d}.seg"
        a = start[1] if seg == start[0] else 0
        with open(path, "rb") as f:
            f.seek(a)
            data = f.read(stop[1] - a) if seg == stop[0] else f.read()
        parts.append(np.frombuffer(data, "<i8"))
    return np.concatenate(parts).astype(np.int64) if parts else np.zeros(0, np.int64)
