"""64-bit SimHash of a page's text, for near-duplicate detection.

Charikar (2002), as Manku, Jain and Das Sarma use it for web crawling (WWW 2007): each bit
is 1 when more features have it set than clear; pages within ``K = 3`` bits are
near-duplicates. Features are the page's word pairs, counted with repeats (they tell
near-copies apart better than terms, whose common words would decide every bit; see
docs/duplicates.md), each term hash first mixed by murmur3's finaliser since polynomial
hashes have weak low bits. The bit counts come from one ``bincount`` of the features' bytes.

>>> from bspcrawl.index.terms import count_terms
>>> text = b" ".join(b"w%d" % i for i in range(1000))  # 1,000 words
>>> a = simhash(count_terms(text))
>>> distance(a, simhash(count_terms(text + b" two more")))  # a near-duplicate
1
>>> distance(a, simhash(count_terms(text.replace(b"w1", b"v1"))))  # 111 words changed
10
>>> simhash(count_terms(b"")), simhash(count_terms(b"one"))  # no word pair
(0, 0)
"""

from __future__ import annotations

import numpy as np

from bspcrawl.index.terms import TermCounts

__all__ = ["K", "distance", "mix", "simhash"]

K = 3  # largest Hamming distance between near-duplicates

_C1, _C2 = np.uint64(0xFF51AFD7ED558CCD), np.uint64(0xC4CEB9FE1A85EC53)
_S = np.uint64(33)
_PAIR = np.uint64(0x9E3779B97F4A7C15)  # odd: a pair (a, b) is mix(a) * _PAIR + mix(b)
_BYTE_BITS = np.unpackbits(np.arange(256, dtype=np.uint8)[:, None], axis=1,
                           bitorder="little").astype(np.int64)  # [v, k]: bit k of byte v
_COLUMN = np.arange(8, dtype=np.intp) * 256  # byte j of a feature counts at 256 j + value


def mix(hashes: np.ndarray) -> np.ndarray:
    """murmur3's 64-bit finaliser of int64 ``hashes`` (as uint64)."""
    x = hashes.view(np.uint64)
    with np.errstate(over="ignore"):
        x = (x ^ (x >> _S)) * _C1
        x = (x ^ (x >> _S)) * _C2
    return x ^ (x >> _S)


def simhash(terms: TermCounts) -> int:
    """The SimHash of a page's word pairs (0 for fewer than two words)."""
    words = terms.sequence
    if len(words) < 2:
        return 0
    x = mix(words)
    with np.errstate(over="ignore"):
        pairs = x[:-1] * _PAIR + x[1:]
    by_byte = np.bincount((pairs.view(np.uint8).reshape(-1, 8) + _COLUMN).ravel(),
                          minlength=8 * 256).reshape(8, 256)
    ones = (by_byte @ _BYTE_BITS).ravel()  # ones[8 j + k]: features with bit 8 j + k set
    return int(np.packbits(2 * ones > len(pairs), bitorder="little").view("<u8")[0])


def distance(a: int, b: int) -> int:
    """Hamming distance of two 64-bit fingerprints."""
    return (a ^ b).bit_count()
