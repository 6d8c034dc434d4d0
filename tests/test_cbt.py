"""The CBT priority queue (bspcrawl.cbt) against simple models, plus its id table.

``QueueMachine`` is the model-based test of every :class:`BulkQueue`; the QuickHeap and
binary heap tests subclass it."""

import doctest
import heapq
import io
import random

import h5py
import numpy as np
import pytest
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from bspcrawl.cbt import CBT, BlockCache, BulkQueue, IdTable, base, cost, idtable, keys, tree
from tests.machines import machine_test

I64 = np.iinfo(np.int64)
EMPTY_IDS = np.empty(0, np.int64)


def best(model: dict[int, float], r: int) -> tuple[list[int], list[float]]:
    """The documented order: priority descending, then id ascending."""
    top = sorted(model.items(), key=lambda kv: (-kv[1], kv[0]))[:r]
    return [k for k, _ in top], [p for _, p in top]


def pairs(got: tuple[np.ndarray, np.ndarray]) -> list[tuple[int, float]]:
    return list(zip(got[0].tolist(), got[1].tolist(), strict=True))


def fill(q: BulkQueue, items: dict[int, float]) -> None:
    q.insert_many(np.array(list(items), dtype=np.int64), np.array(list(items.values())))


def reloaded(q: BulkQueue) -> BulkQueue:
    """``q`` saved to an in-memory HDF5 file and loaded back."""
    with h5py.File(io.BytesIO(), "w") as f:
        q.save(f.create_group("q"))
        return type(q).load(f["q"])


# ---------------------------------------------------------------- model-based (hypothesis)

IDS = st.integers(-40, 40) | st.sampled_from([int(I64.min), int(I64.max), 2**40, -(2**40)])
PRIOS = st.sampled_from([0.0, 1.0, 1.0, 2.5, -3.0, float("inf"), float("-inf")]) | st.floats(
    -1e6, 1e6, allow_nan=False
)


class QueueMachine(RuleBasedStateMachine):
    """Interleaved bulk and single-item operations against a dict model (sorted on
    demand), with save/load; ``_check()`` after every step.  ``make(variant)`` builds
    the queue under test (a CBT with ``variant`` items per bucket)."""

    @staticmethod
    def make(variant: int) -> BulkQueue:
        return CBT(variant)

    @initialize(variant=st.sampled_from([1, 2, 3, 4, 8]))
    def start(self, variant: int) -> None:
        self.q = self.make(variant)
        self.model: dict[int, float] = {}

    @rule(batch=st.dictionaries(IDS, PRIOS, max_size=30))
    def insert_many(self, batch: dict[int, float]) -> None:
        clash = batch.keys() & self.model.keys()
        if clash:  # a queued id: rejected as a whole, nothing inserted
            with pytest.raises(ValueError, match="already queued"):
                fill(self.q, batch)
            batch = {k: p for k, p in batch.items() if k not in clash}
        fill(self.q, batch)
        self.model.update(batch)

    @rule(r=st.integers(0, 40))
    def extract_many(self, r: int) -> None:
        ids, prios = self.q.extract_many(r)
        assert ids.dtype == np.int64 and prios.dtype == np.float64
        want_ids, want_prios = best(self.model, r)
        assert prios.tolist() == want_prios
        assert ids.tolist() == want_ids
        for k in want_ids:
            del self.model[k]

    @rule(r=st.integers(0, 40))
    def peek(self, r: int) -> None:
        ids, prios = self.q.peek(r)
        assert (ids.tolist(), prios.tolist()) == best(self.model, r)

    @precondition(lambda self: self.model)
    @rule(data=st.data(), prio=PRIOS)
    def update(self, data: st.DataObject, prio: float) -> None:
        item = data.draw(st.sampled_from(sorted(self.model)))
        self.q.update(item, prio)
        self.model[item] = prio

    @precondition(lambda self: self.model)
    @rule(data=st.data())
    def delete(self, data: st.DataObject) -> None:
        item = data.draw(st.sampled_from(sorted(self.model)))
        self.q.delete(item)
        del self.model[item]

    @rule()
    def save_and_load(self) -> None:
        self.q = reloaded(self.q)

    @rule(item=IDS)
    def absent_items_raise(self, item: int) -> None:
        if item in self.model:
            assert item in self.q
            return
        assert item not in self.q
        with pytest.raises(KeyError):
            self.q.update(item, 1.0)
        with pytest.raises(KeyError):
            self.q.delete(item)

    @invariant()
    def consistent(self) -> None:
        self.q._check()
        assert len(self.q) == len(self.model)
        assert bool(self.q) == bool(self.model)


