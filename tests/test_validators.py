"""Cache validators (bspcrawl.index.validators): header parsing, and the store against a
dict model (hypothesis), with HDF5 round trips."""

import doctest
import io

import h5py
import numpy as np
import pytest
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from bspcrawl.index import validators
from bspcrawl.index.validators import (
    ETAG_MAX,
    UINT32_MAX,
    Validators,
    ValidatorStore,
    fresh_until,
    parse_cache_control,
    parse_etag,
    parse_http_date,
    revalidate,
)
from tests.machines import machine_test

I64 = np.iinfo(np.int64)
T = 784111777  # Sun, 06 Nov 1994 08:49:37 GMT


def reloaded(store: ValidatorStore) -> ValidatorStore:
    """``store`` saved to an in-memory HDF5 file and loaded back."""
    with h5py.File(io.BytesIO(), "w") as f:
        store.save(f.create_group("v"))
        return ValidatorStore.load(f["v"])


def put(store: ValidatorStore, rows: list[tuple[int, Validators]]) -> None:
    store.update([fp for fp, _ in rows], [r.etag for _, r in rows],
                 [r.last_modified for _, r in rows], [r.expires for _, r in rows],
                 [r.fetched for _, r in rows], [r.content_fp for _, r in rows])


# ------------------------------------------------------------------- header parsing


def test_docstring_examples():
    assert doctest.testmod(validators).failed == 0


@pytest.mark.parametrize("text", [
    "Sun, 06 Nov 1994 08:49:37 GMT",  # IMF-fixdate
    "Sunday, 06-Nov-94 08:49:37 GMT",  # obsolete RFC 850
    "Sun Nov  6 08:49:37 1994",  # obsolete asctime
])
def test_http_date_forms(text):
    assert parse_http_date(text) == T


@pytest.mark.parametrize("text", [
    "", "0", "-1", "garbage", "Mon, 32 Nov 1994 08:49:37 GMT", "Sun, 06 Nov 1994 25:00:00 GMT",
    "Thu, 01 Jan 1970 00:00:00 GMT",  # 0 is "none"
    "Sun, 07 Feb 2106 06:28:16 GMT",  # 2**32: beyond uint32
])
def test_invalid_http_dates_are_ignored(text):
    assert parse_http_date(text) is None


def test_http_date_limits():
    assert parse_http_date("Sun, 07 Feb 2106 06:28:15 GMT") == UINT32_MAX
    assert parse_http_date(validators.format_http_date(1)) == 1


@pytest.mark.parametrize("value, kept", [
    ('"5e1f-4a3b2c1d"', '"5e1f-4a3b2c1d"'),
    ('  W/"5e1f-4a3b"  ', 'W/"5e1f-4a3b"'),
    ("unquoted-tag", "unquoted-tag"),  # kept as sent: the server compares it byte for byte
    ('""', '""'),
    ('"caf\xe9"', '"caf\xe9"'),  # obs-text (header lines are decoded as Latin-1)
    ('"a b"', ""), ('"a\tb"', ""), ('"a\x7fb"', ""), ("", ""), ('"\u20ac"', ""),
    ('"' + "x" * ETAG_MAX + '"', '"' + "x" * ETAG_MAX + '"'),
    ('"' + "x" * (ETAG_MAX + 1) + '"', ""),
    ('"a", "b"', ""),  # a list is not an ETag
])
def test_parse_etag(value, kept):
    assert parse_etag(value) == kept


def test_cache_control():
    cc = parse_cache_control('Max-Age = 5, no-cache="a, b\\"c", private,max-age=9, ,')
    assert cc == {"max-age": "5", "no-cache": 'a, b"c', "private": None}
    assert parse_cache_control("") == {}


