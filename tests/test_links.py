"""Tests for bspcrawl.robots.links: link and text extraction from one lexbor tree."""

from __future__ import annotations

import random
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bspcrawl.robots.links import LinkCache, ParsedPage, parse_html
from bspcrawl.urls import resolve

PAGE = "http://example.org/docs/guide/page.html?x=1"


def links_of(html: str | bytes, url: str = PAGE, cache: LinkCache | None = None) -> list[str]:
    body = html.encode() if isinstance(html, str) else html
    return parse_html(body, url, cache if cache is not None else LinkCache()).links


def test_each_source_element() -> None:
    html = """<html><head>
    <link rel="canonical" href="/canon"><link rel="alternate" hreflang="fr" href="fr.html">
    <link rel="NEXT" href="p2.html"><link rel="stylesheet" href="s.css">
    <link rel="alternate stylesheet" href="alt.css"><link rel="icon" href="i.ico">
    <link rel="prefetch" href="pf.html"><link href="norel.html">
    </head><body>
    <a href="a.html">a</a><a name="x">no href</a>
    <map><area href="area.html"></map>
    <iframe src="if.html"></iframe><frameset><frame src="fr1.html"></frameset>
    <img src="img.png"><script src="s.js"></script>
    </body></html>"""
    base = "http://example.org/docs/guide/"
    assert links_of(html) == [
        "http://example.org/canon", base + "fr.html", base + "p2.html", base + "a.html",
        base + "area.html", base + "if.html", base + "fr1.html",
    ]


def test_meta_refresh() -> None:
    for content, target in [
        ("0; url=r.html", "r.html"), ("5;URL='q.html'", "q.html"), ('0; url="d.html"', "d.html"),
        ("3, url=c.html", "c.html"), ("0;http://other.org/x", "http://other.org/x"),
    ]:
        quote = "'" if '"' in content else '"'
        html = f'<meta http-equiv="Refresh" content={quote}{content}{quote}><a href="z.html">z</a>'
        expected = resolve(target, PAGE)
        assert links_of(html) == [expected, "http://example.org/docs/guide/z.html"], content
    assert links_of('<meta http-equiv="refresh" content="30">') == []
    assert links_of('<meta http-equiv="content-type" content="text/html; url=x.html">') == []


def test_base_href_relative_and_absolute() -> None:
    rel = '<head><base href="../other/"></head><a href="x.html">x</a><a href="/y">y</a>'
    assert links_of(rel) == ["http://example.org/docs/other/x.html", "http://example.org/y"]
    absolute = '<base href="https://cdn.example.net/root/"><a href="x.html">x</a>'
    assert links_of(absolute) == ["https://cdn.example.net/root/x.html"]
    # the first <base href> counts, wherever it is; a bad one is ignored
    late = '<a href="x.html">x</a><base href="/late/"><base href="/ignored/">'
    assert links_of(late) == ["http://example.org/late/x.html"]
    assert links_of('<base href="javascript:void(0)"><a href="x">x</a>') == [
        "http://example.org/docs/guide/x"]
    assert links_of('<base target="_top"><base href="/b/"><a href="x">x</a>') == [
        "http://example.org/b/x"]


def test_fragments_are_cut() -> None:
    html = '<a href="#top">t</a><a href="a.html#s1">1</a><a href="a.html#s2">2</a><a href="#">e</a>'
    assert links_of(html) == ["http://example.org/docs/guide/page.html?x=1",
                              "http://example.org/docs/guide/a.html"]
    # cut before resolution, so a space before the "#" is trailing (WHATWG keeps it: "b%20")
    cache = LinkCache()
    for _ in range(2):
        assert links_of('<a href="b.html #s">b</a><a href=" #x">s</a><a href="?q #y">q</a>',
                        cache=cache) == [BASE + "b.html", PAGE, BASE + "page.html?q"]


def test_duplicates_keep_first_position() -> None:
    html = ('<a href="b.html">b</a><a href="a.html">a</a><a href="./b.html">b again</a>'
            '<a href="http://EXAMPLE.org:80/docs/guide/a.html">a again</a><a href="c.html">c</a>')
    base = "http://example.org/docs/guide/"
    assert links_of(html) == [base + "b.html", base + "a.html", base + "c.html"]


