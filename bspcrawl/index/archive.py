"""A rank's memory of its fetches: validators, history, WARC bodies, and revisits.

Ties :mod:`~bspcrawl.index.validators`, :mod:`~bspcrawl.index.history` and
:mod:`~bspcrawl.index.warc` together for the crawl loop, after Yioop's cache history and
validation (A. Kukreti, "Yioop full historical indexing in cache navigation"):
:meth:`Archive.plan` skips the URLs whose archived copy is still fresh and makes the other
known ones conditional; :meth:`Archive.restore` gives a 304 or a fresh URL its archived
body back, so the page is indexed and its links followed as if downloaded again;
:meth:`Archive.record` writes the WARC records, a history row and the new validators.
Validators are kept only for archived bodies, so with ``--no-warc`` nothing is revisited.
A recrawl first carries each rank's share of the previous crawl's history and validators
into a segment of its own; bodies stay in the previous crawl's ``warc/``, which
``/warc/files`` lists (``docs/revisits.md``).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path

import h5py
import numpy as np

from bspcrawl.index.cdxj import INDEXES_DIR, REVISIT_MIME, CdxjWriter, bare_mime
from bspcrawl.index.columns import concat
from bspcrawl.index.history import FIELDS, History, Version
from bspcrawl.index.history import FORMAT as HISTORY_FORMAT
from bspcrawl.index.history import VERSION as HISTORY_VERSION
from bspcrawl.index.validators import Validators, ValidatorStore, check_saved, revalidate
from bspcrawl.index.warc import (
    Archived,
    WarcWriter,
    files_used,
    read_response,
    warc_name,
)
from bspcrawl.messages import FRESH, NOT_MODIFIED, FetchJob, FetchResult

WARC_DIR = "warc"
PREVIOUS = -1  # superstep of the carried segment (the previous crawl's share)
STR = h5py.string_dtype()
VALIDATOR_FIELDS = ("fp", "etag", "last_modified", "expires", "fetched", "content_fp")


class Archive:
    """One rank's validators, history and WARC writer, owned by the scheduler thread.

    ``files``: the earlier crawls' WARC files the history refers to; this crawl's file ``I``
    is ``warc_file`` ``len(files) + I``. Only with ``revisits`` (a URL may be fetched again)
    are schedules looked up and validators and history kept in memory.
    """

    def __init__(self, out: Path, rank: int, warc: bool = True, revisits: bool = False) -> None:
        self.out, self.rank, self.revisits = out, rank, revisits
        self.validators = ValidatorStore()
        self.history = History()
        self.files: list[str] = []
        self.writer = WarcWriter(out / WARC_DIR, rank) if warc else None
        self.cdxj = CdxjWriter(out / INDEXES_DIR)  # the CDXJ lines of the file written
        self._rows: list[tuple] = []  # history rows not yet in a segment
        self._applied = 0  # how many of them are in the history already
        self._updates: list[tuple] = []  # validator rows not yet in the store nor a segment
        self._sealed: dict[str, list] = {name: [] for name in VALIDATOR_FIELDS}

    def close(self) -> None:
        """Finish the WARC file being written."""
        if self.writer is not None:
            self.writer.close()
            self.cdxj.flush()

    def plan(self, jobs: list[FetchJob], now: float) -> list[FetchResult]:
        """Make a schedule's known jobs conditional; returns results for the fresh ones,
        which are not fetched."""
        if not self.revisits or not jobs:
            return []
        self.flush()
        if not len(self.validators):
            return []
        found = self.validators.lookup(np.array([j.fp for j in jobs], np.int64))
        fresh = found.fresh(now)
        etags, modified = found.etag, found.last_modified.tolist()
        for i in np.flatnonzero(found.found & ~fresh).tolist():
            jobs[i].headers = revalidate(etags[i], modified[i])
        started, ended = time.time(), time.monotonic()
        return [FetchResult(jobs[i], started=started, ended=ended, revisit=FRESH)
                for i in np.flatnonzero(fresh).tolist()]

    def restore(self, result: FetchResult, fp: int) -> None:
        """Give a 304 or a fresh result the archived version's body and Content-Type (a
        fresh one also its status), when the archive still has it."""
        if result.revisit != FRESH and (result.status != 304 or result.error):
            return
        result.revisit = result.revisit or NOT_MODIFIED
        original = self._original(fp)
        if original is None:
            return
        try:
            headers, body = read_response(self.path(original.warc_file), original.warc_offset)
        except (OSError, ValueError):
            return
        result.body, result.content_type = body, headers.get("content-type", "")
        if result.revisit == FRESH:
            result.status = original.status

    def record(self, result: FetchResult, fp: int, host: int, content_fp: int) -> None:
        """Archive one committed page result: WARC records, history row, validators."""
        if result.revisit == FRESH or result.status <= 0 or result.error:
            return
        at = (-1, -1, 0)
        if self.writer is not None:
            archived = self.writer.write_fetch(
                result, request_headers=result.job.headers, content_fp=content_fp,
                original=self._original(fp) if self.revisits else None)
            if archived is not None:
                self._index(result, archived)
                b = archived.body  # a revisit's is the original's: a table index already
                at = (b.file if archived.revisit else len(self.files) + b.file, b.offset,
                      b.length)
                if 200 <= result.status < 300 or result.status == 304:
                    self._validate(result, fp, content_fp)
        self._rows.append((fp, result.started, result.status, content_fp, *at, host))

    def _index(self, result: FetchResult, archived: Archived) -> None:
        """The CDXJ line of the response or revisit record just written."""
        at = archived.record
        self.cdxj.add(warc_name(self.rank, at.file), result.job.url, result.started,
                      status=result.status, offset=at.offset, length=at.length,
                      mime=REVISIT_MIME if archived.revisit else bare_mime(
                          result.headers.get("content-type", "")),
                      digest=archived.digest)

    def _original(self, fp: int) -> Version | None:
        self.flush()
        return self.history.original(fp)

    def _validate(self, result: FetchResult, fp: int, content_fp: int) -> None:
        previous = None
        if result.status == 304:
            self.flush()
            previous = self.validators.get(fp)
        v = Validators.from_response(result.headers, result.started, content_fp, previous)
        self._updates.append((fp, v.etag, v.last_modified, v.expires, v.fetched, v.content_fp))

    def flush(self) -> None:
        """Apply the rows recorded since the last flush (in memory only with revisits)."""
        if self.revisits and self._applied < len(self._rows):
            rows = zip(*self._rows[self._applied:], strict=True)
            self.history.extend(**dict(zip(FIELDS, rows, strict=True)))
            self._applied = len(self._rows)
        if not self._updates:
            return
        columns = list(zip(*self._updates, strict=True))
        if self.revisits:
            self.validators.update(*columns)
        for name, column in zip(VALIDATOR_FIELDS, columns, strict=True):
            self._sealed[name].extend(column)
        self._updates.clear()

    def path(self, warc_file: int) -> Path:
        """The path of the history's WARC file index ``warc_file``."""
        if warc_file < len(self.files):
            return self.out / self.files[warc_file]
        assert self.writer is not None
        return self.writer.path(warc_file - len(self.files))

    def drain(self, segment: h5py.File) -> None:
        """Write what was recorded since the last segment into ``segment``, after an fsync
        of the WARC records it refers to."""
        self.flush()
        if self.writer is not None:
            self.writer.sync()
        rows = list(zip(*self._rows, strict=True)) or [[] for _ in FIELDS]
        write_rows(segment, dict(zip(FIELDS, rows, strict=True)),
                   {name: self._sealed[name] for name in VALIDATOR_FIELDS}, self.files)
        self._rows.clear()
        self._applied = 0
        self._sealed = {name: [] for name in VALIDATOR_FIELDS}

    def replay(self, segment: h5py.File) -> None:
        """Take back what a segment recorded (resuming a crawl, or the carried segment)."""
        if self.revisits:
            self.files = take_rows(segment, self.history, self.validators) or self.files
        else:
            self.files = read_rows(segment)[2] or self.files


