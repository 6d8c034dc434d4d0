"""The per-rank HDF5 store and the joined crawl.h5: what goes in comes out, in order."""

import errno
import random
import subprocess
import sys

import h5py
import numpy as np
import pytest

from bspcrawl.counters import STATS_DTYPE
from bspcrawl.index.output import join
from bspcrawl.index.simhash import simhash
from bspcrawl.index.store import PAGE_FIELDS, RankStore, by_term, split_rank_file
from bspcrawl.index.terms import count_terms
from bspcrawl.messages import FetchJob, FetchResult


def fake_pages(n, rng):
    words = [f"w{i}".encode() for i in range(40)] + ["é".encode()]
    for i in range(n):
        job = FetchJob(seq=i // 3, index=i % 3, url=f"http://h/{i}", host="h",
                       depth=i % 4 * 20_000)  # past int16 (issue 14: an endless pagination)
        res = FetchResult(job, status=200 if i % 5 else 404, body=b"x" * i,
                          content_type="text/html", started=1000.0 + i, elapsed=0.01)
        text = b" ".join(rng.choice(words) for _ in range(rng.randrange(0, 30)))
        links = [rng.randrange(-(2**63), 2**63) for _ in range(rng.randrange(4))]
        yield res, count_terms(text), links


def test_pages_links_and_inverted_index_round_trip(tmp_path):
    rng = random.Random(7)
    store = RankStore(tmp_path, 0, 1, {"x": 1}, flush_pages=7)  # several flushes
    expect_post: dict[bytes, list[tuple[int, int]]] = {}
    expect_links, expect_simhash = [], []
    for res, terms, links in fake_pages(50, rng):
        doc = store.commit(res, url_fp=doc_fp(res), redirect="", link_fps=links, terms=terms,
                           content_fp=len(res.body))
        if doc % 7 == 6:
            store.seal(superstep=doc)  # several segments
        for t, tf in terms.as_dict().items():
            expect_post.setdefault(t, []).append((doc, tf))
        expect_links.append(links)
        expect_simhash.append(simhash(terms))
    row = np.zeros((), STATS_DTYPE)
    store.add_stats(row)
    store.close(superstep=100)
    assert not (tmp_path / "segments" / "rank-0000").exists()
    with h5py.File(tmp_path / "rank-0000.h5") as f:
        assert f.attrs["complete"] and f.attrs["ranks"] == 1
        assert set(f["pages"]) == set(PAGE_FIELDS)
        assert f["pages/doc_id"][:].tolist() == list(range(50))
        assert f["pages/url"].asstr()[:].tolist() == [f"http://h/{i}" for i in range(50)]
        assert f["pages/length"][:].tolist() == list(range(50))
        assert f["pages/depth"][:].tolist() == [i % 4 * 20_000 for i in range(50)]
        assert f["pages/simhash"][:].tolist() == expect_simhash
        off, tgt = f["links/offsets"][:], f["links/targets"][:]
        assert [tgt[off[i]:off[i + 1]].tolist() for i in range(50)] == expect_links
        terms = [t.encode() for t in f["index/terms"].asstr()[:]]
        assert terms == sorted(expect_post)
        off, docs, tf = f["index/offsets"][:], f["index/docs"][:], f["index/tf"][:]
        for i, t in enumerate(terms):
            got = list(zip(docs[off[i]:off[i + 1]].tolist(), tf[off[i]:off[i + 1]].tolist(),
                           strict=True))
            assert got == expect_post[t]
        assert f["stats"].shape == (1,)


def doc_fp(res):
    return hash(res.job.url) & 0xFFFF


def test_joined_file_concatenates_ranks(tmp_path):
    rng = random.Random(1)
    for rank, n in enumerate([5, 0, 3]):
        store = RankStore(tmp_path, rank, 3, {}, flush_pages=100)
        for res, terms, links in fake_pages(n, rng):
            store.commit(res, 0, "", links, terms, len(res.body))
        store.add_stats(np.zeros((), STATS_DTYPE))
        store.close(superstep=1)
    join(tmp_path, 3, {"supersteps": 1, "urls_seen": 8, "wall_s": 0.5, "stopped": "done"})
    with h5py.File(tmp_path / "crawl.h5") as f:
        assert f["pages/url"].shape == (8,)
        assert f["pages/rank"][:].tolist() == [0] * 5 + [2] * 3
        assert f["pages/doc_id"][:].tolist() == [0, 1, 2, 3, 4, 0, 1, 2]
        assert f["stats"].shape == (3,)
        assert f["ranks/0002/pages/url"].shape == (3,)
        assert f.attrs["stopped"] == "done"