TestQueueMachine = machine_test(QueueMachine, 100, 40)


# ---------------------------------------------------------------- edge cases


def test_docstring_examples():
    for module in (tree, idtable, keys, cost, base):
        assert doctest.testmod(module).failed == 0


def test_empty_queue():
    q = CBT()
    assert len(q) == 0 and not q and 5 not in q
    for op in (q.extract_many, q.peek):
        ids, prios = op(3)
        assert ids.dtype == np.int64 and prios.dtype == np.float64 and ids.size == prios.size == 0
    with pytest.raises(KeyError):
        q.update(5, 1.0)
    with pytest.raises(KeyError):
        q.delete(5)
    q.insert_many([], [])
    q.insert_many(np.array([], dtype=np.float64), np.array([]))
    assert len(q) == 0
    q._check()


def test_single_item():
    q = CBT(4)
    q.insert_many(np.array([42]), np.array([0.5]))
    assert len(q) == 1 and q and 42 in q and 41 not in q
    assert pairs(q.peek()) == pairs(q.peek(1)) == [(42, 0.5)]
    q.update(42, -1.0)
    assert q.peek(5)[1].tolist() == [-1.0]
    ids, prios = q.extract_many(10)
    assert ids.tolist() == [42] and prios.tolist() == [-1.0]
    assert len(q) == 0 and 42 not in q
    q._check()


@pytest.mark.parametrize("bucket", [1, 2])
def test_tiny_buckets(bucket):
    rng = random.Random(bucket)
    q = CBT(bucket)
    model = {i: rng.choice([0.0, 1.0, 2.0]) + rng.random() for i in range(-50, 50)}
    fill(q, model)
    q._check()
    for r in (0, 1, 3, 7, 200):
        ids, prios = q.extract_many(r)
        assert (ids.tolist(), prios.tolist()) == best(model, r)
        for k in ids.tolist():
            del model[k]
        q._check()
    assert not q


def test_equal_priorities_go_to_the_smaller_id():
    q = CBT(3)
    ids = np.array([9, -4, 7, 0, 3, -100, 12])
    q.insert_many(ids, np.ones(ids.size))
    q.insert_many(np.array([5, 6]), np.array([1.0, 2.0]))
    assert q.extract_many(4)[0].tolist() == [6, -100, -4, 0]
    q.update(12, 1.0)  # same priority: position by id
    assert q.extract_many(10)[0].tolist() == [3, 5, 7, 9, 12]


def test_negative_and_extreme_ids():
    q = CBT(2)
    ids = [int(I64.min), -1, 0, int(I64.max), -(2**62)]
    fill(q, dict(zip(ids, [1.0, 5.0, 3.0, 4.0, 2.0], strict=True)))
    assert int(I64.min) in q and int(I64.max) in q and 2**63 not in q
    assert q.extract_many(5)[0].tolist() == [-1, int(I64.max), 0, -(2**62), int(I64.min)]


def test_extreme_priorities():
    q = CBT(2)
    prios = [float("inf"), float("-inf"), 1.7976931348623157e308, -5e-324, 5e-324, -0.0, 0.0,
             -1.7976931348623157e308]
    q.insert_many(np.arange(len(prios)), np.array(prios))
    ids, got = q.extract_many(len(prios))
    assert got.tolist() == sorted(prios, reverse=True)
    assert ids.tolist() == [0, 2, 4, 5, 6, 3, 7, 1]  # -0.0 is stored as 0.0: tie by id
    assert not np.signbit(got[(got == 0)]).any()


