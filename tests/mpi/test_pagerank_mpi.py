"""PageRank on P ranks (run under mpiexec with --with-mpi): the same vector as on one rank
and as the exact scipy solution, to 1e-9, at any P, a P above the number of pages too."""

import tempfile
from pathlib import Path

import numpy as np
import pytest
from mpi4py import MPI

from bspcrawl import pagerank
from tests.graphs import reference, write_crawl


def whole(comm, out):
    sizes = pagerank.rank_files(out)
    result = pagerank.pagerank(comm, sizes,
                               lambda lo, hi: pagerank.read_graph(out, sizes, lo, hi))
    x = pagerank.gather(comm, result.x, pagerank.blocks(sum(sizes), comm.Get_size()))
    return comm.bcast(x), result


@pytest.mark.mpi(min_size=1)
@pytest.mark.parametrize("sizes", [[120, 0, 80, 100], [1, 0, 2]])
def test_the_same_vector_on_every_number_of_ranks(sizes):
    world = MPI.COMM_WORLD
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(world.bcast(tmp))
        if world.rank == 0:
            write_crawl(out, sizes, seed=7)
        world.Barrier()
        on_p, result = whole(world, out)
        on_1, alone = whole(MPI.COMM_SELF, out)
        exact = reference(out)
        world.Barrier()
    assert result.pages == alone.pages == sum(sizes)
    assert result.edges == alone.edges and result.dangling == alone.dangling
    assert np.abs(on_p - on_1).max() < 1e-9
    assert np.abs(on_p - exact).max() < 1e-9
