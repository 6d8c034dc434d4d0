"""A scriptable web site on 127.0.0.1 for robots tests, and an in-process P = 1 crawl.

``Site(routes)`` serves each path from a list of responses used in turn (the last one is
repeated); a response is ``(status, headers, body)`` or a callable ``handler -> None`` that
writes its own answer. Every request is logged with its start and end times.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import h5py
from mpi4py import MPI

from bspcrawl.index.output import join, prepare
from bspcrawl.settings import Settings
from bspcrawl.superstep import Crawl

Response = tuple[int, dict[str, str], bytes] | Callable[[BaseHTTPRequestHandler], None]


class Site:
    """A threaded HTTP server answering from ``routes``; 404 for anything else."""

    def __init__(self, routes: dict[str, list[Response]]) -> None:
        self.routes = {path: list(answers) for path, answers in routes.items()}
        self.log: list[tuple[str, float, float, int]] = []
        site = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                start = time.monotonic()
                answers = site.routes.get(self.path, [(404, {}, b"not found")])
                answer = answers.pop(0) if len(answers) > 1 else answers[0]
                status = 0
                if callable(answer):
                    answer(self)
                else:
                    status, headers, body = answer
                    self.send_response(status)
                    for name, value in {"Content-Type": "text/html", **headers}.items():
                        self.send_header(name, value)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                site.log.append((self.path, start, time.monotonic(), status))

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def paths(self) -> list[str]:
        """Requested paths, in order."""
        return [p for p, *_ in self.log]

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def page(*hrefs: str, text: str = "hello world") -> tuple[int, dict[str, str], bytes]:
    """A 200 HTML page with these links."""
    links = "".join(f'<a href="{h}">{h}</a> ' for h in hrefs)
    return 200, {}, f"<html><body><p>{text}</p>{links}</body></html>".encode()


def crawl_here(tmp: Path, seeds: list[str], **settings: object) -> h5py.File:
    """Crawl in this process on COMM_SELF (P = 1); returns the open crawl.h5."""
    out = tmp / "out"
    prepare(out, overwrite=True)
    base = {"politeness_min_host_delay": 0.0, "politeness_response_factor": 0.0,
            "fetch_allow_net": ["127.0.0.0/8"], "fetch_workers": 4}
    s = Settings(**{**base, **settings}).validate()
    outcome = Crawl(MPI.COMM_SELF, s, out, seeds).run()
    join(out, 1, {"supersteps": outcome.supersteps, "urls_seen": outcome.seen,
                  "wall_s": outcome.wall_s, "stopped": outcome.stopped})
    return h5py.File(out / "crawl.h5", "r")
