"""Link graphs for the PageRank tests: a crawl's files written directly, and PageRank by
scipy from those files, built the way docs/output.md says (an independent reference)."""

from __future__ import annotations

import json
from pathlib import Path

import h5py
import numpy as np
import scipy.sparse as sp

from bspcrawl.counters import STATS_DTYPE
from bspcrawl.index.output import join
from bspcrawl.index.store import PAGE_FIELDS, rank_path
from bspcrawl.urls import TRACKING_PARAMS, fingerprints


def write_crawl(out: Path, sizes: list[int], degree: int = 6, seed: int = 0) -> None:
    """A finished crawl's rank files and ``crawl.h5`` holding only a link graph: pages
    ``http://hR.test/pI``, each with ~``degree`` links to random pages, and among them links
    to unfetched URLs, repeated links, self-links, dangling pages and 3xx redirects."""
    rng = np.random.default_rng(seed)
    out.mkdir(parents=True, exist_ok=True)
    urls = [[f"http://h{r}.test/p{i}" for i in range(n)] for r, n in enumerate(sizes)]
    every = [u for rank in urls for u in rank]
    fps = fingerprints(every, assume_canonical=True)
    first = np.concatenate(([0], np.cumsum(sizes)))
    for r, n in enumerate(sizes):
        status = np.where(rng.random(n) < 0.1, 301, 200).astype(np.int16)
        redirect = [every[rng.integers(len(every))] if s == 301 else "" for s in status]
        counts = np.where(status == 200, rng.poisson(degree, n), 0)
        counts[rng.random(n) < 0.1] = 0  # dangling
        targets = fps[rng.integers(len(every), size=counts.sum())]
        targets[rng.random(len(targets)) < 0.1] = rng.integers(-2**63, 2**63 - 1)  # unfetched
        rows = np.repeat(np.arange(n), counts)
        self_link = rng.random(len(targets)) < 0.05
        targets[self_link] = fps[first[r] + rows[self_link]]
        twice = rng.random(len(targets)) < 0.1  # the link before repeated
        targets[1:][twice[1:] & (rows[1:] == rows[:-1])] = targets[:-1][
            twice[1:] & (rows[1:] == rows[:-1])]
        with h5py.File(rank_path(out, r), "w") as f:
            for name, dtype in PAGE_FIELDS.items():
                f.create_dataset(f"pages/{name}", data=np.zeros(n, dtype)
                                 if np.dtype(dtype).kind != "O" else [""] * n, dtype=dtype)
            f["pages/url"][:] = urls[r]
            f["pages/url_fp"][:] = fps[first[r]:first[r + 1]]
            f["pages/status"][:] = status
            f["pages/redirect"][:] = redirect
            f["links/offsets"] = np.concatenate(([0], np.cumsum(counts)))
            f["links/targets"] = targets
            f["stats"] = np.zeros(0, STATS_DTYPE)
            f.attrs["settings"] = json.dumps({"url_strip_params": TRACKING_PARAMS})
    join(out, len(sizes), {"supersteps": 1, "urls_seen": len(every), "wall_s": 1.0,
                           "stopped": "done", "seeds": ""})


def adjacency(out: Path) -> sp.csr_matrix:
    """The graph of the crawl in ``out`` as docs/output.md builds it with scipy, plus the
    redirects: ``A[d, t] = 1`` for each edge d -> t."""
    with h5py.File(out / "crawl.h5") as f:
        fp = f["pages/url_fp"][:]
        ranks = [f[f"ranks/{r:04d}"] for r in range(f.attrs["ranks"])]
        rows = [np.repeat(np.arange(len(r["pages/url_fp"])), np.diff(r["links/offsets"][:]))
                for r in ranks]
        first = np.cumsum([0] + [len(r["pages/url_fp"]) for r in ranks])
        src = np.concatenate([x + first[i] for i, x in enumerate(rows)])
        fps = np.concatenate([r["links/targets"][:] for r in ranks])
        moved = np.flatnonzero((f["pages/status"][:] // 100 == 3)
                               & (f["pages/redirect"][:] != b""))
        src = np.concatenate((src, moved))
        fps = np.concatenate((fps, fingerprints(
            f["pages/redirect"].asstr()[:][moved].tolist(), assume_canonical=True)))
    order = np.argsort(fp, kind="stable")
    at = np.minimum(np.searchsorted(fp[order], fps), len(fp) - 1)
    hit = fp[order][at] == fps
    dst, src = order[at][hit], src[hit]
    keep = src != dst
    a = sp.csr_matrix((np.ones(keep.sum()), (src[keep], dst[keep])), shape=(len(fp),) * 2)
    a.data[:] = 1
    return a


def reference(out: Path, damping: float = 0.85) -> np.ndarray:
    """PageRank solved exactly (a dense linear system): ``x = d Aᵀ D⁻¹ x + (d s + 1 - d) / N``
    with ``s`` the dangling pages' mass and ``x`` summing to 1."""
    a = adjacency(out)
    n = a.shape[0]
    degree = np.asarray(a.sum(axis=1)).ravel()
    walk = sp.diags(np.divide(1.0, degree, out=np.zeros(n), where=degree > 0)) @ a
    system = np.eye(n) - damping * walk.T.toarray() - damping / n * (degree == 0)[None, :]
    return np.linalg.solve(system, np.full(n, (1 - damping) / n))