def write_rows(segment: h5py.File, history: dict, validators: dict, files: list[str]) -> None:
    """Store history rows, validator rows and the earlier crawls' WARC files in a segment."""
    for name, dtype in FIELDS.items():
        segment.create_dataset(f"history/{name}", data=np.asarray(history[name], dtype))
    for name in VALIDATOR_FIELDS:
        dtype = STR if name == "etag" else np.uint64 if name == "content_fp" else np.int64
        data = np.array(validators[name], dtype=object if name == "etag" else dtype)
        segment.create_dataset(f"validators/{name}", data=data, dtype=dtype)
    segment.attrs["warc_files"] = json.dumps(files)


def read_rows(segment: h5py.File) -> tuple[dict, dict, list[str]]:
    """What :func:`write_rows` stored (empty for a segment written without an archive)."""
    if "history" not in segment:
        empty = {name: np.zeros(0, dtype) for name, dtype in FIELDS.items()}
        return empty, {name: np.zeros(0) for name in VALIDATOR_FIELDS}, []
    history = {name: segment[f"history/{name}"][:] for name in FIELDS}
    return history, read_validators(segment), json.loads(segment.attrs["warc_files"])


def read_validators(segment: h5py.File) -> dict:
    """The validator rows of a segment written with an archive, column by column."""
    validators = {name: segment[f"validators/{name}"][:] for name in VALIDATOR_FIELDS}
    validators["etag"] = segment["validators/etag"].asstr()[:].tolist()
    return validators


