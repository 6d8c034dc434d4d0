"""Version history (bspcrawl.index.history): ordering, year/month grouping, nearest-in-time
lookup (edge cases and a brute-force model), the body a revisit refers to, HDF5 round trip."""

import io
from datetime import UTC, datetime

import h5py
import numpy as np
import pytest

from bspcrawl.index.history import FIELDS, History, Version


def ts(*when: int) -> float:
    return datetime(*when, tzinfo=UTC).timestamp()


def v(fp: int, t: float, status: int = 200, content: int = 1, at: int = -1) -> Version:
    """A version whose body (if ``at`` >= 0) is the record at offset ``at`` of file 0."""
    return Version(fp, t, status, content, 0 if at >= 0 else -1, at, 100 if at >= 0 else 0)


def history(*versions: Version) -> History:
    h = History()
    for x in versions:
        h.append(x)
    return h


def test_versions_are_sorted_by_time_ties_in_append_order():
    h = history(v(1, 30.0, 200), v(2, 5.0), v(1, 10.0, 301), v(1, 30.0, 404), v(1, 20.0, 500))
    assert [(x.time, x.status) for x in h.versions(1)] == [
        (10.0, 301), (20.0, 500), (30.0, 200), (30.0, 404)]
    assert h.versions(3) == [] and h.latest(3) is None and h.nearest(3, 0.0) is None
    assert h.latest(1).status == 404 and len(h) == 5


@pytest.mark.parametrize("t, before, after, nearest", [
    (5.0, None, 10.0, 10.0),  # before the first version
    (10.0, 10.0, 10.0, 10.0),  # exactly on one: it is both before and after
    (14.0, 10.0, 20.0, 10.0),
    (15.0, 10.0, 20.0, 10.0),  # a tie goes to the earlier version
    (16.0, 10.0, 20.0, 20.0),
    (20.0, 20.0, 20.0, 20.0),
    (99.0, 40.0, None, 40.0),  # after the last
    (float("inf"), 40.0, None, 40.0),
    (float("-inf"), None, 10.0, 10.0),
])
def test_nearest(t, before, after, nearest):
    h = history(v(1, 40.0), v(1, 10.0), v(1, 20.0), v(2, 15.0))

    def time(side: str) -> float | None:
        found = h.nearest(1, t, side)
        return None if found is None else found.time

    assert (time("before"), time("after"), time("nearest")) == (before, after, nearest)


def test_nearest_single_version_and_bad_arguments():
    h = history(v(1, 10.0))
    assert h.nearest(1, -1e18).time == h.nearest(1, 1e18).time == 10.0
    with pytest.raises(ValueError, match="side"):
        h.nearest(1, 1.0, "closest")
    with pytest.raises(ValueError, match="number"):
        h.nearest(1, float("nan"))


def test_equal_times_before_takes_the_last_after_the_first():
    h = history(v(1, 10.0, 200), v(1, 10.0, 304), v(1, 10.0, 500))
    assert h.nearest(1, 10.0, "before").status == 500
    assert h.nearest(1, 10.0, "after").status == 200


def test_against_brute_force_with_appends_between_queries():
    """Batches of appends, each followed by queries, against a scan of every row."""
    rng = np.random.default_rng(3)
    h, rows = History(), []
    for step in range(40):
        n = int(rng.integers(1, 900))
        fps = rng.integers(0, 60, n)
        times = rng.integers(0, 500, n).astype(float)
        h.extend(fps, times, rng.integers(100, 600, n), rng.integers(0, 2**64, n, np.uint64))
        rows += list(zip(fps.tolist(), times.tolist(), strict=True))
        for fp in rng.integers(0, 62, 5).tolist():
            mine = sorted(((t, i) for i, (f, t) in enumerate(rows) if f == fp))
            assert [x.time for x in h.versions(fp)] == [t for t, _ in mine]
            t = float(rng.integers(-10, 510)) + 0.5 * (step % 2)
            before = [x for x, _ in mine if x <= t]
            after = [x for x, _ in mine if x >= t]
            got = h.nearest(fp, t, "before")
            assert (got.time if got else None) == (before[-1] if before else None)
            got = h.nearest(fp, t, "after")
            assert (got.time if got else None) == (after[0] if after else None)
            got = h.nearest(fp, t)
            if mine:
                best = min(x for x, _ in mine if abs(x - t) == min(abs(y - t) for y, _ in mine))
                assert got.time == best
            else:
                assert got is None
    assert len(h) == len(rows)


