"""A deterministic synthetic web: sites, pages, links, robots.txt, dead links and redirects.

Everything follows from a :class:`~.config.WebConfig` and its seed, so the server and the
ground truth (:meth:`Web.truth`) agree to the byte; the port only appears in URLs. The web
is a table of *resources*, each a (host, path) with a kind (:mod:`.config`): ``PAGE`` (ids
``0 .. pages-1``, HTML rendered on demand by :meth:`Web.html`, links in mixed styles that
all resolve to the target's canonical URL), ``DEAD`` (a 404), ``REDIRECT`` (301/302 chains
of at most two hops to a page; a *moved* page is linked only through its old URL) and
``SPECIAL`` (the adversarial web). Host ``i`` is :func:`host_address` ``(i)``; each has a
robots.txt of some kind (missing, empty, Disallow prefixes, a ``bspcrawl`` group). Every
path is canonical (WHATWG, no fragment), so a request target equals the stored path.

**Epochs**: the same web at a later crawl. Links never change; between two epochs a page
changes its text and validators with chance ``change``, except ``expires`` pages, sent with
a far Expires, which never change.

**The adversarial web** (:meth:`WebConfig.adversarial`; :mod:`.adversarial` adds it):
the truth is then three disjoint lists, :meth:`Web.must_fetch`, :meth:`Web.may_give_up`
and :meth:`Web.must_not_fetch`, plus :meth:`Web.trap_limit` per host. A crawl passes when it
ends on its own, fetches every must-fetch URL, none of the must-not ones, and at most
``trap_limit(host)`` URLs of any host (the crawler's per-host budget).
"""

from __future__ import annotations

import dataclasses
import functools
import zlib
from collections import deque
from collections.abc import Iterable
from typing import NamedTuple

import ada_url
import numpy as np

from bspcrawl.testweb import adversarial
from bspcrawl.testweb.config import ADVERSARIAL as ADVERSARIAL
from bspcrawl.testweb.config import DEAD, PAGE, REDIRECT, TRAPS, UNRELIABLE, WebConfig
from bspcrawl.testweb.config import MAX_HOSTS as MAX_HOSTS
from bspcrawl.testweb.config import ROLES as ROLES
from bspcrawl.testweb.config import SPECIAL as SPECIAL

# The names imported "as" themselves are re-exported for callers.

MAX_REDIRECTS = 5
"""Redirect hops a crawl follows from one link (the crawler's ``fetch_max_redirects``)."""

AGENT = "bspcrawl"
"""Product token whose robots.txt rules :meth:`Web.truth` obeys."""

_VOCAB_SIZE = 3000
_RENDER_SALT = 0x7E57
_LINK_BYTES = 130  # upper bound of one rendered <a href="...">word</a> beyond its word
_POPULARITY = 2.5  # within a site, link to index floor(n * u**_POPULARITY): early pages win
_BASE_FRACTION = 0.06  # pages with a <base href> element
_SELF_LINKS = 3  # at most this many self links (#top, "", ...) per page
_CORPUS_WORDS = 1 << 20  # words of the text that page bodies are slices of
_CORPUS_SPARE = 32768  # more words than any page needs: slices start before the last ones
_EPOCH_SALT = 0xE90C
_TIMING_SALT = 0x71E
_DAY = 86400
EPOCH0_TIME = 1704067200
"""Unix time of epoch 0, 2024-01-01 00:00 UTC: epoch ``e`` is ``e`` days later; pages were
last modified up to 1000 days before it."""
_NOT_CONTENT = ("epoch", "change", "expires", "latency_ms", "latency_sigma", "bandwidth_kb",
                "trap_budget")  # config fields that leave page bytes alone


class Truth(NamedTuple):
    """What a correct crawl from some seeds does, as sorted canonical URLs (disjoint)."""

    must: list[str]
    may: list[str]
    must_not: list[str]


def host_address(i: int) -> str:
    """The loopback address of host ``i``: ``127.1.{i // 250}.{i % 250 + 1}``."""
    return f"127.1.{i // 250}.{i % 250 + 1}"


def host_index(address: str) -> int | None:
    """Inverse of :func:`host_address` (``None`` for any other address)."""
    parts = address.split(".")
    if len(parts) != 4 or parts[0] != "127" or parts[1] != "1":
        return None
    try:
        a, b = int(parts[2]), int(parts[3])
    except ValueError:
        return None
    if not (0 <= a < 256 and 1 <= b <= 250) or address != host_address(a * 250 + b - 1):
        return None
    return a * 250 + b - 1


# ---------------------------------------------------------------- vocabulary and paths

_ONSETS = [*"bcdfghklmnprstvwz", "br", "ch", "cl", "dr", "fl", "gr", "pl", "pr", "sh", "sk",
           "st", "th", "tr"]
_VOWELS = [*"aeiouaeio", "ai", "ea", "io", "ou"]
_CODAS = ["", "", "", "", "n", "r", "s", "t", "l", "m", "nd", "st", "ck"]


def _vocabulary(rng: np.random.Generator, size: int) -> list[str]:
    """``size`` distinct pseudo-words, shorter ones first (rank 0 is the most frequent)."""
    words: list[str] = []
    seen: set[str] = set()
    while len(words) < size:
        m = 2 * size
        nsyl = rng.choice([1, 2, 3, 4], p=[0.25, 0.4, 0.25, 0.1], size=m).tolist()
        ons = rng.integers(0, len(_ONSETS), size=(m, 4)).tolist()
        vows = rng.integers(0, len(_VOWELS), size=(m, 4)).tolist()
        codas = rng.integers(0, len(_CODAS), size=m).tolist()
        for i in range(m):
            w = "".join(_ONSETS[ons[i][j]] + _VOWELS[vows[i][j]] for j in range(nsyl[i]))
            w += _CODAS[codas[i]]
            if w not in seen and len(words) < size:
                seen.add(w)
                words.append(w)
    key = np.array([len(w) for w in words]) + 4 * rng.random(size)
    return [words[i] for i in np.argsort(key, kind="stable")]


