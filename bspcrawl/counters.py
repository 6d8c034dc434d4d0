"""The crawl's counters: one table, from which everything that shows a counter is derived.

Counters are slash-named, as Scrapy's stats, and bumped where the event happens in one
:class:`Stats` per rank. :data:`COUNTERS` is the only list of them; from it come the sync
vector (the ``synced`` ones, summed over the ranks so every rank decides alike), the
``/stats`` dtype (one column per counter, one row per superstep per rank), ``bspcrawl
inspect``'s counters (:func:`summarise`) and the docs' table (:func:`markdown`).

Kinds: a ``total`` counts since the crawl started (kept in checkpoints); a ``step`` within
one superstep; a ``gauge`` is a current value. ``seconds`` counters are float64.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np

TOTAL, STEP, GAUGE = "total", "step", "gauge"


@dataclass(frozen=True, slots=True)
class Counter:
    """One counter: its slash name, kind, meaning, and whether it is summed at sync."""

    name: str
    kind: str
    doc: str
    synced: bool = False
    seconds: bool = False


COUNTERS: tuple[Counter, ...] = (
    Counter("time/elapsed", GAUGE, "seconds since this rank started (or resumed) the crawl",
            seconds=True),
    Counter("time/wait", STEP, "seconds the superstep waited: for the window's oldest "
            "schedule, for a result while every host rested, and in collectives",
            seconds=True),
    Counter("time/helpers", STEP, "seconds the superstep's commits waited for the parse "
            "workers' analyses (--parse-processes)", seconds=True),
    Counter("pages/committed", TOTAL, "pages committed to the index (doc ids given)",
            synced=True),
    Counter("pages/ok", TOTAL, "committed pages answered 2xx, 304 or still fresh", synced=True),
    Counter("pages/errors", TOTAL, "committed pages whose transfer failed (no HTTP status)",
            synced=True),
    Counter("pages/bytes", TOTAL, "body bytes received", synced=True),
    Counter("frontier/size", GAUGE, "URLs waiting: CBT, pending queue Q and revisits",
            synced=True),
    Counter("frontier/seen", GAUGE, "URL fingerprints in the seen set", synced=True),
    Counter("frontier/new", STEP, "URLs received that were new (inserted in the CBT)"),
    Counter("frontier/duplicates", TOTAL, "URLs received that were seen already"),
    Counter("frontier/robots_denied", TOTAL, "URLs robots.txt disallows"),
    Counter("frontier/filtered", TOTAL, "URLs too long or matching --url-blacklist"),
    Counter("frontier/trap_path", TOTAL, "URLs whose path has a trap's shape "
            "(--url-max-segments, --url-max-repeats)"),
    Counter("commit/outlinks_cut", TOTAL, "links past --crawl-max-outlinks of their page"),
    Counter("commit/hosts_cut", TOTAL, "links to hosts past --crawl-max-page-hosts of "
            "their page"),
    Counter("commit/links_known", TOTAL, "links not sent: this rank sent them already, "
            "at that depth or less"),
    Counter("analysis/ahead", TOTAL, "pages analysed by a parse worker before their "
            "commit (--parse-processes)"),
    Counter("analysis/helpers_lost", TOTAL, "1: a parse worker died, the rank's pool was "
            "shut down (the rank analysed its pages, and all later ones)"),
    Counter("frontier/host_cap", TOTAL, "URLs arrived past --max-host-pages of their host"),
    Counter("frontier/domain_cap", TOTAL, "URLs arrived past --max-domain-pages of their "
            "registered domain"),
    Counter("frontier/too_deep", TOTAL, "URLs deeper than --max-depth"),
    Counter("frontier/too_many_hops", TOTAL, "redirects past --fetch-max-redirects hops"),
    Counter("fetch/retried", TOTAL, "URLs fetched again after a 429 or 503"),
    Counter("robotstxt/fetched", TOTAL, "robots.txt answers handled (failures included)"),
    Counter("robotstxt/errors", TOTAL, "robots.txt fetches answered 5xx or not at all"),
    Counter("robotstxt/too_costly", TOTAL, "robots.txt files of more rules than are checked "
            "per URL (the host is disallowed)"),
    Counter("window/in_flight", GAUGE, "jobs in outstanding schedules not yet answered"),
    Counter("window/unreleased", GAUGE, "page jobs scheduled and not committed yet "
            "(deferred ones too)", synced=True),
    Counter("window/deferred", TOTAL, "schedules' jobs given up waiting for "
            "(--window-straggler-timeout)"),
    Counter("window/late", TOTAL, "deferred jobs' results committed when they came"),
    Counter("window/rescheduled", TOTAL, "jobs handed to a new fetcher thread"),
    Counter("fetcher/replaced", TOTAL, "fetcher threads replaced (died or hung)"),
    Counter("scheduler/idle", STEP, "1: every host with URLs rested, no job to give (the "
            "superstep waited for a result or a rest's end)", synced=True),
    Counter("exchange/urls_in", STEP, "links received from the ranks (this one included)"),
    Counter("exchange/urls_found", STEP, "links found by the pages committed"),
    Counter("exchange/urls_remote", STEP, "links sent to other ranks"),
    Counter("exchange/domain_full", TOTAL, "links to hosts past --max-domain-hosts of their "
            "registered domain"),
    Counter("exchange/undelivered", STEP, "links sent or held back (their host not yet "
            "dealt), not received by any rank yet", synced=True),
    Counter("stop/requested", GAUGE, "1: a signal or the stop file asked to stop",
            synced=True),
    Counter("stop/timeout", GAUGE, "1: --max-seconds has passed (rank 0)", synced=True),
)
BY_NAME = {c.name: c for c in COUNTERS}
SYNCED = tuple(c.name for c in COUNTERS if c.synced)
STATS_DTYPE = np.dtype([("rank", np.int32), ("superstep", np.int64)] + [
    (c.name, np.float64 if c.seconds else np.int64) for c in COUNTERS])


class Stats(dict[str, float]):
    """One rank's counters, every name of :data:`COUNTERS` present (zero at first): a
    plain dict, in which a name not in the table raises KeyError when bumped or at the
    next :meth:`row`, so no counter exists without its documentation."""

    def __init__(self) -> None:
        super().__init__((c.name, 0.0 if c.seconds else 0) for c in COUNTERS)

    def vector(self) -> np.ndarray:
        """The synced counters, in :data:`SYNCED` order (int64), for the sync."""
        return np.array([self[name] for name in SYNCED], dtype=np.int64)

    def row(self, rank: int, superstep: int) -> np.ndarray:
        """One ``/stats`` row of every counter."""
        row = np.zeros((), dtype=STATS_DTYPE)
        row["rank"], row["superstep"] = rank, superstep
        for name, value in self.items():
            row[name] = value
        return row

    def start_step(self) -> None:
        """Zero the ``step`` counters for a new superstep."""
        for c in COUNTERS:
            if c.kind == STEP:
                self[c.name] = 0.0 if c.seconds else 0

    def totals(self) -> dict[str, float]:
        """The ``total`` counters, for a checkpoint."""
        return {c.name: self[c.name] for c in COUNTERS if c.kind == TOTAL}

    def restore(self, totals: Mapping[str, float]) -> None:
        """Take back :meth:`totals` (names not in the table are ignored)."""
        for name, value in totals.items():
            if name in BY_NAME and BY_NAME[name].kind == TOTAL:
                self[name] = value


def synced(vector: Iterable[int]) -> dict[str, int]:
    """A summed sync vector as a dict by counter name."""
    return dict(zip(SYNCED, (int(v) for v in vector), strict=True))


def summarise(stats: np.ndarray, ranks: int) -> dict[str, float]:
    """The crawl's counters from its ``/stats`` rows: totals and gauges from each rank's
    last row, summed over the ranks (a clock: the largest); step counters summed over
    every row."""
    out: dict[str, float] = {}
    last = [stats[stats["rank"] == r][-1:] for r in range(ranks)]
    for c in COUNTERS:
        if c.kind == STEP:
            value = stats[c.name].sum() if len(stats) else 0
        elif c.seconds:  # a clock: the longest rank's
            value = max((x[c.name].max() for x in last if len(x)), default=0)
        else:
            value = sum(x[c.name].sum() for x in last)
        out[c.name] = round(float(value), 3) if c.seconds else int(value)
    return out


def markdown() -> str:
    """The documentation's table of counters (``/stats`` columns), one row per counter."""
    rows = ["| column | dtype | kind | meaning |", "| --- | --- | --- | --- |",
            "| `rank` | int32 | | the rank that wrote the row |",
            "| `superstep` | int64 | | the superstep it ended |"]
    rows += [f"| `{c.name}` | {'float64' if c.seconds else 'int64'} | {c.kind}"
             f"{', synced' if c.synced else ''} | {c.doc} |" for c in COUNTERS]
    return "\n".join(rows) + "\n"
