"""The rules a change of a minimum is checked against under its dimension's lease
(core.memory.why_wait): pure, so each is a line here; the moto and dynalite suites
(test_hold_races, test_state_machine) run them against real races."""

from __future__ import annotations

import pytest

from ddb_capacity_runtime.core.memory import why_wait

SEEN = (100, 400, None)  # base, set_to, intent as the tick read them


def test_nothing_moved_and_no_hold_needs_more_goes_ahead() -> None:
    assert why_wait(SEEN, SEEN, 400, 400, held=0, new=300) is None
    assert why_wait(SEEN, SEEN, 400, 400, held=300, new=300) is None


@pytest.mark.parametrize(
    ("now_seen", "minimum"),
    [
        ((100, 500, None), 400),  # a request raised it since
        ((100, 400, 500), 400),  # one is under way
        (SEEN, 450),  # the target moved (an operator, a stale listing)
        (SEEN, None),  # the target says nothing sound: unknown is never acted on
    ],
)
def test_a_memory_or_minimum_that_moved_waits(
    now_seen: tuple[int | None, ...], minimum: int | None
) -> None:
    assert why_wait(SEEN, now_seen, 400, minimum, held=0, new=300) == (
        "its minimum moved since it was read"
    )


def test_a_change_below_a_hold_recorded_since_waits() -> None:
    assert why_wait(SEEN, SEEN, 400, 400, held=2_000, new=300) == (
        "a hold since it was read needs 2,000"
    )
