"""Checkpoints at superstep boundaries (docs/checkpoints.md): their files, what a resume
reads back, and which files the crawl keeps.

- Each rank writes a :class:`RankState` atomically, each dataclass an HDF5 group and each
  field a dataset (bytes as variable-length uint8: a robots.txt may hold NULs); then rank 0
  names the superstep in ``checkpoint.json``, and only a checkpoint named there counts.
- An incremental rank file holds no seen set and only the hosts changed since its base;
  :func:`read` completes it. Backlog and journal segments are named, not copied.
- :class:`Retention` keeps the last two complete checkpoints, their bases and the segments
  they name, so a crash at any point leaves a usable one.
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
FORMAT = "bspcrawl-checkpoint-2"


class CheckpointError(Exception):
    """No usable checkpoint (the message says which file and why)."""


@dataclass
class RankState:
    """One rank's checkpoint file but its attributes, links as ``partition.encode`` writes."""

    frontier: FrontierState
    directory: np.ndarray  # partition.Directory.state
    inbox: np.ndarray  # uint8: links delivered at the last sync, not yet received
    held: np.ndarray  # uint8: links to hosts not dealt yet, sent at the next superstep

    @classmethod
    def of(cls, frontier: FrontierState, directory: np.ndarray, inbox: list[Link],
           held: list[Link]) -> RankState:
        """The state of a rank."""
        return cls(frontier, directory, *(np.frombuffer(encode(x), np.uint8)
                                          for x in (inbox, held)))

    def links(self, name: str) -> list[Link]:
        """The links of ``inbox`` or ``held``."""
        return decode(getattr(self, name))


def rank_file(out: Path, rank: int, superstep: int) -> Path:
    """One rank's checkpoint file of ``superstep``."""
    return out / CHECKPOINT_DIR / f"rank-{rank:04d}-{superstep:010d}.h5"


def frontier_dir(out: Path, rank: int) -> Path:
    """A rank's backlog and journal directory, which checkpoints name."""
    return out / FRONTIER_DIR / f"rank-{rank:04d}"


def write(out: Path, rank: int, superstep: int, state: RankState, attrs: dict[str, Any]
          ) -> None:
    """Write one rank's state of ``superstep`` atomically."""
    (out / CHECKPOINT_DIR).mkdir(exist_ok=True)

    def fill(f: h5py.File) -> None:
        _put(f, state)
        f.attrs.update(format=FORMAT, superstep=superstep, rank=rank,
                       state=json.dumps(attrs))

    write_atomically(rank_file(out, rank, superstep), fill)


def _put(group: h5py.Group, state: Any) -> None:
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
    """The dataclass ``cls`` :func:`_put` wrote; KeyError for a missing field not optional."""
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
    """Rank 0, once every rank has written ``superstep``: make it the one to resume."""
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
    """One rank's (state, attrs) of ``superstep``, an incremental one completed by its base."""
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
    """Every rank's state of the last complete checkpoint, or if one of its files is
    damaged, of the previous one; (superstep, states)."""
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
    """The files of the rank's frontier directory a state names."""
    marks = state.intake.journal_base.tolist(), state.intake.journal_end.tolist()
    return state.queue.backlog.files() | files_of(*map(tuple, marks))


class Retention:
    """Which of one rank's files the crawl keeps: the checkpoint files and segments of the
    last two complete checkpoints and their bases; it tells the backlog (``pinned``)."""

    def __init__(self, out: Path, rank: int, backlog: Backlog) -> None:
        self.out, self.rank, self.backlog = out, rank, backlog
        # superstep -> its base, the files it names, the first journal segment it reads
        self.kept: dict[int, tuple[int, set[str], int]] = {}
        self.last: int | None = None  # the last complete checkpoint

    def base_of(self, superstep: int, state: FrontierState) -> int:
        """The base of the checkpoint of ``superstep`` holding ``state``."""
        if state.intake.seen is not None or self.last is None:
            return superstep
        return self.kept[self.last][0]

    def keep(self, superstep: int, state: FrontierState, base: int, collect: bool = True
             ) -> None:
        """Keep the complete (or resumed) checkpoint of ``superstep`` and the one before;
        if ``collect`` (not on resume, which may be repeated on another P), delete the rest."""
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
