"""The seen set against a Python set: seeded random batches, small shards, spills, reloads."""

import numpy as np
import pytest

from bspcrawl.seen import INT64_MIN, SeenSet

INT64_MAX = np.iinfo(np.int64).max


def batch(rng: np.random.Generator, model: set[int], size: int) -> np.ndarray:
    """Fresh keys (some at the ends of int64), keys already in, and repeats in the batch."""
    fresh = rng.integers(INT64_MIN, INT64_MAX, size, dtype=np.int64, endpoint=True)
    fresh[rng.random(size) < 0.02] = INT64_MIN
    fresh[rng.random(size) < 0.02] = INT64_MAX
    known = np.array(sorted(model), dtype=np.int64)
    if len(known):
        take = rng.random(size) < 0.4
        fresh[take] = rng.choice(known, int(take.sum()))
    repeat = rng.random(size) < 0.2
    fresh[repeat] = rng.choice(fresh, int(repeat.sum()))
    return fresh


@pytest.mark.parametrize("seed", range(4))
def test_seen_set_against_a_python_set(tmp_path, seed):
    rng = np.random.default_rng(seed)
    spill = seed % 2 == 0
    seen = SeenSet(memory=8 * 150, spill_dir=tmp_path / "seen" if spill else None,
                   shard_max=64, delta_min=int(rng.integers(1, 40)))
    model: set[int] = set()
    for step in range(120):
        keys = batch(rng, model, int(rng.integers(0, 60)))
        assert seen.contains_batch(keys).tolist() == [k in model for k in keys.tolist()]
        expected_new = []
        for k in keys.tolist():
            expected_new.append(k not in model)
            model.add(k)
        assert seen.add_batch(keys).tolist() == expected_new
        assert len(seen) == len(model)
        seen._check()
        if step % 40 == 39:  # a checkpoint and a resume: to_array, into a new set
            array = seen.to_array()
            assert array.tolist() == sorted(model)
            seen.close()
            seen = SeenSet(memory=seen.memory, spill_dir=seen.spill_dir,
                           shard_max=seen.shard_max, delta_min=seen.delta_min)
            assert seen.add_batch(array).all()
            seen._check()
    probes = batch(rng, model, 200)
    assert seen.contains_batch(probes).tolist() == [k in model for k in probes.tolist()]
    assert all((k in seen) == (k in model) for k in probes[:20].tolist())
    if spill:
        assert seen.disk_bytes > 0 and seen.ram_bytes <= seen.memory + 16 * (seen.memory // 64)
        assert len(list((tmp_path / "seen").glob("run-*.npy"))) > 1
    assert len(seen._shards) > 3  # shards were cut
    seen.close()
    assert list((tmp_path).rglob("run-*")) == []


def test_worked_example_of_the_docstring():
    seen = SeenSet(shard_max=4, delta_min=4)
    assert seen.add_batch([-9, -4, 2, 5, 8, 11, 20]).all()  # into the shards, cut in two
    seen.add_batch([-1, 3, 7])
    assert [s.tolist() for s in seen._shards] == [[-9, -4, 2, 5], [8, 11, 20]]
    assert seen._lows[1] == 8 and seen._delta.to_array().tolist() == [-1, 3, 7]
    seen._check()
    assert seen.contains_batch([7, 6, 20]).tolist() == [True, False, True]
    assert seen.add_batch([6, 6, 8]).tolist() == [True, False, False]
    assert len(seen) == 11 and 6 in seen and 4 not in seen


def test_a_new_set_deletes_what_a_killed_process_spilled(tmp_path):
    seen = SeenSet(memory=0, spill_dir=tmp_path, delta_min=1)
    seen.add_batch(np.arange(100))
    assert seen.disk_bytes == 800 and seen.ram_bytes == 16  # the fences: keys 0 and 64
    again = SeenSet(memory=0, spill_dir=tmp_path)
    assert list(tmp_path.iterdir()) == [] and len(again) == 0


def test_a_checkpoints_sorted_keys_load_into_an_empty_set_at_once():
    rng = np.random.default_rng(5)
    keys = np.unique(rng.integers(INT64_MIN, 2**63 - 1, 5000, dtype=np.int64))
    s = SeenSet(shard_max=512, delta_min=64)
    assert s.add_batch(keys).all() and len(s) == len(keys)  # (no sort, no search)
    s._check()
    assert np.array_equal(s.to_array(), keys) and s.contains_batch(keys).all()
    more = rng.integers(INT64_MIN, 2**63 - 1, 300, dtype=np.int64)
    assert s.add_batch(np.concatenate([keys[:50], more])).tolist() == [False] * 50 + [
        m not in set(keys.tolist()) for m in more.tolist()]
    s._check()
