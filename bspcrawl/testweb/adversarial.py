"""The adversarial web: what real crawls meet, added to a polite :class:`~.model.Web`.

:func:`extend` appends one host per role (:attr:`WebConfig.special_roles` order), each
home page linked from a default seed's home page, so a crawl from the seeds meets them all:

- ``dead``: connections refused; ``reset``: every request but robots.txt reset, half after
  part of the body; ``slow``: :data:`SLOW_DELAY` s, then :data:`SLOW_RATE` B/s;
  ``throttle``: 429 to a request within :data:`THROTTLE_INTERVAL` s of the last;
  ``flaky``: requests 1 .. :data:`FLAKY_BURST` of every :data:`FLAKY_PERIOD` fail;
- ``mirror``: a byte-identical copy of a polite site; ``nearmirror``: one small edit a page
  (:func:`near_edit`), the near-duplicates ``inspect --duplicates`` must find;
- ``redirects``: a loop, a self-redirect and a chain of :data:`CHAIN_HOPS` hops;
- ``junk``: images, PDF, binary labelled HTML, broken HTML, deep nesting, bad charsets,
  a huge page and a gzip bomb (both streamed, never built in memory);
- ``calendar``, ``session``, ``deep``: spider traps (months forever, a new ``?sid=`` on
  every link, ``a/`` one level deeper).

``soft404`` is a flag of polite sites: unknown paths answer 200 "not found". The server
plays the roles; this module says what each URL holds (:func:`reply`, :func:`reply_unknown`)
and sees a web only as a :class:`WebLike`.
"""

from __future__ import annotations

import hashlib
import html
import random
import re
import struct
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cache
from typing import Protocol

import ada_url
import numpy as np

from bspcrawl.testweb.config import PAGE, REDIRECT, SPECIAL, TRAPS, UNRELIABLE, WebConfig

SALT = 0xAD7E
SLOW_DELAY = 1.0  # s before a slow host answers
SLOW_RATE = 2048  # B/s of a slow host
THROTTLE_INTERVAL = 1.0  # s a throttling host wants between two requests
RETRY_AFTER = 1  # s, the Retry-After of 429 and 503 answers
FLAKY_PERIOD, FLAKY_BURST = 8, 3  # a flaky host fails requests 1 .. BURST of each PERIOD
FLAKY_STATUSES = (503, 500, 502)
SMALL_SITE = 5  # pages of an unreliable host (its home and /p1.html .. /p4.html)
HUGE_BYTES = 5 << 20
BOMB_BYTES = 1 << 30
_BOMB_CRC = 0x5B64C2B0  # CRC-32 of BOMB_BYTES zero bytes (checked by a test)
NESTING = 20_000
CALENDAR_ENTRY = (2024, 5)
SESSION_ITEMS = 10
CHAIN_HOPS = 8
_HTML = "Content-Type: text/html; charset=utf-8"


@dataclass(frozen=True, slots=True)
class Stream:
    """A body sent in pieces: ``length`` bytes from ``chunks()``, never built whole."""

    length: int
    chunks: Callable[[], Iterator[bytes]]


Reply = tuple[int, list[str], "bytes | Stream"]
"""(status, header lines without Content-Length, body) of one answer."""


class WebLike(Protocol):
    """The parts of a :class:`~.model.Web` this module reads and (in :func:`extend`, while
    the web is built) writes; :mod:`.model` calls in here, so this module names them
    instead of importing the class."""

    config: WebConfig
    words: list[str]
    origins: list[str]
    site_start: np.ndarray
    role: list[str]
    soft404: np.ndarray
    disallow: list[tuple[str, ...]]
    host: np.ndarray
    path: list[str]
    kind: np.ndarray
    allowed: np.ndarray
    redirect_target: np.ndarray
    copy_of: np.ndarray
    extra: dict[int, list[int]]
    sure: np.ndarray
    sure_links: np.ndarray
    _index: list[dict[str, int]]
    _robots: list[str | None]
    _redirects: dict[int, tuple[int, str]]
    _special: dict[int, tuple]

    def url(self, r: int) -> str: ...

    def resource(self, url: str) -> int: ...

    def _allowed_path(self, h: int, path: str) -> bool: ...

    def _render(self, page: int) -> bytes: ...


