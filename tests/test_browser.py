"""``bspcrawl serve`` in a real browser: headless Chromium (Debian's ``chromium``) driven by
Playwright. Search, open a result, follow three links inside the cached copy at the same
moment, the version list and a diff, the stats charts, and a hostile archived page whose
scripts must not run and which must load nothing from outside the app.

Screenshots go to ``test-artifacts/`` (git-ignored). Without Chromium these tests are
skipped, except under CI (``CI=true``), where they must run: ``.ci/run`` installs it.
"""

import os
import re
import subprocess
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.archives import crawl_with_history
from tests.crawling import PY

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]
ARTIFACTS = Path(__file__).parent.parent / "test-artifacts"
TS = "20991231000000"
UNDER_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")

if not UNDER_CI:
    pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} is absent (apt-get install chromium); CI=true runs these",
                    allow_module_level=True)

from playwright.sync_api import sync_playwright  # noqa: E402


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The crawl with history, served by ``bspcrawl serve`` on a free port."""
    history = crawl_with_history(tmp_path_factory.mktemp("browser"))
    proc = subprocess.Popen([PY, "-m", "bspcrawl", "serve", str(history.out), "--port", "0"],
                            stderr=subprocess.PIPE, text=True)
    line = proc.stderr.readline()
    match = re.search(r"at (http://127\.0\.0\.1:\d+)/", line)
    assert match, line
    yield history, match.group(1)
    proc.terminate()
    proc.wait(timeout=10)


@pytest.fixture(scope="module")
def browser():
    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield b
        b.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1100, "height": 800})
    page = context.new_page()
    page.set_default_timeout(15_000)
    yield page
    context.close()


def shot(page, name: str, full_page: bool = True) -> None:
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=full_page)


def test_search_open_and_follow_three_links_at_the_same_moment(site, page):
    history, base = site
    home = next(u for u in sorted(history.ok_urls)
                if urlsplit(u).path == "/" and u.startswith("http://127.1."))
    page.goto(base + "/")
    page.fill("input[name=q]", urlsplit(home).hostname)
    page.click("button[type=submit]")
    assert page.locator("a.result").count() >= 3
    shot(page, "search")
    page.locator(f'a.result[href$="/{home}"]').click()
    page.wait_for_url(re.compile(r"/web/\d{14}/"))
    ts = re.search(r"/web/(\d{14})/", page.url).group(1)
    frame = page.frame_locator("iframe.archived")
    frame.locator("h1").first.wait_for()
    assert page.locator("#banner").is_visible() and page.locator("#captured").inner_text()
    shot(page, "cached")
    current = home
    for _ in range(3):  # follow links inside the archived copy: the moment is kept
        hrefs = frame.locator("a[href^='/web/']").evaluate_all(
            "els => els.map(e => e.getAttribute('href'))")
        href = next(h for h in hrefs if h.split("/", 3)[3] in history.ok_urls
                    and h.split("/", 3)[3] != current)
        assert href.startswith(f"/web/{ts}/")
        frame.locator(f"a[href='{href}']").first.click()
        page.wait_for_url(base + href)
        current = href.split("/", 3)[3]
        frame.locator("body").wait_for()
        assert page.locator("#banner").is_visible()
        assert page.locator("iframe.archived").get_attribute("src") == f"/web/{ts}if_/{current}"
    shot(page, "followed")


def test_version_list_and_diff(site, page):
    history, base = site
    page.goto(f"{base}/web/*/{history.changed_url}")
    assert page.locator("li.version").count() == 2
    shot(page, "versions")
    page.click("form[action='/diff'] button")
    page.wait_for_url(re.compile(r"/diff\?"))
    assert page.locator("pre.diff span.add, pre.diff span.del").count() > 0
    shot(page, "diff", full_page=False)


def test_stats_page_draws_its_charts(site, page):
    _, base = site
    page.goto(base + "/stats")
    charts = page.locator("svg.chart")
    assert charts.count() == 4
    assert page.locator("svg.chart polyline.line").count() == 2
    assert page.locator("svg.chart rect.bar").count() >= 1
    shot(page, "stats")


def test_a_hostile_archived_page_runs_no_script_and_loads_nothing_live(site, page):
    history, base = site
    console, requests, dialogs = [], [], []
    page.on("console", lambda m: console.append(m.text))
    page.on("request", lambda r: requests.append(r.url))
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    for path in (f"/web/{TS}/{history.hostile_url}", f"/web/{TS}if_/{history.hostile_url}"):
        page.goto(base + path)  # the banner page, then the content opened directly
        target = page.frame_locator("iframe.archived") if "if_" not in path else page
        assert target.locator("h1#hostile").inner_text() == "A hostile page"
        page.wait_for_timeout(700)  # time for a refresh, an onload, a fetch
        assert "PWNED" not in page.title()
        if "if_" not in path:
            shot(page, "hostile")
    assert not [m for m in console if "PWNED" in m]
    assert not dialogs
    assert requests and all(u.startswith(base + "/") for u in requests), requests
    assert not any("pwned" in u for u in requests)
