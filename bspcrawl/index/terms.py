"""Tokenising page text into term counts for the inverted index (term frequency, TF).

A term is a run of ``[a-z0-9]`` (ASCII lower-cased) and bytes >= 0x80, so UTF-8 words
survive whole, of at most ``MAX_TERM_BYTES`` (longer runs are blobs and hashes). No
Python object per token: ``bytes.translate`` then numpy find the runs and give each a
64-bit polynomial hash from prefix sums, and one sort counts them; a term's bytes are cut
out only when the index meets an unknown hash. Distinct terms collide with chance about
n^2 / 2^65 for n terms, and runs of 64 bytes are too short for the known colliding
strings of this hash.

>>> counts = count_terms(b"The cat, the HAT; caf\\xc3\\xa9!")
>>> sorted(counts.as_dict().items())
[(b'caf\\xc3\\xa9', 1), (b'cat', 1), (b'hat', 1), (b'the', 2)]
>>> term_hash(b"the") in counts.hashes.tolist()
True
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["EMPTY", "MAX_TERM_BYTES", "TermCounts", "count_terms", "count_terms_each",
           "count_terms_with", "page_pairs", "pair_hash", "term_hash", "words"]

MAX_TERM_BYTES = 64

_PAIR_MUL = np.uint64(0xC2B2AE3D27D4EB4F)  # odd: (a, b) -> a x M + b is one-to-one in b
_B = 0x9E3779B97F4A7C15  # odd, so invertible modulo 2^64
_B_INV = pow(_B, -1, 2**64)
_SPACE = 32


def _word_byte(b: int) -> bool:
    return 48 <= b <= 57 or 97 <= b <= 122 or b >= 0x80


_TABLE = bytes(
    b + 32 if 65 <= b <= 90 else b if _word_byte(b) else _SPACE for b in range(256)
)


class _Powers:
    """B^i and B^-i modulo 2^64 for i < len, grown by doubling."""

    def __init__(self) -> None:
        self.up = self.down = np.ones(1, np.uint64)

    def upto(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        if len(self.up) < n:
            size = max(n, 2 * len(self.up))
            self.up, self.down = (np.ones(size, np.uint64) for _ in range(2))
            with np.errstate(over="ignore"):
                self.up[1:] = np.cumprod(np.full(size - 1, _B, np.uint64))
                self.down[1:] = np.cumprod(np.full(size - 1, _B_INV, np.uint64))
        return self.up, self.down


_POWERS = _Powers()


@dataclass(slots=True)
class TermCounts:
    """The terms of one text: ``hashes`` (int64, sorted, distinct) and ``tf`` (int32)."""

    hashes: np.ndarray
    tf: np.ndarray
    _text: bytes  # the translated text
    _runs: np.ndarray  # the hash of each run, in text order
    _starts: np.ndarray  # where one run of each of ``hashes`` starts and ends
    _ends: np.ndarray

    def __len__(self) -> int:
        return len(self.hashes)

    @property
    def sequence(self) -> np.ndarray:
        """The hash of every term of the text in text order, repeats included (int64)."""
        return self._runs

    def terms(self, which: list[int]) -> list[bytes]:
        """The bytes of the terms ``hashes[which]``."""
        text, starts, ends = self._text, self._starts[which].tolist(), self._ends[which].tolist()
        return [text[a:b] for a, b in zip(starts, ends, strict=True)]

    def as_dict(self) -> dict[bytes, int]:
        """``{term: count}``, in hash order."""
        return dict(zip(self.terms(list(range(len(self)))), self.tf.tolist(), strict=True))


_NONE = np.zeros(0, np.int64)
EMPTY = TermCounts(_NONE, np.zeros(0, np.int32), b"", _NONE, _NONE, _NONE)


def _runs(text: bytes) -> tuple[bytes, np.ndarray, np.ndarray, np.ndarray]:
    """The translated *text*, and the hash, start and end of each of its terms (runs)."""
    t = text.translate(_TABLE)
    a = np.frombuffer(t, np.uint8)
    word = a != _SPACE
    edge = word[1:] != word[:-1]  # a run starts or ends after each True
    bounds = np.flatnonzero(edge) + 1
    if len(a) and word[0]:
        bounds = np.concatenate(([0], bounds))
    if len(bounds) % 2:
        bounds = np.concatenate((bounds, [len(a)]))
    starts, ends = bounds[0::2], bounds[1::2]
    short = ends - starts <= MAX_TERM_BYTES
    if not short.all():
        starts, ends = starts[short], ends[short]
    if not len(starts):
        return t, _NONE, _NONE, _NONE
    up, down = _POWERS.upto(len(a))
    prefix = np.empty(len(a) + 1, np.uint64)
    prefix[0] = 0
    with np.errstate(over="ignore"):
        np.cumsum(a * up[: len(a)], out=prefix[1:])
        h = ((prefix[ends] - prefix[starts]) * down[starts]).view(np.int64)
    return t, h, starts, ends


def _counted(t: bytes, h: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> TermCounts:
    """The term counts of the runs ``h`` (hashes) at ``starts``/``ends`` of ``t``."""
    if not len(h):
        return EMPTY
    order = np.argsort(h)
    ordered = h[order]
    first = np.flatnonzero(np.concatenate(([True], ordered[1:] != ordered[:-1])))
    tf = np.diff(np.append(first, len(ordered))).astype(np.int32)
    one = order[first]  # a run of each term
    at = np.int32 if len(t) < 2**31 else np.int64
    return TermCounts(ordered[first], tf, t, h, starts[one].astype(at), ends[one].astype(at))


def _each(h: np.ndarray, starts: np.ndarray, texts: list[bytes]
          ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(text index, term hash, count) of runs found in *texts* joined by newlines (``starts``
    counted from the first text's start), by text then hash."""
    if not len(h):
        return _NONE, _NONE, np.zeros(0, np.int32)
    sizes = np.fromiter((len(t) + 1 for t in texts), np.int64, len(texts))
    owner = np.searchsorted(np.cumsum(sizes), starts, side="right")
    order = np.lexsort((h, owner))
    owner, runs = owner[order], h[order]
    first = np.flatnonzero(np.concatenate(([True], (owner[1:] != owner[:-1])
                                           | (runs[1:] != runs[:-1]))))
    tf = np.diff(np.append(first, len(owner))).astype(np.int32)
    return owner[first], runs[first], tf