def _split_query(path: str) -> tuple[str, str]:
    i = path.find("?")
    return (path, "") if i < 0 else (path[:i], path[i:])


def _directory(path: str) -> str:
    p = _split_query(path)[0]
    return p[: p.rfind("/") + 1]


def relative_path(base: str, target: str) -> str:
    """A path-relative reference from base path ``base`` to path ``target`` (same origin).

    >>> relative_path("/a/b/c/page1.html", "/a/x/page9.html")
    '../../x/page9.html'
    """
    tpath, query = _split_query(target)
    bdirs = _directory(base).split("/")[1:-1]
    tsegs = tpath.split("/")[1:]
    tdirs = tsegs[:-1]
    common = 0
    while common < min(len(bdirs), len(tdirs)) and bdirs[common] == tdirs[common]:
        common += 1
    rel = "../" * (len(bdirs) - common) + "/".join(tdirs[common:] + tsegs[-1:])
    return (rel or "./") + query


class _Draws:
    """Pre-drawn random integers handed out one at a time (fast Python-side randomness)."""

    def __init__(self, rng: np.random.Generator, n: int = 4096) -> None:
        self._rng, self._n = rng, n
        self._buf: list[int] = []

    def __call__(self, k: int) -> int:
        """A random integer in ``0 .. k-1``."""
        if not self._buf:
            self._buf = self._rng.integers(0, 1 << 40, size=self._n).tolist()
        return self._buf.pop() % k


def _site_paths(draw: _Draws, words: list[str], n: int, private: bool) -> list[str]:
    """``n`` distinct realistic paths of one site; the first is the home page ``/``."""
    w = words[50:1500]  # mid-frequency words make good names

    def word() -> str:
        return w[draw(len(w))]

    topics = [word() for _ in range(4)]
    levels = [[word() for _ in range(k)] for k in (2, 2, 3)]
    years = [2019 + draw(6) for _ in range(2)]
    kinds = ["top", "docs", "docs", "blog", "blog", "deep", "deep", "deep", "wiki", "list",
             "search", "index"] + ["private", "private"] * private
    kinds = [kinds[draw(len(kinds))] for _ in range(6)] + ["index", "deep"]
    paths, seen = ["/"], {"/"}
    misses = 0
    while len(paths) < n:
        kind = "many" if misses > 20 else kinds[draw(len(kinds))]
        if kind == "top":
            p = f"/{word()}.html"
        elif kind == "docs":
            p = f"/docs/{word()}.html" if draw(3) == 0 else f"/docs/{topics[draw(4)]}/{word()}.html"
        elif kind == "blog":
            p = f"/blog/{years[draw(2)]}/post-{1 + draw(99)}.html"
        elif kind == "deep":
            depth = 1 + draw(3)
            dirs = "/".join(levels[i][draw(len(levels[i]))] for i in range(depth))
            p = f"/{dirs}/page{1 + draw(50)}.html"
        elif kind == "wiki":
            p = f"/wiki/{word().capitalize()}_{word().capitalize()}"
        elif kind == "list":
            p = f"/list?page={2 + draw(40)}"
        elif kind == "search":
            p = f"/search?q={topics[draw(4)]}&page={1 + draw(9)}"
        elif kind == "private":
            sub = f"{topics[draw(4)]}/" if draw(2) else ""
            p = f"/private/{sub}{word()}.html"
        elif kind == "index":  # a directory index page such as /docs/ or /blog/2024/
            p = _directory(paths[draw(len(paths))])
        else:  # the site is so large that the names above are used up
            p = f"/{levels[0][0]}/{len(paths)}.html"
        misses += 1
        if p not in seen:
            seen.add(p)
            paths.append(p)
            misses = 0
    return paths


