"""SortedKeys against a dict of key -> row: seeded random batches, the worked example."""

import numpy as np
import pytest

from bspcrawl.sortedkeys import SortedKeys

I64 = np.iinfo(np.int64)


@pytest.mark.parametrize("seed", range(6))
def test_sorted_keys_against_a_dict(seed):
    rng = np.random.default_rng(seed)
    keys = SortedKeys(recent_max=int(rng.integers(1, 20)))
    model: dict[int, int] = {}
    pool = rng.integers(I64.min, I64.max, 400, dtype=np.int64, endpoint=True)
    pool[:2] = I64.min, I64.max
    for _ in range(150):
        batch = rng.choice(pool, int(rng.integers(0, 40)))
        assert keys.contains(batch).tolist() == [k in model for k in batch.tolist()]
        expected = []
        for k in batch.tolist():
            expected.append(k not in model)
            model.setdefault(k, len(model))
        assert keys.add(batch).tolist() == expected
        probe = rng.choice(pool, 30)
        assert keys.find(probe).tolist() == [model.get(k, -1) for k in probe.tolist()]
        assert len(keys) == len(model)
        keys._check()
        if rng.random() < 0.1:
            keys.merge()
            keys._check()
    assert keys.to_array().tolist() == sorted(model)


def test_worked_example_of_the_docstring():
    keys = SortedKeys(recent_max=2)
    assert keys.add([30, 10, 20]).all()
    assert keys.add([25, 10, 5, 25]).tolist() == [True, False, True, False]
    assert keys._recent.tolist() == [5, 25] and keys._recent_rows.tolist() == [4, 3]
    assert keys.find([25, 7, 30]).tolist() == [3, -1, 0]
    keys.add([1])
    assert keys._keys.tolist() == [1, 5, 10, 20, 25, 30] and not len(keys._recent)
    assert keys._rows.tolist() == [5, 4, 1, 2, 3, 0]
    keys._check()


def test_bad_recent_max():
    with pytest.raises(ValueError):
        SortedKeys(0)
