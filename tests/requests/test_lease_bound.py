"""A lease is never renewed past the library's own bound, whatever the caller's client: a
direct-mode request made with boto3's defaults (60 s timeouts, 5 legacy attempts: about 10
minutes a call) renews the dimension's lease for the library's 33 s, so a caller killed
mid-call holds the dimension a minute, not 13 (the table and its target in moto, the state
store in dynalite)."""

from __future__ import annotations

import time
from typing import Any

import boto3
from botocore.config import Config

from ddb_capacity_runtime.aws.clients import OWN_CALL_SECONDS, Clients, call_bound
from ddb_capacity_runtime.aws.store import LEASE, RENEW_MARGIN
from ddb_capacity_runtime.requests import request_capacity
from tests.support.moto_world import World
from tests.support.surge_server import prompt_store as prompt_store  # noqa: F401 (fixture)
from tests.support.surge_server import world as world  # noqa: F401 (fixture)


def test_a_callers_slow_client_gets_the_librarys_lease(
    world: World,  # noqa: F811 (the fixture)
    aws_env: dict[str, str],
) -> None:
    # GIVEN a caller whose Application Auto Scaling client has boto3's defaults
    name = world.table("Slow", 50, 100, tagged=False)
    world.target(name, "write", 100, 10_000)
    slow = boto3.client(
        "application-autoscaling",
        endpoint_url=aws_env["AWS_ENDPOINT_URL"],
        region_name=world.aas.meta.region_name,
        aws_access_key_id="test",
        aws_secret_access_key="test",  # noqa: S106 (moto takes any key)
        config=Config(),
    )
    assert call_bound(slow) > 500
    seen: list[float] = []

    def lease_left(**_: Any) -> None:
        """At the register, how long the dimension's lease runs from now."""
        item = world.store_ddb.get_item(
            TableName=world.store.name,
            Key={"pk": {"S": name}, "sk": {"S": "table:write"}},
            ConsistentRead=True,
        )["Item"]
        seen.append(int(item["lock_until"]["N"]) - time.time())

    slow.meta.events.register(
        "before-call.application-autoscaling.RegisterScalableTarget", lease_left
    )
    clients = Clients(world.ddb, slow, world.cw, world.clients.tagging)
    # WHEN it requests capacity in direct mode
    held = request_capacity(name, write=500, store=world.store, clients=clients)
    # THEN the lease covering the register runs at most the library's bound (and a minute)
    bound = max(LEASE.total_seconds(), OWN_CALL_SECONDS + RENEW_MARGIN.total_seconds())
    assert seen and max(seen) <= bound + 1, seen
    assert world.target_min(name, "write") > 100
    held.release()


def test_a_renewal_for_a_short_call_keeps_the_whole_lease(
    world: World,  # noqa: F811 (the fixture)
) -> None:
    # GIVEN a dimension's lease, renewed in a write for a call of one second
    name = world.table("renewed", 100, 100)
    with world.store.lease(name, None, "write", deadline=world.store.clock() + 5) as lease:
        before = world.store.clock()
        lease.write(10, set_to=40, renew_for=1)
        # THEN the lease runs for its whole length from the write, never less: another
        # writer could take it while the call it covers is still on its way
        assert lease.until >= int(before + LEASE.total_seconds())
        # and a renewal for a longer call covers that call and its margin
        lease.write(10, set_to=40, renew_for=120)
        assert lease.until >= int(before + 120 + RENEW_MARGIN.total_seconds())
