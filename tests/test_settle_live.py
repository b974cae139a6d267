"""The settle step on an Update, whose table is live: an auto-scaled dimension is lowered no
further than its traffic needs, and not at all while that traffic is unknown. DynamoDB's
answers are stubbed (the UPDATING-to-ACTIVE table an Update leaves, as the other settle
tests do); the traffic is a moto server's CloudWatch, and the scalable targets its
Application Auto Scaling."""

from __future__ import annotations

import copy
import logging
import time
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from ddb_capacity_runtime.core.names import resource_id, scalable_dimension
from ddb_capacity_runtime.settle.handler import SettleError, is_complete, on_event
from ddb_capacity_tools.local_aws import put_traffic

from .conftest import cfn_event

MARKS = {"read": 2000, "write": 500}
"""The new high-water marks this deploy sets (from 1,000 and 400): the table's capacity now."""
OPERATING = {"read": 100, "write": 5}
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


def metric_reads(client: Any) -> list[dict[str, Any]]:
    calls: list[dict[str, Any]] = []
    client.meta.events.register(
        "provide-client-params.cloudwatch.GetMetricData", lambda params, **_: calls.append(params)
    )
    return calls


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


def read_left_by_update(
    name: str, cloudwatch: Any, autoscaling: Any, caplog: pytest.LogCaptureFixture
) -> dict[str, Any]:
    """The settle step's Update of ``name``, the UpdateTable it makes expected (`lowered`:
    the read kept at its mark of 2,000, the write to its need, the GSI's read to 10):
    settled, with the table's read and nothing else left at its mark; that one
    ``settle-left`` event."""
    with caplog.at_level(logging.INFO):
        answer = settle(
            update_event(name),
            described(name),
            lowered(name, 2000, gsi_read=10),
            cloudwatch,
            autoscaling,
        )
    assert answer == LOWERED
    (left,) = left_events(caplog)
    assert (left["index"], left["dimension"]) == (None, "read")
    return left


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


@pytest.mark.parametrize(
    ("read_per_second", "read_after"),
    [(560, 800), (20, 100), (1500, None)],
    ids=["busy-to-its-need", "quiet-to-operating", "needs-its-mark"],
)
def test_an_update_lowers_a_live_table_only_to_what_its_traffic_needs(
    cloudwatch: Any, autoscaling: Any, read_per_second: float, read_after: int | None
) -> None:
    # GIVEN a live table whose read auto scaling held at 800 for 560 units/s (70 %) until
    # CloudFormation set it to its new mark of 2,000, its write busy at 7 units/s and its
    # GSI's read at 35, every minute of the last 19 delivered; its scalable targets at their
    # template's minimums
    name = table_name()
    register(autoscaling, name)
    busy(cloudwatch, name, read_per_second)
    # WHEN the settle step's Update runs
    read = read_after if read_after is not None else MARKS["read"]
    answer = settle(
        update_event(name), described(name), lowered(name, read), cloudwatch, autoscaling
    )
    # THEN each dimension is lowered to max(operating, peak / 70 %), never above its mark:
    # read 560 -> 800 (or its operating 100, or left at its mark of 2,000 when it needs
    # more), write 7 -> 10, the GSI's read 35 -> 50; in one UpdateTable
    assert answer == LOWERED


@pytest.mark.parametrize(
    "traffic",
    ["no-datapoint", "stopped-being-delivered", "read-throttled", "read-failed"],
)
def test_an_update_leaves_a_live_table_whose_traffic_is_unknown_at_its_mark(
    cloudwatch: Any, autoscaling: Any, caplog: pytest.LogCaptureFixture, traffic: str
) -> None:
    # GIVEN a live table whose traffic CloudWatch cannot vouch for: no datapoint at all, or
    # none since 10 minutes ago (longer than CloudWatch is late), or a GetMetricData call
    # that is throttled or denied
    name = table_name()
    register(autoscaling, name)
    if traffic == "stopped-being-delivered":
        put_traffic(cloudwatch, name, "read", 560, end=minute_now(), minutes=range(10, 21))
    reader = cloudwatch
    if traffic in ("read-throttled", "read-failed"):
        reader = boto3.client(
            "cloudwatch", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x"
        )
        stubber = Stubber(reader)
        code = "Throttling" if traffic == "read-throttled" else "AccessDenied"
        stubber.add_client_error("get_metric_data", code, "no")
        stubber.activate()
    # WHEN the settle step's Update runs
    with caplog.at_level(logging.INFO):
        answer = settle(update_event(name), described(name), None, reader, autoscaling)
    # THEN no UpdateTable is sent, and the step completes: the deploy goes on
    assert answer == {"IsComplete": True, "Data": {"Settled": "false"}}
    # AND each dimension says it was left at its mark, and why
    reason = left_everywhere(caplog)[0]["reason"]
    if traffic.startswith("read-"):
        assert "its traffic could not be read (GetMetricData" in reason
        assert ("Throttling" if traffic == "read-throttled" else "AccessDenied") in reason
    else:
        assert reason.startswith("CloudWatch cannot vouch for ")


