"""HDF5 files written on disk in bounded memory: 1-D columns written a part at a time.

:func:`on_disk` opens an HDF5 file written as it is filled, which never sees a failed
write; :func:`concat` copies the same column of several files one file at a time;
:class:`Appender` grows a chunked column batch by batch.
"""

from __future__ import annotations

import io
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import h5py
import numpy as np

CHUNK = 1 << 16  # rows per HDF5 chunk of a growing column


class _Guarded(io.RawIOBase):
    """A file for h5py's ``fileobj`` driver that keeps the first failed write and ignores
    the rest: HDF5 can crash closing a file one of whose writes failed."""

    def __init__(self, raw: io.FileIO) -> None:
        super().__init__()
        self.raw, self.failed = raw, None

    def readable(self) -> bool:
        return True

    def writable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def seek(self, pos: int, whence: int = 0) -> int:
        return self.raw.seek(pos, whence)

    def tell(self) -> int:
        return self.raw.tell()

    def readinto(self, buffer: Any) -> int | None:
        return self.raw.readinto(buffer)

    def write(self, data: Any) -> int:
        if self.failed is None:
            try:
                return self.raw.write(data) or 0
            except OSError as e:
                self.failed = e
        return memoryview(data).nbytes

    def truncate(self, size: int | None = None) -> int:
        if self.failed is None:
            try:
                return self.raw.truncate(size)
            except OSError as e:
                self.failed = e
        return self.raw.tell() if size is None else size

    def flush(self) -> None:
        pass


@contextmanager
def on_disk(raw: io.FileIO, mode: str) -> Iterator[h5py.File]:
    """An HDF5 file on the open file ``raw``; raises its first failed write's OSError once
    closed."""
    guarded = _Guarded(raw)
    try:
        with h5py.File(guarded, mode) as f:
            yield f
    except Exception:
        if guarded.failed is None:
            raise
    if guarded.failed is not None:
        raise guarded.failed


def rows(parts: Sequence[h5py.File | h5py.Group], name: str) -> int:
    return sum(p[name].shape[0] for p in parts)


def concat(f: h5py.File | h5py.Group, name: str, parts: Sequence[h5py.File | h5py.Group],
           source: str, dtype: Any, maxshape: tuple | None = None) -> h5py.Dataset:
    """Create column ``name`` in ``f``: the ``parts``' columns ``source`` one after another."""
    d = f.create_dataset(name, (rows(parts, source),), dtype, maxshape=maxshape)
    at = 0
    for p in parts:
        n = p[source].shape[0]
        if n:
            d[at:at + n] = p[source][:]
        at += n
    return d


class Appender:
    """A column of ``f`` that grows by :meth:`append` (chunked, resizable)."""

    def __init__(self, f: h5py.File | h5py.Group, name: str, dtype: Any) -> None:
        self.column = f.create_dataset(name, (0,), dtype, maxshape=(None,), chunks=(CHUNK,))
        self.size = 0

    def append(self, values: np.ndarray) -> None:
        if len(values):
            self.column.resize((self.size + len(values),))
            self.column[self.size:] = values
            self.size += len(values)