# ------------------------------------------------------------------------ construction


class _Table:
    """The web's resource table as Python lists while hosts are added."""

    def __init__(self, web: WebLike) -> None:
        self.web = web
        self.hosts = web.host.tolist()
        self.kinds = web.kind.tolist()
        self.copies: list[tuple[int, int]] = []  # (mirror page, the page it copies)

    def host(self, role: str, robots: str | None = None, rules: tuple = ()) -> int:
        web = self.web
        h = len(web.role)
        web.role.append(role)
        web._index.append({})
        web._robots.append(robots)
        web.disallow.append(rules)
        return h

    def add(self, h: int, path: str, kind: int, spec: tuple = ()) -> int:
        web = self.web
        r = len(web.path)
        web._index[h][path] = r
        web.path.append(path)
        self.hosts.append(h)
        self.kinds.append(kind)
        if spec:
            web._special[r] = spec
        return r

    def redirect(self, h: int, path: str, status: int, location: str) -> int:
        r = self.add(h, path, REDIRECT)
        self.web._redirects[r] = (status, location)
        return r

    def freeze(self) -> None:
        """Rebuild the web's arrays from the lists (redirect targets resolved here)."""
        web = self.web
        n = len(web.path)
        web.host = np.array(self.hosts, dtype=np.int64)
        web.kind = np.array(self.kinds, dtype=np.int8)
        old = web.redirect_target
        web.redirect_target = np.full(n, -1, dtype=np.int64)
        web.redirect_target[: old.size] = old
        for r in range(old.size, n):
            if self.kinds[r] == REDIRECT:
                status, location = web._redirects[r]
                web.redirect_target[r] = web.resource(_join(web.url(r), location))
        web.allowed = np.array(
            [web._allowed_path(h, p) for h, p in zip(self.hosts, web.path, strict=True)]
        )
        web.copy_of = np.concatenate([web.copy_of, np.full(n - web.copy_of.size, -1)])
        for m, r in self.copies:
            web.copy_of[m] = r


def _join(base: str, href: str) -> str:
    """Canonical URL of ``href`` on a page at ``base`` (fragment cut)."""
    u = ada_url.URL(ada_url.join_url(base, href))
    u.hash = ""
    return u.href


def extend(web: WebLike) -> None:
    """Add the adversarial hosts and flags of ``web.config`` to ``web`` (in construction)."""
    cfg = web.config
    rng = np.random.default_rng([cfg.seed, SALT])
    H = cfg.hosts
    if cfg.soft404:
        n = max(1, round(cfg.soft404 * H))
        web.soft404[rng.choice(H, size=n, replace=False)] = True
    table = _Table(web)
    homes = []
    copying = [role for role in cfg.special_roles if role in ("mirror", "nearmirror")]
    mirrored = _mirror_originals(web, rng, len(copying))
    for role in cfg.special_roles:
        if role in copying:
            h = _mirror(table, mirrored.pop(0), role)
        else:
            h = table.host(role)
            _SITES[role](table, h)
        homes.append(web._index[h]["/"])
    web.soft404 = np.concatenate([web.soft404, np.zeros(len(homes), dtype=bool)])
    entries = web.site_start[: min(H, cfg.seed_hosts)].tolist()
    for i, home in enumerate(homes):
        web.extra.setdefault(entries[i % len(entries)], []).append(home)
    table.freeze()
    for m, r in table.copies:  # the footers are final now: read the copied links
        web.extra[m] = _copied_links(web, m, r)
    web.sure = np.ones(len(web.path), dtype=bool)
    web.sure_links = np.ones(len(web.path), dtype=bool)
    unreliable = np.array([role in UNRELIABLE for role in web.role])
    web.sure &= ~unreliable[web.host]
    for r, spec in web._special.items():
        if spec[0] in ("huge", "bomb"):
            web.sure[r] = False
        if spec[0] in _MISMADE:
            web.sure_links[r] = False


def _mirror_originals(web: WebLike, rng: np.random.Generator, n: int) -> list[int]:
    """Polite sites to copy: no seed hosts or soft-404 sites, 3 to 60 resources, if there
    are such."""
    if not n:
        return []
    cfg = web.config
    size = np.bincount(web.host, minlength=cfg.hosts)[: cfg.hosts]
    fit = np.flatnonzero((size >= 3) & (size <= 60) & ~web.soft404)
    fit = fit[fit >= cfg.seed_hosts] if (fit >= cfg.seed_hosts).any() else fit
    if fit.size == 0:
        fit = np.argsort(size, kind="stable")[:1]
    return [int(fit[i]) for i in rng.integers(0, fit.size, n)]


