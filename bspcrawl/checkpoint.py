"""Checkpoints at superstep boundaries: their files, what a resumed crawl reads back, and
which files the crawl keeps.

Supersteps are globally consistent cut points: after the sync of superstep K no message is
in transit, and every rank has committed exactly what it will ever commit by K. A
checkpoint of K is

- per rank, ``DIR/checkpoint/rank-NNNN-SSSSSSSSSS.h5``: a :class:`RankState`, and as
  attributes the next sequence number, the counters and the checkpoint's base; written
  to a temporary file, fsynced and renamed, after the rank sealed its index segment of K;
- then, once every rank has written its file (a collective), ``DIR/checkpoint/
  checkpoint.json``, written the same atomic way by rank 0, naming K, the number of ranks,
  the previous complete checkpoint, the settings and the seeds. Only a checkpoint named
  there counts.

Layout: each state dataclass is an HDF5 group, each of its fields a dataset (a nested
dataclass a subgroup; a field that is None is left out). Strings are UTF-8 datasets, bytes
variable-length uint8 (a robots.txt may hold NULs).

A checkpoint is *full* or *incremental*: an incremental rank file has no seen set and only
the hosts changed since its *base*, the full checkpoint it builds on (``attrs["base"]``);
:func:`read` completes it with its base's. Both kinds name the backlog's segment files
(``backlog.py``) and the seen-set journal's (``journal.py``) instead of copying them.

Retention (:class:`Retention`): a rank keeps the files of the last two complete
checkpoints and of their bases, and the backlog and journal segments they name: a crash
at any point leaves the previous complete checkpoint usable. Resuming from K deletes the
index segments sealed after K (index/store.py), so nothing is committed twice.
"""

from __future__ import annotations

import json
import os
import types
from dataclasses import dataclass, fields, is_dataclass
from pathlib import Path
from typing import Any, get_args, get_type_hints

import h5py
import numpy as np

from bspcrawl.backlog import Backlog
from bspcrawl.frontier import FrontierState
from bspcrawl.index.output import FRONTIER_DIR
from bspcrawl.index.store import write_atomically
from bspcrawl.journal import NAME as JOURNAL
from bspcrawl.journal import files_of
from bspcrawl.messages import Link
from bspcrawl.partition import decode, encode

CHECKPOINT_DIR = "checkpoint"
MARKER = "checkpoint.json"
FORMAT = "bspcrawl-checkpoint-2"  # a checkpoint of an older bspcrawl has another format


class CheckpointError(Exception):
    """No usable checkpoint (the message says which file and why)."""


@dataclass
class RankState:
    """What one rank's checkpoint file holds besides its attributes."""

    frontier: FrontierState
    directory: np.ndarray  # partition.Directory.state
    inbox: np.ndarray  # uint8: links delivered at the last sync, not yet received
    held: np.ndarray  # uint8: links to hosts not dealt yet, sent at the next superstep

    @classmethod
    def of(cls, frontier: FrontierState, directory: np.ndarray, inbox: list[Link],
           held: list[Link]) -> RankState:
        """The state of a rank, its links in transit as ``partition.encode`` writes them."""
        return cls(frontier, directory, *(np.frombuffer(encode(x), np.uint8)
                                          for x in (inbox, held)))

    def links(self, name: str) -> list[Link]:
        """The links of ``inbox`` or ``held``."""
        return decode(getattr(self, name))


def rank_file(out: Path, rank: int, superstep: int) -> Path:
    """``DIR/checkpoint/rank-NNNN-SSSSSSSSSS.h5``."""
    return out / CHECKPOINT_DIR / f"rank-{rank:04d}-{superstep:010d}.h5"


def frontier_dir(out: Path, rank: int) -> Path:
    """``DIR/frontier/rank-NNNN``: a rank's backlog and journal, which checkpoints name."""
    return out / FRONTIER_DIR / f"rank-{rank:04d}"


def write(out: Path, rank: int, superstep: int, state: RankState, attrs: dict[str, Any]
          ) -> None:
    """Write one rank's state for ``superstep`` atomically."""
    (out / CHECKPOINT_DIR).mkdir(exist_ok=True)

    def fill(f: h5py.File) -> None:
        _put(f, state)
        f.attrs.update(format=FORMAT, superstep=superstep, rank=rank,
                       state=json.dumps(attrs))

    write_atomically(rank_file(out, rank, superstep), fill)


def _put(group: h5py.Group, state: Any) -> None:
    """Write a state dataclass's fields into ``group`` (see the module docstring)."""
    for field in fields(state):
        value = getattr(state, field.name)
        if value is None:
            continue
        if is_dataclass(value):
            _put(group.create_group(field.name), value)
            continue
        values = np.asarray(value)
        if values.dtype == object and values.size and isinstance(values.flat[0], bytes):
            raw = np.empty(len(values), dtype=object)
            for i, item in enumerate(values.tolist()):
                raw[i] = np.frombuffer(item, np.uint8)
            group.create_dataset(field.name, data=raw, dtype=h5py.vlen_dtype(np.uint8))
        else:
            text = h5py.string_dtype("utf-8") if values.dtype == object else None
            group.create_dataset(field.name, data=values, dtype=text)