def test_nan_is_rejected():
    q = CBT()
    with pytest.raises(ValueError, match="NaN"):
        q.insert_many(np.array([1, 2]), np.array([1.0, np.nan]))
    assert len(q) == 0
    q.insert_many(np.array([1]), np.array([1.0]))
    with pytest.raises(ValueError, match="NaN"):
        q.update(1, float("nan"))
    assert q.peek()[1].tolist() == [1.0]


def test_id_dtypes():
    q = CBT()
    q.insert_many(np.array([1, 2], dtype=np.int32), np.array([1, 2], dtype=np.int8))
    q.insert_many(np.array([3], dtype=np.uint64), np.array([3.0], dtype=np.float32))
    q.insert_many([4, -5], [4.0, 5.0])
    assert q.extract_many(5)[0].tolist() == [-5, 4, 3, 2, 1]
    for bad in (np.array([1.0]), np.array([True]), np.array(["a"]), [2**64], [None]):
        with pytest.raises(TypeError):
            q.insert_many(bad, [1.0])
    with pytest.raises(ValueError, match="int64"):
        q.insert_many(np.array([2**63], dtype=np.uint64), [1.0])
    with pytest.raises(TypeError):
        q.insert_many([1], ["high"])
    with pytest.raises(ValueError, match="shape"):
        q.insert_many([1, 2], [1.0])
    with pytest.raises(ValueError, match="1-D"):
        q.insert_many(np.array([[1]]), np.array([[1.0]]))
    with pytest.raises(TypeError):
        q.update(1.0, 2.0)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        q.update(True, 2.0)
    assert 1.0 not in q and "x" not in q and len(q) == 0


def test_duplicate_ids_are_rejected_without_side_effects():
    q = CBT(2)
    q.insert_many(np.arange(5), np.arange(5.0))
    with pytest.raises(ValueError, match="repeated"):
        q.insert_many(np.array([10, 11, 10]), np.ones(3))
    with pytest.raises(ValueError, match="already queued"):
        q.insert_many(np.array([10, 3]), np.ones(2))
    assert len(q) == 5 and 10 not in q and 11 not in q
    q._check()
    q.insert_many(np.array([10, 11]), np.ones(2))
    assert len(q) == 7


def test_bad_arguments():
    for bad in (0, -3):
        with pytest.raises(ValueError):
            CBT(bad)
    for bad in (2.0, "8", True):
        with pytest.raises(TypeError):
            CBT(bad)  # type: ignore[arg-type]
    q = CBT()
    with pytest.raises(ValueError):
        q.extract_many(-1)
    for bad in (1.5, True):
        with pytest.raises(TypeError):
            q.extract_many(bad)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        q.update(1, "high")  # type: ignore[arg-type]


def test_grow_shrink_and_repack():
    rng = np.random.default_rng(7)
    q = CBT(16)
    ids = rng.choice(10**9, 20_000, replace=False)
    prios = rng.pareto(1.5, ids.size)
    for chunk in np.array_split(np.arange(ids.size), 37):  # uneven batches: partial buckets
        q.insert_many(ids[chunk], prios[chunk])
    q._check()
    grown = q._L
    order = np.lexsort((ids, -prios))
    done = 0
    while len(q) > 2000:
        got, _ = q.extract_many(997)
        assert got.tolist() == ids[order[done:done + 997]].tolist()
        done += 997
    q._check()
    assert grown > q._L and q.counters["cbt/rebuilds"] > 0
    rest = ids[order[done:]].tolist()
    for i in rest[::3]:  # scattered deletes leave partial buckets: they get repacked
        q.delete(i)
    q._check()
    assert q.counters["cbt/repacks"] > 0
    assert q.extract_many(len(q))[0].tolist() == [i for k, i in enumerate(rest) if k % 3]
    assert not q
    q._check()


# ---------------------------------------------------------------- seeded stress


