"""RFC 9309 and politeness, measured from the server's side against scripted sites."""

import gzip

import pytest

from bspcrawl.messages import FRESH, FetchJob, FetchResult
from bspcrawl.robots.politeness import Politeness, backoff, retry_after
from tests.sites import Site, crawl_here, page


@pytest.fixture
def site(request):
    s = Site(request.param)
    yield s
    s.close()


def urls_of(f):
    return dict(zip(f["pages/url"].asstr()[:], f["pages/status"][:].tolist(), strict=True))


ROBOTS_404 = {"/robots.txt": [(404, {}, b"")]}


@pytest.mark.parametrize("site", [{**ROBOTS_404, "/": [page("/a", "/b")],
                                   "/a": [page()], "/b": [page()]}], indirect=True)
def test_robots_404_allows_everything(site, tmp_path):
    with crawl_here(tmp_path, [site.url + "/"]) as f:
        assert set(urls_of(f)) == {site.url + p for p in ("/", "/a", "/b")}
    assert site.paths().count("/robots.txt") == 1


@pytest.mark.parametrize("site", [{
    "/robots.txt": [(500, {"Retry-After": "0"}, b""), (200, {}, b"User-agent: *\nDisallow: /b")],
    "/": [page("/a", "/b")], "/a": [page()], "/b": [page()]}], indirect=True)
def test_robots_5xx_is_retried_and_urls_wait_for_the_answer(site, tmp_path):
    with crawl_here(tmp_path, [site.url + "/"]) as f:
        assert set(urls_of(f)) == {site.url + "/", site.url + "/a"}
    assert site.paths()[:2] == ["/robots.txt", "/robots.txt"]


@pytest.mark.parametrize("site", [{"/robots.txt": [(503, {"Retry-After": "0"}, b"")],
                                   "/": [page("/a")]}], indirect=True)
def test_robots_always_5xx_disallows_everything_after_the_retries(site, tmp_path):
    with crawl_here(tmp_path, [site.url + "/"], robotstxt_retries=2) as f:
        assert urls_of(f) == {}
    assert site.paths() == ["/robots.txt"] * 3


def _redirect_to(path):
    return 302, {"Location": path}, b""


@pytest.mark.parametrize("site", [{"/robots.txt": [_redirect_to("/r1")],
                                   "/r1": [_redirect_to("/robots.txt")],
                                   "/": [page("/a")], "/a": [page()]}], indirect=True)
def test_robots_redirect_loop_means_unavailable_so_allow_all(site, tmp_path):
    with crawl_here(tmp_path, [site.url + "/"]) as f:
        assert set(urls_of(f)) == {site.url + "/", site.url + "/a"}


@pytest.mark.parametrize("site", [{
    "/robots.txt": [(200, {"Content-Type": "text/plain"},
                     b"User-agent: *\nDisallow: /x\n" + b"#" * 600_000 + b"\nDisallow: /a\n")],
    "/": [page("/a", "/x")], "/a": [page()], "/x": [page()]}], indirect=True)
def test_robots_is_read_up_to_500_kib(site, tmp_path):
    with crawl_here(tmp_path, [site.url + "/"]) as f:
        assert set(urls_of(f)) == {site.url + "/", site.url + "/a"}  # /a's rule is past 500 KiB


@pytest.mark.parametrize("site", [{
    "/robots.txt": [(200, {}, b"User-agent: *\nCrawl-delay: 0.3\n")],
    "/": [page("/a", "/b", "/c")], "/a": [page()], "/b": [page()], "/c": [page()]}],
    indirect=True)
def test_crawl_delay_is_honoured_between_requests(site, tmp_path):
    with crawl_here(tmp_path, [site.url + "/"]) as f:
        assert len(urls_of(f)) == 4
    # timing: a lower bound, start to start: the server stamps a start before it answers,
    # and the crawler rests from the answer's end, so load can only lengthen the gaps
    starts = sorted(s for p, s, _, _ in site.log if p != "/robots.txt")
    gaps = [b - a for a, b in zip(starts, starts[1:], strict=False)]
    assert min(gaps) >= 0.29, gaps


@pytest.mark.parametrize("site", [{
    **ROBOTS_404, "/": [page("/a", "/b", "/c", "/d")], "/a": [page()], "/b": [page()],
    "/c": [page()], "/d": [page()]}], indirect=True)
def test_min_delay_and_response_factor_pace_a_host(site, tmp_path):
    with crawl_here(tmp_path, [site.url + "/"], politeness_min_host_delay=0.2,
                    politeness_response_factor=1.0) as f:
        assert len(urls_of(f)) == 5
    starts = sorted(s for _, s, _, _ in site.log)  # timing: a lower bound, as above
    assert all(b - a >= 0.19 for a, b in zip(starts, starts[1:], strict=False))


