"""The crawl loop in-process on MPI communicators (run under mpiexec with --with-mpi).

Passes at any rank count: on COMM_WORLD and a Dup() of it the ranks crawl together; on
COMM_SELF every rank crawls the whole web alone. Either way the pages fetched must be
exactly the local web's ground truth, also when every waiting URL goes to disk ("spill":
COMM_WORLD with --memory-budget 0) and when helper processes parse the pages ("parse":
COMM_WORLD with --parse-processes 1: each rank starts a worker process under mpiexec).
"""

from pathlib import Path

import pytest
from mpi4py import MPI

from bspcrawl.index.inspect import urls
from tests.crawling import crawl_in_process, served_to_ranks


@pytest.mark.mpi(min_size=1)
@pytest.mark.parametrize("which", ["world", "dup", "self", "spill", "parse"])
def test_crawl_on_a_communicator_fetches_exactly_the_truth(which):
    world = MPI.COMM_WORLD
    comm = {"world": world, "self": MPI.COMM_SELF}.get(which) or world.Dup()
    with served_to_ranks(world, pages=400, hosts=12) as (web, out):
        out = Path(f"{out}/rank{world.rank}" if which == "self" else out)
        outcome = crawl_in_process(comm, out, web.seeds(),
                                   queue_memory_budget=0 if which == "spill" else 64 << 20,
                                   index_parse_processes=int(which == "parse"))
        if comm.rank == 0:
            got = [u for u, _ in urls(out)]
            assert sorted(got) == web.truth(web.seeds())
            assert outcome.stopped == "done"
    if which == "dup":
        comm.Free()
