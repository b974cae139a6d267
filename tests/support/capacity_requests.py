"""The capacity requests' test world: stored holds, a clock the tests move, and a
DescribeTable answered without AWS."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from ddb_capacity_runtime.aws.clients import Clients
from ddb_capacity_runtime.aws.store import HoldStore
from ddb_capacity_runtime.core.holds import HeldDimension
from ddb_capacity_runtime.requests import request as request_module
from ddb_capacity_runtime.requests import (
    request_capacity,
)
from ddb_capacity_tools.local_aws import create_store_table
from tests.support.moto_world import World


@pytest.fixture
def world(aws_client: Any, store_dynamodb: Any) -> Iterator[World]:
    """Tables, targets and traffic in moto; the state store in dynalite."""
    made = World(aws_client, store_dynamodb)
    yield made
    made.close()


def stored(world: World, name: str) -> dict[tuple[str | None, str], HeldDimension]:
    """What the hold store holds of ``name``, by (index, dimension) (an item at rest, with
    its base and recent intents alone, holds nothing)."""
    return {h.scope: h for h in world.store.table(name) if h.holding}


def write_held(world: World, label: str, base: int, write: int, minutes: float) -> tuple[str, Any]:
    """A table ``label`` whose write target's minimum is ``base``, raised to ``write`` (over no
    traffic) by a hold of ``minutes``; returns its name and the hold."""
    name = world.table(label, 10, base, tagged=False)
    world.target(name, "write", base, 20_000)
    hold = request_capacity(
        name,
        write=write,
        hold=timedelta(minutes=minutes),
        clients=world.clients,
        store=world.store,
    )
    assert world.target_min(name, "write") == write
    return name, hold


def later(minutes: float) -> Any:
    """A clock ``minutes`` from now."""
    return lambda: time.time() + minutes * 60


def _table(status: str = "ACTIVE", write: int = 10, decreases: int = 0) -> dict[str, Any]:
    return {
        "Table": {
            "TableName": "Orders",
            "TableStatus": status,
            "TableArn": "arn:aws:dynamodb:us-east-1:123456789012:table/Orders",
            "ProvisionedThroughput": {
                "ReadCapacityUnits": 10,
                "WriteCapacityUnits": write,
                **(
                    {"NumberOfDecreasesToday": decreases, "LastDecreaseDateTime": datetime.now(UTC)}
                    if decreases
                    else {}
                ),
            },
        }
    }


def _tags(**extra: str) -> dict[str, Any]:
    return {"Tags": [{"Key": k, "Value": v} for k, v in extra.items()]}


class FakeClock:
    def __init__(self) -> None:
        self.t = time.time()

    def __call__(self) -> float:
        return self.t

    def sleep(self, seconds: float) -> None:
        self.t += seconds


HOLD_ID = "0123456789ab"


@pytest.fixture
def stubbed(
    aws_client: Any, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[Stubber, Clients, HoldStore]]:
    """A stubbed DynamoDB client for the table beside moto's Application Auto Scaling,
    CloudWatch and a hold store in moto; new holds get the id HOLD_ID."""
    store_name = f"holds-{uuid.uuid4().hex[:8]}"
    create_store_table(aws_client("dynamodb"), store_name)
    # the uuid module the request module draws its hold ids from
    monkeypatch.setattr(
        vars(request_module)["uuid"], "uuid4", lambda: uuid.UUID(HOLD_ID + "0" * 20)
    )
    ddb = boto3.client(
        "dynamodb", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x"
    )
    stub = Stubber(ddb)
    # no tagging client: nothing here looks tables up by tag
    clients = Clients(ddb, aws_client("application-autoscaling"), aws_client("cloudwatch"), None)  # type: ignore[arg-type]
    with stub:
        yield stub, clients, HoldStore(aws_client("dynamodb"), store_name)
    stub.assert_no_pending_responses()


def _described(stub: Any, table: dict[str, Any] | None = None) -> None:
    """What reading the table costs: DescribeTable, then its tags."""
    stub.add_response("describe_table", table or _table())
    stub.add_response("list_tags_of_resource", _tags())
