"""The web app of ``bspcrawl serve`` (a finished crawl) and of ``run --status-port`` (a
running one): the standard library's ``ThreadingHTTPServer``, read-only, no script.

Routes of :class:`BrowseApp` (pywb's URL scheme for archived pages)::

    /                          summary and search box
    /search?q=WORDS            the crawl's BM25 ranking; a URL or host: plain matching
    /web/{ts}/{url}            banner + sandboxed iframe of the version nearest ts
    /web/{ts}if_/{url}         that version's content, rewritten (rewrite.py), strict CSP
    /web/*/{url}               every version by year and month; a form to compare two
    /diff?url=U&a=TS&b=TS      the text of two versions compared
    /stats                     numbers and SVG charts

:class:`StatusApp` (``status.py``) serves ``/stats`` of a running crawl and ``POST /stop``.

**Safety.** Archived pages are hostile: their content is served only from
``/web/{ts}if_/`` with :data:`ARCHIVED_CSP` (no script at all, nothing loaded from outside
the app, sandboxed even when opened directly) inside an ``<iframe sandbox>``; the app's
own pages carry :data:`APP_CSP` (no script either). No route maps a URL path to a file:
paths name URLs, looked up in the crawl's index, so no path reads outside the crawl.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Protocol
from urllib.parse import parse_qs, urlsplit

from bspcrawl.browse import pages
from bspcrawl.browse.rewrite import archive_url, rewrite_html
from bspcrawl.browse.search import SearchBox
from bspcrawl.browse.view import Capture, CrawlView, text_lines
from bspcrawl.index.cdxj import bare_mime
from bspcrawl.index.inspect import parse_time
from bspcrawl.index.output import OutputError
from bspcrawl.urls import resolve

APP_CSP = ("default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; "
           "frame-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'")
ARCHIVED_CSP = ("default-src 'none'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; "
                "frame-ancestors 'self'; form-action 'none'; base-uri 'none'; "
                "sandbox allow-top-navigation-by-user-activation")
HTML = "text/html; charset=utf-8"
MAX_FORM = 4096  # bytes of a POST body read
_WEB = re.compile(r"/web/(\d{4,14}|\*)(if_)?/(.+)", re.S)
_MIME = re.compile(r"[a-z0-9][a-z0-9.+-]*/[a-z0-9][a-z0-9.+-]*")
_PAD = "19700101000000"  # a short timestamp means the start of its year, month...


@dataclass
class Response:
    """What a route answers."""

    status: int = 200
    body: bytes | str = b""
    content_type: str = HTML
    csp: str = APP_CSP
    location: str = ""


def redirect(location: str) -> Response:
    """A 303 See Other to ``location``."""
    return Response(303, location=location)


def not_found(message: str) -> Response:
    """A 404 page saying why."""
    return Response(404, pages.error(404, message))


class App(Protocol):
    """What the server calls: ``get`` a request target (path and query, raw), ``post`` a
    path with the form's fields."""

    def get(self, target: str) -> Response: ...

    def post(self, path: str, form: dict[str, str]) -> Response: ...


def fields(text: str) -> dict[str, str]:
    """The fields of a query string or form body (the first value of each)."""
    return {k: v[0] for k, v in parse_qs(text, max_num_fields=20).items()}


def target_url(text: str) -> str:
    """The archived URL as written in a ``/web/`` path (``http:/x`` and ``x`` repaired)."""
    m = re.match(r"(https?):/+", text, re.I)
    return f"{m.group(1).lower()}://{text[m.end():]}" if m else "http://" + text