def test_non_http_schemes_are_dropped() -> None:
    html = ('<a href="javascript:void(0)">j</a><a href="mailto:a@b.org">m</a>'
            '<a href="data:text/html,hi">d</a><a href="tel:+1">t</a><a href="ftp://f/x">f</a>'
            '<a href="http://">bad</a><a href="https://ok.org/">ok</a>')
    assert links_of(html) == ["https://ok.org/"]


def test_query_and_empty_hrefs_use_the_whole_page_url() -> None:
    html = '<a href="?y=2">q</a><a href="">same</a><a href=" \t">blank</a>'
    assert links_of(html) == ["http://example.org/docs/guide/page.html?y=2", PAGE]


def test_nofollow_and_noindex() -> None:
    body = "<title>T</title><p>words</p><a href='a.html'>a</a>"
    page = parse_html(f'<meta name="robots" content="noindex, NOFOLLOW">{body}'.encode(),
                      PAGE, LinkCache())
    assert (page.links, page.text, page.noindex, page.nofollow) == ([], b"", True, True)
    page = parse_html(f'<meta name="Robots" content="nofollow">{body}'.encode(), PAGE, LinkCache())
    assert page.links == [] and page.nofollow and not page.noindex and b"words" in page.text
    page = parse_html(f'<meta name="robots" content="noindex">{body}'.encode(), PAGE, LinkCache())
    assert page.links and page.noindex and page.text == b""
    page = parse_html(f'<meta name="robots" content="none">{body}'.encode(), PAGE, LinkCache())
    assert page.noindex and page.nofollow
    page = parse_html(f'<meta name="description" content="nofollow">{body}'.encode(), PAGE,
                      LinkCache())
    assert not page.noindex and not page.nofollow and page.links


def test_text_and_title() -> None:
    html = """<html><head><title>  The
      Title </title><style>h1 { color: red }</style><script>var head = 1;</script></head>
    <body><h1>Heading</h1><script>var secret = "script text";</script>
    <p>Body <b>bold</b> text</p><style>.x{}</style><noscript>fallback</noscript>
    <!-- a comment --></body></html>"""
    page = parse_html(html.encode(), PAGE, LinkCache())
    assert page.title == "The Title"
    assert page.text.startswith(b"The Title\n")
    for word in (b"Heading", b"Body bold text", b"fallback"):
        assert word in page.text
    for word in (b"secret", b"color", b"head = 1", b"comment"):
        assert word not in page.text


def test_meta_charset_non_utf8_page() -> None:
    html = ('<html><head><meta charset="windows-1252"><title>Caf\xe9</title></head>'
            '<body><p>na\xefve \u201cquotes\u201d</p><a href="caf\xe9.html">c</a></body></html>')
    page = parse_html(html.encode("cp1252"), PAGE, LinkCache())
    assert page.title == "Café"
    assert "naïve “quotes”".encode() in page.text
    assert page.links == ["http://example.org/docs/guide/caf%C3%A9.html"]


def test_utf8_without_declaration_and_http_charset() -> None:
    html = "<p>日本語 café</p><a href='ü.html'>u</a>".encode()
    page = parse_html(html, PAGE, LinkCache())
    assert "日本語 café".encode() in page.text
    assert page.links == ["http://example.org/docs/guide/%C3%BC.html"]
    latin = "<p>café</p>".encode("latin-1")
    assert "café".encode() in parse_html(latin, PAGE, LinkCache(), charset="ISO-8859-1").text
    assert "café".encode() in parse_html(latin, PAGE, LinkCache()).text  # not UTF-8: Latin-1
    assert b"<p>" not in parse_html(latin, PAGE, LinkCache(), charset="no-such-charset").text


