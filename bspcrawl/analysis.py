"""A page's analysis (its parse and term counts), in the scheduler's thread or ahead of
the commit in helper processes (``--parse-processes N``).

The analysis of an HTML page is :func:`parse_html` (lexbor's tree, the links resolved,
the index text) and :func:`count_terms_with` (the terms of the text, title and headings):
about half of the commit's CPU on real pages (docs/performance/realweb.md). A rank's
Python runs in one thread (DESIGN.md), so a rank crawling a few unpaced hosts is bound by
it, and more ranks do not help a single host (a host is one rank's). With ``N`` helper
processes (``python -m bspcrawl.analysis``, started by the rank, no MPI in them), each
page answered 2xx is queued as soon as its fetch ends for the first helper with room
(:class:`AnalysisPool`), which analyses it while the scheduler commits earlier pages; at
its commit, in schedule order as always, the scheduler takes the answer (or, for a page no
helper had room for yet, makes it). The index is the same either way: the analysis is a
function of the page's bytes, URL and charset (and the ``--url-strip-params`` setting, for
the links' seen-set keys; each helper has its own ``LinkCache`` and :class:`LinkKeys`,
memos).

Costs: the page goes through a pipe and its analysis back (~5% more CPU in all); the
helpers use cores the rank's scheduler cannot. So it pays where there are spare cores and
few hosts (one site with politeness off: a rank per core cannot split it), not where ranks
already fill the cores. Hence the default, :data:`AUTO` (:func:`helpers_for`): two helpers
per rank when the machine has a core to spare for each (pages of hundreds of links cost
one helper more than the rest of the commit); else none at first, and one later
for a rank that is busy while a core of its machine idles (:class:`Spare`: the ranks of a
crawl whose other ranks ran out of work, a machine other jobs left); and one more, up to
the rank's share of the cores (or two), while its commits wait for its helpers with part
of a core idle (pages of hundreds of links, whose analysis costs more than the rest of the
commit).

A helper that dies (a crash in the parser, a kill), or hangs (``STALL`` s without a byte
while it owes answers: then it is killed), is not replaced: the pages it held, and every
page once none is left, are analysed in the scheduler's thread
(``analysis/helpers_lost``). A helper ends when its pipe closes (its rank ended, even
killed); it ignores SIGINT and SIGTERM, which a Ctrl-C or a kill of the process group
sends it too: the rank stops at a superstep's end and needs its helpers until then.

Wire: a helper's command line holds its rank's wire format and ``--url-strip-params``;
each request is a header (``_REQUEST``: key, sizes, whether to count terms), the
URL and charset, then the body's bytes as they are; each answer a header (``_ANSWER``)
and the analysis (:func:`encode`; None if it raised, so the scheduler's thread repeats it
and fails the same way). A helper's first answer, key ``READY`` and nothing after it, says
it has started: it is handed pages only then (the pages fetched while it imports its
modules, ~0.1 s, wait in the pool, or the scheduler analyses them at their commit).
A helper takes the requests that have arrived, up to ``BATCH``, and analyses them stage by
stage (:func:`analyse_many`), then answers each.
"""

from __future__ import annotations

import contextlib
import fcntl
import math
import os
import pickle
import select
import signal
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import fields
from pathlib import Path
from typing import Any, NamedTuple, overload

import numpy as np

from bspcrawl.counters import Stats
from bspcrawl.index.simhash import simhash
from bspcrawl.index.terms import EMPTY, TermCounts, count_terms_with, page_pairs
from bspcrawl.robots.links import LinkCache, ParsedPage, parse_html
from bspcrawl.urls import key_fingerprints, strip_pattern

AUTO = -1  # --parse-processes: helpers where cores are spare (helpers_for, Spare)
AUTO_START = 2  # the most helpers AUTO starts a rank with (the commit keeps ~2 busy)


CGROUP = Path("/sys/fs/cgroup")  # where a container sees its own cgroup


def _cpus() -> set[int]:
    """The CPUs this process may run on (its affinity; all of them where the system has
    no affinity call: macOS)."""
    if hasattr(os, "sched_getaffinity"):
        return os.sched_getaffinity(0)
    return set(range(os.cpu_count() or 1))


