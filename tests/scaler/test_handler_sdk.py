"""The scaler's entry points make their clients from one botocore session, never importing
boto3 (and its resources and s3transfer) on a cold start; the clients keep the retries and
timeouts of boto3's (`make_clients`). A tick that is not sharded imports no sharding code
(`scaler.shard`: the sharded tick's tests take that path), and one that meets no expired
hold no code that ends holds (`aws.hold_table`: the capacity requests' tests take it)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from ddb_capacity_runtime.aws.clients import botocore_session, make_clients
from ddb_capacity_runtime.core.names import STORE_ENV
from tests.support.faults import busy_and_idle
from tests.support.moto_world import World
from tests.support.sharded_tick import config

#: A cold start's first invocation, in a fresh interpreter: the scheduled function's entry
#: point, then whether boto3, the sharding code and the code that ends holds were imported.
INVOKE = """
import json, sys
from ddb_capacity_runtime.scaler.handler import lambda_handler
summary = lambda_handler({}, None)
shard = "ddb_capacity_runtime.scaler.shard" in sys.modules
ends = "ddb_capacity_runtime.aws.hold_table" in sys.modules
print(json.dumps({"summary": summary, "boto3": "boto3" in sys.modules, "shard": shard, "ends": ends}))
"""


@pytest.fixture
def moto_world(aws_client: Any) -> Iterator[World]:
    """A world whose state store is in moto too: the entry point makes its own clients."""
    made = World(aws_client)
    yield made
    made.close()


def test_a_cold_scheduled_tick_scales_its_tables_without_importing_boto3_or_sharding(
    moto_world: World, aws_env: dict[str, str]
) -> None:
    world = moto_world
    # GIVEN the scheduled function's environment, pointed at moto, and a throttled table
    busy, idle = busy_and_idle(world)
    env = {**os.environ, **aws_env, **config(world).to_env(), STORE_ENV: world.store.name}
    # WHEN a fresh interpreter runs the entry point once, as a cold start does
    done = subprocess.run(  # noqa: S603 (this Python, on the script above)
        [sys.executable, "-c", INVOKE], env=env, capture_output=True, text=True, check=False
    )
    # THEN the tick raised the throttled table, left the idle one, and never imported boto3
    # nor the sharding code, nor the code that ends holds (none expired)
    assert done.returncode == 0, done.stderr[-2000:]
    answer = json.loads(done.stdout.splitlines()[-1])
    assert answer["summary"]["tables"] == 2 and not answer["summary"]["failures"]
    assert world.throughput(busy) == (100, 215)
    assert world.throughput(idle)[0] <= 200
    assert answer["boto3"] is False and answer["shard"] is False and answer["ends"] is False


def test_clients_of_the_botocore_session_are_bounded_as_boto3s_are(
    aws_env: dict[str, str],
) -> None:
    # GIVEN the library's clients of boto3's default session and of one botocore session
    endpoint, region = aws_env["AWS_ENDPOINT_URL"], aws_env["AWS_DEFAULT_REGION"]
    made = [
        make_clients(endpoint_url=endpoint, region_name=region),
        make_clients(session=botocore_session(), endpoint_url=endpoint, region_name=region),
    ]
    # THEN each client is configured alike, whichever session made it
    for name in ("dynamodb", "autoscaling", "cloudwatch", "tagging"):
        boto3s, botocores = (getattr(clients, name).meta for clients in made)
        assert boto3s.config.retries == botocores.config.retries, name
        assert boto3s.config.connect_timeout == botocores.config.connect_timeout, name
        assert boto3s.config.read_timeout == botocores.config.read_timeout, name
        assert boto3s.endpoint_url == botocores.endpoint_url, name
        assert boto3s.region_name == botocores.region_name == region, name
    # (and one session serves every invocation of the process, as boto3's default does)
    assert botocore_session() is botocore_session()
