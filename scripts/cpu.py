"""CPU time of a benchmark's child processes (crawlers, under mpiexec or not)."""

from __future__ import annotations

import resource


def children_cpu() -> float:
    """User + sys CPU-seconds of all waited-for child processes so far."""
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime
