"""Helpers for end-to-end tests: a testweb server in its own process, crawls via the CLI,
and crawls in this process on an MPI communicator (the MPI tests).

The server runs as a separate process (``bspcrawl testweb serve``) so that it never
shares a GIL with a crawling rank.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import tempfile
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


@contextlib.contextmanager
def served_to_ranks(world, pages: int, hosts: int) -> Iterator[tuple[Web, str]]:
    """Under MPI: world rank 0 serves a testweb and makes a temporary directory; every rank
    gets the web and the directory's path. The server outlives every rank's use of it (a
    barrier of ``world`` ends the block)."""
    from bspcrawl.bsp import barrier

    with contextlib.ExitStack() as stack:
        web = out = None
        if world.rank == 0:
            web = stack.enter_context(serve(pages=pages, hosts=hosts))
            out = stack.enter_context(tempfile.TemporaryDirectory())
        config, out = world.bcast((web and web.config, out))
        yield Web(config), out
        barrier(world)


def crawl_in_process(comm, out: Path, seeds: list[str], **settings: object):
    """Crawl ``seeds`` into the new output directory ``out`` in this process on ``comm``
    (unpaced, 4 fetch workers, loopback allowed; ``settings``: more Settings fields); rank
    0 joins the rank files. Returns the crawl's outcome."""
    from bspcrawl.bsp import barrier
    from bspcrawl.index.output import join, prepare
    from bspcrawl.settings import Settings
    from bspcrawl.superstep import Crawl

    if comm.rank == 0:
        prepare(out, overwrite=False)
    barrier(comm)
    outcome = Crawl(comm, Settings(
        politeness_min_host_delay=0.0, politeness_response_factor=0.0, fetch_workers=4,
        fetch_allow_net=["127.0.0.0/8"], **settings).validate(), out, seeds).run()
    barrier(comm)
    if comm.rank == 0:
        join(out, comm.size, {"supersteps": outcome.supersteps, "urls_seen": outcome.seen,
                              "wall_s": outcome.wall_s, "stopped": outcome.stopped})
    return outcome


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
