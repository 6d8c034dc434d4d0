"""Parse once: the links and the index text of a fetched HTML page, from one lexbor tree.

A page is parsed once with lexbor (selectolax's ``LexborHTMLParser``, an HTML5 parser:
the tree a browser builds, with no nesting cut-off, unlike libxml2's 255), and its links,
invisible elements and visible text all come from that tree. Link elements are taken one
tag name at a time with ``tags``, only for the names the markup has (the scan below counts
them): cheaper than a CSS query, which sets up lexbor's selector engine for each tree.

Links, in first-seen document order (the crawl must be deterministic), come from
``a[href]``, ``area[href]``, ``link[href]`` with rel canonical, alternate or next
(not stylesheets or icons), ``frame[src]``, ``iframe[src]`` and
``<meta http-equiv="refresh" content="0; url=...">``, also inside a top-level
``<template>`` or ``<noframes>`` (raw text to an HTML5 parser, so parsed on its own; an
``<svg>`` ``<a xlink:href>`` is none). A ``<frame>`` the HTML5 tree builder drops (one
after body content) is taken from the markup, after the other links. They are resolved
(WHATWG, ``bspcrawl.urls.resolve``, the "#fragment" cut off first) against the first
``<base href>`` (itself resolved against the page URL) or the page URL, kept only if
http(s), de-duplicated. A fragment-only href ("#top") and an ``href`` without a value
resolve to the page itself, as in a browser. ``<meta name="robots">`` gives noindex /
nofollow ("none" is both); with nofollow the page has no links, with noindex no text.

For the index for ranking (``index/ranking.py``) the page also gives each link's anchor
text and the text of its headings by level (one walk of the tree per level present). Each
href is touched as little as possible: de-duplicated per page, then a ``LinkCache``
answers those already resolved for the same base; only the rest go to ada-url.

Character set (in WHATWG's order): a BOM wins, then the ``charset`` argument (from
the HTTP Content-Type), then a ``<meta charset>`` (or ``http-equiv`` Content-Type)
in the first 1024 bytes; an undeclared body is UTF-8 if it is valid UTF-8, else
windows-1252 (what browsers assume). Labels map as in WHATWG's Encoding standard
(ISO-8859-1 and ASCII are windows-1252, GB2312 and GBK are GB18030, a ``<meta>``
UTF-16 is UTF-8, ...); an unknown label, or one WHATWG has not (UTF-7), counts as
none. Other encodings are transcoded to UTF-8 before parsing, invalid bytes become
U+FFFD. An empty (or blank) body gives an empty ``ParsedPage``; no body raises.

Hostile markup: HTML5 tree construction is quadratic in the nesting depth (block start
tags and stray end tags look down the stack of open elements), worse with many active
formatting elements (each is re-opened inside every new block: lexbor issue #340), and
lexbor merges the attributes of every extra ``<html>``/``<body>`` with a linear search;
browsers cap the depth (Chromium at 512), lexbor does not, so such pages take seconds to
minutes unguarded. So every "<" of a page is looked at first (numpy), and unless the
page has at most ``_QUICK_TAGS`` "<" and at most ``_QUICK_STYLES`` that may start a
formatting element, its tags are scanned: per tag name, start tags minus end tags, never
below zero (void elements, elements that close their own kind such as ``<p>`` or
``<li>``, raw-text elements and ``<a>`` do not count), summed over the names, bounds the
depth. The start tags that take that bound past ``MAX_DEPTH`` (or the formatting
elements' past ``MAX_FORMATTING``), and the ``<html>``/``<body>`` after the first when
there are more than 16, become bogus comments ("<div" -> "<!iv"): the page parses
flatter, in time linear in its size, with all its text and links.
"""

from __future__ import annotations

