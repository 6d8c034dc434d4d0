"""Helpers for end-to-end tests: a testweb server in its own process, crawls via the CLI.

The server runs as a separate process (``bspcrawl testweb serve``) so that it never
shares a GIL with a crawling rank.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

from bspcrawl.testweb import Web, WebConfig, config_argv, free_port

PY = sys.executable
MPIEXEC = str(Path(PY).parent / "mpiexec")
UNPACED = ["--min-host-delay", "0", "--response-factor", "0"]  # reproducible scheduling
ENV = {**os.environ, "MPIEXEC_TIMEOUT": "300", "PYTHONUNBUFFERED": "1"}


@contextlib.contextmanager
def serve(pages: int, hosts: int, seed: int = 1, latency: str | None = None,
          log: Path | None = None, port: int | None = None, **options: object
          ) -> Iterator[Web]:
    """Serve a testweb (``options``: more WebConfig fields) in a child process for the
    duration of the block."""
    make = WebConfig.adversarial if options.pop("adversarial", False) else WebConfig
    config = make(seed=seed, pages=pages, hosts=hosts, port=port or free_port(hosts),
                  **options)
    cmd = [PY, "-m", "bspcrawl", "testweb", "serve", *config_argv(config)]
    if latency:
        cmd += ["--latency", latency]
    if log:
        cmd += ["--log", str(log)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        assert "127.1." in line, f"testweb did not start: {line!r}"
        yield Web(config)
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def crawl(ranks: int, seeds: list[str], out: Path, *options: str,
          env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """Run ``bspcrawl run`` on ``ranks`` ranks (P = 1 without mpiexec) into ``out``."""
    seed_file = out.parent / f"{out.name}-seeds.txt"
    seed_file.write_text("\n".join(seeds) + "\n")
    run = [PY, "-m", "bspcrawl", "run", "--seeds", str(seed_file), "--out", str(out),
           *UNPACED, "--allow-net", "127.0.0.0/8", "--progress", "none", *options]
    if ranks > 1:
        run = [MPIEXEC, "-n", str(ranks), PY, "-m", "mpi4py", *run[1:]]
    return subprocess.run(run, env=env or ENV, capture_output=True, text=True, timeout=300)


def fetched(out: Path) -> list[tuple[str, int]]:
    """``bspcrawl inspect DIR --urls`` as (url, status) pairs."""
    res = subprocess.run([PY, "-m", "bspcrawl", "inspect", str(out), "--urls"],
                         capture_output=True, text=True, check=True)
    return [(u, int(s)) for u, s in (line.split("\t") for line in res.stdout.splitlines())]


def requests_by_host(log: Path) -> dict[str, list[tuple[float, float, str]]]:
    """The server's log: (start, end, target) of every request, per host."""
    hosts: dict[str, list[tuple[float, float, str]]] = defaultdict(list)
    for line in log.read_text().splitlines():
        netloc, target, start, end, _status = line.split("\t")
        hosts[netloc].append((float(start), float(end), target))
    return hosts
