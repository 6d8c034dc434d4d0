"""Tests of bspcrawl.testweb: the model, its ground truth, the server and the CLI hooks.

The truth is checked twice: against the model (properties every crawl must have) and
against an independent tiny crawler (http.client + lxml + ada_url + protego) that
crawls a small web over loopback and must fetch exactly ``truth``.
"""

from __future__ import annotations

import argparse
import collections
import http.client
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import deque
from concurrent.futures import ThreadPoolExecutor

import ada_url
import lxml.html
import numpy as np
import protego
import pycurl
import pytest

from bspcrawl.testweb import (
    AGENT,
    DEAD,
    PAGE,
    REDIRECT,
    PortInUseError,
    Web,
    WebConfig,
    add_arguments,
    cmd_seeds,
    cmd_truth,
    config_argv,
    config_from_args,
    free_port,
    host_address,
    running,
    running_process,
)
from bspcrawl.testweb.model import host_index, relative_path

SMALL = dict(pages=300, hosts=10)


@pytest.fixture(scope="module")
def small() -> Web:
    return Web(WebConfig(**SMALL, port=free_port(SMALL["hosts"])))


@pytest.fixture(scope="module")
def big() -> Web:
    return Web(WebConfig())


def canonical(url: str) -> str:
    u = ada_url.URL(url)
    u.hash = ""
    return u.href


def page_links(html: bytes, url: str) -> list[str]:
    """Canonical targets of a page's <a href>s, resolved as a browser would."""
    return _resolve(lxml.html.fromstring(html), url)


def _resolve(doc, url: str) -> list[str]:
    base = url
    for href in doc.xpath("//head/base/@href")[:1]:
        base = ada_url.join_url(url, href)
    return [canonical(ada_url.join_url(base, href)) for href in doc.xpath("//a/@href")]


# ------------------------------------------------------------------------------- model


def test_config_validation():
    for bad in (
        dict(pages=10, hosts=20),
        dict(hosts=0),
        dict(port=0),
        dict(min_kb=30, max_kb=20),
        dict(dead_links=0.9),
        dict(seed_hosts=0),
        dict(max_links=0),
    ):
        with pytest.raises(ValueError):
            WebConfig(**bad)


def test_host_addresses():
    assert [host_address(i) for i in (0, 1, 249, 250, 251)] == [
        "127.1.0.1",
        "127.1.0.2",
        "127.1.0.250",
        "127.1.1.1",
        "127.1.1.2",
    ]
    assert all(host_index(host_address(i)) == i for i in range(0, 64000, 77))
    assert host_index("127.1.0.0") is None and host_index("127.0.0.1") is None


def test_relative_path():
    assert relative_path("/a/b/c/page1.html", "/a/x/page9.html") == "../../x/page9.html"
    assert relative_path("/a/b.html", "/a/c.html") == "c.html"
    assert relative_path("/a/b.html", "/a/") == "./"
    assert relative_path("/list?page=2", "/list?page=3") == "list?page=3"
    assert relative_path("/a/b/", "/") == "../../"


def test_deterministic(small):
    again = Web(small.config)
    assert again.path == small.path
    assert np.array_equal(again.link_dst, small.link_dst)
    for p in range(0, small.n_pages, 7):
        assert again.html(p) == small.html(p)
    assert again.truth() == small.truth()
    assert [again.robots_txt(h) for h in range(10)] == [small.robots_txt(h) for h in range(10)]
    other = Web(WebConfig(**SMALL, seed=2, port=small.config.port))
    assert other.path != small.path and other.html(0) != small.html(0)
    assert other.truth() != small.truth()
    # The port only appears in URLs.
    moved = Web(WebConfig(**SMALL, port=small.config.port + 1))
    port = f":{small.config.port}/"
    assert [u.replace(f":{small.config.port + 1}/", port) for u in moved.truth()] == small.truth()


