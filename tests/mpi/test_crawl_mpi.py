"""The crawl loop in-process on MPI communicators (run under mpiexec with --with-mpi).

Passes at any rank count: on COMM_WORLD and a Dup() of it the ranks crawl together; on
COMM_SELF every rank crawls the whole web alone. Either way the pages fetched must be
exactly the local web's ground truth, also when every waiting URL goes to disk ("spill":
COMM_WORLD with --memory-budget 0).
"""

import contextlib
import tempfile
from pathlib import Path

import pytest
from mpi4py import MPI

from bspcrawl.bsp import barrier
from bspcrawl.index.inspect import urls
from bspcrawl.index.output import join, prepare
from bspcrawl.settings import Settings
from bspcrawl.superstep import Crawl
from bspcrawl.testweb import Web
from tests.crawling import serve


@pytest.mark.mpi(min_size=1)
@pytest.mark.parametrize("which", ["world", "dup", "self", "spill"])
def test_crawl_on_a_communicator_fetches_exactly_the_truth(which):
    world = MPI.COMM_WORLD
    comm = {"world": world, "self": MPI.COMM_SELF}.get(which) or world.Dup()
    with contextlib.ExitStack() as stack:
        web = out = None
        if world.rank == 0:
            web = stack.enter_context(serve(pages=400, hosts=12))
            out = stack.enter_context(tempfile.TemporaryDirectory())
        config, out = world.bcast((web and web.config, out))
        web = Web(config)
        if which == "self":
            out = f"{out}/rank{world.rank}"
        out = Path(out)
        if comm.rank == 0:
            prepare(out, overwrite=False)
        barrier(comm)
        settings = Settings(politeness_min_host_delay=0.0, politeness_response_factor=0.0,
                            fetch_workers=4, fetch_allow_net=["127.0.0.0/8"],
                            queue_memory_budget=0 if which == "spill" else 64 << 20
                            ).validate()
        outcome = Crawl(comm, settings, out, web.seeds()).run()
        barrier(comm)
        if comm.rank == 0:
            join(out, comm.size, {"supersteps": outcome.supersteps, "urls_seen": outcome.seen,
                                  "wall_s": outcome.wall_s, "stopped": outcome.stopped})
            got = [u for u, _ in urls(out)]
            assert sorted(got) == web.truth(web.seeds())
            assert outcome.stopped == "done"
        barrier(world)  # the server outlives every rank's crawl
    if which == "dup":
        comm.Free()