def _mirror(table: _Table, orig: int, role: str) -> int:
    """A host with a copy of every resource of site ``orig``: pages answer the same bytes
    (``role`` mirror) or nearly (nearmirror)."""
    web = table.web
    h = table.host(role, web._robots[orig], web.disallow[orig])
    for r in np.flatnonzero(web.host == orig).tolist():
        kind, path = int(web.kind[r]), web.path[r]
        if kind == PAGE:  # a SPECIAL copy
            table.copies.append((table.add(h, path, SPECIAL), r))
        elif kind == REDIRECT:
            table.redirect(h, path, *web._redirects[r])
        else:
            table.add(h, path, kind)
    return h


def near_edit(web: WebLike, page: int, body: bytes) -> bytes:
    """``body`` (the HTML of the page a near mirror's ``page`` copies) with one small
    edit, deterministic from the web's seed and ``page``: a date line, or a sentence of 8
    to 20 words of the web's vocabulary, inserted at the start of ``<main>``."""
    rng = np.random.default_rng([web.config.seed, SALT, page])
    if rng.random() < 0.5:
        day = 1 + int(rng.integers(365))
        line = f"Updated on day {day} of 2024."
    else:
        words = rng.integers(0, len(web.words), int(rng.integers(8, 21))).tolist()
        line = " ".join(web.words[w] for w in words).capitalize() + "."
    return body.replace(b"<main>\n", f"<main>\n<p>{line}</p>\n".encode(), 1)


_HREF = re.compile(rb"""<(base|a) href=(?:"([^"]*)"|'([^']*)')""")


def _copied_links(web: WebLike, r: int, orig: int) -> list[int]:
    """Resources that the links of page ``orig``'s HTML reach when served at ``r``'s URL."""
    base = url = web.url(r)
    out = []
    for tag, dq, sq in _HREF.findall(web._render(orig)):
        href = html.unescape((dq or sq).decode())
        if tag == b"base":
            base = ada_url.join_url(url, href)
            continue
        t = web.resource(_join(base, href))
        assert t >= 0, (web.url(r), href)
        out.append(t)
    return out


def _small_site(table: _Table, h: int) -> None:
    """A home page and pages /p1.html .. linking home and the next one (SMALL_SITE pages)."""
    web = table.web
    home = table.add(h, "/", SPECIAL, ("page",))
    pages = [table.add(h, f"/p{i}.html", SPECIAL, ("page",)) for i in range(1, SMALL_SITE)]
    web.extra[home] = pages
    for i, p in enumerate(pages):
        web.extra[p] = [home, pages[(i + 1) % len(pages)]]


def _redirect_site(table: _Table, h: int) -> None:
    web = table.web
    home = table.add(h, "/", SPECIAL, ("page",))
    a = table.redirect(h, "/loop/a", 302, "b")
    table.redirect(h, "/loop/b", 301, web.origins[h] + "/loop/a")
    me = table.redirect(h, "/self", 307, "/self")
    chain = []
    for i in range(CHAIN_HOPS):
        last = i == CHAIN_HOPS - 1
        location = "/chain/end.html" if last else (f"{i + 1}" if i % 2 else f"/chain/{i + 1}")
        chain.append(table.redirect(h, f"/chain/{i}", (301, 308, 302)[i % 3], location))
    end = table.add(h, "/chain/end.html", SPECIAL, ("page",))
    web.extra[home] = [a, me, chain[0]]
    web.extra[end] = [home]


_JUNK = ("png", "gif", "pdf", "octets", "binary", "empty")
_MISMADE = ("broken", "nested", "badutf8", "charset", "utf16")