def _robots_prefixes(paths: list[str]) -> list[str]:
    """Disallow candidates of a site: directories and query-page prefixes that cover some
    of its pages, but never the home page and never more than a third of the site."""
    counts: dict[str, int] = {}
    for p in paths[1:]:
        path = _split_query(p)[0]
        segs = path.split("/")[1:-1]
        cands = {"/" + "/".join(segs[:i]) + "/" for i in range(1, min(len(segs), 2) + 1)}
        if p != path:
            cands.add(path)  # "/search" disallows "/search?q=..."
        for c in cands:
            counts[c] = counts.get(c, 0) + 1
    limit = max(1, len(paths) // 3)
    return sorted(c for c, k in counts.items() if k <= limit)


# ---------------------------------------------------------------------------- the web


class Web:
    """A synthetic web built from a :class:`WebConfig`.

    Arrays indexed by resource id: :attr:`host`, :attr:`path`, :attr:`kind`, :attr:`allowed`
    (robots.txt lets ``bspcrawl`` fetch it), :attr:`redirect_target`; links in CSR form
    (:meth:`links`) plus :attr:`extra` (links of SPECIAL resources). Rendering: :meth:`html`,
    :meth:`robots_txt`, :meth:`reply`; validators: :meth:`etag`, :meth:`last_modified`;
    truth: :meth:`truth`, :meth:`categories`, :meth:`trap_limit`, :meth:`reached`.
    """

    def __init__(self, config: WebConfig | None = None, cache: int = 256) -> None:
        self.config = cfg = config or WebConfig()
        rng = np.random.default_rng(cfg.seed)
        draw = _Draws(rng)
        H, N = cfg.hosts, cfg.pages
        self.n_hosts, self.n_pages = cfg.total_hosts, N
        suffix = "" if cfg.port == 80 else f":{cfg.port}"
        self.netlocs = [host_address(i) + suffix for i in range(self.n_hosts)]
        self.origins = ["http://" + n for n in self.netlocs]

        self.words = _vocabulary(rng, _VOCAB_SIZE)
        self._warr = np.array(self.words, dtype=object)
        # Zipf sampling table: word i fills about p_i * 2**16 slots (at least one).
        prob = 1.0 / (np.arange(1, _VOCAB_SIZE + 1) + 2.7) ** 1.07
        slots = np.maximum(1, np.round(prob / prob.sum() * 65536)).astype(np.int64)
        self._zipf = np.repeat(np.arange(_VOCAB_SIZE), slots)
        self._wlen = np.array([len(w) + 1 for w in self.words], dtype=np.int64)
        self._mean_word = float((self._wlen * slots).sum() / slots.sum())

        # Sites: heavy-tailed sizes, at least the home page each; pages grouped by host.
        weight = 1.0 / rng.permutation(np.arange(1, H + 1)) ** cfg.site_skew
        sizes = 1 + rng.multinomial(N - H, weight / weight.sum())
        self.site_start = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        host = np.repeat(np.arange(H), sizes)
        paths: list[str] = []
        private = (rng.random(H) < 0.4).tolist()
        for h in range(H):
            paths += _site_paths(draw, self.words, int(sizes[h]), private[h])

        # robots.txt per host, and the prefixes that bind AGENT.
        self._robots: list[str | None] = []
        self.disallow: list[tuple[str, ...]] = []
        for h in range(H):
            a, b = self.site_start[h], self.site_start[h + 1]
            text, rules = self._make_robots(draw, h, paths[a:b])
            self._robots.append(text)
            self.disallow.append(rules)

        # Page sizes, and out-degrees (power law, capped so the links fit in the page).
        lo, hi = cfg.min_kb * 1024 + 256, cfg.max_kb * 1024 - 256
        self.page_size = (lo + (hi - lo) * rng.beta(1.2, 3.5, N)).astype(np.int64)
        deg = 1 + np.floor(24.0 * ((1.0 - rng.random(N)) ** (-1 / 1.7) - 1.0))
        cap = np.maximum(1, (self.page_size - 2048) // _LINK_BYTES)
        deg = np.minimum(np.minimum(deg, cfg.max_links), cap).astype(np.int64)

        # Unreachable and moved pages (never home pages).
        homes = self.site_start[:-1]
        others = np.setdiff1d(np.arange(N), homes)
        others = others[rng.permutation(others.size)]
        n_unreach = min(round(cfg.unreachable * N), others.size)
        self.unreachable = np.sort(others[:n_unreach])
        pool = others[n_unreach:]
        n_moved = min(round(cfg.redirects * N), pool.size)
        denied = [p for p in pool.tolist() if not self._allowed_path(int(host[p]), paths[p])]
        first = denied[:1]  # one moved page whose redirect target robots.txt disallows
        rest = [p for p in pool.tolist() if p not in first]
        moved = (first + rest)[:n_moved]
        self.moved = np.sort(np.array(moved, dtype=np.int64))

        # Resource table: pages, then dead paths, then redirects.
        kinds = [PAGE] * N
        hosts = host.tolist()
        index = [dict() for _ in range(H)]
        for r, (h, p) in enumerate(zip(hosts, paths, strict=True)):
            index[h][p] = r

        def add(h: int, p: str, kind: int) -> int:
            index[h][p] = len(paths)
            hosts.append(h)
            paths.append(p)
            kinds.append(kind)
            return len(paths) - 1

        def fresh(h: int, template: str, k: int = 1000) -> str:
            """A path of host h not used yet: template.format(a random number)."""
            tries = 0
            while True:
                p = template.format(draw(k) + k * (tries // 20))  # widen if crowded
                if p not in index[h]:
                    return p
                tries += 1

        n_dead = max(1, round(cfg.dead_links * N)) if cfg.dead_links > 0 else 0
        dead = []
        for _ in range(n_dead):
            src = draw(N)
            h = hosts[src]
            w = self.words[100 + draw(1000)]
            style = draw(3)
            if style == 0:
                p = fresh(h, _directory(paths[src]) + w + "-{}.html")
            elif style == 1:
                p = fresh(h, f"/gone/{w}/{{}}.html")
            else:
                p = fresh(h, "/list?page=1{:03d}")
            dead.append(add(h, p, DEAD))

        self._redirects: dict[int, tuple[int, str]] = {}
        target_of: dict[int, int] = {}
        head = np.arange(N)
        for i, m in enumerate(moved):
            hm, pm = hosts[m], paths[m]
            chain = [m]
            for hop in range(1 + (i % 4 == 1)):  # every fourth moved page: two hops
                h = hm if (i % 3 != 2 or H == 1) else (hm + 1 + draw(H - 1)) % H
                if hop == 0:
                    p = fresh(h, "/old/{}" + _split_query(pm)[0], 100)
                else:
                    p = fresh(h, f"/moved/{self.words[100 + draw(1000)]}-{{}}.html", 10)
                src = add(h, p, REDIRECT)
                dst = chain[-1]
                status = 301 if (i + hop) % 2 == 0 else 302
                self._redirects[src] = (status, self._location(draw, h, p, dst, hosts, paths))
                target_of[src] = dst
                chain.append(src)
            head[m] = chain[-1]

        self.host = np.array(hosts, dtype=np.int64)
        self.path = paths
        self.kind = np.array(kinds, dtype=np.int8)
        self.redirect_target = np.full(len(paths), -1, dtype=np.int64)
        for s, t in target_of.items():
            self.redirect_target[s] = t
        self._index = index
        self.allowed = np.array(
            [self._allowed_path(h, p) for h, p in zip(hosts, paths, strict=True)], dtype=bool
        )

        # Links: same host mostly, biased to popular (early) pages; first link goes home.
        self.link_ptr = np.concatenate([[0], np.cumsum(deg)]).astype(np.int64)
        E = int(self.link_ptr[-1])
        src = np.repeat(np.arange(N), deg)
        u = rng.random((E, 3))
        lh = host[src].copy()
        cross = u[:, 0] < cfg.cross_host
        site_w = sizes**0.8 / (sizes**0.8).sum()
        lh[cross] = rng.choice(H, size=int(cross.sum()), p=site_w)
        linkable = np.ones(N, dtype=bool)
        linkable[self.unreachable] = False
        flat = np.flatnonzero(linkable)
        count = np.bincount(host[flat], minlength=H)
        offset = np.concatenate([[0], np.cumsum(count)[:-1]])
        k = np.minimum((count[lh] * u[:, 1] ** _POPULARITY).astype(np.int64), count[lh] - 1)
        dst = head[flat[offset[lh] + k]]
        if dead:
            dead_arr = np.array(dead, dtype=np.int64)
            dh = self.host[dead_arr]
            order = np.argsort(dh, kind="stable")
            dead_arr, dcount = dead_arr[order], np.bincount(dh, minlength=H)
            doff = np.concatenate([[0], np.cumsum(dcount)[:-1]])
            is_dead = u[:, 2] < cfg.dead_links
            sh = host[src[is_dead]]
            v = (u[is_dead, 2] / cfg.dead_links * 4096).astype(np.int64)
            pick = np.where(
                dcount[sh] > 0, doff[sh] + v % np.maximum(dcount[sh], 1), v % dead_arr.size
            )
            dst[is_dead] = dead_arr[pick]
        nonhome = np.ones(N, dtype=bool)
        nonhome[homes] = False
        dst[self.link_ptr[:-1][nonhome]] = homes[host[nonhome]]
        if first and deg[0] > 1:  # the first seed links to the redirect to a disallowed page
            dst[self.link_ptr[1] - 1] = head[first[0]]
        self.link_dst = dst.astype(np.int64)

        # The adversarial web (adversarial.py); the polite web has none of it.
        self.role = [""] * H
        self.soft404 = np.zeros(H, dtype=bool)
        self.extra: dict[int, list[int]] = {}
        self._special: dict[int, tuple] = {}
        self.copy_of = np.full(len(self.path), -1, dtype=np.int64)
        self.sure = np.ones(len(self.path), dtype=bool)
        self.sure_links = np.ones(len(self.path), dtype=bool)
        self._validators()
        if cfg.special_roles or cfg.soft404:
            adversarial.extend(self)
        self._timing()
        self._truths: dict[tuple, Truth] = {}
        size = np.bincount(self.host, minlength=self.n_hosts)
        need = max(int(size[h]) for h in range(self.n_hosts) if self.role[h] not in TRAPS)
        self.trap_budget = cfg.trap_budget or max(100, -(-need // 100) * 100)
        if cfg.trap_names and self.trap_budget < need:
            raise ValueError(
                f"trap_budget {cfg.trap_budget} is below {need}, the URLs of the largest site"
            )
        self._render_cached = functools.lru_cache(maxsize=cache)(self._render)

    # ------------------------------------------------------------------ construction

    def _make_robots(self, draw: _Draws, h: int, paths: list[str]) -> tuple[str | None, tuple]:
        """robots.txt text of host ``h`` (``None``: 404) and the prefixes binding AGENT."""
        cands = _robots_prefixes(paths)
        kind = ["missing", "empty", "open", "disallow", "disallow", "disallow", "agent"][draw(7)]
        if h < 6:  # make sure a small web still shows every kind
            kind = ["disallow", "agent", "missing", "empty", "disallow", "open"][h]
        private = [c for c in cands if c == "/private/"]
        if kind in ("disallow", "agent") and len(cands) < (2 if kind == "agent" else 1):
            kind = "open"
        if kind == "missing":
            return None, ()
        if kind == "empty":
            return "", ()
        lines = [f"# robots.txt for {self.netlocs[h]}"]
        if h == 0 or draw(3) == 0:  # a group we must ignore (on a seed host, at least)
            lines += ["User-agent: OtherBot", "Disallow: /", ""]
        ua = "User-agent" if draw(2) else "user-agent"
        rules: tuple[str, ...] = ()
        if kind == "open":
            lines += [f"{ua}: *", "Disallow:"]
        else:
            first = private[0] if private else cands[draw(len(cands))]
            others = [c for c in cands if not c.startswith(first)]  # not implied by first
            picks = [first] + ([others[draw(len(others))]] if others else [])
            if kind == "agent":  # the AGENT group wins: the '*' rule does not bind us
                lines += [f"{ua}: {AGENT}", f"Disallow: {first}", "", f"{ua}: *"]
                lines += [f"Disallow: {p}" for p in picks[1:]]
                rules = (first,)
            else:
                rules = tuple(picks[: 1 + draw(2)])
                lines += [f"{ua}: *"] + [f"Disallow: {p}" for p in rules]
        return "\n".join(lines) + "\n", rules

    def _validators(self) -> None:
        """Page versions at ``config.epoch``: each page not sent with an Expires changes
        at each epoch with chance ``config.change`` (draws per epoch, so epoch ``e`` and
        ``e + 1`` agree on the past); Last-Modified is the day of its last change."""
        cfg, n = self.config, self.n_pages
        rng = np.random.default_rng([cfg.seed, _EPOCH_SALT])
        self.expiring = rng.random(n) < cfg.expires
        self.modified = EPOCH0_TIME - rng.integers(1, 1000, n) * _DAY
        self.version = np.zeros(n, dtype=np.int64)
        for e in range(1, cfg.epoch + 1):
            draws = np.random.default_rng([cfg.seed, _EPOCH_SALT, e]).random(n)
            changed = (draws < cfg.change) & ~self.expiring
            self.version[changed] += 1
            self.modified[changed] = EPOCH0_TIME + e * _DAY
        content = {k: v for k, v in dataclasses.asdict(cfg).items() if k not in _NOT_CONTENT}
        self._tag = f"{zlib.crc32(repr(sorted(content.items())).encode()):08x}"

    def _timing(self) -> None:
        """Per-host delay (s) and bandwidth (B/s, 0: unlimited): lognormal around the
        medians, clipped to [median / 4, 6 x median] and [median / 10, 10 x median]."""
        cfg = self.config
        z = np.random.default_rng([cfg.seed, _TIMING_SALT]).standard_normal((self.n_hosts, 2))
        lat, rate = cfg.latency_ms / 1000, cfg.bandwidth_kb * 1024
        self.host_delay = np.clip(lat * np.exp(cfg.latency_sigma * z[:, 0]), lat / 4, lat * 6)
        self.host_rate = np.clip(rate * np.exp(cfg.latency_sigma * z[:, 1]), rate / 10, rate * 10)
        slow = np.array([role == "slow" for role in self.role])
        self.host_delay[slow] = adversarial.SLOW_DELAY
        self.host_rate[slow] = adversarial.SLOW_RATE

    def _allowed_path(self, h: int, path: str) -> bool:
        return not any(path.startswith(p) for p in self.disallow[h])

    def _location(self, draw: _Draws, h: int, p: str, dst: int, hosts, paths) -> str:
        """Location of redirect (h, p) to resource ``dst``: absolute, root- or path-relative."""
        th, tp = hosts[dst], paths[dst]
        style = draw(3) if th == h else 0
        if style == 0:
            return self.origins[th] + tp
        return tp if style == 1 else relative_path(p, tp)

    # ---------------------------------------------------------------------- queries

    def url(self, r: int) -> str:
        """Canonical URL of resource ``r``."""
        return self.origins[self.host[r]] + self.path[r]

    def lookup(self, host: int, target: str) -> int:
        """Resource id of path ``target`` (path and query) on ``host``, or -1 if none."""
        return self._index[host].get(target, -1)

    def resource(self, url: str) -> int:
        """Resource id of an absolute URL (any spelling that resolves to it), or -1."""
        try:
            u = ada_url.URL(url)
        except ValueError:
            return -1
        h = host_index(u.hostname)
        if h is None or h >= self.n_hosts or u.protocol != "http:" or u.host != self.netlocs[h]:
            return -1
        return self.lookup(h, u.pathname + u.search)

    def links(self, page: int) -> np.ndarray:
        """Targets (resource ids) of the links on ``page``, in page order, with repeats."""
        return self.link_dst[self.link_ptr[page] : self.link_ptr[page + 1]]

    def etag(self, page: int) -> str:
        """The quoted ETag of ``page``, the same in every epoch until the page changes."""
        return f'"{self._tag}-{page:x}-{self.version[page]}"'

    def last_modified(self, page: int) -> int:
        """Unix time of the last change of ``page`` (whole days; before epoch 0 at first)."""
        return int(self.modified[page])

    def response_delay(self, host: int, target: str) -> float:
        """Seconds ``host`` waits before answering ``target`` (+-25% per target when drawn)."""
        delay = float(self.host_delay[host])
        if self.config.latency_sigma and delay:
            delay *= 0.75 + 0.5 * zlib.crc32(target.encode(), host) / 2**32
        return delay

    def reply(self, r: int) -> adversarial.Reply:
        """(status, header lines, body) of ``SPECIAL`` resource ``r`` (not a mirror page)."""
        return adversarial.reply(self, r)

    def reply_unknown(self, host: int, target: str) -> adversarial.Reply | None:
        """The answer to a path of ``host`` that is no resource (``None``: a plain 404)."""
        return adversarial.reply_unknown(self, host, target)

    def copy_html(self, r: int) -> bytes:
        """The HTML of mirror page ``r``: its original's, with a near mirror's edit."""
        body = self.html(int(self.copy_of[r]))
        if self.role[self.host[r]] == "nearmirror":
            return adversarial.near_edit(self, r, body)
        return body

    def copies(self) -> list[tuple[str, str, str]]:
        """(copy URL, original URL, ``exact`` or ``near``) of every mirrored page."""
        return [(self.url(r), self.url(int(c)),
                 "near" if self.role[self.host[r]] == "nearmirror" else "exact")
                for r, c in enumerate(self.copy_of.tolist()) if c >= 0]

    def redirect(self, r: int) -> tuple[int, str]:
        """(status, Location header) of redirect resource ``r``."""
        return self._redirects[r]

    def robots_txt(self, host: int) -> str | None:
        """Text of ``host``'s /robots.txt, or ``None`` where it answers 404."""
        return self._robots[host]

    def seeds(self, k: int | None = None) -> list[str]:
        """Default seed URLs: the home pages of hosts ``0 .. k-1`` (``config.seed_hosts``)."""
        k = self.config.seed_hosts if k is None else k
        return [self.origins[h] + "/" for h in range(min(k, self.config.hosts))]

    def truth(self, seeds: Iterable[str] | None = None) -> list[str]:
        """Sorted canonical URLs that a correct robots.txt-obeying crawl from ``seeds``
        fetches (3xx and 404 URLs included, /robots.txt excluded): breadth-first over links
        and redirects, disallowed URLs neither fetched nor followed. On an adversarial web,
        :meth:`must_fetch`. ValueError for a seed that is not on this web."""
        if self.adversarial:
            return self.must_fetch(seeds)
        urls: set[str] = set()
        start: list[int] = []
        for s in self.seeds() if seeds is None else seeds:
            canon, h, target = self._parse_seed(s)
            r = self.lookup(h, target)
            if r >= 0:
                start.append(r)
            elif self._allowed_path(h, target) and target != "/robots.txt":
                urls.add(canon)  # a 404 seed
        return sorted(urls | {self.url(r) for r in self.reached(start)})

    @property
    def adversarial(self) -> bool:
        """Whether any adversarial host or soft-404 site is present (timing and epochs aside)."""
        return self.n_hosts > self.config.hosts or bool(self.soft404.any())

    def must_fetch(self, seeds: Iterable[str] | None = None,
                   max_redirects: int = MAX_REDIRECTS) -> list[str]:
        """Sorted canonical URLs every correct crawl from ``seeds`` fetches, whatever the
        answer. A *correct crawl* obeys robots.txt (RFC 9309), follows every link of a 2xx
        HTML answer and every Location up to ``max_redirects`` hops, fetches each URL once
        and at most :meth:`trap_limit` URLs of a host; the must set is its closure through
        reliable answers only (not unreliable hosts, the huge page or the bomb, nor the
        links of mis-made pages)."""
        return self.categories(seeds, max_redirects).must

    def may_give_up(self, seeds: Iterable[str] | None = None,
                    max_redirects: int = MAX_REDIRECTS) -> list[str]:
        """Sorted canonical URLs a correct crawl may fetch or not, or fetch without a usable
        answer: the closure when every answer is taken, minus :meth:`must_fetch`."""
        return self.categories(seeds, max_redirects).may

    def must_not_fetch(self, seeds: Iterable[str] | None = None,
                       max_redirects: int = MAX_REDIRECTS) -> list[str]:
        """Sorted canonical URLs a correct crawl may discover but must never request: those
        robots.txt disallows, the Location after ``max_redirects`` hops, and the trap URLs
        a crawl within ``trap_budget`` cannot reach (calendar months ``B - 1`` away,
        ``/a/`` repeated ``B`` times). Other trap URLs are in none of the three lists."""
        return self.categories(seeds, max_redirects).must_not

    def categories(self, seeds: Iterable[str] | None = None,
                   max_redirects: int = MAX_REDIRECTS) -> Truth:
        """:meth:`must_fetch`, :meth:`may_give_up` and :meth:`must_not_fetch` at once
        (disjoint; cached per seeds)."""
        seeds = self.seeds() if seeds is None else list(seeds)
        key = (tuple(seeds), max_redirects)
        if key in self._truths:
            return self._truths[key]
        start: list[int] = []
        must: set[str] = set()
        may: set[str] = set()
        never: set[str] = set()
        inside = set()  # hosts with a seed other than their home page
        for s in seeds:
            canon, h, target = self._parse_seed(s)
            if target != "/":
                inside.add(h)
            r = self.lookup(h, target)
            if r >= 0:
                start.append(r)
            elif not self._allowed_path(h, target):
                never.add(canon)
            elif target != "/robots.txt":  # a 404, a soft 404 or a trap page
                (may if self.role[h] in UNRELIABLE else must).add(canon)
                if self.soft404[h]:  # whose link home is followed
                    start.append(int(self.site_start[h]))
        sure, _ = self._walk(start, max_redirects, sure=True)
        every, refused = self._walk(start, max_redirects, sure=False)
        must.update(self.url(r) for r in sure)
        may.update(self.url(r) for r in set(every) - set(sure))
        never.update(self.url(r) for r in refused)
        reached = set(every)
        for h, role in enumerate(self.role):
            if role in TRAPS and h not in inside and self._index[h]["/"] in reached:
                never.update(self._beyond_budget(h))
        truth = Truth(sorted(must), sorted(may - must), sorted(never))
        self._truths[key] = truth
        return truth

    def _walk(self, start: list[int], max_redirects: int, sure: bool) -> tuple[list, list]:
        """Breadth-first from resources ``start``: (fetched ids, refused ids); with
        ``sure``, unreliable resources are not fetched and mis-made pages not followed."""
        seen = np.zeros(len(self.path), dtype=bool)
        queue: deque[tuple[int, int]] = deque()
        for r in start:
            if not seen[r]:
                seen[r] = True
                queue.append((r, 0))
        fetched, refused = [], []
        ptr, dst, kind, host = self.link_ptr, self.link_dst, self.kind, self.host
        while queue:
            r, hops = queue.popleft()
            if not self.allowed[r] or hops > max_redirects:
                refused.append(r)
                continue
            if sure and not self.sure[r]:
                continue
            fetched.append(r)
            if sure and not self.sure_links[r]:
                continue
            k, hop = kind[r], 0
            if k == REDIRECT:
                nxt, hop = [int(self.redirect_target[r])], hops + 1
            elif k == PAGE:
                nxt = dst[ptr[r] : ptr[r + 1]].tolist() + self.extra.get(r, [])
            elif k == DEAD:
                nxt = [int(self.site_start[host[r]])] if self.soft404[host[r]] else []
            else:
                nxt = self.extra.get(r, [])
            for t in nxt:
                if not seen[t]:
                    seen[t] = True
                    queue.append((t, hop))
        return fetched, refused

    def _beyond_budget(self, h: int) -> list[str]:
        b, origin = self.trap_budget, self.origins[h]
        if self.role[h] == "deep":
            return [origin + "/" + "a/" * b]
        if self.role[h] == "calendar":
            entry = adversarial.CALENDAR_ENTRY
            months = [adversarial.add_months(*entry, k) for k in (1 - b, b - 1)]
            return [origin + adversarial.month_path(*m) for m in months if m[0] >= 1]
        return []

    def trap_hosts(self) -> list[str]:
        """Origins (``http://127.1.a.b:PORT``) of the spider-trap hosts."""
        return [self.origins[h] for h, role in enumerate(self.role) if role in TRAPS]

    def trap_limit(self, host: int | str) -> int:
        """The most distinct URLs (robots.txt aside) a correct crawl may fetch from ``host``
        (an index, a netloc or a URL on it): :attr:`trap_budget` on a spider trap, the
        host's resources elsewhere. ``trap_budget`` is ``WebConfig.trap_budget``, or (0)
        the smallest multiple of 100 covering every other host, so it never cuts a
        must-fetch URL."""
        h = self._host_of(host)
        if self.role[h] in TRAPS:
            return self.trap_budget
        return int((self.host == h).sum())

    def _host_of(self, host: int | str) -> int:
        if isinstance(host, str):
            netloc = host.split("://", 1)[1].split("/", 1)[0] if "://" in host else host
            if netloc in self.netlocs:
                return self.netlocs.index(netloc)
            raise ValueError(f"{host!r} is not a host of this web")
        if not 0 <= host < self.n_hosts:
            raise ValueError(f"no host {host}")
        return host

    def reached(self, start: Iterable[int], obey_robots: bool = True) -> np.ndarray:
        """Resource ids fetched by a crawl from resources ``start`` (sorted); with
        ``obey_robots=False``, by a crawl that ignores robots.txt."""
        seen = np.zeros(len(self.path), dtype=bool)
        queue = deque(int(r) for r in start)
        seen[list(queue)] = True
        ptr, dst, kind = self.link_ptr, self.link_dst, self.kind
        allowed = self.allowed if obey_robots else np.ones_like(self.allowed)
        while queue:
            r = queue.popleft()
            if not allowed[r]:
                continue
            if kind[r] == PAGE:
                nxt = dst[ptr[r] : ptr[r + 1]]
            elif kind[r] == REDIRECT:
                nxt = self.redirect_target[r : r + 1]
            else:
                continue
            new = np.unique(nxt[~seen[nxt]])
            seen[new] = True
            queue.extend(new.tolist())
        return np.flatnonzero(seen & allowed)

    def _parse_seed(self, seed: str) -> tuple[str, int, str]:
        try:
            u = ada_url.URL(seed.strip())
        except ValueError:
            raise ValueError(f"seed {seed!r} is not a URL") from None
        h = host_index(u.hostname)
        if u.protocol != "http:" or h is None or h >= self.n_hosts or u.host != self.netlocs[h]:
            raise ValueError(f"seed {seed!r} is not on this web ({self.origins[0]}/ ..)")
        target = u.pathname + u.search
        return self.origins[h] + target, h, target

    def summary(self) -> dict[str, int]:
        """Counts of the web's parts (for the CLI and logs)."""
        return {"hosts": self.n_hosts, "pages": self.n_pages, "links": int(self.link_ptr[-1]),
                "dead": int((self.kind == DEAD).sum()),
                "redirects": int((self.kind == REDIRECT).sum()), "moved": int(self.moved.size),
                "unreachable": int(self.unreachable.size),
                "disallowed": int((~self.allowed).sum()),
                "adversarial_hosts": self.n_hosts - self.config.hosts,
                "soft404_hosts": int(self.soft404.sum())}

    # ---------------------------------------------------------------------- rendering

    def html(self, page: int) -> bytes:
        """The HTML of ``page`` (deterministic from seed and id; a small LRU cache)."""
        if not 0 <= page < self.n_pages:
            raise IndexError(f"no page {page}")
        return self._render_cached(page)

    def _href(self, u: list[float], base: tuple[int, str], page: int, t: int) -> str:
        """An href on ``page`` (effective base URL ``base``) resolving to resource ``t``."""
        th, tp = int(self.host[t]), self.path[t]
        u0, u1, u2 = u
        if t == page and base == (th, tp):  # no <base>: pure fragments and "" work
            if u0 < 0.5:
                return "#top" if u1 < 0.7 else f"#sec-{1 + int(u2 * 5)}"
            if u0 < 0.6:
                return ""
        frag = f"#sec-{1 + int(u2 * 9)}" if u0 > 0.92 else ""
        if th != base[0]:
            if u1 < 0.6:
                return self.origins[th] + tp + frag
            if u1 < 0.8:
                return "HTTP://" + self.netlocs[th] + tp + frag
            return "//" + self.netlocs[th] + tp + frag
        if u1 < 0.35:
            rel = relative_path(base[1], tp)
            if u2 < 0.3 and not rel.startswith("../") and not rel.startswith("./"):
                rel = "./" + rel
            return rel + frag
        if u1 < 0.6:
            return tp + frag
        if u1 < 0.72:  # dot segments: /a/./b or /a/zz/../b
            path, query = _split_query(tp)
            segs = path.split("/")
            i = 1 + int(u2 * (len(segs) - 1))
            segs.insert(i, "." if u2 * 10 % 1 < 0.5 else self.words[200 + int(u2 * 997)] + "/..")
            return "/".join(segs) + query + frag
        if u1 < 0.76:
            bpath, bquery = _split_query(base[1])
            tpath, tquery = _split_query(tp)
            if tquery and bpath == tpath:
                return tquery + frag  # "?page=3" next to /list?page=2
        if u1 < 0.9:
            return self.origins[th] + tp + frag
        if u1 < 0.95:
            return "HTTP://" + self.netlocs[th] + tp + frag
        return "//" + self.netlocs[th] + tp + frag

    def _render(self, page: int) -> bytes:
        """Build the page: head, then paragraphs of Zipf words with the links spread
        through them in page order and a heading before some paragraphs, sized to
        ``page_size[page]`` bytes (plus less than one word)."""
        version = int(self.version[page])  # 0: today's page; later epochs: new text
        key = [self.config.seed, _RENDER_SALT, page] + [version] * bool(version)
        rng = np.random.default_rng(key)
        misc = rng.random(8).tolist()
        h, path = int(self.host[page]), self.path[page]
        targets = self.links(page).tolist() + [page] * int(misc[0] * (_SELF_LINKS + 1))

        base, base_tag = (h, path), ""
        if misc[1] < _BASE_FRACTION:
            t = targets[int(misc[2] * len(targets))]
            bh, bp = int(self.host[t]), self.path[t]
            if misc[3] < 0.5:
                bp = _directory(bp)
            href = bp if (bh == h and misc[4] < 0.5) else self.origins[bh] + bp
            base, base_tag = (bh, bp), f'<base href="{href.replace("&", "&amp;")}">\n'
        anchors = []
        for t, v in zip(targets, rng.random((len(targets), 4)).tolist(), strict=True):
            href = self._href(v[:3], base, page, t).replace("&", "&amp;")
            anchors.append(f"<a href='{href}'>" if v[3] < 0.15 else f'<a href="{href}">')
        overhead = sum(map(len, anchors)) + 4 * len(anchors)  # plus "</a>" each

        # Structure: paragraph count, then title and headings (phrases of the shared text).
        corpus, starts = self._text
        span = _CORPUS_WORDS - _CORPUS_SPARE
        size, n_anchor = int(self.page_size[page]), len(anchors)
        n_words = max(n_anchor + 1, int((size - overhead - 600) / self._mean_word))
        n_par = max(1, n_words // 70)
        u = rng.random(3 * n_par + n_anchor).tolist()

        def phrase(at: float, k: int) -> str:
            w = int(at * span)
            return corpus[starts.item(w) : starts.item(w + k) - 1]

        title = phrase(misc[6], 2 + int(misc[5] * 5)).title()
        headings = [""] * n_par
        k = 0
        for j in range(n_par):
            if j == 0 or u[j] < 0.25:
                tag = "h3" if j and u[j] < 0.07 else "h2"
                k += 1
                text = phrase(u[n_par + j], 2 + int(u[j] * 64) % 4)
                headings[j] = f'<{tag} id="sec-{k}">{text}</{tag}>\n'
        head = (
            f'<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
            f"<title>{title}</title>\n{base_tag}</head>\n<body>\n"
            f'<header id="top"><h1>{title}</h1></header>\n<main>\n'
        )
        foot = "</main>\n</body>\n</html>\n"

        # Body: the n words of the shared text from word s on, each with its trailing
        # space, enough to make the page `size` bytes; paragraph starts and links at
        # random word positions, one per stratum (so links keep page order).
        fixed = len(head) + len(foot) + sum(map(len, headings))
        need = size - fixed - overhead - 8 * n_par  # "<p>" and "</p>\n" per paragraph
        s = int(misc[7] * span)
        s0 = starts.item(s)
        n = int(np.searchsorted(starts, s0 + need)) - s
        n = max(n, n_anchor + 1, n_par)
        events = []
        for j in range(1, n_par):
            lo, hi = 1 + (j - 1) * (n - 1) // (n_par - 1), 1 + j * (n - 1) // (n_par - 1)
            events.append((lo + int(u[2 * n_par + j] * (hi - lo)), 0, j))
        for i in range(n_anchor):
            lo, hi = i * n // n_anchor, (i + 1) * n // n_anchor
            events.append((lo + int(u[3 * n_par + i] * (hi - lo)), 1, i))
        events.sort()
        out = [head, headings[0], "<p>"]
        cur = s0
        for p, kind, i in events:
            at = starts.item(s + p)
            out.append(corpus[cur:at])
            if kind == 0:  # a new paragraph, perhaps after a heading
                out.append(f"</p>\n{headings[i]}<p>")
                cur = at
            else:  # this word is the text of link i
                cur = starts.item(s + p + 1)
                out += (anchors[i], corpus[at : cur - 1], "</a> ")
        out += (corpus[cur : starts.item(s + n)], "</p>\n", foot)
        if page in self.extra:  # links to the adversarial hosts, after the sized page
            links = "".join(
                f'<a href="{self.url(t)}">{self.role[self.host[t]]}</a>\n' for t in self.extra[page]
            )
            out[-1] = f"</main>\n<footer>\n{links}</footer>\n</body>\n</html>\n"
        return "".join(out).encode("ascii")

    @functools.cached_property
    def _text(self) -> tuple[str, np.ndarray]:
        """A long Zipf text shared by all pages (each takes a slice), and the offset of
        each of its words; built on first use."""
        rng = np.random.default_rng([self.config.seed, _RENDER_SALT])
        idx = self._zipf[rng.integers(0, self._zipf.size, _CORPUS_WORDS)]
        corpus = " ".join(self._warr[idx].tolist()) + " "
        starts = np.zeros(_CORPUS_WORDS + 1, dtype=np.int64)
        np.cumsum(self._wlen[idx], out=starts[1:])
        return corpus, starts
