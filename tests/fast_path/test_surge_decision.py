"""The signals function's surge decision as pure functions of plain data (no AWS, no
store, no clock): the first look that says whether to take a dimension's lease, and the
plan of what to write under it. The same decisions against real parts are in
tests/fast_path/test_surge_server.py and tests/fast_path/test_surge_bounds.py."""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from ddb_capacity_runtime.core.holds import level
from ddb_capacity_runtime.core.surge import (
    UNBOUNDED,
    Budget,
    Combined,
    Held,
    Live,
    Rates,
    Standing,
    SurgeBounds,
    budget_window,
    combine,
    first_look,
    plan_raise,
    rates,
    renewed_until,
    since_raise,
    standing,
    surge_expiry,
    surge_level,
    surge_lifetime,
)
from ddb_capacity_runtime.core.surge_report import (
    CLOCK_SKEW_SECONDS,
    FRESH_SECONDS,
    DimensionReport,
)
from tests.support.hypothesis_profiles import examples

NOW = 1_800_000_000.0
AT = datetime.fromtimestamp(NOW, UTC)
LIFETIME = surge_lifetime(timedelta(hours=24))
#: No cap and no budget: the rule's own bounds alone.
FREE = SurgeBounds(scale=None, budget=UNBOUNDED)


@dataclass(frozen=True)
class Mark:
    """A combiner item's surge mark, as plain data."""

    started: float | None = None
    aim: float | None = None
    max_capacity: int | None = None
    budget: Budget | None = None


@dataclass(frozen=True)
class Limits:
    """The hold store's bounds, as plain data."""

    max_units: int = 40_000
    max_total_units: int = 40_000
    max_hold: timedelta = timedelta(hours=24)


def demand(per_second: float, *, throttled: float = 0.0, unknown: float = 0.0) -> Combined:
    return Combined(per_second, throttled, 0.0, 1, min(per_second, 100.0), unknown)


def until(minutes: float) -> datetime:
    return AT + timedelta(minutes=minutes)


# ------------------------------------------------------------------ the first look


def test_demand_under_what_is_provisioned_takes_no_lease() -> None:
    stands: Standing[Held] = standing(None, [], None, 100, AT)
    assert first_look(demand(99), Live(100), NOW, stands, Mark(), FREE, LIFETIME).status == "none"
    assert first_look(demand(100), Live(100), NOW, stands, Mark(), FREE, LIFETIME).status == (
        "raise"
    )


def test_throttles_of_no_known_cause_make_a_surge_due_and_key_range_ones_do_not() -> None:
    stands: Standing[Held] = standing(None, [], None, 100, AT)
    unknown = demand(10, unknown=5)
    key_range = Combined(10, 0.0, 50.0, 1, 10, 0.0)
    assert first_look(unknown, Live(100), NOW, stands, Mark(), FREE, LIFETIME).status == "raise"
    assert first_look(key_range, Live(100), NOW, stands, Mark(), FREE, LIFETIME).status == "none"


def test_a_surge_that_holds_what_is_due_is_renewed_and_one_past_its_lifetime_ends() -> None:
    surge = Held(100, 100, until(3))  # 100 over 100: holds 200
    stands = standing(surge, [], 200, 200, AT)
    mark = Mark(started=NOW - 60, aim=0.7, max_capacity=10_000)
    # 120/s at 70 % asks for 172: the surge's 200 covers it
    look = first_look(demand(120), Live(200), NOW, stands, mark, FREE, LIFETIME)
    assert look.status == "renew"
    # 200/s asks for 286: a raise, under the lease
    assert first_look(demand(200), Live(200), NOW, stands, mark, FREE, LIFETIME).status == "raise"
    old = Mark(started=NOW - LIFETIME.total_seconds(), aim=0.7, max_capacity=10_000)
    ended = first_look(demand(200), Live(200), NOW, stands, old, FREE, LIFETIME)
    assert ended.status == "ended" and "60 minutes" in ended.reason


