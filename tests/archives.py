"""Helpers for the browse, interoperability and browser tests: a crawl with history.

:func:`crawl_with_history` crawls testweb epoch 0, then recrawls epoch 1 (so changed pages
have two versions), with a hostile page among the seeds: a server of one page that tries
every way to run a script or load from the live web.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from bspcrawl.index import inspect
from bspcrawl.testweb import free_port
from tests.crawling import crawl, serve

PAGES, HOSTS = 40, 2
HOSTILE_HOST = "127.0.0.3"
HOSTILE_PAGE = """<!DOCTYPE html><html><head><title>Hostile page</title>
<script>console.log("PWNED script"); document.title = "PWNED";
try { parent.document.title = "PWNED"; } catch (e) {} fetch("/stats?pwned=1");</script>
<meta http-equiv="refresh" content="0;url=http://{host}/beacon-refresh">
<link rel="stylesheet" href="http://{host}/beacon.css">
</head><body onload="console.log('PWNED onload')">
<h1 id="hostile">A hostile page</h1>
<img src="http://{host}/beacon.png" onerror="console.log('PWNED onerror')">
<iframe src="http://{host}/beacon-frame"></iframe>
<object data="http://{host}/beacon-object"></object>
<svg><script>console.log("PWNED svg")</script></svg>
<a href="javascript:console.log('PWNED href')">a script link</a>
<a id="calm" href="/calm.html">a calm page</a>
</body></html>"""
CALM_PAGE = "<!DOCTYPE html><html><head><title>Calm</title></head><body>calm</body></html>"


@dataclass
class History:
    """A crawl (``out``, the recrawl) of two epochs, and what it holds."""

    out: Path
    first: Path  # the epoch-0 crawl the recrawl follows
    hostile_url: str
    changed_url: str  # a page with two versions of different content
    ok_urls: set[str]  # URLs answered 200 in the recrawl


@contextlib.contextmanager
def hostile_server() -> Iterator[tuple[str, list[str]]]:
    """Serve the hostile page on ``127.0.0.3``; yields its URL and the paths requested."""
    requested: list[str] = []
    host = f"{HOSTILE_HOST}:{free_port(1)}"

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            requested.append(self.path)
            pages = {"/": HOSTILE_PAGE.replace("{host}", host), "/calm.html": CALM_PAGE}
            body = pages.get(self.path, "").encode()
            self.send_response(200 if body else 404)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer((HOSTILE_HOST, int(host.split(":")[1])), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://{host}/", requested
    finally:
        server.shutdown()
        server.server_close()


def crawl_with_history(base: Path) -> History:
    """Crawl epoch 0 into ``base/e0``, recrawl epoch 1 into ``base/e1`` (P = 1)."""
    opts = {"port": free_port(HOSTS), "expires": 0.2, "change": 0.5}
    with hostile_server() as (hostile_url, _):
        with serve(PAGES, HOSTS, epoch=0, **opts) as web0:
            seeds = web0.seeds() + [hostile_url]
            done = crawl(1, seeds, base / "e0")
            assert done.returncode == 0, done.stderr
        time.sleep(1.1)  # the two epochs' captures have different 14-digit timestamps
        with serve(PAGES, HOSTS, epoch=1, **opts):
            done = crawl(1, seeds, base / "e1", "--recrawl", str(base / "e0"))
            assert done.returncode == 0, done.stderr
    out = base / "e1"
    ok = {u for u, status in inspect.urls(out) if status == 200}
    changed = next(u for u in sorted(ok) if len({v.content_fp for v, _ in
                                                 inspect.versions(out, u)}) > 1)
    return History(out, base / "e0", hostile_url, changed, ok)
