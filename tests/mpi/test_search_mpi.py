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


@pytest.mark.mpi(min_size=2)
def test_anchor_text_from_other_ranks_is_credited_to_the_target():
    """A crawl on every rank: a page's anchor text comes with the links from pages that
    other ranks fetched (hosts are dealt to ranks) and is credited at the join."""
    import h5py

    from tests.crawling import crawl_in_process, served_to_ranks

    comm = MPI.COMM_WORLD
    with served_to_ranks(comm, pages=300, hosts=8) as (web, out):
        out = Path(out)
        crawl_in_process(comm, out, web.seeds())
        if comm.rank == 0:
            # the anchor words each rank's pages give each target (from their stored bodies)
            from bspcrawl.index.inspect import body, urls, versions
            from bspcrawl.index.terms import count_terms
            from bspcrawl.robots.links import LinkCache, parse_html
            from bspcrawl.urls import fingerprints

            given: dict[tuple[int, int], set[int]] = {}  # (rank, target fp) -> term hashes
            with h5py.File(out / "crawl.h5", "r") as crawl_file:
                rank_of = dict(zip(crawl_file["pages/url"].asstr()[:].tolist(),
                                   crawl_file["pages/rank"][:].tolist(), strict=True))
            for url, status in urls(out):
                if status != 200:
                    continue
                page = parse_html(body(*versions(out, url)[-1]), url, LinkCache())
                for fp, anchor in zip(fingerprints(page.links).tolist(), page.anchors,
                                      strict=True):
                    given.setdefault((rank_of[url], fp), set()).update(
                        count_terms(anchor.encode()).hashes.tolist())
            from_others = 0
            for r in range(comm.size):
                with h5py.File(out / f"rank-{r:04d}.h5", "r") as f:
                    fps, terms = f["search/anchor/fp"][:], f["search/anchor/term"][:]
                for fp, term in zip(fps.tolist(), terms.tolist(), strict=True):
                    mine = term in given.get((r, fp), set())
                    others = any(term in given.get((s, fp), set())
                                 for s in range(comm.size) if s != r)
                    assert mine or others  # every credited word was given by some page
                    from_others += others and not mine
            assert from_others > 0  # words that only other ranks' pages gave
            assert Searcher(open_shards(out)).totals.alength > 0
