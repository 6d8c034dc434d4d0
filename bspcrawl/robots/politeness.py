"""How long a host must rest: the delay rule, Retry-After and backoff.

The delay between two requests to one host is
``max(min_host_delay, Crawl-delay, k x the host's last response time)``, like Heritrix's
``delayFactor`` and Scrapy's AutoThrottle (``k = politeness_response_factor``). A 429 or 503
answer makes the host rest for its ``Retry-After`` (seconds or an HTTP date) or, without
one, for an exponential backoff; both are capped by ``politeness_max_backoff``.

A host is *paced* when any wall-clock rule applies to it (a delay or factor above zero):
the scheduler then gives it one job at a time and waits for its rest to end. An unpaced
host (``--min-host-delay 0 --politeness-response-factor 0``, no Crawl-delay) is scheduled
by superstep count alone, which is what makes crawls of a fast local web reproducible.
"""

from __future__ import annotations

import email.utils
import time

BACKOFF_BASE = 5.0  # seconds of rest after the first 429/503 without Retry-After
RETRY_STATUSES = frozenset((429, 503))


def retry_after(value: str, now: float | None = None) -> float | None:
    """Seconds to wait from a Retry-After header value (delta-seconds or HTTP-date)."""
    value = value.strip()
    if not value:
        return None
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:  # an HTTP-date is GMT; a malformed one may lack the zone
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def backoff(attempt: int, hint: float | None, cap: float) -> float:
    """Rest after the ``attempt``-th (1, 2, ...) 429/503: the server's hint, else 5 s x 2^n."""
    rest = hint if hint is not None else BACKOFF_BASE * 2 ** (attempt - 1)
    return min(rest, cap)


def rest(delay: float, factor: float, elapsed: float) -> float:
    """The pause after a response that took ``elapsed`` s: max(delay, factor x elapsed)."""
    return max(delay, factor * elapsed)
