"""Tokenising page text into term counts for the inverted index (term frequency, TF).

Bytes, not regexes (DESIGN.md, "What we measured about speed", item 3): one
``bytes.translate`` lower-cases ASCII letters and turns every other byte that is
not a word byte into a space, ``split`` cuts the tokens, ``Counter`` counts them.
Word bytes are ``[a-z0-9]`` after lower-casing, plus every byte >= 0x80, so UTF-8
encoded words ("café", "東京") survive whole; non-ASCII letters are not case-folded.
Tokens longer than ``MAX_TERM_BYTES`` are dropped (base64 blobs, long hashes), looked
for among the distinct terms (a C-level ``max(map(len, ...))``): a regex over the text
for a run of 65 word bytes cost a third of the whole count (it retries at every byte).

>>> sorted(term_counts(b"The cat, the HAT; caf\\xc3\\xa9!").items())
[(b'caf\\xc3\\xa9', 1), (b'cat', 1), (b'hat', 1), (b'the', 2)]
"""

from __future__ import annotations

from collections import Counter

__all__ = ["MAX_TERM_BYTES", "term_counts"]

MAX_TERM_BYTES = 64
"""Longest term kept, in bytes."""


def _word_byte(b: int) -> bool:
    return 48 <= b <= 57 or 97 <= b <= 122 or b >= 0x80


_TABLE = bytes(
    b + 32 if 65 <= b <= 90 else b if _word_byte(b) else 32 for b in range(256)
)


def term_counts(text: bytes) -> Counter[bytes]:
    """Count the terms of UTF-8 *text*: ``{term: occurrences}`` (a Counter)."""
    counts = Counter(text.translate(_TABLE).split())
    if max(map(len, counts), default=0) > MAX_TERM_BYTES:  # rare: only then find them
        for term in [t for t in counts if len(t) > MAX_TERM_BYTES]:
            del counts[term]
    return counts
