"""The capacity broker's test world: served tables, and requests and calls to the broker."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest

from ddb_capacity_runtime.aws.store import limits_from_env
from ddb_capacity_runtime.requests.broker import (
    BrokerConfig,
    serve,
)
from tests.support.moto_world import World

MAX_UNITS, MAX_HOLD_MINUTES, MAX_TOTAL_UNITS = 2_000, 60, 3_000


@pytest.fixture
def world(aws_client: Any, store_dynamodb: Any) -> Iterator[World]:
    """Tables, targets and traffic in moto; the hold store in dynalite (atomic conditional
    writes, as DynamoDB's), reached through ``serve``."""
    made = World(aws_client, store_dynamodb)
    yield made
    made.close()


def serve_table(world: World, monkeypatch: pytest.MonkeyPatch, aws_env: dict[str, str]) -> str:
    """A table with a GSI and write targets, served by a broker configured as
    ``CapacityRequests`` configures it; returns the table's name."""
    for key, value in aws_env.items():
        monkeypatch.setenv(key, value)
    name = world.table("Brokered", 10, 100, gsi=(10, 10), tagged=False)
    world.target(name, "write", 100, 10_000)
    world.traffic(name, "write", 50)
    monkeypatch.setenv("CAPACITY_HOLDS_TABLE", world.store.name)
    monkeypatch.setenv("CAPACITY_MAX_UNITS", str(MAX_UNITS))
    monkeypatch.setenv("CAPACITY_MAX_HOLD_MINUTES", str(MAX_HOLD_MINUTES))
    monkeypatch.setenv("CAPACITY_MAX_TOTAL_UNITS", str(MAX_TOTAL_UNITS))
    monkeypatch.setenv("CAPACITY_SCOPES", json.dumps([{"table": name, "indexes": ["byUser"]}]))
    monkeypatch.delenv("CAPACITY_BROKER", raising=False)
    return name


@pytest.fixture
def served(world: World, aws_env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> str:
    return serve_table(world, monkeypatch, aws_env)


def call(world: World, event: dict[str, Any]) -> dict[str, Any]:
    """The broker's answer to ``event``, with the world's clients and store, bounded as the
    broker's environment says."""
    store = replace(world.store, limits=limits_from_env(os.environ))
    return serve(event, BrokerConfig.from_env(), clients=world.clients, store=store)


def request(world: World, served: str, **fields: Any) -> dict[str, Any]:
    event = {"action": "request", "table": served, "hold_minutes": 10, "timeout_seconds": 60}
    return call(world, {**event, **fields})
