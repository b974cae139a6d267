"""The settle step never lowers a dimension below the active capacity holds of the hold store
its properties name (``HoldStore``) where no minimum says them: a fixed capacity (no scalable
target), and every dimension of a new table (a Create). Where those holds are not known, the
dimension stays at its mark, and every dimension left at its mark is counted (``SettleLeft``,
per table and for the settle function). The hold store is a moto server's DynamoDB table (a
Stubber for the denial moto cannot produce); the settled table's answers are stubbed as in
the other settle tests."""

from __future__ import annotations

import io
import logging
import sys
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from constructs_pkg.table._table import _SETTLE_DEFAULTS
from ddb_capacity_runtime.aws.clients import call_bound
from ddb_capacity_runtime.aws.settle_clients import (
    settle_autoscaling_client,
    settle_cloudwatch_client,
    settle_store_client,
)
from ddb_capacity_runtime.settle.handler import SettleError, is_complete, on_event
from ddb_capacity_runtime.settle.live_holds import MAX_HOLD_PAGES
from ddb_capacity_runtime.settle.settle_plan import PERMISSION_WAIT_S
from tests.conftest import cfn_event
from tests.support.settle_holds import FUNCTION, counts, create_event, hold
from tests.support.settle_holds import dynamodb as dynamodb  # noqa: F401 (fixture)
from tests.support.settle_holds import in_lambda as in_lambda  # noqa: F401 (fixture)
from tests.support.settle_holds import store as store  # noqa: F401 (fixture)
from tests.support.settle_live import LOWERED, described, left_events, stubbed, table_name, targets
from tests.support.settle_live import (
    autoscaling as autoscaling,  # noqa: F401 (fixture)
)
from tests.support.settle_live import (
    cloudwatch as cloudwatch,  # noqa: F401 (fixture)
)
from tests.support.settle_live import settle as settle_live


def update_event(name: str, store: str | None, utilization: Any = None) -> dict[str, Any]:
    """An Update raising the marks of ``name`` (read 1,000 -> 2,000, write 400 -> 500, the
    GSI's read 800 -> 1,000), its targets fixed capacities unless ``utilization``."""
    props: dict[str, Any] = {"TableName": name, "Targets": targets(2000, 500, utilization)}
    if store is not None:
        props["HoldStore"] = store
    event = {
        **cfn_event("Update", props),
        "OldResourceProperties": {
            **props,
            "ServiceToken": "arn",
            "Targets": targets(1000, 400, utilization, gsi_mark=800),
        },
        "PhysicalResourceId": f"{name}-settle",
    }
    return {**event, **on_event(event, None)}


def new_table(name: str) -> dict[str, Any]:
    """``name`` created a minute ago at its marks."""
    return {**described(name), "CreationDateTime": datetime.now(UTC) - timedelta(minutes=1)}


def settled_to(name: str, read: int, write: int = 5, gsi_read: int = 10) -> dict[str, Any]:
    """The UpdateTable that settles ``name``'s table and its GSI's read as given."""
    return {
        "TableName": name,
        "ProvisionedThroughput": {"ReadCapacityUnits": read, "WriteCapacityUnits": write},
        "GlobalSecondaryIndexUpdates": [
            {
                "Update": {
                    "IndexName": "bySku",
                    "ProvisionedThroughput": {
                        "ReadCapacityUnits": gsi_read,
                        "WriteCapacityUnits": 5,
                    },
                }
            }
        ],
    }


def settle(
    event: dict[str, Any],
    table: dict[str, Any],
    update: dict[str, Any] | None,
    holds: Any,
    cloudwatch: Any = None,
    autoscaling: Any = None,
    *,
    clock: Callable[[], float] = time.time,
    in_use: bool = False,
) -> dict[str, Any]:
    """is_complete on ``table`` at ``clock``, expecting exactly the UpdateTable ``update``
    (None: none), refused as ResourceInUseException with ``in_use``; ``holds``: the hold
    store's reader. Where it lowers, the next call decides what is left at its mark
    (`test_settle_live.settle`); the first call's answer."""
    if in_use:
        client = stubbed()
        with Stubber(client) as stubber:
            stubber.add_response(
                "describe_table", {"Table": table}, {"TableName": table["TableName"]}
            )
            stubber.add_client_error("update_table", "ResourceInUseException", "updating", 400)
            answer = is_complete(
                event,
                None,
                dynamodb=client,
                cloudwatch=cloudwatch,
                autoscaling=autoscaling,
                holds=holds,
                clock=clock,
            )
            stubber.assert_no_pending_responses()
        return answer
    return settle_live(event, table, update, cloudwatch, autoscaling, holds=holds, clock=clock)


