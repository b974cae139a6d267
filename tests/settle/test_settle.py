"""The settle step of PROVISION_THEN_SETTLE: the pure plan, the real UpdateTable against a
moto server, the provider's two calls (on_event, then is_complete until done), and (Stubber)
the table states moto never shows."""

from __future__ import annotations

import time
import uuid
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from ddb_capacity_runtime.settle.handler import (
    SETTLE_BY_SKEW_S,
    SettleError,
    is_complete,
    on_event,
    settle_table,
)
from ddb_capacity_runtime.settle.settle_plan import (
    LOWER_BY_S,
    PERMISSION_WAIT_S,
    SETTLE_WAIT_S,
    SettleTarget,
    parse_targets,
    plan_settle,
)
from tests.conftest import cfn_event, dated_decreases
from tests.support.settle_live import LOWERED


def description(
    read: int, write: int, gsis: dict[str, tuple[int, int]] | None = None, status: str = "ACTIVE"
) -> dict[str, Any]:
    """A table created at 990 s past the epoch (the stubbed events' step begins at their
    SettleBy less `SETTLE_WAIT_S`, before it)."""
    return {
        "TableName": "orders",
        "TableStatus": status,
        "CreationDateTime": datetime.fromtimestamp(990, UTC),
        "ProvisionedThroughput": {"ReadCapacityUnits": read, "WriteCapacityUnits": write},
        "GlobalSecondaryIndexes": [
            {
                "IndexName": name,
                "IndexStatus": "ACTIVE",
                "ProvisionedThroughput": {"ReadCapacityUnits": r, "WriteCapacityUnits": w},
            }
            for name, (r, w) in (gsis or {}).items()
        ],
    }


# ---------------------------------------------------------------- the pure plan


def test_plan_lowers_table_and_gsis_in_one_update() -> None:
    # GIVEN a table and a GSI still at their marks
    desc = description(8000, 2000, {"bySku": (4000, 50)})
    targets = [
        SettleTarget(None, "read", 8000, 25),
        SettleTarget(None, "write", 2000, 10),
        SettleTarget("bySku", "read", 4000, 4),
    ]
    # THEN one UpdateTable carries all three, and the untouched GSI write is sent unchanged
    assert plan_settle(desc, targets) == {
        "TableName": "orders",
        "ProvisionedThroughput": {"ReadCapacityUnits": 25, "WriteCapacityUnits": 10},
        "GlobalSecondaryIndexUpdates": [
            {
                "Update": {
                    "IndexName": "bySku",
                    "ProvisionedThroughput": {"ReadCapacityUnits": 4, "WriteCapacityUnits": 50},
                }
            }
        ],
    }


def test_plan_leaves_dimensions_auto_scaling_has_moved() -> None:
    # GIVEN read already raised by auto scaling for traffic, write still at its mark
    desc = description(9500, 2000)
    targets = [SettleTarget(None, "read", 8000, 25), SettleTarget(None, "write", 2000, 10)]
    # THEN only write is lowered; read keeps its live capacity
    assert plan_settle(desc, targets) == {
        "TableName": "orders",
        "ProvisionedThroughput": {"ReadCapacityUnits": 9500, "WriteCapacityUnits": 10},
    }


def test_plan_is_none_once_settled() -> None:
    desc = description(25, 10)
    targets = [SettleTarget(None, "read", 8000, 25), SettleTarget(None, "write", 2000, 10)]
    assert plan_settle(desc, targets) is None


def test_plan_only_touches_a_gsi_when_only_it_is_at_its_mark() -> None:
    desc = description(25, 10, {"bySku": (4000, 50)})
    update = plan_settle(desc, [SettleTarget("bySku", "read", 4000, 4)])
    assert update is not None
    assert "ProvisionedThroughput" not in update
    assert update["GlobalSecondaryIndexUpdates"][0]["Update"]["IndexName"] == "bySku"


def test_plan_names_an_unknown_index() -> None:
    with pytest.raises(KeyError, match="index 'gone' not found on table 'orders'"):
        plan_settle(description(5, 5), [SettleTarget("gone", "read", 10, 1)])


