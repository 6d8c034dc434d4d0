"""The T-way parallel CBT (bspcrawl.cbt.parallel) against a model of T sorted lists."""

import doctest
import io

import h5py
import numpy as np
import pytest
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from bspcrawl.cbt import ParallelCBT, parallel
from tests.machines import machine_test
from tests.test_cbt import IDS, PRIOS, best, pairs


def reloaded(q: ParallelCBT) -> ParallelCBT:
    with h5py.File(io.BytesIO(), "w") as f:
        q.save(f.create_group("q"))
        return ParallelCBT.load(f["q"], threads=q._threads)


class ParallelMachine(RuleBasedStateMachine):
    """Each tree must give its own best items; together min(r, len) of them, at least
    r // T from every tree that has them."""

    @initialize(trees=st.integers(1, 4), threads=st.sampled_from([1, 2]),
                bucket=st.sampled_from([1, 3, 8]))
    def start(self, trees: int, threads: int, bucket: int) -> None:
        self.q = ParallelCBT(trees, bucket, threads)
        self.model: dict[int, float] = {}

    def teardown(self) -> None:
        self.q.close()

    @rule(batch=st.dictionaries(IDS, PRIOS, max_size=30))
    def insert_many(self, batch: dict[int, float]) -> None:
        ids, prios = np.array(list(batch), np.int64), np.array(list(batch.values()))
        if batch.keys() & self.model.keys():  # refused as a whole
            with pytest.raises(ValueError, match="already queued"):
                self.q.insert_many(ids, prios)
            return
        self.q.insert_many(ids, prios)
        self.model.update(batch)

    @rule(r=st.integers(0, 40), remove=st.booleans())
    def extract_many(self, r: int, remove: bool) -> None:
        sizes = [len(t) for t in self.q.trees]
        ids, prios = self.q.extract_many(r) if remove else self.q.peek(r)
        assert ids.size == min(r, len(self.model))
        assert pairs((ids, prios)) == [(i, self.model[i]) for i in best(
            {i: self.model[i] for i in ids.tolist()}, r)[0]]  # ordered best first
        which = self.q.tree_of(ids)
        home = dict(zip(self.model, self.q.tree_of(list(self.model)).tolist(), strict=True))
        for t, size in enumerate(sizes):
            mine = {i: p for i, p in self.model.items() if home[i] == t}
            got = ids[which == t].tolist()
            assert len(got) >= min(size, r // len(sizes))
            assert sorted(got) == sorted(best(mine, len(got))[0])
        if remove:
            for i in ids.tolist():
                del self.model[i]

    @precondition(lambda self: self.model)
    @rule(data=st.data(), prio=PRIOS, delete=st.booleans())
    def change(self, data: st.DataObject, prio: float, delete: bool) -> None:
        item = data.draw(st.sampled_from(sorted(self.model)))
        if delete:
            self.q.delete(item)
            del self.model[item]
        else:
            self.q.update(item, prio)
            self.model[item] = prio

    @rule()
    def save_and_load(self) -> None:
        self.q.close()
        self.q = reloaded(self.q)

    @invariant()
    def consistent(self) -> None:
        self.q._check()
        assert len(self.q) == len(self.model) and bool(self.q) == bool(self.model)
        for i in list(self.model)[:3]:
            assert i in self.q


TestParallelMachine = machine_test(ParallelMachine, 40, 30)


def test_docstring_examples():
    assert doctest.testmod(parallel).failed == 0


def test_threads_change_nothing_but_the_clock():
    rng = np.random.default_rng(1)
    ids = rng.choice(2**62, 60_000, replace=False).astype(np.int64)
    prios = rng.pareto(1.1, ids.size)
    out = []
    for threads in (1, 4):
        with ParallelCBT(trees=4, bucket_size=32, threads=threads) as q:
            q.insert_many(ids[:40_000], prios[:40_000])
            got = [q.extract_many(3001)]
            q.insert_many(ids[40_000:], prios[40_000:])
            got.append(q.extract_many(5000))
            q._check()
            out.append((got, q.counters, [t.counters for t in q.trees]))
    (a, ca, ta), (b, cb, tb) = out
    assert all(pairs(x) == pairs(y) for x, y in zip(a, b, strict=True))
    assert ca == cb and ta == tb
    assert ca["queue/comparisons"] == sum(t["queue/comparisons"] for t in ta)


def test_failed_insert_leaves_nothing_behind():
    with ParallelCBT(trees=3, bucket_size=4) as q:
        q.insert_many(np.arange(30), np.arange(30.0))
        with pytest.raises(ValueError, match="repeated"):
            q.insert_many(np.array([100, 101, 100]), np.ones(3))
        with pytest.raises(ValueError, match="already queued"):
            q.insert_many(np.arange(100, 200).tolist() + [7], np.ones(101))
        assert len(q) == 30 and 100 not in q and 150 not in q
        q._check()


def test_quotas():
    q = ParallelCBT(trees=3, bucket_size=2, threads=1)
    q.insert_many(np.arange(40), np.arange(40.0))
    sizes = [len(t) for t in q.trees]
    assert sum(q._quotas(10)) == 10 and min(q._quotas(10)) >= 3
    assert q._quotas(40) == sizes and q._quotas(100) == sizes
    small = int(np.argmin(sizes))
    for i in np.flatnonzero(q.tree_of(np.arange(40)) == small).tolist()[1:]:
        q.delete(i)  # one item left in that tree: the others make up for it
    quotas = q._quotas(9)
    assert quotas[small] == 1 and sum(quotas) == 9


def test_bad_arguments():
    for bad in (0, -1):
        with pytest.raises(ValueError):
            ParallelCBT(trees=bad)
        with pytest.raises(ValueError):
            ParallelCBT(threads=bad)
    with pytest.raises(TypeError):
        ParallelCBT(trees=2.0)  # type: ignore[arg-type]
    q = ParallelCBT()
    with pytest.raises(KeyError):
        q.update(2**70, 1.0)
    with pytest.raises(ValueError):
        q.extract_many(-1)
    assert "x" not in q and True not in q
