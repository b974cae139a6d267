"""The settle step's live world: tables, targets and alarms in moto, and what it left."""

from __future__ import annotations

import copy
import time
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from ddb_capacity_runtime.core.names import resource_id, scalable_dimension
from ddb_capacity_runtime.settle.handler import is_complete, on_event
from ddb_capacity_tools.local_aws import put_traffic
from tests.conftest import cfn_event

MARKS = {"read": 2000, "write": 500}
"""The new high-water marks this deploy sets (from 1,000 and 400): the table's capacity now."""


LOWERED = {"IsComplete": False}
"""The answer of the call that lowers the table: a later call, once it is ACTIVE again, reads
the floors of what it lowered again (the step is done then)."""


def table_name() -> str:
    return f"orders-{uuid.uuid4().hex[:8]}"


def described(name: str, read: int = MARKS["read"], write: int = MARKS["write"]) -> dict[str, Any]:
    """A table created 200 days ago, ACTIVE again after CloudFormation set it to its marks."""
    return {
        "TableName": name,
        "TableStatus": "ACTIVE",
        "CreationDateTime": datetime.now(UTC) - timedelta(days=200),
        "ProvisionedThroughput": {"ReadCapacityUnits": read, "WriteCapacityUnits": write},
        "GlobalSecondaryIndexes": [
            {
                "IndexName": "bySku",
                "IndexStatus": "ACTIVE",
                "ProvisionedThroughput": {"ReadCapacityUnits": 1000, "WriteCapacityUnits": 5},
            }
        ],
    }


def targets(
    read_mark: int, write_mark: int, utilization: Any = "70", gsi_mark: int = 1000
) -> list[dict[str, str]]:
    """The step's targets as CloudFormation sends them (strings); ``utilization`` None: a
    fixed capacity (no TargetUtilization)."""
    out = [
        {"Index": "", "Dimension": "read", "HighWaterMark": str(read_mark), "Operating": "100"},
        {"Index": "", "Dimension": "write", "HighWaterMark": str(write_mark), "Operating": "5"},
        {"Index": "bySku", "Dimension": "read", "HighWaterMark": str(gsi_mark), "Operating": "10"},
    ]
    if utilization is not None:
        for t in out:
            t["TargetUtilization"] = utilization
    return out


def update_event(name: str, utilization: Any = "70") -> dict[str, Any]:
    """An Update raising the table's marks (read 1,000 -> 2,000, write 400 -> 500, the
    GSI's read 800 -> 1,000), as the provider passes it to is_complete."""
    event = {
        **cfn_event("Update", {"TableName": name, "Targets": targets(2000, 500, utilization)}),
        "OldResourceProperties": {
            "ServiceToken": "arn",
            "TableName": name,
            "Targets": targets(1000, 400, utilization, gsi_mark=800),
        },
        "PhysicalResourceId": f"{name}-settle",
    }
    return {**event, **on_event(event, None)}


def minute_now() -> datetime:
    return datetime.now(UTC).replace(second=0, microsecond=0)


@pytest.fixture
def cloudwatch(aws_client: Any) -> Any:
    return aws_client("cloudwatch")


@pytest.fixture
def autoscaling(aws_client: Any) -> Any:
    return aws_client("application-autoscaling")


TARGETS = ((None, "read"), (None, "write"), ("bySku", "read"))
"""The auto-scaled dimensions of the step's targets (`targets`)."""


def register(autoscaling: Any, name: str, minimums: dict[str, int] | None = None) -> None:
    """The scalable targets of ``name``'s `TARGETS`, each at its minimum in ``minimums``
    (keyed ``read``, ``write``, ``bySku.read``; 1 unless given), as a live table has them."""
    for index, dimension in TARGETS:
        key = f"{index}.{dimension}" if index else dimension
        autoscaling.register_scalable_target(
            ServiceNamespace="dynamodb",
            ResourceId=resource_id(name, index),
            ScalableDimension=scalable_dimension(index, dimension),
            MinCapacity=(minimums or {}).get(key, 1),
            MaxCapacity=40_000,
        )


def stubbed() -> Any:
    return boto3.client(
        "dynamodb", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x"
    )


DONE = {"IsComplete": True, "Data": {"Settled": "true"}}
"""The answer of the call after the one that lowered, its floors held: the step is done."""


