"""A crawl of the hostile web (bspcrawl.testweb.hostile) on COMM_WORLD keeps its properties
(run under mpiexec with --with-mpi; passes at any rank count).

For a few seeds: rank 0 serves the hostile web in a child process with a request log,
every rank crawls it, and the crawl must end by itself (``stopped == "done"``) with nothing
for :func:`~bspcrawl.testweb.hostile.audit` to report: no URL requested twice without an
answer that called for it, never two requests in flight to one host, every ``*.h5``
readable, every WARC file passing ``warcio check``, no fetcher thread replaced. Longer
campaigns: ``scripts/fuzz_campaign.py`` (docs/testing.md).
"""

import contextlib
import tempfile
from pathlib import Path

import pytest
from mpi4py import MPI

from bspcrawl.bsp import barrier
from bspcrawl.index.output import join, prepare
from bspcrawl.settings import Settings
from bspcrawl.superstep import Crawl
from bspcrawl.testweb.hostile import HostileConfig, audit, responses, serving

# the fuzz settings of scripts/fuzz_campaign.py: unpaced, short timeouts and rests (and
# Crawl-delays of up to 1e309 capped), so that a web that stalls and throttles is crawled
# in seconds
SETTINGS = {"politeness_min_host_delay": 0.0, "politeness_response_factor": 0.0,
            "fetch_allow_net": ["127.0.0.0/8"], "fetch_timeout": 5.0,
            "politeness_max_backoff": 2.0, "window_straggler_timeout": 3.0,
            "politeness_max_crawl_delay": 0.25}


@pytest.mark.mpi(min_size=1)
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_crawl_of_a_hostile_web_ends_and_keeps_its_properties(seed):
    world = MPI.COMM_WORLD
    with contextlib.ExitStack() as stack:
        config = tmp = None
        if world.rank == 0:
            tmp = Path(stack.enter_context(tempfile.TemporaryDirectory()))
            config = HostileConfig(seed=seed, hosts=4, pages=12, refused=4).on_free_port()
        config, tmp = world.bcast((config, tmp))
        out, log = tmp / "out", tmp / "requests.tsv"
        with contextlib.ExitStack() as server:
            if world.rank == 0:
                server.enter_context(serving(config, log))
                prepare(out, overwrite=False)
            barrier(world)
            outcome = Crawl(world, Settings(**SETTINGS).validate(), out, config.seeds()).run()
            barrier(world)
            if world.rank == 0:
                join(out, world.size, {"supersteps": outcome.supersteps,
                                       "urls_seen": outcome.seen, "wall_s": outcome.wall_s,
                                       "stopped": outcome.stopped})
        # the server has stopped: its log is whole
        problems = audit(log, out) if world.rank == 0 else None
        served = responses(log) if world.rank == 0 else 0
        problems, served = world.bcast((problems, served))
        barrier(world)  # the temporary directory outlives every rank's look at it
    assert outcome.stopped == "done"
    assert served > 20
    assert problems == []