def test_an_expired_surge_whose_raise_is_gone_no_longer_stands() -> None:
    old = Held(100, 100, until(-1))
    assert standing(old, [], None, 100, AT).surge is None  # back at its baseline
    kept = standing(old, [], 200, 200, AT)  # still raised: the restore has not run yet
    assert kept.surge == old and kept.held == 200


# ------------------------------------------------------------------ the plan


def test_a_new_surge_brings_the_level_to_the_demand_at_the_target() -> None:
    stands: Standing[Held] = standing(None, [], None, 100, AT)
    plan = plan_raise(demand(300), Live(100, 0.7, 10_000), NOW, stands, Mark(), FREE, Limits(), 100)
    assert plan.status == "raise"
    assert plan.want == math.ceil(300 / 0.7) == 429
    assert (plan.units, plan.added, plan.before, plan.applied) == (329, 329, 100, 429)
    assert plan.fresh and plan.started == NOW
    assert plan.expires == surge_expiry(AT, NOW, FREE.surge_minutes, Limits().max_hold)
    # the units are counted in a window from now even without a budget (one may be set)
    assert plan.spend == Budget(NOW, 100, 329)


def test_a_spent_budget_refuses_a_new_surge_and_a_target_max_with_no_room_refuses_it() -> None:
    stands: Standing[Held] = standing(None, [], None, 100, AT)
    spent = Mark(budget=Budget(NOW - 60, 100, 10_000))
    bounded = SurgeBounds(budget=10_000)
    plan = plan_raise(
        demand(300), Live(100, 0.7, 10_000), NOW, stands, spent, bounded, Limits(), 100
    )
    assert plan.status == "limited" and plan.over_budget and "budget is spent" in plan.reason
    # another hold takes the target's max already
    other = Held(900, 100, until(10))
    full = standing(None, [other], None, 1_000, AT)
    live = Live(1_000, 0.7, 10_000, target_max=1_000)
    refused = plan_raise(demand(2_000), live, NOW, full, Mark(), FREE, Limits(), 100)
    assert refused.status == "refused" and "no room" in refused.reason


def test_the_budget_is_spent_from_the_window_as_read() -> None:
    stands: Standing[Held] = standing(None, [], None, 100, AT)
    window = Budget(NOW - 60, 100, 50)
    plan = plan_raise(
        demand(300), Live(100, 0.7, 10_000), NOW, stands, Mark(budget=window),
        SurgeBounds(budget=200), Limits(), 100,
    )  # fmt: skip
    assert plan.units == plan.added == 150  # 200 - 50 left in the window
    assert plan.spend == Budget(NOW - 60, 100, 200) and plan.over_budget


def test_a_renewal_never_shortens_the_surge() -> None:
    late = until(30)
    assert renewed_until(late, AT, NOW, 5, timedelta(hours=24)) == late
    assert renewed_until(until(1), AT, NOW, 5, timedelta(hours=24)) == until(5)


def test_throttles_sent_before_the_last_raise_are_not_counted_again() -> None:
    before = Rates(10.0, 5.0, 0.0, NOW - 20, 10.0, 2.0)
    after = Rates(10.0, 5.0, 0.0, NOW - 5, 10.0, 2.0)
    combined = since_raise([before, after], NOW - 10, NOW)
    assert (combined.demand, combined.throttled, combined.unknown) == (20.0, 5.0, 2.0)


# ------------------------------------------------------------------ properties

