"""A page's analysis (parse, links' seen-set keys, term counts), made in the scheduler's
thread or, with ``--parse-processes N``, by a fixed pool of worker processes between the
end of the page's fetch and its commit.

The analysis depends only on the page's bytes, URL, charset, whether it is indexed and
``--url-strip-params``, so the index is the same with workers or without. Workers are
spawned, not forked (a forked child would inherit the fetcher thread's locks and MPI's
state); each leaves the rank's process group, so a Ctrl-C reaches the rank alone, and
ends when its rank ends.
"""

from __future__ import annotations

import contextlib
import dataclasses
import multiprocessing
import os
import sys
import threading
import time
import types
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from multiprocessing.connection import wait
from typing import NamedTuple

import numpy as np

from bspcrawl.counters import Stats
from bspcrawl.index.simhash import simhash
from bspcrawl.index.terms import EMPTY, TermCounts, count_terms_with, page_pairs
from bspcrawl.robots.links import LinkCache, ParsedPage, parse_html
from bspcrawl.urls import key_fingerprints, strip_pattern

AUTO = -1  # --parse-processes: workers by the rule of workers_for
WAIT = 1.0  # s between looks whether the pool broke while an analysis is awaited
KEY_MEMO = 1 << 16  # link URLs remembered with their seen-set key (about 150 bytes each)


class LinkKeys:
    """The seen-set keys of link URLs (the frontier's keys, so the link graph's targets match
    ``/pages/url_fp``), memoised: most links of a site's pages are the same navigation."""

    def __init__(self, strip: str) -> None:
        self.pattern = strip_pattern(strip)
        self.memo: dict[str, int] = {}

    def __call__(self, urls: Sequence[str]) -> np.ndarray:
        memo = self.memo
        if len(memo) > KEY_MEMO:
            memo.clear()
        missing = [url for url in urls if url not in memo]
        if missing:
            memo.update(zip(missing, key_fingerprints(missing, self.pattern).tolist(),
                            strict=True))
        return np.fromiter(map(memo.__getitem__, urls), np.int64, len(urls))


class Analysis(NamedTuple):
    """An HTML page's parse, term counts of its text and of its title and headings
    (``EMPTY`` and None when not indexed), SimHash, adjacent term pairs and link keys."""

    page: ParsedPage
    terms: TermCounts
    parts: tuple[np.ndarray, np.ndarray, np.ndarray] | None
    simhash: int
    pairs: np.ndarray
    keys: np.ndarray


def field_texts(page: ParsedPage) -> list[bytes]:
    """A page's title, then each heading level's text (``commit.fields``' order)."""
    return [page.title.encode(), *(t.encode() for t in page.headings.values())]


def analyse(body: bytes, url: str, charset: str | None, index: bool,
            cache: LinkCache, keys: LinkKeys) -> Analysis:
    """Parse the HTML page *body* from *url*; count its terms if *index* and the page does
    not say noindex (its text and term sequence are dropped once counted)."""
    page = parse_html(body, url, cache, charset=charset)
    link_keys = keys(page.links)
    if not index or page.noindex:
        return Analysis(page, EMPTY, None, 0, EMPTY.sequence, link_keys)
    terms, parts = count_terms_with(page.text, field_texts(page))
    page.text = b""
    fingerprint, pairs = simhash(terms), page_pairs(terms)
    terms = dataclasses.replace(terms, _runs=EMPTY.sequence)
    return Analysis(page, terms, parts, fingerprint, pairs, link_keys)


def workers_for(setting: int, node_ranks: int) -> int:
    """The workers a rank starts: ``setting``, or for :data:`AUTO` two when the machine has
    two cores a rank, else none (where ranks fill the cores, workers only take CPU)."""
    if setting != AUTO:
        return setting
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (
        os.cpu_count() or 1)
    share = cores // node_ranks
    return 2 if share >= 2 else 0


