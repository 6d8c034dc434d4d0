"""Tests for bspcrawl.robots.robotstxt: Google's robots.txt conformance cases and units."""

from __future__ import annotations

import doctest
import json
from pathlib import Path

import pytest

from bspcrawl.robots import robotstxt
from bspcrawl.robots.robotstxt import MAX_ROBOTS_BYTES, RobotsRules, product_token

GOOGLE = Path(__file__).parent / "conformance" / "robots_google.json"
CASES = json.loads(GOOGLE.read_text(encoding="utf-8")) if GOOGLE.exists() else []

# Known differences from google/robotstxt, each a documented expected failure. They
# are all about percent-encoding: Google's matcher compares raw octets and expects
# its caller to encode URLs; protego percent-encodes both sides as RFC 9309 §2.2.2
# asks. Our URLs always come percent-encoded from bspcrawl.urls, so 63 and 65 do
# not arise in a crawl.
KNOWN_MISSES = {
    63: "URL /foo/bar/ツ is not encoded: Google does not encode it, protego does "
        "(to %E3%83%84) and then 'Allow: /foo/bar/ツ' matches",
    65: "same as 63 with the rule already encoded: 'Allow: /foo/bar/%E3%83%84'",
    66: "'Allow: /foo/bar/%62%61%7A': Google keeps the escapes, protego decodes them "
        "to /foo/bar/baz as the RFC 9309 §2.2.2 example table does",
}
AGENT = "bspcrawl/0.1 (+https://example.org/bot)"


def _param(case: dict) -> pytest.param:
    marks = ()
    if case["id"] in KNOWN_MISSES:
        marks = pytest.mark.xfail(strict=True, reason=KNOWN_MISSES[case["id"]])
    return pytest.param(case, id=f"{case['id']}-{case['name']}", marks=marks)


def test_known_misses_are_few() -> None:
    if not CASES:
        pytest.skip(f"{GOOGLE} not found")
    assert len(CASES) == 159
    assert len(KNOWN_MISSES) <= 7
    assert all(not CASES[i]["derived"] for i in KNOWN_MISSES)


@pytest.mark.parametrize("case", [_param(c) for c in CASES])
def test_google_conformance(case: dict) -> None:
    rules = RobotsRules.parse(case["robots"].encode("utf-8"), case["agent"])
    assert rules.allowed(case["url"]) is case["allowed"]


# -- units ----------------------------------------------------------------------


def _rules(text: str, agent: str = AGENT) -> RobotsRules:
    return RobotsRules.parse(text.encode("utf-8"), agent)


def test_doctests() -> None:
    assert doctest.testmod(robotstxt).failed == 0


def test_product_token() -> None:
    assert product_token(AGENT) == "bspcrawl"
    assert product_token("FooBot") == "FooBot"


def test_allow_all_and_disallow_all() -> None:
    assert RobotsRules.allow_all().allowed("http://h/x")
    assert not RobotsRules.disallow_all().allowed("http://h/x")
    assert RobotsRules.allow_all().crawl_delay is None
    assert RobotsRules.disallow_all().sitemaps == []


def test_empty_and_garbage_allow_everything() -> None:
    assert RobotsRules.parse(b"", AGENT).allowed("http://h/x")
    assert RobotsRules.parse(b"\x00\xff\xfe<html>garbage</html>", AGENT).allowed("http://h/x")


def test_crawl_delay_and_sitemaps() -> None:
    rules = _rules(
        "Sitemap: http://h/s1.xml\n"
        "User-agent: *\nCrawl-delay: 5\n"
        "User-agent: bspcrawl\nCrawl-delay: 0.5\nDisallow: /private\n"
        "Sitemap: http://h/s2.xml\n"
    )
    assert rules.crawl_delay == 0.5
    assert rules.sitemaps == ["http://h/s1.xml", "http://h/s2.xml"]
    assert _rules("User-agent: *\nCrawl-delay: 2\n").crawl_delay == 2.0
    assert _rules("User-agent: other\nCrawl-delay: 2\n").crawl_delay is None
    assert _rules("User-agent: *\nCrawl-delay: soon\n").crawl_delay is None


def test_group_selection() -> None:
    text = "User-agent: *\nDisallow: /\n\nUser-agent: BSPCrawl/2.0\nDisallow: /private\n"
    rules = _rules(text)
    assert rules.allowed("http://h/public")
    assert not rules.allowed("http://h/private/x")
    other = _rules(text, "otherbot/1.0")
    assert not other.allowed("http://h/public")


def test_group_selection_is_exact() -> None:
    # protego alone would match "bsp" inside "bspcrawl"; RFC 9309 wants the token.
    rules = _rules("User-agent: bsp\nDisallow: /\n")
    assert rules.allowed("http://h/x")
    assert not _rules("User-agent: *\nDisallow: /\n", "bsp").allowed("http://h/x")