def cpu_quota(cgroup: Path) -> float | None:
    """Cores' worth of CPU time the cgroup of this process may use (cgroup v2's
    ``cpu.max``, v1's ``cpu.cfs_quota_us`` over ``cpu.cfs_period_us``: a container's CPU
    limit); None without a quota."""
    try:
        quota, period = (cgroup / "cpu.max").read_text().split()[:2]
    except (OSError, ValueError):
        try:
            quota = (cgroup / "cpu" / "cpu.cfs_quota_us").read_text()
            period = (cgroup / "cpu" / "cpu.cfs_period_us").read_text()
        except OSError:
            return None
    try:
        q, p = int(quota), int(period)
    except ValueError:  # "max": no quota
        return None
    return q / p if q > 0 and p > 0 else None


def helpers_for(setting: int, node_ranks: int, cgroup: Path | None = None) -> tuple[int, int]:
    """(the helper processes a rank starts, the most it may have: :class:`Spare` adds one at
    a time up to that). ``setting`` as given, both; for :data:`AUTO`, its share of the
    cores this process may run on (its affinity, capped by a CPU quota), at most
    ``AUTO_START``, at the start when that share is at least two cores, else none; and
    later up to its share, or ``AUTO_START`` where it is less (the cores other ranks leave
    idle: :class:`Spare` looks), but under a quota (whose use ``/proc/stat`` does not
    show): then no more than at the start. (Measured on 2 cores, docs/performance/
    realweb.md: P = 1 with a helper, the same CPU within 5% and 10-30% less wall time than
    without on the real trees, the throughput web and the speedup web; with two, another
    3-15% less on the real trees, most on pages of hundreds of links, where the analysis
    costs more than the rest of the commit; P = 2 with a helper each from the start, up to
    13% more CPU where the ranks already fill the cores.)"""
    if setting != AUTO:
        return setting, setting
    cores, quota = len(_cpus()), cpu_quota(cgroup or CGROUP)
    if quota is not None:
        cores = min(cores, math.ceil(quota))
    share = cores // node_ranks
    start = min(share, AUTO_START) if share >= 2 else 0
    return start, start if quota is not None else max(share, min(cores, AUTO_START))


class Spare:
    """When a rank takes one more helper (:data:`AUTO`), up to ``most``: when over the last
    ``LOOK`` s (looked at as it commits, and at each superstep's end) its cores (those it
    may run on) were idle on average at least ``IDLE`` cores' worth (``/proc/stat``: idle
    and iowait time; no ``/proc``, never) and, with no helper, it waited less than
    ``BUSY`` of the time (for results and at the syncs: its commits bound it); with
    helpers, when its commits waited for their analyses ``BUSY`` of the time or more (they
    bound it) and at least ``MORE_IDLE`` cores' worth idled. A look at a superstep's end
    that *hurries* (another rank of the machine has nothing to do: its core may be spare)
    comes after ``HURRY`` s already."""

    LOOK = 0.5  # s between two looks (with 1 s, at superstep ends, P = 2 on one big site
    # took 8% more wall time: docs/performance/realweb.md)
    BUSY = 0.25  # the most of the time a busy rank waits
    IDLE = 0.5  # cores' worth of idle time that makes a core spare for a first helper
    # (with 0.75, at P = 2 on 2 cores the rank with the larger share of a crawl took its
    # first helper ~1 s after the other rank had little left to do: docs/performance/
    # realweb.md, session 13)
    MORE_IDLE = 0.25  # ... for one more (the helpers that bound the rank use the rest)
    HURRY = 0.1  # s between two looks that hurry (at P = 2 on 2 cores and one big site,
    # the rank with it took its helpers 0.5 and 1.1 s in: 0.3 s more than from the start)

    def __init__(self, now: float, most: int, stat: str = "/proc/stat") -> None:
        self.most, self.stat, self.cpus = most, stat, {f"cpu{i}" for i in _cpus()}
        self.since, self.waited, self.on_helpers = now, 0.0, 0.0
        self.counted = (0.0, 0.0)  # the superstep's waits counted already
        self.last = self._times()

    def _times(self) -> tuple[float, float] | None:
        """(idle, all) jiffies of this process's cores, None without ``/proc`` (or with
        one this code cannot read)."""
        try:
            with open(self.stat) as f:
                rows = [r for r in map(str.split, f) if r and r[0] in self.cpus]
            return (sum(int(r[4]) + int(r[5]) for r in rows),
                    sum(int(x) for r in rows for x in r[1:9]))
        except (OSError, ValueError, IndexError):
            return None

    def look(self, now: float, waited: float, on_helpers: float, helpers: int, *,
             ended: bool = True, hurry: bool = False) -> bool:
        """Count the superstep so far: it waited ``waited`` s (``time/wait``), ``on_helpers``
        s of its commits for its ``helpers`` helpers' analyses (``time/helpers``); it
        ``ended`` (else it goes on, and those counters with it); ``hurry``: another rank of
        the machine has nothing to do. True when the rank should take one more helper now
        (never once it has ``most``)."""
        self.waited += waited - self.counted[0]
        self.on_helpers += on_helpers - self.counted[1]
        self.counted = (0.0, 0.0) if ended else (waited, on_helpers)
        span = now - self.since
        if span < (self.HURRY if hurry else self.LOOK) or helpers >= self.most:
            return False
        times = self._times()
        idle = 0.0
        if times is not None and self.last is not None and times[1] > self.last[1]:
            idle = (times[0] - self.last[0]) / (times[1] - self.last[1]) * len(self.cpus)
        if helpers:
            grow = self.on_helpers >= self.BUSY * span and idle >= self.MORE_IDLE
        else:
            grow = self.waited < self.BUSY * span and idle >= self.IDLE
        self.since, self.waited, self.on_helpers, self.last = now, 0.0, 0.0, times
        return grow


