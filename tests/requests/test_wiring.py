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
from tests.support.capacity_requests_construct import synth_errors, tables


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


@pytest.mark.parametrize("tagged", ["stack", "table"])
def test_a_scaler_that_finds_a_served_table_by_its_tag_must_be_connected(tagged: str) -> None:
    # GIVEN a scaler that finds tables by tag, and capacity requests on a table that carries
    # that tag (given to the table, or to the whole stack)
    stack = cdk.Stack(cdk.App(), "Test")
    shipments, _ = tables(stack)
    ThrottleAwareScaler(stack, "Scaler", tag_key="team", tag_value="orders")
    CapacityRequests(stack, "Requests", tables=[shipments])
    cdk.Tags.of(stack if tagged == "stack" else shipments).add("team", "orders")
    # WHEN the app is synthesized THEN it fails: the tags are known only then, and the
    # scaler, unconnected, would take a hold's raised minimum for the configured one
    assert synth_errors(stack) == [
        "[Test/Requests] CapacityRequests Test/Requests: ThrottleAwareScaler Test/Scaler "
        "finds tables by the tag team=orders (tag_key, tag_value), which table "
        "Test/Shipments of these requests carries, but is not connected to them, so it "
        "would take a hold's raised minimum for the configured minimum and keep it; connect "
        "it: requests.connect(scaler)"
    ]


def test_a_scaler_found_by_tag_and_connected_by_hand_synthesizes() -> None:
    # GIVEN the same app, the scaler connected by hand after both are built
    stack = cdk.Stack(cdk.App(), "Test")
    shipments, _ = tables(stack)
    scaler = ThrottleAwareScaler(stack, "Scaler", tag_key="team", tag_value="orders")
    requests = CapacityRequests(stack, "Requests", tables=[shipments])
    cdk.Tags.of(shipments).add("team", "orders")
    requests.connect(scaler)
    # THEN it synthesizes, and so does one whose tag has another value (not found)
    assert synth_errors(stack) == []
    other = cdk.Stack(cdk.App(), "Other")
    shipments, _ = tables(other)
    ThrottleAwareScaler(other, "Scaler", tag_key="team", tag_value="orders")
    CapacityRequests(other, "Requests", tables=[shipments])
    cdk.Tags.of(shipments).add("team", "billing")
    assert synth_errors(other) == []


def test_a_scaler_found_by_tag_but_connected_elsewhere_is_told_so() -> None:
    # GIVEN a scaler found by tag, connected to capacity requests on one table, while other
    # capacity requests serve a table carrying its tag
    stack = cdk.Stack(cdk.App(), "Test")
    shipments, plain = tables(stack)
    scaler = ThrottleAwareScaler(stack, "Scaler", tag_key="team")
    CapacityRequests(stack, "Requests", tables=[shipments]).connect(scaler)
    CapacityRequests(stack, "Others", tables=[plain])
    cdk.Tags.of(plain).add("team", "true")
    # WHEN the app is synthesized THEN it fails, naming where the scaler keeps its state
    (error,) = synth_errors(stack)
    assert error.startswith(
        "[Test/Others] CapacityRequests Test/Others: ThrottleAwareScaler Test/Scaler finds "
        "tables by the tag team=true (tag_key, tag_value), which table Test/Plain"
    )
    assert error.endswith(
        "it keeps its state in the hold store of CapacityRequests Test/Requests, and a "
        "scaler can be connected to one CapacityRequests only: take the tag off it, or "
        "serve it from that one"
    )