def _junk_site(table: _Table, h: int) -> None:
    web, cfg = table.web, table.web.config
    home = table.add(h, "/", SPECIAL, ("page",))
    kinds = (list(_JUNK + _MISMADE) if cfg.junk else []) + ["huge"] * cfg.huge
    kinds += ["bomb"] * cfg.bomb
    paths = dict(png="/img/logo.png", gif="/img/dot.gif", pdf="/docs/report.pdf",
                 octets="/data/archive.bin", binary="/data/blob.html")
    web.extra[home] = []
    for kind in kinds:
        r = table.add(h, paths.get(kind, f"/{kind}.html"), SPECIAL, (kind,))
        web.extra[home].append(r)
        if kind in _MISMADE or kind == "huge":
            behind = table.add(h, f"/behind/{kind}.html", SPECIAL, ("page",))
            web.extra[r] = [behind]
            web.extra[behind] = [home]


def _trap_site(table: _Table, h: int) -> None:
    table.add(h, "/", SPECIAL, (table.web.role[h],))  # the inside is not in the table


_SITES: dict[str, Callable[[_Table, int], None]] = {
    **dict.fromkeys(("dead", "reset", "slow", "throttle", "flaky"), _small_site),
    "redirects": _redirect_site,
    "junk": _junk_site,
    **dict.fromkeys(("calendar", "session", "deep"), _trap_site),
}


# --------------------------------------------------------------------------- answers


def reply(web: WebLike, r: int) -> Reply:
    """The answer to SPECIAL resource ``r`` (mirror pages excepted: the server serves their
    originals)."""
    spec = web._special[r]
    return _MAKERS[spec[0]](web, int(web.host[r]), web.path[r], r)


def reply_unknown(web: WebLike, h: int, target: str) -> Reply | None:
    """The answer to a path of host ``h`` that is not a resource (or is a dead link):
    a soft 404, a page of a spider trap, or ``None`` for a plain 404."""
    if web.soft404[h]:
        return 200, [_HTML], _soft404_page()
    role = web.role[h]
    if role in TRAPS:
        return trap_page(web, h, target)
    return None


@cache
def _soft404_page() -> bytes:
    return (
        b'<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        b"<title>Page not found</title>\n</head>\n<body>\n<h1>Sorry!</h1>\n"
        b"<p>We could not find that page. It may have moved, or never existed.</p>\n"
        b'<p><a href="/">Back to the home page</a></p>\n</body>\n</html>\n'
    )


def _words(web: WebLike, key: str, n: int) -> list[str]:
    rnd = random.Random(f"{web.config.seed}:{key}")
    return rnd.choices(web.words[:1500], k=n)


def _html_page(web: WebLike, key: str, title: str, hrefs: list[str], words: int = 120) -> bytes:
    """A small page: a title, a paragraph of ``words`` words and a list of links."""
    labels = _words(web, key + "#", len(hrefs))
    items = "".join(
        f'<li><a href="{html.escape(h)}">{w}</a></li>\n' for h, w in zip(hrefs, labels, strict=True)
    )
    return (
        f'<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f"<title>{title}</title>\n</head>\n<body>\n<h1>{title}</h1>\n"
        f"<p>{' '.join(_words(web, key, words))}</p>\n<ul>\n{items}</ul>\n</body>\n</html>\n"
    ).encode()


def _href(web: WebLike, h: int, t: int) -> str:
    """A link from host ``h`` to resource ``t``: root-relative on the same host."""
    return web.path[t] if web.host[t] == h else web.url(t)


def _page(web: WebLike, h: int, path: str, r: int) -> Reply:
    hrefs = [_href(web, h, t) for t in web.extra.get(r, [])]
    title = f"{web.role[h] or 'site'}: {path}"
    return 200, [_HTML], _html_page(web, f"{h}{path}", title, hrefs, 60 + len(path) * 7)


def _png(web: WebLike, h: int, path: str, r: int) -> Reply:
    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = struct.pack(">I", zlib.crc32(kind + data))
        return struct.pack(">I", len(data)) + kind + data + crc

    rows = b"".join(
        b"\0" + b"".join(bytes((x * 16, y * 16, 128)) for x in range(16)) for y in range(16)
    )
    body = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 16, 16, 8, 2, 0, 0, 0))
    body += chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")
    return 200, ["Content-Type: image/png"], body


_GIF = bytes.fromhex(
    "47494638396101000100800000ffffff00000021f90401000000002c00000000010001000002024401003b"
)


def _gif(web: WebLike, h: int, path: str, r: int) -> Reply:
    return 200, ["Content-Type: image/gif"], _GIF


