"""Parse once: the links and the index text of a fetched HTML page, from one lxml tree.

What the robots do with each fetched page (DESIGN.md, "What we measured about
speed", items 1 and 2): parse it once with lxml (``collect_ids=False``), walk the
tree once for links, then take the visible text from the same tree.

Links, in first-seen document order (the crawl must be deterministic), come from
``a[href]``, ``area[href]``, ``link[href]`` with rel canonical, alternate or next
(not stylesheets or icons), ``frame[src]``, ``iframe[src]`` and
``<meta http-equiv="refresh" content="0; url=...">``. They are resolved (WHATWG,
``bspcrawl.urls.resolve``) against the first ``<base href>`` (itself resolved
against the page URL) or the page URL, kept only if http(s), without fragment,
de-duplicated. A fragment-only href ("#top") resolves to the page itself, as it
does in a browser. ``<meta name="robots">`` gives noindex / nofollow ("none" is
both); with nofollow the page has no links, with noindex no text.

Touch each href as little as possible: cut "#fragment" from the raw href,
de-duplicate per page with dict/set operations, and let a ``LinkCache`` answer
hrefs already resolved for the same base; only the rest go to ada-url.

Character set (in WHATWG's order): a BOM wins, then the ``charset`` argument (from
the HTTP Content-Type); else a ``<meta charset>`` in the first 1024 bytes is left
to libxml2; else the body is parsed as UTF-8 if it is valid UTF-8 (libxml2 would
assume Latin-1), and with libxml2's default otherwise. Bodies lxml cannot parse
(empty, binary) give an empty ``ParsedPage``, never an exception.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field

from lxml import etree

from bspcrawl.urls import parse, resolve

__all__ = ["DEFAULT_LINK_CACHE_ENTRIES", "LinkCache", "ParsedPage", "parse_html"]

DEFAULT_LINK_CACHE_ENTRIES = 1 << 17
"""Default ``LinkCache`` capacity in entries (about 150 bytes each, see ``LinkCache``)."""

_ABSOLUTE = ("http://", "https://")
_UNRESOLVABLE = ""  # cached result of an href that gives no http(s) URL
_C0_OR_SPACE = "".join(map(chr, range(0x21)))  # what WHATWG strips from both ends
_TAB_OR_NEWLINE = dict.fromkeys(map(ord, "\t\n\r"))  # what WHATWG removes everywhere
_LINK_RELS = frozenset(("canonical", "alternate", "next"))
_NOT_PAGES = frozenset(("stylesheet", "icon"))
_TAGS = ("a", "area", "link", "frame", "iframe", "meta", "base", "title")
_REFRESH = re.compile(r"""\s*[\d.]*\s*[;,]?\s*(?:url\s*=\s*)?(['"]?)(.*)""", re.I | re.S)
_DECLARED = re.compile(rb"<meta[^>]+charset", re.I)
_BOMS = (b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff")


@dataclass(slots=True)
class ParsedPage:
    """What one HTML page gives the crawler and the index."""

    links: list[str] = field(default_factory=list)
    """Absolute http(s) URLs without fragment, unique, in first-seen document order."""
    text: bytes = b""
    """UTF-8 visible text for the index: title, newline, body text (no script/style).

    BEWARE: the text nodes are joined as they are (libxml2's text serialisation,
    the fast way), so words in adjacent elements with no whitespace between them
    in the markup run together ("<li>a</li><li>b</li>" gives "ab")."""
    title: str = ""
    """The first ``<title>``, whitespace collapsed."""
    noindex: bool = False
    nofollow: bool = False


class LinkCache:
    """Bounded per-crawl memo of link resolution: (part of the base, href) -> URL.

    Within one page the result of resolving an href depends only on part of the
    base URL, so that part is the key:

    * hrefs starting "http://" or "https://": nothing (one bucket for all bases);
    * other hrefs starting "/" or "\\": the base's scheme, userinfo, host and port;
    * every other href: the base's directory (up to the last "/" of its path);
    * hrefs that are empty or start with "?" (after the leading C0 controls and
      spaces WHATWG strips): the whole base, so they bypass the cache.

    An href resolved through the first two buckets is also copied into the
    directory bucket, so the next page of the same directory resolves all its
    repeated hrefs with C-level passes (``map(dict.get)``), no Python loop.
    Unresolvable hrefs ("javascript:...") are cached too.

    Bounded by clear-when-full: when more than *capacity* entries are held, the
    whole cache is dropped before the next page (no LRU bookkeeping per lookup; a
    clear costs one page of misses per directory). An entry (dict slot, href and
    URL strings; copies share the strings) takes about 150 bytes: the default
    2^17 entries are ~20 MB. A page may overshoot *capacity* by its own hrefs.
    Not thread-safe: one per parsing thread.
    """

    __slots__ = ("_buckets", "_size", "capacity", "clears", "lookups", "resolved")

    def __init__(self, capacity: int = DEFAULT_LINK_CACHE_ENTRIES) -> None:
        if capacity < 1:
            raise ValueError(f"LinkCache capacity must be positive, got {capacity}")
        self.capacity = capacity
        self._buckets: dict[str, dict[str, str]] = {}  # "" for unresolvable
        self._size = 0
        self.lookups = 0  # hrefs looked up (unique per page)
        self.resolved = 0  # of those, resolved by ada-url (cache misses)
        self.clears = 0

    @property
    def entries(self) -> int:
        """Entries held now (each href in each bucket counts)."""
        return self._size

    def clear(self) -> None:
        """Drop every entry (counters are kept)."""
        self._buckets.clear()
        self._size = 0

    def resolve_unique(self, hrefs: Iterable[str], base: str) -> list[str]:
        """Resolve fragment-free *hrefs* against *base*; http(s) URLs, unique, in order.

        *base* must be in ``bspcrawl.urls`` resolved form; *hrefs* are best given
        already unique, as a dict from ``dict.fromkeys``. The result equals
        resolving each href with ``bspcrawl.urls.resolve``, dropping None and
        keeping the first of equal URLs.
        """
        if not isinstance(hrefs, dict):
            hrefs = dict.fromkeys(hrefs)
        if self._size > self.capacity:
            self.clear()
            self.clears += 1
        query = base.find("?")
        directory = base[: base.rfind("/", 0, query if query >= 0 else len(base)) + 1]
        near = self._buckets.setdefault(directory, {})
        self.lookups += len(hrefs)
        near[""] = base  # "" (a cut "#fragment") is the base itself, for this page only
        urls = list(map(near.get, hrefs))
        if None in urls:
            missing = [h for h, url in zip(hrefs, urls, strict=True) if url is None]
            page_only = self._fill(near, missing, base)
            urls = list(map(near.__getitem__, hrefs))
            for href in page_only:
                del near[href]
        del near[""]
        found = dict.fromkeys(urls)
        found.pop(_UNRESOLVABLE, None)
        return list(found)

    def _fill(self, near: dict[str, str], missing: list[str], base: str) -> list[str]:
        """Resolve *missing* hrefs into *near*; return those valid for this page only."""
        buckets = self._buckets
        origin = base[: base.find("/", base.find("//") + 2)]
        page_only = []
        for href in missing:
            if href.startswith(_ABSOLUTE):
                far = buckets.setdefault("", {})
            elif href.startswith(("/", "\\")):
                far = buckets.setdefault(origin, {})
            else:
                stripped = href.strip(_C0_OR_SPACE)
                if not stripped or stripped[0] == "?" or _same_scheme(stripped):
                    # "" is the base itself (which has no fragment); "?q", "http:" and
                    # "https:?q" (scheme-relative to a base of the same scheme) need all of it
                    near[href] = (resolve(href, base) or _UNRESOLVABLE) if stripped else base
                    page_only.append(href)
                    self.resolved += bool(stripped)
                    continue
                far = None
            url = None if far is None else far.get(href)
            if url is None:
                url = resolve(href, base) or _UNRESOLVABLE
                self.resolved += 1
                if far is not None:
                    far[href] = url
                    self._size += 1
            near[href] = url
            self._size += 1
        return page_only


def _same_scheme(href: str) -> bool:
    """True for "http:..." / "https:..." without "//": WHATWG resolves those relative to
    the whole base when the base has that scheme ("http:" is the base itself)."""
    clean = href.translate(_TAB_OR_NEWLINE).lower()
    return clean.startswith(("http:", "https:")) and not clean.startswith(_ABSOLUTE)


_local = threading.local()


def _parser(encoding: str | None) -> etree.HTMLParser:
    """This thread's lxml HTML parser for *encoding* (None: libxml2 decides)."""
    parsers = getattr(_local, "parsers", None)
    if parsers is None:
        parsers = _local.parsers = {}
    parser = parsers.get(encoding)
    if parser is None:
        parser = parsers[encoding] = etree.HTMLParser(
            encoding=encoding, collect_ids=False, remove_comments=True, remove_pis=True,
            no_network=True,
        )
    return parser


def _encoding(body: bytes, charset: str | None) -> str | None:
    """The encoding to force on libxml2, or None to let it detect (see module doc)."""
    if body.startswith(_BOMS):
        return None
    if charset:
        return charset.strip().lower()
    if body.isascii() or _DECLARED.search(body, 0, 1024):
        return None
    try:
        body.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return "utf-8"


def _tree(body: bytes, charset: str | None) -> etree._Element | None:
    """The lxml tree of *body*, or None if there is none."""
    encoding = _encoding(body, charset)
    try:
        parser = _parser(encoding)
    except LookupError:  # an unknown charset name from the server
        parser = _parser(_encoding(body, None))
    try:
        return etree.fromstring(body, parser)
    except (etree.LxmlError, ValueError):
        return None


def _refresh_url(content: str) -> str | None:
    """The URL of a meta refresh ``content`` ("5; url='x'"), or None."""
    match = _REFRESH.match(content)
    quote, url = match[1], match[2]
    if quote:
        url = url.partition(quote)[0]
    url = url.strip()
    return url or None


def parse_html(
    body: bytes, url: str, links: LinkCache, *, charset: str | None = None
) -> ParsedPage:
    """Links and index text of the HTML page *body* fetched from *url*.

    *links* is the crawl's ``LinkCache``; *charset* the one the server declared,
    if any. Never raises for bad input: a body lxml cannot parse gives an empty
    page, a page URL that is not http(s) gives no links.
    """
    root = _tree(body, charset)
    if root is None:
        return ParsedPage()
    hrefs: list[str] = []
    add = hrefs.append
    base_href: str | None = None
    title: str | None = None
    robots: list[str] = []
    for el in root.iter(_TAGS):
        tag = el.tag
        if tag == "a" or tag == "area":
            href = el.get("href")
        elif tag == "link":
            rel = el.get("rel")
            if not rel:
                continue
            rels = set(rel.lower().split())
            if rels.isdisjoint(_LINK_RELS) or not rels.isdisjoint(_NOT_PAGES):
                continue
            href = el.get("href")
        elif tag == "iframe" or tag == "frame":
            href = el.get("src")
        elif tag == "meta":
            name = el.get("name")
            if name and name.strip().lower() == "robots":
                robots.append(el.get("content") or "")
                continue
            equiv = el.get("http-equiv")
            if not (equiv and equiv.strip().lower() == "refresh"):
                continue
            href = _refresh_url(el.get("content") or "")
        elif tag == "base":
            if base_href is None:
                base_href = el.get("href")
            continue
        else:  # title
            if title is None:
                title = " ".join(el.text.split()) if el.text else ""
            continue
        if href is not None:
            add(href.partition("#")[0] if "#" in href else href)

    directives = set(",".join(robots).lower().replace(",", " ").split())
    noindex = bool(directives & {"noindex", "none"})
    nofollow = bool(directives & {"nofollow", "none"})

    page_links: list[str] = []
    page_url = parse(url)
    if page_url is not None and not nofollow and hrefs:
        base = page_url
        if base_href is not None:
            base = resolve(base_href, page_url) or page_url
        page_links = links.resolve_unique(dict.fromkeys(hrefs), base)

    title = title or ""
    text = b""
    if not noindex:
        body_el = root.find("body")
        if body_el is not None:
            etree.strip_elements(body_el, "script", "style", with_tail=False)
            text = etree.tostring(body_el, method="text", encoding="utf-8", with_tail=False)
        text = title.encode() + b"\n" + text
    return ParsedPage(page_links, text, title, noindex, nofollow)