@pytest.mark.parametrize(
    ("level", "read_after"),
    [(1000, 1000), (2000, None), (3000, None)],
    ids=["held-below-its-mark", "held-at-its-mark", "held-above-its-mark"],
)
def test_an_update_never_lowers_a_fixed_capacity_below_its_active_holds(
    dynamodb: Any, store: str, caplog: pytest.LogCaptureFixture, level: int, read_after: int | None
) -> None:
    # GIVEN a table of fixed capacities (no scalable target) whose read a batch job's capacity
    # request holds at ``level`` (100 of traffic when it was made, plus its units), and an
    # expired hold on its write; the deploy raised its marks
    name = table_name()
    hold(dynamodb, store, name, "table:read", level - 100)
    hold(dynamodb, store, name, "table:write", 400, expires_in=-60)
    # WHEN the settle step, told the hold store, runs
    with caplog.at_level(logging.INFO):
        answer = settle(
            update_event(name, store),
            described(name),
            settled_to(name, read_after or 2000),
            dynamodb,
        )
    # THEN the read goes no lower than its holds' level (at or above its mark: left there),
    # the write (its hold expired) and the GSI's read to their operating capacity
    assert answer == LOWERED
    assert left_events(caplog) == []
    (event,) = [vars(r) for r in caplog.records if r.getMessage() == "settle"]
    assert [(t["index"], t["dimension"], t["held"]) for t in event["traffic"]] == [
        (None, "read", level)
    ]


def test_a_create_never_lowers_a_new_table_below_its_active_holds(
    dynamodb: Any, store: str, autoscaling: Any
) -> None:
    # GIVEN a new table, auto-scaled, whose GSI's read a capacity request held at 700 before
    # its settle step ran, and whose scalable targets are not registered yet (CloudFormation
    # registers them beside the step): no minimum says the hold
    name = table_name()
    hold(dynamodb, store, name, "index/bySku:read", 600)
    # WHEN its settle step's Create runs: THEN the GSI's read goes no lower than 700, the
    # table's dimensions to their operating capacity
    answer = settle(
        create_event(name, store),
        new_table(name),
        settled_to(name, 100, 5, 700),
        dynamodb,
        autoscaling=autoscaling,
    )
    assert answer == LOWERED


def test_a_step_without_a_hold_store_reads_no_holds(dynamodb: Any, store: str) -> None:
    # GIVEN a held fixed capacity, but a step whose properties name no hold store (a table no
    # CapacityRequests serves): THEN it is lowered to its operating capacity, as configured
    name = table_name()
    hold(dynamodb, store, name, "table:read", 900)
    answer = settle(update_event(name, None), described(name), settled_to(name, 100), None)
    assert answer == LOWERED


def denied(code: str = "AccessDeniedException") -> Any:
    """A hold store reader whose one Query is refused with ``code``."""
    client = boto3.client(
        "dynamodb", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x"
    )
    stubber = Stubber(client)
    stubber.add_client_error("query", code, "no")
    stubber.activate()
    return client


def late() -> float:
    """A call past the step's wait for an error that may pass (`PERMISSION_WAIT_S` after its
    first call)."""
    return time.time() + PERMISSION_WAIT_S + 5