class Model:
    """heapq with versioned entries: the reference for the stress test."""

    def __init__(self) -> None:
        self.prio: dict[int, tuple[float, int]] = {}
        self.heap: list[tuple[float, int, int]] = []
        self.version = 0

    def set(self, item: int, p: float) -> None:
        self.version += 1
        self.prio[item] = (p, self.version)
        heapq.heappush(self.heap, (-p, item, self.version))

    def top(self, r: int, remove: bool) -> list[tuple[int, float]]:
        out, keep = [], []
        while self.heap and len(out) < r:
            e = heapq.heappop(self.heap)
            if self.prio.get(e[1], (None, None))[1] == e[2]:
                out.append((e[1], -e[0]))
                keep.append(e)
        if remove:
            for item, _ in out:
                del self.prio[item]
        else:
            for e in keep:
                heapq.heappush(self.heap, e)
        return out


@pytest.mark.parametrize("bucket", [4, 64])
def test_seeded_stress(bucket):
    """20,000 random operations per bucket size against the heapq model."""
    rng = random.Random(2008 + bucket)
    gen = np.random.default_rng(2008 + bucket)
    q, m = CBT(bucket), Model()
    next_id = -(2**40)
    for step in range(20_000):
        op = rng.random()
        if op < 0.35:
            k = rng.choice([0, 1, rng.randrange(3 * bucket + 2)])
            ids = np.arange(next_id, next_id + k)
            next_id += k + rng.randrange(3)
            prios = np.where(gen.random(k) < 0.3, gen.integers(0, 2, k), gen.pareto(1.5, k))
            q.insert_many(ids, prios)
            for i, p in zip(ids.tolist(), prios.tolist(), strict=True):
                m.set(i, p)
        elif op < 0.6:
            r = rng.randrange(3 * bucket + 2)
            got = q.extract_many(r)
            assert pairs(got) == m.top(r, remove=True)
        elif op < 0.7:
            r = rng.randrange(2 * bucket + 2)
            got = q.peek(r)
            assert pairs(got) == m.top(r, remove=False)
        elif m.prio:
            item = rng.choice(list(m.prio)) if len(m.prio) < 64 else next(iter(m.prio))
            if op < 0.85:
                p = rng.paretovariate(1.5)
                q.update(item, p)
                m.set(item, p)
            else:
                q.delete(item)
                del m.prio[item]
        assert len(q) == len(m.prio)
        if step % 1000 == 0:
            q._check()
    q._check()


# ---------------------------------------------------------------- the id table


def test_idtable_against_a_dict():
    rng = np.random.default_rng(3)
    t, model = IdTable(), {}  # 16 slots: grows by rehashing
    for _ in range(1500):
        keys = rng.integers(-60, 60, rng.integers(0, 25))
        remap = t.reserve(keys.size)
        if remap is not None:
            model = {k: int(remap[h]) for k, h in model.items()}
        if len(set(keys.tolist())) < keys.size or model.keys() & set(keys.tolist()):
            with pytest.raises(ValueError):
                t.insert(keys)
        else:
            handles = t.insert(keys)
            t.vals[handles] = keys + 100
            model.update(zip(keys.tolist(), handles.tolist(), strict=True))
        gone = [k for k in model if rng.random() < 0.3]
        t.remove(np.array([model.pop(k) for k in gone], dtype=np.int64))
        assert len(t) == len(model) == np.count_nonzero(t.vals >= 0)
        assert t.tomb == np.count_nonzero(t.vals == -2)
        for k in range(-60, 60):
            h = t.find(k)
            assert h == model.get(k, -1) and (h < 0 or t.vals[h] == k + 100)


def same_home(t: IdTable, count: int) -> list[int]:
    """``count`` ids that hash to one slot of ``t``."""
    cand = np.arange(1, 200_000, dtype=np.int64)
    home = t._home(cand)
    return cand[home == home[0]][:count].tolist()


def test_idtable_repeated_id_behind_a_third_one():
    t = IdTable()
    a, b = same_home(t, 2)
    with pytest.raises(ValueError, match="repeated"):
        t.insert(np.array([a, b, b]))  # a takes the slot, both b's probe on together
    assert len(t) == 0 and (t.vals == -1).all()
    q = CBT()
    with pytest.raises(ValueError, match="repeated"):
        q.insert_many([a, b, b], [1.0, 2.0, 3.0])
    assert len(q) == 0


