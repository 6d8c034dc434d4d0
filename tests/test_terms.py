"""Tests for bspcrawl.index.terms."""

from __future__ import annotations

import doctest

from bspcrawl.index import terms
from bspcrawl.index.terms import MAX_TERM_BYTES, term_counts


def test_doctests() -> None:
    assert doctest.testmod(terms).failed == 0


def test_lower_cases_and_counts() -> None:
    assert term_counts(b"Hello hello HELLO world") == {b"hello": 3, b"world": 1}


def test_punctuation_and_whitespace_split() -> None:
    text = b"a-b_c.d\te\nf\r\ng(h)i[j]k{l}m<n>o'p\"q/r\\s:t;u,v!w?x@y#z$0%1^2&3*4+5=6|7~8`9"
    assert term_counts(text) == {bytes([c]): 1 for c in b"abcdefghijklmnopqrstuvwxyz0123456789"}


def test_digits_are_word_bytes() -> None:
    assert term_counts(b"mpi4py 2024 x86_64") == {b"mpi4py": 1, b"2024": 1, b"x86": 1, b"64": 1}


def test_utf8_words_survive() -> None:
    text = "Café café 東京 naïve".encode()
    assert term_counts(text) == {"café".encode(): 2, "東京".encode(): 1, "naïve".encode(): 1}


def test_long_tokens_are_dropped() -> None:
    ok = b"a" * MAX_TERM_BYTES
    assert term_counts(ok + b" " + b"b" * (MAX_TERM_BYTES + 1) + b" x") == {ok: 1, b"x": 1}


def test_empty_and_blank() -> None:
    assert term_counts(b"") == {}
    assert term_counts(b" \t\n.,;!\x00\x01") == {}
