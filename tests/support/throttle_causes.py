"""The throttle causes' world of a hot key beside an idle table."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.moto_world import World


@pytest.fixture
def world(aws_client: Any) -> Iterator[World]:
    made = World(aws_client)
    yield made
    made.close()


def hot_key_and_idle(world: World) -> tuple[str, str]:
    """A table whose writes are throttled, every event a hot key's by the cause metrics,
    and an idle table beside it."""
    hot = world.table("hot", 100, 100)
    idle = world.table("idle", 200, 200)
    world.traffic(hot, "write", 100)
    world.traffic(
        hot, "write", 0, throttles=3000, minutes=range(1, 3), causes={"KeyRangeThroughput": 3000}
    )
    return hot, idle


def count_queries(world: World) -> list[list[str]]:
    """The metric names of each GetMetricData call the world's ticks make (filled as they
    run), by a boto3 event hook on the tick's own CloudWatch client."""
    calls: list[list[str]] = []

    def record(params: dict[str, Any], **_: Any) -> None:
        calls.append([q["MetricStat"]["Metric"]["MetricName"] for q in params["MetricDataQueries"]])

    world.clients.cloudwatch.meta.events.register(
        "provide-client-params.cloudwatch.GetMetricData", record
    )
    return calls