@pytest.mark.parametrize(
    "body",
    [b"", b"   ", b"\x00" * 64, bytes(range(256)) * 8, b"\xff\xfe\x00\x00garbage",
     b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n1 0 obj", b"<", b"<a href=", b"<html><body></body>"],
)
def test_empty_or_garbage_bodies_never_raise(body: bytes) -> None:
    page = parse_html(body, PAGE, LinkCache())
    assert isinstance(page, ParsedPage)
    assert page.links == []


def test_bad_page_url_gives_no_links_but_text() -> None:
    page = parse_html(b"<p>hello</p><a href='a.html'>a</a>", "not a url", LinkCache())
    assert page.links == [] and b"hello" in page.text
    assert parse_html(b"<a href='a.html'>a</a>", "ftp://h/", LinkCache()).links == []


def test_order_is_deterministic_and_cache_independent() -> None:
    hrefs = [f"p{i % 37}.html#f{i}" if i % 3 else f"/d{i % 11}/x?{i % 5}" for i in range(300)]
    html = "".join(f'<a href="{h}">{i}</a>' for i, h in enumerate(hrefs))
    cache = LinkCache()
    first = links_of(html, cache=cache)
    assert links_of(html, cache=cache) == first  # warm cache
    assert links_of(html) == first  # fresh cache
    expected = list(dict.fromkeys(resolve(h, PAGE) for h in hrefs))
    assert first == expected


def test_cache_is_bounded() -> None:
    cache = LinkCache(capacity=50)
    for d in range(20):
        html = "".join(f'<a href="p{i}.html">x</a>' for i in range(30))
        got = links_of(html, url=f"http://example.org/d{d}/index.html", cache=cache)
        assert len(got) == 30
        assert cache.entries <= 50 + 30
    assert cache.clears > 0
    with pytest.raises(ValueError):
        LinkCache(capacity=0)


# -- the cache gives what resolution without it gives --------------------------

_href_part = st.sampled_from(
    ["a", "b.html", "..", ".", "/", "//", "\\", "?", "#", "q=1", "%41", "%zz", " ", "\t", "\n",
     "http:", "https:", "//other.org", "http://x.org/", "javascript:", "mailto:a@b", "é",
     "::", "@", ";p", "&", "=", "//[::1]", ":8080", "data:,", "../", "./", "~u-2_", "c.d/",
     ".x", "..."]
)
_hrefs = st.lists(st.lists(_href_part, max_size=5).map("".join), min_size=1, max_size=12)
_any_hrefs = st.lists(  # also with a lone surrogate, which no URL (and no page) can hold
    st.lists(_href_part | st.just("\ud800"), max_size=5).map("".join), min_size=1, max_size=12)
_page_urls = st.sampled_from(
    ["http://example.org/", "http://example.org/a/", "http://example.org/a/b.html",
     "http://example.org/a/b.html?q=1", "http://example.org/a/c.html?q=2",
     "http://example.org/a/b/c/", "http://example.org:8080/a/b.html",
     "https://example.org/a/b.html", "https://other.org/a/b.html?z", "http://127.1.0.5:81/x/y",
     "http://example.org/a/b/c/d.html?q=/e/f"]
)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(_page_urls, _any_hrefs), min_size=1, max_size=8),
       st.sampled_from([1, 4, 1 << 17]))
def test_cache_gives_the_same_links_as_no_cache(pages: list, capacity: int) -> None:
    cache = LinkCache(capacity=capacity)
    for url, hrefs in pages:
        expected = list(dict.fromkeys(
            r for r in (resolve(h.partition("#")[0], url) for h in hrefs) if r is not None))
        assert cache.resolve_unique(dict.fromkeys(hrefs), url) == expected  # as in the markup
        assert cache.resolve_unique([h.partition("#")[0] for h in hrefs], url) == expected


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(_page_urls, _hrefs), min_size=1, max_size=6))
def test_parse_html_with_shared_cache_equals_fresh_cache(pages: list) -> None:
    shared = LinkCache()
    for url, hrefs in pages:
        html = "".join(f"<a href='{h.replace(chr(39), '')}'>x</a>" for h in hrefs).encode()
        assert parse_html(html, url, shared) == parse_html(html, url, LinkCache())


@pytest.mark.parametrize("href", ["http:", "HTTP:", "http:?q=1", "ht\ttp:x.html", "https:",
                                  "http:/root.html", "HTTP://example.org/abs.html"])
def test_scheme_relative_hrefs_are_not_shared_between_pages_of_a_directory(href):
    shared = LinkCache()
    for url in ("http://example.org/a/", "http://example.org/a/b.html?x=1"):
        html = f'<a href="{href}">x</a>'.encode()
        assert parse_html(html, url, shared).links == parse_html(html, url, LinkCache()).links


# -- the HTML5 tree ----------------------------------------------------------------

BASE = "http://example.org/docs/guide/"