KEY_MEMO = 1 << 16  # link URLs remembered with their seen-set key (about 150 bytes each)


class LinkKeys:
    """The seen-set keys of link URLs (``urls.key_fingerprints`` with the parameters the
    ``--url-strip-params`` regex *strip* names cut: the frontier's keys, so that the link
    graph's targets match ``/pages/url_fp``), memoised: on documentation sites most links
    of a page are the navigation of the pages before (a lookup costs a quarter of a hash;
    the memo is cleared past ``KEY_MEMO`` entries)."""

    def __init__(self, strip: str) -> None:
        self.pattern = strip_pattern(strip)
        self.memo: dict[str, int] = {}

    def __call__(self, urls: Sequence[str]) -> np.ndarray:
        """The keys (int64) of *urls*."""
        memo = self.memo
        if len(memo) > KEY_MEMO:
            memo.clear()
        missing = [url for url in urls if url not in memo]
        if missing:
            memo.update(zip(missing, key_fingerprints(missing, self.pattern).tolist(),
                            strict=True))
        return np.fromiter(map(memo.__getitem__, urls), np.int64, len(urls))


class Strings(Sequence[str]):
    """Strings held as one (their concatenation and where each ends), each made when read:
    how a page's links and anchor texts come through the pipe. The scheduler reads only
    those of the links it sends on (on documentation sites, a few of a page's hundreds:
    the rest are the navigation again), so it does not make a string of each (unpickling
    them and finding their keys took about a tenth of its commit on pandas' pages)."""

    __slots__ = ("_ends", "_text")

    def __init__(self, text: str, ends: np.ndarray) -> None:
        self._text, self._ends = text, ends

    @classmethod
    def of(cls, items: Sequence[str]) -> Strings:
        """*items* held as one."""
        return cls("".join(items), np.cumsum(np.fromiter(map(len, items), np.int64,
                                                          len(items))))

    def packed(self) -> tuple[str, np.ndarray]:
        """(the concatenation, where each string ends): :class:`Strings` takes them back."""
        return self._text, self._ends

    def __len__(self) -> int:
        return len(self._ends)

    @overload
    def __getitem__(self, i: int) -> str: ...
    @overload
    def __getitem__(self, i: slice) -> Strings: ...

    def __getitem__(self, i: int | slice) -> str | Strings:
        if isinstance(i, slice):
            if i.step not in (None, 1):
                raise ValueError("Strings slices take no step")
            start, stop, _ = i.indices(len(self._ends))
            at = int(self._ends[start - 1]) if start > 0 else 0
            return Strings(self._text[at:], self._ends[start:max(stop, start)] - at)
        end = int(self._ends[i])  # (IndexError past the end, as a list's)
        i %= len(self._ends)
        return self._text[int(self._ends[i - 1]) if i else 0:end]

    def __eq__(self, other: object) -> bool:  # (so unhashable, as a list)
        if isinstance(other, Sequence) and not isinstance(other, str):
            return len(self) == len(other) and all(
                a == b for a, b in zip(self, other, strict=True))
        return NotImplemented