@pytest.mark.parametrize("headers, until", [
    ({}, 0),
    ({"cache-control": "max-age=60"}, T + 60),
    ({"cache-control": "public, max-age=60", "expires": "Sun, 06 Nov 1994 09:49:37 GMT"},
     T + 60),  # max-age wins
    ({"expires": "Sun, 06 Nov 1994 09:49:37 GMT"}, T + 3600),
    ({"expires": "Sun, 06 Nov 1994 09:49:37 GMT", "date": "Sun, 06 Nov 1994 09:00:00 GMT"},
     T + 2977),  # lifetime is Expires - Date, counted from our clock
    ({"expires": "0"}, 0), ({"expires": "Sun, 06 Nov 1994 08:00:00 GMT"}, 0),
    ({"cache-control": "max-age=abc", "expires": "Sun, 06 Nov 1994 09:49:37 GMT"}, 0),
    ({"cache-control": "max-age=60, no-cache"}, 0),
    ({"cache-control": "no-store", "expires": "Sun, 06 Nov 1994 09:49:37 GMT"}, 0),
    ({"cache-control": "max-age=60", "age": "50"}, T + 10),
    ({"cache-control": "max-age=60", "age": "70"}, 0),
    ({"cache-control": "max-age=60", "age": "x"}, T + 60),
    ({"cache-control": "max-age=99999999999"}, UINT32_MAX),
])
def test_fresh_until(headers, until):
    assert fresh_until(headers, T) == until


def test_from_response_and_revalidation():
    headers = {"etag": 'W/"5e1f-4a3b"', "last-modified": "Sun, 06 Nov 1994 08:49:37 GMT",
               "cache-control": "max-age=100"}
    row = Validators.from_response(headers, T + 1000.7, content_fp=2**64 - 1)
    assert row == Validators('W/"5e1f-4a3b"', T, T + 1100, T + 1000, 2**64 - 1)
    assert revalidate(row.etag, row.last_modified) == (
        'If-None-Match: W/"5e1f-4a3b"', "If-Modified-Since: Sun, 06 Nov 1994 08:49:37 GMT")
    assert revalidate("", 0) == ()
    store = ValidatorStore()
    put(store, [(1, row)])
    assert store.lookup([1, 2]).fresh(T + 1099).tolist() == [True, False]
    assert not store.lookup([1]).fresh(T + 1100).any()
    # A 304 that repeats nothing keeps the validators, the body and the lifetime.
    again = Validators.from_response({}, T + 5000, previous=row)
    assert again == Validators('W/"5e1f-4a3b"', T, T + 5100, T + 5000, 2**64 - 1)
    newer = Validators.from_response({"etag": '"n"', "expires": "0"}, T + 6000, previous=row)
    assert newer == Validators('"n"', T, 0, T + 6000, 2**64 - 1)
    bad = Validators.from_response({"etag": "a b", "last-modified": "yesterday"}, T)
    assert bad == Validators(fetched=T)


# ------------------------------------------------------------ store: model-based test

FPS = st.sampled_from([int(I64.min), int(I64.max), 0, -1, 1, 2**40, -(2**40), 2**62 + 3]) \
    | st.integers(-20, 20)
ETAGC = st.sampled_from([chr(c) for c in [*range(0x21, 0x7F), *range(0x80, 0x100)]])
BODIES = st.text(ETAGC, max_size=12) | st.text(ETAGC, min_size=ETAG_MAX - 4, max_size=ETAG_MAX)
ETAGS = st.just("") | BODIES.map(lambda b: f'"{b}"') | BODIES.map(lambda b: f'W/"{b}"') \
    | st.text(ETAGC, min_size=1, max_size=12) \
    | st.sampled_from(['"', 'W/"', "W/", 'W/""', '""', '"W/"', "W/x", '"x'])
TIMES = st.sampled_from([0, 1, UINT32_MAX, T]) | st.integers(0, UINT32_MAX)
ROWS = st.builds(Validators, ETAGS, TIMES, TIMES, TIMES, st.integers(0, 2**64 - 1))


class StoreMachine(RuleBasedStateMachine):
    """Batches of updates, lookups and save/load against a dict of the last row per
    fingerprint; ``_check()`` after every step."""

    @initialize()
    def start(self) -> None:
        self.store = ValidatorStore()
        self.model: dict[int, Validators] = {}

    @rule(batch=st.lists(st.tuples(FPS, ROWS), max_size=12))
    def update(self, batch: list[tuple[int, Validators]]) -> None:
        put(self.store, batch)
        self.model.update(batch)  # the last of a repeated fp wins

    @rule(fps=st.lists(FPS, max_size=20))
    def lookup(self, fps: list[int]) -> None:
        found = self.store.lookup(fps)
        assert len(found) == len(fps)
        assert found.found.tolist() == [fp in self.model for fp in fps]
        assert [found.row(i) for i in range(len(fps))] == [self.model.get(fp) for fp in fps]
        now = T
        assert found.fresh(now).tolist() == [
            fp in self.model and self.model[fp].expires > now for fp in fps]

    @rule(fp=FPS)
    def get(self, fp: int) -> None:
        assert self.store.get(fp) == self.model.get(fp)

    @rule()
    def save_and_load(self) -> None:
        self.store = reloaded(self.store)

    @invariant()
    def consistent(self) -> None:
        self.store._check()
        assert len(self.store) == len(self.model)