@pytest.mark.parametrize("site", [{
    **ROBOTS_404, "/": [page("/busy")],
    "/busy": [(429, {"Retry-After": "1"}, b""), (503, {}, b""), page(text="finally")]}],
    indirect=True)
def test_429_and_503_are_retried_after_retry_after_and_committed_once(site, tmp_path):
    with crawl_here(tmp_path, [site.url + "/"], politeness_max_backoff=1.5) as f:
        assert urls_of(f) == {site.url + "/": 200, site.url + "/busy": 200}
    busy = [s for p, s, _, _ in site.log if p == "/busy"]  # timing: lower bounds, as above
    assert len(busy) == 3
    assert busy[1] - busy[0] >= 0.99  # Retry-After: 1
    assert busy[2] - busy[1] >= 1.49  # no header: backoff 5 s, capped at 1.5 s


@pytest.mark.parametrize("site", [{
    **ROBOTS_404, "/": [page("/busy")], "/busy": [(503, {"Retry-After": "0"}, b"")]}],
    indirect=True)
def test_a_url_that_stays_503_is_committed_with_its_last_answer(site, tmp_path):
    with crawl_here(tmp_path, [site.url + "/"], politeness_retries=1) as f:
        assert urls_of(f)[site.url + "/busy"] == 503
    assert site.paths().count("/busy") == 2


@pytest.mark.parametrize("site", [{
    **ROBOTS_404, "/": [page("/a", "/b")],
    "/a": [(200, {"X-Robots-Tag": "nofollow"}, page("/hidden")[2])],
    "/b": [(200, {"X-Robots-Tag": "otherbot: noindex, bspcrawl: noindex"},
            page(text="secretword")[2])],
    "/hidden": [page()]}], indirect=True)
def test_x_robots_tag_nofollow_and_noindex(site, tmp_path):
    with crawl_here(tmp_path, [site.url + "/"]) as f:
        assert set(urls_of(f)) == {site.url + p for p in ("/", "/a", "/b")}
        terms = {bytes(t).decode() for t in f["ranks/0000/search/vocab"][:]}
    assert "secretword" not in terms and "hello" in terms


@pytest.mark.parametrize("site", [{
    **ROBOTS_404, "/": [page("/r0", "/loop1")],
    **{f"/r{i}": [_redirect_to(f"/r{i + 1}")] for i in range(8)}, "/r8": [page()],
    "/loop1": [_redirect_to("/loop2")], "/loop2": [_redirect_to("/loop1")]}], indirect=True)
def test_redirect_chains_stop_at_the_hop_limit_and_loops_end(site, tmp_path):
    with crawl_here(tmp_path, [site.url + "/"], fetch_max_redirects=5) as f:
        got = urls_of(f)
    assert {u for u in got if "/r" in u} == {f"{site.url}/r{i}" for i in range(6)}
    assert got[site.url + "/loop1"] == 302 and got[site.url + "/loop2"] == 302
    assert site.paths().count("/loop1") == 1


def _bomb(handler):
    raw = gzip.compress(b"\0" * 20_000_000)
    handler.send_response(200)
    handler.send_header("Content-Type", "text/html")
    handler.send_header("Content-Encoding", "gzip")
    handler.send_header("Content-Length", str(len(raw)))
    handler.end_headers()
    handler.wfile.write(raw)


def _trickle(handler):
    handler.send_response(200)
    handler.send_header("Content-Type", "text/html")
    handler.send_header("Content-Length", "1000")
    handler.end_headers()
    for _ in range(20):
        handler.wfile.write(b"x")
        handler.wfile.flush()
        __import__("time").sleep(0.25)


@pytest.mark.parametrize("site", [{**ROBOTS_404, "/": [page("/bomb", "/slow")],
                                   "/bomb": [_bomb], "/slow": [_trickle]}], indirect=True)
def test_a_decompression_bomb_and_a_trickling_server_are_cut_off(site, tmp_path):
    with crawl_here(tmp_path, [site.url + "/"], fetch_max_bytes=1_000_000,
                    fetch_timeout=3.0, fetch_low_speed=100) as f:
        errors = dict(zip(f["pages/url"].asstr()[:], f["pages/error"].asstr()[:], strict=True))
        elapsed = dict(zip(f["pages/url"].asstr()[:], f["pages/elapsed"][:], strict=True))
        cut = dict(zip(f["pages/url"].asstr()[:], f["pages/truncated"][:], strict=True))
        length = dict(zip(f["pages/url"].asstr()[:], f["pages/length"][:], strict=True))
    assert errors[site.url + "/bomb"] == "" and cut[site.url + "/bomb"] == 1
    assert length[site.url + "/bomb"] == 1_000_000 and cut[site.url + "/slow"] == 0
    # timing: only the time tells the low-speed cut (1 s) from the whole timeout (3 s)
    assert errors[site.url + "/slow"] == "timeout" and elapsed[site.url + "/slow"] < 2.5