class Analysis(NamedTuple):
    """An HTML page's parse, the term counts of its text and of its title and headings
    (``EMPTY`` and None when not indexed), its SimHash (``index/simhash.py``), its
    distinct adjacent term pairs (``index/terms.py``: :func:`page_pairs`) and the seen-set
    keys of its links (:class:`LinkKeys`)."""

    page: ParsedPage
    terms: TermCounts
    parts: tuple[np.ndarray, np.ndarray, np.ndarray] | None
    simhash: int
    pairs: np.ndarray
    keys: np.ndarray


def field_texts(page: ParsedPage) -> list[bytes]:
    """A page's title, then the text of each of its heading levels (``commit.fields``'
    order)."""
    return [page.title.encode(), *(t.encode() for t in page.headings.values())]


def analyse(body: bytes, url: str, charset: str | None, index: bool,
            cache: LinkCache, keys: LinkKeys) -> Analysis:
    """Parse the HTML page *body* from *url*; count its terms if *index* and the page
    does not say noindex. The page's ``text`` is dropped once counted (the index keeps
    the terms)."""
    page = parse_html(body, url, cache, charset=charset)
    return _counted(page, keys(page.links), index)


def analyse_many(pages: Sequence[tuple[bytes, str, str | None, bool]], cache: LinkCache,
                 keys: LinkKeys) -> list[Analysis | None]:
    """:func:`analyse` of each of *pages* ((body, URL, charset, index) each), stage by
    stage: every parse, then every count of terms (the parse's working set and the
    counting's evicted each other from the caches: 475 -> 405 µs a page of 9 KB, 16 at a
    time, replayed); None for a page whose analysis raised."""
    parsed: list[tuple[ParsedPage, np.ndarray] | None] = []
    for body, url, charset, _ in pages:
        try:
            page = parse_html(body, url, cache, charset=charset)
            parsed.append((page, keys(page.links)))
        except Exception:  # noqa: BLE001 (analysed again at its commit, failing there)
            parsed.append(None)
    out: list[Analysis | None] = []
    for done, (*_, index) in zip(parsed, pages, strict=True):
        try:
            out.append(None if done is None else _counted(*done, index))
        except Exception:  # noqa: BLE001 (as above)
            out.append(None)
    return out


def _counted(page: ParsedPage, link_keys: np.ndarray, index: bool) -> Analysis:
    """The analysis of a parsed *page*: its terms counted if *index* and not noindex."""
    if not index or page.noindex:
        return Analysis(page, EMPTY, None, 0, EMPTY.sequence, link_keys)
    terms, parts = count_terms_with(page.text, field_texts(page))
    page.text = b""
    return Analysis(page, terms, parts, simhash(terms), page_pairs(terms), link_keys)


def _plain(values: Iterable[Any]) -> tuple[Any, ...]:
    """*values* with each array as (dtype, bytes): pickled 4x as fast (measured)."""
    return tuple((x.dtype.str, x.tobytes()) if isinstance(x, np.ndarray) else x
                 for x in values)


def _arrays(values: tuple[Any, ...]) -> list[Any]:
    """The inverse of :func:`_plain` (the arrays read-only, on the pickle's bytes)."""
    return [np.frombuffer(x[1], x[0]) if isinstance(x, tuple) else x for x in values]


_PACKED = ("links", "anchors")  # the ParsedPage fields sent as Strings
_PAGE_FIELDS = [f.name for f in fields(ParsedPage)]


def encode(analysis: Analysis | None) -> bytes:
    """*analysis* as bytes for the pipe (:func:`decode` reads it), but the sequence of its
    terms (``TermCounts.sequence``: a word of the text each), which the scheduler does not
    use: the SimHash and the pairs come from it already."""
    if analysis is None:
        return pickle.dumps(None)
    page, terms, parts, fingerprint, pairs, keys = analysis
    return pickle.dumps((
        tuple(_plain(Strings.of(value).packed()) if name in _PACKED else value
              for name, value in zip(_PAGE_FIELDS, map(page.__getattribute__, _PAGE_FIELDS),
                                     strict=True)),
        _plain(EMPTY.sequence if f.name == "_runs" else getattr(terms, f.name)
               for f in fields(terms)),
        None if parts is None else _plain(parts), fingerprint, _plain([pairs, keys])),
        pickle.HIGHEST_PROTOCOL)