def words(text: bytes) -> list[bytes]:
    """The terms of UTF-8 *text* in text order, repeats included, as the index cuts them.

    >>> words(b"The cat, the CAT!")
    [b'the', b'cat', b'the', b'cat']
    """
    t, _, starts, ends = _runs(text)
    return [t[a:b] for a, b in zip(starts.tolist(), ends.tolist(), strict=True)]


def count_terms(text: bytes) -> TermCounts:
    """Count the terms of UTF-8 *text*."""
    return _counted(*_runs(text))


def count_terms_each(texts: list[bytes]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The term counts of each of *texts* in one pass, as (text index, term hash, count)
    triples by text then hash.

    >>> which, hashes, tf = count_terms_each([b"a b a", b"", b"b"])
    >>> which.tolist(), tf.tolist(), bool(hashes[2] == term_hash(b"b"))
    ([0, 0, 2], [2, 1, 1], True)
    """
    _, h, starts, _ = _runs(b"\n".join(texts))
    return _each(h, starts, texts)


def count_terms_with(text: bytes, parts: list[bytes]
                     ) -> tuple[TermCounts, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """``count_terms(text)`` and ``count_terms_each(parts)`` in one pass.

    >>> terms, (which, _, tf) = count_terms_with(b"a b a", [b"b", b"c c"])
    >>> sorted(terms.as_dict().items()), which.tolist(), tf.tolist()
    ([(b'a', 2), (b'b', 1)], [0, 1], [1, 2])
    """
    t, h, starts, ends = _runs(b"\n".join([text, *parts]))
    cut = int(np.searchsorted(starts, len(text)))  # the runs of text: a newline ends them
    return (_counted(t, h[:cut], starts[:cut], ends[:cut]),
            _each(h[cut:], starts[cut:] - (len(text) + 1), parts))


def term_hash(term: bytes) -> int:
    """The hash :func:`count_terms` gives the term ``term`` (already lower-cased)."""
    h = 0
    for i, b in enumerate(term):
        h = (h + b * pow(_B, i, 2**64)) % 2**64
    return h - 2**64 if h >= 2**63 else h


def pair_hash(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """The 32-bit hash (top half of ``first x M + second``) of adjacent term pairs: with a
    doc id it makes one int64 key; a collision gives a false phrase hit at worst."""
    with np.errstate(over="ignore"):
        return ((first.view(np.uint64) * _PAIR_MUL + second.view(np.uint64))
                >> np.uint64(32)).view(np.int64)


def page_pairs(terms: TermCounts) -> np.ndarray:
    """The distinct :func:`pair_hash` of a page's adjacent terms, sorted."""
    words = terms.sequence
    if len(words) < 2:
        return _NONE
    pairs = np.sort(pair_hash(words[:-1], words[1:]))
    return pairs[np.concatenate(([True], pairs[1:] != pairs[:-1]))]
