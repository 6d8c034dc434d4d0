"""The app's HTML pages: plain markup, one inline style sheet, no script, nothing external.

Every function returns a whole page (``str``); every value from the crawl is escaped.
"""

from __future__ import annotations

import difflib
from collections import Counter
from datetime import UTC, datetime
from html import escape

from bspcrawl.browse.charts import bar_chart, line_chart, rates
from bspcrawl.browse.rewrite import archive_url
from bspcrawl.browse.search import Found
from bspcrawl.browse.view import Capture, StatsData

STYLE = """
body{font:15px/1.45 system-ui,sans-serif;margin:0;color:#222;background:#fafafa}
header{background:#1f3b57;color:#fff;padding:.5em 1em}
header a{color:#cfe3ff;margin-right:1em}
main{padding:1em}
.banner{background:#fff6d6;border-bottom:1px solid #d9c88a;padding:.4em 1em;font-size:14px}
.banner a{margin-right:.8em}
iframe.archived{width:100%;height:calc(100vh - 7em);border:0;background:#fff}
table{border-collapse:collapse}td,th{padding:.15em .6em;text-align:left}
.facts td:first-child{color:#555}
.chart{background:#fff;border:1px solid #ddd;margin:.5em .5em 0 0}
.chart text{font-size:11px;fill:#333}.chart .chart-title{font-size:13px;font-weight:bold}
.chart .plot{fill:none;stroke:#ccc}.chart .line{stroke:#1f77b4;stroke-width:2}
.chart .bar{fill:#4c8fc4}
pre.diff{background:#fff;border:1px solid #ddd;padding:.5em;white-space:pre-wrap}
.add{background:#e6ffec}.del{background:#ffebe9}.hunk{color:#6a737d}
input[type=search]{width:30em;font-size:15px}
.snippet{margin:.15em 0 .7em;color:#444;font-size:14px;max-width:60em}
"""


def layout(title: str, body: str, nav: bool = True) -> str:
    """A whole page: ``title`` and ``body`` (HTML) under the app's header."""
    links = ('<a href="/">Home</a><a href="/stats">Stats</a>' if nav
             else '<a href="/stats">Stats</a>')
    return (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
            f"<title>{escape(title)}</title><style>{STYLE}</style></head><body>"
            f"<header><strong>bspcrawl</strong> &nbsp; {links}</header>{body}</body></html>")


def when(t: float) -> str:
    """A time as ``YYYY-MM-DD hh:mm:ss UTC``."""
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def search_form(query: str = "") -> str:
    """The search box (a GET form to ``/search``)."""
    return (f'<form action="/search" method="get" role="search"><input type="search" '
            f'name="q" value="{escape(query)}" placeholder="words of a title or URL" '
            f'aria-label="search"> <button type="submit">Search</button></form>')


def facts_table(facts: dict[str, object]) -> str:
    """A two-column table of named values."""
    rows = "".join(f"<tr><td>{escape(k)}</td><td>{escape(str(v))}</td></tr>"
                   for k, v in facts.items())
    return f'<table class="facts">{rows}</table>'


def home(out: str, facts: dict[str, object]) -> str:
    """``/``: the crawl's summary and the search box."""
    return layout("bspcrawl: " + out, f"<main><h1>Crawl {escape(out)}</h1>{search_form()}"
                  f"<h2>Summary</h2>{facts_table(facts)}</main>")


def results(query: str, found: list[Found]) -> str:
    """``/search``: the pages found, each opening its newest capture, with its snippet."""
    items = "".join(
        f'<li><a class="result" href="{escape(archive_url(f.page.ts, f.page.url))}">'
        f"{escape(f.page.title or f.page.url)}</a><br><small>{escape(f.page.url)}</small>"
        + (f'<p class="snippet">{escape(f.snippet)}</p>' if f.snippet else "") + "</li>"
        for f in found)
    none = "" if found else "<p>No page matches.</p>"
    return layout(f"search: {query}", f"<main>{search_form(query)}<h1>{len(found)} "
                  f"result{'s' * (len(found) != 1)}</h1>{none}<ol>{items}</ol></main>")


def banner(ts: str, capture: Capture, before: Capture | None, after: Capture | None) -> str:
    """``/web/{ts}/{url}``: the banner (capture time, neighbours, live URL, versions) over
    the archived page in a sandboxed iframe (no script, top navigation on a click only)."""
    url = capture.url

    def go(c: Capture | None, label: str) -> str:
        if c is None:
            return f"<span>{label}: none</span> "
        return (f'<a rel="{label}" href="{escape(archive_url(c.ts, url))}">{label}: '
                f"{when(c.time)}</a>")

    return layout(f"{url} at {when(capture.time)}", (
        f'<div class="banner" id="banner">Captured <strong id="captured">'
        f"{when(capture.time)}</strong> (status {capture.status}) &nbsp; {go(before, 'prev')}"
        f"{go(after, 'next')}<a href=\"{escape(f'/web/*/{url}')}\">all versions</a>"
        f'<a href="{escape(url)}" rel="noreferrer noopener" target="_blank">live: '
        f"{escape(url)}</a></div>"
        f'<iframe class="archived" title="archived page" sandbox='
        f'"allow-top-navigation-by-user-activation" referrerpolicy="no-referrer" '
        f'src="{escape(archive_url(ts, url, raw=True))}"></iframe>'))