def applied(table: dict[str, Any], update: dict[str, Any], at: float) -> dict[str, Any]:
    """``table`` (its DescribeTable) once ``update`` (an UpdateTable) has lowered it at
    ``at``: ACTIVE again, the decrease of each table or GSI it touched dated then."""
    out = copy.deepcopy(table)
    specs = {None: out, **{g["IndexName"]: g for g in out.get("GlobalSecondaryIndexes", [])}}
    changes = [
        (None, update.get("ProvisionedThroughput")),
        *(
            (u["Update"]["IndexName"], u["Update"]["ProvisionedThroughput"])
            for u in update.get("GlobalSecondaryIndexUpdates", [])
        ),
    ]
    for index, throughput in changes:
        if throughput is not None:
            when = datetime.fromtimestamp(at, UTC)
            specs[index]["ProvisionedThroughput"] = {**throughput, "LastDecreaseDateTime": when}
    return out


def settle(
    event: dict[str, Any],
    table: dict[str, Any],
    update: dict[str, Any] | None,
    cloudwatch: Any,
    autoscaling: Any,
    **more: Any,
) -> dict[str, Any]:
    """One call of is_complete on ``table`` (its DescribeTable), expecting exactly the
    UpdateTable ``update`` (None: none); ``cloudwatch`` and ``autoscaling`` (and ``more``:
    its hold store's reader, its clock): its readers. Where it lowers, the provider's next
    call, on the table lowered (`applied`), reads its floors again, puts nothing back and
    decides what is left at its mark (`DONE`); the first call's answer."""
    client, clock = stubbed(), more.get("clock", time.time)
    readers = {"cloudwatch": cloudwatch, "autoscaling": autoscaling, **more}
    with Stubber(client) as stubber:
        stubber.add_response("describe_table", {"Table": table}, {"TableName": table["TableName"]})
        if update is not None:
            stubber.add_response("update_table", {"TableDescription": {}}, update)
        answer = is_complete(event, None, dynamodb=client, **readers)
        stubber.assert_no_pending_responses()
        if update is not None and answer == LOWERED:
            lowered = applied(table, update, clock())
            stubber.add_response(
                "describe_table", {"Table": lowered}, {"TableName": lowered["TableName"]}
            )
            assert is_complete(event, None, dynamodb=client, **readers) == DONE
            stubber.assert_no_pending_responses()
    return answer


def left_events(caplog: pytest.LogCaptureFixture) -> list[dict[str, Any]]:
    return [vars(r) for r in caplog.records if r.getMessage() == "settle-left"]


def busy(cloudwatch: Any, name: str, read: float = 560) -> None:
    """The last 20 minutes of a busy live table: read ``read`` units/s (560: 800 at 70 %),
    write 7 (10), the GSI's read 35 (50)."""
    end = minute_now()
    put_traffic(cloudwatch, name, "read", read, end=end, minutes=range(1, 21))
    put_traffic(cloudwatch, name, "write", 7, end=end, minutes=range(1, 21))
    put_traffic(cloudwatch, name, "read", 35, end=end, minutes=range(1, 21), index="bySku")


def lowered(name: str, read: int, write: int = 10, gsi_read: int | None = 50) -> dict[str, Any]:
    """The UpdateTable that settles ``name``: its table and ``bySku``'s read lowered as given
    (``gsi_read`` None: the GSI untouched)."""
    update: dict[str, Any] = {
        "TableName": name,
        "ProvisionedThroughput": {"ReadCapacityUnits": read, "WriteCapacityUnits": write},
    }
    if gsi_read is not None:
        throughput = {"ReadCapacityUnits": gsi_read, "WriteCapacityUnits": 5}
        update["GlobalSecondaryIndexUpdates"] = [
            {"Update": {"IndexName": "bySku", "ProvisionedThroughput": throughput}}
        ]
    return update


def left_everywhere(caplog: pytest.LogCaptureFixture) -> list[dict[str, Any]]:
    """The ``settle-left`` events, each a warning, one for every auto-scaled dimension."""
    left = left_events(caplog)
    assert {(e["index"], e["dimension"]) for e in left} == {
        (None, "read"),
        (None, "write"),
        ("bySku", "read"),
    }
    assert all(e["levelname"] == "WARNING" for e in left)
    return left
