"""Every Duration prop of every construct, found from the constructs' type hints (so a
prop added later is walked too): an int, None where None is not allowed, and a Duration
below its floor (sub-second) are each refused with the prop's name, the value and what is
allowed, before jsii sees them. FleetAdvisor's whole-number props refuse NaN, infinity, a
bool and a fraction the same way (a NaN used to stop the jsii process)."""

from __future__ import annotations

import inspect
import math
import types
import typing
from collections.abc import Callable, Iterator
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import Duration
from aws_cdk import aws_dynamodb as dynamodb

import constructs_pkg
from constructs_pkg import (
    Capacity,
    CapacityConfigError,
    CapacityRequests,
    FastPath,
    FleetAdvisor,
    FunctionOptions,
    GlobalTableCapacity,
    ProvisionedTable,
    StreamSignal,
    TableCapacity,
    ThrottleAwareScaler,
)
from tests.support.global_table_construct import make

PK = dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING)
SMALL = Capacity(min_capacity=1, max_capacity=10)


def provisioned(stack: cdk.Stack) -> ProvisionedTable:
    return ProvisionedTable(stack, "Orders", partition_key=PK, read=SMALL, write=SMALL)


def adopted(stack: cdk.Stack) -> TableCapacity:
    table = dynamodb.Table(
        stack,
        "Plain",
        partition_key=PK,
        billing_mode=dynamodb.BillingMode.PROVISIONED,
        read_capacity=1,
        write_capacity=1,
    )
    return TableCapacity(stack, "Adopted", table=table, read=SMALL, write=SMALL)


def global_capacity() -> GlobalTableCapacity:
    """A global table needs a stack with a Region of its own."""
    return make()[1]


def window(owner: TableCapacity | GlobalTableCapacity, props: dict[str, Any]) -> None:
    owner.add_capacity_window(
        "launch",
        dimension="read",
        capacity=5,
        start="09:00",
        **{"duration": Duration.hours(1), **props},
    )


#: How to reach each method that takes a Duration prop, by its qualified name. A method
#: found without an entry here fails the walk: add one.
MAKERS: dict[str, Callable[[cdk.Stack, dict[str, Any]], object]] = {
    "Capacity.__init__": lambda s, p: ProvisionedTable(
        s, "T", partition_key=PK, read=Capacity(min_capacity=1, max_capacity=10, **p), write=SMALL
    ),
    "CapacityRequests.__init__": lambda s, p: CapacityRequests(
        s, "R", tables=[provisioned(s)], **p
    ),
    "FastPath.__init__": lambda s, p: CapacityRequests(
        s, "R", tables=[provisioned(s)], fast_path=FastPath(**p)
    ),
    "FleetAdvisor.__init__": lambda s, p: FleetAdvisor(s, "F", **p),
    "StreamSignal.__init__": lambda s, p: CapacityRequests(
        s, "R", tables=[provisioned(s)], fast_path=FastPath(stream=StreamSignal(**p))
    ),
    "FunctionOptions.__init__": lambda s, p: ThrottleAwareScaler(
        s, "S", tables=[provisioned(s)], function_options={"Scaler": FunctionOptions(**p)}
    ),
    "ThrottleAwareScaler.__init__": lambda s, p: ThrottleAwareScaler(
        s, "S", tables=[provisioned(s)], **p
    ),
    "TableCapacity.add_capacity_window": lambda s, p: window(adopted(s), p),
    "TableCapacity.add_on_demand_window": lambda s, p: adopted(s).add_on_demand_window(
        "spikes", start="09:00", **{"duration": Duration.hours(1), **p}
    ),
    "GlobalTableCapacity.add_capacity_window": lambda _, p: window(global_capacity(), p),
}


def _hinted(kind: type) -> Iterator[tuple[str, str, bool]]:
    """(method's qualified name, prop, None allowed) for each prop hinted as ``kind``."""
    seen = set()
    for name in constructs_pkg.__all__:
        owner = getattr(constructs_pkg, name)
        if not inspect.isclass(owner):
            continue
        for attr, function in inspect.getmembers(owner, inspect.isfunction):
            if (attr.startswith("_") and attr != "__init__") or function.__qualname__ in seen:
                continue
            try:
                hints = typing.get_type_hints(function)
            except NameError:
                continue
            for prop, hint in hints.items():
                args = typing.get_args(hint) if isinstance(hint, types.UnionType) else (hint,)
                if prop != "return" and kind in args:
                    seen.add(function.__qualname__)
                    yield (
                        function.__qualname__.replace("ProvisionedTable.", "TableCapacity."),
                        prop,
                        type(None) in args,
                    )