holds = st.builds(
    Held,
    st.integers(1, 5_000),
    st.integers(1, 40_000),
    st.integers(-30, 120).map(until),
)
combined = st.builds(
    Combined,
    st.floats(0, 100_000),
    st.floats(0, 10_000),
    st.floats(0, 10_000),
    st.integers(1, 20),
    st.floats(0, 100_000),
    st.floats(0, 10_000),
)
lives = st.builds(
    Live,
    st.integers(1, 40_000),
    st.floats(0.2, 0.9),
    st.integers(1, 40_000),
    st.none() | st.integers(1, 40_000),
    st.none() | st.integers(1, 40_000),
)
marks = st.builds(
    Mark,
    st.none() | st.floats(NOW - LIFETIME.total_seconds() + 60, NOW),
    st.none() | st.floats(0.2, 0.9),
    st.none() | st.integers(1, 40_000),
    st.none()
    | st.builds(
        Budget,
        st.floats(NOW - 7_200, NOW).map(int).map(float),
        st.integers(1, 40_000),
        st.integers(0, 80_000),
    ),
)
bounds = st.builds(
    SurgeBounds,
    st.floats(0.05, 1.0),
    st.integers(1, 60),
    st.none() | st.integers(1, 40_000),
    st.none() | st.floats(1.1, 10),
    st.none() | st.just(UNBOUNDED) | st.integers(1, 80_000),
)
limits = st.builds(
    Limits,
    st.integers(1, 40_000),
    st.integers(1, 40_000),
    st.integers(5, 24 * 60).map(lambda m: timedelta(minutes=m)),
)


@settings(max_examples=examples(150), deadline=None)
@given(
    combined, lives, st.none() | holds, st.lists(holds, max_size=3), marks, st.integers(1, 40_000)
)
def test_a_plan_never_holds_less_than_the_surge_held(
    seen: Combined, live: Live, surge: Held | None, others: list[Held], mark: Mark, base: int
) -> None:
    """Without a cap, a budget or a target max that shrank under it, a surge's plan keeps
    every unit and every minute the surge held, and its level never falls below the one
    held before: nothing the reports say lowers capacity. (On a dimension whose holds
    count from capacities it had: a new surge beside a hold whose baseline is above what
    the dimension has now counts every hold from the lower one.)"""
    live = Live(live.provisioned, live.aim, live.max_capacity, live.warm)
    stands = standing(surge, others, None, live.provisioned, AT)
    assume(stands.surge is not None or all(h.baseline <= stands.baseline for h in stands.others))
    plan = plan_raise(seen, live, NOW, stands, mark, FREE, Limits(), base)
    assume(plan.status == "raise")
    old = stands.surge
    if old is not None:
        assert plan.units >= old.units and plan.added >= 0
        assert plan.expires is not None and plan.expires >= old.expires
    assert plan.applied >= plan.before >= base
    assert plan.expires is not None and plan.expires > AT


@settings(max_examples=examples(150), deadline=None)
@given(
    combined, lives, st.none() | holds, st.lists(holds, max_size=3), marks, st.floats(0.001, 10_000)
)
def test_throttles_of_no_known_cause_never_lower_what_is_asked(
    seen: Combined, live: Live, surge: Held | None, others: list[Held], mark: Mark, unknown: float
) -> None:
    """Throttles of no known cause (unknown data) make a surge due, and never make its
    level lower than the reports alone ask for (the max may still leave nothing to raise
    to)."""
    stands = standing(surge, others, None, live.provisioned, AT)
    more = Combined(
        seen.demand, seen.throttled, seen.key_range, seen.processes, seen.consumed,
        seen.unknown + unknown,
    )  # fmt: skip
    assert first_look(more, live, NOW, stands, mark, FREE, LIFETIME).status != "none"
    without = plan_raise(seen, live, NOW, stands, mark, FREE, Limits(), 1)
    with_unknown = plan_raise(more, live, NOW, stands, mark, FREE, Limits(), 1)
    if without.status != "none":  # (none: the max leaves nothing to raise to)
        assert with_unknown.want >= without.want
        assert with_unknown.units >= without.units