def test_an_update_leaves_a_throttled_dimension_and_lowers_the_others(
    cloudwatch: Any, autoscaling: Any, caplog: pytest.LogCaptureFixture
) -> None:
    # GIVEN a live table whose read was throttled in the last minutes (what it would consume
    # is not known), its write and its GSI's read busy without throttles
    name = table_name()
    register(autoscaling, name)
    end = minute_now()
    put_traffic(cloudwatch, name, "read", 560, end=end, minutes=range(1, 21), throttles=40)
    put_traffic(cloudwatch, name, "write", 7, end=end, minutes=range(1, 21))
    # WHEN the settle step's Update runs
    left = read_left_by_update(name, cloudwatch, autoscaling, caplog)
    # THEN the read keeps its mark; the write goes to its need, and the GSI's idle read
    # (known idle: the table's own datapoints show the minutes delivered) to its operating
    assert "throttled" in left["reason"]


def test_an_update_leaves_a_dimension_whose_newest_minute_is_late_and_lowers_the_others(
    cloudwatch: Any, autoscaling: Any, caplog: pytest.LogCaptureFixture
) -> None:
    # GIVEN a live table whose read's minute 3 minutes ago has not arrived (CloudWatch late
    # with it) while its newer ones, and every minute of its write, have
    name = table_name()
    register(autoscaling, name)
    end = minute_now()
    put_traffic(cloudwatch, name, "read", 560, end=end, minutes=range(4, 21))
    put_traffic(cloudwatch, name, "read", 560, end=end, minutes=range(1, 3))
    put_traffic(cloudwatch, name, "write", 7, end=end, minutes=range(1, 21))
    # WHEN the settle step's Update runs
    left = read_left_by_update(name, cloudwatch, autoscaling, caplog)
    # THEN the read keeps its mark: its late minute is not idle, and may have held more;
    # the write goes to its need, and the GSI's idle read to its operating
    assert left["reason"].startswith("CloudWatch cannot vouch for ")


def test_an_update_lowers_a_fixed_capacity_to_its_operating_without_reading_traffic(
    cloudwatch: Any, autoscaling: Any
) -> None:
    # GIVEN a busy live table whose targets carry no TargetUtilization (fixed capacities)
    name = table_name()
    put_traffic(cloudwatch, name, "read", 560, end=minute_now(), minutes=range(1, 21))
    reads = metric_reads(cloudwatch)
    # WHEN the settle step's Update runs
    answer = settle(
        update_event(name, utilization=None),
        described(name),
        lowered(name, 100, 5, gsi_read=10),
        cloudwatch,
        autoscaling,
    )
    # THEN each is lowered to its operating capacity, as configured; no traffic is read
    assert answer == LOWERED
    assert reads == []


def test_a_create_settles_a_new_table_to_its_operating_without_reading_traffic(
    cloudwatch: Any, autoscaling: Any
) -> None:
    # GIVEN a table created at its marks a minute ago (traffic or not: nothing live to keep)
    name = table_name()
    put_traffic(cloudwatch, name, "read", 560, end=minute_now(), minutes=range(1, 21))
    reads = metric_reads(cloudwatch)
    table = described(name)
    table["CreationDateTime"] = datetime.now(UTC) - timedelta(minutes=1)
    event = cfn_event("Create", {"TableName": name, "Targets": targets(2000, 500)})
    event = {**event, **on_event(event, None, clock=time.time)}
    # WHEN the settle step's Create runs
    answer = settle(
        event,
        table,
        lowered(name, 100, 5, gsi_read=10),
        cloudwatch,
        autoscaling,
    )
    # THEN it is settled to its operating capacities, as before; no traffic is read
    assert answer == LOWERED
    assert reads == []


@pytest.mark.parametrize(
    ("utilization", "shown"),
    [("19", "'19'"), ("95.5", "'95.5'"), ("7_0", "'7_0'"), ("nan", "'nan'"), (True, "True")],
)
def test_a_target_utilization_that_is_not_a_percentage_is_refused_by_name(
    utilization: Any, shown: str
) -> None:
    event = cfn_event("Create", {"TableName": "orders", "Targets": targets(2000, 500, utilization)})
    with pytest.raises(
        SettleError,
        match=r"Targets\[0\]\.TargetUtilization must be a percentage from 20 to 90 .*got "
        + shown.replace(".", r"\."),
    ):
        on_event(event, None)