def test_misnested_and_unclosed_markup() -> None:
    html = ("<p>one <b>two <i>three</b> four</i> five<p>six <a href='a.html'>a<div>in div</a>"
            "<table><tr><td>cell <a href='t.html'>t</a><td>next</table><ul><li>x<li>y</ul>"
            "</span></div></p></body></html><a href='b.html'>b")
    page = parse_html(html.encode(), PAGE, LinkCache())
    assert page.links == [BASE + "a.html", BASE + "t.html", BASE + "b.html"]
    for word in (b"one two three four five", b"six", b"in div", b"cell", b"next", b"xy"):
        assert word in page.text


def test_attribute_without_value_and_bad_frames() -> None:
    assert links_of("<a href>self</a><a>no href</a><iframe>x</iframe><iframe src>") == [PAGE]


def test_svg_xlink_href_is_no_href() -> None:
    """In <svg>, lexbor's [href] also matches xlink:href (the same local name)."""
    html = ("<svg><a xlink:href='x.html'>x</a><a href='s.html'>s</a>"
            "<link rel=canonical xlink:href='l.html'><base xlink:href='/b/'></svg>"
            "<a href='y.html'>y</a><template><svg><a xlink:href='t.html'>t</a></svg></template>")
    assert links_of(html) == [BASE + "s.html", BASE + "y.html"]


def test_links_of_every_element_in_document_order() -> None:
    """The same order whether the tree is walked by tag name (with an <a> marker before
    each other link element) or, with a <template>, by one CSS query."""
    html = ("<head><link rel=next href='n.html'><meta http-equiv=refresh content='0;url=r.html'>"
            "</head><body><a href='a1.html'>1</a><iframe src='i.html'></iframe><a href='n.html'>"
            "<map><area href='m.html'></map><link rel=canonical href='c.html'><a href='a2.html'>"
            "<meta http-equiv=refresh content='9;url=a1.html'><a href=''>self</a>"
            "<meta http-equiv=refresh content=\"1; url='late.html'\">")
    expected = [BASE + name for name in ("n.html", "r.html", "a1.html", "i.html", "m.html",
                                         "c.html", "a2.html")] + [PAGE, BASE + "late.html"]
    assert links_of(html) == expected
    assert links_of(html + "<template><a href='t.html'></template>") == expected + [BASE + "t.html"]


def test_head_elements_also_in_the_body() -> None:
    """Where the <head> holds all elements of a name the markup may have, the walk takes
    them there; else from the whole tree."""
    html = ("<html><head><title>Head title</title><script>var s1;</script><style>.a{}</style>"
            "<meta name=description content=x><link rel=stylesheet href=s.css></head><body>"
            "<p>text</p><script>var s2;</script><style>.b{}</style><title>Body title</title>"
            "<meta name=robots content=noindex><a href='a.html'>a</a>"
            "<link rel=alternate href='alt.html'><time>now</time><ul><li>item</ul></body>")
    page = parse_html(html.encode(), PAGE, LinkCache())
    assert page.title == "Head title" and page.noindex and page.text == b""
    assert page.links == [BASE + "a.html", BASE + "alt.html"]
    page = parse_html(html.replace("noindex", "x").encode(), PAGE, LinkCache())
    assert page.text == b"Head title\ntextBody titleanowitem"


def test_noframes_template_and_hidden_text() -> None:
    html = ("<p>shown<template><a href='tpl.html'>t</a>template text</template>"
            "<iframe src='if.html'>iframe fallback</iframe><noembed>noembed text</noembed>"
            "<noframes><a href='nf.html'>noframes text</a></noframes><a href='z.html'>z</a>")
    page = parse_html(html.encode(), PAGE, LinkCache())
    assert page.links == [BASE + "tpl.html", BASE + "if.html", BASE + "nf.html", BASE + "z.html"]
    assert page.text == b"\nshownz"
    frameset = "<frameset><frame src='f1.html'><frame src='f2.html'><noframes><a href='n.html'>"
    assert links_of(frameset) == [BASE + "f1.html", BASE + "f2.html", BASE + "n.html"]


