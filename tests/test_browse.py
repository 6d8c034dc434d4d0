"""``bspcrawl serve`` over HTTP (routes, rewriting, safety), the live status page of
``run --status-port`` and its stop button, and bad input to both."""

import re
import subprocess
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from bspcrawl.browse import pages
from bspcrawl.browse.rewrite import rewrite_html
from bspcrawl.browse.server import BrowseApp, make_server
from bspcrawl.browse.status import StatusBoard
from bspcrawl.browse.view import Capture, CrawlView
from bspcrawl.index import inspect
from bspcrawl.index.cdxj import timestamp14
from bspcrawl.index.history import Version
from bspcrawl.testweb import free_port
from tests.archives import crawl_with_history
from tests.crawling import ENV, PY, UNPACED, serve

TS = "20991231000000"  # after every capture: the newest version


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    history = crawl_with_history(tmp_path_factory.mktemp("browse"))
    server = make_server(BrowseApp(CrawlView(history.out)), "127.0.0.1", 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield history, f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def get(url: str, data: bytes | None = None) -> tuple[int, dict[str, str], str]:
    """Status, headers and text of a request (no redirect followed)."""

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args, **kw):
            return None

    try:
        with urllib.request.build_opener(NoRedirect).open(url, data, timeout=30) as r:
            return r.status, dict(r.headers), r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read().decode()


def test_cached_page_banner_and_content(app):
    history, base = app
    url = history.changed_url
    versions = inspect.versions(history.out, url)
    old, new = versions[0][0], versions[-1][0]
    status, headers, page = get(f"{base}/web/{timestamp14(old.time)}/{url}")
    assert status == 200 and "script-src" not in headers["Content-Security-Policy"]
    assert "<script" not in page and 'sandbox="allow-top-navigation-by-user-activation"' in page
    assert f'rel="next" href="/web/{timestamp14(new.time)}/{url}"' in page
    assert "prev: none" in page and f'href="{url}"' in page  # the live URL
    status, headers, content = get(f"{base}/web/{timestamp14(old.time)}if_/{url}")
    csp = headers["Content-Security-Policy"]
    assert status == 200 and "default-src 'none'" in csp and "sandbox" in csp
    assert "script" not in csp.replace("default-src", "")
    links = re.findall(r'<a href="([^"]+)"', content)
    assert links and all(h.startswith(f"/web/{timestamp14(old.time)}/http") or
                         h.startswith("#") for h in links)
    old_body = inspect.body(*versions[0]).decode()
    assert old_body != inspect.body(*versions[-1]).decode()
    title = re.search(r"<title>(.*?)</title>", old_body).group(1)
    assert title in content


def test_versions_diff_search_and_stats(app):
    history, base = app
    url = history.changed_url
    status, _, page = get(f"{base}/web/*/{url}")
    assert status == 200 and page.count('class="version"') == 2
    a, b = re.findall(r'<option value="(\d{14})"', page)[:2]
    status, _, page = get(f"{base}/diff?url={url}&a={a}&b={b}")
    assert status == 200 and ('class="add"' in page or 'class="del"' in page)
    status, _, page = get(f"{base}/search?q=hostile")  # words: the BM25 ranking
    assert status == 200 and 'href="/web/' in page
    first = re.search(r'<a class="result" href="/web/\d{14}/([^"]+)"', page).group(1)
    assert first == history.hostile_url and 'class="snippet"' in page
    host = history.hostile_url.split("/")[2]  # an address: titles and URLs, plainly
    status, _, page = get(f"{base}/search?q={host}")
    found = re.findall(r'<a class="result" href="/web/\d{14}/([^"]+)"', page)
    assert status == 200 and history.hostile_url in found
    assert all(u.split("/")[2] == host for u in found)
    status, _, page = get(f"{base}/stats")
    assert status == 200 and page.count('<svg class="chart"') == 4
    assert "pages per second" in page and "rank 0" in page


def test_a_timestamp_names_its_own_version_and_one_second_holds_two():
    """A capture's own 14-digit timestamp picks it, though another is nearer its second's
    start; two captures of one second are told apart in the diff form by exact time."""
    url, start = "http://127.1.0.1/x", inspect.parse_time("20261126202018")
    captures = [Capture(url, t, timestamp14(t), 200, Version(1, t, 200, i), None)
                for i, t in enumerate((start + 0.95, start + 1.9, start + 1.95))]
    first, second, third = captures
    assert second.ts == third.ts != first.ts
    assert CrawlView.nearest(captures, second.ts, inspect.parse_time(second.ts)) is second
    assert CrawlView.nearest(captures, first.ts, start) is first
    assert CrawlView.nearest(captures, "20261126202017", start - 1) is first  # none own it
    values = re.findall(r'<option value="([^"]+)"', pages.versions(url, captures))[:3]
    assert values == [first.ts, f"@{second.time!r}", f"@{third.time!r}"]
    assert [CrawlView.nearest(captures, v, inspect.parse_time(v)) for v in values] == captures


def test_redirects_unknown_urls_and_paths_outside_the_crawl(app):
    history, base = app
    status, _, page = get(f"{base}/web/{TS}/http://127.9.9.9/never")
    assert status == 404 and "not in this crawl" in page
    for path in ["/../../../../etc/passwd", "/web/../crawl.h5", "/%2e%2e/%2e%2e/etc/passwd",
                 "/crawl.h5", "/warc/rank-0000-00000.warc.gz", "/web/2024/..%2f..%2fcrawl.h5",
                 f"/web/{TS}/file:///etc/passwd", f"/web/{TS}if_/../../etc/passwd"]:
        req = urllib.request.Request(base + "/")
        req.selector = path  # sent as is, not normalised
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                status, text = r.status, r.read()
        except urllib.error.HTTPError as e:
            status, text = e.code, e.read()
        assert status == 404 and b"root:" not in text and b"HDF" not in text, path
    assert get(f"{base}/stop", b"token=x")[0] == 405  # read-only


