"""Per-host and per-registered-domain URL budgets, counted as URLs arrive."""

import numpy as np

from bspcrawl.budgets import Budgets
from bspcrawl.partition import notice, read_notices

WWW, BLOG = "http://www.example.org/", "http://blog.example.org/"


def test_a_host_budget_and_a_domain_budget_are_counted_on_arrival():
    b = Budgets(host_cap=3, domain_cap=5)
    got = [b.take(f"{WWW}{i}") for i in range(4)]
    assert got == ["", "", "", "frontier/host_cap"]
    got = [b.take(f"{BLOG}{i}") for i in range(3)]
    assert got == ["", "", "frontier/domain_cap"]  # 3 + 2: the domain is spent
    assert b.take("http://other.example.net/") == ""
    assert Budgets(0, 0).take(WWW) == "" and Budgets(1, 0).take(WWW) == ""


def test_ranks_tell_each_other_a_domain_once_they_took_a_share_of_it():
    a, b = Budgets(0, 8, ranks=2), Budgets(0, 8, ranks=2)  # told after 8 / (2 x 2) = 2 URLs
    a.take(WWW + "1")
    assert len(a.news()) == 0  # 1 < 2: not yet
    a.take(WWW + "2")
    news = a.news()
    assert news.tolist()[1] == 2 and len(a.news()) == 0  # told once
    b.add_news(news)
    for i in range(6):
        assert b.take(BLOG + str(i)) == ""
    assert b.take(BLOG + "x") == "frontier/domain_cap"  # 2 told + 6 own


def test_one_rank_tells_nobody():
    a = Budgets(0, 4)
    a.take(WWW)
    a.take(BLOG)
    assert len(a.news()) == 0 and a.new == {}


def test_budgets_survive_a_checkpoint_with_the_same_or_another_p():
    a = Budgets(2, 10, ranks=2)
    for u in (WWW + "1", WWW + "2", BLOG + "1"):
        a.take(u)
    a.add_news(np.array([hash_of(a), 4]))  # another rank told 4 URLs of the domain
    state = a.state()
    same = Budgets(2, 10, ranks=2)
    same.restore([state], lambda key: True)
    assert same.hosts == a.hosts and same.domains == a.domains and same.new == a.new
    assert same.take(WWW + "3") == "frontier/host_cap"
    other = Budgets(2, 10, ranks=3)  # P changed: each new rank reads every old rank's state
    other.restore([state, state], lambda key: key.startswith("blog."))
    assert other.hosts == {"blog.example.org:80": 1}
    assert other.domains[hash_of(a)] == 4 + 2 * 3 and other.new == {}


def hash_of(b: Budgets) -> int:
    (d,) = set(b.domain_of.values())
    return d


def test_notices_carry_hosts_and_news_and_are_empty_without_either():
    assert len(notice([], np.zeros(0, np.int64))) == 0
    parts = [notice([(1, 10), (2, 10)], np.array([10, 3])), notice([], np.array([20, 1])),
             np.zeros(0, np.int64), notice([(3, 30)], np.zeros(0, np.int64))]
    found = np.array([len(p) for p in parts])
    hosts, news = read_notices(np.concatenate(parts), found, rank=0)
    assert hosts == [(1, 10), (2, 10), (3, 30)]
    assert news.tolist() == [20, 1]  # rank 0's own news are not added again
    assert read_notices(np.concatenate(parts), found, rank=1)[1].tolist() == [10, 3]
