"""Parse once: the links and the index text of a fetched HTML page, from one lexbor tree.

What the robots do with each fetched page (DESIGN.md, "What we measured about
speed", items 1 and 2): parse it once with lexbor (selectolax's
``LexborHTMLParser``, an HTML5 parser: the tree a browser builds), take the link
elements and the invisible ones with one CSS query, in document order, then the
visible text from the same tree. lexbor parses about 1.8 times as fast as
lxml/libxml2 here; selectolax's per-node API and the scan below eat part of that,
so the whole job is about 1.3 times as fast on 50 KB pages of 300 links and 1.1
times on 24 KB text pages (``scripts/bench_links.py`` measures both side by side).
And libxml2 stops at nesting depth 255, losing the rest of the page; lexbor does not.

Links, in first-seen document order (the crawl must be deterministic), come from
``a[href]``, ``area[href]``, ``link[href]`` with rel canonical, alternate or next
(not stylesheets or icons), ``frame[src]``, ``iframe[src]`` and
``<meta http-equiv="refresh" content="0; url=...">``, also inside a top-level
``<template>`` or ``<noframes>`` (raw text to an HTML5 parser, so parsed on its
own), as lxml found them. A ``<frame>`` the HTML5 tree builder drops (one after
body content) is taken from the markup, after the other links, as lxml kept it.
They are resolved (WHATWG, ``bspcrawl.urls.resolve``) against the first
``<base href>`` (itself resolved against the page URL) or the page URL, kept only
if http(s), without fragment, de-duplicated. A fragment-only href ("#top") and an
``href`` without a value resolve to the page itself, as in a browser.
``<meta name="robots">`` gives noindex / nofollow ("none" is both); with nofollow
the page has no links, with noindex no text.

Touch each href as little as possible: cut "#fragment" from the raw href,
de-duplicate per page with dict/set operations, and let a ``LinkCache`` answer
hrefs already resolved for the same base; only the rest go to ada-url.

Character set (in WHATWG's order): a BOM wins, then the ``charset`` argument (from
the HTTP Content-Type), then a ``<meta charset>`` (or ``http-equiv`` Content-Type)
in the first 1024 bytes; an undeclared body is UTF-8 if it is valid UTF-8, else
windows-1252 (what browsers assume). Labels map as in WHATWG's Encoding standard
(ISO-8859-1 and ASCII are windows-1252, GB2312 and GBK are GB18030, a ``<meta>``
UTF-16 is UTF-8, ...); an unknown label, or one WHATWG has not (UTF-7), counts as
none. Other encodings are transcoded to UTF-8 before parsing, invalid bytes become
U+FFFD. An empty (or blank) body gives an empty ``ParsedPage``; no body raises.

Hostile markup: HTML5 tree construction is quadratic in the nesting depth (block
start tags and stray end tags look down the stack of open elements), worse with
many active formatting elements (each is re-opened inside every new block: lexbor
issue #340, 40 KB of ``<b>``/``<i>`` take seconds), and lexbor also merges the
attributes of every extra ``<html>``/``<body>`` with a linear search; browsers cap
the depth (Chromium at 512), lexbor does not. Measured unguarded: 850 KB of
``<div></span>`` 12 s, 40 KB of #340 7 s. So, unless a page has at most
``_QUICK_TAGS`` "<" and at most ``_QUICK_STYLES`` that may start a formatting
element (then its worst case is a few ms), its tags are scanned first (numpy, 15-30%
of the parse's cost): per tag name, start tags minus end tags, never below zero (void
elements, elements that close their own kind such as ``<p>`` or ``<li>``,
raw-text elements and ``<a>`` do not count), summed over the names, bounds the
depth. The start tags that take that bound past ``MAX_DEPTH`` (or the formatting
elements' past ``MAX_FORMATTING``), and the ``<html>``/``<body>`` after the first
when there are more than 16, become bogus comments ("<div" -> "<!iv"): the page
parses flatter, in time linear in its size (at most ~4 times a plain page's),
with all its text and links.
"""

