"""Duplicate clusters: near pairs by blocks equal to brute force, clusters by both
relations, and ``inspect --duplicates`` on a crawl of a web with mirrors and near mirrors."""

import itertools

import numpy as np

from bspcrawl.index.duplicates import cluster_of, clusters, near_pairs
from tests.crawling import crawl, fetched, serve
from tests.test_cli import bspcrawl


def test_near_pairs_are_those_of_brute_force():
    rng = np.random.default_rng(5)
    base = rng.integers(0, 2**63, 300, dtype=np.uint64) * np.uint64(2)
    flips = [np.bitwise_or.reduce(np.uint64(1) << rng.choice(64, k, replace=False)
                                  .astype(np.uint64)) for k in rng.integers(1, 6, 200)]
    values = np.unique(np.concatenate((base, base[:200] ^ np.array(flips, np.uint64))))
    got = set(zip(*(x.tolist() for x in near_pairs(values)), strict=True))
    want = {(i, j) for i, j in itertools.combinations(range(len(values)), 2)
            if (int(values[i]) ^ int(values[j])).bit_count() <= 3}
    assert got == want and len(want) > 50


def test_clusters_join_exact_and_near_duplicates_of_eligible_rows():
    content = np.array([5, 5, 0, 7, 8, 9, 10, 11], np.uint64)
    sims = np.array([1, 2, 3, 3, 0, 0xF0, 0xF1, 0xF0], np.uint64)
    eligible = np.array([1, 1, 1, 1, 1, 1, 0, 1], bool)
    # 0-1 same body, 1-2 and 1-3 within 3 bits, 4 no terms, 6 not an answer, 5-7 same hash
    assert clusters(content, sims, eligible).tolist() == [0, 0, 0, 0, 4, 5, 6, 5]


def test_inspect_duplicates_lists_the_mirrored_pages(tmp_path):
    with serve(pages=200, hosts=4, mirrors=1, near_mirrors=1) as web:
        res = crawl(1, web.seeds(), tmp_path / "c")
        assert res.returncode == 0, res.stderr
        copies = web.copies()
    out = bspcrawl("inspect", str(tmp_path / "c"), "--duplicates")
    assert out.returncode == 0, out.stderr
    clusters_seen = []  # (kind, {url: content fingerprint})
    for line in out.stdout.splitlines():
        if line.startswith("  "):
            url, content = line.strip().split("\t")
            clusters_seen[-1][1][url] = content
        else:
            clusters_seen.append((line.split("\t")[0], {}))
    for kind, urls in clusters_seen:  # exact: one body
        assert len(urls) >= 2 and kind == ("exact" if len(set(urls.values())) == 1 else "near")
    together = {url: i for i, (_, urls) in enumerate(clusters_seen) for url in urls}

    def joined(a, b):
        return a in together and together[a] == together.get(b)

    ok = {url for url, status in fetched(tmp_path / "c") if status == 200}
    exact = [joined(a, b) for a, b, k in copies if k == "exact" and a in ok and b in ok]
    near = [joined(a, b) for a, b, k in copies if k == "near" and a in ok and b in ok]
    assert len(exact) >= 3 and all(exact)
    assert len(near) >= 10 and np.mean(near) >= 0.8
    label = cluster_of(tmp_path / "c")
    assert len(set(label.tolist())) == len(label) - sum(len(u) - 1 for _, u in clusters_seen)
    assert "clusters of duplicates" in out.stderr
