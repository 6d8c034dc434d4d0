"""Nothing lost: checkpoints, kills at any point, resume (also on another P), stop."""

import json
import os
import signal
import subprocess
import time

import h5py
import numpy as np
import pytest
import xxhash

from bspcrawl import checkpoint
from bspcrawl.index.warc import read_body
from tests.crawling import ENV, MPIEXEC, PY, UNPACED, crawl, serve
from tests.sites import Site, page

pytestmark = pytest.mark.slow


def resume(ranks, out, *options, env=None):
    cmd = [PY, "-m", "bspcrawl", "resume", str(out), "--progress", "none", *options]
    if ranks > 1:
        cmd = [MPIEXEC, "-n", str(ranks), PY, "-m", "mpi4py", *cmd[1:]]
    return subprocess.run(cmd, env=env or ENV, capture_output=True, text=True, timeout=300)


def assert_complete_and_exact(out, web):
    """Every truth URL committed once, doc ids dense in every rank file, one history row
    per page answered, each with its body in a WARC record."""
    with h5py.File(out / "crawl.h5") as f:
        urls = f["pages/url"].asstr()[:].tolist()
        for name in f["ranks"]:
            rank = f[f"ranks/{name}"]
            answered = rank["pages/status"][:] > 0
            history = {k: rank[f"history/{k}"][:] for k in ("url_fp", "content_fp", "warc_file",
                                                             "warc_offset")}
            assert sorted(history["url_fp"]) == sorted(rank["pages/url_fp"][:][answered])
            files = rank["warc/files"].asstr()[:]
            for fp, w, at in list(zip(history["content_fp"], history["warc_file"],
                                      history["warc_offset"], strict=True))[::7]:
                body = read_body(out / files[w], at)
                assert (xxhash.xxh3_64_intdigest(body) if body else 0) == fp
            docs = rank["pages/doc_id"][:]
            assert np.array_equal(docs, np.arange(len(docs))), name
            n_postings = f[f"ranks/{name}/search/offsets"][-1]
            assert n_postings == f[f"ranks/{name}/search/docs"].shape[0]
            assert f[f"ranks/{name}/links/offsets"].shape[0] == len(docs) + 1
    assert len(urls) == len(set(urls)), "a URL was committed twice"
    assert sorted(urls) == web.truth(web.seeds())


@pytest.mark.parametrize("point", ["before", "during", "after"])
def test_a_rank_killed_around_a_checkpoint_loses_nothing(tmp_path, point):
    out = tmp_path / "out"
    with serve(pages=1500, hosts=30) as web:
        killed = crawl(3, web.seeds(), out, "--checkpoint-every", "10",
                       env={**ENV, "BSPCRAWL_FAULT": f"1:20:{point}"})
        assert killed.returncode != 0 and not (out / "crawl.h5").exists()
        res = resume(2 if point == "during" else 3, out, "--checkpoint-every", "10")
        assert res.returncode == 0, res.stderr
    assert_complete_and_exact(out, web)


def test_resume_after_a_kill_while_the_seen_set_had_spilled(tmp_path):
    # issue 16: past --queue-seen-memory the seen set's shards are files; they are a cache
    # (the checkpoint holds every fingerprint), deleted by the next process and at the end
    out = tmp_path / "out"
    with serve(pages=1500, hosts=30) as web:
        killed = crawl(2, web.seeds(), out, "--checkpoint-every", "10",
                       "--queue-seen-memory", "512",
                       env={**ENV, "BSPCRAWL_FAULT": "1:20:after"})
        assert killed.returncode != 0
        # the killed rank leaves its spill files; rank 0 deletes its own if it sees the
        # peer's death (an MPI error: its `finally` closes the seen set) before mpiexec
        # kills it, so only rank 1's files are certain to be there
        spilled = {path.parent.name for path in (out / "seen").rglob("run-*.npy")}
        assert "rank-0001" in spilled, "the killed rank had not spilled"
        res = resume(2, out, "--checkpoint-every", "10")
        assert res.returncode == 0, res.stderr
    assert_complete_and_exact(out, web)
    assert not (out / "seen").exists()