from __future__ import annotations

import codecs
import functools
import html
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np
from selectolax.lexbor import (
    LexborDocumentOptions,
    LexborHTMLParser,
    LexborNode,
    SelectolaxError,
    create_tag,
)

from bspcrawl.urls import parse, resolve

__all__ = ["DEFAULT_LINK_CACHE_ENTRIES", "LinkCache", "ParsedPage", "parse_html"]

DEFAULT_LINK_CACHE_ENTRIES = 1 << 17
"""Default ``LinkCache`` capacity in entries (about 150 bytes each, see ``LinkCache``)."""

MAX_DEPTH = 128
"""Bound on the nesting depth of a parsed page (see the module doc); Chromium's is 512."""
MAX_FORMATTING = 4
"""Bound on the open formatting elements (``<b>``, ``<i>``, ``<font>``, ...) of a page: each
one open is re-opened in every new block, so more make pages of blocks slow."""

_ABSOLUTE = ("http://", "https://")
_UNRESOLVABLE = ""  # cached result of an href that gives no http(s) URL
_C0_OR_SPACE = "".join(map(chr, range(0x21)))  # what WHATWG strips from both ends
_TAB_OR_NEWLINE = dict.fromkeys(map(ord, "\t\n\r"))  # what WHATWG removes everywhere
_LINK_RELS = frozenset(("canonical", "alternate", "next"))
_NOT_PAGES = frozenset(("stylesheet", "icon"))
_REFRESH = re.compile(r"""\s*[\d.]*\s*[;,]?\s*(?:url\s*=\s*)?(['"]?)(.*)""", re.I | re.S)


@dataclass(slots=True)
class ParsedPage:
    """What one HTML page gives the crawler and the index."""

    links: list[str] = field(default_factory=list)
    """Absolute http(s) URLs without fragment, unique, in first-seen document order."""
    text: bytes = b""
    """UTF-8 visible text for the index: title, newline, body text (not the content of
    script, style, template, iframe, noframes or noembed).

    BEWARE: the text nodes are joined as they are (the fast way), so words in
    adjacent elements with no whitespace between them in the markup run together
    ("<li>a</li><li>b</li>" gives "ab")."""
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


# -- character set ------------------------------------------------------------------

_META_CHARSET = re.compile(rb"""<meta\s[^>]*?charset\s*=\s*["']?\s*([-\w.:]+)""", re.I)
_WINDOWS_1252 = "".join(  # WHATWG's windows-1252: cp1252 with its 5 holes as C1 controls
    bytes([b]).decode("cp1252", "ignore") or chr(b) for b in range(256)
)
_UTF16 = ("utf-16-le", "utf-16-be")
# WHATWG labels Python spells otherwise, then WHATWG's choices among Python's codecs
_LABELS = {"iso-8859-8-i": "iso8859-8", "x-user-defined": "cp1252", "x-sjis": "cp932",
           "x-mac-cyrillic": "mac-cyrillic", "x-gbk": "gb18030", "windows-874": "cp874",
           "unicode": "utf-16-le", "unicodefeff": "utf-16-le", "unicodefffe": "utf-16-be"}
_WHATWG = {"iso8859-1": "cp1252", "ascii": "cp1252", "iso8859-9": "cp1254",
           "iso8859-11": "cp874", "tis-620": "cp874", "gbk": "gb18030", "gb2312": "gb18030",
           "big5": "big5hkscs", "shift_jis": "cp932", "euc_kr": "cp949", "utf-16": "utf-16-le"}
_SUPPORTED = frozenset(  # Python names of the encodings WHATWG's Encoding standard has
    ["utf-8", "cp866", "koi8-r", "koi8-u", "mac-roman", "mac-cyrillic", "cp874", "gb18030",
     "big5hkscs", "euc_jp", "iso2022_jp", "cp932", "cp949", *_UTF16]
    + [f"iso8859-{i}" for i in (2, 3, 4, 5, 6, 7, 8, 10, 13, 14, 15, 16)]
    + [f"cp125{i}" for i in range(9)]
)