# Most drawn reports call for no raise, and are set aside: how many depends on the examples
# drawn, which changed with the test files run beside this one (alone, Hypothesis's check of
# how much is set aside failed; with the other surge tests, it passed).
@settings(
    max_examples=examples(200), deadline=None, suppress_health_check=[HealthCheck.filter_too_much]
)
@given(combined, lives, st.none() | holds, st.lists(holds, max_size=3), marks, bounds, limits)
def test_the_cap_the_budget_and_the_limits_bound_every_raise(
    seen: Combined,
    live: Live,
    surge: Held | None,
    others: list[Held],
    mark: Mark,
    rules: SurgeBounds,
    store: Limits,
) -> None:
    """Whatever the reports say: a surge adds no more than its budget window has left,
    holds no more than the surge cap allows over its baseline, no more than the hold store
    allows, and keeps the level of every active hold within the scalable target's max."""
    stands = standing(surge, others, None, live.provisioned, AT)
    plan = plan_raise(seen, live, NOW, stands, mark, rules, store, 1)
    assume(plan.status == "raise")
    window = budget_window(mark.budget, NOW, stands.baseline)
    left = rules.budget_left(window, live.warm)
    room = rules.room(stands.baseline, window.level, live.warm)
    held = stands.surge.units if stands.surge is not None else 0
    if left is not None:
        assert plan.added <= left
        assert plan.spend is None or plan.spend.used - window.used == plan.added <= left
    if room is not None:
        assert plan.units <= max(room, 0) or plan.units <= held
    assert plan.units <= store.max_units
    assert plan.units + sum(h.units for h in stands.others) <= store.max_total_units
    if live.target_max is not None:
        active = [*stands.others, Held(plan.units, stands.baseline, until(1))]
        assert level(active) <= live.target_max
    assert plan.want <= max(live.max_capacity, stands.held)


def test_a_cap_widened_by_the_trusted_demand_and_then_narrower_never_cuts_the_hold() -> None:
    # a surge raised to 1,600 on a 100-unit table while CloudWatch showed 400/s served
    # (the default cap then allows 4 x 400 = 1,600)
    raised = plan_raise(
        demand(2_000), Live(100, 1.0, 10_000, trusted=400.0), NOW, standing(None, [], None, 100, AT),
        Mark(), SurgeBounds(), Limits(), 100,
    )  # fmt: skip
    assert (raised.status, raised.units, raised.applied) == ("raise", 1_500, 1_600)
    # a minute on, the reports still ask for 2,000, and no trusted demand is known now:
    # the cap from the surge's start alone is 400, but the surge keeps its 1,500 units
    held = Held(raised.units, 100, until(5))
    stands = standing(held, [], 1_600, 1_600, AT)
    later = plan_raise(
        demand(2_000), Live(1_600, 1.0, 10_000), NOW + 60, stands, Mark(started=NOW),
        SurgeBounds(), Limits(), 100,
    )  # fmt: skip
    assert later.status == "raise" and later.units == 1_500 and later.applied == 1_600


# ------------------------------------------------------------------ the rule's inputs and bounds


def test_a_failed_request_counts_as_demand_at_the_reports_units_a_request_within_bounds() -> None:
    # GIVEN reports of 10 seconds, each with 5 requests that failed (never served)
    def failed_demand(units: float, requests: int) -> float:
        report = DimensionReport(None, "write", units, requests, failed=5)
        return rates(report, 10.0, NOW).demand

    # THEN each failed request is demand at the report's units a request
    assert failed_demand(40.0, 4) == (40 + 5 * 10) / 10
    # at most 400 a request (a 400 KB item's write), however many the report claims
    assert failed_demand(4_000.0, 2) == (4_000 + 5 * 400) / 10
    # at least half a unit a request (an eventually consistent read)
    assert failed_demand(2.0, 8) == (2 + 5 * 0.5) / 10
    # and one unit a request when no request was answered
    assert failed_demand(0.0, 0) == 5 * 1.0 / 10


def test_only_reports_sent_within_the_freshness_and_the_clock_skew_add_up() -> None:
    def sent(at: float) -> Rates:
        return Rates(10.0, 1.0, 0.0, at, 10.0, 0.0)

    # a report sent exactly FRESH_SECONDS ago, and one exactly CLOCK_SKEW_SECONDS ahead, count
    edges = combine([sent(NOW - FRESH_SECONDS), sent(NOW + CLOCK_SKEW_SECONDS)], NOW)
    assert (edges.processes, edges.demand, edges.throttled) == (2, 20.0, 2.0)
    # a second older, or a second further ahead (a clock that runs fast), does not
    beyond = combine([sent(NOW - FRESH_SECONDS - 1), sent(NOW + CLOCK_SKEW_SECONDS + 1)], NOW)
    assert beyond == Combined()