@pytest.mark.parametrize(
    ("case", "reason"),
    [
        ("denied", "its capacity holds could not be read (hold store holds-"),
        ("no-store", "ResourceNotFoundException"),
        ("malformed", "malformed hold(s) of table read: what it holds is not known"),
        ("not-a-map", "malformed hold(s) of table read: what it holds is not known"),
    ],
)
@pytest.mark.usefixtures("in_lambda")
def test_a_fixed_capacity_whose_holds_are_unknown_stays_at_its_mark_and_is_counted(
    dynamodb: Any,
    store: str,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
    case: str,
    reason: str,
) -> None:
    # GIVEN a table of fixed capacities whose holds cannot be known: the store's Query is
    # denied, the store is gone, or it holds on the read a hold no component could have
    # written (units above any table's quota), or holds that are not a map at all
    name = table_name()
    reader, named = dynamodb, store
    if case == "denied":
        reader = denied()
    elif case == "no-store":
        named = f"gone-{uuid.uuid4().hex[:8]}"
    else:
        hold(dynamodb, store, name, "table:read", 2_000_000)
    if case == "not-a-map":
        key = {"pk": {"S": name}, "sk": {"S": "table:read"}}
        garbage = {":h": {"S": "garbage"}}
        dynamodb.update_item(
            TableName=store,
            Key=key,
            UpdateExpression="SET holds = :h",
            ExpressionAttributeValues=garbage,
        )
    malformed = case in ("malformed", "not-a-map")
    # WHEN the settle step runs
    with caplog.at_level(logging.INFO):
        update = None if not malformed else settled_to(name, 2000)
        answer = settle(update_event(name, named), described(name), update, reader, clock=late)
    # THEN what is unknown keeps its mark (the malformed read alone; every dimension when the
    # store cannot be read), and the step goes on (to check what it lowered), or completes
    assert answer == (LOWERED if malformed else {"IsComplete": True, "Data": {"Settled": "false"}})
    left = left_events(caplog)
    expected = (
        {(None, "read")}
        if malformed
        else {
            (None, "read"),
            (None, "write"),
            ("bySku", "read"),
        }
    )
    assert {(e["index"], e["dimension"]) for e in left} == expected
    assert all(reason in e["reason"] for e in left), [e["reason"] for e in left]
    # AND they are counted, for the table and for the settle function (its alarm's series)
    (record,) = counts(capsys)
    assert record["SettleLeft"] == len(expected)
    assert record["TableName"] == name
    assert record["SettleFunction"] == FUNCTION
    groups = record["_aws"]["CloudWatchMetrics"]
    assert [g["Dimensions"] for g in groups] == [[["TableName"]], [["SettleFunction"]]]
    assert {g["Namespace"] for g in groups} == {"DynamoDBCapacity"}


@pytest.mark.usefixtures("in_lambda")
def test_a_step_that_leaves_nothing_counts_nothing(
    dynamodb: Any, store: str, capsys: pytest.CaptureFixture[str]
) -> None:
    name = table_name()
    settle(update_event(name, store), described(name), settled_to(name, 100), dynamodb)
    assert counts(capsys) == []


@pytest.mark.parametrize("given", ["x", 7, "bad name!"])
def test_a_hold_store_that_is_no_table_name_fails_the_step_naming_it(given: object) -> None:
    event = cfn_event(
        "Create", {"TableName": "orders", "Targets": targets(2000, 500), "HoldStore": given}
    )
    with pytest.raises(SettleError, match="ResourceProperties.HoldStore must be empty or the name"):
        on_event(event, None)