@functools.lru_cache(maxsize=512)
def _codec(label: str) -> str | None:
    """The Python codec of charset *label* as WHATWG reads it, or None if unsupported."""
    name = label.strip().strip("\"'").strip().lower()
    try:
        name = codecs.lookup(_LABELS.get(name, name)).name
    except (LookupError, ValueError):
        return None
    name = _WHATWG.get(name, name)
    return name if name in _SUPPORTED else None


def _utf8(body: bytes, charset: str | None) -> bytes:
    """*body* as UTF-8 (see the module doc for how its encoding is found)."""
    if body.startswith(b"\xef\xbb\xbf"):
        return body[3:]
    if body.startswith((b"\xff\xfe", b"\xfe\xff")):
        codec, body = _UTF16[body[0] == 0xFE], body[2:]
    else:
        codec = _codec(charset) if charset else None
        if codec is None:
            meta = _META_CHARSET.search(body, 0, 1024)
            if meta is not None:
                codec = _codec(meta[1].decode("ascii"))
                if codec in _UTF16:  # a document that can say so in ASCII is not UTF-16
                    codec = "utf-8"
        if codec is None:
            if body.isascii():
                return body
            try:
                body.decode("utf-8")
                return body
            except UnicodeDecodeError:
                codec = "cp1252"
    if codec == "utf-8":
        return body
    if codec == "cp1252":
        return codecs.charmap_decode(body, "strict", _WINDOWS_1252)[0].encode()
    return body.decode(codec, "replace").encode()


# -- hostile markup -----------------------------------------------------------------

_QUICK_TAGS, _QUICK_STYLES = 1500, 64
"""Pages with at most this many "<", at most this many of them maybe starting a formatting
element, are parsed unscanned: their worst case is a few ms (measured)."""
_UNCOUNTED_NAMES = (  # never nest by themselves: void, closing their own kind, raw text
    b"area base br col embed hr img input link meta source track wbr param keygen frame "
    b"basefont bgsound image p li dd dt option optgroup td th tr tbody thead tfoot "
    b"colgroup caption rb rt rp rtc a html head body script style title textarea xmp "
    b"iframe noembed noframes plaintext template"
)
_FORMATTING_NAMES = b"b big code em font i nobr s small strike strong tt u"
_BUCKETS = 4001  # a prime: the names above fall in distinct buckets (checked below)
_U = np.uint64


def _key(name: bytes) -> int:
    """The key of a tag name: its first 7 bytes, little-endian (see ``_tags``)."""
    return int.from_bytes(name[:7].ljust(8, b"\0"), "little")


def _table(names: bytes) -> np.ndarray:
    """A hash set of tag keys: ``table[key % _BUCKETS] == key`` for the keys of *names*."""
    table = np.zeros(_BUCKETS, dtype=np.uint64)
    for key in map(_key, names.split()):
        if table[key % _BUCKETS]:
            raise RuntimeError(f"tag name hash collision: {key:#x}")
        table[key % _BUCKETS] = key
    return table


_UNCOUNTED = _table(_UNCOUNTED_NAMES)
_FORMATTING = _table(_FORMATTING_NAMES)
_HTML_KEY, _BODY_KEY = _U(_key(b"html")), _U(_key(b"body"))
_ONES, _HIGH_BITS, _SEVEN_BYTES = _U(0x0101010101010101), _U(0x8080808080808080), _U(2**56 - 1)
_BELOW_BANG = _U(0x2121212121212121)  # name-ending bytes: <= 0x20, "/" and ">"
_SLASHES, _GTS = _U(0x2F2F2F2F2F2F2F2F), _U(0x3E3E3E3E3E3E3E3E)
_LOWER = _U(0x2020202020202020)  # ASCII letters to lower case (the other bytes of a name
# change too, alike in start and end tags)