def test_a_throttled_surge_is_sized_from_the_share_its_reports_consume_within_bounds() -> None:
    # GIVEN 100 units provisioned, a target of 100 %, and reports of 60 units a second
    def level_for(
        throttled: float, consumed: float, unknown: float = 0.0, share: float = 1.0
    ) -> int | None:
        seen = Combined(60.0, throttled, 0.0, 1, consumed, unknown)
        return surge_level(seen, 100, 1.0, 40_000, share)

    # THEN while throttled, reports that consume half the capacity are half the traffic
    assert level_for(5.0, 50.0) == 60 * 2
    # reports that consume a hundredth are taken as a tenth (MIN_SEEN_SHARE), no less
    assert level_for(5.0, 1.0) == 60 * 10
    # reports that consume nothing tell no share: the surge adds a unit over what is provisioned
    assert level_for(5.0, 0.0) == 101
    # throttles of no known cause make the surge due, but never size it (a hot key's may)
    assert level_for(0.0, 1.0, unknown=5.0) == 101
    # and the configured share still counts when the consumption tells a larger one
    assert level_for(5.0, 100.0, share=0.25) == 60 * 4


def test_a_surge_never_holds_past_the_hold_stores_longest_hold() -> None:
    # GIVEN a hold store whose longest hold is 30 minutes: a surge lasts 30 minutes at most
    longest = timedelta(minutes=30)
    assert surge_lifetime(longest) == longest
    # THEN a surge that started 28 minutes ago, renewed for 5 minutes, ends at 30
    assert surge_expiry(AT, NOW - 28 * 60, 5, longest) == until(2)
    # and one whose recorded start is ahead of the clock holds no longer than 30 minutes
    assert surge_expiry(AT, NOW + 3_600, 45, longest) == until(30)


@pytest.mark.parametrize("share", [0.0, -0.5, 1.00005, 2.0])
def test_a_share_of_the_traffic_outside_zero_to_one_is_refused_by_name(share: float) -> None:
    # the part of the traffic the reporting processes make: over 0, at most 1
    with pytest.raises(ValueError, match=rf"share: got {share!r}; expected a number over 0"):
        surge_level(demand(60.0), 100, 1.0, 40_000, share)


def test_a_surge_brings_demand_to_the_target_exactly_without_a_unit_more() -> None:
    # 21 units a second at a 70 % target need 30 units: not 31 for the float noise of 21 / 0.7
    # (30.000000000000004)
    assert surge_level(demand(21.0), 10, 0.7, 40_000) == 30
    # and 21.1 need 31 (a unit started is a unit)
    assert surge_level(demand(21.1), 10, 0.7, 40_000) == 31


@pytest.mark.parametrize(
    ("demand", "unknown", "target", "level_now"),
    [
        (720.0, 0.0, 0.7, 1_000),  # 1,029 asked: under a step (1,100), renewed
        (800.0, 0.0, 0.7, 1_143),  # a step and more: raised
        (720.0, 5.0, 0.7, 1_029),  # throttled (of no known cause): raised for any step
        (980.0, 0.0, 0.9, 1_089),  # near the capacity held (a blind signal may be pinned)
        (940.0, 0.0, 0.9, 1_000),  # 1,045 asked, under 95 % of it: renewed
    ],
)
def test_a_held_surge_is_raised_by_a_step_or_when_throttled_or_near_its_capacity(
    demand: float, unknown: float, target: float, level_now: int
) -> None:
    # GIVEN a surge holding 1,000 units (from 100) and what the reports now show
    seen = Combined(demand, 0.0, 0.0, 1, demand, unknown)
    # WHEN the rule sizes it again
    level = surge_level(seen, 1_000, target, 40_000, held=1_000, base=100)
    # THEN it keeps its level unless asked for a step more, throttled, or near its capacity
    assert level == level_now
