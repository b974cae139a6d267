"""The scaler bounds levels and minimums by the account's own table quota where it is above
the configured one: each tick reads DescribeLimits (moto's real answer: 10,000 units a
table), takes the larger of the two, never a smaller one, and keeps the configured quota,
counted, when the read fails or its answer is forged (the answers moto never gives through
botocore's Stubber)."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from ddb_capacity_runtime.aws.clients import Clients
from ddb_capacity_runtime.aws.table_calls import account_table_quota
from ddb_capacity_runtime.core.names import DEFAULT_TABLE_QUOTA, MAX_TABLE_QUOTA
from ddb_capacity_runtime.core.settings import ScalerConfig
from ddb_capacity_runtime.scaler.tick import run_tick
from ddb_capacity_tools.local_aws import recorded_events
from tests.support.moto_world import World


@pytest.fixture
def world(aws_client: Any) -> Iterator[World]:
    made = World(aws_client)
    yield made
    made.close()


def _ignored(events: list[dict[str, Any]], name: str) -> list[str]:
    return [e["key"] for e in events if e.get("event") == "tag-ignored" and e["table"] == name]


def test_a_tag_above_the_configured_quota_is_obeyed_up_to_the_accounts_quota(
    world: World,
) -> None:
    # GIVEN a table tagged write-max=8,000, in an account whose
    # quota (DescribeLimits, moto's 10,000) is above the configured 5,000
    name = world.table("quota", 100, 100, tags={"ddb-capacity:write-max": "8000"})
    # WHEN a tick runs with the configured quota
    summary, events = world.tick(CAPACITY_TABLE_QUOTA="5000")
    # THEN the tag is read (the account's quota bounds it), not ignored as out of range
    assert _ignored(events, name) == []
    assert summary["failures"] == []


def test_a_smaller_account_quota_never_lowers_the_configured_one(world: World) -> None:
    # GIVEN a table tagged write-max=20,000: above moto's 10,000 but within the default 40,000
    name = world.table("big", 100, 100, tags={"ddb-capacity:write-max": "20000"})
    # WHEN a tick runs with the default quota
    _, events = world.tick()
    # THEN the tag is read: the account's smaller answer did not lower the quota
    assert _ignored(events, name) == []
    # AND with a configured quota below the tag and the account's, the tag is ignored
    _, events = world.tick(CAPACITY_TABLE_QUOTA="5000")
    assert _ignored(events, name) == ["ddb-capacity:write-max"]


def _stubbed(answer: dict[str, Any] | None, error: str | None = None) -> Any:
    client = boto3.client(
        "dynamodb", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x"
    )
    stub = Stubber(client)
    if error is not None:
        stub.add_client_error("describe_limits", service_error_code=error, http_status_code=400)
    else:
        stub.add_response("describe_limits", answer or {})
    stub.activate()
    return client


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        (
            {"TableMaxReadCapacityUnits": 80_000, "TableMaxWriteCapacityUnits": 60_000},
            (80_000, 60_000),
        ),
        (
            {"TableMaxReadCapacityUnits": 10_000, "TableMaxWriteCapacityUnits": 10_000},
            (40_000, 40_000),
        ),
        ({"TableMaxWriteCapacityUnits": 50_000}, (40_000, 50_000)),
        ({"TableMaxReadCapacityUnits": 10**12}, (MAX_TABLE_QUOTA, 40_000)),
    ],
)
def test_the_accounts_quota_only_raises_the_configured_one(
    answer: dict[str, Any], expected: tuple[int, int]
) -> None:
    assert account_table_quota(_stubbed(answer), DEFAULT_TABLE_QUOTA) == expected


def test_an_answer_with_no_quota_is_refused_naming_it() -> None:
    with pytest.raises(ValueError, match="DescribeLimits: no table quota in the answer"):
        account_table_quota(_stubbed({"AccountMaxReadCapacityUnits": 80_000}), 40_000)


def test_a_failed_read_keeps_the_configured_quota_counted_and_the_tick_goes_on(
    world: World,
) -> None:
    # GIVEN a scaler whose tag discovery finds no table, and whose DescribeLimits is denied
    config = ScalerConfig.from_env({"SCALER_TAG_KEY": "none", "SCALER_TAG_VALUE": world.run_id})
    ddb = _stubbed(None, error="AccessDeniedException")
    clients = Clients(ddb, world.aas, world.cw, world.clients.tagging)
    out = io.StringIO()
    # WHEN a tick runs
    with recorded_events() as events:
        summary = run_tick(config, clients, datetime.now(UTC), out=out, store=world.store)
    # THEN it did not fail, the configured quota bounded it, and the failed read is logged
    # with its code and counted as a shared call lost
    assert summary["failures"] == []
    (lost,) = [e for e in events if e.get("event") == "shared-call-throttled"]
    assert "DescribeLimits" in lost["error"] and "AccessDeniedException" in lost["error"]
    assert "(40,000) bounds this tick" in lost["error"]
    (record,) = [json.loads(line) for line in out.getvalue().splitlines()]
    assert record["SharedFailures"] == 1


def test_each_dimension_is_raised_to_its_own_quota_not_the_larger(world: World) -> None:
    # GIVEN an account whose read quota is 80,000 and write quota 40,000 (DescribeLimits'
    # answer, as AWS gives it for a raised read quota), and a table at 30,000 writes tagged
    # write-max=60,000, throttled: its raise wants more than 40,000
    def answer(parsed: dict[str, Any], **_: Any) -> None:
        parsed.update(TableMaxReadCapacityUnits=80_000, TableMaxWriteCapacityUnits=40_000)

    name = world.table("split", 100, 30_000, tags={"ddb-capacity:write-max": "60000"})
    world.traffic(name, "write", 30_000)
    world.traffic(name, "write", 0, throttles=900_000, minutes=range(1, 3))
    world.ddb.meta.events.register("after-call.dynamodb.DescribeLimits", answer)
    try:
        # WHEN a tick runs
        summary, events = world.tick()
    finally:
        world.ddb.meta.events.unregister("after-call.dynamodb.DescribeLimits", answer)
    # THEN the write goes to its own quota, 40,000, not past it (where UpdateTable fails)
    assert world.throughput(name)[1] == 40_000
    assert summary["failures"] == []
    (raised,) = [e for e in events if e.get("event") == "decision" and e["dimension"] == "write"]
    assert raised["to"] == 40_000


@pytest.mark.parametrize("told", [10_000, -5, "60000", None])
def test_a_forged_write_quota_never_lowers_a_capacity_above_it(world: World, told: Any) -> None:
    # GIVEN a table at 50,000 writes, busy, in an account whose DescribeLimits answer is
    # forged to say a write quota below it, or none that is a whole number
    def answer(parsed: dict[str, Any], **_: Any) -> None:
        parsed.update(TableMaxReadCapacityUnits=80_000, TableMaxWriteCapacityUnits=told)

    name = world.table("forged", 100, 50_000, tags={"ddb-capacity:write-max": "60000"})
    world.traffic(name, "write", 34_000)  # 48,572 at 70 %: no decrease worth making
    world.ddb.meta.events.register("after-call.dynamodb.DescribeLimits", answer)
    try:
        summary, _ = world.tick()
    finally:
        world.ddb.meta.events.unregister("after-call.dynamodb.DescribeLimits", answer)
    # THEN the writes stay where they are: a quota read never lowers a capacity
    assert world.throughput(name)[1] == 50_000
    assert summary["failures"] == []