def versions(url: str, captures: list[Capture]) -> str:
    """``/web/*/{url}``: every version by year and month, and a form to compare two."""
    parts, year, month = [], "", ""
    for c in captures:
        y, m = c.ts[:4], c.ts[4:6]
        if y != year:
            parts.append(f"<h2>{y}</h2>")
            year, month = y, ""
        if m != month:
            parts.append(f"<h3>{y}-{m}</h3>")
            month = m
        parts.append(f'<li class="version"><a href="{escape(archive_url(c.ts, url))}">'
                     f"{when(c.time)}</a> status {c.status}"
                     f"{'' if c.path else ' (no body kept)'}</li>")
    seconds = Counter(c.ts for c in captures)

    def value(c: Capture) -> str:  # (two versions of one second: by their exact time)
        return c.ts if seconds[c.ts] == 1 else f"@{c.time!r}"

    def options(selected: int) -> str:
        return "".join(f'<option value="{value(c)}"{" selected" * (i == selected)}>'
                       f"{when(c.time)}</option>" for i, c in enumerate(captures))

    compare = "" if len(captures) < 2 else (
        f'<form action="/diff" method="get"><input type="hidden" name="url" '
        f'value="{escape(url)}">Compare <select name="a" aria-label="from">{options(0)}</select> '
        f'with <select name="b" aria-label="to">{options(len(captures) - 1)}</select>'
        f" <button type=\"submit\">Diff</button></form>")
    body = "".join(p if p.startswith("<h") else f"<ul>{p}</ul>" for p in parts)
    return layout(f"versions of {url}", f"<main><h1>{len(captures)} version"
                  f"{'s' * (len(captures) != 1)} of {escape(url)}</h1>{compare}{body}</main>")


def diff(url: str, a: Capture, b: Capture, lines_a: list[str], lines_b: list[str]) -> str:
    """``/diff``: the text of two versions compared, line by line (unified diff)."""
    out = []
    for line in difflib.unified_diff(lines_a, lines_b, when(a.time), when(b.time), lineterm=""):
        kind = {"+": "add", "-": "del", "@": "hunk"}.get(line[:1], "")
        out.append(f'<span class="{kind}">{escape(line)}</span>' if kind else escape(line))
    text = "\n".join(out) or "(the two versions' texts are equal)"
    return layout(f"diff of {url}", (
        f"<main><h1>Changes to {escape(url)}</h1><p>from <a href="
        f'"{escape(archive_url(a.ts, url))}">{when(a.time)}</a> to <a href='
        f'"{escape(archive_url(b.ts, url))}">{when(b.time)}</a></p>'
        f'<pre class="diff">{text}</pre></main>'))


def stats(data: StatsData, live: bool, stop_token: str = "") -> str:
    """``/stats``: the crawl's numbers and charts; live, a stop button too (a POST to
    ``/stop`` carrying ``stop_token``) and a refresh every 2 s."""
    xs, pps = rates(data.times, data.pages)
    charts = [
        line_chart(xs, pps, "pages per second", "s"),
        line_chart(data.times, data.frontier, "frontier size (URLs waiting)", "s"),
        bar_chart(list(data.errors), list(data.errors.values()), "errors by kind"),
        bar_chart([f"rank {r}" for r in range(len(data.per_rank))], data.per_rank,
                  "pages per rank") if data.per_rank or not live else "",
    ]
    stop = "" if not stop_token else (
        '<form action="/stop" method="post"><input type="hidden" name="token" '
        f'value="{escape(stop_token)}"><button type="submit" id="stop">Stop the crawl'
        "</button> (at its next superstep, with a checkpoint: like bspcrawl stop)</form>")
    refresh = '<meta http-equiv="refresh" content="2">' if live else ""
    return layout("bspcrawl stats", (
        f"{refresh}<main><h1>{'Live status' if live else 'Crawl statistics'}</h1>{stop}"
        f"{facts_table(data.facts)}<div class=\"charts\">{''.join(charts)}</div></main>"),
        nav=not live)


def error(status: int, message: str) -> str:
    """An error page."""
    return layout(f"{status}", f"<main><h1>{status}</h1><p>{escape(message)}</p></main>")