@pytest.mark.parametrize("told", [2_000.5, "2000", -1, 10**15, None])
def test_plan_refuses_a_capacity_described_unsoundly(told: Any) -> None:
    # GIVEN a table whose DescribeTable tells its reads soundly and its writes as `told`
    desc = description(8000, 0)
    desc["ProvisionedThroughput"]["WriteCapacityUnits"] = told
    # WHEN its reads, at their mark, are settled: THEN nothing is planned on that answer,
    # which the UpdateTable would have sent back as the writes; the field is named
    with pytest.raises(ValueError, match="DescribeTable orders table: WriteCapacityUnits is"):
        plan_settle(desc, [SettleTarget(None, "read", 8000, 25)])


def test_targets_parse_cloudformation_strings() -> None:
    raw = [
        {"Index": "", "Dimension": "read", "HighWaterMark": "8000", "Operating": "25"},
        {"Index": "bySku", "Dimension": "write", "HighWaterMark": "60", "Operating": "6"},
    ]
    assert parse_targets(raw) == [
        SettleTarget(None, "read", 8000, 25),
        SettleTarget("bySku", "write", 60, 6),
    ]


def test_targets_reject_an_unknown_dimension() -> None:
    with pytest.raises(ValueError, match=r"Targets\[0\].Dimension must be read or write; got 'r'"):
        parse_targets([{"Dimension": "r", "HighWaterMark": "1", "Operating": "1"}])


