"""The settle step on an Update, whose table is live: an auto-scaled dimension is lowered no
further than its traffic needs, and not at all while that traffic is unknown. DynamoDB's
answers are stubbed (the UPDATING-to-ACTIVE table an Update leaves, as the other settle
tests do); the traffic is a moto server's CloudWatch, and the scalable targets its
Application Auto Scaling."""

from __future__ import annotations

import logging
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from ddb_capacity_runtime.settle.handler import SettleError, on_event
from ddb_capacity_tools.local_aws import put_traffic
from tests.conftest import cfn_event
from tests.support.settle_live import (
    LOWERED,
    MARKS,
    busy,
    described,
    left_events,
    left_everywhere,
    lowered,
    minute_now,
    register,
    settle,
    table_name,
    targets,
    update_event,
)
from tests.support.settle_live import autoscaling as autoscaling  # noqa: F401 (fixture)
from tests.support.settle_live import cloudwatch as cloudwatch  # noqa: F401 (fixture)

OPERATING = {"read": 100, "write": 5}


def metric_reads(client: Any) -> list[dict[str, Any]]:
    calls: list[dict[str, Any]] = []
    client.meta.events.register(
        "provide-client-params.cloudwatch.GetMetricData", lambda params, **_: calls.append(params)
    )
    return calls


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
