"""The links and index text of a fetched HTML page, from one lexbor (HTML5) tree.

- Links, unique and in document order, come from ``a``/``area[href]``, ``link[href]`` with
  rel canonical, alternate or next, ``frame``/``iframe[src]`` and meta refresh (also inside
  ``<template>`` and ``<noframes>``), resolved (WHATWG) against the first ``<base href>``,
  http(s) only. ``<meta name="robots">`` noindex/nofollow drop the text/the links.
- Index text: title and visible body text, each link's anchor text, headings by level.
- Charset in WHATWG's order: BOM, HTTP charset, ``<meta>`` in the first 1024 bytes, else
  UTF-8 if valid, else windows-1252; labels mapped as in WHATWG's Encoding standard.
- Hostile markup: HTML5 tree building is quadratic in the nesting depth and lexbor has no
  cap (browsers do), so the start tags past ``MAX_DEPTH`` (or ``MAX_FORMATTING`` open
  formatting elements), and extra ``<html>``/``<body>``, become bogus comments: the page
  parses flatter, in linear time, keeping its text and links.
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

MAX_DEPTH = 128  # nesting depth of a parsed page
MAX_FORMATTING = 4  # open <b>, <i>, <font>...: each is re-opened in every new block

_ABSOLUTE = ("http://", "https://")
_UNRESOLVABLE = ""  # cached result of an href that gives no http(s) URL
_SELF = "#"  # cached result of an href that is the base itself ("", "#top", ...)
_PLAIN = re.compile(r"(?!$)((?:\.\.?/)*)((?:[\w~-][\w.~-]*(?:/[\w~-][\w.~-]*)*/?)?)",
                    re.ASCII)
"""A relative path of plain segments after "./" and "../": resolved without ada-url by
popping a directory per "../" and appending the rest."""
_C0_OR_SPACE = "".join(map(chr, range(0x21)))  # what WHATWG strips from both ends
_TAB_OR_NEWLINE = dict.fromkeys(map(ord, "\t\n\r"))  # what WHATWG removes everywhere
_LINK_RELS = frozenset(("canonical", "alternate", "next"))
_NOT_PAGES = frozenset(("stylesheet", "icon"))
_REFRESH = re.compile(r"""\s*[\d.]*\s*[;,]?\s*(?:url\s*=\s*)?(['"]?)(.*)""", re.I | re.S)


@dataclass(slots=True)
class ParsedPage:
    """What one HTML page gives the crawler and the index."""

    links: Sequence[str] = field(default_factory=list)
    """Absolute http(s) URLs without fragment, unique, in first-seen document order."""
    text: bytes = b""
    """UTF-8 title, newline, visible body text. BEWARE: text nodes are joined as they are,
    so "<li>a</li><li>b</li>" gives "ab"."""
    title: str = ""
    noindex: bool = False
    nofollow: bool = False
    anchors: Sequence[str] = field(default_factory=list)
    """Each link's anchor text: its first href's (the first non-empty text of that href's
    ``<a>``; '' for the page itself)."""
    headings: dict[str, str] = field(default_factory=dict)
    """``"h1"`` ... ``"h5"`` (``<h6>`` counts as h5): the headings' text, one a line."""


class LinkCache:
    """Per-crawl memo of link resolution, keyed by the part of the base an href depends on.

    Absolute hrefs share one bucket, "/..." hrefs one per origin, "?..." one bucket of
    queries, "http:x" (scheme-relative to the whole base) bypass it, the rest are keyed by
    the base's directory, where every resolved href is also copied so that the next page
    of a directory resolves with ``map(dict.get)``. Cleared whole when past *capacity*
    entries. Not thread-safe: one per parsing thread.
    """

    __slots__ = ("_buckets", "_size", "capacity", "clears")

    def __init__(self, capacity: int = DEFAULT_LINK_CACHE_ENTRIES) -> None:
        if capacity < 1:
            raise ValueError(f"LinkCache capacity must be positive, got {capacity}")
        self.capacity = capacity
        self._buckets: dict[str, dict[str, str]] = {}  # href -> URL
        self._size = 0
        self.clears = 0

    @property
    def entries(self) -> int:
        return self._size

    def resolve_unique(self, hrefs: Iterable[str], base: str) -> list[str]:
        """What ``bspcrawl.urls.resolve`` gives for each href, "#fragment" cut off, against
        *base* (resolved form): the http(s) URLs, unique, in first-seen order."""
        return self.resolve_anchored(dict.fromkeys(hrefs, ""), base)[0]

    def resolve_anchored(self, hrefs: dict[str, str], base: str
                         ) -> tuple[list[str], list[str]]:
        """:meth:`resolve_unique` of ``{href: anchor text}``, and each URL's anchor text:
        its first href's ('' for the base itself)."""
        urls = self._resolve(hrefs, base)
        found = dict(zip(urls, hrefs.values(), strict=True))  # first-seen order, last text
        if len(found) < len(urls):  # a URL of two hrefs: the first one's text
            found.update(zip(reversed(urls), reversed(hrefs.values()), strict=True))
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
            self._buckets.clear()
            self._size = 0
            self.clears += 1
        query = base.find("?")
        directory = base[: base.rfind("/", 0, query if query >= 0 else len(base)) + 1]
        near = self._buckets.setdefault(directory, {})
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
                        if url is None:  # text no URL can hold (a lone surrogate)
                            urls.append(_UNRESOLVABLE)
                            continue
                        query = queries[cut] = url[len(path) :]
                        self._size += 1
                    urls.append(path + query)
                    continue
                if _same_scheme(stripped):  # "http:", "https:?q": relative to all the base
                    urls.append(resolve(cut, base) or _UNRESOLVABLE)
                    continue
                far = None
            url = None if far is None else far.get(cut)
            if url is None:
                url = resolve(cut, base) or _UNRESOLVABLE
                if far is not None:
                    far[cut] = url
                    self._size += 1
            near[href] = url
            self._size += 1
            urls.append(url)
        return urls


def _same_scheme(href: str) -> bool:
    """"http:x" without "//": WHATWG resolves it against the whole base of that scheme."""
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
    """The Python codec of charset *label* as WHATWG reads it, or None."""
    name = label.strip().strip("\"'").strip().lower()
    try:
        name = codecs.lookup(_LABELS.get(name, name)).name
    except (LookupError, ValueError):
        return None
    name = _WHATWG.get(name, name)
    return name if name in _SUPPORTED else None


def _utf8(body: bytes, charset: str | None) -> bytes:
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

_QUICK_TAGS, _QUICK_STYLES = 1500, 64  # fewer "<" (formatting "<") than this: no scan
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
    """A tag name's first 7 bytes, little-endian (as ``_tags`` reads them)."""
    return int.from_bytes(name[:7].ljust(8, b"\0"), "little")


def _table(names: bytes) -> np.ndarray:
    """A hash set: ``table[key % _BUCKETS] == key`` for the keys of *names*."""
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
_LOWER = _U(0x2020202020202020)  # ASCII letters to lower case


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
    """A 16-bucket hash set of ``_NAMES``' first 4 letters (bucket: the top 4 bits of
    key * ``_NAME_HASH``), and each name's bucket."""
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
    """The tags at offsets *lt* (before the last 9 bytes) as (offset, ``_key`` lower-cased,
    end tag?), found with SWAR: the lowest flagged byte of ``(x - 0x0101..) & ~x & 0x8080..``
    is x's first zero byte."""
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
    """Per tag, the elements of its name open after it (start minus end tags, never below
    zero) as (order, first, count): counts sorted by name then document order, ``first``
    where each name starts."""
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
    # the running minimum per name: each later name offset below the earlier ones
    offset = group * (2 * len(key) + 2)
    low = np.minimum.accumulate(count - offset) + offset
    return order, first, count - np.minimum(low, 0)


def _defused(data: bytes) -> tuple[bytes, tuple[int, ...], list[int]]:
    """*data* safe to parse (see the module doc), an upper bound of the count of each of
    ``_NAMES``, and the heading levels (1 to 6) present."""
    n = len(data) - 4
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
    # lexbor merges each extra <html>/<body>'s attributes by a linear search: past 16, rename
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
            # the depth bound after each tag, in document order
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
    return ",".join(("a[href]", *names))


def _value(attrs: LexborAttributes, name: str) -> str | None:
    """Attribute *name*'s value ("" if it has none), None if absent."""
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
    """What one walk over the link elements of a tree finds: by a CSS query (``walk``,
    which also enters ``<template>`` and ``<noframes>``) or tag name by tag name."""

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
        """Walk *tree* (no ``<template>``/``<noframes>``) for the names in *counts*, then
        its ``<a>``. Unless the ``<head>`` holds them all, each link element gets an empty
        ``<a>`` of its link inserted before it, keeping the links in document order."""
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
        """Record what non-``<a>`` element *el* gives; return its link, if any."""
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
        """Add the ``<frame src>`` of *data*, which the HTML5 tree builder dropped."""
        for match in _FRAME_SRC.finditer(data):
            src = (match[1] or match[2] or match[3] or b"").decode("utf-8", "replace")
            self.hrefs.setdefault(html.unescape(src), "")


def _find(data: bytes, counts: tuple[int, ...]) -> tuple[LexborHTMLParser, _Walk] | None:
    """The tree of defused *data* and what its walk finds; None if it cannot be parsed."""
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
    """Links and index text of the HTML page *body* fetched from *url* (*charset*: the
    server's). Bad input never raises: an empty page, or no links for a non-http(s) URL."""
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
        for level in levels:
            texts = [el.text_lexbor() for el in tree.tags(f"h{level}")]
            name = f"h{min(level, 5)}"
            headings[name] = "\n".join([headings[name], *texts] if name in headings else texts)
    return ParsedPage(page_links, text, title, noindex, nofollow, anchors, headings)
