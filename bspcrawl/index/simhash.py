"""64-bit SimHash of a page's terms, for near-duplicate detection.

Charikar (2002), as Manku, Jain and Das Sarma use it for web crawling (WWW 2007): every
feature hashes to 64 bits; each bit of the fingerprint is 1 when the features whose hash
has that bit set outweigh those whose hash has it clear. Pages whose fingerprints differ
in at most ``K = 3`` bits are near-duplicates (Manku et al.'s choice for 8 x 10^9 pages).

Features are the page's distinct terms (``index/terms.py``: computed at commit anyway),
each of weight 1. Weighting by ``tf`` lets the common words decide every bit: on 1,000
testweb pages, 22% of the pairs of unrelated pages came within 3 bits (0.03% with
``1 + log tf``, 0.005% with weight 1, nearly all of those pages sharing long runs of
text); docs/duplicates.md has the measurements, and the precision and recall. The
polynomial term hashes have weak low bits, so each goes through the murmur3 64-bit
finaliser first. One ``unpackbits`` and one column sum per page, no Python loop.

>>> from bspcrawl.index.terms import count_terms
>>> text = b" ".join(b"w%d" % i for i in range(1000))  # 1,000 distinct terms
>>> a = simhash(count_terms(text))
>>> distance(a, simhash(count_terms(text + b" two more")))  # a near-duplicate
1
>>> distance(a, simhash(count_terms(text.replace(b"w1", b"v1"))))  # 111 terms changed
8
>>> simhash(count_terms(b""))
0
"""

from __future__ import annotations

import numpy as np

from bspcrawl.index.terms import TermCounts

__all__ = ["K", "distance", "mix", "simhash"]

K = 3
"""Largest Hamming distance between the SimHashes of near-duplicates."""

_C1, _C2 = np.uint64(0xFF51AFD7ED558CCD), np.uint64(0xC4CEB9FE1A85EC53)
_S = np.uint64(33)


def mix(hashes: np.ndarray) -> np.ndarray:
    """murmur3's 64-bit finaliser of int64 ``hashes`` (as uint64): every output bit
    depends on every input bit."""
    x = hashes.view(np.uint64)
    with np.errstate(over="ignore"):
        x = (x ^ (x >> _S)) * _C1
        x = (x ^ (x >> _S)) * _C2
    return x ^ (x >> _S)


def simhash(terms: TermCounts) -> int:
    """The 64-bit SimHash (as a Python int, 0 for no terms) of a page's term counts."""
    if not len(terms):
        return 0
    bits = np.unpackbits(mix(terms.hashes).view(np.uint8).reshape(-1, 8), axis=1,
                         bitorder="little")  # row i: the 64 bits of term i, bit 0 first
    heavy = np.packbits(2 * bits.sum(axis=0, dtype=np.int32) > len(bits), bitorder="little")
    return int(heavy.view("<u8")[0])


def distance(a: int, b: int) -> int:
    """Hamming distance of two 64-bit fingerprints."""
    return (a ^ b).bit_count()