def test_retry_after_forms_and_backoff():
    assert retry_after("120") == 120.0
    assert retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now=1445412480 - 30) == 30.0
    assert retry_after("soon") is None and retry_after("") is None


def test_retry_after_of_any_bytes_is_a_number_or_none():
    # regression (issue 14): "²" passed str.isdigit() and float() raised; a huge year raised
    # OverflowError; 5,000 digits made int() raise. Each killed the fetcher thread.
    assert retry_after("²") is None and retry_after("١٢") is None  # not ASCII digits
    assert retry_after("Wed, 21 Oct 9999999999999 07:28:00 GMT") is None
    assert retry_after("Wed, 21 Oct 99999 07:28:00 GMT") is None
    assert retry_after("9" * 5000) == 1e9 and retry_after("0" * 50 + "7") == 7.0
    assert backoff(1, None, 300) == 5 and backoff(3, None, 300) == 20
    assert backoff(1, 1000.0, 300) == 300


def _answer(status, delay=1.0, elapsed=0.8, attempt=0, robotstxt=False, **kw):
    job = FetchJob(0, 0, "http://h/", "h:80", delay, robotstxt, attempt=attempt)
    return FetchResult(job, status=status, elapsed=elapsed, **kw)


def test_one_rest_rule_for_every_answer():
    rule = Politeness(min_delay=1.0, max_crawl_delay=30.0, factor=2.0, max_backoff=300.0)
    assert rule.rest(_answer(200)) == 1.6  # k x the response time
    assert rule.rest(_answer(200, elapsed=0.1)) == 1.0  # the host's delay
    assert rule.rest(_answer(200, revisit=FRESH)) == 0.0  # nothing was fetched
    assert rule.rest(_answer(429)) == 5.0 and rule.rest(_answer(503, attempt=2)) == 20.0
    assert rule.rest(_answer(429, retry_after=60.0)) == 60.0
    assert rule.rest(_answer(429, retry_after=1e9)) == 300.0  # capped
    assert rule.rest(_answer(500, robotstxt=True, attempt=1)) == 10.0  # robots.txt 5xx
    assert rule.rest(_answer(0, robotstxt=True, error="connect")) == 5.0
    assert rule.rest(_answer(404, robotstxt=True)) == 1.6  # 4xx: allow all, no backoff
    assert rule.rest(_answer(500)) == 1.6  # a page's 500 is an answer, not a backoff
    assert rule.delay(None) == 1.0 and rule.delay(7.5) == 7.5 and rule.delay(1e6) == 30.0
    unpaced = Politeness(0.0, 30.0, 0.0, 300.0)
    assert not unpaced.paced and unpaced.rest(_answer(200, delay=0.0)) == 0.0


def _slow_page(handler):
    __import__("time").sleep(2.0)
    body = b"<html><body>late but here</body></html>"
    handler.send_response(200)
    handler.send_header("Content-Type", "text/html")
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)


@pytest.mark.parametrize("site", [{**ROBOTS_404, "/": [page("/slow", "/a", "/b")],
                                   "/slow": [_slow_page], "/a": [page()], "/b": [page()]}],
                         indirect=True)
def test_a_straggler_is_deferred_then_committed_once(site, tmp_path):
    with crawl_here(tmp_path, [site.url + "/"], window_straggler_timeout=0.3,
                    fetch_workers=2) as f:
        got = urls_of(f)
        stats = f["stats"][:]
    assert got == {site.url + p: 200 for p in ("/", "/slow", "/a", "/b")}
    deferred = stats["window/deferred"][-1]
    assert deferred >= 1 and stats["window/late"][-1] == deferred


@pytest.mark.parametrize("site", [{**ROBOTS_404, "/": [page("/hang", "/a", "/b")],
                                   "/hang": [page()], "/a": [page()], "/b": [page()]}],
                         indirect=True)
def test_a_hung_robot_is_replaced_and_its_jobs_rescheduled(site, tmp_path, monkeypatch):
    monkeypatch.setenv("BSPCRAWL_FAULT", "hang:/hang")  # the fetcher thread blocks forever
    with crawl_here(tmp_path, [site.url + "/"], window_straggler_timeout=0.5) as f:
        errors = dict(zip(f["pages/url"].asstr()[:], f["pages/error"].asstr()[:], strict=True))
        stats = f["stats"][:]
    assert errors == {site.url + "/": "", site.url + "/a": "", site.url + "/b": "",
                      site.url + "/hang": "robot_hang"}
    assert stats["fetcher/replaced"][-1] == 3 and stats["window/rescheduled"][-1] >= 2