@pytest.mark.parametrize(
    ("item", "message"),
    [
        ("read", r"Targets\[0\] must be an object; got str"),
        ({"Dimension": "read", "HighWaterMark": "10", "Operating": "-5"}, r"Operating .*'-5'"),
        ({"Dimension": "read", "HighWaterMark": "1e3", "Operating": "5"}, r"HighWaterMark .*'1e3'"),
        ({"Dimension": "read", "HighWaterMark": "1_000", "Operating": "5"}, r"'1_000'"),
        ({"Dimension": "read", "Operating": "5"}, r"HighWaterMark must be a whole .*got None"),
        ({"Dimension": "read", "HighWaterMark": "5", "Operating": "6"}, r"at least its Operating"),
        ({"Index": ["x"], "Dimension": "read", "HighWaterMark": "9", "Operating": "6"}, "Index"),
    ],
)
def test_targets_refuse_what_is_not_a_target_by_field_and_value(item: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_targets([item])


def test_targets_refuse_two_of_one_dimension() -> None:
    twice = {"Index": "bySku", "Dimension": "read", "HighWaterMark": "9", "Operating": "6"}
    with pytest.raises(ValueError, match=r"Targets\[1\]: a second target of bySku read"):
        parse_targets([twice, twice])


# ---------------------------------------------------------------- against moto


@pytest.fixture
def dynamodb(aws_client: Any) -> Any:
    client = aws_client("dynamodb")
    dated_decreases(client)
    return client


def create_at_mark(dynamodb: Any) -> str:
    name = f"catalog-{uuid.uuid4().hex[:8]}"
    dynamodb.create_table(
        TableName=name,
        AttributeDefinitions=[
            {"AttributeName": "sku", "AttributeType": "S"},
            {"AttributeName": "supplier", "AttributeType": "S"},
        ],
        KeySchema=[{"AttributeName": "sku", "KeyType": "HASH"}],
        ProvisionedThroughput={"ReadCapacityUnits": 8000, "WriteCapacityUnits": 2000},
        GlobalSecondaryIndexes=[
            {
                "IndexName": "bySupplier",
                "KeySchema": [{"AttributeName": "supplier", "KeyType": "HASH"}],
                "Projection": {"ProjectionType": "ALL"},
                "ProvisionedThroughput": {"ReadCapacityUnits": 4000, "WriteCapacityUnits": 2},
            }
        ],
    )
    return name


TARGETS = [
    SettleTarget(None, "read", 8000, 25),
    SettleTarget(None, "write", 2000, 10),
    SettleTarget("bySupplier", "read", 4000, 4),
]


def count_update_table_calls(client: Any) -> list[dict[str, Any]]:
    calls: list[dict[str, Any]] = []
    client.meta.events.register(
        "provide-client-params.dynamodb.UpdateTable", lambda params, **_: calls.append(params)
    )
    return calls


def throughput(dynamodb: Any, name: str) -> dict[str | None, tuple[int, int]]:
    table = dynamodb.describe_table(TableName=name)["Table"]
    out: dict[str | None, tuple[int, int]] = {}
    for key, spec in [
        (None, table),
        *((g["IndexName"], g) for g in table.get("GlobalSecondaryIndexes", [])),
    ]:
        pt = spec["ProvisionedThroughput"]
        out[key] = (pt["ReadCapacityUnits"], pt["WriteCapacityUnits"])
    return out


def test_settle_spends_one_update_and_is_idempotent(dynamodb: Any) -> None:
    # GIVEN a table created at its high-water mark
    name = create_at_mark(dynamodb)
    calls = count_update_table_calls(dynamodb)
    # WHEN settled
    sent = settle_table(dynamodb, dynamodb.describe_table(TableName=name)["Table"], TARGETS)
    # THEN one UpdateTable brought the table and its GSI to operating capacity
    assert len(calls) == 1 and sent is not None
    assert throughput(dynamodb, name) == {None: (25, 10), "bySupplier": (4, 2)}
    # AND settling again (a retried event) spends nothing
    assert settle_table(dynamodb, dynamodb.describe_table(TableName=name)["Table"], TARGETS) is None
    assert len(calls) == 1


def properties(name: str) -> dict[str, Any]:
    """The resource's properties as CloudFormation sends them (numbers as strings)."""
    return {
        "TableName": name,
        "Targets": [
            {
                "Index": t.index or "",
                "Dimension": t.dimension,
                "HighWaterMark": str(t.high_water_mark),
                "Operating": str(t.operating),
            }
            for t in TARGETS
        ],
    }


def provider_calls(event: dict[str, Any], dynamodb: Any, now: float = 1e9) -> dict[str, Any]:
    """What the provider does: on_event, then is_complete on the event with on_event's
    answer, until done; the final answer, its Data merged over on_event's."""
    started = on_event(event, None, clock=lambda: now)
    asked = {**event, **started}
    for _ in range(5):
        done = is_complete(asked, None, dynamodb=dynamodb, clock=lambda: now)
        if done["IsComplete"]:
            data = {**started.get("Data", {}), **done.get("Data", {})}
            return {"PhysicalResourceId": started["PhysicalResourceId"], "Data": data}
    raise AssertionError("not complete after 5 calls")


def test_the_provider_settles_a_created_table(dynamodb: Any) -> None:
    # GIVEN a table created at its high-water mark
    name = create_at_mark(dynamodb)
    # WHEN CloudFormation creates its settle step
    answer = provider_calls(cfn_event("Create", properties(name)), dynamodb)
    # THEN the resource is named for the table, says it settled, and the table is settled
    assert answer == {
        "PhysicalResourceId": f"{name}-settle",
        "Data": {"SettleBy": str(int(1e9 + SETTLE_WAIT_S)), "Settled": "true"},
    }
    assert throughput(dynamodb, name)[None] == (25, 10)
    # AND an update of the step (the same targets) spends nothing and keeps the name
    event = {**cfn_event("Update", properties(name)), "PhysicalResourceId": f"{name}-settle"}
    again = provider_calls(event, dynamodb)
    assert again["PhysicalResourceId"] == f"{name}-settle"
    assert again["Data"]["Settled"] == "false"


def test_an_update_never_cuts_a_table_its_deploy_did_not_provision(dynamodb: Any) -> None:
    # GIVEN a settled table that auto scaling holds at its read mark at a peak (8,000, its
    # maximum), and an Update of its step that changes the write's operating capacity only
    name = create_at_mark(dynamodb)
    old = properties(name)
    new = properties(name)
    new["Targets"][1]["Operating"] = "12"
    calls = count_update_table_calls(dynamodb)
    event = {
        **cfn_event("Update", new),
        "OldResourceProperties": {"ServiceToken": "arn", **old},
        "PhysicalResourceId": f"{name}-settle",
    }
    # WHEN CloudFormation updates the step
    answer = provider_calls(event, dynamodb)
    # THEN no capacity is cut: CloudFormation provisioned nothing at a mark this deploy
    assert answer["Data"]["Settled"] == "false" and calls == []
    assert throughput(dynamodb, name) == {None: (8000, 2000), "bySupplier": (4000, 2)}
    # AND an Update that changes the read's mark (CloudFormation provisions it there)
    # settles that dimension alone
    changed = properties(name)
    changed["Targets"][0]["HighWaterMark"] = "8000"
    before = properties(name)
    before["Targets"][0]["HighWaterMark"] = "6000"
    event["ResourceProperties"] = {"ServiceToken": "arn", **changed}
    event["OldResourceProperties"] = {"ServiceToken": "arn", **before}
    assert provider_calls(event, dynamodb)["Data"]["Settled"] == "true"
    assert throughput(dynamodb, name) == {None: (25, 2000), "bySupplier": (4000, 2)}


def test_an_update_adding_a_target_under_an_unchanged_mark_cuts_nothing(dynamodb: Any) -> None:
    # GIVEN a settled table whose write mark equals its minimum (no target), held at 2,000
    # by its traffic, and an Update lowering the minimum to 10 under the same mark: a new
    # target, but CloudFormation provisions nothing (the table's capacity is the mark)
    name = create_at_mark(dynamodb)
    old = properties(name)
    old["Targets"] = [t for t in old["Targets"] if t["Dimension"] != "write"]
    calls = count_update_table_calls(dynamodb)
    event = {
        **cfn_event("Update", properties(name)),
        "OldResourceProperties": {"ServiceToken": "arn", **old},
        "PhysicalResourceId": f"{name}-settle",
    }
    # WHEN CloudFormation updates the step THEN nothing is cut
    assert provider_calls(event, dynamodb)["Data"]["Settled"] == "false" and calls == []


def test_a_new_step_on_an_old_table_raised_lately_cuts_nothing() -> None:
    # GIVEN a table created long ago that auto scaling raised to its mark ten minutes before
    # the step's Create (DescribeTable dates a raise, not who made it)
    client = stubbed()
    table = description(10, 10)
    table["CreationDateTime"] = datetime.fromtimestamp(0, UTC)
    table["ProvisionedThroughput"]["LastIncreaseDateTime"] = datetime.fromtimestamp(999_000, UTC)
    event = {
        **cfn_event("Create", {"TableName": "orders", "Targets": ORDERS_TARGETS}),
        "Data": {"SettleBy": "1000000"},
    }
    with Stubber(client) as stubber:
        stubber.add_response("describe_table", {"Table": table})
        # WHEN the provider asks THEN the step is done without an UpdateTable
        answer = is_complete(event, None, dynamodb=client, clock=lambda: 999_999.0)
        stubber.assert_no_pending_responses()
    assert answer == {"IsComplete": True, "Data": {"Settled": "false"}}


def test_a_new_step_on_a_table_created_long_ago_cuts_nothing(dynamodb: Any) -> None:
    # GIVEN a table created at its marks two hours before its settle step is created (the
    # step's logical id changed: a Create on a table CloudFormation did not touch)
    name = create_at_mark(dynamodb)
    calls = count_update_table_calls(dynamodb)
    # WHEN CloudFormation creates the step
    later = time.time() + 2 * 3600
    answer = provider_calls(cfn_event("Create", properties(name)), dynamodb, now=later)
    # THEN nothing is cut: no date says this deploy provisioned the table at its marks
    assert answer["Data"]["Settled"] == "false" and calls == []
    assert throughput(dynamodb, name)[None] == (8000, 2000)


def test_an_update_in_flight_is_waited_out() -> None:
    # GIVEN a table auto scaling is updating when the step sends its UpdateTable
    client = stubbed()
    event = {
        **cfn_event("Create", {"TableName": "orders", "Targets": ORDERS_TARGETS}),
        "Data": {"SettleBy": IN_TIME},
    }
    with Stubber(client) as stubber:
        stubber.add_response("describe_table", {"Table": description(10, 10)})
        stubber.add_client_error("update_table", "ResourceInUseException", "being updated")
        # WHEN the provider asks THEN the step is not done, and not failed
        assert is_complete(event, None, dynamodb=client, clock=lambda: 999.0) == {
            "IsComplete": False
        }
        stubber.assert_no_pending_responses()


@pytest.mark.parametrize(
    ("code", "status"), [("ThrottlingException", 400), ("InternalServerError", 500)]
)
def test_a_passing_error_after_the_client_s_retries_is_waited_out(code: str, status: int) -> None:
    # GIVEN a step whose DescribeTable is throttled, or meets an error of AWS's own, past the
    # client's retries (after the call that lowered, what it left would go uncounted)
    client = stubbed()
    event = {
        **cfn_event("Create", {"TableName": "orders", "Targets": ORDERS_TARGETS}),
        "Data": {"SettleBy": IN_TIME},
    }
    with Stubber(client) as stubber:
        stubber.add_client_error("describe_table", code, "slow down", http_status_code=status)
        # WHEN the provider asks THEN the step is not done, and not failed: the next call
        # reads again
        assert is_complete(event, None, dynamodb=client, clock=lambda: 999.0) == {
            "IsComplete": False
        }
        stubber.assert_no_pending_responses()


@pytest.mark.parametrize("denied", ["describe_table", "update_table"])
def test_a_denial_just_after_the_step_began_is_waited_out(denied: str) -> None:
    # GIVEN a step that began at 1000 s, whose grant on the table CloudFormation is still
    # creating (or IAM still applying) until the last second of the window
    client = stubbed()
    event = {
        **cfn_event("Create", {"TableName": "orders", "Targets": ORDERS_TARGETS}),
        "Data": {"SettleBy": str(1000 + SETTLE_WAIT_S)},
    }
    update = {
        "TableName": "orders",
        "ProvisionedThroughput": {"ReadCapacityUnits": 2, "WriteCapacityUnits": 10},
    }
    with Stubber(client) as stubber:
        if denied == "update_table":
            stubber.add_response("describe_table", {"Table": description(10, 10)})
        stubber.add_client_error(denied, "AccessDeniedException", "not authorized")
        stubber.add_response("describe_table", {"Table": description(10, 10)})
        stubber.add_response("update_table", {}, update)
        # WHEN the provider asks, then asks again once the grant is in force
        answers = [
            is_complete(event, None, dynamodb=client, clock=lambda: 999.0 + PERMISSION_WAIT_S),
            is_complete(event, None, dynamodb=client, clock=lambda: 1009.0 + PERMISSION_WAIT_S),
        ]
        stubber.assert_no_pending_responses()
    # THEN the denial is waited out, not a failed deploy, and the table is settled once
    assert answers == [{"IsComplete": False}, LOWERED]


def test_a_denial_that_lasts_fails_the_step_naming_the_grant() -> None:
    client = stubbed()
    event = {
        **cfn_event("Create", {"TableName": "orders", "Targets": ORDERS_TARGETS}),
        "Data": {"SettleBy": str(1000 + SETTLE_WAIT_S)},
    }
    late = 1000.0 + PERMISSION_WAIT_S  # the first call past the window
    with Stubber(client) as stubber:
        stubber.add_client_error("describe_table", "AccessDeniedException", "not authorized")
        with pytest.raises(
            SettleError,
            match=rf"^ClientError: .*AccessDeniedException.*; still denied {late - 1000:.0f} s "
            r"after the step began: the settle function's role needs dynamodb:DescribeTable "
            r"and dynamodb:UpdateTable on the table",
        ):
            is_complete(event, None, dynamodb=client, clock=lambda: late)
        stubber.assert_no_pending_responses()


def test_a_failure_names_its_cause_and_is_logged(
    dynamodb: Any, caplog: pytest.LogCaptureFixture
) -> None:
    event = {
        **cfn_event("Create", {"TableName": "no-such-table", "Targets": []}),
        "Data": {"SettleBy": str(int(time.time()) + SETTLE_WAIT_S)},
    }
    with pytest.raises(SettleError, match=r"^ResourceNotFoundException: "):
        is_complete(event, None, dynamodb=dynamodb)
    (failed,) = [r for r in caplog.records if r.getMessage() == "settle-failed"]
    assert failed.levelname == "ERROR" and vars(failed)["table"] == "no-such-table"


def test_on_event_refuses_bad_targets_before_any_wait() -> None:
    event = cfn_event(
        "Create",
        {
            "TableName": "orders",
            "Targets": [{"Dimension": "r", "HighWaterMark": "1", "Operating": "1"}],
        },
    )
    with pytest.raises(
        SettleError, match=r"^ValueError: Targets\[0\].Dimension must be read or write; got 'r'"
    ):
        on_event(event, None)


def test_delete_touches_nothing() -> None:
    client = boto3.client(
        "dynamodb", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x"
    )
    with Stubber(client) as stubber:  # any AWS call would fail: none is queued
        event = cfn_event("Delete", {"TableName": "t", "Targets": []})
        event["PhysicalResourceId"] = "t-settle"
        assert on_event(event, None) == {"PhysicalResourceId": "t-settle"}
        assert is_complete(event, None, dynamodb=client) == {"IsComplete": True}
        stubber.assert_no_pending_responses()


# ---------------------------------------------------------------- states moto never shows


def stubbed() -> Any:
    return boto3.client(
        "dynamodb", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x"
    )


ORDERS_TARGETS = [
    {"Index": "", "Dimension": "read", "HighWaterMark": "10", "Operating": "2"},
]
IN_TIME = str(1000 + LOWER_BY_S)
"""The SettleBy of a step asked at 999 s that may still lower its table (it lowers only with
`LOWER_BY_S` left)."""


def test_is_complete_waits_through_creating_and_backfilling() -> None:
    # moto's tables are ACTIVE at once; a real one is CREATING, then its GSI backfills.
    client = stubbed()
    creating = description(10, 10, status="CREATING")
    backfilling = description(10, 10, {"byG": (1, 1)})
    backfilling["GlobalSecondaryIndexes"][0]["IndexStatus"] = "CREATING"
    active = description(10, 10, {"byG": (1, 1)})
    event = {
        **cfn_event("Create", {"TableName": "orders", "Targets": ORDERS_TARGETS}),
        "Data": {"SettleBy": IN_TIME},
    }
    answers = []
    with Stubber(client) as stubber:
        for state in (creating, backfilling, active):
            stubber.add_response("describe_table", {"Table": state}, {"TableName": "orders"})
        stubber.add_response(
            "update_table",
            {},
            {
                "TableName": "orders",
                "ProvisionedThroughput": {"ReadCapacityUnits": 2, "WriteCapacityUnits": 10},
            },
        )
        for _ in range(3):
            answers.append(is_complete(event, None, dynamodb=client, clock=lambda: 999.0))
        stubber.assert_no_pending_responses()
    # THEN it is not done while the table or its GSI is not ACTIVE, then settles it once
    # (and reads its floors again at a later call)
    assert answers == [{"IsComplete": False}, {"IsComplete": False}, LOWERED]


@pytest.mark.parametrize("status", ["CREATING", "UPDATING"], ids=["creating", "backfilling"])
def test_is_complete_fails_a_table_not_active_in_time(status: str) -> None:
    # GIVEN a table never ACTIVE for the step to lower: CREATING, or UPDATING while its GSI
    # is created (not a decrease of the step's own in flight)
    client = stubbed()
    event = {
        **cfn_event("Create", {"TableName": "orders", "Targets": ORDERS_TARGETS}),
        "Data": {"SettleBy": "1000"},
    }
    table = description(10, 10, {"byG": (1, 1)}, status=status)
    table["GlobalSecondaryIndexes"][0]["IndexStatus"] = "CREATING"
    with Stubber(client) as stubber:
        stubber.add_response("describe_table", {"Table": table}, {"TableName": "orders"})
        # WHEN the provider asks past SettleBy THEN the step fails
        with pytest.raises(
            SettleError,
            match=f"^TimeoutError: table orders not ACTIVE after {SETTLE_WAIT_S} s "
            rf"\(status {status}\)",
        ):
            is_complete(event, None, dynamodb=client, clock=lambda: 1001.0)
        stubber.assert_no_pending_responses()


@pytest.mark.parametrize(
    ("old", "settled"),
    [
        ({"TableName": "orders-before", "Targets": ORDERS_TARGETS}, True),  # a new table
        ({"TableName": "orders", "Targets": "not a list"}, False),  # unreadable: no proof
    ],
    ids=["replaced-table", "unreadable-old"],
)
def test_an_update_judges_a_new_table_by_its_date_and_unreadable_old_properties_as_no_proof(
    old: dict[str, Any], settled: bool
) -> None:
    # GIVEN an Update of the step on a table created just before it, whose old properties
    # name another table, or cannot be read
    client = stubbed()
    event = {
        **cfn_event("Update", {"TableName": "orders", "Targets": ORDERS_TARGETS}),
        "OldResourceProperties": {"ServiceToken": "arn", **old},
        "PhysicalResourceId": "orders-settle",
        "Data": {"SettleBy": IN_TIME},
    }
    with Stubber(client) as stubber:
        stubber.add_response("describe_table", {"Table": description(10, 10)})
        if settled:
            stubber.add_response("update_table", {})
        # WHEN the provider asks THEN the new table is settled; nothing is on old properties
        # that cannot be read
        answer = is_complete(event, None, dynamodb=client, clock=lambda: 999.0)
        stubber.assert_no_pending_responses()
    assert answer == (LOWERED if settled else {"IsComplete": True, "Data": {"Settled": "false"}})


@pytest.mark.parametrize(
    "data",
    [
        None,
        {},
        {"SettleBy": "soon"},
        {"SettleBy": "-5"},
        "1000",
        {"SettleBy": "0"},  # would date the step decades back: any table settled
        {"SettleBy": str(int(999 - SETTLE_BY_SKEW_S - 1))},
        {
            "SettleBy": str(int(999 + SETTLE_WAIT_S + SETTLE_BY_SKEW_S + 1))
        },  # waits past the provider
        {"SettleBy": "9" * 5000},
    ],
)
def test_a_step_without_its_settle_by_fails_naming_the_field(data: object) -> None:
    # GIVEN a provider's call whose Data.SettleBy (the step's first call's answer) is
    # missing, not whole seconds, or outside the step's window
    event: dict[str, Any] = cfn_event("Create", {"TableName": "orders", "Targets": ORDERS_TARGETS})
    if data is not None:
        event["Data"] = data
    # WHEN it is asked whether the step is done THEN it fails naming the table and the field,
    # before any call
    with pytest.raises(SettleError, match=r"orders.*Data\.SettleBy: got"):
        is_complete(event, None, dynamodb=stubbed(), clock=lambda: 999.0)


@pytest.mark.parametrize("edge", ["earliest", "latest"])
def test_a_settle_by_at_the_edges_of_the_steps_window_is_taken(edge: str) -> None:
    # GIVEN a provider's call whose Data.SettleBy is at an edge of what the step allows, the
    # table still CREATING
    settle_by = (
        999 - SETTLE_BY_SKEW_S if edge == "earliest" else 999 + SETTLE_WAIT_S + SETTLE_BY_SKEW_S
    )
    client = stubbed()
    event = {
        **cfn_event("Create", {"TableName": "orders", "Targets": ORDERS_TARGETS}),
        "Data": {"SettleBy": str(int(settle_by))},
    }
    with Stubber(client) as stubber:
        stubber.add_response("describe_table", {"Table": description(10, 10, status="CREATING")})
        # WHEN it is asked whether the step is done THEN it looks at the table: the step
        # waits, or (past its SettleBy) fails on the table's status, not on the field
        if edge == "latest":
            assert is_complete(event, None, dynamodb=client, clock=lambda: 999.0) == {
                "IsComplete": False
            }
        else:
            with pytest.raises(SettleError, match="not ACTIVE after"):
                is_complete(event, None, dynamodb=client, clock=lambda: 999.0)
        stubber.assert_no_pending_responses()
