"""Tests for bspcrawl.urls: WHATWG conformance, canonical form, host key, fingerprints."""

from __future__ import annotations

import doctest
import json
import subprocess
import sys
from pathlib import Path

import ada_url
import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from bspcrawl import urls
from bspcrawl.urls import (
    canonical,
    fingerprint,
    fingerprints,
    host_hash,
    host_key,
    parse,
    registered_domain,
    resolve,
)

WPT = Path(__file__).parent / "conformance" / "url_wpt.json"
CASES = json.loads(WPT.read_text(encoding="utf-8"))["cases"] if WPT.exists() else []


def _cases(group: str) -> list:
    return [
        pytest.param(c, id=f"{group}-{c['id']}") for c in CASES if c["group"] == group
    ]


def _no_fragment(href: str) -> str:
    """The WPT hrefs keep fragments and userinfo; the crawler never does, so compare
    without."""
    href = href.partition("#")[0]
    scheme, sep, rest = href.partition("://")
    if not sep:
        return href
    authority, slash, path = rest.partition("/")
    return f"{scheme}{sep}{authority.rpartition('@')[2]}{slash}{path}"


def test_userinfo_is_never_kept() -> None:
    # issue 14: one "Location: http://user@h/" made every relative link of the page
    # inherit "user@", and the crawler fetched the whole host a second time
    assert parse("http://u:p@h.test/x#f") == "http://h.test/x"
    assert resolve("5", "http://u@h.test/p/3") == "http://h.test/p/5"
    assert resolve("//a:b@c.test/", "http://h.test/") == "http://c.test/"
    assert parse("http://h.test/a@b") == "http://h.test/a@b"  # an @ in the path stays
    assert urls.has_userinfo("http://u:p@h.test/") and not urls.has_userinfo("http://h/a@b")


def test_wpt_case_counts() -> None:
    if not CASES:
        pytest.skip(f"{WPT} not found")
    counts = {g: sum(c["group"] == g for c in CASES) for g in
              ("relative", "absolute", "relative-failure", "absolute-failure")}
    assert counts == {"relative": 113, "absolute": 116,
                      "relative-failure": 50, "absolute-failure": 154}


@pytest.mark.parametrize("case", _cases("relative"))
def test_wpt_relative(case: dict) -> None:
    assert resolve(case["input"], case["base"]) == _no_fragment(case["href"])


@pytest.mark.parametrize("case", _cases("absolute"))
def test_wpt_absolute(case: dict) -> None:
    assert parse(case["input"]) == _no_fragment(case["href"])


@pytest.mark.parametrize("case", _cases("relative-failure"))
def test_wpt_relative_failure(case: dict) -> None:
    assert resolve(case["input"], case["base"]) is None


@pytest.mark.parametrize("case", _cases("absolute-failure"))
def test_wpt_absolute_failure(case: dict) -> None:
    assert parse(case["input"]) is None


def test_doctests() -> None:
    assert doctest.testmod(urls).failed == 0


@pytest.mark.parametrize(
    "href",
    ["javascript:void(0)", "mailto:a@b.org", "data:text/html,x", "ftp://h/x", "tel:123",
     "http://", "http://exa mple.org/"],
)
def test_resolve_rejects(href: str) -> None:
    assert resolve(href, "http://example.org/a/b") is None


def test_resolve_basic() -> None:
    base = "http://example.org/a/b.html?q=1"
    assert resolve("c.html", base) == "http://example.org/a/c.html"
    assert resolve("../c.html#x", base) == "http://example.org/c.html"
    assert resolve("#top", base) == base
    assert resolve("", base) == base
    assert resolve("?z", base) == "http://example.org/a/b.html?z"
    assert resolve("//other.org", base) == "http://other.org/"
    assert resolve("HTTPS://Other.ORG:443/%7e?a#b", base) == "https://other.org/%7e?a"
    assert resolve("x", "not a url") is None


def test_canonical() -> None:
    assert canonical("HTTP://Example.ORG:80") == "http://example.org/"
    assert canonical("https://example.org:443/a/./b/../c#frag") == "https://example.org/a/c"
    assert canonical("http://example.org:8080/?b=2&a=1") == "http://example.org:8080/?b=2&a=1"
    assert canonical("http://münchen.de/") == "http://xn--mnchen-3ya.de/"
    for bad in ["", "/relative", "mailto:x@y", "http://"]:
        with pytest.raises(ValueError):
            canonical(bad)


@pytest.mark.parametrize(
    ("url", "key"),
    [
        ("http://127.1.0.5:8080/a", "127.1.0.5:8080"),
        ("https://example.org/", "example.org:443"),
        ("http://example.org", "example.org:80"),
        ("http://u:p@example.org/x", "example.org:80"),
        ("http://[::1]/", "[::1]:80"),
        ("https://[::1]:8443/x?y", "[::1]:8443"),
        ("http://example.org?q=a/b", "example.org:80"),
    ],
)
def test_host_key(url: str, key: str) -> None:
    assert host_key(url) == key


