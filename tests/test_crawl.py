"""End to end: ``bspcrawl run`` on 1, 2 and 3 ranks against the local web's ground truth."""

import json
import subprocess
from pathlib import Path

import h5py
import numpy as np
import pytest

from bspcrawl.testweb import free_port
from tests.crawling import PY, UNPACED, crawl, fetched, requests_by_host, serve

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("ranks", [1, 2, 3])
def test_fetched_urls_equal_truth_and_the_crawl_is_polite(tmp_path, ranks):
    log = tmp_path / "requests.tsv"
    with serve(pages=2000, hosts=50, log=log) as web:
        res = crawl(ranks, web.seeds(), tmp_path / "out")
    assert res.returncode == 0, res.stderr
    got = fetched(tmp_path / "out")
    urls = [u for u, _ in got]
    assert len(urls) == len(set(urls)), "a URL was committed twice"
    truth = web.truth(web.seeds())
    assert len(truth) >= 1500
    assert set(urls) == set(truth)
    # From the server's side: only robots.txt and truth URLs were requested (so nothing
    # disallowed), robots.txt once per host, and never two requests in flight on one host.
    allowed_paths = {u.split("/", 3)[2] + "/" + u.split("/", 3)[3] for u in truth}
    for host, reqs in requests_by_host(log).items():
        robots = [t for _, _, t in reqs if t == "/robots.txt"]
        assert len(robots) == 1, host
        for _, _, target in reqs:
            assert target == "/robots.txt" or f"{host}{target}" in allowed_paths, target
        spans = sorted((s, e) for s, e, _ in reqs)
        for (_, end), (start, _) in zip(spans, spans[1:], strict=False):
            assert start >= end, f"two requests in flight on {host}"
    info = json.loads(subprocess.run([PY, "-m", "bspcrawl", "inspect", str(tmp_path / "out"),
                                      "--json"], capture_output=True, text=True,
                                     check=True).stdout)
    assert info["ranks"] == ranks and info["pages_fetched"] == len(truth)
    for key in ("supersteps", "pages_ok", "urls_seen", "bytes", "wall_s", "errors"):
        assert key in info
    statuses = dict(got)
    assert info["pages_ok"] == sum(200 <= s < 300 for s in statuses.values())
    assert {s // 100 for s in statuses.values()} == {2, 3, 4}


def _index(out):
    """Per rank: page URLs in doc order, terms, postings and links."""
    with h5py.File(out / "crawl.h5") as f:
        ranks = int(f.attrs["ranks"])
        return [{name: f[f"ranks/{r:04d}/{name}"][:] for name in
                 ("pages/url", "pages/seq", "pages/simhash", "search/terms", "search/offsets",
                  "search/docs", "search/tf", "search/vocab", "links/offsets", "links/targets",
                  "search/wtf",
                  "search/pairs/terms", "search/pairs/docs", "search/title")} for r in range(ranks)]


def test_index_is_identical_across_runs_with_random_latencies(tmp_path):
    """Two crawls, the second with its pages parsed in helper processes: one index."""
    runs, port = [], free_port(20)
    for run, helpers in enumerate(["0", "2"]):
        log = tmp_path / f"requests-{run}.tsv"
        with serve(pages=600, hosts=20, latency="0,0.02", log=log, port=port) as web:
            res = crawl(2, web.seeds(), tmp_path / f"out{run}", "--workers", "4",
                        "--parse-processes", helpers)
        assert res.returncode == 0, res.stderr
        runs.append((_index(tmp_path / f"out{run}"), log))
        ahead = _summary(tmp_path / f"out{run}")["counters"].get("analysis/ahead", 0)
        assert (ahead > 500) == (helpers != "0")  # the helpers analysed the pages
    (first, log0), (second, log1) = runs
    for a, b in zip(first, second, strict=True):
        assert a.keys() == b.keys()
        for name in a:
            assert np.array_equal(a[name], b[name]), name
    # The robots really did finish out of order, and differently in the two runs.
    order0 = [line.split("\t")[:2] for line in log0.read_text().splitlines()]
    order1 = [line.split("\t")[:2] for line in log1.read_text().splitlines()]
    assert order0 != order1


def test_a_crawl_of_many_segments_joins_into_the_index_of_one(tmp_path):
    """The join merges the segments a batch at a time: a crawl sealing a segment every 25
    pages has the pages, index and search results of one sealing them all at its end."""
    with serve(pages=400, hosts=10) as web:
        for name, flush in (("many", "25"), ("one", "100000")):
            res = crawl(1, web.seeds(), tmp_path / name, "--index-flush-pages", flush)
            assert res.returncode == 0, res.stderr
    names = ("pages/url", "links/targets", "search/terms", "search/offsets", "search/docs",
             "search/tf", "search/wtf", "search/atf", "search/length", "search/alength",
             "search/title", "search/pairs/docs", "search/vocab", "search/anchor/fp")
    indexes = {}
    for name in ("many", "one"):
        with h5py.File(tmp_path / name / "rank-0000.h5") as f:
            indexes[name] = {n: f[n][()] for n in names}
    assert len(indexes["one"]["pages/url"]) > 200  # so "many" sealed more than 8 segments
    for n in names:
        assert np.array_equal(indexes["many"][n], indexes["one"][n]), n
    vocab = indexes["one"]["search/vocab"]
    for word in (vocab[0], vocab[len(vocab) // 2], vocab[-1]):
        found = []
        for name in ("many", "one"):
            res = subprocess.run([PY, "-m", "bspcrawl", "search", str(tmp_path / name),
                                  bytes(word).decode(), "--json"], capture_output=True,
                                 text=True, check=True)
            found.append([(r["url"], r["score"]) for r in json.loads(res.stdout)["results"]])
        assert found[0] == found[1] and found[0]


def _summary(out):
    return json.loads(subprocess.run([PY, "-m", "bspcrawl", "inspect", str(out), "--json"],
                                     capture_output=True, text=True, check=True).stdout)


def test_limits_end_the_crawl_early(tmp_path):
    with serve(pages=600, hosts=20) as web:
        assert crawl(2, web.seeds(), tmp_path / "pages", "--max-pages", "100").returncode == 0
        assert crawl(1, web.seeds(), tmp_path / "depth", "--max-depth", "1").returncode == 0
    info = _summary(tmp_path / "pages")
    # Scheduling stops once committed + in flight reach the limit: at most one window more.
    assert info["stopped"] == "max_pages"
    assert 100 <= info["pages_fetched"] <= 100 + 2 * 8 * 256
    assert info["pages_fetched"] < len(web.truth(web.seeds()))
    with h5py.File(tmp_path / "depth" / "crawl.h5") as f:
        depths = f["pages/depth"][:]
    assert depths.max() == 1 and (depths == 0).sum() == len(web.seeds())


def test_max_seconds_and_sigterm_stop_at_a_superstep_boundary(tmp_path):
    import signal
    import time

    log = tmp_path / "served.log"
    with serve(pages=600, hosts=20, latency="0.2,0.3", log=log) as web:  # many seconds
        t0 = time.monotonic()
        res = crawl(2, web.seeds(), tmp_path / "timed", "--max-seconds", "3")
        assert res.returncode == 0, res.stderr
        assert time.monotonic() - t0 < 30  # timing: --max-seconds 3 is a time; 10x slack
        seeds = tmp_path / "seeds.txt"
        seeds.write_text("\n".join(web.seeds()))
        served = len(log.read_text().splitlines())
        proc = subprocess.Popen([PY, "-m", "bspcrawl", "run", "--seeds", str(seeds), "--out",
                                 str(tmp_path / "signalled"), *UNPACED,
                                 "--allow-net", "127.0.0.0/8", "--progress", "none"],
                                stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 120  # the signal once the crawl has fetched pages
        while (len(log.read_text().splitlines()) < served + 40
               and time.monotonic() < deadline):
            time.sleep(0.1)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0, proc.stderr.read()
    timed, signalled = _summary(tmp_path / "timed"), _summary(tmp_path / "signalled")
    assert timed["stopped"] == "max_seconds" and signalled["stopped"] == "signal"
    for info in (timed, signalled):
        assert 0 < info["pages_fetched"] < len(web.truth(web.seeds()))


def _stat(pid: str | int) -> list[str] | None:
    """The fields of ``/proc/PID/stat`` after the command (state, parent, ...); None for a
    process gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:
        return None


def _children(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (from /proc)."""
    return [int(p.name) for p in Path("/proc").glob("[0-9]*")
            if (fields := _stat(p.name)) is not None and int(fields[1]) == pid]


def _gone(pids: list[int], within: float) -> bool:
    """Whether every process of ``pids`` has ended (or is a zombie) within ``within`` s."""
    import time

    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if all((fields := _stat(p)) is None or fields[0] == "Z" for p in pids):
            return True
        time.sleep(0.1)
    return False


def test_parse_workers_stay_for_a_group_sigterm_and_end_with_a_killed_rank(tmp_path):
    """A SIGTERM to the whole process group (a Ctrl-C, a kill of a job) stops the crawl at
    a superstep's end with its parse workers still there; a rank killed outright leaves no
    process behind."""
    import os
    import signal
    import time

    with serve(pages=600, hosts=20, latency="0.05,0.1") as web:
        seeds = tmp_path / "seeds.txt"
        seeds.write_text("\n".join(web.seeds()))
        for how in ("group-sigterm", "sigkill"):
            out = tmp_path / how
            proc = subprocess.Popen([PY, "-m", "bspcrawl", "run", "--seeds", str(seeds),
                                     "--out", str(out), *UNPACED, "--allow-net",
                                     "127.0.0.0/8", "--progress", "none",
                                     "--parse-processes", "2"],
                                    stderr=subprocess.PIPE, text=True,
                                    start_new_session=True)
            time.sleep(3)
            children = _children(proc.pid)  # (multiprocessing's resource tracker too)
            workers = [p for p in children
                       if b"spawn_main" in Path(f"/proc/{p}/cmdline").read_bytes()]
            assert len(workers) == 2
            if how == "sigkill":
                proc.kill()
                proc.wait(timeout=30)
                assert _gone(children, 10), "a child outlived its killed rank"
                continue
            os.killpg(proc.pid, signal.SIGTERM)
            assert proc.wait(timeout=30) == 0, proc.stderr.read()
            assert _gone(children, 10)
            info = _summary(out)
            assert info["stopped"] == "signal" and info["pages_fetched"] > 0
            assert info["counters"]["analysis/ahead"] > 0
            assert info["counters"].get("analysis/helpers_lost", 0) == 0


def test_without_allow_net_a_local_web_is_never_contacted(tmp_path):
    log = tmp_path / "requests.tsv"
    seeds = tmp_path / "seeds.txt"
    with serve(pages=120, hosts=4, log=log) as web:
        seeds.write_text("\n".join(web.seeds()))
        res = subprocess.run([PY, "-m", "bspcrawl", "run", "--seeds", str(seeds), "--out",
                              str(tmp_path / "out"), "--min-host-delay", "0", "--progress",
                              "none"], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    info = _summary(tmp_path / "out")  # each seed is committed as refused, nothing else
    assert info["pages_fetched"] == len(web.seeds()) and info["pages_ok"] == 0
    assert info["errors"] == {"blocked_address": len(web.seeds())}
    assert not log.exists() or log.read_text() == ""
