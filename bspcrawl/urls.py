"""URL resolution, canonical form, host key and 64-bit fingerprints.

* ``resolve``/``parse``: the WHATWG URL Standard through ada-url, http(s) only, without
  fragment or userinfo, else None. ``canonical`` is that form, the seen-set key before
  ``strip_params`` drops tracking and session parameters (the URL fetched keeps them).
* ``host_key``: ``"host:port"``, the unit of partitioning over ranks and of politeness;
  ``registered_domain``: by the Public Suffix List (private section included).
* ``fingerprint(s)``: xxh3_64 of the canonical form as int64; ``host_hash``: a stable
  63-bit hash (never Python's salted ``hash()``).

>>> resolve("../b/c.html#top", "http://Example.ORG:80/a/x.html")
'http://example.org/b/c.html'
>>> host_key("https://example.org/x")
'example.org:443'
"""

from __future__ import annotations

import re

import numpy as np
from ada_url import idna_to_unicode, join_url, normalize_url
from publicsuffixlist import PublicSuffixList
from xxhash import xxh3_64_intdigest

__all__ = [
    "TRACKING_PARAMS",
    "canonical",
    "fingerprint",
    "fingerprints",
    "domain_hash",
    "has_userinfo",
    "host_hash",
    "host_key",
    "parse",
    "registered_domain",
    "resolve",
    "strip_params",
]

_HTTP_PREFIXES = ("http://", "https://")
_DEFAULT_PORT = {"http": "80", "https": "443"}
_INT64_WRAP = 1 << 64
_INT64_MAX = (1 << 63) - 1


def _has_bad_punycode(url: str) -> bool:
    """True if a host label "xn--..." is invalid Punycode: ada-url accepts it, the URL
    Standard (UTS #46) does not; ada's ToUnicode leaves such a label unchanged."""
    host = url.split("/", 3)[2].rpartition("@")[2]
    if host.startswith("["):
        return False
    return any(
        label.startswith("xn--") and idna_to_unicode(label) == label
        for label in host.partition(":")[0].split(".")
    )


def _finish(url: str) -> str | None:
    """Keep an ada href only if it is http(s); cut its fragment and userinfo."""
    if not url.startswith(_HTTP_PREFIXES):
        return None
    cut = url.find("#")
    if cut >= 0:
        url = url[:cut]
    if "@" in url:
        url = _without_userinfo(url)
    if "xn--" in url and _has_bad_punycode(url):
        return None
    return url


def _without_userinfo(url: str) -> str:
    """An ada href without ``user:password@``: links' credentials are neither sent nor
    make another page."""
    scheme, sep, rest = url.partition("://")
    authority, slash, path = rest.partition("/")
    return f"{scheme}{sep}{authority.rpartition('@')[2]}{slash}{path}"


def has_userinfo(url: str) -> bool:
    """Does the absolute URL ``url`` (as written) carry ``user:password@``?"""
    try:
        href = normalize_url(url)
    except ValueError:
        return False
    return "@" in href.partition("://")[2].partition("/")[0]


def resolve(href: str, base: str) -> str | None:
    """*href* resolved against *base* (WHATWG), fragment cut; None if invalid or not http(s)."""
    try:
        url = join_url(base, href)
    except ValueError:
        return None
    return _finish(url)


def parse(url: str) -> str | None:
    """Parse an absolute URL (WHATWG, no base): normalised, fragment cut, or None."""
    try:
        href = normalize_url(url)
    except ValueError:
        return None
    return _finish(href)


def canonical(url: str) -> str:
    """The ``parse`` form of *url* (idempotent); ValueError if not an http(s) URL."""
    key = parse(url)
    if key is None:
        raise ValueError(f"not an absolute http(s) URL: {url!r}")
    return key


def host_key(url: str) -> str:
    """Lower-case ``"host:port"`` of a resolved http(s) URL, default port filled in, cut
    out of the string without re-parsing; ValueError if not http(s).

    >>> host_key("http://user@127.1.0.5:8080/a?b")
    '127.1.0.5:8080'
    """
    scheme, _, rest = url.partition("://")
    authority = rest.split("/", 1)[0].partition("?")[0].partition("#")[0]
    host = authority.rpartition("@")[2].lower()
    port = _DEFAULT_PORT.get(scheme.lower())
    if port is None or not host:
        raise ValueError(f"not an absolute http(s) URL: {url!r}")
    if host.endswith("]") or ":" not in host:
        return f"{host}:{port}"
    return host


_PSL: PublicSuffixList | None = None  # loaded on first use
_IPV4 = re.compile(r"[0-9.]+")