def test_resume_drops_segments_after_the_checkpoint_and_continues_doc_ids(tmp_path):
    rng = random.Random(3)
    pages = list(fake_pages(30, rng))
    store = RankStore(tmp_path, 0, 1, {}, flush_pages=100)
    for i, (res, terms, links) in enumerate(pages[:20]):
        store.commit(res, 0, "", links, terms, len(res.body))
        if i in (9, 19):
            store.seal(superstep=i)  # checkpoint at 9; 10..19 are sealed after it
    resumed = RankStore(tmp_path, 0, 1, {}, flush_pages=100, resume_at=9)
    assert resumed.docs == 10
    for res, terms, links in pages[10:]:
        resumed.commit(res, 0, "", links, terms, len(res.body))
    resumed.close(superstep=40)
    whole = RankStore(tmp_path / "whole", 0, 1, {}, flush_pages=100)
    for res, terms, links in pages:
        whole.commit(res, 0, "", links, terms, len(res.body))
    whole.close(superstep=40)
    with h5py.File(tmp_path / "rank-0000.h5") as a, \
            h5py.File(tmp_path / "whole" / "rank-0000.h5") as b:
        for name in ("pages/url", "pages/doc_id", "links/offsets", "links/targets",
                     "index/terms", "index/offsets", "index/docs", "index/tf"):
            assert np.array_equal(a[name][:], b[name][:]), name


@pytest.mark.parametrize("older", [False, True])
def test_a_joined_rank_file_splits_back_into_a_segment(tmp_path, older):
    """``older``: a rank file of a bspcrawl before the index for ranking (no ``/search``):
    its segment keeps the postings in ``postings/*``, and they join into ``/index``."""
    rng = random.Random(5)
    store = RankStore(tmp_path, 0, 1, {}, flush_pages=100)
    for res, terms, links in fake_pages(12, rng):
        store.commit(res, 0, "", links, terms, len(res.body))
    store.close(superstep=4)
    with h5py.File(tmp_path / "rank-0000.h5", "r+") as f:
        before = {n: f[n][:] for n in ("pages/url", "index/terms", "index/docs", "index/tf")}
        assert len(before["index/docs"]) > 20
        if older:
            del f["search"]
    split_rank_file(tmp_path, 0, 4)
    again = RankStore(tmp_path, 0, 1, {}, flush_pages=100, resume_at=4)
    assert again.docs == 12
    again.close(superstep=4)
    with h5py.File(tmp_path / "rank-0000.h5") as f:
        for name, values in before.items():
            assert np.array_equal(f[name][:], values), name


def test_postings_are_ordered_by_term_number_then_doc():
    rng = random.Random(5)
    for _ in range(300):
        term_hashes = np.array(rng.sample(range(-10**6, 10**6), rng.randint(1, 30)))
        hashes = np.array([rng.choice(term_hashes.tolist()) for _ in range(rng.randint(0, 200))],
                          dtype=np.int64)
        order, offsets = by_term(hashes, term_hashes)
        number = {h: t for t, h in enumerate(term_hashes.tolist())}
        expected = sorted(range(len(hashes)), key=lambda i: (number[int(hashes[i])], i))
        assert order.tolist() == expected
        counts = [int((hashes == h).sum()) for h in term_hashes]
        assert offsets.tolist() == np.concatenate(([0], np.cumsum(counts))).tolist()


FULL_DISK = """
import resource, signal, sys
import numpy as np, h5py
from pathlib import Path
from bspcrawl.index.store import write_atomically
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
limit = int(sys.argv[1])
resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

def fill(f):
    for i in range(40):
        f.create_dataset(f"pages/d{i}", data=np.arange(2000))
    f.create_dataset("vocab", data=np.array([b"x" * 20] * 3000, dtype=object),
                     dtype=h5py.string_dtype())

try:
    write_atomically(Path(sys.argv[2]), fill)
except OSError as e:
    print(e.errno)
"""


@pytest.mark.parametrize("limit", [100_000, 600_000, 700_000])
def test_a_segment_write_on_a_full_disk_is_one_oserror_and_no_file(tmp_path, limit):
    # issue 14: HDF5 fails at a write (OSError) or at close (a RuntimeError naming the
    # errno), and h5py then prints a traceback per object freed; all of it is one EFBIG
    path = tmp_path / "segment.h5"
    res = subprocess.run([sys.executable, "-c", FULL_DISK, str(limit), str(path)],
                         capture_output=True, text=True, timeout=60)
    assert (res.stdout, res.stderr) == (f"{errno.EFBIG}\n", "")
    assert list(tmp_path.iterdir()) == []
