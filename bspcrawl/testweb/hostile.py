"""A hostile web for fuzzing the crawler: a seeded generator of hostile HTTP answers, a
raw-socket server that sends them byte for byte, and an audit of a crawl of it.

- The answer to the ``k``-th request of ``(netloc, target)`` is :meth:`HostileWeb.plan`, a
  pure function of ``(seed, host, target, k)`` (a BLAKE2 hash, never ``hash()``; the port is
  left out): odd status codes and lines, hostile headers, lying framing and compression,
  cuts, resets, stalls and trickles, robots.txt files of every shape and redirect, and
  malformed pages.
- The web is finite, so a crawl ends: host ``i`` serves ``/`` and ``/p/<n>`` (``n <
  pages``); links also go to ``refused`` hosts where nothing listens and to junk hrefs
  (:data:`JUNK`). Any other target is a leaf, answered without links. A robots.txt redirects
  only to aliases ``/robots/<s>-<j>.txt``, which no page links to.
- :class:`HostileServer` logs one line per request, ``netloc<TAB>target<TAB>start<TAB>end
  <TAB>status/view/shape/conn``: ``view`` is ``ok`` or ``err`` (what libcurl's transfer
  ends with), ``shape`` one of :data:`SHAPES`, ``conn`` ``new`` or ``reused``.
- :func:`audit` checks a crawl against the log and its output: no URL requested again
  unless the crawler's rules call for it (429/503 retries, unreachable robots.txt, libcurl's
  own retry on a dead reused connection, RFC 9110 9.2.2); never two requests in flight to
  one host (but a robots.txt redirect followed to another host, RFC 9309 2.3.1.2); every
  HDF5 and WARC file readable and finished, and no fetcher thread replaced.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import gzip
import hashlib
import json
import random
import re
import subprocess
import sys
import time
import zlib
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from bspcrawl.testweb.model import host_address, host_index
from bspcrawl.testweb.server import Listener, child_server, forever, free_port, in_thread, reset

MAX_HEAD = 64 * 1024  # bytes of a request head read before the connection is closed
IDLE_TIMEOUT = 10.0  # s a keep-alive connection may wait for its next request
MAX_REFUSED = 50
ALIASES = 3  # /robots/<s>-<j>.txt, j < ALIASES: where a robots.txt of host s redirects
ROBOTS_HOPS = 5  # redirects a robots.txt fetch follows (fetcher.ROBOTS_TXT_HOPS)
CURL_RETRY_WINDOW = 1.0  # s: libcurl's own retry of a request on a dead reused connection
SLACK = 0.01  # s of log timing two requests to one host may seem to overlap by
HANGUP_SLACK = 0.1  # s the same after an answer the client gave up on (its end is when the
# server noticed, which lags on a loaded machine)
OK, ERR = "ok", "err"
BLOCKED = ("10.255.255.1", "[::1]")  # hosts of hrefs that the address guard refuses
QUERIES = ("q=1", "q=a", "q=%FF", "q=1&r=2", "q=ä")
FRAGMENTS = ("top", "", "x y", "%zz", "ü")
BOMB_SIZE = 64 * 1024 * 1024
SHAPES = (
    "plain", "chunked", "close_delimited", "cut", "reset", "stall", "stall_close",
    "trickle", "lie_up", "lie_up_hold", "lie_down", "bad_chunked", "odd_chunked",
    "lying_encoding", "double_gzip", "gzip", "bomb", "http09", "bad_status", "odd_status",
    "interim", "bodiless_body", "header_flood", "bad_header", "rfollow", "rrefused", "rftp",
    "rblocked",
)
"""Every misbehaviour a plan can have (the third field of a log ``kind``)."""
ROBOTS_REDIRECTS = ("rfollow", "rrefused", "rftp", "rblocked")

_MISBEHAVIOURS, _WEIGHTS = zip(*{  # the shapes of _misbehave, and how often each comes
    "cut": 1, "reset": 1, "stall": 0.7, "stall_close": 0.7, "trickle": 0.7, "lie_up": 1,
    "lie_up_hold": 0.5, "lie_down": 1, "bad_chunked": 1, "odd_chunked": 1, "lying_encoding": 1,
    "double_gzip": 1, "gzip": 1, "bomb": 0.25, "http09": 1, "bad_status": 1, "odd_status": 1,
    "interim": 1, "header_flood": 0.5, "bad_header": 1}.items(), strict=True)
_ALIAS = re.compile(r"/robots/(\d+)-(\d+)\.txt")
_PAGE = re.compile(r"/(?:p/(0|[1-9]\d{0,5}))?")
_REASONS = {200: b"OK", 204: b"No Content", 301: b"Moved Permanently", 302: b"Found",
            303: b"See Other", 304: b"Not Modified", 307: b"Temporary Redirect",
            308: b"Permanent Redirect", 404: b"Not Found", 429: b"Too Many Requests",
            500: b"Internal Server Error", 503: b"Service Unavailable"}

# --------------------------------------------------------------------- vocabularies

JUNK = (  # hrefs of no use to a crawler; "{me}" is the page's own netloc, "{host}" and
    # "{port}" its parts
    "javascript:alert('x')", "mailto:someone@example.org", "data:text/html,<a href=/p/1>x</a>",
    "tel:+15551234", "ftp://{me}/p/1", "file:///etc/passwd", "about:blank",
    "blob:http://{me}/x", "http://", "http://[::1]:{port}/p/1",
    "http://{host}:99999/p/1", "http://10.255.255.1/p/1", "//{me}/p/3", "", "#", "#top", "?",
    "?q=1", " /p/4 ", "\t/p/\n5", "/p/6/..", "/./p/./7", "../../../../p/8", "../../..",
    "/p/%zz", "/p/%", "/p/%00", "/%2e%2e/p/9", "/p/ünïcödé", "/p/\u202e\u0301", "/P/1", "/p/1/",
    "/p//1", "/p/01", "/p/1;jsessionid=ABC", "/p/1?utm_source=x&q=1", "/x/" + "a" * 3000,
    "/p/" + "é" * 400, "HTTP://{ME}/p/2", "http://2130771969:{port}/p/3",
    "http://0x7f.1.0.1:{port}/p/4", "http://127.1.1:{port}/p/5", "http://{host}.:{port}/p/6",
    "/p/1 2", "/p/1\\2", "/p/<script>", "/p/1?q=\x00", "%2Fp%2F1", "/p/1%2F..%2F2",
    "https://{me}/p/1",
)
_WORDS = ("alpha", "βeta", "gamma", "дельта", "εψιλον", "日本語", "עברית", "العربية", "🙂",
          "e\u0301", "\u200b", "x" * 300, "crawl", "web", "page", "link", "robots", "zip")
_RETRY_AFTER = (b"0", b"1", b"2", b"-5", b"1e309", b"\xc2\xb2", b"", b"9" * 400,
                b"Fri, 31 Dec 99999 23:59:59 GMT", b"Thu, 01 Jan 1970 00:00:00 GMT",
                b"soon", b"\xff\xfe", b"1.5", b" 1 ", b"Wed, 21 Oct 2015 07:28:00")
_ETAGS = (b'"\xff\xfe\x80"', b"W/\"x\"", b"no quotes at all", b'"a", "b"', b"", b'"' * 40,
          b'W/"\xe9t\xe9"', b'"' + b"e" * 5000 + b'"')
_DATES = (b"Thu, 01 Jan 99999 00:00:00 GMT", b"\xe9t\xe9 dernier", b"0", b"-1", b"",
          b"Mon, 32 Foo 2024 25:61:61 GMT", b"Thu, 01 Jan 1970 00:00:00 GMT",
          b"Sun, 06 Nov 1994 08:49:37 GMT", b"1e309", b"Tue, 19 Jan 2038 03:14:08 GMT")
_CACHE = (b"max-age=-1", b"max-age=" + b"9" * 40, b"no-store, \xff", b"max-age=1e309",
          b"immutable", b"max-age=0, must-revalidate", b"max-age", b"s-maxage=abc, private",
          b"max-age=31536000")
_X_ROBOTS = (b"noindex", b"nofollow", b"none", b"bspcrawl: nofollow", b"otherbot: noindex",
             b"unavailable_after: 99999", b":::", b"\xff\xfe", b",,," * 500,
             b"noindex, nofollow, none, noarchive", b"BSPCRAWL: NOINDEX")
_CONTENT_TYPES = (  # (body encoding, BOM, Content-Type value or None)
    ("utf-8", b"", b"text/html; charset=utf-8"), ("utf-8", b"", b"text/html"),
    ("utf-16-le", b"\xff\xfe", b"text/html; charset=utf-16"),
    ("utf-16-be", b"\xfe\xff", b"text/html"), ("utf-16-le", b"", b"text/html; charset=utf-16le"),
    ("utf-16-le", b"", b"text/html"), ("cp1252", b"", b"text/html; charset=utf-8"),
    ("utf-8", b"", b"text/html; charset=x-user-defined"),
    ("utf-8", b"", b"text/html; charset=no-such-charset"),
    ("shift_jis", b"", b"text/html; charset=shift_jis"), ("utf-8", b"\xef\xbb\xbf", None),
    ("utf-8", b"", b'text/html; charset="utf-8"; charset=latin1'),
    ("utf-8", b"", b"text/html;;;charset="), ("utf-8", b"", b"TEXT/HTML; CHARSET=UTF-8"),
    ("utf-8", b"", b"application/xhtml+xml"), ("utf-8", b"", b"text/html\xff; charset=utf-8"),
    ("koi8-r", b"", b"text/html; charset=utf-7"),
)
_BAD_STATUS = (b"HTTP/1.1 abc OK", b"ICY 200 OK", b"HTTP/1.1  200 OK", b"HTTP/1.1 -200 OK",
               b"HTTP/1.2 200 OK", b"HTTP/2 200 OK", b"HTTP/1.1 099 Low",
               b"\xef\xbb\xbfHTTP/1.1 200 OK", b"HTTP/1.1 200 \xff\xfe\x00", b"HTTP/1.1 199 Odd")
_ODD_STATUS = (b"HTTP/1.1 200", b"HTTP/1.0 200 OK", b"http/1.1 200 OK", b"HTTP/2.0 200 OK",
               b"HTTP/1.1 200 \xe9t\xe9")
_BAD_HEADERS = (b"X-Nul: a\x00b", b"X-Cr: a\rb", b" folded-first-line", b"Content-Length: abc",
                b"Content-Length: -5", b"Content-Length: +5", b"Content-Length: 1\r\n"
                b"Content-Length: 2")
_BAD_CHUNKS = (b"ZZ\r\nhello\r\n0\r\n\r\n", b"FFFFFFFFFFFFFFFFFFFF\r\nhello\r\n0\r\n\r\n",
               b"50\r\nhello\r\n0\r\n\r\n", b"5\r\nhello\r\n", b"5\r\nhelloXX0\r\n\r\n")


def robots_source(netloc: str, target: str) -> int | None:
    """The host whose robots.txt fetch made this request (``s`` of an alias
    ``/robots/<s>-<j>.txt``), or None for a page request."""
    if target == "/robots.txt":
        return host_index(netloc.rpartition(":")[0])
    m = _ALIAS.fullmatch(target)
    return int(m[1]) if m and int(m[2]) < ALIASES else None


def _rng(seed: int, netloc: str, target: str, k: int) -> random.Random:
    """The generator of one answer, seeded from a hash of its inputs but the port."""
    host = netloc.rpartition(":")[0] or netloc
    key = f"{seed}\0{host}\0{target}\0{k}".encode("utf-8", "surrogatepass")
    return random.Random(int.from_bytes(hashlib.blake2b(key, digest_size=16).digest(), "big"))


@functools.cache
def _bomb() -> bytes:
    """A gzip member that inflates to :data:`BOMB_SIZE` bytes."""
    z = zlib.compressobj(9, zlib.DEFLATED, 31)
    chunk = b" " * (1 << 20)
    parts = [z.compress(b"<html><body><p>bomb</p>")]
    parts += [z.compress(chunk) for _ in range(BOMB_SIZE >> 20)]
    return b"".join(parts) + z.flush()


# ------------------------------------------------------------------------- config


@dataclass(frozen=True, slots=True)
class HostileConfig:
    """The shape of a hostile web; :meth:`HostileWeb.plan` draws the rest from ``seed``."""

    seed: int = 1
    hosts: int = 8  # hosts that answer: 127.1.0.1, 127.1.0.2, ...
    pages: int = 50  # pages /p/0 .. /p/<pages - 1> of each host (and its home, /)
    port: int = 8766
    refused: int = 8  # hosts linked to where nothing listens (the next addresses)
    max_stall: float = 2.0  # s, the longest stall, trickle or hold of an answer

    def __post_init__(self) -> None:
        if not 1 <= self.hosts <= 250 * 250 - MAX_REFUSED:
            raise ValueError(f"--hosts must be 1 .. {250 * 250 - MAX_REFUSED}, got {self.hosts}")
        if not 1 <= self.pages <= 100_000:
            raise ValueError(f"--pages must be 1 .. 100000, got {self.pages}")
        if not 0 <= self.refused <= MAX_REFUSED:
            raise ValueError(f"--refused must be 0 .. {MAX_REFUSED}, got {self.refused}")
        if not 0 <= self.port <= 65535:
            raise ValueError(f"--port must be 0 .. 65535, got {self.port}")
        if not 0 < self.max_stall <= 30:
            raise ValueError(f"--max-stall must be in (0, 30] seconds, got {self.max_stall}")

    def netloc(self, i: int) -> str:
        """``address:port`` of host ``i``."""
        return f"{host_address(i)}:{self.port}"

    def refused_netloc(self, j: int) -> str:
        """``address:port`` of refused host ``j``: an address after the web's own."""
        return f"{host_address(self.hosts + j)}:{self.port}"

    def seeds(self) -> list[str]:
        """The home page of every host."""
        return [f"http://{self.netloc(i)}/" for i in range(self.hosts)]

    def on_free_port(self) -> HostileConfig:
        """This web on a port free right now on all its addresses, the refused hosts' too."""
        return dataclasses.replace(self, port=free_port(self.hosts + self.refused))


