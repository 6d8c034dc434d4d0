"""The per-rank HDF5 store and the joined crawl.h5: what goes in comes out, in order."""

import errno
import random
import subprocess
import sys

import h5py
import numpy as np
import pytest

from bspcrawl.counters import STATS_DTYPE
from bspcrawl.index import ranking
from bspcrawl.index.output import join
from bspcrawl.index.simhash import simhash
from bspcrawl.index.store import PAGE_FIELDS, RankStore, split_rank_file
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
        assert page_postings(f) == expect_post
        assert f["stats"].shape == (1,)


def page_postings(f):
    """Term (its bytes) -> [(doc, tf)] of the page text, from a rank file's ``/search``."""
    s = f["search"]
    words = dict(zip(s["vocab_hash"][:].tolist(), (bytes(t) for t in s["vocab"][:]),
                     strict=True))
    off, docs, tf = s["offsets"][:], s["docs"][:], s["tf"][:]
    found = {}
    for i, h in enumerate(s["terms"][:].tolist()):
        got = [(d, t) for d, t in zip(docs[off[i]:off[i + 1]].tolist(),
                                      tf[off[i]:off[i + 1]].tolist(), strict=True) if t]
        if got:
            found[words[h]] = got
    return found


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
                     "search/terms", "search/offsets", "search/docs", "search/tf",
                     "search/vocab", "search/vocab_hash"):
            assert np.array_equal(a[name][:], b[name][:]), name


def test_a_joined_rank_file_splits_back_into_a_segment(tmp_path):
    rng = random.Random(5)
    store = RankStore(tmp_path, 0, 1, {}, flush_pages=100)
    for res, terms, links in fake_pages(12, rng):
        store.commit(res, 0, "", links, terms, len(res.body))
    store.close(superstep=4)
    with h5py.File(tmp_path / "rank-0000.h5", "r+") as f:
        before = {n: f[n][:] for n in ("pages/url", "search/terms", "search/docs", "search/tf",
                                       "search/vocab")}
        assert len(before["search/docs"]) > 20
    split_rank_file(tmp_path, 0, 4)
    again = RankStore(tmp_path, 0, 1, {}, flush_pages=100, resume_at=4)
    assert again.docs == 12
    again.close(superstep=4)
    with h5py.File(tmp_path / "rank-0000.h5") as f:
        for name, values in before.items():
            assert np.array_equal(f[name][:], values), name


def test_a_join_of_many_segments_in_small_batches_equals_one_segment(tmp_path, monkeypatch):
    """The join merges the segments' sorted postings in batches: with a segment every 3
    pages and batches of a few rows, the rank file is the one a single segment gives,
    anchor text credited (to a page fetched twice: its latest row) included."""
    rng = random.Random(11)
    pages = list(fake_pages(60, rng))
    words = [count_terms(b"alpha beta gamma w1 w2").hashes, count_terms(b"w3 delta").hashes]

    def crawl(out, every):
        store = RankStore(out, 0, 1, {}, flush_pages=100)
        for i, (res, terms, links) in enumerate(pages):
            store.commit(res, i % 50, "", links, terms, len(res.body))  # 50..59: refetched
            hashes = words[i % 2]
            store.search.add_anchors(np.full(len(hashes), (7 * i) % 70), hashes,
                                     np.full(len(hashes), 1 + i % 3))
            if i % every == every - 1:
                store.seal(superstep=i)
        store.close(superstep=100)
        with h5py.File(out / "rank-0000.h5") as f:
            return {name: f["search"][name][()] for name in (
                "terms", "offsets", "docs", "tf", "wtf", "atf", "length", "wlength",
                "alength", "title", "pairs/terms", "pairs/offsets", "pairs/docs", "vocab",
                "vocab_hash", "anchor/fp", "anchor/term", "anchor/tf")}

    whole = crawl(tmp_path / "one", every=1000)
    monkeypatch.setattr(ranking, "MERGE_ROWS", 8)
    monkeypatch.setattr(ranking, "MERGE_MIN", 2)
    parts = crawl(tmp_path / "many", every=3)
    assert whole["atf"].sum() > 0 and whole["alength"][50:].sum() > 0
    assert whole["alength"][:10].sum() == 0  # their URLs were fetched again: rows 50..
    for name, values in whole.items():
        assert np.array_equal(parts[name], values), name


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
