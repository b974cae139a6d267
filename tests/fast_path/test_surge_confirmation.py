"""The 5-minute confirmation of a surge raised on the processes' reports alone, against real
parts (the table, its target and CloudWatch in a moto server, the state store in dynalite):
DynamoDB's own throttle events are demand the table could not serve, and a minute
CloudWatch is not known to have delivered is unknown, never a minute that served nothing."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from ddb_capacity_runtime.fast_path.surge_settings import SurgeSettings
from tests.support.moto_world import World
from tests.support.surge_runtime_rules import Clock
from tests.support.surge_server import (
    a_table,
    counted,
    report,
    send,
    served,
    served_writes,
    store_reads,
    write,
)
from tests.support.surge_server import prompt_store as prompt_store  # noqa: F401 (fixture)
from tests.support.surge_server import world as world  # noqa: F401 (fixture)

#: The looks: every minute for 5 minutes, then every 10 s past the first confirmation.
LOOKS = [0, 60, 120, 180, 240, 300, 310, 320]


def throttle_events(
    world: World,  # noqa: F811 (the fixture)
    name: str,
    per_minute: float,
    minutes: range,
    metric: str = "WriteThrottleEvents",
) -> None:
    """DynamoDB's ``metric`` of ``name`` in CloudWatch, ``per_minute`` events a minute for
    each of ``minutes`` from the world's current minute."""
    world.cw.put_metric_data(
        Namespace="AWS/DynamoDB",
        MetricData=[
            {
                "MetricName": metric,
                "Dimensions": [{"Name": "TableName", "Value": name}],
                "Timestamp": world.now + timedelta(minutes=m),
                "Value": per_minute,
                "Unit": "Count",
            }
            for m in minutes
        ],
    )


def looks(world: World, name: str) -> list[dict[str, Any]]:  # noqa: F811 (the fixture)
    """A process's report of 2,000 units/s and throttles at each of `LOOKS` (the deployed
    defaults: the surge capped at 4x its start); each answer's one row."""
    start = world.now.timestamp() + 5
    clock = Clock(start)
    rows = []
    for s in LOOKS:
        clock.t = start + s
        event = report(name, write(2_000, throttles={"provisioned": 5_000}), sent=clock())
        (row,) = send(world, event, served(name), SurgeSettings(), clock=clock)["dimensions"]
        rows.append(dict(row))
    return rows


def test_a_surge_dynamodb_throttles_is_confirmed_though_it_serves_less_than_its_start(
    world: World,  # noqa: F811 (the fixture)
    capsys: pytest.CaptureFixture[str],
) -> None:
    # GIVEN a table at 100 write units still serving 95 units/s in CloudWatch's busiest
    # minute (its raise not landed yet) while DynamoDB refuses 5,000 writes a minute
    name = a_table(world, "Refusing")
    served_writes(world, name, 95, range(-8, 12))
    throttle_events(world, name, 5_000, range(-8, 12))
    # WHEN its processes report 2,000 units/s and throttles past the first 5 minutes
    rows = looks(world, name)
    # THEN the surge goes on: the writes DynamoDB refused are demand it could not serve
    assert [r["status"] for r in rows] == ["applied"] + ["renewed"] * 7
    out = capsys.readouterr().out
    assert (counted(out, "SurgesUnconfirmed"), counted(out, "CorroborationFailed")) == (0, 0)


def test_throttles_more_capacity_cannot_serve_confirm_nothing(
    world: World,  # noqa: F811 (the fixture)
    capsys: pytest.CaptureFixture[str],
) -> None:
    # GIVEN the same table, whose every throttle DynamoDB puts on a hot key (its metric by
    # cause), and which serves nothing
    name = a_table(world, "HotKeyOnly")
    store_reads(world, range(-8, 12))
    throttle_events(world, name, 5_000, range(-8, 12))
    throttle_events(
        world, name, 5_000, range(-8, 12), metric="WriteKeyRangeThroughputThrottleEvents"
    )
    # WHEN its processes report 2,000 units/s and throttles past the first 5 minutes
    rows = looks(world, name)
    # THEN the surge is not confirmed: more capacity would have served none of them
    assert [r["status"] for r in rows[5:]] == ["unconfirmed"] * 3
    assert counted(capsys.readouterr().out, "SurgesUnconfirmed") == 1


def test_a_window_cloudwatch_has_not_delivered_is_unknown_and_the_surge_goes_on(
    world: World,  # noqa: F811 (the fixture)
    capsys: pytest.CaptureFixture[str],
) -> None:
    # GIVEN a table whose CloudWatch minutes are none of them delivered: nothing of the
    # table's, nor of the state store's reads that witness them
    name = a_table(world, "Undelivered")
    # WHEN its processes report past the first 5 minutes
    rows = looks(world, name)
    # THEN the surge goes on (unknown never lowers capacity); the read that settled nothing
    # is counted, once for the minute, and no surge is counted unconfirmed
    assert [r["status"] for r in rows] == ["applied"] + ["renewed"] * 7
    out = capsys.readouterr().out
    assert counted(out, "SurgesUnconfirmed") == 0
    assert counted(out, "CorroborationFailed") >= 1


def test_the_newest_minutes_the_witness_alone_shows_delivered_confirm_nothing_away(
    world: World,  # noqa: F811 (the fixture)
    capsys: pytest.CaptureFixture[str],
) -> None:
    # GIVEN a table serving 300 units/s (at 100), whose own minutes CloudWatch has delivered
    # only up to 5 minutes before the surge's start, while the state store's reads that
    # witness delivery are there up to now (a table's metrics minutes behind the store's)
    name = a_table(world, "Behind")
    served_writes(world, name, 300, range(-8, -4))
    store_reads(world, range(-8, 12))
    # WHEN its processes report past the first 5 minutes
    rows = looks(world, name)
    # THEN the surge goes on: the newest minutes, empty of the table's own datapoints, are
    # not taken for minutes that served nothing (they may not be delivered for it yet)
    assert [r["status"] for r in rows] == ["applied"] + ["renewed"] * 7
    assert counted(capsys.readouterr().out, "SurgesUnconfirmed") == 0
