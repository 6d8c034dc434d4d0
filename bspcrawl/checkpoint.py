"""Checkpoints at superstep boundaries, and what a resumed crawl reads back.

Supersteps are globally consistent cut points: after the sync of superstep K no message is
in transit, and every rank has committed exactly what it will ever commit by K. A
checkpoint of K is

- per rank, ``DIR/checkpoint/rank-NNNN-SSSSSSSSSS.h5``: the frontier (seen set, URLs
  waiting in the CBT and in Q, per-host robots.txt, rests and counts), the URLs delivered
  but not yet received, the page jobs scheduled but not committed (fetched again on
  resume), the next sequence number and the counters; written to a temporary file, fsynced
  and renamed, after the rank sealed its index segment of K (index/store.py);
- then, once every rank has written its file (a collective), ``DIR/checkpoint/
  checkpoint.json``, written the same atomic way by rank 0, naming K, the number of ranks,
  the previous complete checkpoint, the settings and the seeds. Only a checkpoint named
  there counts.

A checkpoint is *full* or *incremental* (issue 16, part 4): an incremental rank file has no
``seen`` array and only the hosts changed since its *base*, the full checkpoint it builds
on (``attrs["base"]``), and names the end of the rank's seen-set journal (``journal.py``);
both kinds name the backlog's segment files (``backlog.py``) instead of copying the
waiting URLs. :func:`read` gives an incremental state its base's columns
(:func:`with_base`). The crawl keeps the files
of the last two complete checkpoints and of their bases (``superstep.py``).

A crash at any point leaves the previous complete checkpoint usable: its files are deleted
only after a newer one is complete. Resuming from K deletes the index segments sealed after
K, so no page, doc id or posting is committed twice, and the pages committed after K are
fetched again.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from bspcrawl import backlog, journal
from bspcrawl.index.output import FRONTIER_DIR
from bspcrawl.index.store import write_atomically

CHECKPOINT_DIR = "checkpoint"
MARKER = "checkpoint.json"
FORMAT = "bspcrawl-checkpoint"


class CheckpointError(Exception):
    """No usable checkpoint (the message says which file and why)."""


def rank_file(out: Path, rank: int, superstep: int) -> Path:
    """``DIR/checkpoint/rank-NNNN-SSSSSSSSSS.h5``."""
    return out / CHECKPOINT_DIR / f"rank-{rank:04d}-{superstep:010d}.h5"


def write(out: Path, rank: int, superstep: int, arrays: dict[str, np.ndarray],
          attrs: dict[str, Any]) -> None:
    """Write one rank's state for ``superstep`` atomically."""
    (out / CHECKPOINT_DIR).mkdir(exist_ok=True)

    def fill(f: h5py.File) -> None:
        for name, values in arrays.items():
            if values.dtype == object and values.size and isinstance(values.flat[0], bytes):
                # bytes as they are (a robots.txt in UTF-16 holds NULs, which HDF5's
                # variable-length strings cannot): variable-length uint8 arrays
                raw = np.empty(len(values), dtype=object)
                for i, value in enumerate(values.tolist()):
                    raw[i] = np.frombuffer(value, np.uint8)
                f.create_dataset(name, data=raw, dtype=h5py.vlen_dtype(np.uint8))
            else:
                text = h5py.string_dtype("utf-8") if values.dtype == object else None
                f.create_dataset(name, data=values, dtype=text)
        f.attrs.update(format=FORMAT, superstep=superstep, rank=rank,
                       state=json.dumps(attrs))

    write_atomically(rank_file(out, rank, superstep), fill)


def mark_complete(out: Path, superstep: int, ranks: int, extra: dict[str, Any]) -> None:
    """Rank 0, once every rank has written ``superstep``: make it the checkpoint to use."""
    marker = out / CHECKPOINT_DIR / MARKER
    previous = None
    if marker.exists():
        last = latest(out)
        previous = last["previous"] if last["superstep"] == superstep else last["superstep"]
    record = {"format": FORMAT, "superstep": superstep, "ranks": ranks,
              "previous": previous, **extra}
    tmp = marker.with_name(MARKER + ".tmp")
    with open(tmp, "w") as f:
        json.dump(record, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, marker)