def test_the_reads_of_one_call_fit_the_settle_function_s_shortest_timeout(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # an Update of a served table with auto-scaled and fixed dimensions reads, in one call, its
    # traffic, its minimums and its holds (at most MAX_HOLD_PAGES pages of the store's Query):
    # each at its worst (every attempt timing out), 48 s together, which leaves the shortest
    # timeout the settle functions take 12 s for DescribeTable and UpdateTable
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    reads = (
        call_bound(settle_cloudwatch_client())
        + call_bound(settle_autoscaling_client())
        + MAX_HOLD_PAGES * call_bound(settle_store_client())
    )
    shortest = _SETTLE_DEFAULTS["Settle"].shortest.to_seconds()
    assert (reads, shortest) == (48.0, 60)
    assert f"up to {MAX_HOLD_PAGES} pages of its hold store's Query (48 s at most" in " ".join(
        _SETTLE_DEFAULTS["Settle"].why.split()
    )


def test_holds_past_the_pages_the_step_reads_leave_their_dimensions_at_their_mark(
    dynamodb: Any, store: str, caplog: pytest.LogCaptureFixture
) -> None:
    # GIVEN a table whose items in the hold store fill more than MAX_HOLD_PAGES pages of 1 MB
    name = table_name()
    for i in range(3 * MAX_HOLD_PAGES):
        item = {"pk": {"S": name}, "sk": {"S": f"once:pad{i}"}, "pad": {"S": "x" * 390_000}}
        dynamodb.put_item(TableName=store, Item=item)
    # WHEN its settle step runs: THEN it reads no further, and lowers nothing whose holds it
    # did not read (the deploy goes on)
    with caplog.at_level(logging.INFO):
        answer = settle(update_event(name, store), described(name), None, dynamodb)
    assert answer["IsComplete"] is True
    left = left_events(caplog)
    assert len(left) == 3, left
    assert all(f"more than {MAX_HOLD_PAGES} pages" in e["reason"] for e in left), left


@pytest.mark.parametrize(
    "code",
    ["AccessDeniedException", "ThrottlingException", "ProvisionedThroughputExceededException"],
)
@pytest.mark.usefixtures("in_lambda")
def test_a_hold_read_that_meets_an_error_that_may_pass_is_read_again_at_the_next_call(
    dynamodb: Any,
    store: str,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
    code: str,
) -> None:
    # GIVEN a fixed capacity a capacity request holds at 1,000, and a step whose first read
    # of the hold store is refused: denied while IAM applies the ReadHolds statement this
    # deploy added, or throttled
    name = table_name()
    hold(dynamodb, store, name, "table:read", 900)
    event = update_event(name, store)
    # WHEN its first call meets it, within the step's wait for such an error
    with caplog.at_level(logging.INFO):
        first = settle(event, described(name), None, denied(code))
    # THEN it answers to be asked again: nothing lowered, nothing left at its mark, nothing
    # counted, and the status it waits on names the error
    assert first == {"IsComplete": False}
    assert left_events(caplog) == []
    assert counts(capsys) == []
    (waiting,) = [vars(r) for r in caplog.records if r.getMessage() == "settle-waiting"]
    assert code in waiting["status"], waiting
    # AND the next call reads the holds, and lowers the read no further than them
    second = settle(event, described(name), settled_to(name, 1000), dynamodb)
    assert second == LOWERED
    assert counts(capsys) == []


@pytest.mark.parametrize("kind", ["fixed", "auto-scaled"])
@pytest.mark.usefixtures("in_lambda")
def test_past_the_wait_an_unread_hold_store_leaves_each_dimension_saying_what_lowers_it(
    caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    # GIVEN a step whose hold store is still throttled past its wait: an Update of fixed
    # capacities, or a Create of auto-scaled ones
    name = table_name()
    event = update_event(name, "holds") if kind == "fixed" else create_event(name, "holds")
    table = described(name) if kind == "fixed" else new_table(name)
    with caplog.at_level(logging.INFO):
        answer = settle(event, table, None, denied("ThrottlingException"), clock=late)
    # THEN each dimension stays at its mark, counted once, and its event says what becomes
    # of it: auto scaling lowers an auto-scaled one; a fixed one stays until someone
    # lowers it, and how
    assert answer == {"IsComplete": True, "Data": {"Settled": "false"}}
    left = left_events(caplog)
    assert len(left) == 3
    assert [r["SettleLeft"] for r in counts(capsys)] == [3]
    for e in left:
        if kind == "fixed":
            assert "stays there until someone lowers it" in e["consequence"], e
            assert "aws dynamodb update-table" in e["consequence"], e
        else:
            assert e["consequence"] == "left at its high-water mark: auto scaling lowers it"


@pytest.mark.usefixtures("in_lambda")
def test_a_dimension_left_is_counted_once_though_its_update_is_tried_again(
    dynamodb: Any, store: str, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a fixed capacity whose read holds a malformed hold (left at its mark), the others
    # to lower
    name = table_name()
    hold(dynamodb, store, name, "table:read", 2_000_000)
    event = update_event(name, store)
    # WHEN the step's UpdateTable meets another update of the table, and goes through at
    # the next call
    with caplog.at_level(logging.INFO):
        first = settle(event, described(name), settled_to(name, 2000), dynamodb, in_use=True)
        second = settle(event, described(name), settled_to(name, 2000), dynamodb)
    # THEN the read left at its mark is logged and counted once, by the call that settled
    assert first == {"IsComplete": False}
    assert second == LOWERED
    assert [r["SettleLeft"] for r in counts(capsys)] == [1]
    assert len(left_events(caplog)) == 1


class Unwritable(io.StringIO):
    """A standard output that cannot be written (a closed pipe)."""

    def write(self, text: str) -> int:
        raise BrokenPipeError("closed")


@pytest.mark.usefixtures("in_lambda")
def test_the_count_is_dated_by_the_step_s_clock(
    dynamodb: Any, store: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a fixed capacity whose read holds a malformed hold: WHEN the step, on its clock a
    # minute ahead, leaves it at its mark: THEN its count is dated by that clock
    name = table_name()
    hold(dynamodb, store, name, "table:read", 2_000_000)
    at = time.time() + 60
    event, table = update_event(name, store), described(name)
    settle(event, table, settled_to(name, 2000), dynamodb, clock=lambda: at)
    (record,) = counts(capsys)
    assert record["_aws"]["Timestamp"] == int(at * 1000)


@pytest.mark.usefixtures("in_lambda")
def test_a_count_that_cannot_be_written_fails_nothing(
    dynamodb: Any, store: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a dimension left at its mark, and a standard output that cannot be written: THEN
    # the step settles the others all the same (its count is no reason to fail the deploy)
    name = table_name()
    hold(dynamodb, store, name, "table:read", 2_000_000)
    monkeypatch.setattr(sys, "stdout", Unwritable())
    answer = settle(update_event(name, store), described(name), settled_to(name, 2000), dynamodb)
    assert answer == LOWERED