def decode(data: bytes | memoryview) -> Analysis | None:
    """The analysis :func:`encode` wrote (the page's links and anchors as :class:`Strings`)."""
    plain = pickle.loads(data)
    if plain is None:
        return None
    page, terms, parts, fingerprint, arrays = plain
    page = [Strings(*_arrays(value)) if name in _PACKED else value
            for name, value in zip(_PAGE_FIELDS, page, strict=True)]
    return Analysis(ParsedPage(*page), TermCounts(*_arrays(terms)),
                    None if parts is None else tuple(_arrays(parts)), fingerprint,
                    *_arrays(arrays))


_REQUEST = struct.Struct("<QIIQB")  # key, URL bytes, charset bytes, body bytes, index
_ANSWER = struct.Struct("<QQ")  # key, pickle bytes
READY = 2**64 - 1  # the key of a helper's first answer (no pickle): it has started
PIPE_BYTES = 1 << 20  # each pipe's buffer (Linux's default limit for a user)
STALL = 120.0  # s without a byte from a helper that owes answers: it is lost (hung)
HAND = 32  # pages a helper holds at most (AnalysisPool): ~80 ms of work on pages of
# hundreds of links, a few MB of pipe
PUMP_WAIT = 0.01  # s a pump thread waits on the pipes before it looks whether to stop
BATCH = 16  # pages a helper analyses stage by stage (analyse_many), of those arrived


class _Helper:
    """One helper process and its two pipes (our ends non-blocking)."""

    def __init__(self, strip: str) -> None:
        self.proc = subprocess.Popen(  # (it checks that it speaks our wire format)
            [sys.executable, "-m", "bspcrawl.analysis", _REQUEST.format, _ANSWER.format,
             strip],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0, close_fds=True)
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.send_fd, self.recv_fd = self.proc.stdin.fileno(), self.proc.stdout.fileno()
        for fd in (self.send_fd, self.recv_fd):
            os.set_blocking(fd, False)
            # (under a lower limit, /proc/sys/fs/pipe-max-size: the default size)
            with contextlib.suppress(OSError):
                fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, PIPE_BYTES)
        self.out: list[memoryview] = []  # requests not written yet
        self.inbox = b""  # the start of an answer read, not whole yet
        self.keys: set[int] = set()  # sent, not answered
        self.ready = False  # it said it has started (imports take ~0.1 s)
        self.alive = True
        self.closed = False

    def write(self) -> None:
        """Write what the pipe takes now."""
        while self.out:
            try:
                n = os.write(self.send_fd, self.out[0])
            except BlockingIOError:
                return
            if n == len(self.out[0]):
                self.out.pop(0)
            else:
                self.out[0] = self.out[0][n:]

    def read(self) -> list[tuple[int, Analysis | None]]:
        """The answers the pipe holds now; [] at its end (``alive`` is then False). (The
        answers are unpickled from what was read as it is: a page's answer is ~100 KB.)"""
        chunks = [self.inbox] if self.inbox else []
        while True:
            try:
                data = os.read(self.recv_fd, PIPE_BYTES)
            except BlockingIOError:
                break
            if not data:
                self.alive = False
                break
            chunks.append(data)
        inbox = chunks[0] if len(chunks) == 1 else b"".join(chunks)
        answers = []
        at = 0
        with memoryview(inbox) as view:
            while len(inbox) - at >= _ANSWER.size:
                key, size = _ANSWER.unpack_from(inbox, at)
                end = at + _ANSWER.size + size
                if end > len(inbox):
                    break
                if key == READY:
                    self.ready = True
                else:
                    answers.append((key, decode(view[at + _ANSWER.size:end])))
                    self.keys.discard(key)
                at = end
        self.inbox = inbox[at:]
        return answers

    def close(self, wait: float) -> None:
        """:meth:`end` it and :meth:`reap` it."""
        self.end()
        self.reap(wait)

    def end(self) -> None:
        """Close both pipes (it then ends: at the end of its input, or as it writes an
        answer nobody reads); kill it at once if it has not said it started."""
        if self.closed:
            return
        self.alive, self.closed = False, True
        for pipe in (self.proc.stdin, self.proc.stdout):
            if pipe is not None:
                pipe.close()
        if not self.ready:  # still starting, no page in hand: not worth the wait
            self.proc.kill()

    def reap(self, wait: float) -> None:
        """Wait for the ended process; kill it after ``wait`` s."""
        try:
            self.proc.wait(wait)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