def _style_starts() -> np.ndarray:
    """Which 2 bytes after a "<", ORed with 0x2020, may begin a formatting start tag."""
    table = np.zeros(1 << 16, dtype=bool)
    for name in _FORMATTING_NAMES.split():
        if len(name) > 1:
            table[int.from_bytes(name[:2], "little") | 0x2020] = True
        else:  # b, i, s, u: then a byte that ends a name
            for stop in b"\t\n\x0c\r />":
                table[int.from_bytes(name + bytes([stop]), "little") | 0x2020] = True
    return table


_STYLE_STARTS = _style_starts()
_FR = 0x7266 | 0x2020  # "<fr": maybe a frame
_FRAME_SRC = re.compile(  # (for the frames an HTML5 tree builder drops)
    rb"""<frame[\t\n\x0c\r /][^>]*?(?<=[\t\n\x0c\r /"'])src\s*=\s*"""
    rb"""(?:"([^"]*)|'([^']*)|([^\s>]*))""",
    re.I,
)


def _tags(data: bytes, lt: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The "<name" and "</name" of *data* at offsets *lt* as (offset of "<", key, end tag?).

    The key is the name's first 7 bytes (at most), ASCII letters lower-cased, as a
    little-endian uint64 (``_key``), found 8 bytes at a time with SWAR bit tricks (the
    lowest flagged byte of ``(x - 0x0101..) & ~x & 0x8080..`` is x's first zero byte).
    *lt* must be before the last 9 bytes of *data*."""
    word = np.ndarray((len(data) - 8,), "<u8", data, 1, (1,))[lt]  # 8 bytes after "<"
    end = (word & _U(0xFF)) == 47
    word >>= end.astype(np.uint64) << _U(3)  # the name's bytes
    stop = (word - _BELOW_BANG) & ~word
    other = word ^ _SLASHES
    stop |= (other - _ONES) & ~other
    other = word ^ _GTS
    stop |= (other - _ONES) & ~other
    stop &= _HIGH_BITS
    stop &= ~stop + _U(1)  # the first one
    key = (word | _LOWER) & ((stop >> _U(7)) - _U(1)) & _SEVEN_BYTES
    tag = ((word & _U(0xFF)) | _U(0x20)) - _U(97) < _U(26)  # the name starts with a letter
    return lt[tag], key[tag], end[tag]


def _open_after(
    key: np.ndarray, end: np.ndarray, bucket: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per tag, the elements of its name open after it: start tags minus end tags, never
    below zero (a stray end tag closes nothing). As (order, first, count): the counts
    are in ``key[order]`` order (by name, then document order), and ``first`` is where
    each name starts in it."""
    order = np.argsort(bucket.astype(np.uint16), kind="stable")  # a radix sort
    sorted_key = key[order]
    new = np.empty(len(key), dtype=bool)
    new[0] = True
    np.not_equal(sorted_key[1:], sorted_key[:-1], out=new[1:])
    sorted_bucket = bucket[order]
    if np.any(new[1:] & (sorted_bucket[1:] == sorted_bucket[:-1])):  # names share a bucket
        order = np.argsort(key, kind="stable")
        np.not_equal(key[order][1:], key[order][:-1], out=new[1:])
    step = 1 - 2 * end[order].astype(np.int64)
    total = np.cumsum(step)
    first = np.flatnonzero(new)
    group = np.cumsum(new) - 1
    count = total - (total[first] - step[first])[group]  # per name, before the clamp
    # the running minimum within each name: later names are offset lower than any value
    # of an earlier one, so one minimum.accumulate serves all
    offset = group * (2 * len(key) + 2)
    low = np.minimum.accumulate(count - offset) + offset
    return order, first, count - np.minimum(low, 0)


def _defused(data: bytes) -> tuple[bytes, bool]:
    """*data* safe to parse (see the module doc), and whether it may have ``<frame>`` tags."""
    n = len(data) - 9  # (no tag in the last 9 bytes matters)
    if n <= 0:
        return data, b"<fr" in data.lower()
    lt = np.flatnonzero(np.frombuffer(data, np.uint8, n) == 60)
    pair = np.ndarray((n,), "<u2", data, 1, (1,))[lt] | np.uint16(0x2020)
    frames = bool((pair == _FR).any())
    if len(lt) <= _QUICK_TAGS and np.count_nonzero(_STYLE_STARTS[pair]) <= _QUICK_STYLES:
        return data, frames
    lt, key, end = _tags(data, lt)
    rename = []
    # each <html> or <body> after the first adds its attributes to the first one's, a
    # quadratic search in lexbor: past 16, only the first stays
    top = (key == _HTML_KEY) | (key == _BODY_KEY)
    top &= ~end
    if np.count_nonzero(top) > 16:
        top[np.flatnonzero(key == _HTML_KEY)[:1]] = False
        top[np.flatnonzero(key == _BODY_KEY)[:1]] = False
        rename.append(lt[top])
    bucket = key % _U(_BUCKETS)
    counted = _UNCOUNTED[bucket] != key
    lt, key, end, bucket = lt[counted], key[counted], end[counted], bucket[counted]
    style = _FORMATTING[bucket] == key
    opening = ~end
    if (np.count_nonzero(opening) > MAX_DEPTH
            or np.count_nonzero(style & opening) > MAX_FORMATTING):
        order, first, count = _open_after(key, end, bucket)
        most = np.maximum.reduceat(count, first)  # per name; their sum bounds the depth
        if most.sum() > MAX_DEPTH or most[style[order[first]]].sum() > MAX_FORMATTING:
            # in document order: the depth (bound) after each tag; rename the start tags
            # past it
            change = np.diff(count, prepend=0)
            change[first] = count[first]
            change[order] = change.copy()
            deep = np.cumsum(change) > MAX_DEPTH
            deep |= style & (np.cumsum(change * style) > MAX_FORMATTING)
            rename.append(lt[deep & opening])
    if not rename:
        return data, frames
    text = np.frombuffer(data, np.uint8).copy()
    for at in rename:
        text[at + 1] = ord("!")  # "<div ...>" becomes "<!iv ...>", a (bogus) comment
    return text.tobytes(), frames


# -- the page -----------------------------------------------------------------------

_NO_EVENTS = LexborDocumentOptions.WO_EVENTS  # (no <selectedcontent> copies: #221)
_A, _AREA, _LINK, _FRAME, _IFRAME, _META, _BASE, _TITLE, _NOFRAMES, _TEMPLATE = (
    create_tag(name).tag_id for name in (
        "a", "area", "link", "frame", "iframe", "meta", "base", "title", "noframes", "template"
    )
)
_ANCHORS, _FRAMES = (_A, _AREA), (_FRAME, _IFRAME)
_NONE = object()  # no such attribute
# the link elements, and the elements whose text is not visible, in one walk
_SELECTOR = (
    "a[href],area[href],link[href],frame,iframe,meta,base[href],title,noframes,template,"
    "script,style,noembed"
)


def _refresh_url(content: str) -> str | None:
    """The URL of a meta refresh ``content`` ("5; url='x'"), or None."""
    match = _REFRESH.match(content)
    quote, url = match[1], match[2]
    if quote:
        url = url.partition(quote)[0]
    url = url.strip()
    return url or None


class _Walk:
    """What one walk over the link elements of a tree finds."""

    __slots__ = ("base", "frames", "hidden", "hrefs", "robots", "title")

    def __init__(self) -> None:
        self.hrefs: dict[str, None] = {}  # fragments cut, unique, in first-seen order
        self.base: str | None = None
        self.title: str | None = None
        self.robots: list[str] = []
        self.frames = 0
        self.hidden: list[LexborNode] = []  # elements whose text is not for the index

    def walk(self, tree: LexborHTMLParser | LexborNode, *, top: bool = True) -> None:
        """Walk *tree*; *top*: also the content of its ``<noframes>`` and ``<template>``."""
        hrefs = self.hrefs
        for el in tree.css(_SELECTOR):
            tag = el.tag_id
            if tag in _ANCHORS:
                href = el.attrs["href"]
            elif tag == _LINK:
                attrs = el.attributes
                rel = attrs.get("rel")
                if not rel:
                    continue
                rels = set(rel.lower().split())
                if rels.isdisjoint(_LINK_RELS) or not rels.isdisjoint(_NOT_PAGES):
                    continue
                href = attrs["href"]
            elif tag in _FRAMES:
                self.frames += tag == _FRAME
                self.hidden.append(el)  # an iframe's content is its fallback, as raw text
                href = el.attrs.get("src", _NONE)
                if href is _NONE:
                    continue
            elif tag == _META:
                attrs = el.attributes
                name = attrs.get("name")
                if name and name.strip().lower() == "robots":
                    self.robots.append(attrs.get("content") or "")
                    continue
                equiv = attrs.get("http-equiv")
                if not (equiv and equiv.strip().lower() == "refresh"):
                    continue
                href = _refresh_url(attrs.get("content") or "")
                if href is None:
                    continue
            elif tag == _BASE:
                if self.base is None:
                    self.base = el.attrs["href"] or ""
                continue
            elif tag == _TITLE:
                if self.title is None:
                    self.title = " ".join(el.text().split())
                continue
            elif tag == _NOFRAMES:  # raw text to an HTML5 parser, markup to lxml and to us
                self.hidden.append(el)
                if top:
                    fragment = LexborHTMLParser(el.text(), is_fragment=True, options=_NO_EVENTS)
                    self.walk(fragment, top=False)
                continue
            elif tag == _TEMPLATE:  # its content is a fragment outside the tree (no text)
                if top:
                    for fragment in el.template_fragments():
                        self.walk(fragment, top=False)
                continue
            else:  # script, style, noembed
                self.hidden.append(el)
                continue
            if not href:  # None: an attribute without a value
                hrefs[""] = None
            else:
                hrefs[href.partition("#")[0] if "#" in href else href] = None

    def dropped_frames(self, data: bytes) -> None:
        """Add the ``<frame src>`` of *data* (when the tree builder dropped them all)."""
        for match in _FRAME_SRC.finditer(data):
            src = (match[1] or match[2] or match[3] or b"").decode("utf-8", "replace")
            self.hrefs[html.unescape(src).partition("#")[0]] = None


def parse_html(
    body: bytes, url: str, links: LinkCache, *, charset: str | None = None
) -> ParsedPage:
    """Links and index text of the HTML page *body* fetched from *url*.

    *links* is the crawl's ``LinkCache``; *charset* the one the server declared,
    if any. Never raises for bad input: an empty body gives an empty page, a page
    URL that is not http(s) gives no links.
    """
    if not body or body.isspace():
        return ParsedPage()
    data, frame_tags = _defused(_utf8(body, charset))
    try:
        tree = LexborHTMLParser(data, options=_NO_EVENTS)
    except (SelectolaxError, ValueError):
        return ParsedPage()
    found = _Walk()
    found.walk(tree)
    if frame_tags and not found.frames:
        found.dropped_frames(data)

    directives = set(",".join(found.robots).lower().replace(",", " ").split())
    noindex = bool(directives & {"noindex", "none"})
    nofollow = bool(directives & {"nofollow", "none"})

    page_links: list[str] = []
    page_url = parse(url)
    if page_url is not None and not nofollow and found.hrefs:
        base = page_url
        if found.base is not None:
            base = resolve(found.base, page_url) or page_url
        page_links = links.resolve_unique(found.hrefs, base)

    title = found.title or ""
    text = b""
    if not noindex:
        for el in found.hidden:
            el.decompose(False)
        body_el = tree.body
        if body_el is not None:
            text = body_el.text().encode()
        text = title.encode() + b"\n" + text
    return ParsedPage(page_links, text, title, noindex, nofollow)