def test_nul_bytes_and_control_characters() -> None:
    body = b"\x00" * 1000 + b"<p>a\x00b\x01c</p><a href='x\x00y.html'>\x00</a>" + b"\x00" * 1000
    page = parse_html(body, PAGE, LinkCache())
    assert b"\x00" not in page.text and b"ab\x01c" in page.text
    assert page.links == [BASE + "x%EF%BF%BDy.html"]


def test_huge_attribute_value() -> None:
    href = "p" * 5_000_000
    start = time.process_time()
    page = parse_html(f"<a href='{href}'>x</a><a href='after.html'>".encode(), PAGE, LinkCache())
    assert time.process_time() - start < 2  # timing: a quadratic scan takes minutes here
    assert page.links == [BASE + href, BASE + "after.html"]


def test_five_megabyte_page() -> None:
    chunk = "<div><p>some words <b>bold</b> <a href='p{}.html#s'>link</a></p></div>\n"
    body = "".join(chunk.format(i % 5000) for i in range(80_000)).encode()
    assert len(body) > 5_000_000
    start = time.process_time()
    page = parse_html(body, PAGE, LinkCache())
    assert time.process_time() - start < 3  # timing: a quadratic scan takes minutes here
    assert page.links == [f"{BASE}p{i}.html" for i in range(5000)]
    assert page.text.count(b"some words bold link") == 80_000


def _deep(open_: str, close: str = "", n: int = 10_000) -> bytes:
    """*n* levels of *open_* around a link, then their *close* and another link."""
    return (f"<p>top</p>{open_ * n}<a href='bottom.html'>bottom</a>{close * n}"
            f"<a href='after.html'>after</a>").encode()


def _numbered(template: str, n: int) -> str:
    return "".join(template.format(i) for i in range(n))


HOSTILE = {  # name: markup that costs seconds or minutes to an HTML5 tree builder unguarded
    "div": _deep("<div>", "</div>"),
    "unclosed div": _deep("<div>", n=100_000),
    "ul li": _deep("<ul><li>", "</li></ul>"),
    "dl dd": _deep("<dl><dd>"),
    "span": _deep("<span class=x>", "</span>"),
    "custom elements": (_numbered("<x-{}>", 20_000) + "<a href='bottom.html'>b</a>"
                        "<a href='after.html'>a</a>").encode(),
    "stray end tags": _deep("<div></span></dl>", n=50_000),
    "table": _deep("<table><tr><td>", n=20_000),
    # lexbor issue #340: adoption agency and reconstruction of active formatting elements
    "b i adoption": (_numbered("<b {}>", 2000) + _numbered("<i {}>", 2000) + "x</b>" * 2000
                     + "<a href='bottom.html'>b</a><a href='after.html'>a</a>").encode(),
    "formatting storm": ("<div>" + _numbered("<b {}>", 64) + "</div>"
                         + "<div>x <a href='bottom.html'>b</a></div>" * 50_000
                         + "<a href='after.html'>a</a>").encode(),
    "html attributes": (_numbered("<html a{}=1>", 50_000) + "<a href='bottom.html'>b</a>"
                        + _numbered("<body b{}=1>", 50_000) + "<a href='after.html'>a</a>"
                        ).encode(),
    "select options": ("<select>" + _numbered("<option value={0}>{0}", 50_000) + "</select>"
                       "<a href='bottom.html'>b</a><a href='after.html'>a</a>").encode(),
}


@pytest.mark.parametrize("name", HOSTILE)
def test_hostile_markup_parses_in_linear_time_with_its_links(name: str) -> None:
    body = HOSTILE[name]
    start = time.process_time()
    page = parse_html(body, PAGE, LinkCache())
    seconds = time.process_time() - start
    # timing: this markup costs minutes unguarded; CPU time, a second a megabyte at most
    assert seconds < max(1.0, len(body) / 1e6), (name, len(body), seconds)
    assert page.links == [BASE + "bottom.html", BASE + "after.html"]


def test_flattened_page_keeps_its_text_and_links_in_order() -> None:
    body = "".join(f"<div><a href='p{i}.html'>w{i}</a> " for i in range(2000)).encode()
    page = parse_html(body, PAGE, LinkCache())
    assert page.links == [f"{BASE}p{i}.html" for i in range(2000)]
    assert page.text == b"\n" + "".join(f"w{i} " for i in range(2000)).encode()