def test_original_is_the_record_a_revisit_refers_to():
    h = history(v(1, 10.0, 200, content=5, at=0),  # response record at offset 0
                v(1, 20.0, 304, content=5, at=0),  # not modified: body still at 0
                v(1, 30.0, 200, content=5, at=0),  # same body again: revisit of 0
                v(1, 35.0, 0, content=0),  # a timeout: no body
                v(2, 12.0, 200, content=7, at=900))
    assert h.original(1).time == 10.0
    assert h.latest(1).status == 0 and not h.latest(1).has_body
    assert h.latest(1, with_body=True).time == 30.0
    h.append(v(1, 40.0, 200, content=6, at=500))  # changed: a new response record
    h.append(v(1, 50.0, 304, content=6, at=500))
    assert h.original(1) == v(1, 40.0, 200, content=6, at=500)
    assert h.original(3) is None and history(v(3, 1.0, 0, 0)).original(3) is None


def test_hdf5_round_trip_is_exact():
    h = History()
    rng = np.random.default_rng(1)
    n = 5000
    cols = {"url_fp": rng.integers(-(2**63), 2**63 - 1, n, np.int64),
            "time": rng.random(n) * 2e9, "status": rng.integers(0, 600, n),
            "content_fp": rng.integers(0, 2**64, n, np.uint64),
            "warc_file": rng.integers(-1, 100, n), "warc_offset": rng.integers(0, 2**40, n),
            "warc_length": rng.integers(0, 2**31, n),
            "host": rng.integers(0, 2**63 - 1, n, np.int64)}
    h.extend(**cols)
    with h5py.File(io.BytesIO(), "w") as f:
        h.save(f.create_group("history"))
        for name, dtype in FIELDS.items():
            assert f["history"][name].dtype == np.dtype(dtype)
            assert np.array_equal(f["history"][name][:], np.asarray(cols[name], dtype))
        back = History.load(f["history"])
    assert len(back) == len(h)
    for fp in cols["url_fp"][:100].tolist():
        assert back.versions(fp) == h.versions(fp)


def test_empty_round_trip_and_foreign_groups():
    with h5py.File(io.BytesIO(), "w") as f:
        History().save(f.create_group("h"))
        assert len(History.load(f["h"])) == 0
        with pytest.raises(ValueError, match="not a bspcrawl-history"):
            History.load(f.create_group("other"))
        del f["h/time"]
        with pytest.raises(ValueError, match="missing"):
            History.load(f["h"])


def test_64_bit_values_are_exact():
    h = history(Version(-(2**63), 1e9 + 0.123456, 304, 2**64 - 1, 2**31 - 1, 2**62, 2**40))
    assert h.versions(-(2**63)) == [
        Version(-(2**63), 1e9 + 0.123456, 304, 2**64 - 1, 2**31 - 1, 2**62, 2**40)]
    h.extend([5, 6], [1.0, 2.0], [200, 200], [2**64 - 1, 2**63])
    assert [x.content_fp for x in h.versions(5) + h.versions(6)] == [2**64 - 1, 2**63]


def test_bad_batches_raise():
    h = History()
    with pytest.raises(ValueError, match="one value per version"):
        h.extend([1, 2], [1.0], [200, 200], [0, 0])
    with pytest.raises(ValueError, match="finite"):
        h.append(v(1, float("nan")))
    with pytest.raises(ValueError, match="extend"):
        h.extend([1], [1.0], [200], [-1])  # a content fingerprint is unsigned
    assert len(h) == 0
