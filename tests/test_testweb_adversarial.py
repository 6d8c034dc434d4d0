"""Tests of the adversarial test web (bspcrawl.testweb.adversarial), epochs and timing.

Each behaviour is checked live against the server; the ground truth (must fetch, may give
up, must not fetch, trap limits) is checked against the model and against an independent
tiny crawler that keeps the documented rules (robots.txt, at most 5 redirect hops, one
fetch per URL, a per-host budget of ``trap_budget`` URLs).
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import dataclasses
import http.client
import socket
import time
import zlib
from collections import deque
from email.utils import parsedate_to_datetime

import ada_url
import lxml.etree
import lxml.html
import numpy as np
import protego
import pycurl
import pytest

from bspcrawl.testweb import (
    AGENT,
    Web,
    WebConfig,
    add_arguments,
    cmd_truth,
    config_argv,
    config_from_args,
    free_port,
    host_address,
    running,
    running_process,
)
from bspcrawl.testweb import adversarial as adv
from bspcrawl.testweb.model import ADVERSARIAL, DEAD, PAGE, REDIRECT, TRAPS, UNRELIABLE
from bspcrawl.testweb.server import http_date

SIZE = dict(pages=150, hosts=8)
CAP = 2 * 1024 * 1024  # the crawler's default body cap


def _with_port(config: WebConfig) -> Web:
    return Web(dataclasses.replace(config, port=free_port(config.total_hosts)))


@pytest.fixture(scope="module")
def adv_web() -> Web:
    """Every behaviour on, without per-host timing (fast); the slow host stays slow."""
    return _with_port(WebConfig.adversarial(**SIZE, latency_ms=0.0, bandwidth_kb=0.0))


@pytest.fixture(scope="module")
def served(adv_web):
    with running(adv_web) as server:
        yield server


def canonical(url: str) -> str:
    u = ada_url.URL(url)
    u.hash = ""
    return u.href


def host_of(web: Web, role: str) -> int:
    return web.role.index(role)


def get(web: Web, h: int, target: str, headers=None, method="GET", timeout=10.0):
    """(status, headers, body) of one request on a new connection."""
    conn = http.client.HTTPConnection(host_address(h), web.config.port, timeout=timeout)
    try:
        conn.request(method, target, headers=headers or {})
        resp = conn.getresponse()
        return resp.status, dict(resp.getheaders()), resp.read()
    finally:
        conn.close()


# ------------------------------------------------------------------------------ config


def test_off_by_default():
    cfg = WebConfig(pages=100, hosts=5)
    web = Web(cfg)
    assert cfg.total_hosts == 5 and cfg.special_roles == [] and not web.adversarial
    assert web.role == [""] * 5 and not web.soft404.any() and not web.extra
    assert not web.host_delay.any() and not web.host_rate.any()
    assert (web.version == 0).all() and not web.expiring.any()
    assert web.may_give_up() == [] and web.must_fetch() == web.truth()
    assert web.trap_hosts() == []


def test_config():
    cfg = WebConfig.adversarial(**SIZE)
    assert all(getattr(cfg, k) == v for k, v in ADVERSARIAL.items())
    assert cfg.trap_names == list(TRAPS) and WebConfig(traps="all").traps == cfg.traps
    assert cfg.total_hosts == 8 + 5 + 1 + 1 + 1 + 3
    assert WebConfig(huge=True).special_roles == ["junk"]
    for bad in (
        dict(traps="calendar,maze"),
        dict(traps="deep,deep"),
        dict(dead_hosts=-1),
        dict(change=1.5),
        dict(soft404=-0.1),
        dict(latency_ms=-1.0),
        dict(latency_ms=float("nan")),
        dict(hosts=64000 - 1, pages=64000, mirrors=2),
    ):
        with pytest.raises(ValueError):
            WebConfig(**bad)
    with pytest.raises(ValueError, match="trap_budget"):
        Web(WebConfig(**SIZE, traps="deep", trap_budget=10))
    assert Web(WebConfig(**SIZE, traps="deep", trap_budget=345)).trap_budget == 345


def test_polite_part_unchanged(adv_web):
    """The adversarial web is the polite web plus footers on seed home pages."""
    polite = Web(WebConfig(**SIZE, port=adv_web.config.port))
    n = len(polite.path)
    assert adv_web.path[:n] == polite.path
    assert np.array_equal(adv_web.link_dst, polite.link_dst)
    assert np.array_equal(adv_web.allowed[:n], polite.allowed)
    for p in range(polite.n_pages):
        page = adv_web.html(p)
        if p in adv_web.extra:
            head, _, rest = page.partition(b"<footer>\n")
            assert rest.count(b"<a href=") == len(adv_web.extra[p])
            page = head + rest.partition(b"</footer>\n")[2]
        assert page == polite.html(p)
    assert set(polite.truth()) <= set(adv_web.must_fetch())


def test_deterministic(adv_web):
    again = Web(adv_web.config)
    assert again.categories() == adv_web.categories()
    assert again.path == adv_web.path and again.role == adv_web.role
    assert np.array_equal(again.soft404, adv_web.soft404)
    for r in adv_web._special:
        a, b = again.reply(r), adv_web.reply(r)
        if isinstance(a[2], bytes):
            assert a == b
    c = host_of(adv_web, "session")
    assert again.reply_unknown(c, "/item-1.html?sid=x") == adv_web.reply_unknown(
        c, "/item-1.html?sid=x"
    )
    other = Web(dataclasses.replace(adv_web.config, seed=7))
    assert other.must_fetch() != adv_web.must_fetch()
    assert other.reply_unknown(c, "/") != adv_web.reply_unknown(c, "/")


# ------------------------------------------------------------------------------- truth


def test_truth_categories(adv_web):
    web = adv_web
    must, may, never = web.categories()
    assert web.truth() == must == sorted(set(must))
    assert not (set(must) & set(may) or set(must) & set(never) or set(may) & set(never))
    origin = {role: web.origins[host_of(web, role)] for role in web.role if role}

    def on(role: str, urls: list[str]) -> list[str]:
        return [u for u in urls if u.startswith(origin[role] + "/")]

    for role in UNRELIABLE:  # every page of an unreliable host may fail, none must be there
        assert len(on(role, may)) == adv.SMALL_SITE and not on(role, must)
    rd = origin["redirects"]
    assert {rd + p for p in ("/", "/loop/a", "/loop/b", "/self")} <= set(must)
    assert {rd + f"/chain/{i}" for i in range(6)} <= set(must)
    assert on("redirects", never) == [rd + "/chain/6"]
    junk = origin["junk"]
    assert {junk + "/huge.html", junk + "/bomb.html", junk + "/behind/nested.html"} <= set(may)
    assert {junk + p for p in ("/img/logo.png", "/data/blob.html", "/nested.html")} <= set(must)
    for role in TRAPS:
        assert on(role, must) == [origin[role] + "/"]
    b = web.trap_budget
    assert b == 100 and all(web.trap_limit(o) == b for o in web.trap_hosts())
    assert on("deep", never) == [origin["deep"] + "/" + "a/" * b]
    cal = [adv.add_months(*adv.CALENDAR_ENTRY, k) for k in (1 - b, b - 1)]
    assert on("calendar", never) == sorted(origin["calendar"] + adv.month_path(*m) for m in cal)
    assert on("mirror", must) and not on("mirror", may)
    # the rest of must_not: URLs robots.txt disallows; everything listed is on this web
    for url in must + may + [u for u in never if "/cal/" not in u and "/a/a/" not in u]:
        r = web.resource(url)
        assert r >= 0 and canonical(url) == url
        assert web.allowed[r] == (url not in never) or url == rd + "/chain/6"
    # every host's limit covers its URLs; trap_limit accepts indices, netlocs and URLs
    count = collections.Counter(ada_url.URL(u).host for u in must + may)
    assert all(web.trap_limit(h) >= k for h, k in count.items())
    assert web.trap_limit(0) == web.trap_limit(web.netlocs[0]) == (web.host == 0).sum()
    with pytest.raises(ValueError):
        web.trap_limit("127.9.9.9:1")


def test_truth_seeds(adv_web):
    web = adv_web
    dead = web.origins[host_of(web, "dead")] + "/"
    assert web.categories([dead]) == ([], sorted(dead + p for p in ["", *_small_pages()]), [])
    cal = web.origins[host_of(web, "calendar")] + "/cal/1999/12/"
    assert web.categories([cal]) == ([cal], [], [])  # no beyond-budget URLs from a seed inside
    home = web.origins[host_of(web, "deep")] + "/"
    assert web.categories([home]) == ([home], [], [home + "a/" * web.trap_budget])
    soft = int(np.flatnonzero(web.soft404)[0])
    missing = web.origins[soft] + "/no/such/page"
    assert {missing, web.origins[soft] + "/"} <= set(web.must_fetch([missing]))
    denied = next(u for u in web.must_not_fetch() if not web.allowed[web.resource(u)])
    assert web.categories([denied]) == ([], [], [denied])


def _small_pages() -> list[str]:
    return [f"p{i}.html" for i in range(1, adv.SMALL_SITE)]


def test_polite_truth_kinds():
    web = Web(WebConfig(pages=300, hosts=10))
    must, may, never = web.categories()
    assert must == web.truth() and may == []
    pointed = set()
    for url in must:
        r = web.resource(url)
        if web.kind[r] == PAGE:
            pointed.update(web.links(r).tolist())
        elif web.kind[r] == REDIRECT:
            pointed.add(int(web.redirect_target[r]))
    assert never == sorted(web.url(r) for r in pointed if not web.allowed[r])
    assert never and web.trap_limit(0) == (web.host == 0).sum()


# ------------------------------------------------------------------------ the hosts live


def test_dead_reset_hosts(adv_web, served):
    dead, reset = host_of(adv_web, "dead"), host_of(adv_web, "reset")
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection((host_address(dead), adv_web.config.port), timeout=5)
    assert get(adv_web, reset, "/robots.txt")[0] == 404
    for page in ["/", *("/" + p for p in _small_pages())]:
        with pytest.raises((ConnectionError, http.client.HTTPException)):
            get(adv_web, reset, page)
    curl = pycurl.Curl()
    curl.setopt(pycurl.WRITEFUNCTION, lambda data: None)
    for page in ("/", "/p1.html", "/p2.html"):
        curl.setopt(pycurl.URL, adv_web.origins[reset] + page)
        with pytest.raises(pycurl.error):
            curl.perform()
    curl.close()


def test_throttle_and_flaky_hosts(adv_web, served):
    t = host_of(adv_web, "throttle")
    assert get(adv_web, t, "/")[0] == 200
    assert get(adv_web, t, "/robots.txt")[0] == 404  # robots.txt is never throttled
    status, headers, _ = get(adv_web, t, "/p1.html")
    assert status == 429 and headers["Retry-After"] == str(adv.RETRY_AFTER)
    time.sleep(adv.THROTTLE_INTERVAL + 0.05)
    assert get(adv_web, t, "/p1.html")[0] == 200
    f = host_of(adv_web, "flaky")
    answers = [get(adv_web, f, "/") for _ in range(adv.FLAKY_PERIOD + 2)]
    assert [a[0] for a in answers] == [200, 503, 500, 502, 200, 200, 200, 200, 200, 503]
    assert answers[1][1]["Retry-After"] == str(adv.RETRY_AFTER)


def test_slow_host(adv_web, served):
    slow = host_of(adv_web, "slow")
    t0 = time.monotonic()
    status, _, body = get(adv_web, slow, "/p1.html")
    took = time.monotonic() - t0  # timing: a lower bound, which load cannot break
    assert status == 200 and took >= adv.SLOW_DELAY + 0.8 * len(body) / adv.SLOW_RATE


def test_soft404(adv_web, served):
    soft = int(np.flatnonzero(adv_web.soft404)[0])
    plain = int(np.flatnonzero(~adv_web.soft404[: adv_web.config.hosts])[0])
    status, _, body = get(adv_web, soft, "/no/such/page.html")
    assert status == 200 and b"not find" in body and b'href="/"' in body
    dead = np.flatnonzero((adv_web.kind == DEAD) & (adv_web.host == soft))
    for r in dead.tolist():
        assert get(adv_web, soft, adv_web.path[r])[0] == 200
    assert get(adv_web, plain, "/no/such/page.html")[0] == 404


def test_mirror(adv_web, served):
    m = host_of(adv_web, "mirror")
    rows = np.flatnonzero(adv_web.host == m).tolist()
    orig = int(adv_web.host[adv_web.copy_of[rows[0]]])
    assert get(adv_web, m, "/robots.txt")[::2] == get(adv_web, orig, "/robots.txt")[::2]
    for r in rows:
        copy = get(adv_web, m, adv_web.path[r])
        orig = int(adv_web.copy_of[r]) if adv_web.copy_of[r] >= 0 else -1
        if orig >= 0:
            original = get(adv_web, int(adv_web.host[orig]), adv_web.path[orig])
            assert copy[0] == original[0] == 200 and copy[2] == original[2]
            assert copy[1]["ETag"] == original[1]["ETag"]
            # the links the truth follows are those of the served bytes, resolved on the mirror
            doc = lxml.html.fromstring(copy[2])
            base = adv_web.url(r)
            for href in doc.xpath("//head/base/@href")[:1]:
                base = ada_url.join_url(base, href)
            found = {canonical(ada_url.join_url(base, h)) for h in doc.xpath("//a/@href")}
            assert found == {adv_web.url(t) for t in adv_web.extra[r]}
        else:
            assert copy[0] in (301, 302, 404)


def test_redirects_host(adv_web, served):
    h = host_of(adv_web, "redirects")
    curl = pycurl.Curl()
    curl.setopt(pycurl.WRITEFUNCTION, lambda data: None)
    reds = np.flatnonzero((adv_web.kind == REDIRECT) & (adv_web.host == h)).tolist()
    assert len(reds) == 3 + adv.CHAIN_HOPS
    for r in reds:
        curl.setopt(pycurl.URL, adv_web.url(r))
        curl.perform()
        assert curl.getinfo(pycurl.RESPONSE_CODE) == adv_web.redirect(r)[0]
        assert curl.getinfo(pycurl.REDIRECT_URL) == adv_web.url(adv_web.redirect_target[r])
    curl.close()
    a = adv_web.lookup(h, "/loop/a")
    assert adv_web.redirect_target[adv_web.redirect_target[a]] == a
    assert adv_web.redirect_target[adv_web.lookup(h, "/self")] == adv_web.lookup(h, "/self")


def test_junk_host(adv_web, served):
    j = host_of(adv_web, "junk")
    expect = {
        "/img/logo.png": ("image/png", b"\x89PNG\r\n\x1a\n"),
        "/img/dot.gif": ("image/gif", b"GIF89a"),
        "/docs/report.pdf": ("application/pdf", b"%PDF-"),
        "/data/archive.bin": ("application/octet-stream", b""),
        "/charset.html": ("text/html; charset=x-no-such-charset", b"<!DOCTYPE"),
    }
    for path, (ctype, start) in expect.items():
        status, headers, body = get(adv_web, j, path)
        assert status == 200 and headers["Content-Type"] == ctype and body.startswith(start)
    assert get(adv_web, j, "/empty.html")[2] == b""
    blob = get(adv_web, j, "/data/blob.html")
    assert blob[1]["Content-Type"].startswith("text/html") and len(blob[2]) == 16384
    assert get(adv_web, j, "/nested.html")[2].count(b"<div>") == adv.NESTING
    with pytest.raises(UnicodeDecodeError):
        get(adv_web, j, "/badutf8.html")[2].decode("utf-8")
    assert b"\0" in get(adv_web, j, "/utf16.html")[2]
    assert b"<a href" in get(adv_web, j, "/broken.html")[2]
    status, headers, body = get(adv_web, j, "/huge.html")
    assert len(body) == int(headers["Content-Length"]) == adv.HUGE_BYTES
    assert b'href="/behind/huge.html"' in body[:1000] and body.endswith(b"</html>\n")
    assert get(adv_web, j, "/huge.html", method="HEAD")[1]["Content-Length"] == str(adv.HUGE_BYTES)


def test_gzip_bomb(adv_web, served):
    j = host_of(adv_web, "junk")
    status, headers, body = get(adv_web, j, "/bomb.html")
    assert headers["Content-Encoding"] == "gzip" and len(body) == int(headers["Content-Length"])
    assert len(body) < 1.1 * adv.BOMB_BYTES / 1000  # about 1 MiB on the wire
    d = zlib.decompressobj(31)
    assert d.decompress(body, CAP + 1) == bytes(CAP + 1)  # inflates beyond any cap
    # libcurl (as the crawler sets it up) inflates and gives up at the cap, quickly
    got = [0]

    def write(data: bytes):
        got[0] += len(data)
        return 0 if got[0] > CAP else None

    curl = pycurl.Curl()
    curl.setopt(pycurl.URL, adv_web.origins[j] + "/bomb.html")
    curl.setopt(pycurl.ACCEPT_ENCODING, "")
    curl.setopt(pycurl.WRITEFUNCTION, write)
    with pytest.raises(pycurl.error) as err:
        curl.perform()
    assert err.value.args[0] == pycurl.E_WRITE_ERROR and got[0] > CAP
    curl.close()
    # a smaller bomb of the same making is a valid gzip member
    count, head, block, tail = adv.gzip_bomb(8 << 20)
    assert zlib.decompress(head + block * count + tail, 31) == bytes(8 << 20)


def test_bomb_crc():
    crc, zeros = 0, bytes(1 << 20)
    for _ in range(adv.BOMB_BYTES >> 20):
        crc = zlib.crc32(zeros, crc)
    assert crc == adv._BOMB_CRC


def test_spider_traps(adv_web, served):
    cal, ses, deep = (host_of(adv_web, t) for t in TRAPS)
    body = get(adv_web, cal, "/")[2]
    assert b'href="/cal/2024/05/"' in body
    body = get(adv_web, cal, "/cal/2024/12/")[2]
    assert b'href="/cal/2024/11/"' in body and b'href="/cal/2025/01/"' in body
    assert b"/cal/0000/12/" not in get(adv_web, cal, "/cal/0001/01/")[2]
    for bad in ("/cal/2024/13/", "/cal/24/05/", "/cal/2024/05", "/x"):
        assert get(adv_web, cal, bad)[0] == 404
    a = get(adv_web, ses, "/item-3.html?sid=abc")[2]
    b = get(adv_web, ses, "/item-3.html?sid=abd")[2]
    assert a.count(b"?sid=") == adv.SESSION_ITEMS + 1 and a != b
    assert a == get(adv_web, ses, "/item-3.html?sid=abc")[2]
    assert get(adv_web, ses, "/other.html")[0] == 404
    body = get(adv_web, deep, "/a/a/")[2]
    assert b'href="a/"' in body and b'href="../"' in body
    assert get(adv_web, deep, "/b/")[0] == 404


# -------------------------------------------------- an independent crawler, with budget


def crawl(web: Web, budget: int) -> dict[str, object]:
    """Breadth-first crawl from the default seeds keeping the documented rules: robots.txt
    (2xx parsed, 4xx allow all, else disallow all), 3xx Locations followed up to 5 hops,
    each URL once, at most ``budget`` URLs per host, bodies capped at 2 MiB. Returns
    {url: status or error name}."""
    robots: dict[str, protego.Protego] = {}
    per_host: collections.Counter = collections.Counter()
    fetched: dict[str, object] = {}
    seen = set(web.seeds())
    queue = deque((u, 0) for u in web.seeds())

    def fetch(u: ada_url.URL) -> tuple[object, dict, bytes]:
        conn = http.client.HTTPConnection(u.hostname, int(u.port), timeout=10)
        try:
            conn.request("GET", u.pathname + u.search)
            resp = conn.getresponse()
            body = resp.read(CAP + 1)
            if resp.getheader("Content-Encoding") == "gzip":
                body = zlib.decompressobj(31).decompress(body, CAP + 1)
            if len(body) > CAP:
                return "too_large", {}, b""
            return resp.status, dict(resp.getheaders()), body
        except (OSError, http.client.HTTPException) as e:
            return type(e).__name__, {}, b""
        finally:
            conn.close()

    while queue:
        url, hops = queue.popleft()
        u = ada_url.URL(url)
        if u.host not in robots:
            status, _, body = fetch(ada_url.URL(u.origin + "/robots.txt"))
            text = body.decode() if status == 200 else ""
            if not isinstance(status, int) or status >= 500:
                text = "User-agent: *\nDisallow: /\n"
            robots[u.host] = protego.Protego.parse(text)
        if not robots[u.host].can_fetch(url, AGENT) or per_host[u.host] >= budget:
            continue
        per_host[u.host] += 1
        status, headers, body = fetch(u)
        fetched[url] = status
        found: list[tuple[str, int]] = []
        if isinstance(status, int) and 300 <= status < 400:
            found = [(canonical(ada_url.join_url(url, headers["Location"])), hops + 1)]
        elif status == 200 and headers.get("Content-Type", "").startswith("text/html") and body:
            with contextlib.suppress(lxml.etree.ParserError, ValueError):
                found = [(link, 0) for link in _links(body, url)]
        for link, h in found:
            if link.startswith("http://") and h <= 5 and link not in seen:
                seen.add(link)
                queue.append((link, h))
    return fetched


def _links(body: bytes, url: str) -> list[str]:
    doc = lxml.html.fromstring(body)
    base = url
    for href in doc.xpath("//head/base/@href")[:1]:
        base = ada_url.join_url(url, href)
    return [canonical(ada_url.join_url(base, href)) for href in doc.xpath("//a/@href")]


def test_crawl_meets_the_truth():
    """The acceptance test in small: ends, fetches every must URL, none of the must-not,
    nothing outside the lists but trap pages, and no more than trap_limit per trap."""
    web = _with_port(WebConfig.adversarial(**SIZE, latency_ms=0.0, bandwidth_kb=0.0, slow_hosts=0))
    with running(web):
        fetched = crawl(web, web.trap_budget)
    must, may, never = web.categories()
    assert set(must) <= set(fetched)
    assert not set(never) & set(fetched)
    traps = tuple(o + "/" for o in web.trap_hosts())
    assert {u for u in fetched if not u.startswith(traps)} <= set(must) | set(may)
    for origin in web.trap_hosts():
        taken = sum(u.startswith(origin + "/") for u in fetched)
        assert taken == web.trap_limit(origin)  # this crawler uses the whole budget
    statuses = collections.Counter(v for k, v in fetched.items() if k in may)
    assert {429, 503, "too_large"} <= set(statuses) and statuses.keys() & {
        "ConnectionResetError",
        "RemoteDisconnected",
        "IncompleteRead",
    }


# ------------------------------------------------------------------------------ epochs


EPOCHS = dict(pages=120, hosts=4, change=0.3, expires=0.2)


def test_epochs_model():
    w0, w2, w3 = (Web(WebConfig(**EPOCHS, epoch=e)) for e in (0, 2, 3))
    assert (w0.version == 0).all() and (w3.version >= w2.version).all()
    changed = w2.version > 0
    assert changed.any() and (~changed).any() and w2.expiring.any()
    assert not (changed & w2.expiring).any() and np.array_equal(w0.expiring, w2.expiring)
    for p in range(w0.n_pages):
        same = not changed[p]
        assert (w2.html(p) == w0.html(p)) == same and (w2.etag(p) == w0.etag(p)) == same
        assert (w2.last_modified(p) == w0.last_modified(p)) == same
        assert w2.last_modified(p) >= w0.last_modified(p)
        assert len(w2.html(p)) - w2.page_size[p] < 64  # same size class
        if not same:
            found = {canonical(u) for u in _links(w2.html(p), w2.url(p))} - {w2.url(p)}
            assert found == {w2.url(t) for t in w2.links(p).tolist()} - {w2.url(p)}
    assert w2.truth() == w0.truth()
    # epoch 0 is today's web: the epoch options leave it alone
    today = Web(WebConfig(pages=120, hosts=4))
    assert all(today.html(p) == w0.html(p) and today.etag(p) == w0.etag(p) for p in range(120))


def test_epochs_live():
    w0 = Web(WebConfig(**EPOCHS))
    w2 = _with_port(WebConfig(**EPOCHS, epoch=2))
    w0 = Web(dataclasses.replace(w0.config, port=w2.config.port))
    now = time.time()
    with running(w2):
        for p in range(w2.n_pages):
            h = int(w2.host[p])
            status, headers, body = get(w2, h, w2.path[p], {"If-None-Match": w0.etag(p)})
            changed = bool(w2.version[p])
            assert status == (200 if changed else 304)
            assert headers["ETag"] == w2.etag(p) and (headers["ETag"] != w0.etag(p)) == changed
            assert headers["Last-Modified"] == http_date(w2.last_modified(p))
            assert ("Expires" in headers) == bool(w2.expiring[p])
            if "Expires" in headers:
                assert parsedate_to_datetime(headers["Expires"]).timestamp() > now + 300 * 86400
            if p % 5:
                continue
            since = {"If-Modified-Since": http_date(w0.last_modified(p))}
            assert get(w2, h, w2.path[p], since)[0] == (200 if changed else 304)
            weak = {"If-None-Match": f'"other", W/{w2.etag(p)}'}
            assert get(w2, h, w2.path[p], weak)[:3:2] == (304, b"")
            assert get(w2, h, w2.path[p], {"If-None-Match": '"other"', **since})[0] == 200


# ------------------------------------------------------------------------------ timing


def test_timing_model():
    web = Web(WebConfig(pages=400, hosts=200, latency_ms=80, latency_sigma=0.8, bandwidth_kb=1024))
    d, rate = web.host_delay, web.host_rate
    assert d.min() >= 0.02 and d.max() <= 0.48 and 0.06 < np.median(d) < 0.1
    assert d.max() / d.min() > 4 and rate.max() / rate.min() > 4
    assert rate.min() >= 1024 * 1024 / 10 and rate.max() <= 1024 * 1024 * 10
    delays = [web.response_delay(7, f"/p{i}") for i in range(50)]
    assert 0.75 * d[7] <= min(delays) < max(delays) <= 1.25 * d[7]
    fixed = Web(WebConfig(pages=20, hosts=5, latency_ms=100))
    assert (fixed.host_delay == 0.1).all() and not fixed.host_rate.any()
    assert fixed.response_delay(3, "/x") == 0.1
    same = Web(WebConfig(pages=400, hosts=200, latency_ms=80, latency_sigma=0.8))
    assert same.host_delay[7] == d[7]  # seeded per host


def test_timing_live():
    web = _with_port(WebConfig(pages=20, hosts=2, latency_ms=100, bandwidth_kb=64))
    with running(web):
        t0 = time.monotonic()
        status, _, body = get(web, 1, web.path[web.site_start[1]])
        took = time.monotonic() - t0  # timing: a lower bound, which load cannot break
    assert status == 200 and took >= 0.1 + 0.8 * len(body) / (64 * 1024)


# --------------------------------------------------------------------------------- CLI


def _parse(argv: list[str], command: str | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_arguments(parser, command)
    return parser.parse_args(argv)


def test_cli_options(capsys, tmp_path):
    base = ["--pages", "150", "--hosts", "8"]
    assert config_from_args(_parse([*base, "--adversarial"])) == WebConfig.adversarial(**SIZE)
    cfg = config_from_args(
        _parse([*base, "--adversarial", "--dead-hosts", "0", "--no-bomb", "--traps", "deep"])
    )
    assert cfg == WebConfig.adversarial(**SIZE, dead_hosts=0, bomb=False, traps="deep")
    cfg = config_from_args(_parse([*base, "--junk", "--epoch", "3", "--latency-ms", "100"]))
    assert cfg == WebConfig(**SIZE, junk=True, epoch=3, latency_ms=100.0)
    for config in (cfg, WebConfig.adversarial(**SIZE, trap_budget=300), WebConfig()):
        assert config_from_args(_parse(config_argv(config))) == config
    web = Web(WebConfig.adversarial(**SIZE))
    for kind, want in (
        ("must_fetch", web.must_fetch()),
        ("must_not", web.must_not_fetch()),
        ("may_give_up", web.may_give_up()),
        ("trap_limit", [f"{o}\t{web.trap_budget}" for o in web.trap_hosts()]),
    ):
        assert cmd_truth(_parse([*base, "--adversarial", "--kind", kind], "truth")) == 0
        assert capsys.readouterr().out.splitlines() == want
    with pytest.raises(SystemExit):
        _parse(["--kind", "everything"], "truth")
    with pytest.raises(ValueError):
        config_from_args(_parse(["--traps", "maze"]))


def test_near_mirror_pages_are_their_originals_with_one_small_edit(capsys):
    web = Web(WebConfig(**SIZE, mirrors=1, near_mirrors=1))
    near = [r for r in np.flatnonzero(web.copy_of >= 0).tolist()
            if web.role[web.host[r]] == "nearmirror"]
    assert len(near) >= 3
    for r in near:
        original, copy = web.html(int(web.copy_of[r])), web.copy_html(r)
        head, line, rest = copy.partition(b"<main>\n")
        edit, _, rest = rest.partition(b"\n")
        assert head + line + rest == original
        assert edit.startswith(b"<p>") and edit.endswith(b".</p>") and len(edit) < 250
    assert [kind for _, _, kind in web.copies()].count("near") == len(near)
    assert cmd_truth(_parse([*(f"--{k}={v}" for k, v in SIZE.items()), "--mirrors", "1",
                             "--near-mirrors", "1", "--kind", "copies"], "truth")) == 0
    assert capsys.readouterr().out.splitlines() == ["\t".join(c) for c in web.copies()]


def test_serve_adversarial_process(tmp_path):
    cfg = WebConfig.adversarial(pages=40, hosts=3, latency_ms=0.0, slow_hosts=0, trap_budget=50)
    web = _with_port(cfg)
    log = tmp_path / "requests.tsv"
    with running_process(web, log=log) as proc:
        dead = host_of(web, "dead")
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection((host_address(dead), web.config.port), timeout=5)
        assert get(web, host_of(web, "deep"), "/a/a/a/")[0] == 200
        assert b"127.1.0.4" in get(web, 0, "/")[2]  # the footer links the adversarial hosts
        with pytest.raises((ConnectionError, http.client.HTTPException)):
            get(web, host_of(web, "reset"), "/p1.html")
    assert proc.returncode == 0
    rows = sorted(line.split("\t")[4::-4] for line in log.read_text().splitlines())
    reset = web.netlocs[host_of(web, "reset")]
    deep = web.netlocs[host_of(web, "deep")]
    assert rows == sorted([["0", reset], ["200", web.netlocs[0]], ["200", deep]])
