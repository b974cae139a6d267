"""The surge server's test world: reports of processes, served tables, and what the
signals function counted and stored."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest

from ddb_capacity_runtime.aws.store import HoldStore
from ddb_capacity_runtime.core.holds import Hold
from ddb_capacity_runtime.core.surge import UNBOUNDED
from ddb_capacity_runtime.core.surge_report import (
    DimensionReport,
    Report,
)
from ddb_capacity_runtime.fast_path.surge_raise import take_report
from ddb_capacity_runtime.fast_path.surge_settings import SURGE_HOLD, SurgeSettings
from ddb_capacity_runtime.requests.broker import BrokerConfig
from tests.support.moto_world import World

#: No cap and no budget: the rule's own bounds (the limits and the target's max) alone. The
#: default cap and budget have tests of their own (tests/fast_path/test_surge_bounds.py).
SETTINGS = SurgeSettings(scale=None, budget=UNBOUNDED)


@pytest.fixture
def prompt_store(store_dynamodb: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    """dynalite's client, its waiters polling every 0.1 s: now and then dynalite answers
    the DescribeTable that follows a CreateTable with CREATING, and a hold store's
    ``table_exists`` waiter would then sleep its default 20 s before asking again."""
    get_waiter = store_dynamodb.get_waiter

    def prompt(name: str) -> Any:
        waiter = get_waiter(name)
        waiter.config.delay = 0.1
        return waiter

    monkeypatch.setattr(store_dynamodb, "get_waiter", prompt)
    return store_dynamodb


@pytest.fixture
def world(aws_client: Any, prompt_store: Any) -> Iterator[World]:
    """Tables and targets in moto; the state store in dynalite."""
    made = World(aws_client, prompt_store)
    yield made
    made.close()


def report(
    table: str,
    *dims: DimensionReport,
    process: str = "p1",
    seconds: float = 10.0,
    sent: float | None = None,
) -> dict[str, Any]:
    """A process's report as the signals function receives it."""
    return Report(table, process, seconds, sent or time.time(), dims).as_json()


def write(
    per_second: float,
    *,
    throttles: dict[str, int] | None = None,
    index: str | None = None,
    failed: int = 0,
) -> DimensionReport:
    """A write dimension's 10 seconds: ``per_second`` units in 1-unit requests, ``failed``
    requests never served."""
    units = per_second * 10
    return DimensionReport(index, "write", units, int(units), throttles or {}, failed)


def read(per_second: float, index: str | None = None) -> DimensionReport:
    units = per_second * 10
    return DimensionReport(index, "read", units, int(units), {})


def served(*tables: str, indexes: tuple[str, ...] = ()) -> BrokerConfig:
    return BrokerConfig({t: frozenset(indexes) for t in tables})


def send(
    world: World,
    event: object,
    scopes: BrokerConfig,
    settings: SurgeSettings = SETTINGS,
    store: HoldStore | None = None,
    **kw: Any,
) -> dict[str, Any]:
    """``event`` taken by the signals function, with ``world``'s store unless ``store``."""
    return take_report(
        event, scopes, settings, clients=world.clients, store=store or world.store, **kw
    )


def counted(out: str, metric: str) -> int:
    """The sum of ``metric`` over the EMF lines in ``out``."""
    total = 0
    for line in out.splitlines():
        if line.startswith("{"):
            total += json.loads(line).get(metric, 0)
    return int(total)


def served_writes(world: World, name: str, per_second: float, minutes: range) -> None:
    """CloudWatch's consumed write capacity at ``per_second``, a Sum a minute, for each of
    ``minutes`` from the world's current minute (ahead of it too: the tests' clocks run
    ahead): DynamoDB's own measure of a demand that is real."""
    world.cw.put_metric_data(
        Namespace="AWS/DynamoDB",
        MetricData=[
            {
                "MetricName": "ConsumedWriteCapacityUnits",
                "Dimensions": [{"Name": "TableName", "Value": name}],
                "Timestamp": world.now + timedelta(minutes=m),
                "Value": per_second * 60,
                "Unit": "Count",
            }
            for m in minutes
        ],
    )


def store_reads(world: World, minutes: range) -> None:
    """The state store's consumed reads in CloudWatch, a Sum a minute, for each of
    ``minutes`` from the world's current minute (ahead of it too): every report reads the
    store, so its reads witness the minutes CloudWatch delivered, and a table's minutes up to
    them that show nothing are known to have served nothing (not unknown)."""
    world.cw.put_metric_data(
        Namespace="AWS/DynamoDB",
        MetricData=[
            {
                "MetricName": "ConsumedReadCapacityUnits",
                "Dimensions": [{"Name": "TableName", "Value": world.store.name}],
                "Timestamp": world.now + timedelta(minutes=m),
                "Value": 30.0,
                "Unit": "Count",
            }
            for m in minutes
        ],
    )


def surge_of(world: World, name: str, dimension: str = "write") -> Hold | None:
    state = world.store.get(name, None, dimension)
    return next((h for h in state.holds if h.id == SURGE_HOLD), None) if state else None


def a_table(world: World, base: str, *, write_min: int = 100, write_max: int = 10_000) -> str:
    name = world.table(base, 50, write_min, tagged=False)
    world.target(name, "write", write_min, write_max)
    return name
