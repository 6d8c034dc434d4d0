"""Tests for bspcrawl.robots.links: link and text extraction from one lxml tree."""

from __future__ import annotations

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
     "::", "@", ";p", "&", "=", "//[::1]", ":8080", "data:,"]
)
_hrefs = st.lists(st.lists(_href_part, max_size=5).map("".join), min_size=1, max_size=12)
_page_urls = st.sampled_from(
    ["http://example.org/", "http://example.org/a/", "http://example.org/a/b.html",
     "http://example.org/a/b.html?q=1", "http://example.org/a/c.html?q=2",
     "http://example.org/a/b/c/", "http://user:pw@example.org:8080/a/b.html",
     "https://example.org/a/b.html", "https://other.org/a/b.html?z", "http://127.1.0.5:81/x/y"]
)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(_page_urls, _hrefs), min_size=1, max_size=8),
       st.sampled_from([1, 4, 1 << 17]))
def test_cache_gives_the_same_links_as_no_cache(pages: list, capacity: int) -> None:
    cache = LinkCache(capacity=capacity)
    for url, hrefs in pages:
        expected = list(dict.fromkeys(
            r for r in (resolve(h.partition("#")[0], url) for h in hrefs) if r is not None))
        assert cache.resolve_unique(dict.fromkeys(h.partition("#")[0] for h in hrefs),
                                    url) == expected
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