DURATIONS = sorted(set(_hinted(Duration)))


def refused(method: str, props: dict[str, Any]) -> str:
    with pytest.raises(CapacityConfigError) as caught:
        MAKERS[method](cdk.Stack(cdk.App(), "Test"), props)
    return str(caught.value)


def test_the_walk_finds_the_duration_props_of_every_construct() -> None:
    found = {f"{m.split('.')[0]}.{p}" for m, p, _ in DURATIONS}
    assert {
        "Capacity.scale_in_cooldown",
        "CapacityRequests.max_hold",
        "FastPath.surge_for",
        "FleetAdvisor.report_retention",
        "FunctionOptions.timeout",
        "ThrottleAwareScaler.hot_key_for",
        "TableCapacity.lead",
    } <= found
    assert len(found) >= 13
    assert {m for m, _, _ in DURATIONS} <= set(MAKERS), "a method with a Duration prop: add a maker"


@pytest.mark.parametrize(
    ("method", "prop", "optional"), DURATIONS, ids=[f"{m}:{p}" for m, p, _ in DURATIONS]
)
def test_every_duration_prop_refuses_what_is_not_a_duration_by_name(
    method: str, prop: str, optional: bool
) -> None:
    # GIVEN a Duration prop given a number of seconds, as a newcomer would
    message = refused(method, {prop: 5})
    # THEN the prop, the value and what it takes are named
    assert f"{prop}: got 5 (int); expected a Duration" in message, message
    assert "a multiple of 1 " in message and "at least 0 seconds" not in message
    assert "Duration.minutes(5)" in message
    # AND None is refused the same way unless it is allowed
    if not optional:
        assert f"{prop}: got None (NoneType); expected a Duration" in refused(method, {prop: None})


@pytest.mark.parametrize(
    ("method", "prop", "optional"), DURATIONS, ids=[f"{m}:{p}" for m, p, _ in DURATIONS]
)
def test_every_duration_prop_refuses_a_fraction_of_a_second_by_name(
    method: str, prop: str, optional: bool
) -> None:
    # GIVEN half a second (not whole seconds)
    message = refused(method, {prop: Duration.millis(500)})
    # THEN the prop is named with the value and what it takes (not jsii's own error)
    assert f"{prop}: got 500 millis; expected a Duration" in message, message
    assert "a multiple of 1 " in message and "at least 0 seconds" not in message


WHOLE = sorted(p for m, p, _ in _hinted(int) if m == "FleetAdvisor.__init__")


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf, True, 10.5])
@pytest.mark.parametrize("prop", WHOLE)
def test_fleet_advisor_whole_numbers_refuse_what_is_not_one(prop: str, value: float) -> None:
    assert set(WHOLE) == {"days", "max_concurrency", "worker_memory_size"}
    message = refused("FleetAdvisor.__init__", {prop: value})
    assert f": {prop}: got {value!r}; expected a whole number from " in message, message


def test_a_duration_prop_at_its_floor_is_taken_and_a_second_less_is_refused() -> None:
    # GIVEN the scaler's alarm windows at their floor, one minute
    stack = cdk.Stack(cdk.App(), "Test")
    minute = Duration.minutes(1)
    ThrottleAwareScaler(
        stack, "S", tables=[provisioned(stack)], pinned_at_max_for=minute, throttled_for=minute
    )
    # AND the fleet advisor's report retention at its floor, one day
    FleetAdvisor(stack, "F", report_retention=Duration.days(1))
    # THEN a second less is refused, naming the floor
    for prop in ("pinned_at_max_for", "throttled_for"):
        message = refused("ThrottleAwareScaler.__init__", {prop: Duration.seconds(59)})
        assert f"{prop}: got 59 seconds; expected a Duration of at least 1 minute" in message
    below = refused("FleetAdvisor.__init__", {"report_retention": Duration.hours(23)})
    assert "report_retention: got 23 hours; expected a Duration of at least 1 day" in below


def test_a_duration_prop_with_a_step_refuses_what_is_not_a_multiple_of_it() -> None:
    # GIVEN a report retention of a day and a half (S3 expires objects after whole days)
    message = refused("FleetAdvisor.__init__", {"report_retention": Duration.hours(36)})
    # THEN it is refused, naming the step
    assert message.endswith(
        "report_retention: got 1 day 12 hours; expected a Duration of at least 1 day, a "
        "multiple of 1 day"
    ), message
