"""Runs in: tests.

A day of on-demand windows against the moto server: a table with a GSI and four scalable
targets (one with scheduled scaling suspended by its owner), the switch's state store, a
clock the test moves, and every UpdateTable request as it was sent (moto drops
``OnDemandThroughput``, so the request is what shows it)."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from contextlib import contextmanager, redirect_stdout
from dataclasses import dataclass, field
from typing import Any

import pytest

from ddb_capacity_runtime.hybrid.switcher import Switcher
from ddb_capacity_tools.local_aws import create_store_table
from tests.support.moto_world import World

START = 1_780_000_000.0
"""The test day's first moment (seconds since the epoch)."""


@dataclass
class Clock:
    now: float = START

    def __call__(self) -> float:
        return self.now


@dataclass
class SwitchWorld:
    world: World
    table: str
    switcher: Switcher
    clock: Clock
    sent: list[dict[str, Any]] = field(default_factory=list)

    def targets(self) -> dict[tuple[str, str], tuple[int, int, dict[str, bool]]]:
        """The table's scalable targets now: (min, max, suspended state) by target."""
        answer = self.world.aas.describe_scalable_targets(
            ServiceNamespace="dynamodb",
            ResourceIds=[f"table/{self.table}", f"table/{self.table}/index/byUser"],
        )
        return {
            (t["ResourceId"], t["ScalableDimension"]): (
                t["MinCapacity"],
                t["MaxCapacity"],
                dict(t.get("SuspendedState", {})),
            )
            for t in answer["ScalableTargets"]
        }

    def described(self) -> dict[str, Any]:
        return dict(self.world.ddb.describe_table(TableName=self.table)["Table"])

    def deployed(self, table: tuple[int, int], gsi: tuple[int, int]) -> None:
        """The table provisioned again as a deploy of its template sets it (CloudFormation
        applies the BillingMode and the read and write capacity it declares, its GSI's too)."""

        def throughput(units: tuple[int, int]) -> dict[str, int]:
            return {"ReadCapacityUnits": units[0], "WriteCapacityUnits": units[1]}

        self.world.ddb.update_table(
            TableName=self.table,
            BillingMode="PROVISIONED",
            ProvisionedThroughput=throughput(table),
            GlobalSecondaryIndexUpdates=[
                {"Update": {"IndexName": "byUser", "ProvisionedThroughput": throughput(gsi)}}
            ],
        )


@contextmanager
def counts() -> Iterator[list[dict[str, Any]]]:
    """What the switch function counts within the block (its metrics' lines, printed as in
    Lambda), in the list yielded once the block is left, whether or not it raised."""
    lines = io.StringIO()
    found: list[dict[str, Any]] = []
    with pytest.MonkeyPatch.context() as env, redirect_stdout(lines):
        env.setenv("AWS_LAMBDA_FUNCTION_NAME", "switch")
        try:
            yield found
        finally:
            found.extend(json.loads(line) for line in lines.getvalue().splitlines())


def learned_entry(table: str, **changed: Any) -> dict[str, Any]:
    """A learned table's entry in the switch's hourly event (target 70 %, maximums 500 read
    and 200 write units), with ``changed`` fields."""
    entry = {"Table": table, "TargetUtilization": 70}
    entry |= {"MaxReadRequestUnits": 500, "MaxWriteRequestUnits": 200}
    return entry | changed


def switch_world(aws_client: Any) -> SwitchWorld:
    """A provisioned table (20/10, its GSI 8/4) with four targets, and its switcher."""
    world = World(aws_client)
    table = world.table("hybrid", 20, 10, gsi=(8, 4), witness=False)
    for dim, (low, high) in {"read": (5, 100), "write": (3, 50)}.items():
        world.target(table, dim, low, high)
        world.target(table, dim, low - 1, high, index="byUser")
    store = f"switch-{world.run_id}"
    create_store_table(world.ddb, store)
    clock = Clock()
    switcher = Switcher(world.ddb, world.aas, store, clock, cloudwatch=world.cw)
    made = SwitchWorld(world, table, switcher, clock)
    world.ddb.meta.events.register(
        "provide-client-params.dynamodb.UpdateTable",
        lambda params, **_: made.sent.append(dict(params)),
    )
    return made