def test_structure(big):
    s = big.summary()
    assert s["pages"] == 2000 and s["hosts"] == 50
    deg = np.diff(big.link_ptr)
    assert deg.min() >= 1 and deg.max() <= 150 and 20 <= deg.mean() <= 40
    sizes = np.diff(big.site_start)
    assert sizes.min() >= 1 and sizes.max() > 5 * np.median(sizes)  # heavy-tailed sites
    assert all(big.path[a] == "/" for a in big.site_start[:-1])  # every host has a home
    targets = big.link_dst
    cross = big.host[targets] != big.host[np.repeat(np.arange(2000), deg)]
    assert 0.08 < cross.mean() < 0.25
    paths = big.path[:2000]
    assert any(p.count("/") >= 4 for p in paths) and any("?" in p for p in paths)
    assert len(set(zip(big.host.tolist(), big.path, strict=True))) == len(big.path)
    assert all(p.startswith("/") and "#" not in p for p in big.path)
    # canonical already: the WHATWG serialisation of each URL is the URL itself
    assert all(canonical(big.url(r)) == big.url(r) for r in range(0, len(big.path), 3))


def test_page_html(small, big):
    for web in (small, big):
        lo, hi = web.config.min_kb * 1024, web.config.max_kb * 1024
        sizes = np.array([len(web.html(p)) for p in range(web.n_pages)])
        assert sizes.min() >= lo and sizes.max() <= hi
        assert (sizes >= web.page_size).all() and (sizes - web.page_size).max() < 64
    assert sizes.max() - sizes.min() > 30 * 1024 and np.median(sizes) < 30 * 1024
    text = big.html(3).decode()
    assert text.startswith("<!DOCTYPE html>") and "<title>" in text and "<h1>" in text
    assert "<h2 " in text and "<p>" in text and text.rstrip().endswith("</html>")
    with pytest.raises(IndexError):
        big.html(2000)


def test_render_speed(big):
    t = time.perf_counter()
    for p in range(1000, 1300):
        big._render(p)
    # timing: a page rendered slower than crawlers fetch makes benchmarks time the server
    assert (time.perf_counter() - t) / 300 < 0.005


def test_hrefs_resolve_to_targets(small, big):
    styles = collections.Counter()
    for web, pages in ((small, range(small.n_pages)), (big, range(0, 2000, 4))):
        for p in pages:
            doc, url = lxml.html.fromstring(web.html(p)), web.url(p)
            got = collections.Counter(_resolve(doc, url))
            got.pop(url, None)  # self links: #top, "", ...
            want = collections.Counter(web.url(t) for t in web.links(p).tolist())
            want.pop(url, None)
            assert got == want, url
            styles["base"] += bool(doc.xpath("//base"))
            for href in doc.xpath("//a/@href"):
                styles["upper"] += href.startswith("HTTP://")
                styles["absolute"] += href.startswith("http://")
                styles["scheme-relative"] += href.startswith("//")
                styles["root"] += href.startswith("/") and not href.startswith("//")
                styles["parent"] += href.startswith("../")
                styles["dot"] += href.startswith("./")
                styles["plain"] += href[:1].isalpha() and ":" not in href
                styles["fragment-only"] += href.startswith("#")
                styles["fragment"] += "#" in href[1:]
                styles["empty"] += href == ""
                styles["query-only"] += href.startswith("?")
                styles["dot-segments"] += "/./" in href or "/../" in href[2:]
    assert min(styles.values()) > 0, styles


