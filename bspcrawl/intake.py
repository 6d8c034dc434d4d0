"""The intake: which URLs a rank accepts into its frontier, and the record of those it did.

A URL arriving is accepted once: the seen set (``seen.py``) holds the fingerprint of every
URL accepted, and the journal (``journal.py``) appends it, so that checkpoints write the
seen set whole only now and then. Limits apply when a URL arrives, so that they bound
memory too: its length and the blacklist, its path shape (``urls.PathTraps``), depth,
redirect hops, and its host's and registered domain's budgets (``budgets.py``). Revisits
and retries are not arrivals. Fingerprints are taken with tracking and session parameters
cut (``url_strip_params``), so those do not make a URL new.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bspcrawl import journal
from bspcrawl.backlog import record
from bspcrawl.budgets import Budgets, BudgetsState
from bspcrawl.counters import Stats
from bspcrawl.messages import Link
from bspcrawl.seen import SeenSet
from bspcrawl.settings import Settings
from bspcrawl.urls import PathTraps, key_fingerprints, strip_pattern

COMPACT = 0.5  # a checkpoint is full once the URLs seen since the last full one are more
# than this fraction of those seen then (a resume reads the base and at most this much more)


@dataclass
class IntakeState:
    """The intake in a checkpoint: the seen set's sorted keys (None in an incremental
    checkpoint: its base's), the journal's marks from the base to the checkpoint, the
    budgets."""

    seen: np.ndarray | None
    journal_base: np.ndarray  # int64 (segment, offset)
    journal_end: np.ndarray
    budgets: BudgetsState


class Intake:
    """The filters, budgets, seen set and journal of a rank.

    API: :meth:`accept` links, :meth:`fingerprints` of URLs; :meth:`state` and
    :meth:`restore` for checkpoints. Counters: ``frontier/new``, ``frontier/duplicates``
    and one per filter (``frontier/filtered``, ``trap_path``, ``too_deep``,
    ``too_many_hops``, ``host_cap``, ``domain_cap``).
    """

    def __init__(self, settings: Settings, stats: Stats, ranks: int = 1,
                 seen_dir: Path | None = None, journal_dir: Path | None = None) -> None:
        self.settings, self.stats = settings, stats
        self.seen = SeenSet(settings.queue_seen_memory, seen_dir)
        self.journal = journal.Journal(journal_dir)
        self.budgets = Budgets(settings.crawl_max_host_pages, settings.crawl_max_domain_pages,
                               ranks)
        self.base: journal.Mark | None = None  # the journal's end at the last full state
        self.base_len = 0  # URLs seen then
        self.strip = strip_pattern(settings.url_strip_params)
        self.traps = PathTraps(settings.url_max_segments, settings.url_max_repeats)
        self.blacklist = (re.compile("|".join(f"(?:{b})" for b in settings.url_blacklist))
                          if settings.url_blacklist else None)

    def fingerprints(self, urls: list[str]) -> np.ndarray:
        """Seen-set keys (int64) of canonical URLs: tracking and session parameters cut."""
        return key_fingerprints(urls, self.strip)

    def accept(self, links: list[Link]) -> dict[float, list[bytes]]:
        """The records (``backlog.record``) of the links accepted, by priority
        (``-depth``), in their order; they are seen from now on.

        Links must be canonical (every URL that travels comes from ``urls.resolve`` or
        ``urls.parse``), so they are fingerprinted as they are.
        """
        s, stats = self.settings, self.stats
        fps = self.fingerprints([x.url for x in links])
        known = self.seen.contains_batch(fps)  # first: most links are known, and known
        stats["frontier/duplicates"] += int(known.sum())  # ones passed the filters
        unseen = np.flatnonzero(~known).tolist()
        taken: dict[int, None] = {}  # accepted from this batch: a repeat is a duplicate
        records: dict[float, list[bytes]] = {}
        for i, fp in zip(unseen, fps[unseen].tolist(), strict=True):
            link = links[i]
            if fp in taken:
                stats["frontier/duplicates"] += 1
            elif len(link.url) > s.url_max_length or (
                    self.blacklist and self.blacklist.search(link.url)):
                stats["frontier/filtered"] += 1
            elif self.traps.caught(link.url):
                stats["frontier/trap_path"] += 1
            elif s.crawl_max_depth and link.depth > s.crawl_max_depth:
                stats["frontier/too_deep"] += 1
            elif link.hops > s.fetch_max_redirects:
                stats["frontier/too_many_hops"] += 1
            elif spent := self.budgets.take(link.url):
                stats[spent] += 1
            else:
                taken[fp] = None  # (its anchor text was credited: not kept while queued)
                records.setdefault(-float(link.depth), []).append(record(fp, link))
        if taken:
            ids = list(taken)
            self.seen.add_batch(ids)
            self.journal.append(np.array(ids, np.int64))
        stats["frontier/new"] += len(taken)
        return records

    def state(self, full: bool | None) -> IntakeState:
        """The intake as a checkpoint holds it; the seen set is written whole only if
        ``full``, or with ``full=None`` when the URLs seen since the last full state are
        more than :data:`COMPACT` of those seen then (else the journal since holds what it
        gained). Without a full state before, it is full."""
        end = self.journal.mark()
        if full is None:
            full = len(self.seen) - self.base_len > COMPACT * self.base_len
        if full or self.base is None:
            full, self.base, self.base_len = True, end, len(self.seen)
        return IntakeState(self.seen.to_array() if full else None,
                           np.array(self.base, np.int64), np.array(end, np.int64),
                           self.budgets.state())

    def restore(self, states: list[IntakeState], dirs: list[Path],
                owns: Callable[[str], bool]) -> None:
        """Add checkpoint states (one per rank of the crawl that wrote them, whose journals
        are in ``dirs``); the seen set is their union: fingerprints carry no host, and a
        URL is only ever checked by its owner, so foreign ones cost memory only. The
        journal goes on in new segments; the next state is a full one."""
        self.journal.start_after_existing()
        for st, where in zip(states, dirs, strict=True):
            assert st.seen is not None, "an incremental state without its base's seen set"
            keys = np.concatenate([st.seen, journal.read(
                where, tuple(st.journal_base.tolist()), tuple(st.journal_end.tolist()))])
            keys.sort(kind="stable")  # sorted, then unsorted keys: two runs to merge
            self.seen.add_batch(keys)
        self.budgets.restore([st.budgets for st in states], owns)