def prune(out: Path, rank: int, keep: set[int]) -> None:
    """Delete this rank's checkpoint files of supersteps not in ``keep``."""
    for path in (out / CHECKPOINT_DIR).glob(f"rank-{rank:04d}-*.h5*"):
        step = path.name.split("-")[2].split(".")[0]
        if not step.isdigit() or int(step) not in keep:
            path.unlink(missing_ok=True)


def latest(out: Path) -> dict[str, Any]:
    """The record of the last complete checkpoint, or CheckpointError."""
    marker = out / CHECKPOINT_DIR / MARKER
    try:
        record = json.loads(marker.read_text())
    except FileNotFoundError:
        raise CheckpointError(f"{out} holds no complete checkpoint ({marker} is missing)"
                              ) from None
    except (OSError, ValueError) as e:
        raise CheckpointError(f"checkpoint marker {marker} is unreadable: {e}") from None
    if not isinstance(record, dict) or record.get("format") != FORMAT or not isinstance(
            record.get("superstep"), int) or not isinstance(record.get("ranks"), int):
        raise CheckpointError(f"checkpoint marker {marker} is not a bspcrawl checkpoint")
    return record


def read(out: Path, rank: int, superstep: int) -> tuple[dict[str, np.ndarray], dict]:
    """One rank's state of ``superstep``: (arrays, attrs), or CheckpointError. An
    incremental state gets the ``seen`` array of its base, the full checkpoint it builds
    on (``attrs["base"]``)."""
    arrays, attrs = _read(out, rank, superstep)
    base = attrs.get("base", superstep)
    if "seen" not in arrays and base != superstep:
        arrays = with_base(arrays, _read(out, rank, base)[0])
    if "journal_end" in arrays:
        where = frontier_dir(out, rank)
        needed = backlog.files_of(arrays) | journal.files_of(
            tuple(arrays["journal_base"].tolist()), tuple(arrays["journal_end"].tolist()))
        missing = sorted(name for name in needed if not (where / name).is_file())
        if missing:
            raise CheckpointError(f"checkpoint file {rank_file(out, rank, superstep)} "
                                  f"refers to {where / missing[0]}, which is missing")
    return arrays, attrs


def frontier_dir(out: Path, rank: int) -> Path:
    """``DIR/frontier/rank-NNNN``: a rank's backlog and journal, which checkpoints name."""
    return out / FRONTIER_DIR / f"rank-{rank:04d}"


def with_base(arrays: dict[str, np.ndarray], base: dict[str, np.ndarray]
              ) -> dict[str, np.ndarray]:
    """An incremental state completed by its base's: the base's ``seen`` array, and every
    other column of the base as ``base_NAME`` (the hosts not changed since, for one)."""
    return {**arrays, "seen": base["seen"],
            **{f"base_{name}": values for name, values in base.items() if name != "seen"}}


def _read(out: Path, rank: int, superstep: int) -> tuple[dict[str, np.ndarray], dict]:
    """The datasets of one rank file, and its attrs."""
    path = rank_file(out, rank, superstep)
    try:
        with h5py.File(path, "r") as f:
            if f.attrs.get("format") != FORMAT or f.attrs.get("superstep") != superstep:
                raise CheckpointError(f"checkpoint file {path} does not hold superstep "
                                      f"{superstep}")
            arrays = {name: f[name][:] for name in f}
            return arrays, json.loads(f.attrs["state"])
    except (OSError, KeyError, ValueError) as e:
        raise CheckpointError(f"checkpoint file {path} is unreadable ({e})") from None


def read_all(out: Path, record: dict[str, Any]) -> tuple[int, list[tuple[dict, dict]]]:
    """Every rank's state of the last complete checkpoint, falling back to the previous
    complete one if a file of the last is damaged; (superstep, states) or
    CheckpointError naming what is wrong."""
    errors = []
    for superstep in (record["superstep"], record.get("previous")):
        if superstep is None:
            break
        try:
            return superstep, [read(out, r, superstep) for r in range(record["ranks"])]
        except CheckpointError as e:
            errors.append(str(e))
    raise CheckpointError("; ".join(errors) + " (and no earlier complete checkpoint)")
