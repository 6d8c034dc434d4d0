"""Searching under MPI (run under mpiexec with --with-mpi): each rank searches its share of
the rank files, and the merged results equal one process's search of them all."""

import tempfile
from pathlib import Path

import pytest
from mpi4py import MPI

from bspcrawl.bsp import barrier
from bspcrawl.search import Searcher, open_shards, search
from tests.test_search import PAGES, build


def three_rank_files(out: Path) -> None:
    """A crawl of three rank files (the tiny corpus, split), joined."""
    for r in range(3):
        part = out / f"part{r}"
        build(part, PAGES[r::3] + [(f"http://b{r}.test/x", "apple tart", "apple")])
        (part / "rank-0000.h5").rename(out / f"rank-{r:04d}.h5")
    from bspcrawl.index.output import join

    join(out, 3, {"supersteps": 1, "urls_seen": 7, "wall_s": 1.0, "stopped": "done",
                  "seeds": ""})


@pytest.mark.mpi(min_size=1)
@pytest.mark.parametrize("plain", [False, True])
def test_each_rank_searches_its_files_and_the_merge_is_the_whole_search(plain):
    comm = MPI.COMM_WORLD
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(comm.bcast(tmp if comm.rank == 0 else None))
        if comm.rank == 0:
            three_rank_files(out)
        barrier(comm)
        mine = Searcher(open_shards(out, comm.rank, comm.size), plain=plain, comm=comm)
        alone = Searcher(open_shards(out), plain=plain)
        assert mine.totals == alone.totals
        for query in ("apple", "apple pie", "banana cherry date", "nothing here"):
            together = search(mine, out, query, k=3)
            assert together == search(alone, out, query, k=3)
            assert comm.allgather(together) == [together] * comm.size
        barrier(comm)
