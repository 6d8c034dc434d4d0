"""URL resolution, canonical form, host key and 64-bit fingerprints.

Resolution follows the WHATWG URL Standard (https://url.spec.whatwg.org/) through
ada-url; the crawler keeps only http and https URLs and never a fragment.

Forms used across the crawler:

* ``resolve(href, base)`` / ``parse(url)``: absolute, ada-normalised URL without
  fragment and without userinfo, or None (invalid by the standard, or not http/https). Verified
  against the WHATWG URL tests in ``tests/test_urls.py``.
* ``canonical(url)``: the seen-set key. Today it is exactly the resolved form:
  scheme and host lower-cased, IDNA to punycode, default port dropped, empty path
  made "/", dot segments removed, percent-encoding as the standard does it,
  fragment and userinfo cut. It does not sort or drop query parameters, and does not
  touch the case of the path.
* ``strip_params(url, pattern)``: the seen-set key proper: ``canonical`` minus the
  query parameters (and ``;jsessionid=``-style path parameters) whose names match a
  pattern, by default ``TRACKING_PARAMS`` (``utm_*``, click ids, session ids). The URL
  fetched stays as resolved; only the key that decides "seen before" drops them.
* ``host_key(url)``: ``"host:port"`` with the scheme's default port filled in, the
  unit of partitioning over ranks and of per-host politeness.
* ``registered_domain(key)``: the domain a host key's host was registered under
  (``en.m.wikipedia.org:443`` -> ``wikipedia.org``; the Public Suffix List, private
  section included, so every ``*.github.io`` site is its own); an IP address is its own.
* ``fingerprint(url)`` / ``fingerprints(urls)``: xxh3_64 of the canonical form as a
  signed int64 (fits ``np.int64``); ``host_hash(key)``: a stable non-negative
  63-bit hash of a host key (never Python's salted ``hash()``).

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
    """True if a host label "xn--..." of *url* is not valid Punycode for IDNA.

    ada-url 4.0 accepts such labels; the URL Standard (UTS #46 ToASCII) rejects
    them (e.g. "xn--", "xn--pokxncvks"). ada's ToUnicode leaves an invalid label
    unchanged, a valid one always decodes to non-ASCII text.
    """
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
    """An ada href without its ``user:password@``: a crawler neither sends credentials
    found in a link nor counts ``http://u@h/x`` as another page than ``http://h/x``."""
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
    """Resolve *href* against the absolute URL *base* (WHATWG), fragment cut.

    Returns None if the standard rejects the input or the result is not http(s)
    (``javascript:``, ``mailto:``, ``data:``...).
    """
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
    """The seen-set key of *url*: the ``parse`` form (see the module docstring).

    Idempotent: ``canonical(canonical(u)) == canonical(u)``.
    Raises ValueError if *url* is not a valid absolute http(s) URL.
    """
    key = parse(url)
    if key is None:
        raise ValueError(f"not an absolute http(s) URL: {url!r}")
    return key


def host_key(url: str) -> str:
    """Lower-case ``"host:port"`` of an http(s) URL, default port filled in.

    *url* must already be in resolved form (from ``resolve``, ``parse`` or
    ``canonical``): the key is cut out of the string without re-parsing, which
    keeps it well under a microsecond. IPv6 hosts keep their brackets
    (``"[::1]:80"``). Raises ValueError if the scheme is not http(s).

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


_PSL: PublicSuffixList | None = None  # loaded on first use (0.1 s)
_IPV4 = re.compile(r"[0-9.]+")


def registered_domain(key: str) -> str:
    """The registered domain of host key ``key`` ("host:port"): the public suffix plus one
    label, by the Public Suffix List. An IP address, a name that is itself a public
    suffix or has no dot (``localhost``) stands for itself.

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
    """:func:`host_hash` of the registered domain of host key ``key``: the key of the
    per-domain budgets and hosts cap."""
    return host_hash(registered_domain(key))


def _signed(value: int) -> int:
    return value - _INT64_WRAP if value > _INT64_MAX else value


def fingerprint(url: str, *, assume_canonical: bool = False) -> int:
    """xxh3_64 of ``canonical(url)`` as a signed int64 value.

    URLs that differ only by fragment, default port or other spellings the
    standard normalises have equal fingerprints. Raises ValueError like
    ``canonical``. With ``assume_canonical=True`` *url* is hashed as given (it
    must come from ``resolve``/``parse``/``canonical``, as ``parse_html`` links
    do), which saves re-parsing it.
    """
    key = url if assume_canonical else canonical(url)
    return _signed(xxh3_64_intdigest(key.encode()))


def fingerprints(urls: list[str], *, assume_canonical: bool = False) -> np.ndarray:
    """``fingerprint`` of each URL, as an int64 array of ``len(urls)``.

    With ``assume_canonical=True`` the URLs are hashed as given (they must come
    from ``resolve``/``parse``/``canonical``), which skips re-parsing them.
    """
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
    """*url* (resolved form) without the query and ``;name=value`` path parameters whose
    names fully match *pattern*; the order of the others is kept.

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
    """The compiled ``url_strip_params`` setting (names matched whole, any case), or None
    when it is empty."""
    return re.compile(names, re.I) if names else None


def key_fingerprints(urls: list[str], strip: re.Pattern[str] | None) -> np.ndarray:
    """Seen-set keys (int64) of canonical URLs: their fingerprints once the parameters
    ``strip`` names are cut (:func:`strip_pattern`; None: none)."""
    return fingerprints([strip_params(u, strip) for u in urls] if strip else urls,
                        assume_canonical=True)


def path_of(url: str) -> str:
    """The path of a resolved URL (``"/a/b"`` of ``"http://h/a/b?q"``)."""
    rest = url.partition("://")[2]
    return "/" + rest.partition("/")[2].partition("?")[0].partition("#")[0]


class PathTraps:
    """The spider-trap shapes of a URL's path, after Heritrix's decide rules: more than
    ``max_segments`` segments (TooManyPathSegments), or one segment, or a run of two or
    three, repeated ``max_repeats`` times in a row (PathologicalPath: ``/a/a/a/``,
    ``/x/y/x/y/x/y``). 0 turns a rule off.

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
