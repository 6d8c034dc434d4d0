"""The intake: which URLs a rank accepts into its frontier, once each.

The seen set holds every accepted URL's fingerprint (tracking and session parameters cut),
and the journal appends it, so checkpoints write the seen set whole only now and then.
Limits apply on arrival, so they bound memory too: length, blacklist, path traps, depth,
redirect hops, host and domain budgets. Revisits and retries are not arrivals.
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

COMPACT = 0.5  # a checkpoint is full past this fraction of URLs seen since the last full


@dataclass
class IntakeState:
    """The intake in a checkpoint: the seen set's sorted keys (None if incremental), the
    journal's marks from the base on, the budgets."""

    seen: np.ndarray | None
    journal_base: np.ndarray  # int64 (segment, offset)
    journal_end: np.ndarray
    budgets: BudgetsState


class Intake:
    """The filters, budgets, seen set and journal of a rank; :meth:`accept` links."""

    def __init__(self, settings: Settings, stats: Stats, ranks: int = 1,
                 seen_dir: Path | None = None, journal_dir: Path | None = None) -> None:
        self.settings, self.stats = settings, stats
        self.seen = SeenSet(settings.queue_seen_memory, seen_dir)
        self.journal = journal.Journal(journal_dir)
        self.budgets = Budgets(settings.crawl_max_host_pages, settings.crawl_max_domain_pages,
                               ranks)
        self.base: journal.Mark | None = None  # the journal's end at the last full state
        self.base_len = 0
        self.strip = strip_pattern(settings.url_strip_params)
        self.traps = PathTraps(settings.url_max_segments, settings.url_max_repeats)
        self.blacklist = (re.compile("|".join(f"(?:{b})" for b in settings.url_blacklist))
                          if settings.url_blacklist else None)

    def fingerprints(self, urls: list[str]) -> np.ndarray:
        """Seen-set keys of canonical URLs."""
        return key_fingerprints(urls, self.strip)

    def accept(self, links: list[Link]) -> dict[float, list[bytes]]:
        """The records of the links accepted, by priority (``-depth``), in order; links are
        canonical (``urls.resolve``), so fingerprinted as they are."""
        s, stats = self.settings, self.stats
        fps = self.fingerprints([x.url for x in links])
        known = self.seen.contains_batch(fps)  # first: most links are known
        stats["frontier/duplicates"] += int(known.sum())
        unseen = np.flatnonzero(~known).tolist()
        taken: dict[int, None] = {}
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
                taken[fp] = None
                records.setdefault(-float(link.depth), []).append(record(fp, link))
        if taken:
            ids = list(taken)
            self.seen.add_batch(ids)
            self.journal.append(np.array(ids, np.int64))
        stats["frontier/new"] += len(taken)
        return records

    def state(self, full: bool | None) -> IntakeState:
        """The intake for a checkpoint, with the seen set if ``full``, or for ``None`` past
        :data:`COMPACT` (else the journal holds what it gained), or if none was before."""
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
        """Add full states, one per rank of the crawl that wrote them; the seen set is their
        union (fingerprints carry no host; foreign ones cost memory only)."""
        self.journal.start_after_existing()
        for st, where in zip(states, dirs, strict=True):
            assert st.seen is not None, "an incremental state without its base's seen set"
            keys = np.concatenate([st.seen, journal.read(
                where, tuple(st.journal_base.tolist()), tuple(st.journal_end.tolist()))])
            keys.sort(kind="stable")  # two runs to merge
            self.seen.add_batch(keys)
        self.budgets.restore([st.budgets for st in states], owns)
