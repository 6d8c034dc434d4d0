"""The default trap guards end a crawl of a site with a shallow endless trap, and still
crawl a 20-level-deep documentation tree whole (in-process, P = 1, default limits)."""

import json
import subprocess

import pytest

from tests.crawling import PY, crawl, fetched
from tests.sites import Site, crawl_here, page

DEPTH = 20  # levels of the documentation tree
SPAN = 400  # calendar months served on each side of the entry: more than any default reaches


def month(k: int) -> str:
    """Path of the calendar month ``k`` months after 2024-05."""
    y, m = divmod(2024 * 12 + 4 + k, 12)
    return f"/cal/{y}/{m + 1:02d}/"


def routes() -> dict:
    """``/`` links a documentation tree ``/doc/l1/.../l20/`` (each level links the next
    and back up, like a Sphinx tree with next/up links) and an endless calendar."""
    tree = ["/doc/" + "".join(f"l{i}/" for i in range(1, n + 1)) for n in range(DEPTH + 1)]
    out = {"/robots.txt": [(404, {}, b"")], "/": [page(tree[0], month(0))]}
    for n, path in enumerate(tree):
        out[path] = [page(*tree[n + 1:n + 2], *tree[max(0, n - 1):n], "/")]
    for k in range(-SPAN, SPAN + 1):
        out[month(k)] = [page(month(k - 1), month(k + 1))]
    return out


def test_defaults_end_an_endless_calendar_and_keep_a_deep_tree_whole(tmp_path):
    site = Site(routes())
    try:
        with crawl_here(tmp_path, [site.url + "/"]) as f:
            got = set(f["pages/url"].asstr()[:])
            stopped = f.attrs["stopped"]
    finally:
        site.close()
    assert stopped == "done"
    tree = {site.url + "/doc/" + "".join(f"l{i}/" for i in range(1, n + 1))
            for n in range(DEPTH + 1)}
    assert tree <= got  # every level, the deepest 21 links from the seed
    months = {u for u in got if "/cal/" in u}
    # --max-depth 50: the entry month is 1 link from the seed, so 49 on each side
    assert months == {site.url + month(k) for k in range(-49, 50)}
    assert len(site.paths()) == len(set(site.paths()))


def one_domain(n: int, pages: int) -> list[Site]:
    """``n`` sites on 127.0.0.1 (other ports): hosts of one registered domain, as an
    address stands for itself. Each home links its pages and every other home."""
    sites = [Site({}) for _ in range(n)]
    homes = [s.url + "/" for s in sites]
    for s in sites:
        s.routes.update({"/robots.txt": [(404, {}, b"")],
                         "/": [page(*[f"/{i}" for i in range(pages)], *homes)],
                         **{f"/{i}": [page()] for i in range(pages)}})
    return sites


@pytest.mark.slow
@pytest.mark.parametrize(("option", "bound"), [("--max-domain-hosts", 2),
                                               ("--max-domain-pages", 30)])
def test_a_registered_domain_gets_its_budget_over_two_ranks(tmp_path, option, bound):
    sites = one_domain(4, 20)
    try:
        res = crawl(2, [sites[0].url + "/"], tmp_path / "out", option, str(bound))
    finally:
        for s in sites:
            s.close()
    assert res.returncode == 0, res.stderr
    got = [u for u, _ in fetched(tmp_path / "out")]
    assert len(got) == len(set(got))
    counters = json.loads(subprocess.run(
        [PY, "-m", "bspcrawl", "inspect", str(tmp_path / "out"), "--json"],
        capture_output=True, text=True, check=True).stdout)["counters"]
    if option == "--max-domain-hosts":
        assert len({u.split("/")[2] for u in got}) == 2 and len(got) == 2 * 21
        assert counters["exchange/domain_full"] > 0
    else:  # over two ranks, within half the budget more and one superstep's URLs
        assert bound <= len(got) <= 1.5 * bound + 4
        assert counters["frontier/domain_cap"] > 0
