"""A scaler and the capacity requests that serve its tables find each other: the template
of an app that never calls ``connect`` is the one of an app that calls it, whichever is
made first and whenever the shared table is added, in either alarm style; what cannot be
decided is refused in Python as the later construct is built, naming the field and value."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk.assertions import Template

from constructs_pkg import CapacityConfigError, CapacityRequests, ThrottleAwareScaler
from tests.support.alarm_style import summary_app
from tests.support.capacity_requests_construct import tables


def _explicit(stack: cdk.Stack) -> None:
    """The app as written before the two found each other: both made, then connected."""
    shipments, _ = tables(stack)
    scaler = ThrottleAwareScaler(stack, "Scaler", tables=[shipments])
    CapacityRequests(stack, "Requests", tables=[shipments]).connect(scaler)


def _scaler_first(stack: cdk.Stack) -> None:
    shipments, _ = tables(stack)
    ThrottleAwareScaler(stack, "Scaler", tables=[shipments])
    CapacityRequests(stack, "Requests", tables=[shipments])


def _requests_first(stack: cdk.Stack) -> None:
    shipments, _ = tables(stack)
    CapacityRequests(stack, "Requests", tables=[shipments])
    ThrottleAwareScaler(stack, "Scaler", tables=[shipments])


def _enabled_on_the_table(stack: cdk.Stack) -> None:
    shipments, _ = tables(stack)
    scaler = ThrottleAwareScaler(stack, "Scaler")
    CapacityRequests(stack, "Requests", tables=[shipments])
    shipments.enable_throttle_aware_scaling(scaler)


def _connected_before_the_table(stack: cdk.Stack) -> None:
    """``connect`` doing the work itself: the scaler manages no table yet."""
    shipments, _ = tables(stack)
    scaler = ThrottleAwareScaler(stack, "Scaler")
    CapacityRequests(stack, "Requests", tables=[shipments]).connect(scaler)
    scaler.add_table(shipments)


def _twice(stack: cdk.Stack) -> None:
    shipments, _ = tables(stack)
    requests = CapacityRequests(stack, "Requests", tables=[shipments])
    scaler = ThrottleAwareScaler(stack, "Scaler", tables=[shipments])
    requests.connect(scaler)
    requests.connect(scaler)


def _template(build: Callable[[cdk.Stack], None], app: cdk.App) -> dict[str, Any]:
    stack = cdk.Stack(app, "Test")
    build(stack)
    return dict(Template.from_stack(stack).to_json())


APPS = {
    "detailed alarms": cdk.App,
    "summary alarms": summary_app,
}


@pytest.mark.parametrize("make_app", APPS.values(), ids=APPS.keys())
@pytest.mark.parametrize(
    "build",
    [_scaler_first, _requests_first, _enabled_on_the_table, _connected_before_the_table, _twice],
    ids=["scaler first", "requests first", "enabled on the table", "connected first", "twice"],
)
def test_an_app_without_connect_has_the_template_of_one_with_it(
    build: Callable[[cdk.Stack], None], make_app: Callable[[], cdk.App]
) -> None:
    # GIVEN the app that connects the two by hand, after both are made
    expected = _template(_explicit, make_app())
    # (connected: the scaler's own state store is gone, its function names the hold store)
    types = [r["Type"] for r in expected["Resources"].values()]
    assert types.count("AWS::DynamoDB::Table") == 3  # the two tables and the hold store
    scaler_env = [
        r["Properties"]["Environment"]["Variables"]
        for k, r in expected["Resources"].items()
        if k.startswith("ScalerFunction") and r["Type"] == "AWS::Lambda::Function"
    ]
    assert scaler_env and "HoldStore" in json.dumps(scaler_env)
    # WHEN the app is written another way (no call, or calls that are no-ops)
    # THEN its template is the same, resource for resource
    assert _template(build, make_app()) == expected


def test_a_scaler_not_on_a_served_table_keeps_its_own_store() -> None:
    # GIVEN a scaler and capacity requests on different tables: nothing to connect
    stack = cdk.Stack(cdk.App(), "Test")
    shipments, plain = tables(stack)
    scaler = ThrottleAwareScaler(stack, "Scaler", tables=[plain])
    requests = CapacityRequests(stack, "Requests", tables=[shipments])
    # THEN the scaler keeps its state in its own store, in the template too
    assert scaler.state_store is not requests.hold_store
    assert scaler.node.try_find_child("StateStore") is scaler.state_store
    found = Template.from_stack(stack).find_resources("AWS::DynamoDB::Table")
    assert len(found) == 4  # the two tables, the hold store and the scaler's own store


def test_a_scaler_given_a_table_of_other_requests_is_refused_as_it_is_added() -> None:
    # GIVEN a scaler connected to capacity requests through one table, and other capacity
    # requests on another table
    stack = cdk.Stack(cdk.App(), "Test")
    shipments, plain = tables(stack)
    scaler = ThrottleAwareScaler(stack, "Scaler", tables=[shipments])
    CapacityRequests(stack, "Requests", tables=[shipments])
    CapacityRequests(stack, "Others", tables=[plain])
    # WHEN the scaler is given the other's table THEN it is refused there, in Python,
    # naming the field, the table, the scaler and where it keeps its state
    with pytest.raises(CapacityConfigError) as caught:
        scaler.add_table(plain)
    message = str(caught.value)
    assert message.startswith("CapacityRequests Test/Others: tables has table Test/Plain, ")
    assert "ThrottleAwareScaler Test/Scaler manages" in message
    assert "the hold store of CapacityRequests Test/Requests already" in message
    assert "a scaler can be connected to one CapacityRequests only" in message


def test_a_conflicting_connect_is_refused() -> None:
    # GIVEN a scaler found by tag, connected by hand to capacity requests
    stack = cdk.Stack(cdk.App(), "Test")
    shipments, plain = tables(stack)
    scaler = ThrottleAwareScaler(stack, "Scaler", tag_key="capacity")
    CapacityRequests(stack, "Requests", tables=[shipments]).connect(scaler)
    # WHEN other capacity requests connect it too THEN that call is refused, naming both
    others = CapacityRequests(stack, "Others", tables=[plain])
    with pytest.raises(CapacityConfigError) as caught:
        others.connect(scaler)
    assert str(caught.value) == (
        "CapacityRequests Test/Others: ThrottleAwareScaler Test/Scaler already keeps its "
        "state in the hold store of CapacityRequests Test/Requests; a scaler has one state "
        "store, so it can be connected to one CapacityRequests only"
    )