def test_rewriting_removes_everything_active():
    html = rewrite_html(
        b'<base href="http://b.org/d/"><script>x()</script><a href="p" onclick="x()">p</a>'
        b'<img src="//cdn.org/i.png" srcset="a 2x"><iframe src="http://e.org/"></iframe>'
        b'<a href="javascript:x()">j</a><a href="#top">t</a><link rel=stylesheet href=s.css>'
        b'<meta http-equiv="refresh" content="0;url=http://e.org/">'
        b'<svg><image xlink:href="http://e.org/i.svg"/></svg>', "http://a.org/", "2024")
    assert 'xlink:href="/web/2024if_/http://e.org/i.svg"' in html
    assert '<a href="/web/2024/http://b.org/d/p" target="_top">' in html
    assert 'src="/web/2024if_/http://cdn.org/i.png"' in html
    assert 'href="/web/2024if_/http://b.org/d/s.css"' in html and 'href="#top"' in html
    for gone in ("script", "onclick", "srcset", "iframe", "javascript", "refresh", "<base"):
        assert gone not in html


def test_status_board_serves_live_counters_and_a_guarded_stop(tmp_path):
    (tmp_path / "segments").mkdir()  # a crawl runs there
    board = StatusBoard(tmp_path, "127.0.0.1", 0)
    try:
        g = {"pages/committed": 10, "pages/ok": 9, "pages/errors": 1, "pages/bytes": 999,
             "frontier/size": 5, "frontier/seen": 20, "window/unreleased": 2,
             "stop/requested": 0}
        board.update(3, g)
        board.update(4, {**g, "pages/committed": 25})
        status, _, page = get(board.url)
        assert status == 200 and "Live status" in page and page.count('<svg class="chart"') == 3
        assert "<td>pages</td><td>25</td>" in page
        token = re.search(r'name="token" value="([^"]+)"', page).group(1)
        stop = board.url.replace("/stats", "/stop")
        assert get(stop, b"token=forged")[0] == 403 and not (tmp_path / "stop").exists()
        assert get(stop, f"token={token}".encode())[0] == 303
        assert (tmp_path / "stop").exists()
    finally:
        board.close()


def test_run_with_status_port_stops_from_the_page(tmp_path):
    port = free_port(1)
    with serve(400, 4) as web:
        seeds = tmp_path / "seeds.txt"
        seeds.write_text("\n".join(web.seeds()) + "\n")
        crawl = subprocess.Popen(
            [PY, "-m", "bspcrawl", "run", "--seeds", str(seeds), "--out", str(tmp_path / "o"),
             *UNPACED, "--min-host-delay", "0.3", "--allow-net", "127.0.0.0/8",
             "--progress", "none", "--status-port", str(port)],
            env=ENV, stderr=subprocess.PIPE, text=True)
        try:
            page = ""
            for _ in range(100):
                try:
                    status, _, page = get(f"http://127.0.0.1:{port}/stats")
                    if "<td>superstep</td><td>0</td>" not in page:
                        break
                except OSError:
                    pass
                time.sleep(0.1)
            assert "Live status" in page
            token = re.search(r'name="token" value="([^"]+)"', page).group(1)
            assert get(f"http://127.0.0.1:{port}/stop", f"token={token}".encode())[0] == 303
            _, err = crawl.communicate(timeout=60)
        finally:
            crawl.kill()
    assert crawl.returncode == 0, err
    assert f"live status page at http://127.0.0.1:{port}/stats" in err
    assert "stopped: signal" in err  # what the stop file (bspcrawl stop) gives
    assert int(re.search(r"bspcrawl: (\d+) pages", err).group(1)) < 400


@pytest.mark.parametrize("argv, fragment", [
    (["serve", "/nonexistent/crawl"], "is not a directory"),
    (["serve", "{tmp}"], "holds no crawl.h5"),
    (["serve", "{crawl}", "--port", "70000"], "port must be 0..65535"),
    (["serve", "{crawl}", "--port", "x"], "invalid int value"),
    (["run", "--seeds", "{seeds}", "--out", "{tmp}/o", "--status-port", "-1"],
     "--status-port must be 0..65535"),
])
def test_bad_input_is_one_error_line(app, tmp_path, argv, fragment):
    history, _ = app
    (tmp_path / "seeds").write_text("http://127.0.0.1:1/\n")
    argv = [a.format(tmp=tmp_path, crawl=history.out, seeds=tmp_path / "seeds") for a in argv]
    res = subprocess.run([PY, "-m", "bspcrawl", *argv], capture_output=True, text=True,
                         timeout=60)
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert res.stderr.count("\n") == 1 and res.stderr.startswith("bspcrawl: error: ")
    assert fragment in res.stderr, res.stderr


def test_a_port_in_use_is_one_error_line(app):
    history, base = app
    res = subprocess.run([PY, "-m", "bspcrawl", "serve", str(history.out), "--port",
                          base.rsplit(":", 1)[1]], capture_output=True, text=True, timeout=60)
    assert res.returncode == 2 and res.stderr.startswith("bspcrawl: error: cannot listen on")
    assert res.stderr.count("\n") == 1


def test_the_app_and_status_page_never_touch_mpi():
    for path in sorted((Path(__file__).parent.parent / "bspcrawl" / "browse").glob("*.py")):
        text = path.read_text()
        assert "mpi4py" not in text and "bspcrawl.superstep" not in text, path
