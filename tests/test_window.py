"""The sequence window: results arrive in any order, schedules leave in sequence order."""

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bspcrawl.index.window import ACKNOWLEDGED, DEFERRED, SCHEDULED, Window


def test_out_of_order_results_are_held_back_and_released_in_order():
    w = Window(3)
    a = w.open(["a0", "a1"], now=1.0)
    b = w.open(["b0"], now=2.0)
    c = w.open(["c0"], now=3.0)
    assert (a, b, c) == (0, 1, 2)
    w.deliver(c, 0, "C0")
    w.deliver(b, 0, "B0")
    assert w.release() == []  # 0 is not acknowledged: 1 and 2 wait
    w.deliver(a, 1, "A1")
    assert w.release() == []
    w.deliver(a, 0, "A0")
    released = w.release()
    assert [s.seq for s in released] == [0, 1, 2]
    assert released[0].results == ["A0", "A1"]  # job order, not arrival order
    w._check()


def test_full_sender_window_blocks_new_schedules():
    w = Window(2)
    w.open(["x"], 0.0)
    w.open(["y"], 0.0)
    assert w.full()
    with pytest.raises(RuntimeError, match="full"):
        w.open(["z"], 0.0)
    w.deliver(1, 0, "Y")
    assert w.release() == [] and w.full()  # a later ack does not free the window
    w.deliver(0, 0, "X")
    assert [s.seq for s in w.release()] == [0, 1]
    assert not w.full()
    assert w.open(["z"], 0.0) == 2


def test_empty_schedule_is_acknowledged_at_once():
    w = Window(1)
    seq = w.open([], 0.0)
    assert w.acknowledged(seq)
    assert [s.seq for s in w.release()] == [seq]


def test_late_or_duplicate_results_are_ignored():
    w = Window(2)
    seq = w.open(["j"], 0.0)
    assert w.outstanding[seq].status == SCHEDULED
    assert w.deliver(seq, 0, "first")
    assert w.outstanding[seq].status == ACKNOWLEDGED
    assert not w.deliver(seq, 0, "again")
    w.release()
    assert not w.deliver(seq, 0, "late")
    assert w.in_flight() == 0


def test_window_size_must_be_positive():
    with pytest.raises(ValueError):
        Window(0)


@given(st.lists(st.integers(0, 4), min_size=1, max_size=30), st.randoms())
def test_release_order_is_sequence_order_whatever_the_arrival_order(sizes, rnd: random.Random):
    w = Window(len(sizes))
    for n in sizes:
        w.open(list(range(n)), 0.0)
    arrivals = [(seq, i) for seq, n in enumerate(sizes) for i in range(n)]
    rnd.shuffle(arrivals)
    released = []
    for seq, i in arrivals:
        w.deliver(seq, i, (seq, i))
        released += w.release()
        w._check()
    released += w.release()
    assert [s.seq for s in released] == list(range(len(sizes)))
    for s in released:
        assert s.results == [(s.seq, i) for i in range(len(s.jobs))]


def test_release_upto_keeps_later_acknowledged_schedules():
    w = Window(3)
    for _ in range(3):
        w.open(["j"], 0.0)
    for seq in range(3):
        w.deliver(seq, 0, seq)
    assert [s.seq for s in w.release(upto=0)] == [0]
    assert [s.seq for s in w.release(upto=5)] == [1, 2]


def test_a_deferred_straggler_frees_the_window_and_is_delivered_late_once():
    w = Window(2)
    w.open(["a", "b"], 0.0)
    w.open(["c"], 0.0)
    w.deliver(0, 0, "A")
    w.deliver(1, 0, "C")
    assert w.full() and w.release() == []
    assert w.defer(0) == 1 and w.in_flight() == 1
    released = w.release()
    assert [s.seq for s in released] == [0, 1]
    assert released[0].results == ["A", DEFERRED]
    w._check()
    assert w.deliver(0, 1, "B") and w.late == ["B"]
    assert not w.deliver(0, 1, "B again") and w.late == ["B"]
    assert w.in_flight() == 0
