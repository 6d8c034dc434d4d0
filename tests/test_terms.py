"""Tests for bspcrawl.index.terms."""

from __future__ import annotations

import doctest
import re
from collections import Counter

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from bspcrawl.index import terms
from bspcrawl.index.terms import MAX_TERM_BYTES, count_terms, term_hash


def counts(text: bytes) -> dict[bytes, int]:
    return count_terms(text).as_dict()


def test_doctests() -> None:
    assert doctest.testmod(terms).failed == 0


def test_lower_cases_and_counts() -> None:
    assert counts(b"Hello hello HELLO world") == {b"hello": 3, b"world": 1}


def test_punctuation_and_whitespace_split() -> None:
    text = b"a-b_c.d\te\nf\r\ng(h)i[j]k{l}m<n>o'p\"q/r\\s:t;u,v!w?x@y#z$0%1^2&3*4+5=6|7~8`9"
    assert counts(text) == {bytes([c]): 1 for c in b"abcdefghijklmnopqrstuvwxyz0123456789"}


def test_digits_are_word_bytes() -> None:
    assert counts(b"mpi4py 2024 x86_64") == {b"mpi4py": 1, b"2024": 1, b"x86": 1, b"64": 1}


def test_utf8_words_survive() -> None:
    text = "Café café 東京 naïve".encode()
    assert counts(text) == {"café".encode(): 2, "東京".encode(): 1, "naïve".encode(): 1}


def test_long_tokens_are_dropped() -> None:
    ok = b"a" * MAX_TERM_BYTES
    assert counts(ok + b" " + b"b" * (MAX_TERM_BYTES + 1) + b" x") == {ok: 1, b"x": 1}


def test_empty_and_blank() -> None:
    assert counts(b"") == {}
    assert counts(b" \t\n.,;!\x00\x01") == {}


def reference(text: bytes) -> Counter[bytes]:
    """The definition, the slow way: runs of word bytes, lower-cased, at most 64 bytes."""
    words = re.findall(rb"[A-Za-z0-9\x80-\xff]+", text)
    return Counter(w.lower() for w in words if len(w) <= MAX_TERM_BYTES)


_pieces = st.sampled_from([b"a", b"B", b"7", b" ", b"-", b"\n", b"\xc3\xa9", b"\x00", b"x" * 63,
                           b"y" * 64, b"z" * 65, b"Q" * 200, b".", b"_"])


@settings(max_examples=300, deadline=None)
@given(st.lists(_pieces, max_size=40).map(b"".join))
def test_same_counts_as_the_definition_and_hashes_of_the_terms(text: bytes) -> None:
    found = count_terms(text)
    assert found.as_dict() == reference(text)
    assert sorted(found.hashes.tolist()) == found.hashes.tolist()
    assert [term_hash(t) for t in found.as_dict()] == found.hashes.tolist()


def test_long_tokens_among_many() -> None:
    text = b" ".join([b"word"] * 1000 + [b"h" * 65, b"k" * 64, b"H" * 66])
    assert counts(text) == {b"word": 1000, b"k" * 64: 1}


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["a", "b", "c", "dd", "e1"]), max_size=40))
def test_page_pairs_are_the_distinct_hashes_of_adjacent_words(words):
    counts = count_terms(" ".join(words).encode())
    want = sorted({terms.pair_hash(np.array([term_hash(x.encode())]),
                                   np.array([term_hash(y.encode())]))[0].item()
                   for x, y in zip(words[:-1], words[1:], strict=True)})
    assert terms.page_pairs(counts).tolist() == want
