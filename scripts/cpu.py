"""CPU time of a benchmark's processes: its child processes (crawlers, under mpiexec or
not) and a running server."""

from __future__ import annotations

import os
import resource
import subprocess
import time
from pathlib import Path


def children_cpu() -> float:
    """User + sys CPU-seconds of all waited-for child processes so far."""
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def process_cpu(pid: int) -> float:
    """User + sys CPU-seconds of a running process (from /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def family_cpu(pid: int) -> float:
    """User + sys CPU-seconds of a running process and its children (a server's master and
    workers), from /proc."""
    total = process_cpu(pid)
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                if int((proc / "stat").read_text().rsplit(")", 1)[1].split()[1]) == pid:
                    total += process_cpu(int(proc.name))
            except (OSError, IndexError, ValueError):
                continue  # gone meanwhile
    return total


def timed(argv: list[str], cwd: Path) -> tuple[subprocess.CompletedProcess, float, float]:
    """Runs ``argv`` to its end (output captured); returns it, its wall time and the CPU of
    all its processes (s)."""
    cpu0, t0 = children_cpu(), time.monotonic()
    done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True)
    return done, time.monotonic() - t0, children_cpu() - cpu0