MARKUP = (
    ["<div>", "</div>", "<p>", "<b x=1>", "</b>", "<i>", "</i>", "<a href='a.html'>", "</a>",
     "<table>", "<td>", "<li>", "<ul>", "<select>", "<option>", "<html a=1>", "<body>",
     "<script>", "</script>", "<style>", "<!--", "-->", "<template>", "</template>",
     "<noframes>", "<frame src='f.html'>", "<svg>", "<math>", "<title>", "<base href='/b/'>",
     "<meta name=robots content=nofollow>", "<iframe src=x>", "<", ">", "&amp;", "&#0;", "\x00",
     "word ", "é", "\ufffd", "<a href=#x>", "<frameset>", "</html>", "<plaintext>", "<xmp>"]
)
_markup = st.sampled_from(MARKUP)


@settings(max_examples=300, deadline=None)
@given(st.lists(_markup, max_size=60).map("".join), st.sampled_from([None, "utf-8", "latin-1"]))
def test_any_markup_parses(html: str, charset: str | None) -> None:
    body = html.encode("utf-8")
    page = parse_html(body, PAGE, LinkCache(), charset=charset)
    assert all(link.startswith(("http://", "https://")) for link in page.links)
    assert len(page.links) == len(set(page.links))


def test_long_random_markup_parses_fast() -> None:
    """Pages past the quick check (many tags, formatting elements): the scan's full path."""
    alphabet = MARKUP + ["<font size=3>", "<Strong>", "<x-y>", "</span>", "<dl><dd>", "<h1>",
                         "<button>", "<em>", "<u>", "<nobr>", "<BODY x>", "<select>"]
    for seed in range(30):
        rng = random.Random(seed)
        weights = [rng.random() ** 3 for _ in alphabet]
        body = "".join(rng.choices(alphabet, weights, k=5000)).encode()
        start = time.process_time()
        page = parse_html(body, PAGE, LinkCache())
        assert time.process_time() - start < 1.0  # timing: quadratic would take minutes
        assert all(link.startswith(("http://", "https://")) for link in page.links)


# -- character sets ---------------------------------------------------------------


def test_whatwg_character_sets() -> None:
    def text(body: bytes, charset: str | None = None) -> str:
        return parse_html(body, PAGE, LinkCache(), charset=charset).text.decode()

    # undeclared and not UTF-8: windows-1252 (curly quotes, the euro sign, its 5 holes)
    assert "“price” 5€ \x81" in text("<p>“price” 5€ </p>".encode("cp1252") + b"\x81")
    # ISO-8859-1 and ASCII labels are windows-1252, as in browsers
    for label in ("iso-8859-1", "ascii", "latin1"):
        assert "“q”" in text(b"<p>\x93q\x94</p>", label)
        assert "“q”" in text(f'<meta charset="{label}"><p>'.encode() + b"\x93q\x94</p>")
    # the HTTP charset wins over <meta>, a BOM over both
    assert "café" in text('<meta charset="utf-8"><p>café</p>'.encode("latin-1"), "iso-8859-1")
    assert "café" in text(b"\xef\xbb\xbf" + "<p>café</p>".encode(), "iso-8859-1")
    utf16 = "\ufeff<p>héllo</p><a href='x.html'>x</a>".encode("utf-16-le")
    page = parse_html(utf16, PAGE, LinkCache(), charset="iso-8859-1")
    assert "héllo" in page.text.decode() and page.links == [BASE + "x.html"]
    # <meta http-equiv>, GB2312 read as GB18030, a UTF-16 <meta> in an ASCII document
    equiv = '<meta http-equiv="Content-Type" content="text/html; charset=koi8-r"><p>мир</p>'
    assert "мир" in text(equiv.encode("koi8-r"))
    assert "中文" in text('<meta charset="gb2312"><p>中文</p>'.encode("gb18030"))
    assert "café" in text('<meta charset="utf-16"><p>café</p>'.encode())
    # a label WHATWG does not support (UTF-7) or does not know is no label
    assert "+AGEAYgBj-" in text(b"<p>+AGEAYgBj-</p>", "utf-7")
    assert "café" in text('<meta charset="x-nonsense"><p>café</p>'.encode())
    # invalid bytes in a declared encoding become U+FFFD
    assert "caf\ufffd" in text(b"<p>caf\xe9</p>", "utf-8")