def test_redirects(small, big):
    for web in (small, big):
        reds = np.flatnonzero(web.kind == REDIRECT)
        assert reds.size > 0
        statuses, absolute, cross, chains = set(), 0, 0, 0
        for r in reds.tolist():
            status, location = web.redirect(r)
            target = int(web.redirect_target[r])
            statuses.add(status)
            absolute += location.startswith("http://")
            cross += web.host[r] != web.host[target]
            assert canonical(ada_url.join_url(web.url(r), location)) == web.url(target)
            hops = 1
            while web.kind[target] == REDIRECT:
                target, hops = int(web.redirect_target[target]), hops + 1
            assert hops <= 2 and web.kind[target] == PAGE and target in web.moved
            chains += hops == 2
        assert statuses == {301, 302} and 0 < absolute < reds.size and cross and chains
        # moved and unreachable pages are never linked directly
        linked = set(web.link_dst.tolist())
        assert not linked & set(web.moved.tolist()) and not linked & set(web.unreachable.tolist())


def test_robots_agree_with_protego(small, big):
    for web in (small, big):
        parsers = [protego.Protego.parse(web.robots_txt(h) or "") for h in range(web.n_hosts)]
        for r in range(len(web.path)):
            assert parsers[web.host[r]].can_fetch(web.url(r), AGENT) == web.allowed[r], web.url(r)
            assert parsers[web.host[r]].can_fetch(web.url(r), "bspcrawl/0.1 (+x)") == web.allowed[r]
        texts = [web.robots_txt(h) for h in range(web.n_hosts)]
        assert None in texts and "" in texts
        assert any("OtherBot" in (t or "") for t in texts)
        assert any(f"User-agent: {AGENT}".lower() in (t or "").lower() for t in texts)
        assert any(web.disallow)
        # a crawler that ignores robots.txt would fetch disallowed pages
        everything = web.reached((web.resource(u) for u in web.seeds()), obey_robots=False)
        assert (~web.allowed[everything]).sum() > 0


def test_truth_properties(small, big):
    for web in (small, big):
        truth = web.truth()
        assert truth == sorted(set(truth))
        assert set(web.seeds()) <= set(truth) and len(web.seeds()) == web.config.seed_hosts
        ids = [web.resource(u) for u in truth]
        assert min(ids) >= 0 and all(canonical(u) == u for u in truth)
        ids = np.array(ids)
        assert web.allowed[ids].all()
        assert not set(ids.tolist()) & set(web.unreachable.tolist())
        assert not any(u.endswith("/robots.txt") for u in truth)
        assert (web.kind[ids] == DEAD).any() and (web.kind[ids] == REDIRECT).any()
        # a redirect is fetched even when robots.txt forbids its target
        denied = [
            r
            for r in ids.tolist()
            if web.kind[r] == REDIRECT and not web.allowed[web.redirect_target[r]]
        ]
        assert denied and web.url(int(web.redirect_target[denied[0]])) not in truth
        # every URL but the seeds has a fetched predecessor that points at it
        fetched = set(ids.tolist())
        pointed = set(web.resource(s) for s in web.seeds())
        for r in fetched:
            if web.kind[r] == PAGE:
                pointed.update(web.links(r).tolist())
            elif web.kind[r] == REDIRECT:
                pointed.add(int(web.redirect_target[r]))
        assert fetched <= pointed
        # and every allowed resource pointed at by a fetched one is fetched
        assert {r for r in pointed if web.allowed[r]} == fetched


def test_truth_seeds(small):
    home = small.origins[4] + "/"
    assert home in small.truth([small.origins[4].replace("http", "HTTP") + "/x/../#frag"])
    dead = small.origins[0] + "/no-such-page.html"
    assert small.truth([dead]) == [dead]
    for bad in ("ftp://127.1.0.1/", "http://127.1.0.99:1/", "not a url", "http://example.com/"):
        with pytest.raises(ValueError):
            small.truth([bad])


# ------------------------------------------------------------------------------ server


def _get(conn: http.client.HTTPConnection, target: str, method: str = "GET", headers=None):
    conn.request(method, target, headers=headers or {})
    resp = conn.getresponse()
    return resp.status, dict(resp.getheaders()), resp.read()


def _read_all(sock: socket.socket) -> bytes:
    chunks = []
    while chunk := sock.recv(65536):
        chunks.append(chunk)
    return b"".join(chunks)


