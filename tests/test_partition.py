"""Partition by host (the directory every rank holds alike) and the byte encoding of URL
batches."""

import random

import numpy as np

from bspcrawl.messages import ANCHOR_BYTES, Link, clip_anchor
from bspcrawl.partition import (
    REFUSED,
    Directory,
    decode,
    encode,
    host_pair,
    pack,
    unpack,
)
from bspcrawl.urls import host_key

URLS = [f"http://127.1.0.{h}:8765/p{i}.html" for h in range(1, 60) for i in range(3)]


def dealt(size, urls=URLS, rounds=3, seed=0):
    """A directory that learnt the hosts of ``urls`` in ``rounds`` random batches."""
    rng = random.Random(seed)
    directory = Directory(size)
    hosts = list(dict.fromkeys(host_pair(host_key(u)) for u in urls))
    rng.shuffle(hosts)
    for part in np.array_split(np.array(hosts), rounds):
        directory.assign(map(tuple, part.tolist()))
    return directory


def test_same_host_same_owner_and_hosts_dealt_evenly():
    for size in (1, 2, 3, 8):
        d = dealt(size)
        owners = {}
        for u in URLS:
            owners.setdefault(u.split("/")[2], set()).add(d.owner(u))
        assert all(len(o) == 1 for o in owners.values())
        per_rank = np.bincount([o.pop() for o in owners.values()], minlength=size)
        assert per_rank.max() - per_rank.min() <= 1


def test_every_rank_deals_alike_whatever_the_order_within_a_batch():
    a, b = Directory(4), Directory(4)
    batches = [[5, 3, 9], [7, 3, 1, 11], [2]]
    for batch in batches:
        a.assign((h, h) for h in batch)
        b.assign((h, h) for h in reversed(batch))
    assert a.owners == b.owners and list(a.owners) == list(b.owners)
    assert a.owners == {3: 0, 5: 1, 9: 2, 1: 3, 7: 0, 11: 1, 2: 2}


def test_unknown_hosts_are_held_and_a_checkpoint_restores_onto_any_size():
    d = dealt(3, URLS[:30])
    boxes, held, refused = d.bucket([Link(u) for u in URLS])
    assert refused == 0
    assert [x.url for x in held] == URLS[30:]
    for rank, box in enumerate(boxes):
        assert box and all(d.owner(x.url) == rank for x in box)
    same = Directory.from_state(d.state(), 3)
    assert same.owners == d.owners
    other = Directory.from_state(d.state(), 5)
    assert list(other.owners) == list(d.owners)
    assert np.bincount(list(other.owners.values())).tolist() == [2, 2, 2, 2, 2]
    other.assign([host_pair(host_key(URLS[-1]))])
    assert other.owner(URLS[-1]) == 0 and other.rank_of(host_key(URLS[-1])) == 0


def test_encode_decode_round_trip_keeps_order_and_fields():
    links = [Link("http://a.example/x?q=1%20", 3, 1), Link("https://b.example/é", 0, 0),
             Link("http://c.example/", 1, 0, clip_anchor("Read  the\u2028 café\x85 manual")),
             Link("http://d.example/", 2, 0, clip_anchor("x " * 500))]
    assert decode(encode(links)) == links
    assert links[2].anchor == "Read the café manual" and len(links[3].anchor) == ANCHOR_BYTES


def test_pack_unpack_concatenates_rank_batches():
    boxes = [[Link("http://a/1", 1)], [], [Link("http://c/3", 2, 1), Link("http://c/4")]]
    buf, counts = pack(boxes)
    assert buf.dtype == np.uint8 and counts.tolist() == [len(encode(b)) for b in boxes]
    assert unpack(buf, counts) == boxes[0] + boxes[2]


def test_a_domain_gets_at_most_its_cap_of_hosts_and_every_rank_refuses_the_same():
    flood = [f"http://a{i}.flood.example/" for i in range(10)]
    other = ["http://www.example.org/", "http://blog.example.org/"]
    pairs = [host_pair(host_key(u)) for u in flood + other]
    a, b = Directory(2, max_domain_hosts=3), Directory(2, max_domain_hosts=3)
    a.assign(pairs)
    b.assign(reversed(pairs))
    assert a.owners == b.owners
    assert sum(a.owner(u) == REFUSED for u in flood) == 7
    assert all(a.owner(u) in (0, 1) for u in other)  # another domain, its own count
    boxes, held, refused = a.bucket([Link(u) for u in flood + other])
    assert refused == 7 and held == [] and sum(map(len, boxes)) == 5
    restored = Directory.from_state(a.state(), 2, max_domain_hosts=3)
    assert restored.owners == a.owners
    restored.assign([host_pair("a99.flood.example:80")])  # still full after a checkpoint
    assert restored.owner("http://a99.flood.example/") == REFUSED


def test_past_the_deal_limit_hosts_are_hashed_and_the_directory_stays_bounded():
    hosts = [host_pair(f"h{i}.test:80") for i in range(40)]
    d = Directory(3, deal=10)
    d.assign(hosts[:6])
    assert not d.full and d.rank_of("h39.test:80") is None  # unknown: held, announced
    d.assign(hosts[6:25])  # the first 10 by hash are dealt, the others hashed
    assert d.full and len(d.owners) == 10 and len(d.host_domains) == 10
    d.assign(hosts[25:])
    assert len(d.owners) == 10  # hosts past the limit cost the directory nothing
    boxes, held, _ = d.bucket([Link(f"http://h{i}.test/") for i in range(40)])
    assert not held and sum(map(len, boxes)) == 40
    for h, _ in hosts:
        assert d.owner_of(h) == d.owners.get(h, h % 3)
        assert d.owns(d.owner_of(h))(h)
    # every rank agrees, and a resume on another P deals the same 10 and hashes the rest
    other = Directory.from_state(d.state(), 4, deal=10)
    assert other.full and list(other.owners) == list(d.owners)
    assert [other.owner_of(h) for h, _ in hosts if h not in d.owners] == [
        h % 4 for h, _ in hosts if h not in d.owners]