TestStoreMachine = machine_test(StoreMachine, 150, 30)


# ---------------------------------------------------------------- store: edge cases


def test_round_trip_is_exact():
    rng = np.random.default_rng(7)
    store = ValidatorStore()
    n = 3000
    fps = rng.integers(I64.min, I64.max, n, dtype=np.int64)
    etags = [f'"{i:x}-{i * 7:x}"' if i % 3 else "" for i in range(n)]
    store.update(fps, etags, rng.integers(0, 2**32, n), rng.integers(0, 2**32, n) * (fps % 2),
                 rng.integers(0, 2**32, n), rng.integers(0, 2**64, n, dtype=np.uint64))
    store.update(fps[:100], [""] * 100, [0] * 100, [0] * 100, [5] * 100, [9] * 100)
    before = store.lookup(fps)
    with h5py.File(io.BytesIO(), "w") as f:
        store.save(f.create_group("a"))
        loaded = ValidatorStore.load(f["a"])
        loaded.save(f.create_group("b"))
        for name in ("fp", "etag", "last_modified", "expires", "fetched", "content_fp"):
            assert f["a"][name].dtype == f["b"][name].dtype
            assert np.array_equal(f["a"][name][:], f["b"][name][:])
    after = loaded.lookup(fps)
    for name in ("found", "content_fp", "fetched", "last_modified", "expires"):
        assert np.array_equal(getattr(before, name), getattr(after, name))
    assert before.etag == after.etag
    loaded._check()


def test_rewrites_replace_rows():
    store = ValidatorStore()
    fps = np.arange(1000, dtype=np.int64)
    for k in range(30):
        store.update(fps, [f'"version-{k}-{i}"' for i in range(1000)], [T] * 1000,
                     [0] * 1000, [T + k] * 1000, [k] * 1000)
        store._check()
    assert len(store) == 1000
    assert store.get(999) == Validators('"version-29-999"', T, 0, T + 29, 29)


def test_memory_per_row_is_bounded():
    store = ValidatorStore()
    n = 100_000
    store.update(np.arange(n), [""] * n, [0] * n, [T] * n, [T] * n, [1] * n)
    assert store.nbytes <= 44 * n * 5 // 4


def test_lookup_of_an_empty_store():
    found = ValidatorStore().lookup([1, 2, 3])
    assert not found.found.any() and found.etag == ["", "", ""] and found.row(0) is None
    assert len(ValidatorStore().lookup([])) == 0


@pytest.mark.parametrize("change, message", [
    (dict(etags=["a b"]), "invalid ETag"),
    (dict(etags=["\u20ac"]), "invalid ETag"),
    (dict(etags=['"' + "x" * (ETAG_MAX + 1) + '"']), "invalid ETag"),
    (dict(fetched=[2**32]), "fetched outside"),
    (dict(last_modified=[-1]), "last_modified outside"),
    (dict(expires=[1, 2]), "one value per fingerprint"),
])
def test_bad_updates_raise_and_change_nothing(change, message):
    store = ValidatorStore()
    args = dict(fps=[5], etags=['"e"'], last_modified=[1], expires=[2], fetched=[3],
                content_fp=[4])
    with pytest.raises(ValueError, match=message):
        store.update(**{**args, **change})
    store._check()
    assert len(store) == 0


def test_load_rejects_foreign_groups():
    with h5py.File(io.BytesIO(), "w") as f:
        g = f.create_group("x")
        with pytest.raises(ValueError, match="not a bspcrawl-validators"):
            ValidatorStore.load(g)
        ValidatorStore().save(f.create_group("ok"))
        del f["ok/fp"]
        f["ok/fp"] = np.array([3, 1], np.int64)
        with pytest.raises(ValueError, match="corrupt"):
            ValidatorStore.load(f["ok"])