import codecs
import functools
import html
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np
from selectolax.lexbor import (
    LexborAttributes,
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
_SELF = "#"  # cached result of an href that is the base itself ("", "#top", ...)
_PLAIN = re.compile(r"(?!$)((?:\.\.?/)*)((?:[\w~-][\w.~-]*(?:/[\w~-][\w.~-]*)*/?)?)",
                    re.ASCII)
"""A relative path of plain segments (letters, digits, ``_.~-``, none starting with "."),
after "./" and "../" segments: what WHATWG resolves against a base's directory by popping
a segment per "../" (never the root) and appending the rest, with nothing to
percent-encode or normalise, without a call to ada-url."""
_C0_OR_SPACE = "".join(map(chr, range(0x21)))  # what WHATWG strips from both ends
_TAB_OR_NEWLINE = dict.fromkeys(map(ord, "\t\n\r"))  # what WHATWG removes everywhere
_LINK_RELS = frozenset(("canonical", "alternate", "next"))
_NOT_PAGES = frozenset(("stylesheet", "icon"))
_REFRESH = re.compile(r"""\s*[\d.]*\s*[;,]?\s*(?:url\s*=\s*)?(['"]?)(.*)""", re.I | re.S)


@dataclass(slots=True)
class ParsedPage:
    """What one HTML page gives the crawler and the index."""

    links: Sequence[str] = field(default_factory=list)
    """Absolute http(s) URLs without fragment, unique, in first-seen document order (a
    list)."""
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
    anchors: Sequence[str] = field(default_factory=list)
    """The anchor text of each of ``links``: that of the URL's first href in the markup (the
    text of the first ``<a>`` of that href that has some; '' for none, for ``<link>``,
    frames and meta refresh, and for a link to the page itself)."""
    headings: dict[str, str] = field(default_factory=dict)
    """The text of the page's ``<h1>`` ... ``<h5>`` by level (``"h1"``: every ``<h1>``'s
    text, one a line; an ``<h6>`` counts as ``"h5"``), for the index's tag weights."""


class LinkCache:
    """Bounded per-crawl memo of link resolution: (part of the base, href) -> URL.

    Within one page the result of resolving an href depends only on part of the
    base URL, so that part is the key (hrefs are as in the markup; their "#fragment"
    is cut off before anything else):

    * hrefs starting "http://" or "https://": nothing (one bucket for all bases);
    * other hrefs starting "/" or "\\": the base's scheme, userinfo, host and port;
    * hrefs starting "?" (after the leading C0 controls and spaces WHATWG strips):
      nothing, the bucket holds their query as resolved, which follows the base up
      to its own query;
    * "http:..." and "https:..." without "//" (after that strip): the whole base,
      so they bypass the cache;
    * every other href: the base's directory (up to the last "/" of its path);
      those empty or starting "#" (after that strip) are the base itself.

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
        self._buckets: dict[str, dict[str, str]] = {}  # by key above: href -> URL
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
        """Resolve *hrefs* against *base*; http(s) URLs without fragment, unique, in order.

        *base* must be in ``bspcrawl.urls`` resolved form; *hrefs* are best given
        already unique, as a dict from ``dict.fromkeys``. The result equals
        resolving each href, its "#fragment" cut off, with ``bspcrawl.urls.resolve``,
        dropping None and keeping the first of equal URLs.
        """
        if not isinstance(hrefs, dict):
            hrefs = dict.fromkeys(hrefs)
        return _unique(self._resolve(hrefs, base), base)

    def resolve_anchored(self, hrefs: dict[str, str], base: str
                         ) -> tuple[list[str], list[str]]:
        """:meth:`resolve_unique` of the hrefs of ``{href: anchor text}``, and the anchor
        text of each URL: its first href's ('' for the base itself)."""
        urls = self._resolve(hrefs, base)
        found = dict(zip(urls, hrefs.values(), strict=True))  # first-seen order, last text
        if len(found) < len(urls):  # a URL of two hrefs: the first one's text (the keys
            found.update(zip(reversed(urls), reversed(hrefs.values()), strict=True))  # stay)
        found.pop(_UNRESOLVABLE, None)
        links, anchors = list(found), list(found.values())
        if _SELF in found or base in found:  # the page itself: no anchor text, where first
            at = links.index(_SELF) if _SELF in found else links.index(base)
            first = links.index(base) if base in found else at
            links[min(at, first)], anchors[min(at, first)] = base, ""
            if first != at:
                del links[max(at, first)], anchors[max(at, first)]
        return links, anchors

    def _resolve(self, hrefs: dict, base: str) -> list[str]:
        """The URL of each href, in order (``_SELF``: the base, ``_UNRESOLVABLE``: none)."""
        if self._size > self.capacity:
            self.clear()
            self.clears += 1
        query = base.find("?")
        directory = base[: base.rfind("/", 0, query if query >= 0 else len(base)) + 1]
        near = self._buckets.setdefault(directory, {})
        self.lookups += len(hrefs)
        urls = list(map(near.get, hrefs))
        if None in urls:
            keys = list(hrefs)
            missing = [i for i, url in enumerate(urls) if url is None]
            filled = self._fill(near, [keys[i] for i in missing], base, directory)
            for i, url in zip(missing, filled, strict=True):
                urls[i] = url
        return urls

    def _fill(self, near: dict[str, str], missing: list[str], base: str,
              directory: str) -> list[str]:
        """Resolve *missing* hrefs, caching in *near* those not for this page only."""
        buckets = self._buckets
        origin = base[: base.find("/", base.find("//") + 2)]
        path = base.partition("?")[0]
        urls = []
        for href in missing:
            cut = href.partition("#")[0]
            plain = _PLAIN.fullmatch(cut)
            if plain is not None:  # no ada-url needed (see _PLAIN)
                url = directory
                for _ in range(plain[1].count("../")):
                    if len(url) > len(origin) + 1:
                        url = url[: url.rfind("/", 0, -1) + 1]
                url += plain[2]
                near[href] = url
                self._size += 1
                urls.append(url)
                continue
            if cut.startswith(_ABSOLUTE):
                far = buckets.setdefault("", {})
            elif cut.startswith(("/", "\\")):
                far = buckets.setdefault(origin, {})
            else:
                stripped = cut.strip(_C0_OR_SPACE)
                if not stripped:  # the base itself
                    near[href] = _SELF
                    self._size += 1
                    urls.append(_SELF)
                    continue
                if stripped[0] == "?":  # the href's query after the base's path
                    queries = buckets.setdefault("?", {})
                    query = queries.get(cut)
                    if query is None:
                        url = resolve(cut, base)
                        self.resolved += 1
                        if url is None:  # text no URL can hold (a lone surrogate)
                            urls.append(_UNRESOLVABLE)
                            continue
                        query = queries[cut] = url[len(path) :]
                        self._size += 1
                    urls.append(path + query)
                    continue
                if _same_scheme(stripped):  # "http:", "https:?q": relative to all the base
                    urls.append(resolve(cut, base) or _UNRESOLVABLE)
                    self.resolved += 1
                    continue
                far = None
            url = None if far is None else far.get(cut)
            if url is None:
                url = resolve(cut, base) or _UNRESOLVABLE
                self.resolved += 1
                if far is not None:
                    far[cut] = url
                    self._size += 1
            near[href] = url
            self._size += 1
            urls.append(url)
        return urls


def _unique(urls: list[str], base: str) -> list[str]:
    """The http(s) URLs of ``urls`` (as ``LinkCache._resolve`` gives them), unique, in
    first-seen order, ``_SELF`` as the base."""
    found = dict.fromkeys(urls)
    found.pop(_UNRESOLVABLE, None)
    links = list(found)
    if _SELF in found:  # the base, where it is first
        at = links.index(_SELF)
        first = links.index(base) if base in found else at
        links[min(at, first)] = base
        if first != at:
            del links[max(at, first)]
    return links


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
element, are parsed unscanned: too few tags to nest deep enough to be slow."""
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


_NAMES = (  # the elements but <a> the walk takes (see _Walk)
    "area", "link", "base", "frame", "iframe", "meta", "title", "noframes", "noembed",
    "template", "script", "style",
)
_LOWER4 = np.uint32(0x20202020)


def _styles() -> np.ndarray:
    """Whether the 2 bytes after a "<" (ORed with 0x2020) may start a formatting element."""
    table = np.zeros(1 << 16, dtype=bool)
    for name in _FORMATTING_NAMES.split():
        if len(name) > 1:
            table[int.from_bytes(name[:2], "little") | 0x2020] = True
        else:  # b, i, s, u: then a byte that ends a name
            for stop in b"\t\n\x0c\r />":
                table[int.from_bytes(name + bytes([stop]), "little") | 0x2020] = True
    return table


_STYLES = _styles()
_NAME_HASH = np.uint32(0xC50A52E9)  # (found by trying: puts _NAMES in distinct buckets)


def _name_buckets() -> tuple[np.ndarray, list[int]]:
    """A hash set of the keys of ``_NAMES`` (their first 4 letters, little-endian; a bucket
    is the top 4 bits of key * ``_NAME_HASH``): the key in each of the 16 buckets (0 for
    none), and the bucket of each name."""
    table = np.zeros(16, dtype=np.uint32)
    buckets: list[int] = []
    for name in _NAMES:
        key = int.from_bytes(name[:4].encode(), "little")
        bucket = (key * int(_NAME_HASH)) % 2**32 >> 28
        if table[bucket]:
            raise RuntimeError(f"tag name bucket collision: {name}")
        table[bucket] = key
        buckets.append(bucket)
    return table, buckets


_NAME_KEYS, _NAME_BUCKET = _name_buckets()
_NO_NAMES = (0,) * len(_NAMES)
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


def _defused(data: bytes) -> tuple[bytes, tuple[int, ...], list[int]]:
    """*data* safe to parse (see the module doc); for each of ``_NAMES`` how many "<"
    are followed by its first four letters (in either case): it has no more such elements;
    and the heading levels (1 to 6) of the "<h1" ... "<h6" (either case) it holds."""
    n = len(data) - 4  # (a "<" in the last 4 bytes starts none of those names)
    if n <= 0:
        return data, _NO_NAMES, []
    at = np.flatnonzero(np.frombuffer(data, np.uint8, n) == 60)  # each "<"
    key = np.ndarray((n,), "<u4", data, 1, (1,))[at]  # the 4 bytes after it
    key |= _LOWER4
    after_h = key[(key & np.uint32(0xF8FF)) == 0x3068]  # "<h" and a byte of 0x30 ... 0x37
    levels = sorted({d - 0x30 for d in ((after_h >> np.uint32(8)) & np.uint32(0xFF)).tolist()
                     if 0x31 <= d <= 0x36}) if len(after_h) else []
    bucket = (key * _NAME_HASH) >> np.uint32(28)
    count = np.bincount(bucket[_NAME_KEYS.take(bucket) == key], minlength=16).tolist()
    names = tuple(count[k] for k in _NAME_BUCKET)
    # the "<" before the last 9 bytes (no tag there matters)
    quick = len(key) - data.count(b"<", max(len(data) - 9, 0), n)
    if (quick <= _QUICK_TAGS
            and np.count_nonzero(_STYLES.take(key[:quick] & 0xFFFF)) <= _QUICK_STYLES):
        return data, names, levels
    lt, key, end = _tags(data, at[:quick])
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
        return data, names, levels
    text = np.frombuffer(data, np.uint8).copy()
    for starts in rename:
        text[starts + 1] = ord("!")  # "<div ...>" becomes "<!iv ...>", a (bogus) comment
    return text.tobytes(), names, levels


# -- the page -----------------------------------------------------------------------

_NO_EVENTS = LexborDocumentOptions.WO_EVENTS  # (no <selectedcontent> copies: #221)
_TAG_IDS = {name: create_tag(name).tag_id for name in ("a", *_NAMES)}
_A, _AREA, _LINK, _FRAME, _IFRAME, _META, _BASE, _TITLE, _NOFRAMES, _TEMPLATE = (
    _TAG_IDS[name] for name in (
        "a", "area", "link", "frame", "iframe", "meta", "base", "title", "noframes", "template"
    )
)
_FRAMES = (_FRAME, _IFRAME)
_HOSTS = ("noframes", "template")  # elements whose links are outside the tree
_NONE = object()  # no such attribute


@functools.cache
def _selector(names: tuple[str, ...]) -> str:
    """A CSS query of a[href] and the elements *names*."""
    return ",".join(("a[href]", *names))


def _value(attrs: LexborAttributes, name: str) -> str | None:
    """The value of attribute *name* ("" if it has none), None if there is no such one."""
    value = attrs.get(name, _NONE)
    return None if value is _NONE else value or ""


def _refresh_url(content: str) -> str | None:
    """The URL of a meta refresh ``content`` ("5; url='x'"), or None."""
    match = _REFRESH.match(content)
    quote, url = match[1], match[2]
    if quote:
        url = url.partition(quote)[0]
    url = url.strip()
    return url or None


class _Walk:
    """What one walk over the link elements of a tree finds.

    Two ways, alike in what they find: ``walk_names``, tag name by tag name (lexbor's
    ``tags``), and ``walk``, one CSS query of all names, for the pages with a
    ``<template>`` or ``<noframes>``, whose links are outside the tree."""

    __slots__ = ("base", "frames", "hidden", "hrefs", "robots", "selector", "title")

    def __init__(self, selector: str) -> None:
        self.selector = selector
        # as in the markup, unique, in first-seen order -> anchor text ('' for none)
        self.hrefs: dict[str, str] = {}
        self.base: str | None = None
        self.title: str | None = None
        self.robots: list[str] = []
        self.frames = 0
        self.hidden: list[LexborNode] = []  # elements whose text is not for the index

    def walk(self, tree: LexborHTMLParser | LexborNode, *, top: bool = True) -> None:
        """Walk *tree* with one CSS query; *top*: also the content of its ``<noframes>``
        and ``<template>``, where they are."""
        hrefs = self.hrefs
        for el in tree.css(self.selector):
            tag = el.tag_id
            if tag != _A:
                href = self._other(el, tag, top)
                if href is not None:
                    hrefs.setdefault(href, "")
                continue
            try:
                href = el.attrs["href"] or ""  # (None: an attribute without a value)
            except KeyError:  # an <svg> <a xlink:href> ([href] matches the local name)
                continue
            if not hrefs.get(href):
                hrefs[href] = el.text_lexbor()

    def walk_names(self, tree: LexborHTMLParser, counts: dict[str, int]) -> None:
        """Walk *tree* (no ``<template>``, no ``<noframes>``) for the elements *counts*
        names, then for its ``<a>``. The elements of a name are those of the ``<head>``
        if it holds as many as *counts* gives (the page has no more), else ``tags``
        finds them. If the ``<head>`` holds them all, their links come first, in the
        order of the ``<head>`` (which has no ``<a>``). Else each element that gives a
        link gets an ``<a>`` of it (no text) inserted before it, so that the ``<a>``
        give all links in document order."""
        head: dict[int, list[LexborNode]] = {_TAG_IDS[name]: [] for name in counts}
        in_head: list[LexborNode] = []
        head_el = tree.head
        for el in head_el.traverse() if head_el is not None else ():
            nodes = head.get(el.tag_id)
            if nodes is not None:
                nodes.append(el)
                in_head.append(el)
        if all(len(head[_TAG_IDS[name]]) == count for name, count in counts.items()):
            for el in in_head:
                href = self._other(el, el.tag_id, False)
                if href is not None:
                    self.hrefs.setdefault(href, "")
        else:
            for name, count in counts.items():
                nodes = head[_TAG_IDS[name]]
                if len(nodes) != count:
                    nodes = tree.tags(name)
                for el in nodes:
                    href = self._other(el, el.tag_id, False)
                    if href is not None:
                        marker = tree.create_node("a")
                        marker.attrs["href"] = href
                        el.insert_before(marker, move=True)
        hrefs = self.hrefs
        for el in tree.tags("a"):
            try:
                href = el.attrs["href"] or ""  # (None: an attribute without a value)
            except KeyError:  # no href (or an <svg> <a xlink:href>)
                continue
            if not hrefs.get(href):  # the first text of the href (a marker has none)
                hrefs[href] = el.text_lexbor()

    def _other(self, el: LexborNode, tag: int, top: bool) -> str | None:
        """Take what element *el* (not an ``<a>``, tag id *tag*) gives; return its link,
        if any ("" for an attribute without a value)."""
        if tag == _AREA:
            return _value(el.attrs, "href")
        if tag == _LINK:
            attrs = el.attrs
            rels = set((attrs.get("rel") or "").lower().split())
            if rels.isdisjoint(_LINK_RELS) or not rels.isdisjoint(_NOT_PAGES):
                return None
            return _value(attrs, "href")
        if tag in _FRAMES:
            self.frames += tag == _FRAME
            self.hidden.append(el)  # an iframe's content is its fallback, as raw text
            return _value(el.attrs, "src")
        if tag == _META:
            attrs = el.attrs
            name = attrs.get("name")
            if name and name.strip().lower() == "robots":
                self.robots.append(attrs.get("content") or "")
                return None
            equiv = attrs.get("http-equiv")
            if not (equiv and equiv.strip().lower() == "refresh"):
                return None
            return _refresh_url(attrs.get("content") or "")
        if tag == _BASE:
            if self.base is None:
                self.base = _value(el.attrs, "href")
        elif tag == _TITLE:
            if self.title is None:
                self.title = " ".join(el.text().split())
        elif tag == _NOFRAMES:  # raw text to an HTML5 parser, markup to lxml and to us
            self.hidden.append(el)
            if top:
                fragment = LexborHTMLParser(el.text(), is_fragment=True, options=_NO_EVENTS)
                self.walk(fragment, top=False)
        elif tag == _TEMPLATE:  # its content is a fragment outside the tree (no text)
            if top:
                for fragment in el.template_fragments():
                    self.walk(fragment, top=False)
        else:  # script, style, noembed
            self.hidden.append(el)
        return None

    def dropped_frames(self, data: bytes) -> None:
        """Add the ``<frame src>`` of *data* (when the tree builder dropped them all)."""
        for match in _FRAME_SRC.finditer(data):
            src = (match[1] or match[2] or match[3] or b"").decode("utf-8", "replace")
            self.hrefs.setdefault(html.unescape(src), "")


def _find(data: bytes, counts: tuple[int, ...]) -> tuple[LexborHTMLParser, _Walk] | None:
    """The tree of the (defused) page *data* and what its walk finds (*counts* as
    ``_defused`` gives them); None if it cannot be parsed."""
    try:
        tree = LexborHTMLParser(data, options=_NO_EVENTS)
    except (SelectolaxError, ValueError):
        return None
    names = {name: count for name, count in zip(_NAMES, counts, strict=True) if count}
    found = _Walk(_selector(tuple(names)))
    if any(tree.tags(name) for name in _HOSTS if name in names):
        found.walk(tree)
    else:
        found.walk_names(tree, {n: c for n, c in names.items() if n not in _HOSTS})
    if "frame" in names and not found.frames:
        found.dropped_frames(data)
    return tree, found


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
    data, counts, levels = _defused(_utf8(body, charset))
    parsed = _find(data, counts)
    if parsed is None:
        return ParsedPage()
    tree, found = parsed

    directives = set(",".join(found.robots).lower().replace(",", " ").split())
    noindex = bool(directives & {"noindex", "none"})
    nofollow = bool(directives & {"nofollow", "none"})

    page_links: list[str] = []
    anchors: list[str] = []
    page_url = parse(url)
    if page_url is not None and not nofollow and found.hrefs:
        base = page_url
        if found.base is not None:
            base = resolve(found.base, page_url) or page_url
        page_links, anchors = links.resolve_anchored(found.hrefs, base)

    title = found.title or ""
    text = b""
    headings: dict[str, str] = {}
    if not noindex:
        for el in found.hidden:
            el.decompose(False)
        body_el = tree.body
        if body_el is not None:
            text = body_el.text_lexbor().encode()
        text = title.encode() + b"\n" + text
        for level in levels:  # a walk of the tree each
            texts = [el.text_lexbor() for el in tree.tags(f"h{level}")]
            name = f"h{min(level, 5)}"
            headings[name] = "\n".join([headings[name], *texts] if name in headings else texts)
    return ParsedPage(page_links, text, title, noindex, nofollow, anchors, headings)