# --------------------------------------------------------------------------- plans


@dataclass(slots=True)
class Plan:
    """One answer: the bytes to send and how. ``view`` is what a client's transfer ends with
    (:data:`OK` or :data:`ERR`); ``tags`` name its hostile features (for test coverage)."""

    status: int
    view: str
    shape: str
    head: bytes  # status line and header lines, with the blank line that ends them
    body: bytes = b""
    interim: bytes = b""  # 1xx answers sent first
    stall: float = 0.0  # s before the first byte
    rate: float = 0.0  # bytes a second (0: at once)
    cut: int = -1  # send only this many bytes of interim + head + body (-1: all)
    hold: float = 0.0  # s the connection stays open after the bytes, before it closes
    reset: bool = False  # end with a TCP reset instead of a close
    close: bool = False  # close the connection after the answer
    timed: bool = False  # the client may hang up first (then it saw an error)
    tags: list[str] = field(default_factory=list)

    def data(self) -> bytes:
        data = self.interim + self.head + self.body
        return data if self.cut < 0 else data[: self.cut]

    def kind(self, view: str, reused: bool) -> str:
        return f"{self.status}/{view}/{self.shape}/{'reused' if reused else 'new'}"


def _head(status_line: bytes, headers: list[bytes], eol: bytes = b"\r\n") -> bytes:
    return status_line + eol + b"".join(h + eol for h in headers) + eol


