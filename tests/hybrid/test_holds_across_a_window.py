"""Capacity requests and an on-demand window, against the moto server: a hold made before
the window stays through it (its end finds the table on-demand: busy, not dropped), the table
comes back at the level the hold raised it to, and the hold's end then lowers it; a request
made while the table is on-demand is served at once (on-demand needs no raise)."""

from __future__ import annotations

import time
from typing import Any

from ddb_capacity_runtime.aws.hold_table import Context, end_holds
from ddb_capacity_runtime.core.outcomes import Status
from ddb_capacity_runtime.hybrid.switcher import Switcher, Window
from ddb_capacity_runtime.requests import request_capacity
from ddb_capacity_tools.local_aws import create_store_table
from tests.support.moto_world import World


def test_a_hold_is_kept_across_a_window_and_ended_after_it(aws_client: Any) -> None:
    # GIVEN a table auto scaled from 10 writes, raised by a capacity request to 600
    world = World(aws_client)
    name = world.table("Held", 10, 10, tagged=False, witness=False)
    world.target(name, "write", 10, 2_000)
    world.target(name, "read", 10, 2_000)
    hold = request_capacity(name, write=600, clients=world.clients, store=world.store)
    assert world.target_min(name, "write") == 600
    store = world.name("switch")
    create_store_table(world.ddb, store)
    switcher = Switcher(world.ddb, world.aas, store, time.time)
    # WHEN an on-demand window starts
    switcher.start(name, Window("spikes", 3600, 1000, 1000))
    # THEN a request now is served at once, with nothing to raise
    during = request_capacity(name, write=900, clients=world.clients, store=world.store)
    assert during.holds == [] and during.levels == {}
    # AND the first hold's end while on-demand keeps it (busy), not dropped
    ctx = Context(world.clients, time.time, lambda _: None, 0)
    rows = end_holds(ctx, world.store, name, lambda h: h.id == hold.id, deadline=time.time() + 5)
    assert [r["status"] for r in rows] == [Status.BUSY]
    assert [h.id for h in world.store.get(name, None, "write").holds] == [hold.id]  # type: ignore[union-attr]
    # WHEN the window ends
    switcher.end(name)
    # THEN the table is back at the held level, its minimum as the hold left it
    assert world.throughput(name)[1] >= 600 and world.target_min(name, "write") == 600
    # AND the hold's end now lowers the minimum to its base
    rows = end_holds(ctx, world.store, name, lambda h: h.id == hold.id, deadline=time.time() + 5)
    assert world.target_min(name, "write") == 10
    assert list(world.store.get(name, None, "write").holds) == []  # type: ignore[union-attr]
