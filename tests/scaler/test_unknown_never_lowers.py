"""Unknown or failed data never lowers capacity, and whatever comes from AWS is untrusted
input: the boundaries of those rules, in the policy and in a tick against a moto server.

- a failed call the tick shares keeps a raised minimum of a scalable target where it is;
- a single throttle event in the window stops a decrease, as many do;
- throttles by cause that CloudWatch did not finish reading are not trusted, and that is
  a failure of the table;
- the reservation floor only ever holds a minimum's decrease back: it never turns it into
  a raise;
- while the state store cannot be read, 0.4's state tags are left alone: neither read as
  state nor removed."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ddb_capacity_runtime.core.policy import (
    DECREASE,
    HOLD,
    DimensionState,
    PolicyConfig,
    autopilot_config,
    decide,
    decide_scalable_min,
)
from ddb_capacity_runtime.scaler.handler import complete
from ddb_capacity_runtime.scaler.tick import TickFailed, TickSummary
from tests.support.faults import (
    SHARED_CALLS,
    busy_and_idle,
    client_error,
    emf,
    fail_before,
    fail_shared_call,
    raised_minimum,
)
from tests.support.faults import world as world  # noqa: F401 (fixture)
from tests.support.hypothesis_profiles import examples
from tests.support.moto_world import World, base_min_tag, upgrade_window
from tests.support.policy import CONFIG, NOON, state
from tests.support.throttle_causes import hot_key_and_idle

# ------------------------------------------------------------------ a failed shared call


def test_a_failed_shared_call_keeps_a_raised_minimum_where_it_is() -> None:
    # GIVEN a scalable target whose minimum the library raised to 500 over a configured
    # 100, idle, every minute known, no throttle, the last raise long past; but a call
    # the tick shares failed
    quiet = [1.0] * 20
    calm = state(500, quiet, min_capacity=100)
    blind = state(500, quiet, min_capacity=100, decreases_allowed=False)
    # THEN the minimum is held, where with the call answered it would be restored
    assert decide_scalable_min(calm, 500, CONFIG).action == DECREASE
    held = decide_scalable_min(blind, 500, CONFIG)
    assert (held.action, held.capacity) == (HOLD, 500)
    # AND the same with what the forecast needs within the half hour between the two
    needs = state(500, quiet, min_capacity=100, keep=300, decreases_allowed=False)
    part = decide_scalable_min(needs, 500, CONFIG)
    assert (part.action, part.capacity) == (HOLD, 500)


@st.composite
def calm_windows(draw: Any) -> DimensionState:
    """Windows of any load in which a raised minimum could come down but for the failed
    call: every minute known, none throttled, any last raise (or none), any need of the
    forecast."""
    minutes = draw(st.integers(1, 30))
    consumed = draw(
        st.lists(
            st.floats(min_value=0, max_value=20_000, allow_nan=False),
            min_size=minutes,
            max_size=minutes,
        )
    )
    low = draw(st.integers(1, 1_000))
    ago = draw(st.none() | st.integers(0, 600))
    return state(
        draw(st.integers(1, 40_000)),
        consumed,
        min_capacity=low,
        max_capacity=draw(st.integers(low, 40_000)),
        last_increase=None if ago is None else NOON - timedelta(minutes=ago),
        keep=draw(st.integers(0, 2_000)),
        decreases_allowed=False,
    )


@settings(max_examples=examples(300), deadline=None)
@given(calm_windows(), st.integers(1, 40_000), st.sampled_from([CONFIG, autopilot_config()]))
def test_no_minimum_comes_down_when_a_shared_call_failed(
    s: DimensionState, current_min: int, config: PolicyConfig
) -> None:
    # a call the tick shares failed: whatever the window, the minimum never comes down
    assert decide_scalable_min(s, current_min, config).capacity >= current_min


@pytest.mark.parametrize(("service", "operation"), SHARED_CALLS)
def test_a_shared_call_that_keeps_failing_keeps_a_raised_minimum(
    world: World,
    service: str,
    operation: str,
) -> None:
    # GIVEN a calm table whose write minimum the library holds at 500 over a configured
    # 100 (a tick with every call answered restores the 100), beside a throttled and an
    # idle one; a shared call fails with an error that is not a throttle
    busy, idle = busy_and_idle(world)
    raised = raised_minimum(world, "raised")
    calls = fail_shared_call(world, service, operation, client_error("ServiceUnavailable", "x"))
    # WHEN a tick runs (the tables listed, so that a failed tag discovery still finds them)
    summary, events = world.tick(SCALER_TABLES=",".join((busy, idle, raised)))
    # THEN the raised minimum stays, and so does the memory of the configured one
    assert calls
    assert world.target_min(raised, "write") == 500
    assert world.memory(raised, "write") == "100:500"
    assert world.throughput(idle) == (200, 200)
    # AND the failure is counted
    assert len(summary["shared_failures"]) == 1
    assert emf(events, None)["SharedFailures"] == 1
    with pytest.raises(TickFailed, match="1 shared call\\(s\\) failed"):
        complete(TickSummary(**summary))


# ------------------------------------------------------------------ one throttle event


def test_a_single_throttle_event_in_the_low_minutes_stops_the_autopilots_decrease() -> None:
    # GIVEN 20 idle minutes at 1,000 units, one event three minutes ago: within the 4 low
    # minutes a decrease needs, outside the 2 newest a raise is sized by
    consumed = [10.0] * 20
    quiet = decide(state(1_000, consumed), autopilot_config())
    assert quiet.action == DECREASE  # without it, the capacity falls
    for events in (1.0, 0.5):
        throttles = [0.0] * 17 + [events, 0.0, 0.0]
        d = decide(state(1_000, consumed, throttles), autopilot_config())
        assert (d.action, d.capacity) == (HOLD, 1_000), d.reason
        assert "no decrease while throttled" in d.reason


def test_a_single_key_range_throttle_event_stops_a_decrease() -> None:
    # GIVEN 15 idle minutes at 1,000 units, one event that more capacity could not serve
    # (a hot key's: never a reason to raise, still one not to lower)
    consumed = [10.0] * 15
    throttles = [0.0] * 7 + [1.0] + [0.0] * 7
    s = state(1_000, consumed, throttles, unfixable=throttles)
    d = decide(s, CONFIG)
    assert (d.action, d.capacity) == (HOLD, 1_000), d.reason
    assert "no decrease while throttled (1 events" in d.reason


@settings(max_examples=examples(200), deadline=None)
@given(
    st.lists(st.floats(min_value=0, max_value=5_000, allow_nan=False), min_size=15, max_size=30),
    st.integers(1, 15),
    st.sampled_from([0.5, 1.0, 2.0]),
    st.integers(1, 25_000),
    st.sampled_from([CONFIG, autopilot_config()]),
)
def test_any_throttle_event_in_the_low_minutes_stops_a_decrease(
    consumed: list[float], back: int, events: float, provisioned: int, config: PolicyConfig
) -> None:
    # a hot key's events (none of them a reason to raise) in one of the minutes that must
    # all be low before a decrease
    throttles = [0.0] * len(consumed)
    throttles[-1 - (back - 1) % config.scale_down_minutes] = events
    s = state(provisioned, consumed, throttles, unfixable=throttles)
    assert decide(s, config).action != DECREASE


# ------------------------------------------------------------------ throttles by cause


def partial(result: dict[str, Any]) -> None:
    result["StatusCode"] = "PartialData"  # more to come, and no page that said Complete


def internal_error(result: dict[str, Any]) -> None:
    result["StatusCode"] = "InternalError"


def values_without_minutes(result: dict[str, Any]) -> None:
    result["Timestamps"] = result.get("Timestamps", [])[1:]  # which value is which minute?


@pytest.mark.parametrize("change", [partial, internal_error, values_without_minutes])
def test_throttles_by_cause_not_read_in_full_are_not_trusted_and_fail_the_table(
    world: World,
    change: Callable[[dict[str, Any]], None],
) -> None:
    # GIVEN a table whose writes are throttled, every event a hot key's by the cause
    # metrics, and an idle table beside it; CloudWatch's answers to the cause queries are
    # not complete
    hot, idle = hot_key_and_idle(world)

    def after(parsed: dict[str, Any], **_: Any) -> None:
        for result in parsed.get("MetricDataResults", []):
            if result["Id"].startswith("x"):  # a cause query's (metrics.cause_queries)
                change(result)

    world.cw.meta.events.register("after-call.cloudwatch.GetMetricData", after)
    # WHEN one tick runs
    summary, events = world.tick(SCALER_MODE="reactive")
    # THEN the throttles are taken for fixable, as without the causes (what is not known
    # never holds a raise back): (100 + 3000 / 60) / 0.7
    assert world.throughput(hot)[1] == 215
    # AND the incomplete read is a failure of that table alone, counted
    assert [f["table"] for f in summary["failures"]] == [hot]
    assert "throttles by cause" in summary["failures"][0]["reason"]
    assert emf(events, hot)["Failures"] == 1 and emf(events, idle)["Failures"] == 0
    assert world.throughput(idle) == (5, 5)
    assert summary["shared_failures"] == []


# ------------------------------------------------------------------ the reservation floor


def test_the_reservation_never_turns_a_minimums_decrease_into_a_raise(
    world: World,
) -> None:
    # GIVEN an idle table of 500 write units whose minimum the library holds at 300 over a
    # configured 100, and 400 write units reserved: 100 may fall, to 400, above the
    # minimum of 300 it would restore from
    held = world.table("held", 200, 500)
    world.target(held, "write", 300, 1000)
    world.traffic(held, "write", 1, minutes=range(0, 40))
    with world.store.lease(held, None, "write", deadline=time.time() + 5) as lease:
        lease.write(100, set_to=300)
    # WHEN one tick runs (every decrease is cut at the reservation)
    summary, events = world.tick(SCALER_RESERVED_WRITE_UNITS="400")
    # THEN the decrease is held back at the minimum it came from: never raised above it
    assert world.target_min(held, "write") == 300
    assert world.throughput(held)[1] == 500
    assert world.memory(held, "write") == "100:300"
    decided = [
        e
        for e in events
        if e.get("event") == "decision" and e["table"] == held and e["dimension"] == "write"
    ]
    assert decided and all(e["new"] <= e["old"] for e in decided if e["action"] == "decrease")
    assert summary["failures"] == []


# ------------------------------------------------------------------ an unreadable store


def test_state_tags_are_left_alone_while_the_state_store_cannot_be_read(
    world: World,
) -> None:
    # GIVEN a table with a write minimum of 400 that a tick has seen once (its state is
    # in the store from then on), in an upgrade's window for 0.4's state tags
    forged = world.table("forged", 300, 400)
    world.target(forged, "write", 400, 1000)
    env = upgrade_window(world.now)
    world.tick(**env)
    # AND someone allowed to tag it writes a memory claiming the library raised it to 900
    busy, idle = busy_and_idle(world)
    arn = world.ddb.describe_table(TableName=forged)["Table"]["TableArn"]
    key = base_min_tag(None, "write")
    world.ddb.tag_resource(ResourceArn=arn, Tags=[{"Key": key, "Value": "1:900"}])
    # AND the state store cannot be read: whether the table was seen before is not known
    disarm = fail_before(
        world.store.dynamodb,
        "Scan",
        lambda p: p["TableName"] == world.store.name,
        client_error("InternalServerError", "Scan"),
    )
    # WHEN a tick runs
    summary, events = world.tick(**env)
    disarm()
    # THEN the tag is neither read as state nor removed: nothing is remembered, the
    # minimum stays; the unread store is a shared failure, and nothing is lowered (the
    # raises on what the tick knows go ahead)
    assert world.tags(forged).get(key) == "1:900"
    assert world.memory(forged, "write") is None
    assert not any(s.holding for s in world.store.table(forged))
    assert world.target_min(forged, "write") == 400
    assert not [e for e in events if e.get("event") == "state-moved-from-tags"]
    assert [f.split(":")[0] for f in summary["shared_failures"]] == ["state store"]
    assert world.throughput(idle) == (200, 200) and world.throughput(busy) == (100, 215)
    # AND once the store is read again, the tag is what it is, a tag on a table whose
    # state is in the store: removed unread, and counted
    summary, events = world.tick(**env)
    assert world.throughput(idle) == (5, 5)
    assert key not in world.tags(forged)
    assert world.memory(forged, "write") is None
    assert world.target_min(forged, "write") == 400
    assert emf(events, forged)["IgnoredTags"] == 1 and summary["failures"] == []
