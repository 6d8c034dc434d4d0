"""The robots: libcurl transfers, per-host order and delay, error kinds, caps, protocols."""

import contextlib
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from bspcrawl.messages import FetchJob
from bspcrawl.robots.fetcher import Fetcher
from bspcrawl.settings import Settings


class Handler(BaseHTTPRequestHandler):
    log: list[tuple[str, float, float]] = []

    sent_etags: list[bytes] = []

    def do_GET(self):  # noqa: N802 (http.server's name)
        start = time.monotonic()
        if "If-None-Match" in self.headers:
            Handler.sent_etags.append(self.headers["If-None-Match"].encode("latin-1"))
        if self.path.startswith("/slow"):
            time.sleep(0.05)
        body = b"x" * (3_000_000 if self.path == "/big" else 100)
        if self.path == "/redirect":
            self.send_response(301)
            self.send_header("Location", "/target")
            self.send_header("Content-Length", "0")
            self.end_headers()
        else:
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        Handler.log.append((self.path, start, time.monotonic()))

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def server():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.handle_error = lambda *_: None  # a transfer cut at its cap closes the connection
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()


def served(paths, wait=5.0):
    """The server's log entries of ``paths``, in the order logged. It logs a request just
    after its response, so the client may have the answer first: wait for them all."""
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline and not set(paths) <= {p for p, _, _ in Handler.log}:
        time.sleep(0.01)
    return [entry for entry in Handler.log if entry[0] in paths]


def fetch_all(jobs, **settings):
    settings.setdefault("fetch_allow_net", ["127.0.0.0/8"])
    f = Fetcher(Settings(**settings).validate())
    try:
        f.submit(jobs)
        results = []
        deadline = time.monotonic() + 30
        while len(results) < len(jobs) and time.monotonic() < deadline:
            r = f.get(timeout=0.1)
            if r is not None:
                results.append(r)
        return results
    finally:
        f.close()


def test_one_request_per_host_at_a_time_in_order_with_the_delay(server):
    paths = [f"/slow-order{i}" for i in range(4)]
    jobs = [FetchJob(0, i, f"{server}{path}", "h", delay=0.1) for i, path in enumerate(paths)]
    results = fetch_all(jobs, fetch_workers=4)
    assert [r.job.index for r in results] == [0, 1, 2, 3]
    assert all(r.status == 200 and len(r.body) == 100 for r in results)
    starts = [s for p, s, e in served(paths)]
    for before, start in zip(starts, starts[1:], strict=False):
        assert start - before >= 0.1  # timing: the delay, a lower bound (start to start)


def most_at_once(spans, slack=0.002):
    """The most of the (start, end) spans that overlap at one moment, each span's end
    taken ``slack`` s earlier: the server stamps an end once its write returns, by which
    time the client may have read the answer and sent its next request (79 µs seen on a
    loaded machine), a sequence, not two requests at once."""
    events = sorted([(s, 1) for s, _ in spans] + [(e - slack, -1) for _, e in spans])
    at_once = most = 0
    for _, step in events:
        at_once += step
        most = max(most, at_once)
    return most


@pytest.mark.parametrize(("connections", "factor", "most"), [(3, 0.0, 3), (1, 0.0, 1),
                                                              (3, 1.0, 1)])
def test_host_connections_bound_an_unpaced_hosts_transfers(server, connections, factor, most):
    # up to N transfers at once to an unpaced host, one to a paced host, whatever N
    paths = [f"/slow-c{connections}-f{factor}-{i}" for i in range(9)]
    jobs = [FetchJob(0, i, f"{server}{path}", "h") for i, path in enumerate(paths)]
    results = fetch_all(jobs, fetch_workers=8, politeness_host_connections=connections,
                        politeness_min_host_delay=0, politeness_response_factor=factor)
    assert sorted(r.job.index for r in results) == list(range(9))
    assert all(r.status == 200 for r in results)
    assert most_at_once([(s, e) for _, s, e in served(paths)]) == most


def test_different_hosts_run_concurrently(server):
    paths = [f"/slow-hosts{i}" for i in range(4)]
    jobs = [FetchJob(0, i, f"{server}{path}", f"h{i}") for i, path in enumerate(paths)]
    fetch_all(jobs, fetch_workers=4)
    log = served(paths)
    assert max(s for _, s, _ in log) < min(e for _, _, e in log)  # all started before one ended


def test_free_robots_go_to_the_oldest_schedule_then_the_longest_queue(server):
    # one robot, busy with w while the rest arrive: z's schedule is older than x's and y's;
    # x has three jobs queued against y's one, so x runs until its queue is no longer than
    # y's, and then the host that waited longer goes first
    jobs = [FetchJob(0, 0, f"{server}/slow", "w"), FetchJob(2, 0, f"{server}/y", "y")]
    jobs += [FetchJob(2, i, f"{server}/x{i}", "x") for i in (1, 2, 3)]
    jobs += [FetchJob(1, 0, f"{server}/z", "z")]
    results = fetch_all(jobs, fetch_workers=1)
    assert [r.job.host for r in results] == ["w", "z", "x", "x", "y", "x"]
    assert [r.job.index for r in results if r.job.host == "x"] == [1, 2, 3]