def _get(cls: type, group: h5py.Group) -> Any:
    """The state dataclass ``cls`` written by :func:`_put` into ``group``; a field missing
    that may not be None raises KeyError."""
    hints = get_type_hints(cls)
    values: dict[str, Any] = {}
    for field in fields(cls):
        kind = hints[field.name]
        if field.name not in group:
            if not (isinstance(kind, types.UnionType) and type(None) in get_args(kind)):
                raise KeyError(f"no {group.name}/{field.name}")
            values[field.name] = None
        elif is_dataclass(kind):
            values[field.name] = _get(kind, group[field.name])  # type: ignore[arg-type]
        else:
            data = group[field.name]
            if h5py.check_string_dtype(data.dtype):
                values[field.name] = data.asstr()[()]
            elif h5py.check_vlen_dtype(data.dtype) is not None:
                values[field.name] = np.array([x.tobytes() for x in data[()]], dtype=object)
            else:
                values[field.name] = data[()].item() if data.shape == () else data[()]
    return cls(**values)


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
    if isinstance(record, dict) and str(record.get("format")).startswith(
            "bspcrawl-checkpoint") and record.get("format") != FORMAT:
        raise CheckpointError(f"checkpoint marker {marker} names a checkpoint of an older "
                              "bspcrawl, which this version cannot resume")
    if not isinstance(record, dict) or record.get("format") != FORMAT or not isinstance(
            record.get("superstep"), int) or not isinstance(record.get("ranks"), int):
        raise CheckpointError(f"checkpoint marker {marker} is not a bspcrawl checkpoint")
    return record


def read(out: Path, rank: int, superstep: int) -> tuple[RankState, dict]:
    """One rank's state of ``superstep``: (state, attrs), or CheckpointError. An
    incremental state comes completed by its base's (``FrontierState.over``)."""
    state, attrs = _read(out, rank, superstep)
    base = attrs.get("base", superstep)
    if state.frontier.intake.seen is None and base != superstep:
        state.frontier = state.frontier.over(_read(out, rank, base)[0].frontier)
    where = frontier_dir(out, rank)
    missing = sorted(name for name in needs(state.frontier) if not (where / name).is_file())
    if missing:
        raise CheckpointError(f"checkpoint file {rank_file(out, rank, superstep)} "
                              f"refers to {where / missing[0]}, which is missing")
    return state, attrs


def _read(out: Path, rank: int, superstep: int) -> tuple[RankState, dict]:
    """The state of one rank file, and its attrs."""
    path = rank_file(out, rank, superstep)
    try:
        with h5py.File(path, "r") as f:
            if f.attrs.get("format") != FORMAT or f.attrs.get("superstep") != superstep:
                raise CheckpointError(f"checkpoint file {path} does not hold superstep "
                                      f"{superstep} of this bspcrawl's format")
            return _get(RankState, f), json.loads(f.attrs["state"])
    except (OSError, KeyError, ValueError, TypeError) as e:
        raise CheckpointError(f"checkpoint file {path} is unreadable ({e})") from None


def read_all(out: Path, record: dict[str, Any]) -> tuple[int, list[tuple[RankState, dict]]]:
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


def needs(state: FrontierState) -> set[str]:
    """The names of the files in the rank's frontier directory a state refers to."""
    marks = state.intake.journal_base.tolist(), state.intake.journal_end.tolist()
    return state.queue.backlog.files() | files_of(*map(tuple, marks))


class Retention:
    """Which of one rank's files the crawl keeps: those of the last two complete
    checkpoints and of their bases (checkpoint files, backlog and journal segments).

    API: :meth:`base_of` a checkpoint to write, :meth:`keep` it once it is complete (or
    resumed from). The backlog is told what is pinned (``Backlog.pinned``: it deletes the
    segments it reads whole unless pinned)."""

    def __init__(self, out: Path, rank: int, backlog: Backlog) -> None:
        self.out, self.rank, self.backlog = out, rank, backlog
        self.kept: dict[int, tuple[int, set[str], int]] = {}  # superstep -> its base, the
        # files it names and the first journal segment it reads
        self.last: int | None = None  # the last complete checkpoint

    def base_of(self, superstep: int, state: FrontierState) -> int:
        """The base of the checkpoint of ``superstep`` whose frontier is ``state``."""
        if state.intake.seen is not None or self.last is None:
            return superstep
        return self.kept[self.last][0]

    def keep(self, superstep: int, state: FrontierState, base: int, collect: bool = True
             ) -> None:
        """The checkpoint of ``superstep`` is complete (or resumed from): keep it and the
        last one before; if ``collect``, delete the files neither needs (not on resume: a
        kill before the next checkpoint resumes from this one again, maybe on another P)."""
        self.kept = {k: x for k, x in self.kept.items() if k == self.last}
        self.kept[superstep] = base, needs(state), int(state.intake.journal_base[0])
        self.last = superstep
        kept = self.kept.values()
        self.backlog.pinned = set().union(*(files for _, files, _ in kept))
        where = frontier_dir(self.out, self.rank)
        if not collect or not where.exists():
            return
        steps = {*self.kept, *(base for base, _, _ in kept)}
        for path in (self.out / CHECKPOINT_DIR).glob(f"rank-{self.rank:04d}-*.h5*"):
            step = path.name.split("-")[2].split(".")[0]
            if not step.isdigit() or int(step) not in steps:
                path.unlink(missing_ok=True)
        live, start = self.backlog.pinned | self.backlog.live(), min(x[2] for x in kept)
        for path in where.glob("q*.seg"):
            if path.name not in live:
                path.unlink()
        for path in where.glob(f"{JOURNAL}-*.seg"):
            if int(path.stem.split("-")[1]) < start:
                path.unlink()