def test_server_answers(small, tmp_path):
    log = tmp_path / "requests.tsv"
    port = small.config.port
    expected = []

    def get(conn, target, method="GET", headers=None):
        status, headers, body = _get(conn, target, method, headers)
        expected.append((f"{conn.host}:{port}", target, status))
        return status, headers, body

    with running(small, log=log) as server:
        for h in range(small.n_hosts):
            conn = http.client.HTTPConnection(host_address(h), port, timeout=10)
            status, headers, body = get(conn, "/robots.txt")
            text = small.robots_txt(h)
            assert status == (404 if text is None else 200)
            if text is not None:
                assert body.decode() == text and headers["Content-Type"].startswith("text/plain")
            for r in np.flatnonzero(small.host == h)[:12].tolist():  # one keep-alive connection
                status, headers, body = get(conn, small.path[r])
                if small.kind[r] == PAGE:
                    assert status == 200 and body == small.html(r)
                    assert headers["Content-Type"] == "text/html; charset=utf-8"
                    assert int(headers["Content-Length"]) == len(body)
                    status, head, body = get(conn, small.path[r], "HEAD")
                    assert (
                        status == 200
                        and body == b""
                        and head["Content-Length"] == str(len(small.html(r)))
                    )
                    etag = {"If-None-Match": headers["ETag"]}
                    assert get(conn, small.path[r], headers=etag)[0] == 304
            conn.close()
        for r in np.flatnonzero(small.kind != PAGE).tolist():
            conn = http.client.HTTPConnection(host_address(int(small.host[r])), port, timeout=10)
            status, headers, body = get(conn, small.path[r])
            if small.kind[r] == DEAD:
                assert status == 404 and b"<a " not in body
            else:
                assert (status, headers["Location"]) == small.redirect(r)
            conn.close()
        conn = http.client.HTTPConnection(host_address(0), port, timeout=10)
        assert get(conn, "/", "POST")[0] == 405
        assert _get(conn, f"http://127.1.0.1:{port}/")[0] == 200  # absolute-form target
        expected.append((f"127.1.0.1:{port}", "/", 200))
        conn.close()
        with socket.create_connection((host_address(1), port), timeout=10) as s:
            s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n" + b"X-Long: " + b"a" * 20000 + b"\r\n\r\n")
            assert _read_all(s).startswith(b"HTTP/1.1 431 ")
        with socket.create_connection((host_address(1), port), timeout=10) as s:
            s.sendall(b"NONSENSE\r\n\r\n")
            assert _read_all(s).startswith(b"HTTP/1.1 400 ")
        deadline = time.monotonic() + 5
        while server.requests < len(expected) + 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert server.requests == len(expected) + 2
    rows = [line.split("\t") for line in log.read_text().splitlines()]
    assert len(rows) == server.requests
    assert all(len(row) == 5 and float(row[2]) <= float(row[3]) for row in rows)
    got = [(row[0], row[1], int(row[4])) for row in rows if row[4] not in ("400", "431")]
    assert collections.Counter(got) == collections.Counter(expected)


def test_server_concurrent_with_latency(small, tmp_path):
    log = tmp_path / "requests.tsv"
    pages = list(range(small.n_pages))

    def fetch(p: int) -> int:
        conn = http.client.HTTPConnection(
            host_address(int(small.host[p])), small.config.port, timeout=10
        )
        status, _, body = _get(conn, small.path[p])
        conn.close()
        assert body == small.html(p)
        return status

    with running(small, latency=(0.002, 0.02), log=log), ThreadPoolExecutor(32) as pool:
        assert set(pool.map(fetch, pages)) == {200}
    rows = [line.split("\t") for line in log.read_text().splitlines()]
    assert len(rows) == len(pages)
    assert all(float(r[3]) - float(r[2]) >= 0.002 for r in rows)  # timing: a lower bound
    starts = [float(r[2]) for r in rows]  # rows are in finishing order
    assert starts != sorted(starts)