def test_error_kinds_caps_and_redirects_are_data(server):
    jobs = [FetchJob(0, 0, f"{server}/big", "a"),
            FetchJob(0, 1, "http://127.0.0.1:9/", "b"),  # discard port: refused
            FetchJob(0, 2, "file:///etc/passwd", "c"),
            FetchJob(0, 3, f"{server}/redirect", "d"),
            FetchJob(0, 4, "http://exa mple.org/", "e")]
    got = {r.job.index: r for r in fetch_all(jobs, fetch_max_bytes=1_000_000)}
    # issue 14: a body over the cap is kept, cut, and marked (it was dropped as too_large)
    assert (got[0].error, got[0].status, got[0].truncated) == ("", 200, True)
    assert got[0].body == b"x" * 1_000_000
    assert got[1].error == "connect"
    assert got[2].error in ("protocol", "invalid_url") and got[2].body == b""
    assert got[3].status == 301 and got[3].location == "/target"  # not followed
    assert got[4].error


MALFORMED = {  # raw replies of a broken or hostile server, and the error kind each gives
    "/http09": (b"no status line\r\n\r\n", "protocol"),
    "/two-lengths": (b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 5\r\n\r\nok",
                     "bad_reply"),
    "/huge-header": (b"HTTP/1.1 200 OK\r\nX-A: " + b"a" * 400_000 + b"\r\n\r\n",
                     "headers_too_large"),
    "/bad-chunk": (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nZZZ\r\n", "recv"),
    "/bad-gzip": (b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 4\r\n\r\nnope",
                  "encoding"),
    "/short": (b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nshort", "partial"),
    "/nothing": (b"", "empty_reply"),
}


@pytest.fixture(scope="module")
def raw_server():
    """A server that answers each path of ``MALFORMED`` with its raw bytes, then closes."""
    srv = socket.create_server(("127.0.0.1", 0))

    def handle(conn: socket.socket) -> None:
        with conn:
            request = b""
            while b"\r\n\r\n" not in request and (data := conn.recv(4096)):
                request += data
            conn.sendall(MALFORMED[request.split(b" ")[1].decode()][0])

    def serve() -> None:
        with contextlib.suppress(OSError):
            while True:
                threading.Thread(target=handle, args=(srv.accept()[0],), daemon=True).start()

    threading.Thread(target=serve, daemon=True).start()
    yield f"http://127.0.0.1:{srv.getsockname()[1]}"
    srv.close()


def test_malformed_replies_are_errors_of_their_kind(raw_server):
    jobs = [FetchJob(0, i, raw_server + path, "h") for i, path in enumerate(MALFORMED)]
    got = {r.job.index: r for r in fetch_all(jobs)}
    assert {path: (got[i].error, got[i].status, got[i].body)
            for i, path in enumerate(MALFORMED)} == {
        path: (kind, 0, b"") for path, (_, kind) in MALFORMED.items()}


@pytest.mark.parametrize("url", ["http://127.0.0.1:{port}/", "http://localhost:{port}/",
                                 "http://[::ffff:127.0.0.1]:{port}/"])
def test_loopback_is_refused_unless_allowed_even_through_a_name(server, url):
    url = url.format(port=server.rsplit(":", 1)[1])
    (refused,) = fetch_all([FetchJob(0, 0, url, "h")], fetch_allow_net=[])
    assert refused.error == "blocked_address" and refused.status == 0
    assert served(["/"], wait=0.3) == []  # the server never saw a connection's request
    (other,) = fetch_all([FetchJob(0, 0, url, "h")], fetch_allow_net=["10.0.0.0/8"])
    assert other.error == "blocked_address"


def test_a_header_value_from_the_server_is_sent_back_byte_for_byte(server):
    # regression (issue 14): an ETag with bytes >= 0x80 (decoded as latin-1) made pycurl's
    # HTTPHEADER raise UnicodeEncodeError, which killed the fetcher thread
    etag = b'"caf\xe9\xff"'.decode("latin-1")
    f = Fetcher(Settings(fetch_allow_net=["127.0.0.0/8"]).validate())
    try:
        f.submit([FetchJob(0, 0, f"{server}/a", "h", headers=(f"If-None-Match: {etag}",)),
                  FetchJob(0, 1, f"{server}/b", "h", headers=("X-Bad: \u20ac\x00",))])
        got = [f.get(timeout=10) for _ in range(2)]
        assert f.healthy(5.0)
    finally:
        f.close()
    # a header libcurl cannot send (a NUL) is that job's error, not the thread's death
    assert sorted((r.job.index, r.status, r.error) for r in got) == [
        (0, 200, ""), (1, 0, "bad_request")]
    assert Handler.sent_etags[-1] == etag.encode("latin-1")


def test_proxies_from_the_environment_are_ignored(server, monkeypatch):
    # regression (issue 14): with http_proxy set, libcurl went through the proxy, and the
    # address guard checked the proxy's address instead of the site's
    monkeypatch.setenv("http_proxy", "http://127.0.0.1:9")  # the discard port: refused
    monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.1:9")
    (direct,) = fetch_all([FetchJob(0, 0, f"{server}/a", "h")])
    assert (direct.status, direct.error) == (200, "")
    (proxied,) = fetch_all([FetchJob(0, 0, f"{server}/a", "h")],
                           fetch_proxy="http://127.0.0.1:9")
    assert proxied.status == 0 and proxied.error == "connect"