class Pool:
    """``workers`` processes: :meth:`submit` a page when its fetch ends, :meth:`result` at
    its commit, :meth:`close` at the end. A worker that dies breaks the pool (counted once
    in ``analysis/helpers_lost``); from then on, and for an analysis that raised, the
    caller's ``here()`` analyses the page."""

    def __init__(self, workers: int, strip: str, stats: Stats) -> None:
        self.stats, self.workers = stats, workers
        with _main_hidden():
            self.executor: ProcessPoolExecutor | None = ProcessPoolExecutor(
                workers, multiprocessing.get_context("spawn"), _start_worker, (strip,))
            # each started now (with the main hidden), not at the first pages
            self.starting = [self.executor.submit(int) for _ in range(workers)]

    def submit(self, pages: list[tuple[bytes, str, str | None, bool]]
               ) -> Future[list[Analysis | None]] | None:
        """The analyses of *pages* under way in a worker, as one task (each task wakes the
        executor's threads in the rank); None while a worker is starting (no page waits
        for its imports) or once the pool is broken."""
        self.starting = [f for f in self.starting if not f.done()]
        if self.executor is None or self.starting:
            return None
        try:
            return self.executor.submit(_analyse_many, pages)
        except BrokenProcessPool:
            self._lost()
            return None

    def result(self, future: Future[list[Analysis | None]], i: int,
               here: Callable[[], Analysis]) -> Analysis:
        """The worker's analysis of the task's page *i*, or ``here()`` if it raised or the
        pool broke (looked at every ``WAIT`` s: a task submitted as a worker died is never
        answered)."""
        start = time.monotonic()
        try:
            while True:
                try:
                    analysis = future.result(WAIT)[i]
                    break
                except TimeoutError:
                    if self.executor is None:
                        return here()
                    self.executor.submit(int)  # (raises once the pool is broken)
        except BrokenProcessPool:
            self._lost()
            return here()
        except Exception:  # noqa: BLE001 (analysed again here, failing the same way)
            return here()
        finally:
            self.stats["time/helpers"] += time.monotonic() - start
        if analysis is None:  # (it raised: analysed again here, failing the same way)
            return here()
        self.stats["analysis/ahead"] += 1
        return analysis

    def _lost(self) -> None:
        if self.executor is not None:
            self.stats["analysis/helpers_lost"] += 1
            self.executor.shutdown(wait=False, cancel_futures=True)
            self.executor = None

    def close(self) -> None:
        """End the workers (pages not started are dropped)."""
        if self.executor is not None:
            self.executor.shutdown(wait=True, cancel_futures=True)
            self.executor = None


@contextlib.contextmanager
def _main_hidden() -> Iterator[None]:
    """Hide the rank's ``__main__`` while workers spawn (each would run it again, and the
    ``bspcrawl`` script imports the CLI and h5py)."""
    main = sys.modules["__main__"]
    sys.modules["__main__"] = types.ModuleType("__main__")
    try:
        yield
    finally:
        sys.modules["__main__"] = main


_memos: tuple[LinkCache, LinkKeys] | None = None  # a worker's (_start_worker)


def _start_worker(strip: str) -> None:
    """A worker's set-up: out of the rank's process group, ended with its rank, own memos."""
    global _memos
    os.setpgrp()
    parent = multiprocessing.parent_process()
    assert parent is not None
    threading.Thread(target=_end_with, args=(parent.sentinel,), daemon=True).start()
    _memos = LinkCache(), LinkKeys(strip)


def _end_with(sentinel: int) -> None:
    wait([sentinel])
    os._exit(0)


def _analyse_many(pages: list[tuple[bytes, str, str | None, bool]]
                  ) -> list[Analysis | None]:
    """:func:`analyse` of each page in a worker; None for a page whose analysis raised."""
    assert _memos is not None
    out: list[Analysis | None] = []
    for page in pages:
        try:
            out.append(analyse(*page, *_memos))
        except Exception:  # noqa: BLE001 (the rank analyses it again)
            out.append(None)
    return out
