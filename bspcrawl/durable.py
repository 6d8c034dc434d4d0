"""Durability on disk: what makes a new or renamed file survive a machine crash.

A file's own ``fsync`` makes its bytes durable, not its name: the directory that holds
the name must be fsynced too (POSIX leaves a rename or a create in a directory's page
cache until then). The WARC writer, the HDF5 store and the frontier's backlog each call
:func:`sync_dir` after they create or rename a file that a crash must not lose.
"""

from __future__ import annotations

import os
from pathlib import Path


def sync_dir(directory: Path) -> None:
    """fsync ``directory`` (the names of the files created or renamed in it)."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
