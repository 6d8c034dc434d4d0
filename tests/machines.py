"""Running hypothesis state machines as pytest test classes, with one set of settings."""

from __future__ import annotations

from hypothesis import HealthCheck, settings
from hypothesis.stateful import RuleBasedStateMachine


def machine_test(machine: type[RuleBasedStateMachine], examples: int, steps: int) -> type:
    """The pytest class that runs ``machine`` ``examples`` times, ``steps`` rules each
    (no deadline: the queues are timed by the scripts, not the tests)."""
    case = machine.TestCase
    case.settings = settings(max_examples=examples, stateful_step_count=steps, deadline=None,
                             suppress_health_check=[HealthCheck.too_slow])
    return case
