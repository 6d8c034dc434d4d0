"""robots.txt rules for one host and one crawler, per RFC 9309 (Robots Exclusion Protocol).

Matching is protego's; ``RobotsRules.parse`` first makes the file as strict as RFC 9309
and Google's reference parser (google/robotstxt): the body is read up to 500 KiB as
UTF-8 (BOM dropped), lines end at CR, LF or CRLF only and are cut as Google cuts them,
unknown fields do not end a group, and a ``User-agent`` matches by its whole product
token, case-insensitively (protego alone lets ``bsp`` match ``bspcrawl``). Only the group
that applies to us is kept; one of more than ``MAX_RULES`` rules (``MAX_WILDCARD_RULES``
with ``*`` or ``$``) disallows everything, since every URL is matched against each rule.
Our product token is the user agent before the first "/".
"""

from __future__ import annotations

import re

from protego import Protego

__all__ = ["MAX_ROBOTS_BYTES", "MAX_RULES", "MAX_WILDCARD_RULES", "RobotsRules",
           "product_token"]

MAX_ROBOTS_BYTES = 500 * 1024  # RFC 9309 §2.5 asks for at least 500 KiB

_MAX_LINE = 2083 * 8 - 1  # google/robotstxt: kMaxLineLen - 1 characters are kept

_US = "bspcrawl-this-crawler"  # group name protego sees for groups that apply to us
_OTHER = "bspcrawl-other-crawler"  # ... and for groups that do not

_USER_AGENT_FIELDS = ("user-agent", "useragent", "user agent")
# Every field protego reads (protego/_protego.py), misspellings included.
_KNOWN_FIELDS = _USER_AGENT_FIELDS + (
    "disallow", "dissallow", "dissalow", "disalow", "diasllow", "disallaw", "allow",
    "sitemap", "sitemaps", "site-map", "crawl-delay", "crawl delay",
    "request-rate", "request rate", "visit-time", "visit time", "host",
)
_FIELD = re.compile(
    r"[ \t]*(" + "|".join(re.escape(f) for f in _KNOWN_FIELDS) + r")(?=[ \t:]|$)", re.I
)
_TOKEN = re.compile(r"[A-Za-z_-]*")
_LINE_END = re.compile(r"\r\n|\r|\n")
# Characters str.splitlines() breaks at besides CR and LF: percent-encode them, as
# protego does anyway to every non-ASCII or control character of a path.
_NOT_LINE_ENDS = str.maketrans(
    {c: "".join(f"%{b:02X}" for b in c.encode()) for c in "\v\f\x1c\x1d\x1e\x85\u2028\u2029"}
)


def product_token(user_agent: str) -> str:
    """The product token of a user agent string: the part before the first "/".

    >>> product_token("bspcrawl/0.1 (+https://example.org/bot)")
    'bspcrawl'
    """
    return user_agent.split("/", 1)[0].strip()


_SITEMAP_FIELDS = ("sitemap", "sitemaps", "site-map")
_RULE_FIELDS = ("disallow", "dissallow", "dissalow", "disalow", "diasllow", "disallaw", "allow")
MAX_RULES = 2000  # Allow/Disallow lines of our group past which the host is disallowed
MAX_WILDCARD_RULES = 200  # the same for rules with ``*`` or ``$`` (each a regex)


