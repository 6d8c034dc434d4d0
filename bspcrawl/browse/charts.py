"""Charts drawn on the server as inline SVG: no script, no asset from anywhere.

:func:`line_chart` for a quantity over the crawl's time (pages per second, frontier
size), :func:`bar_chart` for counts by label (errors by kind, pages per rank). Each returns
one ``<svg class="chart">`` element with a ``<title>`` naming it, for the stats page.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

WIDTH, HEIGHT = 640, 220
LEFT, RIGHT, TOP, BOTTOM = 64, 16, 28, 36  # margins around the plot area


def rates(times: Sequence[float], totals: Sequence[float], bins: int = 40
          ) -> tuple[list[float], list[float]]:
    """(time, rate) points of a cumulative count: its increase per second over ``bins``
    equal stretches of time (at most one per two samples)."""
    if len(times) < 2 or times[-1] <= times[0]:
        return [], []
    bins = max(1, min(bins, len(times) // 2))
    start, span = times[0], (times[-1] - times[0]) / bins
    xs, ys, j = [], [], 0
    for b in range(1, bins + 1):
        edge = start + b * span
        i = j
        while j < len(times) - 1 and times[j + 1] <= edge:
            j += 1
        if j > i:
            xs.append(times[j])
            ys.append((totals[j] - totals[i]) / max(times[j] - times[i], 1e-9))
    return xs, ys


def _frame(title: str, body: str) -> str:
    return (f'<svg class="chart" role="img" xmlns="http://www.w3.org/2000/svg" '
            f'width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}">'
            f"<title>{escape(title)}</title>"
            f'<text x="{LEFT}" y="18" class="chart-title">{escape(title)}</text>'
            f'<rect x="{LEFT}" y="{TOP}" width="{WIDTH - LEFT - RIGHT}" '
            f'height="{HEIGHT - TOP - BOTTOM}" class="plot"/>{body}</svg>')


def _number(v: float) -> str:
    return f"{v:,.0f}" if abs(v) >= 10 else f"{v:.2g}"


def line_chart(xs: Sequence[float], ys: Sequence[float], title: str, xlabel: str) -> str:
    """A line of ``ys`` over ``xs`` (axes from 0 to the maxima), or "no data yet"."""
    if not xs:
        return _frame(title, f'<text x="{WIDTH // 2}" y="{HEIGHT // 2}" '
                             'text-anchor="middle">no data yet</text>')
    w, h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    xmax, ymax = max(max(xs), 1e-9), max(max(ys), 1e-9)
    points = " ".join(f"{LEFT + w * x / xmax:.1f},{TOP + h * (1 - y / ymax):.1f}"
                      for x, y in zip(xs, ys, strict=True))
    return _frame(title, (
        f'<polyline class="line" fill="none" points="{points}"/>'
        f'<text x="{LEFT - 6}" y="{TOP + 10}" text-anchor="end">{_number(ymax)}</text>'
        f'<text x="{LEFT - 6}" y="{TOP + h}" text-anchor="end">0</text>'
        f'<text x="{LEFT + w}" y="{HEIGHT - 10}" text-anchor="end">{_number(xmax)} '
        f"{escape(xlabel)}</text>"))


def bar_chart(labels: Sequence[str], values: Sequence[float], title: str) -> str:
    """One bar per label (at most 24 shown), heights from 0 to the largest value."""
    labels, values = list(labels)[:24], list(values)[:24]
    if not labels:
        return _frame(title, f'<text x="{WIDTH // 2}" y="{HEIGHT // 2}" '
                             'text-anchor="middle">none</text>')
    w, h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    top, step = max(max(values), 1e-9), w / len(labels)
    bars = []
    for i, (label, v) in enumerate(zip(labels, values, strict=True)):
        bh = h * v / top
        x = LEFT + i * step
        bars.append(
            f'<rect class="bar" x="{x + step * 0.15:.1f}" y="{TOP + h - bh:.1f}" '
            f'width="{step * 0.7:.1f}" height="{bh:.1f}"><title>{escape(label)}: '
            f"{_number(v)}</title></rect>"
            f'<text x="{x + step / 2:.1f}" y="{HEIGHT - 20}" text-anchor="middle">'
            f"{escape(label[:14])}</text>"
            f'<text x="{x + step / 2:.1f}" y="{TOP + h - bh - 3:.1f}" '
            f'text-anchor="middle">{_number(v)}</text>')
    return _frame(title, "".join(bars))