def test_sigkill_at_a_random_superstep_of_a_5000_page_crawl_then_resume(tmp_path):
    out, log = tmp_path / "out", tmp_path / "requests.tsv"
    with serve(pages=5000, hosts=60, log=log) as web:
        seeds = tmp_path / "seeds.txt"
        seeds.write_text("\n".join(web.seeds()))
        cmd = [MPIEXEC, "-n", "3", PY, "-m", "mpi4py", "-m", "bspcrawl", "run", "--seeds",
               str(seeds), "--out", str(out), *UNPACED, "--allow-net", "127.0.0.0/8",
               "--progress", "none", "--checkpoint-every", "25"]
        job = subprocess.Popen(cmd, env=ENV, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
        wanted = np.random.default_rng().integers(800, 3500)
        while job.poll() is None and (not log.exists() or
                                      log.read_text().count("\n") < wanted):
            time.sleep(0.05)
        ranks = subprocess.run(["pgrep", "-f", f"bspcrawl run --seeds {seeds}"],
                               capture_output=True, text=True).stdout.split()
        victims = [int(p) for p in ranks if int(p) != job.pid]
        assert victims, "the crawl ended before the kill"
        os.kill(victims[np.random.default_rng().integers(len(victims))], signal.SIGKILL)
        assert job.wait(timeout=60) != 0
        res = resume(3, out)
        assert res.returncode == 0, res.stderr
    assert_complete_and_exact(out, web)


def test_stop_then_resume_on_fewer_ranks(tmp_path):
    out = tmp_path / "out"
    with serve(pages=1500, hosts=30, latency="0.005,0.01") as web:
        seeds = tmp_path / "seeds.txt"
        seeds.write_text("\n".join(web.seeds()))
        cmd = [MPIEXEC, "-n", "3", PY, "-m", "mpi4py", "-m", "bspcrawl", "run", "--seeds",
               str(seeds), "--out", str(out), *UNPACED, "--allow-net", "127.0.0.0/8",
               "--progress", "none"]
        job = subprocess.Popen(cmd, env=ENV, stderr=subprocess.PIPE, text=True)
        while not (out / "segments").exists():
            time.sleep(0.05)
        time.sleep(2)
        stop = subprocess.run([PY, "-m", "bspcrawl", "stop", str(out)], capture_output=True,
                              text=True)
        assert stop.returncode == 0, stop.stderr
        assert job.wait(timeout=60) == 0, job.stderr.read()
        with h5py.File(out / "crawl.h5") as f:
            assert f.attrs["stopped"] == "signal"
            assert 0 < f["pages/url"].shape[0] < len(web.truth(web.seeds()))
        res = resume(2, out)
        assert res.returncode == 0, res.stderr
    assert_complete_and_exact(out, web)


def test_a_stop_does_not_wait_out_a_hosts_backoff(tmp_path):
    # a 429 rests its host 12 s, and the jobs queued behind it at the fetch workers with
    # it: the stop gives them back (fetched on resume) instead of waiting for them (a
    # superstep waits for them --window-straggler-timeout at most)
    out = tmp_path / "out"
    routes = {"/robots.txt": [(404, {}, b"")], "/": [page("/busy", "/a", "/b", "/c")],
              "/busy": [(429, {"Retry-After": "12"}, b""), page(text="finally")],
              **{f"/{p}": [page(text=p)] for p in "abc"}}
    site = Site(routes)
    try:
        res = crawl(1, [site.url + "/"], out, "--max-seconds", "1", "--workers", "4",
                    "--window-straggler-timeout", "1")
        assert res.returncode == 0, res.stderr
        with h5py.File(out / "crawl.h5") as f:
            assert f.attrs["stopped"] == "max_seconds"
            assert f.attrs["wall_s"] < 8, "the stop waited for the host's rest"
            assert site.url + "/" in set(f["pages/url"].asstr()[:])
        assert site.paths().count("/busy") == 1
        res = resume(1, out, "--max-seconds", "0")
        assert res.returncode == 0, res.stderr
    finally:
        site.close()
    with h5py.File(out / "crawl.h5") as f:
        urls = f["pages/url"].asstr()[:].tolist()
        assert set(f["pages/status"][:].tolist()) == {200}
    assert sorted(urls) == sorted(site.url + p for p in ("/", "/busy", "/a", "/b", "/c"))
    assert site.paths().count("/busy") == 2


def test_a_damaged_checkpoint_falls_back_or_fails_clearly(tmp_path):
    out = tmp_path / "out"
    with serve(pages=400, hosts=10) as web:
        assert crawl(2, web.seeds(), out, "--checkpoint-every", "4",
                     env={**ENV, "BSPCRAWL_FAULT": "0:16:after"}).returncode != 0
        marker = out / "checkpoint" / "checkpoint.json"
        # rank 0's files: it was killed after its pruning (rank 1 may be killed before its
        # own, which then happens at the next checkpoint)
        files = sorted((out / "checkpoint").glob("rank-0000-*.h5"))
        record = json.loads(marker.read_text())
        last_two = [record["previous"], record["superstep"]]
        assert [int(p.stem.split("-")[2]) for p in files[-2:]] == last_two
        bases = {checkpoint.read(out, 0, k)[1]["base"] for k in last_two}
        # the last complete checkpoint, the one before it, and the full ones they build on
        assert {int(p.stem.split("-")[2]) for p in files} == {*last_two, *bases}
        files[-1].write_bytes(files[-1].read_bytes()[:100])  # truncate the newest
        res = resume(2, out)
        assert res.returncode == 0, res.stderr
        assert_complete_and_exact(out, web)
        for path in (out / "checkpoint").glob("*.h5"):
            path.write_bytes(b"garbage")
        marker.write_text(marker.read_text())
        res = resume(2, out)
    assert res.returncode == 2
    assert res.stderr.startswith("bspcrawl: error: checkpoint file")
    assert len(res.stderr.strip().splitlines()) == 1


def test_a_full_disk_is_one_line_and_resume_after_it_loses_nothing(tmp_path):
    # issue 14: a full disk (ENOSPC, EDQUOT, EFBIG) is a stop, not a loss
    out = tmp_path / "out"
    with serve(pages=1500, hosts=30) as web:
        full = crawl(1, web.seeds(), out, "--checkpoint-every", "10",
                     env={**ENV, "BSPCRAWL_FAULT": "fsize:600000"})  # EFBIG past 600 KB
        assert full.returncode == 3, full.stderr
        (line,) = full.stderr.strip().splitlines()
        assert "cannot write to" in line and "File too large" in line and "resume" in line
        res = resume(1, out, "--checkpoint-every", "10")
        assert res.returncode == 0, res.stderr
    assert_complete_and_exact(out, web)
