"""PageRank (``bspcrawl rank``) on one rank: the graph it builds, the vector against an
exact scipy solution, what it writes, and its errors (tests/mpi/ runs it on P ranks)."""

import json

import h5py
import numpy as np
import pytest
from mpi4py import MPI

from bspcrawl import pagerank
from tests.graphs import adjacency, reference, write_crawl
from tests.test_cli import assert_one_line_error, bspcrawl


def rank(out, **kw):
    sizes = pagerank.rank_files(out)
    return sizes, pagerank.pagerank(
        MPI.COMM_SELF, sizes, lambda lo, hi: pagerank.read_graph(out, sizes, lo, hi), **kw)


def test_edges_drop_unfetched_targets_self_links_and_repeats():
    src = np.array([0, 0, 0, 0, 1, 1, 2])
    dst = np.array([11, 11, 10, -1, 12, 10, 13])  # rows start at 10: local 0 is row 10
    got = pagerank.edges(src, dst, lo=10, n=20)
    assert [(int(s), int(d)) for s, d in zip(*got, strict=True)] == [(1, 10), (0, 11), (1, 12),
                                                                     (2, 13)]


def test_pagerank_is_the_exact_solution_on_one_rank(tmp_path):
    write_crawl(tmp_path, [120, 0, 80, 100])
    sizes, result = rank(tmp_path)
    a = adjacency(tmp_path)
    assert result.pages == 300 and result.edges == a.nnz
    assert result.dangling == int((np.asarray(a.sum(axis=1)).ravel() == 0).sum())
    assert result.residual < pagerank.TOLERANCE
    assert np.abs(result.x - reference(tmp_path)).max() < 1e-9
    assert result.x.sum() == pytest.approx(1.0, abs=1e-12)


def test_damping_and_max_iterations_are_honoured(tmp_path):
    write_crawl(tmp_path, [50, 50], seed=3)
    _, result = rank(tmp_path, damping=0.5)
    assert np.abs(result.x - reference(tmp_path, damping=0.5)).max() < 1e-9
    _, cut = rank(tmp_path, max_iterations=2)
    assert cut.iterations == 2 and cut.residual > pagerank.TOLERANCE


def test_cli_writes_the_vector_into_every_rank_file_and_crawl_h5(tmp_path):
    write_crawl(tmp_path, [70, 30, 0])
    assert json.loads(bspcrawl("inspect", str(tmp_path), "--json").stdout)["pagerank"] is None
    res = bspcrawl("rank", str(tmp_path))
    assert res.returncode == 0, res.stderr
    assert "PageRank of 100 pages" in res.stderr and "ns per edge per iteration" in res.stderr
    expected = reference(tmp_path)
    with h5py.File(tmp_path / "crawl.h5") as f:
        assert np.abs(f["rank/pagerank"][:] - expected).max() < 1e-9
        attrs = f["rank"].attrs
        assert attrs["damping"] == 0.85 and attrs["ranks"] == 1 and attrs["pages"] == 100
        assert attrs["residual"] < attrs["tolerance"] and attrs["iterations"] > 0
        assert f.attrs["stopped"] == "done"  # the crawl's summary is kept
        iterations = int(attrs["iterations"])
    assert json.loads(bspcrawl("inspect", str(tmp_path), "--json").stdout)["pagerank"][
        "iterations"] == iterations
    with h5py.File(tmp_path / "rank-0001.h5") as f:
        assert np.abs(f["rank/pagerank"][:] - expected[70:]).max() < 1e-9
        assert f["pages/url"].shape == (30,)  # the rest of the file is as it was
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "crawl.h5", "rank-0000.h5", "rank-0001.h5", "rank-0002.h5"]
    again = bspcrawl("rank", str(tmp_path), "--damping", "0.5")  # replaces the vector
    assert again.returncode == 0, again.stderr
    with h5py.File(tmp_path / "crawl.h5") as f:
        assert np.abs(f["rank/pagerank"][:] - reference(tmp_path, 0.5)).max() < 1e-9


@pytest.mark.parametrize("make, argv, fragment", [
    (lambda d: None, [], "is not a directory"),
    (lambda d: d.mkdir(), [], "holds no crawl.h5"),
    (lambda d: write_crawl(d, [5]), ["--damping", "1.5"], "--damping must be in (0, 1)"),
])
def test_cli_errors_are_one_line(tmp_path, make, argv, fragment):
    out = tmp_path / "crawl"
    make(out)
    assert_one_line_error(bspcrawl("rank", str(out), *argv), fragment)