def take_rows(segment: h5py.File, history: History, store: ValidatorStore) -> list[str]:
    """Add a segment's history and validator rows to ``history`` and ``store``; returns
    the earlier crawls' WARC files it lists."""
    rows, validators, files = read_rows(segment)
    history.extend(**rows)
    if len(validators["fp"]):
        store.update(*(validators[name] for name in VALIDATOR_FIELDS))
    return files


def join(f: h5py.File, parts: list[h5py.File], out: Path, rank: int) -> None:
    """Write a rank file's ``/history``, ``/validators`` (each URL's latest row) and
    ``/warc/files`` from its segments, one segment at a time."""
    kept = [p for p in parts if "history" in p]
    history = f.create_group("history")
    for name, dtype in FIELDS.items():
        concat(history, name, kept, f"history/{name}", dtype, maxshape=(None,))
    history.attrs.update(format=HISTORY_FORMAT, version=HISTORY_VERSION)
    store, files = ValidatorStore(), []
    for part in kept:
        rows = read_validators(part)
        if len(rows["fp"]):
            store.update(*(rows[name] for name in VALIDATOR_FIELDS))
        files = json.loads(part.attrs["warc_files"]) or files
    store.save(f.create_group("validators"))
    f.create_dataset("warc/files", data=np.array(files + own_files(out, rank), dtype=object),
                     dtype=STR)


def own_files(out: Path, rank: int) -> list[str]:
    """This rank's WARC files, relative to ``out`` (one a killed writer left open too)."""
    folder = out / WARC_DIR
    used = files_used(folder, rank) if folder.is_dir() else 0
    return [f"{WARC_DIR}/{warc_name(rank, i)}" for i in range(used)]


def split(f: h5py.File, segment: h5py.File) -> None:
    """Turn a joined rank file's archive back into segment rows (inverse of :func:`join`)."""
    own = f"{WARC_DIR}/rank-"
    files = [p for p in f["warc/files"].asstr()[:].tolist() if not p.startswith(own)]
    write_rows(segment, {name: f["history"][name][:] for name in FIELDS},
               read_validators(f), files)


def previous_hosts(previous: Path) -> np.ndarray:
    """The host hashes in the history of the crawl in ``previous`` (sorted, unique)."""
    hosts = [np.zeros(0, np.int64)]
    for path in sorted(previous.glob("rank-[0-9][0-9][0-9][0-9].h5")):
        with h5py.File(path, "r") as f:
            if "history" in f:
                hosts.append(np.unique(f["history/host"][:]))
    return np.unique(np.concatenate(hosts))


def carry(previous: Path, out: Path, owns: Callable[[int], bool], segment: h5py.File) -> int:
    """Write into ``segment`` the history and validators of ``previous``'s hosts this rank
    ``owns``; returns the rows carried."""
    rows: dict[str, list[np.ndarray]] = {name: [] for name in FIELDS}
    validators: dict[str, list] = {name: [] for name in VALIDATOR_FIELDS}
    files: list[str] = []
    for path in sorted(previous.glob("rank-[0-9][0-9][0-9][0-9].h5")):
        with h5py.File(path, "r") as f:
            if "history" not in f:
                continue
            history = {name: f["history"][name][:] for name in FIELDS}
            theirs = f["warc/files"].asstr()[:].tolist()
            check_saved(f["validators"])
            stored = read_validators(f)
        hosts, at = np.unique(history["host"], return_inverse=True)
        owned = np.array([owns(h) for h in hosts.tolist()], bool)
        mine = owned[at] if len(at) else np.zeros(0, bool)
        for name in FIELDS:
            rows[name].append(history[name][mine])
        warc_file = rows["warc_file"][-1]
        warc_file[warc_file >= 0] += len(files)
        files += [os.path.relpath(previous / p, out) for p in theirs]
        keep = np.isin(stored["fp"], rows["url_fp"][-1])
        for name in VALIDATOR_FIELDS:
            validators[name].extend(np.asarray(stored[name])[keep].tolist())
    history = {name: np.concatenate(c) if c else np.zeros(0, FIELDS[name])
               for name, c in rows.items()}
    write_rows(segment, history, validators, files)
    return len(history["url_fp"])
