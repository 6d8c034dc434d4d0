"""Partition by host and the byte encoding of URL batches."""

import numpy as np

from bspcrawl.partition import Link, bucket, decode, encode, owner, pack, unpack


def test_same_host_same_owner_and_all_ranks_used():
    for size in (1, 2, 3, 8):
        urls = [f"http://127.1.0.{h}:8765/p{i}.html" for h in range(1, 60) for i in range(3)]
        owners = {}
        for u in urls:
            owners.setdefault(u.split("/")[2], set()).add(owner(u, size))
        assert all(len(o) == 1 for o in owners.values())
        assert set().union(*owners.values()) == set(range(size))


def test_encode_decode_round_trip_keeps_order_and_fields():
    links = [Link("http://a.example/x?q=1%20", 3, 1), Link("https://b.example/é", 0, 0)]
    assert decode(encode(links)) == links


def test_pack_unpack_concatenates_rank_batches():
    boxes = [[Link("http://a/1", 1)], [], [Link("http://c/3", 2, 1), Link("http://c/4")]]
    buf, counts = pack(boxes)
    assert buf.dtype == np.uint8 and counts.tolist() == [len(encode(b)) for b in boxes]
    assert unpack(buf, counts) == boxes[0] + boxes[2]


def test_bucket_routes_every_link_to_its_owner():
    links = [Link(f"http://127.1.0.{h}:1/") for h in range(1, 30)]
    boxes = bucket(links, 4)
    assert sum(len(b) for b in boxes) == len(links)
    for rank, box in enumerate(boxes):
        assert all(owner(x.url, 4) == rank for x in box)
