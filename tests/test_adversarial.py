"""The crawl against a web that fights back: it ends on its own, fetches every page it
must, none it must not, and no more than the trap budget from any trap host."""

from collections import Counter

import pytest

from tests.crawling import crawl, fetched, serve

pytestmark = pytest.mark.slow


def test_the_adversarial_web(tmp_path):
    with serve(pages=150, hosts=8, adversarial=True, traps="all") as web:
        seeds = web.seeds()
        budget = web.trap_budget
        # no limit options: the default guards must end the traps (politeness off and
        # short waits only to keep the test fast)
        res = crawl(2, seeds, tmp_path / "out",
                    "--politeness-max-backoff", "2", "--window-straggler-timeout", "3")
    assert res.returncode == 0, res.stderr
    got = dict(fetched(tmp_path / "out"))
    must, may, must_not = web.categories(seeds)
    assert set(must) <= set(got), sorted(set(must) - set(got))[:5]
    assert not set(must_not) & set(got), sorted(set(must_not) & set(got))[:5]
    per_host = Counter(url.split("/")[2] for url in got)
    traps = web.trap_hosts()
    assert len(traps) == 3
    for origin in traps:
        assert 0 < per_host[origin.split("/")[2]] <= web.trap_limit(origin) == budget
