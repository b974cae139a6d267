"""A table the scaler manages that DynamoDB reports in a status no wait ends (its KMS key
inaccessible, archiving, archived) is a failure of that table, counted and alarmed, not a
quiet skip; one being created or deleted is skipped as before. Moto's tables are always
ACTIVE: DescribeTable's answer is edited by a botocore event hook."""

from __future__ import annotations

import io
from datetime import timedelta
from typing import Any

import pytest

from ddb_capacity_runtime.aws.clients import Clients
from ddb_capacity_runtime.scaler.shard import Batch
from tests.support.faults import assert_handled, busy_and_idle, emf, world  # noqa: F401
from tests.support.moto_world import World
from tests.support.sharded_tick import emf_records, ticked

UNAVAILABLE = ["INACCESSIBLE_ENCRYPTION_CREDENTIALS", "ARCHIVING", "ARCHIVED"]
PASSING = ["CREATING", "DELETING"]


def _reported(world: World, table: str, status: str) -> None:  # noqa: F811
    """DynamoDB's DescribeTable reports ``table`` in ``status`` from now on."""

    def edit(parsed: dict[str, Any], **_: Any) -> None:
        if parsed.get("Table", {}).get("TableName") == table:
            parsed["Table"]["TableStatus"] = status

    world.ddb.meta.events.register("after-call.dynamodb.DescribeTable", edit)


@pytest.mark.parametrize("status", UNAVAILABLE)
def test_a_table_in_a_status_no_wait_ends_is_a_failure_of_its_own(
    world: World,  # noqa: F811
    status: str,
) -> None:
    # GIVEN a managed table DynamoDB reports in a status that does not pass by itself
    busy, idle = busy_and_idle(world)
    stuck = world.table("stuck", 100, 100)
    _reported(world, stuck, status)
    # WHEN a tick runs
    summary, events = world.tick()
    # THEN that table is a failure, counted in its own record (the scaler's failure alarm),
    # saying its status; it is left as it is, and the others are handled
    (failure,) = summary["failures"]
    assert failure["table"] == stuck and f"status '{status}'" in failure["reason"]
    assert emf(events, stuck)["Failures"] == 1
    assert not any(s["table"] == stuck for s in summary["skipped"])
    assert world.throughput(stuck) == (100, 100)
    assert_handled(world, busy, idle)


@pytest.mark.parametrize("status", PASSING)
def test_a_table_being_created_or_deleted_is_skipped_uncounted(
    world: World,  # noqa: F811
    status: str,
) -> None:
    # GIVEN a managed table DynamoDB reports being created or deleted
    busy, idle = busy_and_idle(world)
    passing = world.table("passing", 100, 100)
    _reported(world, passing, status)
    # WHEN a tick runs
    summary, events = world.tick()
    # THEN it is skipped for the tick, neither a failure nor counted
    assert {"table": passing, "reason": f"status {status}"} in summary["skipped"]
    assert summary["failures"] == []
    assert not [e for e in events if "_aws" in e and e.get("TableName") == passing]
    assert_handled(world, busy, idle)


def test_a_table_in_a_status_no_wait_ends_fails_its_batch_alone(
    world: World,  # noqa: F811
) -> None:
    # GIVEN a batch with a table whose KMS key DynamoDB cannot use
    busy, idle = busy_and_idle(world)
    _reported(world, idle, "INACCESSIBLE_ENCRYPTION_CREDENTIALS")
    batch = Batch(world.now, world.now + timedelta(minutes=2), 1, 1, (busy, idle))
    out = io.StringIO()
    clients = Clients(world.ddb, world.aas, world.cw, world.clients.tagging)
    # WHEN the batch function runs it
    ticked(world, clients, batch, out)
    # THEN that table is counted a failure, and the other decided
    (record,) = [r for r in emf_records(out) if r.get("TableName") == idle]
    assert record["Failures"] == 1
    assert world.throughput(busy) == (100, 215)
