"""The broker's and the tick's decisions as pure functions of plain data, taken before
anything is written: how a dimension is raised to what its holds ask
(`core.hold_requests.held_raise`, which a capacity request and a surge both write), and a tick's
table with this hour's plans (`core.forecast.with_plans`), on which it decides before
it keeps them in the state store."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from ddb_capacity_runtime.core.decreases import DecreaseLedger
from ddb_capacity_runtime.core.floorplan import FloorPlan
from ddb_capacity_runtime.core.forecast import with_plans
from ddb_capacity_runtime.core.hold_requests import HeldRaise, held_raise
from ddb_capacity_runtime.core.holds import HeldDimension, Hold, lift
from ddb_capacity_runtime.core.table_limits import Limits
from ddb_capacity_runtime.core.tables import Dimension, ManagedTable
from tests.support.hypothesis_profiles import examples

units = st.integers(1, 40_000)


def test_a_hold_over_the_target_moves_its_minimum_and_the_table() -> None:
    assert held_raise(100, 300, 100, 100, 1_000) == HeldRaise(300, True, True)
    # the target's minimum is there already; the table is not yet
    assert held_raise(100, 300, 200, 300, 1_000) == HeldRaise(300, False, True)
    # no target: the table alone
    assert held_raise(100, 300, 100) == HeldRaise(300, False, True)
    # holds that ask less than the base ask for the base, and nothing moves
    assert held_raise(500, 300, 500, 500, 1_000) == HeldRaise(500, False, False)


def test_a_hold_over_the_targets_max_is_refused_with_nothing_moved() -> None:
    assert held_raise(100, 2_000, 100, 100, 1_000) == HeldRaise(2_000, over_max=True)


@settings(max_examples=examples(200), deadline=None)
@given(units, st.integers(0, 40_000), units, st.none() | st.tuples(units, units))
def test_a_raise_to_the_holds_never_lowers_anything(
    base: int, held: int, provisioned: int, target: tuple[int, int] | None
) -> None:
    low, high = target if target is not None else (None, None)
    plan = held_raise(base, held, provisioned, low, high)
    assert plan.want == max(base, held)  # never below the base, nor the holds' level
    if plan.over_max:
        assert high is not None and plan.want > high
        assert not plan.set_min and not plan.update_table
        return
    assert plan.set_min == (low is not None and low < plan.want)  # only ever up
    assert plan.update_table == (provisioned < plan.want)  # only ever up


def dimension(name: str, plan: FloorPlan | None = None) -> Dimension:
    limits = Limits(min_capacity=5, max_capacity=1_000, target_utilization=0.7)
    return Dimension("T", None, name, 100, DecreaseLedger(), None, limits, plan=plan)


def test_this_hours_plans_replace_the_kept_ones_of_the_dimensions_reached() -> None:
    kept = FloorPlan(600, (50, 300), 85, 3, 120)
    new = FloorPlan(660, (80, 400), 80, 2, 100)
    table = ManagedTable("T", "arn", {}, [dimension("read", kept), dimension("write", kept)])
    # the forecast reached write (a new plan) and read (no plan now: it loses its own)
    planned = with_plans(table, {("T", None, "write"): new, ("T", None, "read"): None})
    assert [d.plan for d in planned.dimensions] == [None, new]
    assert [d.plan for d in table.dimensions] == [kept, kept]  # what was read is unchanged
    # a table the forecast did not reach keeps its plans
    assert with_plans(table, {("U", None, "write"): new}) is table


NOW = datetime(2026, 1, 5, 12, tzinfo=UTC)


def hold(units: int, baseline: int, expires: datetime = NOW + timedelta(hours=1)) -> Hold:
    return Hold(f"h{units}-{baseline}", None, "write", units, expires, baseline)


def test_a_hold_is_active_until_its_expiry_and_not_at_it() -> None:
    expires = NOW + timedelta(minutes=30)
    assert hold(100, 0, expires).active(expires - timedelta(microseconds=1))
    assert not hold(100, 0, expires).active(expires)


def lifted_write(holds: tuple[Hold, ...], quota: int) -> Limits:
    """The write limits of a table (min 5, max 1,000) lifted to ``holds`` under ``quota``."""
    table = ManagedTable("T", "arn", {}, [dimension("read"), dimension("write")])
    held = HeldDimension("T", None, "write", base=5, holds=holds)
    (_, write) = lift(table, [held], NOW, quota).dimensions
    return write.limits


def test_holds_lift_a_dimensions_limits_to_their_level_never_above_the_table_quota() -> None:
    # holds of 300 units over a baseline of 200 lift the minimum (and not the maximum)
    assert lifted_write((hold(300, 200),), 40_000) == Limits(500, 1_000, 0.7)
    # holds that ask past the maximum lift it too, to their level
    assert lifted_write((hold(900, 200), hold(600, 400)), 40_000) == Limits(1_700, 1_700, 0.7)
    # holds read from the store are bounded one by one: together they may ask more than
    # the table quota, which no dimension can have; they lift it to the quota, no further
    many = tuple(hold(39_000, 1_000 + i) for i in range(3))
    assert lifted_write(many, 40_000) == Limits(40_000, 40_000, 0.7)
    # an expired hold lifts nothing
    assert lifted_write((hold(300, 200, NOW),), 40_000) == Limits(5, 1_000, 0.7)
