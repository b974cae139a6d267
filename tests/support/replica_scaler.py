"""Two Regions' worlds of a global table's replicas, for the replica scaler's tests."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest

from ddb_capacity_tools import local_aws
from ddb_capacity_tools.local_aws import put_witness
from tests.support.moto_world import World

US, EU = local_aws.REGION, "eu-west-1"


READ_MIN, WRITE_MIN = 10, 5
"""The template's baseline: each replica's read minimum, and the write minimum of all."""


@pytest.fixture
def worlds(aws_client: Any, aws_env: dict[str, str]) -> Iterator[dict[str, World]]:
    """A world in each Region, sharing one run id (the replicas share the table's name);
    each tick reads the other Region's CloudWatch through ``cloudwatch_of``."""
    us = World(aws_client)
    eu = World(lambda service: local_aws.client(aws_env["AWS_ENDPOINT_URL"], service, EU))
    eu.run_id = us.run_id
    found = {US: us, EU: eu}
    for world in found.values():
        world.clients = replace(world.clients, cloudwatch_of=lambda region: found[region].cw)
    yield found
    for world in found.values():
        world.close()


def replicas(worlds: dict[str, World], eu_witness: bool = True) -> str:
    """The global table's replica in each Region, under auto scaling at the baseline; its
    delivery witness published in eu-west-1 up to now alone unless ``eu_witness`` (its
    metrics stop arriving there after now)."""
    names = {
        w.table("orders", 100, 100, tagged=False, witness=eu_witness or r == US)
        for r, w in worlds.items()
    }
    (name,) = names
    if not eu_witness:
        put_witness(worlds[EU].cw, name, end=worlds[EU].now, units=(100, 100))
    for world in worlds.values():
        world.target(name, "read", READ_MIN, 1000)
        world.target(name, "write", WRITE_MIN, 1000)
    return name


def writes_throttled_in_us(
    worlds: dict[str, World], read: float = 0, *, eu_witness: bool = True
) -> str:
    """The replicas, 50 writes a second seen by both (replicated) and ``read`` reads, and
    10 a second of the writes refused in us-east-1 alone, in the newest minute."""
    name = replicas(worlds, eu_witness)
    for world in worlds.values():
        world.traffic(name, "write", 50)
        if read:
            world.traffic(name, "read", read)
    worlds[US].traffic(name, "write", 0, throttles=600, minutes=range(1, 2))
    return name