def _rewrite(text: str, token: str) -> tuple[bool, list[str], int, int]:
    """Whether a group names *token* (else the ``*`` groups apply), the lines of those
    groups merged, then the sitemaps, and their count of rules and of wildcard rules."""
    token = token.lower()
    groups: dict[str, list[str]] = {_US: [], "*": []}
    found: set[str] = set()
    sitemaps: list[str] = []
    agents: set[str] = set()  # of the group being read
    reading_agents = False
    for line in _LINE_END.split(text.translate(_NOT_LINE_ENDS)):
        line = line[:_MAX_LINE]
        field = _FIELD.match(line)
        if field is None:
            continue  # blank, comment only, or a record protego does not know
        name = field[1].lower()
        if name in _USER_AGENT_FIELDS:
            if not reading_agents:
                agents, reading_agents = set(), True
            value = line[field.end():].partition("#")[0].strip(" \t:").split(None, 1)
            agent = _TOKEN.match(value[0])[0].lower() if value else ""
            agent = "*" if value and value[0] == "*" else (
                _US if agent and agent == token else _OTHER)
            agents.add(agent)
            found.add(agent)
        elif name in _SITEMAP_FIELDS:
            sitemaps.append(line)  # not part of any group
        else:
            reading_agents = False
            for agent in agents & groups.keys():
                groups[agent].append(line)
    ours = _US if _US in found else "*"
    rules = [x for x in groups[ours] if _FIELD.match(x)[1].lower() in _RULE_FIELDS]
    wild = sum(("*" in x or "$" in x) for x in rules)
    return ours == _US, groups[ours] + sitemaps, len(rules), wild


class RobotsRules:
    """What one robots.txt allows our crawler: ``parse`` a fetched file, ``allow_all``
    (4xx) or ``disallow_all`` (unreachable, RFC 9309 §2.3.1)."""

    __slots__ = ("_default", "_parser", "source", "too_costly")

    def __init__(self, parser: Protego | None, default: bool, too_costly: bool = False,
                 source: bytes = b"") -> None:
        self._parser = parser
        self._default = default
        self.too_costly = too_costly  # disallows all: more rules than we check per URL
        self.source = source  # the part of the file that applies: parses to these rules

    @classmethod
    def parse(cls, body: bytes, user_agent: str) -> RobotsRules:
        """Rules of robots.txt *body* for *user_agent* (see the module doc)."""
        text = body[:MAX_ROBOTS_BYTES].decode("utf-8", errors="replace").removeprefix("\ufeff")
        token = product_token(user_agent)
        named, lines, rules, wild = _rewrite(text, token)
        if rules > MAX_RULES or wild > MAX_WILDCARD_RULES:
            return cls(None, False, too_costly=True, source=b"User-agent: *\nDisallow: /\n")
        source = "\n".join([f"User-agent: {token if named else '*'}", *lines])
        return cls(Protego.parse("\n".join([f"User-agent: {_US if named else '*'}", *lines])),
                   True, source=source.encode())

    @classmethod
    def allow_all(cls) -> RobotsRules:
        return cls(None, True)

    @classmethod
    def disallow_all(cls) -> RobotsRules:
        return cls(None, False)

    def allowed(self, url: str) -> bool:
        """True if our crawler may fetch *url* (absolute, or a path with query)."""
        if self._parser is None:
            return self._default
        return self._parser.can_fetch(url, _US)

    @property
    def crawl_delay(self) -> float | None:
        """Crawl-delay in seconds of the group that applies to us, or None."""
        return None if self._parser is None else self._parser.crawl_delay(_US)

    @property
    def sitemaps(self) -> list[str]:
        """Sitemap URLs listed anywhere in the file, in file order."""
        return [] if self._parser is None else list(self._parser.sitemaps)

    def __repr__(self) -> str:
        kind = "parsed" if self._parser else ("allow_all" if self._default else "disallow_all")
        return f"<RobotsRules {kind}>"


def header_directives(value: str, agent: str) -> set[str]:
    """The X-Robots-Tag directives (lower-case) that apply to ``agent``: unnamed ones, and
    those after ``"agent:"``."""
    directives: set[str] = set()
    target: str | None = None  # None: applies to all agents
    for part in value.split(","):
        part = part.strip().lower()
        name, sep, rest = part.partition(":")
        if sep and " " not in name.strip() and name.strip() not in _DATED:
            target, part = name.strip(), rest.strip()
        if part and (target is None or target == agent.lower()):
            directives.add(part.split()[0])
    return directives


_DATED = frozenset(("unavailable_after", "max-snippet", "max-image-preview",
                    "max-video-preview"))
