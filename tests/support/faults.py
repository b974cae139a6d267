"""AWS faults the scaler's tick meets (throttles, client errors, unsound tagging answers),
its test world, and the EMF records it writes."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from botocore.compat import HTTPHeaders
from botocore.exceptions import ClientError

from tests.support.moto_world import World
from tests.support.retry_policy import _Raw


@pytest.fixture
def world(aws_client: Any) -> Iterator[World]:
    made = World(aws_client)
    yield made
    made.close()


def busy_and_idle(world: World) -> tuple[str, str]:
    """Two healthy tables: writes throttled at 100 (raised to 215), and an idle one."""
    busy = world.table("busy", 100, 100)
    world.traffic(busy, "read", 60)
    world.traffic(busy, "write", 100)
    world.traffic(busy, "write", 0, throttles=3000, minutes=range(1, 3))
    idle = world.table("idle", 200, 200)
    return busy, idle


def raised_minimum(world: World, name: str) -> str:
    """A calm table (5 writes a second) whose write minimum the library holds at 500 over a
    configured 100: a tick with every call answered restores the 100."""
    table = world.table(name, 300, 500)
    world.target(table, "write", 500, 1000)
    world.traffic(table, "write", 5)
    with world.store.lease(table, None, "write", deadline=time.time() + 5) as lease:
        lease.write(100, set_to=500)
    return table


def assert_handled(world: World, busy: str, idle: str, *, lowered: bool = True) -> None:
    assert world.throughput(busy) == (100, 215)
    assert world.throughput(idle) == ((5, 5) if lowered else (200, 200))


def emf(events: list[dict[str, Any]], table: str | None) -> dict[str, Any]:
    (record,) = [e for e in events if "_aws" in e and e.get("TableName") == table]
    return record


def fail_before(
    client: Any, operation: str, when: Callable[[dict[str, Any]], bool], error: Exception
) -> Callable[[], None]:
    """Raise ``error`` instead of calling ``operation`` when ``when(params)``, until the
    returned function is called."""
    service = client.meta.service_model.service_name
    armed = [True]

    def hook(params: dict[str, Any], **_: Any) -> None:
        if armed[0] and when(params):
            raise error

    client.meta.events.register(f"before-parameter-build.{service}.{operation}", hook)

    def disarm() -> None:
        armed[0] = False

    return disarm


def minute_queries(params: dict[str, Any]) -> bool:
    """GetMetricData calls that read the tick's per-minute metrics (consumed capacity and
    throttles, and the state store's consumed reads that witness the minutes delivered; not
    their causes, read after them for throttled dimensions only)."""
    return all(
        q["MetricStat"]["Period"] == 60 and q["Id"][0] in "ctw" for q in params["MetricDataQueries"]
    )


def client_error(code: str, operation: str) -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": "injected"}}, operation)


SHARED_CALLS = [
    ("cloudwatch", "GetMetricData"),
    ("application-autoscaling", "DescribeScalableTargets"),
    ("application-autoscaling", "DescribeScalingPolicies"),
    ("resourcegroupstaggingapi", "GetResources"),
]


def fail_shared_call(world: World, service: str, operation: str, error: Exception) -> list[int]:
    """Make the tick's own ``operation`` fail with ``error`` every time; returns its calls."""
    clients = {
        "cloudwatch": world.cw,
        "application-autoscaling": world.aas,
        "resourcegroupstaggingapi": world.clients.tagging,
    }
    calls: list[int] = []

    def count(params: dict[str, Any]) -> bool:
        # the tick's own minutes; the forecast's history, read at the hour's first tick in
        # autopilot mode, is another shared call with tests of its own
        if operation == "GetMetricData" and not minute_queries(params):
            return False
        if "ResourceIds" in params:
            return False  # a table's own targets, read when the account's listing failed
        calls.append(1)
        return True

    fail_before(clients[service], operation, count, error)
    return calls


def unsound_tagging(
    world: World, odd: str, extra: list[Any], tagging: Any = None
) -> Callable[[], None]:
    """Every GetResources answer (of ``tagging``; default: the world's client) gives
    ``odd``'s tags unsound (a tag without its value) and carries the entries ``extra`` too,
    until the returned function is called."""

    def unsound(parsed: dict[str, Any], **_: Any) -> None:
        entries = parsed.get("ResourceTagMappingList", [])
        for entry in entries:
            if entry["ResourceARN"].endswith(f":table/{odd}"):
                entry["Tags"] = [{"Key": "team"}, *entry.get("Tags", [])]
        entries += extra

    tagging = tagging or world.clients.tagging
    event = "after-call.resource-groups-tagging-api.GetResources"
    tagging.meta.events.register(event, unsound)
    return lambda: tagging.meta.events.unregister(event, unsound)


NO_TABLES = [
    {"ResourceARN": "arn:aws:dynamodb::123456789012:global-table/orders", "Tags": []},
    {"Tags": [{"Key": "team", "Value": "shop"}]},
    "not an entry",
]
"""Entries of a GetResources answer that name no table."""


def throttle_first(client: Any, operation: str, attempts: int) -> list[int]:
    """Answer ``client``'s (DynamoDB's) first ``attempts`` attempts of ``operation`` with
    ThrottlingException, as AWS does over its rate (botocore retries it); the returned
    list holds the attempts left to throttle."""
    from botocore.awsrequest import AWSResponse

    throttled = [attempts]

    def answer(request: Any, **_: Any) -> AWSResponse | None:
        if not throttled[0]:
            return None
        throttled[0] -= 1
        body = b'{"__type":"com.amazonaws.dynamodb.v20120810#ThrottlingException","message":"Rate exceeded"}'
        headers = HTTPHeaders.from_dict({"Content-Type": "application/x-amz-json-1.0"})
        return AWSResponse(request.url, 400, headers, _Raw(body))

    client.meta.events.register(f"before-send.dynamodb.{operation}", answer)
    return throttled