def registered_domain(key: str) -> str:
    """The public suffix plus one label of host key ``key``; an IP address, a public
    suffix or a dotless name stands for itself.

    >>> registered_domain("en.m.wikipedia.org:443"), registered_domain("127.1.0.5:8080")
    ('wikipedia.org', '127.1.0.5')
    """
    global _PSL
    host = key[: key.rfind(":")] if ":" in key else key
    if host.startswith("[") or _IPV4.fullmatch(host):
        return host
    if _PSL is None:
        _PSL = PublicSuffixList()
    return _PSL.privatesuffix(host) or host


def domain_hash(key: str) -> int:
    """:func:`host_hash` of ``key``'s registered domain: the key of per-domain budgets."""
    return host_hash(registered_domain(key))


def _signed(value: int) -> int:
    return value - _INT64_WRAP if value > _INT64_MAX else value


def fingerprint(url: str, *, assume_canonical: bool = False) -> int:
    """xxh3_64 of ``canonical(url)`` as a signed int64 (*assume_canonical*: *url* is
    already in resolved form and hashed as given)."""
    key = url if assume_canonical else canonical(url)
    return _signed(xxh3_64_intdigest(key.encode()))


def fingerprints(urls: list[str], *, assume_canonical: bool = False) -> np.ndarray:
    """``fingerprint`` of each URL, as an int64 array."""
    keys = urls if assume_canonical else map(canonical, urls)
    digests = map(xxh3_64_intdigest, map(str.encode, keys))
    hashes = np.fromiter(digests, dtype=np.uint64, count=len(urls))
    return hashes.view(np.int64)


def host_hash(key: str) -> int:
    """Stable, non-negative 63-bit hash of a host key (same in every process and run)."""
    return xxh3_64_intdigest(key.encode()) & _INT64_MAX


TRACKING_PARAMS = (r"utm_[a-z0-9_]+|fbclid|gclid|dclid|gbraid|wbraid|msclkid|yclid|mc_[ce]id"
                   r"|_ga|_gl|igshid|(php|asp\.net_|j)?sessionid|sess(ion)?_?id|sid|cfid|cftoken")
"""Default names (regex, whole name, case-insensitive) of parameters dropped from the key."""


def strip_params(url: str, pattern: re.Pattern[str] | None) -> str:
    """*url* without the query and ``;name=value`` path parameters whose names fully
    match *pattern*.

    >>> strip_params("http://a.org/p;jsessionid=X1?id=3&utm_source=m&sid=9",
    ...              re.compile(TRACKING_PARAMS, re.I))
    'http://a.org/p?id=3'
    """
    if pattern is None or ("?" not in url and ";" not in url):
        return url
    base, sep, query = url.partition("?")
    if ";" in base:
        head, *params = base.split(";")
        base = ";".join([head] + [p for p in params
                                  if not pattern.fullmatch(p.partition("=")[0])])
    if sep:
        kept = [p for p in query.split("&") if p and not pattern.fullmatch(p.partition("=")[0])]
        return base + ("?" + "&".join(kept) if kept else "")
    return base


def strip_pattern(names: str | None) -> re.Pattern[str] | None:
    """The compiled ``url_strip_params`` setting, or None when it is empty."""
    return re.compile(names, re.I) if names else None


def key_fingerprints(urls: list[str], strip: re.Pattern[str] | None) -> np.ndarray:
    """Seen-set keys of canonical URLs: fingerprints once ``strip``'s parameters are cut."""
    return fingerprints([strip_params(u, strip) for u in urls] if strip else urls,
                        assume_canonical=True)


def path_of(url: str) -> str:
    """The path of a resolved URL (``"/a/b"`` of ``"http://h/a/b?q"``)."""
    rest = url.partition("://")[2]
    return "/" + rest.partition("/")[2].partition("?")[0].partition("#")[0]


class PathTraps:
    """Spider-trap paths, after Heritrix's decide rules: more than ``max_segments``
    segments, or a run of one to three segments repeated ``max_repeats`` times in a row
    (``/x/y/x/y/x/y``); 0 turns a rule off.

    >>> PathTraps(40, 3).caught("http://h/a/b/a/b/a/b/")
    True
    """

    def __init__(self, max_segments: int, max_repeats: int) -> None:
        self.max_segments = max_segments
        self.repeat = re.compile(rf"(/[^/]+(?:/[^/]+){{0,2}})\1{{{max_repeats - 1},}}(?=/|$)"
                                 ) if max_repeats > 1 else None

    def caught(self, url: str) -> bool:
        """True if the URL's path has a trap's shape."""
        path = path_of(url)
        if self.max_segments and path.count("/") > self.max_segments:
            return True
        return bool(self.repeat and self.repeat.search(path))