def _pdf(web: WebLike, h: int, path: str, r: int) -> Reply:
    body = (
        b"%PDF-1.4\n1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj\n"
        b"2 0 obj << /Type /Pages /Kids [3 0 R] /Count 1 >> endobj\n"
        b"3 0 obj << /Type /Page /Parent 2 0 R /MediaBox [0 0 200 200] >> endobj\n"
        b"trailer << /Root 1 0 R >>\n%%EOF\n"
    )
    return 200, ["Content-Type: application/pdf"], body


def _octets(web: WebLike, h: int, path: str, r: int) -> Reply:
    body = random.Random(f"{web.config.seed}:{path}").randbytes(8192)
    return 200, ["Content-Type: application/octet-stream"], body


def _binary(web: WebLike, h: int, path: str, r: int) -> Reply:
    return 200, [_HTML], random.Random(f"{web.config.seed}:{path}").randbytes(16384)


def _empty(web: WebLike, h: int, path: str, r: int) -> Reply:
    return 200, [_HTML], b""


def _behind(web: WebLike, r: int) -> str:
    return web.path[web.extra[r][0]]


def _broken(web: WebLike, h: int, path: str, r: int) -> Reply:
    body = (
        "<html><head><title>Broken <b>markup</title>\n<body bgcolor=white>\n"
        "<p>An unclosed paragraph <div class=x>and a div<table><tr><td>cell<td>cell\n"
        f"<a href={_behind(web, r)}>an unquoted link</a>\n"
        "<p>Stray < and > and &bogus; and &#xZZ; entities</p></p></span></div></td>\n"
        "<img src='x.png' alt=\"never closed\n<p>after the broken attribute\n"
    )
    return 200, [_HTML], body.encode()


def _nested(web: WebLike, h: int, path: str, r: int) -> Reply:
    body = (
        "<!DOCTYPE html>\n<html><head><title>Nested</title></head><body>\n"
        + "<div>" * NESTING
        + f'<a href="{_behind(web, r)}">the bottom</a>'
        + "</div>" * NESTING
        + "\n</body></html>\n"
    )
    return 200, [_HTML], body.encode()


def _badutf8(web: WebLike, h: int, path: str, r: int) -> Reply:
    body = (
        b'<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>Caf\xe9</title></head>\n'
        b"<body><p>Latin-1 caf\xe9, a lone \xc3\x28, a surrogate \xed\xa0\x80, overlong \xc0\xaf,"
        b' and \xff\xfe.</p>\n<p><a href="' + _behind(web, r).encode() + b'">next</a></p>\n'
        b"</body></html>\n"
    )
    return 200, [_HTML], body


def _charset(web: WebLike, h: int, path: str, r: int) -> Reply:
    body = _html_page(web, path, "Unknown charset", [_behind(web, r)], 40)
    return 200, ["Content-Type: text/html; charset=x-no-such-charset"], body


def _utf16(web: WebLike, h: int, path: str, r: int) -> Reply:
    text = _html_page(web, path, "UTF-16", [_behind(web, r)], 40).decode()
    return 200, [_HTML], text.encode("utf-16-le")


def _huge(web: WebLike, h: int, path: str, r: int) -> Reply:
    head = (
        "<!DOCTYPE html>\n<html><head><title>Huge</title></head><body>\n"
        f'<p><a href="{_behind(web, r)}">what follows the huge page</a></p>\n'
    ).encode()
    tail = b"</body></html>\n"
    para = ("<p>" + " ".join(_words(web, path, 9000)) + "</p>\n").encode()

    def chunks() -> Iterator[bytes]:
        yield head
        left = HUGE_BYTES - len(head) - len(tail)
        while left > 0:
            yield para[:left]
            left -= len(para)
        yield tail

    return 200, [_HTML], Stream(HUGE_BYTES, chunks)