def test_libcurl_resolves_redirects(small):
    """The crawler fetches with libcurl: its idea of each Location must match the truth's."""
    curl = pycurl.Curl()
    curl.setopt(pycurl.WRITEFUNCTION, lambda data: None)
    with running(small):
        for r in np.flatnonzero(small.kind == REDIRECT).tolist():
            curl.setopt(pycurl.URL, small.url(r))
            curl.perform()
            assert curl.getinfo(pycurl.RESPONSE_CODE) == small.redirect(r)[0]
            assert curl.getinfo(pycurl.REDIRECT_URL) == small.url(small.redirect_target[r])
    curl.close()


def test_server_port_in_use(small):
    port = small.config.port
    blocker = socket.socket()
    blocker.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # earlier tests' TIME_WAIT
    try:
        blocker.bind((host_address(3), port))
        blocker.listen()
        with pytest.raises(PortInUseError, match=f"127.1.0.4:{port}"), running(small):
            pass
    finally:
        blocker.close()
    with running(small):  # the earlier listeners were released
        pass


def test_server_stops_open_connections(small):
    with running(small):
        conn = http.client.HTTPConnection(host_address(0), small.config.port, timeout=10)
        assert _get(conn, "/")[0] == 200
    with pytest.raises((ConnectionError, http.client.HTTPException, OSError)):
        _get(conn, "/")


# ------------------------------------------------------------- an independent crawler


def crawl(seeds: list[str]) -> list[str]:
    """Breadth-first crawl obeying robots.txt (protego, product token 'bspcrawl'):
    3xx and 404 answers count as fetched, Locations are followed as new URLs."""
    conns: dict[str, http.client.HTTPConnection] = {}
    robots: dict[str, protego.Protego] = {}

    def get(url: ada_url.URL) -> tuple[int, dict, bytes]:
        if url.host not in conns:
            conns[url.host] = http.client.HTTPConnection(url.hostname, int(url.port), timeout=10)
        return _get(conns[url.host], url.pathname + url.search)

    seen = {canonical(s) for s in seeds}
    queue, fetched = deque(sorted(seen)), []
    while queue:
        url = queue.popleft()
        u = ada_url.URL(url)
        if u.host not in robots:
            status, _, body = get(ada_url.URL(u.origin + "/robots.txt"))
            robots[u.host] = protego.Protego.parse(body.decode() if status == 200 else "")
        if not robots[u.host].can_fetch(url, "bspcrawl/0.1"):
            continue
        status, headers, body = get(u)
        fetched.append(url)
        if status in (301, 302, 303, 307, 308):
            found = [ada_url.join_url(url, headers["Location"])]
        elif status == 200 and headers["Content-Type"].startswith("text/html"):
            found = page_links(body, url)
        else:
            found = []
        for link in found:
            link = canonical(link)
            if link.startswith("http://") and link not in seen:
                seen.add(link)
                queue.append(link)
    for conn in conns.values():
        conn.close()
    return sorted(fetched)


def test_crawl_equals_truth(small, tmp_path):
    log = tmp_path / "requests.tsv"
    with running(small, log=log):
        fetched = crawl(small.seeds())
    truth = small.truth()
    assert fetched == truth
    rows = [line.split("\t") for line in log.read_text().splitlines()]
    requested = {f"http://{r[0]}{r[1]}" for r in rows if r[1] != "/robots.txt"}
    assert requested == set(truth)
    assert all(small.allowed[small.resource(u)] for u in requested)
    # requests of one host never overlap (this crawler is sequential)
    by_host = collections.defaultdict(list)
    for r in rows:
        by_host[r[0]].append((float(r[2]), float(r[3])))
    for spans in by_host.values():
        spans.sort()
        assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:], strict=False))