def test_idtable_tombstones():
    t = IdTable()
    a, b, c = same_home(t, 3)
    ha, hb = t.insert(np.array([a, b]))
    t.remove(np.array([ha]))  # b lies behind a: a's slot must stay a tombstone
    assert t.tomb == 1 and t.find(b) == hb
    (hc,) = t.insert(np.array([c]))
    assert hc == ha and t.tomb == 0  # the tombstone is reused
    t.remove(np.array([hb]))  # an EMPTY slot follows b: no tombstone left
    assert t.tomb == 0 and t.find(c) == hc and t.find(b) == -1


# ---------------------------------------------------------------- counters, I/O, save/load


def test_work_counters():
    rng = np.random.default_rng(5)
    q = CBT(16)
    ids = rng.choice(10**9, 5000, replace=False)
    q.insert_many(ids[:2500], rng.pareto(1.1, 2500))
    # The batch sort, and the L - 1 matches of the tree grown for it; replays are deferred.
    assert q.counters["queue/comparisons"] == cost.sort_comparisons(2500) + q._L - 1
    q.flush()
    q.insert_many(ids[2500:], rng.pareto(1.1, 2500))
    c0 = dict(q.counters)
    q.flush()  # replaying the new buckets' paths charges their matches and exchanges now
    c = {k: v - c0[k] for k, v in q.counters.items()}
    assert c["cbt/exchanges"] > 0 and c["cbt/matches"] > 0
    # A match: 1, plus 1 if the loser is not empty; an exchange of m items: m - 1.
    merges = c["cbt/exchange_items"] - c["cbt/exchanges"]
    assert c["cbt/matches"] + merges <= c["queue/comparisons"] <= 2 * c["cbt/matches"] + merges
    before = q.counters["queue/comparisons"]
    q.extract_many(400)
    assert q.counters["queue/comparisons"] > before + 400


def test_block_io_counts_each_block_once_when_the_memory_holds_the_queue():
    rng = np.random.default_rng(6)
    big, small = BlockCache(memory=10**6, block=16), BlockCache(memory=64, block=16)
    q = CBT(16, caches=[big, small])
    for _ in range(10):
        q.insert_many(rng.integers(-(2**62), 2**62, 300), rng.random(300))
        q.extract_many(150)
    assert big.writes == 0 and big.reads <= q._L  # bucket = block: each read once at most
    assert small.reads > big.reads and small.writes > 0


def test_save_load_is_exact():
    rng = np.random.default_rng(8)
    q = CBT(8)
    q.insert_many(np.arange(3000), rng.pareto(1.5, 3000))
    q.extract_many(1111)
    q.insert_many(np.arange(5000, 5100), rng.random(100))  # pending replays are saved too
    copy = reloaded(q)
    for name in ("_s", "_h", "_cnt", "_cbt"):
        assert np.array_equal(getattr(q, name), getattr(copy, name))
    assert vars(q._table).keys() == vars(copy._table).keys()
    for name, v in vars(q._table).items():
        assert np.array_equal(v, getattr(copy._table, name))
    assert copy._dirty == q._dirty and copy.counters == q.counters and len(copy) == len(q)
    for a in (q, copy):
        a.update(5003, 9.0)
        a.delete(17)
        a.insert_many(np.arange(-50, 0), np.ones(50))
    assert pairs(q.extract_many(700)) == pairs(copy.extract_many(700))
    assert copy.counters == q.counters
    copy._check()


def test_load_refuses_another_kind():
    from bspcrawl.cbt import QuickHeap
    with h5py.File(io.BytesIO(), "w") as f:
        QuickHeap().save(f.create_group("q"))
        with pytest.raises(ValueError, match="QuickHeap"):
            CBT.load(f["q"])
        with pytest.raises(ValueError, match="None"):
            CBT.load(f.create_group("empty"))