@cache
def gzip_bomb(size: int = BOMB_BYTES) -> tuple[int, bytes, bytes, bytes]:
    """A gzip member of ``size`` zero bytes (a multiple of 1 MiB) as (count, head, block,
    tail): ``head + block * count + tail``. With a full flush after each MiB every block
    compresses to the same bytes, so the body can be streamed from one block."""
    mib = 1 << 20
    if size % mib or size <= 0:
        raise ValueError(f"a bomb is a positive number of MiB, not {size} bytes")
    zeros = bytes(mib)
    z = zlib.compressobj(9, zlib.DEFLATED, 31)
    head = z.compress(b"")
    block = z.compress(zeros) + z.flush(zlib.Z_FULL_FLUSH)
    tail = z.flush()[:-8]  # the final empty block; the trailer is computed, not compressed
    crc = _BOMB_CRC if size == BOMB_BYTES else 0
    if size != BOMB_BYTES:
        for _ in range(size // mib):
            crc = zlib.crc32(zeros, crc)
    return size // mib, head, block, tail + struct.pack("<II", crc, size & 0xFFFFFFFF)


def _bomb(web: WebLike, h: int, path: str, r: int) -> Reply:
    count, head, block, tail = gzip_bomb()

    def chunks() -> Iterator[bytes]:
        yield head
        group = block * 64
        for _ in range(count // 64):
            yield group
        yield block * (count % 64) + tail

    length = len(head) + count * len(block) + len(tail)
    return 200, [_HTML, "Content-Encoding: gzip"], Stream(length, chunks)


# ------------------------------------------------------------------------ spider traps


_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August",
           "September", "October", "November", "December")
_CAL = re.compile(r"/cal/(\d{4,})/(\d\d)/")
_DEEP = re.compile(r"(?:/a)*/")


def month_path(year: int, month: int) -> str:
    """Path of a calendar month page: ``/cal/2024/05/``."""
    return f"/cal/{year:04d}/{month:02d}/"


def add_months(year: int, month: int, k: int) -> tuple[int, int]:
    """(year, month) ``k`` months after (or before, for negative k) the given one."""
    i = year * 12 + month - 1 + k
    return i // 12, i % 12 + 1


def session_id(web: WebLike, h: int, target: str, j: int) -> str:
    """The sid of link ``j`` on the page answered at ``target``: new for every target."""
    key = f"{web.config.seed}:{h}:{target}:{j}".encode()
    return hashlib.blake2b(key, digest_size=8).hexdigest()


def trap_page(web: WebLike, h: int, target: str) -> Reply | None:
    """A page of trap host ``h`` at ``target`` (``None``: 404)."""
    role = web.role[h]
    hrefs: list[str]
    if role == "calendar":
        if target == "/":
            title, hrefs = "Calendar", [month_path(*CALENDAR_ENTRY)]
        else:
            m = _CAL.fullmatch(target)
            year, month = (int(m[1]), int(m[2])) if m else (0, 0)
            if not (m and year >= 1 and 1 <= month <= 12 and target == month_path(year, month)):
                return None
            title = f"Calendar: {_MONTHS[month - 1]} {year}"
            hrefs = [month_path(*add_months(year, month, 1)), "/"]
            if (year, month) != (1, 1):
                hrefs.insert(0, month_path(*add_months(year, month, -1)))
    elif role == "session":
        path = target.partition("?")[0]
        items = [f"/item-{i}.html" for i in range(SESSION_ITEMS)]
        if path != "/" and path not in items:
            return None
        title = "Shop" if path == "/" else f"Shop item {path[6:-5]}"
        hrefs = [f"{p}?sid={session_id(web, h, target, j)}" for j, p in enumerate(["/", *items])]
    else:  # deep
        if not _DEEP.fullmatch(target):
            return None
        title = f"Level {target.count('/') - 1}"
        hrefs = ["a/"] if target == "/" else ["a/", "../", "/"]
    return 200, [_HTML], _html_page(web, f"{h}{target}", title, hrefs, 80)


def _trap_home(web: WebLike, h: int, path: str, r: int) -> Reply:
    answer = trap_page(web, h, path)
    assert answer is not None
    return answer


_MAKERS: dict[str, Callable[[WebLike, int, str, int], Reply]] = {
    "page": _page, "png": _png, "gif": _gif, "pdf": _pdf, "octets": _octets, "binary": _binary,
    "empty": _empty, "broken": _broken, "nested": _nested, "badutf8": _badutf8,
    "charset": _charset, "utf16": _utf16, "huge": _huge, "bomb": _bomb,
    **dict.fromkeys(("calendar", "session", "deep"), _trap_home),
}
