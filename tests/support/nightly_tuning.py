"""The nightly tuning's test world: its settings, stored results and runs."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest

from ddb_capacity_runtime.core.names import resource_id, scalable_dimension
from ddb_capacity_tools.fleet_settings import run_id_of
from ddb_capacity_tools.local_aws import recorded_events
from ddb_capacity_tools.tuning_lambda import tune_run
from ddb_capacity_tools.tuning_rules import (
    Bounds,
    TuningSettings,
)
from tests.support.moto_world import World

AUTOPILOT = {"SCALER_MODE": "autopilot"}


@pytest.fixture
def world(aws_client: Any) -> Iterator[World]:
    w = World(aws_client)
    w.s3 = aws_client("s3")  # type: ignore[attr-defined]
    w.bucket = f"advisor-{w.run_id}"  # type: ignore[attr-defined]
    w.s3.create_bucket(Bucket=w.bucket)  # type: ignore[attr-defined]
    yield w
    w.close()


def settings(world: World, owned: dict[str, Any], **kw: Any) -> TuningSettings:
    bounds = kw.pop("bounds", Bounds(tuple(range(50, 91, 5)), 10))
    return TuningSettings(world.bucket, world.store.name, owned, bounds, **kw)  # type: ignore[attr-defined]


def put_result(world: World, run_id: str, table: str, doc: Any) -> None:
    body = doc if isinstance(doc, str) else json.dumps(doc)
    world.s3.put_object(  # type: ignore[attr-defined]
        Bucket=world.bucket,  # type: ignore[attr-defined]
        Key=f"runs/{run_id}/tables/{table}.json",
        Body=body.encode(),
    )


def start_run(world: World, minutes_ago: int = 0) -> str:
    run_id = run_id_of(world.now - timedelta(minutes=minutes_ago))
    world.s3.put_object(  # type: ignore[attr-defined]
        Bucket=world.bucket,  # type: ignore[attr-defined]
        Key="runs/latest.json",
        Body=json.dumps({"run_id": run_id}).encode(),
    )
    return run_id


def advised(table: str, policy: str, usd: float = 10.0) -> dict[str, Any]:
    """A table's result as the advisor's worker writes it (its fields the loop reads)."""
    return {
        "run_id": "x",
        "table": table,
        "index": None,
        "status": "advised",
        "recommended": policy,
        "reason": "cheapest that refuses no more",
        "options": [{"policy": policy, "usd_per_month": usd, "refused_per_month": 0}],
        "current": {"policy": "stock:70", "usd_per_month": 14.0, "refused_per_month": 0},
    }


def tuned(world: World, table: str, dimension: str, index: str | None = None) -> int | None:
    state = world.store.get(table, index, dimension)
    return None if state is None else state.tuned


def tune(world: World, config: TuningSettings) -> tuple[dict[str, int], list[dict[str, Any]]]:
    with recorded_events() as events:
        counts = tune_run(world.s3, world.ddb, config, world.now)  # type: ignore[attr-defined]
    return counts, events


def policy_target(world: World, name: str, dimension: str) -> float:
    (policy,) = world.aas.describe_scaling_policies(
        ServiceNamespace="dynamodb",
        ResourceId=resource_id(name, None),
        ScalableDimension=scalable_dimension(None, dimension),
    )["ScalingPolicies"]
    return float(policy["TargetTrackingScalingPolicyConfiguration"]["TargetValue"])
