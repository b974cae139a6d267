"""The settle step of PROVISION_THEN_SETTLE: the pure plan, the real UpdateTable against a
moto server, the CloudFormation response, and (Stubber) the table states moto never shows."""

from __future__ import annotations

import uuid
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from ddb_capacity_runtime.settle.handler import (
    SettleTarget,
    handler,
    parse_targets,
    plan_settle,
    settle_table,
    wait_until_active,
)

from .conftest import ResponseCatcher, cfn_event


def description(
    read: int, write: int, gsis: dict[str, tuple[int, int]] | None = None, status: str = "ACTIVE"
) -> dict[str, Any]:
    return {
        "TableName": "orders",
        "TableStatus": status,
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


# ---------------------------------------------------------------- against moto


@pytest.fixture
def dynamodb(aws_client: Any) -> Any:
    return aws_client("dynamodb")


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
    sent = settle_table(dynamodb, name, TARGETS, timeout_s=30)
    # THEN one UpdateTable brought the table and its GSI to operating capacity
    assert len(calls) == 1 and sent is not None
    assert throughput(dynamodb, name) == {None: (25, 10), "bySupplier": (4, 2)}
    # AND settling again (a retried event) spends nothing
    assert settle_table(dynamodb, name, TARGETS, timeout_s=30) is None
    assert len(calls) == 1


def test_handler_reports_success_to_cloudformation(
    dynamodb: Any, response_catcher: ResponseCatcher
) -> None:
    name = create_at_mark(dynamodb)
    props = {
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
    handler(cfn_event("Create", response_catcher.url, props), None, dynamodb=dynamodb)
    (body,) = response_catcher.bodies
    assert body["Status"] == "SUCCESS"
    assert body["Data"] == {"Settled": "true"}
    assert body["PhysicalResourceId"] == f"{name}-settle"
    assert body["RequestId"] == "req-1" and body["LogicalResourceId"] == "Settle"
    assert throughput(dynamodb, name)[None] == (25, 10)


def test_handler_reports_failure_with_the_reason(
    dynamodb: Any, response_catcher: ResponseCatcher
) -> None:
    props = {"TableName": "no-such-table", "Targets": []}
    handler(cfn_event("Create", response_catcher.url, props), None, dynamodb=dynamodb)
    (body,) = response_catcher.bodies
    assert body["Status"] == "FAILED"
    assert body["Reason"].startswith("ResourceNotFoundException:")


def test_handler_delete_touches_nothing(response_catcher: ResponseCatcher) -> None:
    client = boto3.client(
        "dynamodb", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x"
    )
    with Stubber(client) as stubber:  # any AWS call would fail: none is queued
        event = cfn_event("Delete", response_catcher.url, {"TableName": "t", "Targets": []})
        event["PhysicalResourceId"] = "t-settle"
        handler(event, None, dynamodb=client)
        stubber.assert_no_pending_responses()
    (body,) = response_catcher.bodies
    assert body["Status"] == "SUCCESS" and body["PhysicalResourceId"] == "t-settle"


# ---------------------------------------------------------------- states moto never shows


def test_wait_until_active_polls_through_updating() -> None:
    # moto's tables are ACTIVE at once; a real one is CREATING, then its GSI backfills.
    client = boto3.client(
        "dynamodb", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x"
    )
    creating = description(10, 10, status="CREATING")
    backfilling = description(10, 10, {"byG": (1, 1)})
    backfilling["GlobalSecondaryIndexes"][0]["IndexStatus"] = "CREATING"
    active = description(10, 10, {"byG": (1, 1)})
    slept: list[float] = []
    with Stubber(client) as stubber:
        for state in (creating, backfilling, active):
            stubber.add_response("describe_table", {"Table": state}, {"TableName": "orders"})
        result = wait_until_active(client, "orders", timeout_s=60, poll_s=5, sleep=slept.append)
        stubber.assert_no_pending_responses()
    assert result["TableStatus"] == "ACTIVE" and slept == [5, 5]


def test_wait_until_active_times_out() -> None:
    client = boto3.client(
        "dynamodb", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x"
    )
    now = [0.0]

    def sleep(seconds: float) -> None:
        now[0] += seconds

    with Stubber(client) as stubber:
        for _ in range(3):
            stubber.add_response(
                "describe_table",
                {"Table": description(1, 1, status="UPDATING")},
                {"TableName": "orders"},
            )
        with pytest.raises(TimeoutError, match="table orders not ACTIVE after 12 s"):
            wait_until_active(
                client, "orders", timeout_s=12, poll_s=5, clock=lambda: now[0], sleep=sleep
            )
        stubber.assert_no_pending_responses()