def _conflicting_locations(headers: list[bytes]) -> bool:
    """Two different non-empty Location values: libcurl rejects the answer."""
    found = {h.partition(b":")[2].strip() for line in headers for h in line.split(b"\r\n")
             if h[:9].lower() == b"location:"}
    return len(found - {b""}) > 1


def _chunked(body: bytes, rng: random.Random) -> bytes:
    out, i = [], 0
    while i < len(body):
        n = min(rng.randint(1, len(body) // 3 + 1), len(body) - i)
        out.append(b"%x\r\n%s\r\n" % (n, body[i: i + n]))
        i += n
    return b"".join(out) + b"0\r\n\r\n"


class HostileWeb:
    """The generator: :meth:`plan` is the answer to a request."""

    def __init__(self, config: HostileConfig) -> None:
        self.config = config
        self.netlocs = [config.netloc(i) for i in range(config.hosts)]
        self._index = {n: i for i, n in enumerate(self.netlocs)}

    def host(self, netloc: str) -> int | None:
        return self._index.get(netloc)

    def in_space(self, target: str) -> bool:
        """Is ``target`` a page of the finite space (``/`` or ``/p/<n>``, any query)?"""
        m = _PAGE.fullmatch(target.partition("?")[0])
        return m is not None and (m[1] is None or int(m[1]) < self.config.pages)

    def source(self, netloc: str, target: str) -> int | None:
        src = robots_source(netloc, target)
        return src if src is not None and src < self.config.hosts else None

    def plan(self, netloc: str, target: str, k: int) -> Plan:
        """The answer to the ``k``-th (0, 1, ...) request of ``target`` on ``netloc``."""
        rng = _rng(self.config.seed, netloc, target, k)
        host = self.host(netloc)
        src = self.source(netloc, target)
        if host is None:
            return self._finish(rng, 404, [b"Content-Type: text/plain"], b"no such host", [])
        if src is not None:
            return self._robots(rng, src, host, target)
        return self._page(rng, host, target, links=self.in_space(target))

    # ----------------------------------------------------------------- robots.txt

    def _robots(self, rng: random.Random, src: int, host: int, target: str) -> Plan:
        u = rng.random()
        if u < 0.55:
            body, ctype, tags = self._robots_body(rng, src)
            headers = [b"Content-Type: " + ctype] if ctype is not None else []
            return self._finish(rng, 200, headers, body, ["robots:200", *tags])
        if u < 0.62:
            return self._finish(rng, rng.choice((401, 403, 404, 410, 418, 451)),
                                [b"Content-Type: text/plain"], b"no robots", ["robots:4xx"])
        if u < 0.66:
            headers = [b"Retry-After: " + rng.choice(_RETRY_AFTER)]
            return self._finish(rng, 429, headers, b"slow down", ["robots:429"])
        if u < 0.75:
            headers = [b"Retry-After: " + rng.choice(_RETRY_AFTER)] if rng.random() < 0.6 else []
            return self._finish(rng, rng.choice((500, 502, 503, 504, 599)), headers,
                                b"<html>down</html>", ["robots:5xx"])
        if u < 0.84:
            return self._robots_redirect(rng, src, host, target)
        if u < 0.87:  # answers that are final and not 2xx: allow all
            status = rng.choice((300, 301, 399, 499))
            return self._finish(rng, status, [], b"", ["robots:odd_final"])
        if u < 0.89:  # 101 and unknown codes >= 500: unreachable
            status = rng.choice((101, 600, 999))
            return self._finish(rng, status, [], b"User-agent: *\n", ["robots:odd_unreachable"])
        body, ctype, tags = self._robots_body(rng, src)
        return self._finish(rng, 200, [b"Content-Type: text/plain"], body,
                            ["robots:misbehaves", *tags], misbehave=1.0)

    def _robots_redirect(self, rng: random.Random, src: int, host: int, target: str) -> Plan:
        c = self.config
        u = rng.random()
        j = rng.randrange(ALIASES)
        if u < 0.35:  # an alias on this host (relative), or an alias itself: a loop (never
            loop = target != "/robots.txt" and rng.random() < 0.3  # /robots.txt: each of its
            shape, where = "rfollow", target if loop else f"/robots/{src}-{j}.txt"  # requests
            # starts a robots.txt fetch, for the audit
        elif u < 0.65:  # an alias on another host
            shape, where = "rfollow", (f"http://{self.netlocs[rng.randrange(c.hosts)]}"
                                       f"/robots/{src}-{j}.txt")
        elif u < 0.8 and c.refused:
            shape, where = "rrefused", f"http://{c.refused_netloc(rng.randrange(c.refused))}/robots.txt"
        elif u < 0.9:
            shape, where = "rftp", f"ftp://{self.netlocs[host]}/robots.txt"
        else:
            shape, where = "rblocked", f"http://{BLOCKED[0]}/robots.txt"
        status = rng.choice((301, 302, 307, 308))
        head = _head(b"HTTP/1.1 %d Moved" % status,
                     [b"Location: " + where.encode(), b"Content-Length: 0"])
        return Plan(status, OK, shape, head, close=rng.random() < 0.2,
                    tags=[f"robots:redirect:{shape}"])

    def _robots_body(self, rng: random.Random, src: int) -> tuple[bytes, bytes | None, list[str]]:
        u = rng.random()
        if u < 0.03:
            return b"", b"text/plain", ["robots:empty"]
        if u < 0.06:
            page, _ = self._html_doc(rng, src, links=False)
            return page.encode(), b"text/html", ["robots:html"]
        lines: list[str] = []
        tags = []
        ours = rng.choice(("*", "bspcrawl", "BSPCrawl/2.0 extra", "bsp"))
        lines += [f"User-agent: {ours}"]
        for _ in range(rng.randint(0, 6)):
            n = rng.randrange(self.config.pages)
            rule = rng.choice((f"/p/{n}", f"/p/{n}$", "/p/*?q=", f"/*{n}$", "/p/1", "",
                               "/x/", f"/p/{n}?", "/P/"))
            lines.append(f"{rng.choice(('Disallow', 'Allow', 'disallow', 'DISALLOW'))}: {rule}")
        if rng.random() < 0.04:
            lines.append("Disallow: /")
            tags.append("robots:disallow_all")
        if rng.random() < 0.1:
            delay = rng.choice(("0.05", "0", "abc", "-1", "nan", "inf", "1e309", "99999", "0.2"))
            lines.append(f"Crawl-delay: {delay}")
            tags.append("robots:crawl_delay")
        if rng.random() < 0.3:
            lines += ["", "User-agent: otherbot", "Disallow: /", "Crawl-delay: 1e309"]
        if rng.random() < 0.3:
            lines += rng.sample(("Disallow /p/3", ":::", "#" * 100, "\x00\x00", "Sitemap: ftp://x",
                                 "User-agent:", "Allow:", "Noindex: /p/", "é: à",
                                 "Disallow: /p/\U0001f642"), 3)
            tags.append("robots:garbage")
        if rng.random() < 0.05:  # too many rules to check: disallows everything
            many = rng.choice((2500, 300))
            star = "*" if many == 300 else ""
            lines += [f"Disallow: /p/{i}{star}/x" for i in range(many)]
            tags.append("robots:many_rules")
        text = "\n".join(lines) + "\n"
        if rng.random() < 0.06:  # big: up to ~600 KiB of other agents' groups and comments
            block = "".join(f"User-agent: bot{i}\nDisallow: /p/{i}\n# {'z' * 60}\n"
                            for i in range(20))
            size = rng.randint(100_000, 600_000)
            text = text + block * (size // len(block))
            tags.append("robots:big")
        eol = rng.choice(("\n", "\n", "\r\n", "\r"))
        text = text.replace("\n", eol)
        encoding, bom, ctype = rng.choice((
            ("utf-8", b"", b"text/plain"), ("utf-8", b"", b"text/plain"),
            ("utf-8", b"\xef\xbb\xbf", b"text/plain; charset=utf-8"),
            ("utf-16-le", b"\xff\xfe", b"text/plain; charset=utf-16"),
            ("utf-16-be", b"\xfe\xff", b"text/plain"), ("latin-1", b"", b"text/plain"),
            ("utf-8", b"", None), ("utf-8", b"", b"image/png")))
        tags.append(f"robots:charset:{encoding}{':bom' if bom else ''}")
        body = bom + text.encode(encoding, "replace")
        if rng.random() < 0.05:
            body = body.replace(b"\n", b"\x00\n")
            tags.append("robots:nul")
        return body, ctype, tags

    # ---------------------------------------------------------------------- pages

    def _page(self, rng: random.Random, host: int, target: str, links: bool) -> Plan:
        u = rng.random()
        html, ctype, tags = self._html(rng, host, links)
        if target == "/" and rng.random() < 0.7:  # a home page that works, mostly: a crawl
            u = 0.0  # that gets nowhere tests little
        if u < 0.55:
            return self._finish(rng, 200, [ctype] if ctype else [], html, tags,
                                misbehave=0.18)
        if u < 0.59:
            body, ctype = self._not_html(rng)
            return self._finish(rng, 200, [ctype], body, ["page:not_html"], misbehave=0.15)
        if u < 0.68:
            return self._redirect(rng, host, target)
        if u < 0.74:
            status = rng.choice((400, 401, 403, 404, 405, 410, 414, 418, 451))
            return self._finish(rng, status, [ctype] if ctype else [], html, ["page:4xx"],
                                misbehave=0.1)
        if u < 0.80:
            status = rng.choice((429, 503))
            headers = [b"Retry-After: " + rng.choice(_RETRY_AFTER)] if rng.random() < 0.8 else []
            return self._finish(rng, status, headers, b"<html>later</html>",
                                [f"page:{status}"], misbehave=0.15)
        if u < 0.83:
            status = rng.choice((500, 501, 502, 504, 599))
            return self._finish(rng, status, [], b"<html>oops</html>", ["page:5xx"],
                                misbehave=0.1)
        if u < 0.85:  # unknown codes; a 299 is a 2xx and its links count
            status = rng.choice((299, 399, 499, 600, 999, 101))
            return self._finish(rng, status, [ctype] if ctype else [], html, ["page:unknown"])
        if u < 0.88:  # no body allowed, one sent anyway
            status = rng.choice((204, 304))
            head = _head(b"HTTP/1.1 %d X" % status,
                         [b"Content-Type: text/html", b"Content-Length: %d" % len(html)])
            return Plan(status, OK, "bodiless_body", head, html, close=True,
                        tags=["page:bodiless_body"])
        return self._finish(rng, 200, [ctype] if ctype else [], html, tags, misbehave=1.0)

    def _redirect(self, rng: random.Random, host: int, target: str) -> Plan:
        c = self.config
        me = self.netlocs[host]
        i = rng.randrange(c.pages)
        where = rng.choice((
            f"/p/{i}", f"{i}", f"/p/ {i}", f"http://{self.netlocs[rng.randrange(c.hosts)]}/p/{i}",
            f"ftp://{me}/p/{i}", "javascript:void(0)", target, f"/p/{i}?{rng.choice(QUERIES)}",
            "/p/" + "x" * 5000, "", "\xff\xfe", f"http://user@{me}/p/{i}",
            f"//{self.netlocs[rng.randrange(c.hosts)]}/", f"http://{me}/p/{i}#frag",
            f"http://{c.refused_netloc(0)}/p/{i}" if c.refused else "/"))
        status = rng.choice((301, 302, 303, 307, 308, 300, 305, 306))
        headers = [b"Location: " + where.encode("utf-8", "surrogatepass")]
        tags = ["page:redirect", f"location:{where[:12]!r}"]
        if rng.random() < 0.05:
            headers = []
            tags.append("location:none")
        if rng.random() < 0.05:
            headers.append(b"Location: /p/0")
            tags.append("location:twice")
        return self._finish(rng, status, headers, b"", tags, misbehave=0.05)

    def _not_html(self, rng: random.Random) -> tuple[bytes, bytes]:
        noise = rng.randbytes(rng.randint(0, 3000)).replace(b"<", b"(")
        return rng.choice((
            (b"\x89PNG\r\n\x1a\n" + noise, b"Content-Type: image/png"),
            (b"%PDF-1.4\n" + noise, b"Content-Type: application/pdf"),
            (noise, b"Content-Type: text/html"),
            (noise, b"Content-Type: application/octet-stream"),
            (b"Sehr geehrte Damen und Herren" * 10, b"Content-Type: text/plain"),
        ))

    def _hrefs(self, rng: random.Random, host: int) -> tuple[list[str], list[str]]:
        """The hrefs of a page of ``host``, and tags."""
        c = self.config
        me = self.netlocs[host]
        tags = []
        hrefs = []
        for _ in range(rng.randint(2, 16)):
            i = rng.randrange(c.pages)
            form = rng.random()
            if form < 0.45:
                hrefs.append(f"/p/{i}")
            elif form < 0.55:
                hrefs.append(str(i))  # relative: /p/i on a /p/ page, /i (a leaf) on /
            elif form < 0.62:
                hrefs.append(f"../p/{i}")
            elif form < 0.72:
                hrefs.append(f"/p/{i}?{rng.choice(QUERIES)}")
            elif form < 0.77:
                hrefs.append(f"/p/{i}#{rng.choice(FRAGMENTS)}")
            elif form < 0.92:
                hrefs.append(f"http://{self.netlocs[rng.randrange(c.hosts)]}/p/{i}")
            elif form < 0.95 and c.refused:
                hrefs.append(f"http://{c.refused_netloc(rng.randrange(c.refused))}/p/{i}")
                tags.append("links:refused")
            else:
                hrefs.append("/")
        if rng.random() < 0.5:
            hrefs += rng.sample(JUNK, rng.randint(1, 4))
            tags.append("links:junk")
        if rng.random() < 0.015:
            tags.append("links:flood")
            hrefs += self._flood(rng)
        return [h.replace("{me}", me).replace("{ME}", me.upper()).replace("{port}", str(c.port))
                .replace("{host}", host_address(host)) for h in hrefs], tags

    def _flood(self, rng: random.Random) -> list[str]:
        c = self.config
        u = rng.random()
        if u < 0.4:  # every page and query of a host, many times over with fragments
            host = self.netlocs[rng.randrange(c.hosts)]
            return [f"http://{host}/p/{i}{q}#{f}" for i in range(c.pages)
                    for q in ("", *(f"?{q}" for q in QUERIES)) for f in range(8)]
        if u < 0.7 or not c.refused:  # every page of every host
            return [f"http://{n}/p/{i}" for n in self.netlocs for i in range(c.pages)] * 3
        return [f"http://{c.refused_netloc(j)}/p/{i}"  # the refused hosts, many paths each
                for j in range(c.refused) for i in range(max(c.pages, 100))]

    def _html(self, rng: random.Random, host: int, links: bool) -> tuple[bytes, bytes, list[str]]:
        """An HTML body, its Content-Type header line (b"" for none) and tags."""
        encoding, bom, ctype = rng.choice(_CONTENT_TYPES)
        text, tags = self._html_doc(rng, host, links)
        tags.append(f"charset:{encoding}:{ctype!r}")
        if links:
            tags.append("page:links")
        body = bom + text.encode(encoding, "replace")
        if rng.random() < 0.02:
            body = body.replace(b"e", b"e\x00", 50)
            tags.append("html:nul")
        return body, (b"Content-Type: " + ctype if ctype is not None else b""), tags

    def _html_doc(self, rng: random.Random, host: int, links: bool) -> tuple[str, list[str]]:
        """An HTML page (links to the web if ``links``) and its tags."""
        hrefs, tags = self._hrefs(rng, host) if links else ([], [])
        words = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(5, 200)))
        u = rng.random()
        head = ""
        if links and u < 0.1:
            head += f'<base href="{rng.choice(("/", "/p/", "/x/y/", self._other(rng)))}">'
        if links and rng.random() < 0.05:
            head += '<meta name="robots" content="nofollow">'
        if rng.random() < 0.05:
            head += '<meta name="robots" content="noindex">'
        if rng.random() < 0.05:
            head += '<meta charset="windows-1251">'
        if hrefs and rng.random() < 0.05:
            head += f'<meta http-equiv="refresh" content="0; url={hrefs[0]}">'
        elements = []
        for h in hrefs:
            q = '"' if '"' not in h else "'"
            tag = rng.choice(("a", "a", "a", "area", "link", "iframe", "frame", "img"))
            attr = "src" if tag in ("iframe", "frame", "img") else "href"
            elements.append(f"<{tag} {attr}={q}{h}{q}>{rng.choice(_WORDS)}</{tag}>")
        body = f"<p>{words}</p>" + " ".join(elements)
        v = rng.random()
        if v < 0.03:  # deeply nested
            depth = rng.randint(2000, 20000)
            body = "<div>" * depth + body + "</div>" * (depth // 2)
            tags.append("html:nested")
        elif v < 0.1:  # malformed
            body = body.replace("</a>", "", 3).replace('"', "", 4) + "<table><td><p><b><i"
            tags.append("html:malformed")
        elif v < 0.12:  # an unclosed comment hides the rest
            body = body[: len(body) // 2] + "<!-- " + body[len(body) // 2:]
            tags.append("html:unclosed_comment")
        elif v < 0.14:  # big: 100 KB - 1 MB
            body = body + f"<p>{words}</p>" * (rng.randint(100_000, 1_000_000) // len(words))
            tags.append("html:big")
        return (f"<!DOCTYPE html><html><head>{head}<title>{rng.choice(_WORDS)}</title></head>"
                f"<body>{body}</body></html>", tags)

    def _other(self, rng: random.Random) -> str:
        return f"http://{self.netlocs[rng.randrange(self.config.hosts)]}/p/"

    # ------------------------------------------------------------- the answer's bytes

    def _odd_headers(self, rng: random.Random, status: int) -> tuple[list[bytes], list[str]]:
        """A few odd header lines a client survives; no ``Location`` on a 3xx (it would
        redirect out of a robots.txt's namespace)."""
        out, tags = [], []
        choices = (
            ("retry-after", lambda: b"Retry-After: " + rng.choice(_RETRY_AFTER)),
            ("etag", lambda: b"ETag: " + rng.choice(_ETAGS)),
            ("last-modified", lambda: b"Last-Modified: " + rng.choice(_DATES)),
            ("expires", lambda: b"Expires: " + rng.choice(_DATES)),
            ("cache-control", lambda: b"Cache-Control: " + rng.choice(_CACHE)),
            ("x-robots-tag", lambda: b"X-Robots-Tag: " + rng.choice(_X_ROBOTS)),
            ("set-cookie-flood", lambda: b"\r\n".join(
                b"Set-Cookie: c%d=%s; Path=/; \xff" % (i, b"v" * rng.randint(1, 30))
                for i in range(rng.randint(50, 1500)))),
            ("long-line", lambda: b"X-Long: " + b"a" * rng.randint(10_000, 60_000)),
            ("obs-fold", lambda: b"X-Folded: first\r\n\tsecond\r\n  third"),
            ("high-bytes", lambda: b"X-\xff\xfe: \xe9\xe8\x80"),
            ("name-odd", lambda: rng.choice((b"Bad Name: v", b": empty name", b"X-\x01: b"))),
            ("duplicate", lambda: b"Content-Type: text/plain\r\nContent-Type: text/html"),
            ("control", lambda: b"X-Ctl: a\x01\x7f\x1fb\tc"),
            ("content-type-odd", lambda: b"Content-Type: " + (rng.choice(_CONTENT_TYPES)[2]
                                                              or b"")),
            ("location-on-200", lambda: b"%sLocation: /p/0" % (
                b"X-" if 300 <= status < 400 else b"")),
            ("date-odd", lambda: b"Date: " + rng.choice(_DATES)),
            ("link", lambda: b'Link: </p/1>; rel="next", <javascript:x>; rel=canonical'),
            ("refresh", lambda: b"Refresh: 0; url=/p/2"),
            ("vary-star", lambda: b"Vary: *"),
        )
        for _ in range(rng.choice((0, 0, 1, 1, 2, 3))):
            name, make = rng.choice(choices)
            out.append(make())
            tags.append(f"header:{name}")
        return out, tags

    def _finish(self, rng: random.Random, status: int, headers: list[bytes], body: bytes,
                tags: list[str], misbehave: float = 0.0) -> Plan:
        """The answer framed by length, chunks or close, with odd headers, and with
        probability ``misbehave`` one misbehaviour."""
        headers = [h for h in headers if h]
        if status == 101:  # else libcurl takes it for a 1xx and waits for the answer; its
            headers.append(b"Upgrade: nonsense")  # body then lasts until the connection ends
        odd, odd_tags = self._odd_headers(rng, status)
        tags = [*tags, *odd_tags]
        reason = _REASONS.get(status, b"Whatever")
        line = b"HTTP/1.1 %d %s" % (status, reason)
        framing = rng.random()
        close = rng.random() < 0.15 or status == 101
        if rng.random() < misbehave:
            plan = self._misbehave(rng, status, line, headers + odd, body, tags)
            if plan.view == OK and _conflicting_locations(headers + odd):
                plan.view = ERR
            return plan
        if _conflicting_locations(headers + odd):
            head = _head(line, [*headers, *odd, b"Content-Length: %d" % len(body)])
            return Plan(status, ERR, "plain", head, body, close=close, tags=tags)
        if framing < 0.85:
            head = _head(line, [*headers, *odd, b"Content-Length: %d" % len(body)],
                         b"\n" if rng.random() < 0.03 else b"\r\n")
            return Plan(status, OK, "plain", head, body, close=close, tags=tags)
        if framing < 0.93:
            head = _head(line, [*headers, *odd, b"Transfer-Encoding: chunked"])
            return Plan(status, OK, "chunked", head, _chunked(body, rng), close=close, tags=tags)
        head = _head(line, [*headers, *odd, b"Connection: close"])
        return Plan(status, OK, "close_delimited", head, body, close=True, tags=tags)

    def _misbehave(self, rng: random.Random, status: int, line: bytes, headers: list[bytes],
                   body: bytes, tags: list[str]) -> Plan:
        """One misbehaviour on an answer (see :data:`SHAPES`)."""
        body = body or b"<html>something</html>"
        stall = self.config.max_stall
        length = b"Content-Length: %d" % len(body)
        shape = rng.choices(_MISBEHAVIOURS, _WEIGHTS)[0]
        tags = [*tags, f"shape:{shape}"]

        def plan(view: str, head: bytes, data: bytes = body, **kw: object) -> Plan:
            return Plan(status, view, shape, head, data, tags=tags, **kw)  # type: ignore[arg-type]

        plain = _head(line, [*headers, length])
        if shape == "cut":  # nothing at all, or the body cut short, then a close
            cut = 0 if rng.random() < 0.3 else len(plain) + rng.randrange(len(body))
            return plan(ERR, plain, cut=cut, close=True)
        if shape == "reset":
            cut = rng.choice((0, len(plain) + rng.randrange(len(body))))
            return plan(ERR, plain, cut=cut, reset=True)
        if shape == "stall":  # OK, unless the client hangs up first
            wait = rng.choice((0.1, 0.3, 1.6, stall))
            return plan(OK, plain, stall=min(wait, stall), timed=True)
        if shape == "stall_close":
            return plan(ERR, plain, stall=rng.uniform(0.1, stall), cut=0, close=True)
        if shape == "trickle":  # the whole answer in at most max_stall s, >= 200 B/s
            data = plain + body
            rate = max(200.0, len(data) / stall)
            return plan(OK, plain, rate=rate, close=True, timed=True)
        if shape in ("lie_up", "lie_up_hold"):
            more = rng.randint(1, 10**6)
            head = _head(line, [*headers, b"Content-Length: %d" % (len(body) + more)])
            hold = rng.uniform(0.1, stall) if shape == "lie_up_hold" else 0.0
            return plan(ERR, head, hold=hold, close=True)
        if shape == "lie_down":  # the client reads the first n bytes: that is its body
            body = body[:60_000]
            head = _head(line, [*headers, b"Content-Length: %d" % rng.randrange(len(body))])
            return plan(OK, head, body, close=True)
        if shape == "bad_chunked":
            head = _head(line, [*headers, b"Transfer-Encoding: chunked"])
            return plan(ERR, head, rng.choice(_BAD_CHUNKS), close=True)
        if shape == "odd_chunked":  # extensions, trailers, a Content-Length beside it
            head = _head(line, [*headers, b"Transfer-Encoding: chunked", b"Content-Length: 99"])
            data = b"%x;ext=1;q=\"a\"\r\n%s\r\n0\r\nX-Trailer: 1\r\n\r\n" % (len(body), body)
            return plan(OK, head, data)
        if shape == "lying_encoding":
            coding = rng.choice((b"gzip", b"deflate", b"br", b"zstd", b"x-unknown", b"gzip, br"))
            return plan(ERR, _head(line, [*headers, b"Content-Encoding: " + coding, length]))
        if shape in ("double_gzip", "gzip"):
            data = gzip.compress(body, mtime=0)
            coding = b"gzip"
            if shape == "double_gzip":
                data = gzip.compress(data, mtime=0)
                coding = rng.choice((b"gzip", b"gzip, gzip"))
            return plan(OK, _head(line, [*headers, b"Content-Encoding: " + coding,
                                         b"Content-Length: %d" % len(data)]), data)
        if shape == "bomb":
            data = _bomb()
            return plan(OK, _head(line, [*headers, b"Content-Encoding: gzip",
                                         b"Content-Length: %d" % len(data)]), data, close=True)
        if shape == "http09":  # no status line: the body, then a close
            return Plan(0, ERR, shape, b"", body, close=True, tags=tags)
        if shape == "bad_status":
            return Plan(0, ERR, shape, _head(rng.choice(_BAD_STATUS), [*headers, length]), body,
                        close=True, tags=tags)
        if shape == "odd_status":  # odd, but a status line libcurl reads as 200
            return Plan(200, OK, shape, _head(rng.choice(_ODD_STATUS), [*headers, length]), body,
                        close=True, tags=tags)
        if shape == "interim":
            first = rng.choice((b"HTTP/1.1 100 Continue\r\n\r\n",
                                b"HTTP/1.1 102 Processing\r\n\r\n",
                                b"HTTP/1.1 103 Early Hints\r\nLink: </p/1>; rel=preload\r\n\r\n"))
            return plan(OK, plain, interim=first * rng.randint(1, 40))
        if shape == "header_flood":  # past libcurl's limits on header size
            flood = (b"Set-Cookie: a=b; Path=/\r\n" * 8000)[:-2] if rng.random() < 0.5 else \
                b"X-Big: " + b"a" * 120_000
            return plan(ERR, _head(line, [*headers, flood, length]), close=True)
        bad = rng.choice(_BAD_HEADERS)  # bad_header: one header line libcurl rejects
        before = [bad] if bad.startswith(b" ") else []  # a fold needs no line to continue
        return plan(ERR, _head(line, [*before, *headers, *[bad][len(before):], length]),
                    close=True)


# --------------------------------------------------------------------------- server


class HostileServer(Listener):
    """Serves a :class:`HostileWeb`; ``count`` maps ``(netloc, target)`` to its requests so far."""

    def __init__(self, web: HostileWeb, log: str | Path | None = None) -> None:
        if not web.config.port:
            raise ValueError("a hostile web needs its port: see HostileConfig.on_free_port")
        super().__init__(log, MAX_HEAD)
        self.web = web
        self.count: dict[tuple[str, str], int] = defaultdict(int)
        self.port = web.config.port

    async def start(self) -> None:
        _bomb()  # built before the first request
        await self.listen([host_address(i) for i in range(self.web.config.hosts)], self.port)

    def describe(self) -> str:
        c = self.web.config
        return (f"hostile testweb: {c.hosts} hosts of {c.pages} pages, "
                f"http://{c.netloc(0)}/ .. http://{c.netloc(c.hosts - 1)}/ (seed {c.seed}, "
                f"{c.refused} refused hosts)")

    async def _connection(self, reader: asyncio.StreamReader,
                          writer: asyncio.StreamWriter) -> None:
        netloc = f"{writer.get_extra_info('sockname')[0]}:{self.port}"
        served = 0
        while await self._one(reader, writer, netloc, served > 0):
            served += 1

    async def _one(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                   netloc: str, reused: bool) -> bool:
        """Read, answer and log one request; False when the connection is done."""
        try:
            async with asyncio.timeout(IDLE_TIMEOUT):
                head = await reader.readuntil(b"\r\n\r\n")
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError):
            return False
        start = time.monotonic()
        parts = head.split(b"\r\n", 1)[0].split(b" ")
        target = parts[1].decode("latin-1") if len(parts) == 3 else "-"
        key = (netloc, target)
        k = self.count[key]
        self.count[key] = k + 1
        plan = self.web.plan(netloc, target, k)
        view = plan.view
        try:
            gone = await self._send(plan, reader, writer)
            if gone and plan.timed:
                view = ERR
        except (ConnectionError, OSError):
            view = ERR if plan.timed else view
            plan.close = True
        finally:
            self._logged(netloc, target, start, plan.kind(view, reused))
        return not (plan.close or plan.reset or plan.hold)

    async def _send(self, plan: Plan, reader: asyncio.StreamReader,
                    writer: asyncio.StreamWriter) -> bool:
        """Send a plan's bytes as it says; True if the client hung up meanwhile."""
        if plan.stall and await _pause(reader, plan.stall):
            return True
        data = plan.data()
        if plan.rate:
            step = max(1, int(plan.rate * 0.1))
            for i in range(0, len(data), step):
                writer.write(data[i: i + step])
                await writer.drain()
                if i + step < len(data) and await _pause(reader, step / plan.rate):
                    return True
        elif data:
            writer.write(data)
            await writer.drain()
        if plan.hold and await _pause(reader, plan.hold):
            return True
        if plan.reset:
            reset(writer)
        elif plan.close or plan.hold:
            writer.close()
        return False


async def _pause(reader: asyncio.StreamReader, seconds: float) -> bool:
    """Wait ``seconds``; True as soon as the client hangs up (EOF or reset) instead."""
    try:
        data = await asyncio.wait_for(reader.read(1), seconds)
    except TimeoutError:
        return False
    except (ConnectionError, OSError):
        return True
    return not data  # a client that sends while waiting for an answer: not ours


@contextlib.contextmanager
def running(config: HostileConfig, log: str | Path | None = None) -> Iterator[HostileServer]:
    """Serve a hostile web from a background thread (its own event loop) in a ``with``."""
    with in_thread(HostileServer(HostileWeb(config), log), "hostile-server") as server:
        yield server


def serve_forever(config: HostileConfig, log: str | Path | None = None,
                  announce: Callable[[str], object] = print) -> None:
    """Serve a hostile web in this thread until SIGINT or SIGTERM, then stop cleanly."""
    forever(lambda: HostileServer(HostileWeb(config), log), announce)


@contextlib.contextmanager
def serving(config: HostileConfig, log: str | Path | None = None,
            stop_timeout: float = 10.0) -> Iterator[subprocess.Popen]:
    """Serve a hostile web from a child process for the block (see :func:`.server.child_server`)."""
    if not config.port:
        raise ValueError("a hostile web needs its port: see HostileConfig.on_free_port")
    argv = [sys.executable, "-m", "bspcrawl.testweb", "hostile"]
    for f in dataclasses.fields(config):
        argv += ["--" + f.name.replace("_", "-"), repr(getattr(config, f.name))]
    if log is not None:
        argv += ["--log", str(log)]
    with child_server(argv, stop_timeout) as proc:
        yield proc


# ---------------------------------------------------------------------------- audit


@dataclass(frozen=True, slots=True)
class Request:
    """One line of the server's log."""

    netloc: str
    target: str
    start: float
    end: float
    status: int
    view: str
    shape: str
    reused: bool

    @property
    def kind(self) -> str:
        return f"{self.status}/{self.view}/{self.shape}/{'reused' if self.reused else 'new'}"

    def __str__(self) -> str:
        return f"http://{self.netloc}{self.target[:120]} [{self.kind}] at {self.start:.3f}"


def read_log(log: str | Path) -> list[Request]:
    """The requests of a log, in log order (by end time)."""
    requests = []
    for line in Path(log).read_text(encoding="utf-8").splitlines():
        netloc, target, start, end, kind = line.split("\t")
        status, view, shape, conn = kind.split("/")
        requests.append(Request(netloc, target, float(start), float(end), int(status), view,
                                shape, conn == "reused"))
    return requests


def responses(log: str | Path) -> int:
    """How many answers the log records."""
    with open(log, "rb") as fh:
        return sum(chunk.count(b"\n") for chunk in iter(lambda: fh.read(1 << 20), b""))


def _fetches(requests: list[Request]) -> dict[tuple[str, str], list[Request]]:
    """Requests per URL in start order, libcurl's own retries folded into one fetch."""
    by_url: dict[tuple[str, str], list[Request]] = defaultdict(list)
    for r in sorted(requests, key=lambda r: r.start):
        done = by_url[(r.netloc, r.target)]
        last = done[-1] if done else None
        if last and last.reused and last.view == ERR and r.start - last.end < CURL_RETRY_WINDOW:
            done[-1] = r
        else:
            done.append(r)
    return by_url


def _chain_outcome(chain: list[Request]) -> str:
    """What the crawler makes of a robots.txt fetch (its requests through redirects):
    ``final``, ``retry`` (unreachable) or ``maybe`` (a redirect it may not have followed)."""
    last = chain[-1]
    if last.shape in ROBOTS_REDIRECTS and last.view == OK:
        if len(chain) > ROBOTS_HOPS:
            return "final"  # the sixth redirect: "redirects"
        return {"rfollow": "maybe", "rrefused": "retry", "rftp": "retry",
                "rblocked": "final"}[last.shape]
    if last.view == ERR:
        return "retry"
    return "final" if 200 <= last.status < 500 and last.status != 429 else "retry"


def repeated(requests: list[Request], page_retries: int, robots_retries: int) -> list[str]:
    """URLs requested again when the earlier answer did not call for it, or too often."""
    problems = []
    fetches = _fetches(requests)
    chains: dict[int, list[list[Request]]] = defaultdict(list)
    robots = sorted((r for (netloc, target), rs in fetches.items()
                     if robots_source(netloc, target) is not None for r in rs),
                    key=lambda r: r.start)
    for r in robots:
        src = robots_source(r.netloc, r.target)
        assert src is not None
        if r.target == "/robots.txt":
            chains[src].append([r])
        elif chains[src]:
            chains[src][-1].append(r)
        else:
            problems.append(f"{r}: a robots.txt alias requested before any robots.txt of "
                            f"host {src}")
    for src, fetched in chains.items():
        for i in range(1, len(fetched)):
            outcome = _chain_outcome(fetched[i - 1])
            if outcome == "final":
                problems.append(f"{fetched[i][0]}: robots.txt of host {src} fetched again "
                                f"after the final answer {fetched[i - 1][-1]}")
                break
            if i > robots_retries:
                problems.append(f"{fetched[i][0]}: robots.txt of host {src} fetched "
                                f"{len(fetched)} times, more than 1 + {robots_retries}")
                break
    for (netloc, target), rs in fetches.items():
        if robots_source(netloc, target) is not None:
            continue
        for i in range(1, len(rs)):
            before = rs[i - 1]
            if not (before.view == OK and before.status in (429, 503)):
                problems.append(f"{rs[i]}: requested again after {before}")
                break
            if i > page_retries:
                problems.append(f"{rs[i]}: requested {len(rs)} times, more than 1 + "
                                f"{page_retries} (429/503 retries)")
                break
    return problems


def overlapping(requests: list[Request], slack: float = SLACK) -> list[str]:
    """Requests in flight to one host at once (beyond ``slack`` s), robots.txt redirects
    followed to another host excepted."""
    problems = []
    by_host: dict[str, list[Request]] = defaultdict(list)
    for r in requests:
        src = robots_source(r.netloc, r.target)
        if src is None or src == host_index(r.netloc.rpartition(":")[0]):
            by_host[r.netloc].append(r)
    for rs in by_host.values():
        rs.sort(key=lambda r: r.start)
        longest = None
        for r in rs:
            if longest is not None and r.start < longest.end - (
                    max(slack, HANGUP_SLACK) if longest.view == ERR else slack):
                problems.append(f"{r} began {longest.end - r.start:.3f} s before {longest} "
                                f"ended (two requests in flight to one host)")
            if longest is None or r.end > longest.end:
                longest = r
    return problems


def damaged(out: str | Path) -> list[str]:
    """What is wrong with a crawl's output: unreadable HDF5 or WARC files, a missing
    ``crawl.h5``, a replaced fetcher thread."""
    import h5py  # only the audit needs them, not the server

    from bspcrawl.index.inspect import summary
    from bspcrawl.index.output import CRAWL_FILE, OutputError

    out = Path(out)
    problems = []
    for path in sorted(out.rglob("*.h5")):
        try:
            with h5py.File(path, "r") as f:
                f.visititems(_touch)
        except Exception as e:  # noqa: BLE001 - whatever h5py raises is the finding
            problems.append(f"{path}: h5py cannot read it ({type(e).__name__}: {e})")
    problems += [f"{p}: a WARC file left unfinished" for p in sorted(out.rglob("*.open"))]
    warcs = sorted(out.rglob("*.warc.gz"))
    if warcs:
        check = subprocess.run([sys.executable, "-m", "warcio.cli", "check", *map(str, warcs)],
                               capture_output=True, text=True)
        if check.returncode:
            lines = (check.stdout + check.stderr).strip().splitlines()
            problems.append("warcio check fails: " + " | ".join(lines[:6]))
    if not (out / CRAWL_FILE).exists():
        return [*problems, f"{out}: no {CRAWL_FILE} (the crawl did not end)"]
    try:
        replaced = summary(out)["counters"]["fetcher/replaced"]
    except (OSError, OutputError, KeyError) as e:
        return [*problems, f"{out}: cannot read the counters ({e})"]
    if replaced:
        problems.append(f"{out}: fetcher/replaced is {replaced}: a fetcher thread was replaced")
    return problems


def _touch(name: str, obj: object) -> None:
    getattr(obj, "shape", None)


def crawl_retries(out: str | Path) -> tuple[int, int]:
    """``(politeness_retries, robotstxt_retries)`` of the crawl in ``out``, or the defaults."""
    import h5py

    from bspcrawl.settings import Settings

    default = Settings()
    try:
        with h5py.File(Path(out) / "crawl.h5", "r") as f:
            stored = json.loads(f["ranks/0000"].attrs["settings"])
    except (OSError, KeyError, ValueError):
        return default.politeness_retries, default.robotstxt_retries
    return (int(stored.get("politeness_retries", default.politeness_retries)),
            int(stored.get("robotstxt_retries", default.robotstxt_retries)))


def audit(log: str | Path, out: str | Path, slack: float = SLACK) -> list[str]:
    """Every problem of a crawl of a hostile web; empty when the crawl passed."""
    requests = read_log(log)
    page_retries, robots_retries = crawl_retries(out)
    return (repeated(requests, page_retries, robots_retries)
            + overlapping(requests, slack) + damaged(out))
