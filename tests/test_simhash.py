"""The 64-bit SimHash of a page's terms: near-copies within K bits, unrelated pages not."""

import itertools
import random

import numpy as np

from bspcrawl.index.simhash import K, distance, mix, simhash
from bspcrawl.index.terms import count_terms
from bspcrawl.robots.links import LinkCache, parse_html
from bspcrawl.testweb import Web, WebConfig


def test_mix_spreads_every_input_bit_over_the_output():
    x = np.arange(1, 4097, dtype=np.int64)  # hashes that differ only in their low bits
    bits = np.unpackbits(mix(x).view(np.uint8).reshape(-1, 8), axis=1)
    assert 0.45 < bits.mean() < 0.55
    assert (abs(bits.mean(axis=0) - 0.5) < 0.15).all()


def test_simhash_depends_on_the_word_pairs_in_proportion_only():
    words = [f"w{i}" for i in range(500)]
    text = " ".join(words).encode()
    assert simhash(count_terms(text)) == simhash(count_terms(text.upper() + b"!")) != 0
    shuffled = words[:]
    random.Random(1).shuffle(shuffled)
    assert distance(simhash(count_terms(text)), simhash(count_terms(" ".join(shuffled)
                                                                     .encode()))) > K
    twice = count_terms(text + b" " + text)  # each pair twice, and one more
    assert distance(simhash(count_terms(text)), simhash(twice)) <= 1
    assert simhash(count_terms(b"")) == simhash(count_terms(b"one")) == 0


def test_near_copies_of_testweb_pages_are_within_k_bits_and_other_pages_are_not():
    web = Web(WebConfig(pages=300, hosts=5, near_mirrors=2, mirrors=1))
    cache = LinkCache()

    def fingerprint(url):
        r = web.resource(url)
        body = web.html(r) if web.copy_of[r] < 0 else web.copy_html(r)
        return simhash(count_terms(parse_html(body, url, cache).text))

    copies = web.copies()
    near = [distance(fingerprint(a), fingerprint(b)) for a, b, kind in copies if kind == "near"]
    exact = [distance(fingerprint(a), fingerprint(b)) for a, b, kind in copies if kind == "exact"]
    assert len(near) >= 10 and len(exact) >= 3
    assert exact == [0] * len(exact)
    assert np.mean(np.array(near) <= K) >= 0.8  # docs/duplicates.md: recall ~0.9
    originals = sorted({b for _, b, _ in copies})
    apart = [distance(fingerprint(a), fingerprint(b))
             for a, b in itertools.combinations(originals, 2)]
    assert np.mean(np.array(apart) > K) >= 0.99