def test_groups_merge_and_unknown_lines_do_not_split_them() -> None:
    rules = _rules(
        "User-agent: bspcrawl\nDisallow: /a\n"
        "User-agent: other\nDisallow: /b\n"
        "User-agent: bspcrawl\nUnknown-field: x\nDisallow: /c\n"
    )
    assert not rules.allowed("http://h/a")
    assert rules.allowed("http://h/b")
    assert not rules.allowed("http://h/c")
    shared = _rules("User-agent: other\nNoindex: /\nUser-agent: bspcrawl\nDisallow: /x\n")
    assert not shared.allowed("http://h/x")


def test_longest_match_wins_and_allow_wins_ties() -> None:
    rules = _rules(
        "User-agent: *\nDisallow: /shop\nAllow: /shop/public\n"
        "Disallow: /shop/public/secret\nAllow: /tie\nDisallow: /tie\n"
    )
    assert not rules.allowed("http://h/shop/cart")
    assert rules.allowed("http://h/shop/public/x")
    assert not rules.allowed("http://h/shop/public/secret/y")
    assert rules.allowed("http://h/tie")
    assert rules.allowed("http://h/elsewhere")


def test_wildcards_and_end_anchor() -> None:
    rules = _rules("User-agent: *\nDisallow: /*.pdf$\nDisallow: /*session=\nDisallow: /x$\n")
    assert not rules.allowed("http://h/a/b.pdf")
    assert rules.allowed("http://h/a/b.pdf?download=1")
    assert not rules.allowed("http://h/list?page=2&session=9")
    assert rules.allowed("http://h/list?page=2")
    assert not rules.allowed("http://h/x")
    assert rules.allowed("http://h/xy")


def test_bom_line_endings_and_case() -> None:
    body = b"\xef\xbb\xbfuser-AGENT: BSPCRAWL\r\ndisallow: /x\rALLOW: /x/y\n"
    rules = RobotsRules.parse(body, AGENT)
    assert not rules.allowed("http://h/x/z")
    assert rules.allowed("http://h/x/y")


def test_robots_txt_itself_is_always_allowed() -> None:
    assert _rules("User-agent: *\nDisallow: /\n").allowed("http://h/robots.txt")


def test_only_first_500_kib_is_read() -> None:
    filler = b"# " + b"x" * 1000 + b"\n"
    body = b"User-agent: *\nDisallow: /early\n" + filler * (MAX_ROBOTS_BYTES // len(filler) + 1)
    rules = RobotsRules.parse(body + b"Disallow: /late\n", AGENT)
    assert not rules.allowed("http://h/early")
    assert rules.allowed("http://h/late")


def test_percent_encoded_urls_match_rules() -> None:
    rules = _rules("User-agent: *\nDisallow: /caf\u00e9\n")
    assert not rules.allowed("http://h/caf%C3%A9/menu")
    assert repr(rules) == "<RobotsRules parsed>"


def test_only_our_group_is_kept_and_a_costly_one_disallows_everything() -> None:
    # issue 14: a 500 KiB robots.txt of 24,000 wildcard rules cost 8.4 ms a check
    others = "".join(f"User-agent: bot{i}\nDisallow: /*x{i}*$\n"
                     for i in range(12_000))  # 400 KiB: within the 500 KiB read
    rules = RobotsRules.parse(f"{others}User-agent: *\nDisallow: /private\n".encode(), AGENT)
    assert not rules.too_costly and rules.allowed("http://h/public")
    assert not rules.allowed("http://h/private/x")
    assert rules.source == b"User-agent: *\nDisallow: /private"  # what a checkpoint keeps
    ours = RobotsRules.parse(b"User-agent: *\nDisallow: /\nUser-agent: bspcrawl\n"
                             b"Disallow: /a\nUser-agent: other\nUser-agent: bspcrawl\n"
                             b"Disallow: /b\nCrawl-delay: 2\nSitemap: http://h/s.xml\n", AGENT)
    assert ours.allowed("http://h/c") and not ours.allowed("http://h/a")
    assert not ours.allowed("http://h/b") and ours.crawl_delay == 2.0
    assert ours.sitemaps == ["http://h/s.xml"]
    again = RobotsRules.parse(ours.source, AGENT)  # the source parses to the same rules
    assert again.source == ours.source and again.crawl_delay == 2.0
    assert [again.allowed(f"http://h/{p}") for p in "abc"] == [False, False, True]

    def group(n, pattern):
        return ("User-agent: *\n" + "".join(f"Disallow: {pattern % i}\n" for i in range(n))
                ).encode()

    assert not RobotsRules.parse(group(robotstxt.MAX_RULES, "/p%d"), AGENT).too_costly
    costly = RobotsRules.parse(group(robotstxt.MAX_RULES + 1, "/p%d"), AGENT)
    assert costly.too_costly and not costly.allowed("http://h/anything")
    assert not RobotsRules.parse(group(robotstxt.MAX_WILDCARD_RULES, "/*p%d"), AGENT).too_costly
    assert RobotsRules.parse(group(robotstxt.MAX_WILDCARD_RULES + 1, "/p%d$"), AGENT).too_costly