@pytest.mark.slow
def test_crawl_equals_truth_default_web():
    web = Web(WebConfig(port=free_port(50)))  # the demo's web: 2000 pages, 50 hosts
    with running_process(web):
        assert crawl(web.seeds()) == web.truth()


# --------------------------------------------------------------------------------- CLI


def _parse(argv: list[str], command: str | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_arguments(parser, command)
    return parser.parse_args(argv)


def test_cli_hooks(tmp_path, capsys):
    args = _parse(["--pages", "300", "--hosts", "10", "--seed", "3", "--dead-links", "0.05"])
    config = config_from_args(args)
    assert config == WebConfig(pages=300, hosts=10, seed=3, dead_links=0.05)
    assert config_from_args(_parse(config_argv(config))) == config
    assert args.latency is None and args.seeds is None
    assert _parse(["--latency", "0.01,0.05"], "serve").latency == (0.01, 0.05)
    with pytest.raises(SystemExit):
        _parse(["--latency", "2,1"], "serve")
    assert cmd_seeds(args) == 0
    assert capsys.readouterr().out.split() == Web(config).seeds()
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("# comment\n\nhttp://127.1.0.5:8765/\n")
    assert (
        cmd_truth(
            _parse(
                [
                    "--pages",
                    "300",
                    "--hosts",
                    "10",
                    "--seed",
                    "3",
                    "--dead-links",
                    "0.05",
                    "--seeds",
                    str(seeds),
                ],
                "truth",
            )
        )
        == 0
    )
    assert capsys.readouterr().out.split() == Web(config).truth(["http://127.1.0.5:8765/"])
    with pytest.raises(ValueError, match="cannot read"):
        cmd_truth(_parse(["--seeds", str(tmp_path / "missing")], "truth"))
    with pytest.raises(ValueError):
        config_from_args(_parse(["--pages", "5"]))


def test_cli_serve_sigterm():
    port = free_port(3)
    with subprocess.Popen(
        [
            sys.executable,
            "-m",
            "bspcrawl.testweb",
            "serve",
            "--pages",
            "30",
            "--hosts",
            "3",
            "--port",
            str(port),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    ) as proc:
        try:
            line = proc.stdout.readline()
            assert f"port {port}" in line and "127.1.0.1" in line and "127.1.0.3" in line
            conn = http.client.HTTPConnection(host_address(2), port, timeout=10)
            assert _get(conn, "/")[0] == 200
            conn.close()
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(timeout=10) == 0
            assert proc.stderr.read() == ""
        finally:
            if proc.poll() is None:
                proc.kill()


def test_cli_serve_port_in_use():
    port = free_port(1)
    with socket.socket() as blocker:
        blocker.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        blocker.bind((host_address(0), port))
        blocker.listen()
        out = subprocess.run(
            [
                sys.executable,
                "-m",
                "bspcrawl.testweb",
                "serve",
                "--pages",
                "30",
                "--hosts",
                "3",
                "--port",
                str(port),
            ],
            capture_output=True,
            text=True,
            timeout=30,
        )
    assert out.returncode == 2 and f"127.1.0.1:{port}" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1


def test_running_process(small, tmp_path):
    log = tmp_path / "requests.tsv"
    with running_process(small, latency=(0.001, 0.002), log=log) as proc:
        conn = http.client.HTTPConnection(host_address(1), small.config.port, timeout=10)
        status, _, body = _get(conn, "/")
        assert status == 200 and body == small.html(small.site_start[1])
        conn.close()
    assert proc.returncode == 0
    assert log.read_text().startswith(f"{small.netlocs[1]}\t/\t")
    with socket.socket() as blocker:
        blocker.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        blocker.bind((host_address(0), small.config.port))
        blocker.listen()
        with pytest.raises(OSError, match=f"127.1.0.1:{small.config.port}"), running_process(small):
            pass


def test_threads_do_not_leak(small):
    before = threading.active_count()
    with running(small):
        pass
    assert threading.active_count() == before