class AnalysisPool:
    """``n`` helper processes analysing pages ahead of their commit (module docstring);
    *strip*: the ``--url-strip-params`` regex (:class:`LinkKeys`).

    :meth:`submit` a result's page when its fetch ends, :meth:`take` its analysis at its
    commit (made by the caller if not submitted, no helper had room for it yet, or its
    helper was lost), :meth:`discard` one that will not be committed, :meth:`close` at
    the end. A helper holds at most ``HAND`` pages (sent, or answered and not read yet);
    the others wait in the pool, oldest first, for the first helper with room, a helper
    started later too (a rank can fetch a thousand pages of one site in a burst: handed
    out at once, they stayed with the one helper it had then, while its next one idled).
    With a *spare* (:data:`AUTO`), the pool takes more helpers as it tells (:meth:`look`).
    """

    def __init__(self, n: int, stats: Stats, strip: str, spare: Spare | None = None) -> None:
        self.stats, self.strip, self.spare = stats, strip, spare
        self.helpers = [_Helper(strip) for _ in range(n)]  # more: grow()
        self.next_key = 0
        # id(result) -> its key and the result (held, so that its id stays its own)
        self.sent: dict[int, tuple[int, object]] = {}
        self.queued: dict[int, list[memoryview]] = {}  # key -> request, oldest first
        self.where: dict[int, _Helper] = {}  # key -> the helper it went to
        self.answers: dict[int, Analysis | None] = {}  # key -> analysis, not taken yet
        self.hurry = False  # another rank of the machine has nothing to do (Spare.look)

    def grow(self) -> None:
        """Start one more helper (it takes pages waiting in the pool at once)."""
        self.helpers.append(_Helper(self.strip))
        self._dispatch()

    def look(self, *, ended: bool) -> None:
        """:meth:`grow` if the spare says so (at each commit, and as the superstep
        ``ended``: a superstep of one big site's pages can last seconds), in a hurry while
        ``hurry`` (the crawl loop sets it: :meth:`Spare.look`)."""
        if self.spare is not None and self.spare.look(
                time.monotonic(), self.stats["time/wait"], self.stats["time/helpers"],
                len(self.helpers), ended=ended, hurry=self.hurry):
            self.grow()

    def submit(self, result: object, body: bytes, url: str, charset: str | None,
               index: bool) -> None:
        """Queue the page *body* of *result*, then hand what waits to the helpers with room.
        (With no helper alive, queued only if the spare may start one: then it takes the
        pages fetched before it started, which a rank far behind its fetches would
        otherwise commit alone, for seconds, with a helper idle.)"""
        if not self._alive() and not (
                self.spare is not None and len(self.helpers) < self.spare.most):
            return
        key, self.next_key = self.next_key, self.next_key + 1
        url_b, charset_b = url.encode(), (charset or "").encode()
        head = _REQUEST.pack(key, len(url_b), len(charset_b), len(body), index)
        self.queued[key] = [memoryview(head + url_b + charset_b), memoryview(body)]
        self.sent[id(result)] = (key, result)
        self._dispatch()

    def take(self, result: object, here: Callable[[], Analysis | None] = lambda: None
             ) -> Analysis | None:
        """The analysis of *result*, waiting for it, or ``here()`` if it was not submitted,
        is still waiting for a helper with room (then its time counts as waiting), or its
        helper was lost."""
        self.look(ended=False)
        sent = self.sent.pop(id(result), None)
        if sent is None:
            return here()
        key, start = sent[0], time.monotonic()
        if self.queued.pop(key, None) is not None:  # every helper is busier than we are
            self._dispatch()  # (or still starting: one that has started takes the next)
            answer = here()
            if self._alive():  # (else there is none to wait for)
                self.stats["time/helpers"] += time.monotonic() - start
            return answer
        helper = self.where[key]
        if key not in self.answers:
            while key not in self.answers and key in helper.keys and helper.alive:
                if not self._pump(STALL):
                    self._lost(helper)  # hung: killed, its pages analysed here
            self.stats["time/helpers"] += time.monotonic() - start
        elif self.queued:
            self._pump(0.0)  # read the answers ready, hand on what waits
        del self.where[key]
        answer = self.answers.pop(key, None)
        self.stats["analysis/ahead"] += answer is not None
        return here() if answer is None else answer

    def claim(self, results: Sequence[object],
              here: Callable[[list[Any]], list[Analysis | None]]) -> list[Analysis | None]:
        """:meth:`take` for the pages of *results* that no helper has: each one's analysis
        from ``here(those results)`` if its page was not submitted or still waits for a
        helper (then no longer: as in :meth:`take`, its time counts as waited for); None,
        for :meth:`take` at its commit, where a helper has it."""
        self.look(ended=False)
        mine, waited = [], 0
        for i, result in enumerate(results):
            sent = self.sent.get(id(result))
            if sent is not None:
                if self.queued.pop(sent[0], None) is None:
                    continue  # a helper has it
                del self.sent[id(result)]
                waited += 1
            mine.append(i)
        if waited:
            self._dispatch()  # (a helper that has started takes the next)
        start = time.monotonic()
        made = here([results[i] for i in mine]) if mine else []
        if waited and self._alive():
            self.stats["time/helpers"] += (time.monotonic() - start) * waited / len(mine)
        out: list[Analysis | None] = [None] * len(results)
        for i, analysis in zip(mine, made, strict=True):
            out[i] = analysis
        return out

    def discard(self, result: object) -> None:
        """Forget *result* (not to be committed); its answer is dropped when it comes."""
        sent = self.sent.pop(id(result), None)
        if sent is not None:
            self.queued.pop(sent[0], None)
            self.where.pop(sent[0], None)
            self.answers.pop(sent[0], None)

    @contextlib.contextmanager
    def meanwhile(self) -> Iterator[None]:
        """Keep the helpers fed while the caller's thread is busy with other work (it must
        not use the pool then): a thread pumps the pipes until the block ends. (Sealing
        2,000 pages of hundreds of links takes ~0.3 s, a helper's hand ~80 ms, and its pipes
        hold ~10 pages each way: unpumped, the helpers idled most of every seal.)"""
        if not self._busy():
            yield
            return
        stop = threading.Event()
        failed: list[BaseException] = []

        def pump() -> None:
            try:
                while not stop.is_set() and self._busy():
                    self._pump(PUMP_WAIT)
            except BaseException as error:  # noqa: BLE001 (raised in the caller's thread)
                failed.append(error)

        thread = threading.Thread(target=pump, name="bspcrawl-pump", daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join()
        if failed:
            raise failed[0]

    def wait_ready(self, timeout: float) -> bool:
        """Wait up to *timeout* s until every helper not lost has started; whether they
        have. (For tests, which look where pages go: a crawl never waits, its pages wait
        in the pool or the scheduler analyses them.)"""
        deadline = time.monotonic() + timeout
        while not all(h.ready for h in self._alive()) and time.monotonic() < deadline:
            self._pump(max(0.0, min(PUMP_WAIT, deadline - time.monotonic())))
        return all(h.ready for h in self._alive())

    def _alive(self) -> list[_Helper]:
        """The helpers not lost."""
        return [h for h in self.helpers if h.alive]

    def _started(self) -> list[_Helper]:
        """The helpers not lost that have started (reading the pipe of those starting: a
        helper is handed pages only then, so that the first pages of a crawl, fetched while
        its helpers import their modules, ~0.1 s, are not left waiting for them)."""
        for helper in self._alive():
            if not helper.ready:
                helper.read()  # (no answer: it has no page yet)
                if not helper.alive:
                    self._lost(helper)
        return [h for h in self.helpers if h.alive and h.ready]

    def _busy(self) -> bool:
        """Whether a helper not lost has pages to take or answers to give."""
        alive = self._alive()
        return bool(alive) and (bool(self.queued) or any(h.keys for h in alive))

    def _dispatch(self) -> None:
        """Hand the pages waiting in the pool, oldest first, to the helpers with room (the
        one with the fewest in hand first), and write what the pipes take now."""
        alive = self._started()
        while self.queued and alive:
            helper = min(alive, key=lambda h: len(h.keys))
            if len(helper.keys) >= HAND:
                break
            key = next(iter(self.queued))
            helper.out += self.queued.pop(key)
            helper.keys.add(key)
            self.where[key] = helper
        for helper in alive:
            try:
                helper.write()
            except BrokenPipeError:
                self._lost(helper)

    def _pump(self, timeout: float) -> bool:
        """Wait up to *timeout* s until a pipe is ready, then write what the pipes take,
        read the answers in them and hand on what waits; False if none was ready."""
        alive = self._alive()
        if not alive:
            return True
        readers = {h.recv_fd: h for h in alive}
        writers = {h.send_fd: h for h in alive if h.out}
        readable, writable, _ = select.select(list(readers), list(writers), [], timeout)
        for fd in writable:
            try:
                writers[fd].write()
            except BrokenPipeError:
                self._lost(writers[fd])
        for fd in readable:
            helper = readers[fd]
            if helper.closed:  # lost as it was written to
                continue
            for key, answer in helper.read():
                if key in self.where:  # (not discarded)
                    self.answers[key] = answer
            if not helper.alive:
                self._lost(helper)
        self._dispatch()
        return bool(readable or writable)

    def _lost(self, helper: _Helper) -> None:
        """*helper* died: its pages in hand are analysed in the scheduler's thread."""
        if helper.closed:
            return
        self.stats["analysis/helpers_lost"] += 1
        helper.keys.clear()
        helper.out.clear()
        helper.close(0.0)

    def close(self) -> None:
        """End the helpers (their pages in hand are dropped), all at once, then reap them."""
        for helper in self.helpers:
            helper.end()
        for helper in self.helpers:
            helper.reap(5.0)
        self.sent.clear()
        self.queued.clear()
        self.where.clear()
        self.answers.clear()


def _read_exactly(fd: int, n: int) -> bytes | None:
    """*n* bytes from *fd* (blocking), None at its end."""
    parts, left = [], n
    while left:
        data = os.read(fd, min(left, PIPE_BYTES))
        if not data:
            return None
        parts.append(data)
        left -= len(data)
    return b"".join(parts)


def _write_all(fd: int, *parts: bytes) -> bool:
    """Write *parts* to *fd* (blocking); False if its reader is gone."""
    try:
        for part in parts:
            out = memoryview(part)
            while out:
                out = out[os.write(fd, out):]
    except BrokenPipeError:
        return False
    return True


def main(argv: list[str]) -> None:
    """A helper: analyse the pages read from stdin, answer on stdout, until stdin ends.
    *argv*: the wire format its rank speaks (a helper of other code stops at once), then
    the ``--url-strip-params`` regex."""
    formats, strip = argv[:-1], argv[-1] if argv else ""
    if formats != [_REQUEST.format, _ANSWER.format]:
        sys.exit(f"bspcrawl.analysis: the rank speaks {formats}, this helper "
                 f"{[_REQUEST.format, _ANSWER.format]} (bspcrawl changed under the crawl?)")
    for sig in (signal.SIGINT, signal.SIGTERM):  # the rank decides when to stop (a
        signal.signal(sig, signal.SIG_IGN)          # Ctrl-C or a kill reaches us too)
    recv_fd, send_fd = 0, os.dup(1)
    os.dup2(2, 1)  # a stray print goes to stderr, not into the answers
    cache, keys = LinkCache(), LinkKeys(strip)
    if not _write_all(send_fd, _ANSWER.pack(READY, 0)):
        return
    while requests := _requests(recv_fd):
        answers = analyse_many([page for _, page in requests], cache, keys)
        for (key, _), answer in zip(requests, answers, strict=True):
            payload = encode(answer)  # (None if it raised: the scheduler's thread
            if not _write_all(send_fd, _ANSWER.pack(key, len(payload)), payload):  # repeats
                return  # it and fails)


def _requests(fd: int) -> list[tuple[int, tuple[bytes, str, str | None, bool]]]:
    """The next request from *fd* (waiting for it), and those after it that have begun to
    arrive, up to ``BATCH`` (key, (body, URL, charset, index) each); [] at its end, or if
    it ends amid a request."""
    requests: list[tuple[int, tuple[bytes, str, str | None, bool]]] = []
    while len(requests) < BATCH and (
            not requests or select.select([fd], [], [], 0)[0]):
        head = _read_exactly(fd, _REQUEST.size)
        if head is None:
            return []
        key, n_url, n_charset, n_body, index = _REQUEST.unpack(head)
        data = _read_exactly(fd, n_url + n_charset)
        body = _read_exactly(fd, n_body)  # (apart: not copied out of the rest)
        if data is None or body is None:  # the rank closed the pipe amid a page
            return []
        requests.append((key, (body, data[:n_url].decode(), data[n_url:].decode() or None,
                               bool(index))))
    return requests


if __name__ == "__main__":  # the module's own name, so answers unpickle in the rank
    from bspcrawl.analysis import main as helper_main

    helper_main(sys.argv[1:])
    sys.stdout.flush()  # (a stray print, which goes to stderr: os._exit flushes nothing)
    sys.stderr.flush()
    os._exit(0)  # (no teardown of its caches and modules: ~30 ms a helper at a crawl's end)