class BrowseApp:
    """The routes of ``bspcrawl serve`` over a finished crawl (module docstring)."""

    def __init__(self, view: CrawlView) -> None:
        self.view = view
        self.box = SearchBox(view)

    def get(self, target: str) -> Response:
        """Answer a GET of ``target`` (raw: for /web/, the archived URL's query is its own)."""
        m = _WEB.fullmatch(target)
        if m:
            ts, raw, url = m.group(1), bool(m.group(2)), target_url(m.group(3))
            if ts == "*":
                return self.versions(url)
            return self.archived(ts + _PAD[len(ts):], url, raw)
        route, _, qs = target.partition("?")
        query = fields(qs)
        if route == "/":
            return Response(body=pages.home(str(self.view.out), self.view.facts()))
        if route == "/search":
            q = query.get("q", "")
            return Response(body=pages.results(q, self.box.search(q)))
        if route == "/diff":
            return self.diff(query.get("url", ""), query.get("a", ""), query.get("b", ""))
        if route == "/stats":
            return Response(body=pages.stats(self.view.stats(), live=False))
        return not_found("no such page")

    def post(self, path: str, form: dict[str, str]) -> Response:
        """Nothing is posted to a read-only app."""
        return Response(405, pages.error(405, "read-only"))

    def _at(self, ts: str, url: str) -> tuple[list[Capture], Capture] | Response:
        """The captures of ``url`` and the one nearest ``ts``, or the error page."""
        try:
            t = parse_time(ts)
        except OutputError:
            return not_found(f"{ts}: not a timestamp")
        captures = self.view.captures(url)
        pick = self.view.nearest(captures, ts, t)
        if pick is None:
            return not_found(f"{url} is not in this crawl's archive")
        return captures, pick

    def archived(self, ts: str, url: str, raw: bool) -> Response:
        """The banner page, or (``raw``) the archived content, of ``url`` at ``ts``; a
        redirect answer sends the browser on to its target at the same moment."""
        found = self._at(ts, url)
        if isinstance(found, Response):
            return found
        captures, pick = found
        try:
            headers, body = self.view.content(pick)
        except OutputError as e:
            return not_found(str(e))
        target = resolve(headers.get("location", ""), url) if 300 <= pick.status < 400 else None
        if target:
            return redirect(archive_url(ts, target, raw))
        if not raw:
            i = captures.index(pick)
            before = captures[i - 1] if i else None
            after = captures[i + 1] if i + 1 < len(captures) else None
            return Response(body=pages.banner(ts, pick, before, after))
        mime = bare_mime(headers.get("content-type", "")).lower()
        if mime in ("", "text/html", "application/xhtml+xml"):
            return Response(body=rewrite_html(body, url, ts), csp=ARCHIVED_CSP)
        return Response(body=body, csp=ARCHIVED_CSP, content_type=(
            mime if _MIME.fullmatch(mime) else "application/octet-stream"))

    def versions(self, url: str) -> Response:
        """``/web/*/{url}``: every version of ``url``."""
        captures = self.view.captures(url)
        if not captures:
            return not_found(f"{url} is not in this crawl's archive")
        return Response(body=pages.versions(url, captures))

    def diff(self, url: str, a: str, b: str) -> Response:
        """``/diff``: the texts of the versions of ``url`` nearest ``a`` and ``b``."""
        picked = []
        for ts in (a, b):
            found = self._at(ts, url)
            if isinstance(found, Response):
                return found
            try:
                picked.append((found[1], text_lines(self.view.content(found[1])[1])))
            except OutputError as e:
                return not_found(str(e))
        (ca, la), (cb, lb) = picked
        return Response(body=pages.diff(url, ca, cb, la, lb))


def handler(app: App) -> type[BaseHTTPRequestHandler]:
    """A request handler class answering through ``app``."""

    class Handler(BaseHTTPRequestHandler):
        server_version = "bspcrawl"
        sys_version = ""

        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            target = self.path
            if not target.startswith("/"):  # an absolute-form target: its path
                target = urlsplit(target).path or "/"
            self._send(lambda: app.get(target))

        def do_POST(self) -> None:  # noqa: N802
            try:
                length = min(int(self.headers.get("Content-Length", "0")), MAX_FORM)
            except ValueError:
                length = 0
            form = fields(self.rfile.read(length).decode("latin-1"))
            self._send(lambda: app.post(urlsplit(self.path).path, form))

        def _send(self, answer: Callable[[], Response]) -> None:
            try:
                r = answer()
            except OutputError as e:
                r = Response(500, pages.error(500, str(e)))
            body = r.body.encode() if isinstance(r.body, str) else r.body
            self.send_response(r.status)
            self.send_header("Content-Type", r.content_type)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Content-Security-Policy", r.csp)
            self.send_header("X-Content-Type-Options", "nosniff")
            self.send_header("Referrer-Policy", "no-referrer")
            self.send_header("Cache-Control", "no-store")
            if r.location:
                self.send_header("Location", r.location)
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass  # quiet: the terminal belongs to the crawl or the user

    return Handler


def make_server(app: App, host: str, port: int) -> ThreadingHTTPServer:
    """A threading server of ``app`` bound to ``host:port``; OutputError if it cannot."""
    if not 0 <= port <= 65535:
        raise OutputError(f"port must be 0..65535, got {port}")
    try:
        server = ThreadingHTTPServer((host, port), handler(app))
    except (OSError, OverflowError) as e:
        reason = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
        raise OutputError(f"cannot listen on {host}:{port}: {reason}") from None
    server.daemon_threads = True
    return server