@pytest.mark.parametrize(
    ("key", "domain"),
    [
        ("en.m.wikipedia.org:443", "wikipedia.org"),
        ("www.example.co.uk:80", "example.co.uk"),
        ("a.b.github.io:443", "b.github.io"),  # the list's private section: a site each
        ("foo.blogspot.com:80", "foo.blogspot.com"),
        ("co.uk:80", "co.uk"),  # a public suffix stands for itself
        ("localhost:8080", "localhost"),
        ("127.1.0.5:8765", "127.1.0.5"),  # not 0.5: an address is no domain name
        ("[::1]:80", "[::1]"),
        ("xn--mgbh0fb.xn--kgbechtv:80", "xn--mgbh0fb.xn--kgbechtv"),
    ],
)
def test_registered_domain(key: str, domain: str) -> None:
    assert registered_domain(key) == domain


def test_host_key_rejects() -> None:
    with pytest.raises(ValueError):
        host_key("ftp://example.org/")


def test_fingerprints() -> None:
    a = fingerprint("http://example.org/a")
    assert a == fingerprint("http://example.org:80/a#frag")
    assert a == fingerprint("HTTP://EXAMPLE.org/a")
    assert a != fingerprint("https://example.org/a")
    assert -(2**63) <= a < 2**63
    batch = fingerprints(["http://example.org/a", "http://example.org/b#x"])
    assert batch.dtype == np.int64 and batch.shape == (2,)
    assert batch[0] == a and batch[1] == fingerprint("http://example.org/b")
    canon = ["http://example.org/a", "http://example.org/b"]
    assert list(fingerprints(canon, assume_canonical=True)) == list(fingerprints(canon))
    assert fingerprint(canon[0], assume_canonical=True) == a
    assert fingerprints([]).shape == (0,)


def test_host_hash_is_stable_across_processes() -> None:
    code = "from bspcrawl.urls import host_hash; print(host_hash('example.org:80'))"
    out = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True).stdout.strip() for _ in range(2)}
    assert out == {str(host_hash("example.org:80"))}
    assert 0 <= host_hash("example.org:80") < 2**63
    assert host_hash("a:80") != host_hash("a:443")


# -- properties ---------------------------------------------------------------

_segment = st.lists(
    st.sampled_from(list("abcXYZ019-._~%!$&'()*+,;=:@ é/\\") + ["..", "%2e", "%41", "ü"]),
    max_size=6,
).map("".join)
_host = st.sampled_from(
    ["example.org", "EXAMPLE.org", "127.0.0.1", "127.1.0.5", "[::1]", "münchen.de", "a.b"]
)
_port = st.sampled_from(["", ":80", ":443", ":8080", ":0"])


@st.composite
def _urls(draw: st.DrawFn) -> str:
    scheme = draw(st.sampled_from(["http", "https", "HTTP"]))
    path = "/".join(draw(st.lists(_segment, max_size=4)))
    query = draw(st.one_of(st.just(""), _segment.map(lambda s: "?" + s)))
    return f"{scheme}://{draw(_host)}{draw(_port)}/{path}{query}"


@given(_urls(), st.text(max_size=6))
def test_canonical_idempotent_and_fragment_free(url: str, frag: str) -> None:
    key = parse(url)
    assume(key is not None)
    assert canonical(key) == key
    assert "#" not in key
    assert parse(f"{key}#{frag}") == key
    assert fingerprint(f"{key}#{frag}") == fingerprint(url)


@given(_urls())
def test_default_port_does_not_change_fingerprint(url: str) -> None:
    key = parse(url)
    assume(key is not None)
    scheme, _, rest = key.partition("://")
    authority, slash, tail = rest.partition("/")
    if ":" not in authority.rpartition("]")[2]:
        explicit = f"{scheme}://{authority}:{'80' if scheme == 'http' else '443'}{slash}{tail}"
        assert fingerprint(explicit) == fingerprint(key)


@given(_urls())
def test_host_key_agrees_with_ada(url: str) -> None:
    key = parse(url)
    assume(key is not None)
    parts = ada_url.parse_url(key, attributes=("protocol", "hostname", "port"))
    port = parts["port"] or ("80" if parts["protocol"] == "http:" else "443")
    assert host_key(key) == f"{parts['hostname']}:{port}"


@given(st.text(max_size=20), _urls())
def test_resolve_output_is_canonical(href: str, base: str) -> None:
    out = resolve(href, base)
    if out is not None:
        assert canonical(out) == out
        assert out.startswith(("http://", "https://"))


def test_path_traps_catch_deep_and_repeating_paths_but_not_real_trees():
    from bspcrawl.urls import PathTraps

    traps = PathTraps(max_segments=40, max_repeats=3)
    deep_doc = "http://h/" + "/".join(f"level{i}" for i in range(20)) + "/page.html"
    assert not traps.caught(deep_doc)  # a 20-level documentation tree is crawled whole
    assert not traps.caught("http://h/2024/01/01/news/01/index.html?x=/a/a/a")
    assert not traps.caught("http://h/docs/docs/guide/")  # twice is not a pattern
    assert traps.caught("http://h/a/a/a")
    assert traps.caught("http://h/x/calendar/calendar/calendar/2024/")
    assert traps.caught("http://h/a/b/a/b/a/b/c")
    assert traps.caught("http://h/a/b/c/a/b/c/a/b/c")
    assert traps.caught("http://h/" + "d/" * 41)
    assert not PathTraps(0, 0).caught("http://h/a/a/a/a/a")
