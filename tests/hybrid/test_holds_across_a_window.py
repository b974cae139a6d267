"""Capacity requests and an on-demand window, against the moto server: a hold made before
the window stays through it (its end while the table is on-demand keeps it, not counted as
busy), and the table comes back at the level the hold raised it to; a request made while the
table is on-demand is served at once and its hold recorded, so that the window's end brings
the table back no lower than it, with its target's minimum there until the hold ends; a
release during the window of a hold that raised nothing lets it go at once."""

from __future__ import annotations

import time
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from ddb_capacity_runtime.aws.hold_table import Context, end_holds, restore_expired
from ddb_capacity_runtime.core.errors import CapacityRequestFailed, SwitchError
from ddb_capacity_runtime.core.outcomes import Status
from ddb_capacity_runtime.hybrid.held import hold_stores
from ddb_capacity_runtime.hybrid.switcher import Switcher, Window
from ddb_capacity_runtime.requests import request_capacity
from ddb_capacity_runtime.requests import restorer as restorer_module
from ddb_capacity_tools.local_aws import create_store_table
from tests.support.moto_world import World
from tests.support.surge_server import counted


def _window_table(world: World, name: str) -> tuple[str, Switcher]:
    """A table auto scaled from 10 units (up to 2,000), and a switch that reads its holds."""
    table = world.table(name, 10, 10, tagged=False, witness=False)
    world.target(table, "write", 10, 2_000)
    world.target(table, "read", 10, 2_000)
    store = world.name("switch")
    create_store_table(world.ddb, store)
    switcher = Switcher(world.ddb, world.aas, store, time.time, {table: world.store.name}, world.cw)
    return table, switcher


def _holds(world: World, table: str) -> list[str]:
    state = world.store.get(table, None, "write")
    return [] if state is None else [h.id for h in state.holds]


def _suspended(world: World, table: str) -> list[bool]:
    targets = world.aas.describe_scalable_targets(
        ServiceNamespace="dynamodb", ResourceIds=[f"table/{table}"]
    )["ScalableTargets"]
    return [any(t.get("SuspendedState", {}).values()) for t in targets]


def test_a_hold_is_kept_across_a_window_and_ended_after_it(aws_client: Any) -> None:
    # GIVEN a table auto scaled from 10 writes, raised by a capacity request to 600
    world = World(aws_client)
    name, switcher = _window_table(world, "Held")
    hold = request_capacity(name, write=600, clients=world.clients, store=world.store)
    assert world.target_min(name, "write") == 600
    # WHEN an on-demand window starts
    switcher.start(name, Window("spikes", 3600, 1000, 1000))
    # THEN the hold's end while on-demand keeps it, as waiting for the window (not busy:
    # not counted, not alarmed)
    ctx = Context(world.clients, time.time, lambda _: None, 0)
    rows = end_holds(ctx, world.store, name, lambda h: h.id == hold.id, deadline=time.time() + 5)
    assert [r["status"] for r in rows] == [Status.RETRY_NEXT_TICK]
    assert _holds(world, name) == [hold.id]
    # WHEN the window ends
    switcher.end(name)
    # THEN the table is back at the held level, its minimum as the hold left it
    assert world.throughput(name)[1] >= 600 and world.target_min(name, "write") == 600
    # AND the hold's end now lowers the minimum to its base
    end_holds(ctx, world.store, name, lambda h: h.id == hold.id, deadline=time.time() + 5)
    assert world.target_min(name, "write") == 10
    assert _holds(world, name) == []


def test_an_expired_hold_in_a_long_window_is_not_counted_busy(
    aws_client: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a hold made before a window, which expires during it
    world = World(aws_client)
    name, switcher = _window_table(world, "Long")
    hold = request_capacity(name, write=600, clients=world.clients, store=world.store)
    switcher.start(name, Window("spikes", 6 * 3600, 1000, 1000))
    with world.store.lease(name, None, "write", deadline=time.time() + 5) as lease:
        (held,) = world.store.get(name, None, "write").holds  # type: ignore[union-attr]
        lease.write(holds=[replace(held, expires=datetime.now(UTC) - timedelta(minutes=1))])
    # WHEN the broker's restore runs mid-window, its hold expired
    out = restorer_module.restore_tables([name], clients=world.clients, store=world.store)
    # THEN the hold waits for the window's end: kept, not a failure, and not counted as
    # busy (HoldsBusy, whose alarm is for tables stuck not ACTIVE)
    assert [r["status"] for r in out["restored"]] == [Status.RETRY_NEXT_TICK]
    assert out["failed"] == [] and _holds(world, name) == [hold.id]
    assert counted(capsys.readouterr().out, "HoldsBusy") == 0


def test_a_request_during_a_window_holds_the_table_when_it_returns(aws_client: Any) -> None:
    # GIVEN a table auto scaled from 10 writes, on-demand for a window
    world = World(aws_client)
    name, switcher = _window_table(world, "During")
    switcher.start(name, Window("spikes", 3600, 1000, 1000))
    # WHEN a request for 900 writes comes during the window
    during = request_capacity(
        name, write=900, hold=timedelta(minutes=30), clients=world.clients, store=world.store
    )
    # THEN it is served at once, nothing raised, and its hold is recorded
    assert during.changes == [] and during.levels == {"write": 900}
    assert _holds(world, name) == [during.id]
    assert world.target_min(name, "write") == 10
    # WHEN the window ends before the hold expires
    switcher.end(name)
    # THEN the table is back at the requested level, held there by its target's minimum,
    # and its targets are no longer suspended
    assert world.throughput(name) == (10, 900)
    assert world.target_min(name, "write") == 900 and world.target_min(name, "read") == 10
    assert _suspended(world, name) == [False, False]
    # AND once the hold expires, the usual restore lowers the minimum to its base
    later = time.time() + 3600
    rows = restore_expired(name, store=world.store, clients=world.clients, clock=lambda: later)
    assert [r["status"] for r in rows] == [Status.APPLIED]
    assert world.target_min(name, "write") == 10 and _holds(world, name) == []


def test_a_hold_made_during_a_window_and_one_before_add_up(aws_client: Any) -> None:
    # GIVEN a table raised to 600 writes by a hold, then on-demand for a window
    world = World(aws_client)
    name, switcher = _window_table(world, "Both")
    before = request_capacity(name, write=600, clients=world.clients, store=world.store)
    switcher.start(name, Window("spikes", 3600, 1000, 1000))
    # WHEN another request for 300 comes during the window, and the window ends
    during = request_capacity(name, write=300, clients=world.clients, store=world.store)
    switcher.end(name)
    # THEN the table returns at both holds' level, and each hold's end lowers it in turn
    assert world.target_min(name, "write") == 900 and world.throughput(name)[1] >= 900
    before.release()
    assert world.target_min(name, "write") == 300
    during.release()
    assert world.target_min(name, "write") == 10


def test_a_release_during_the_window_lets_a_hold_that_raised_nothing_go(aws_client: Any) -> None:
    # GIVEN a request made while the table is on-demand for a window
    world = World(aws_client)
    name, switcher = _window_table(world, "Released")
    switcher.start(name, Window("spikes", 3600, 1000, 1000))
    with request_capacity(name, write=900, clients=world.clients, store=world.store) as held:
        assert _holds(world, name) == [held.id]
    # WHEN it is released (the with block's end) during the window
    # THEN its hold is gone at once, and the window's end returns the table as before it
    assert held.released and _holds(world, name) == []
    switcher.end(name)
    assert world.throughput(name) == (10, 10) and world.target_min(name, "write") == 10


def test_holds_not_known_keep_the_table_on_demand(aws_client: Any) -> None:
    # GIVEN a table on-demand for a window whose switch names a hold store that is missing
    world = World(aws_client)
    name, _ = _window_table(world, "Unknown")
    store = world.name("switch2")
    create_store_table(world.ddb, store)
    switcher = Switcher(world.ddb, world.aas, store, time.time, {name: "no-such-store"}, world.cw)
    switcher.start(name, Window("spikes", 3600, 1000, 1000))
    # WHEN the window ends
    # THEN the end fails (counted SwitchFailed by the handler), and the table stays on-demand
    with pytest.raises(SwitchError, match="could not be read"):
        switcher.end(name)
    description = world.ddb.describe_table(TableName=name)["Table"]
    assert description["BillingModeSummary"]["BillingMode"] == "PAY_PER_REQUEST"


@pytest.mark.parametrize(
    ("text", "expected"),
    [(None, {}), ('[["Orders", "Holds"]]', {"Orders": "Holds"})],
)
def test_the_hold_stores_setting_is_read(text: str | None, expected: dict[str, str]) -> None:
    assert hold_stores(text) == expected


@pytest.mark.parametrize("text", ["{", '{"Orders": "Holds"}', '[["Orders"]]', '[["x", "Holds"]]'])
def test_a_bad_hold_stores_setting_is_refused_by_name(text: str) -> None:
    with pytest.raises(SwitchError, match="CAPACITY_WINDOW_HOLD_STORES: got"):
        hold_stores(text)


def test_a_release_during_the_window_of_a_hold_that_raised_its_minimum_fails(
    aws_client: Any,
) -> None:
    # GIVEN a hold that raised the minimum to 600 before the window
    world = World(aws_client)
    name, switcher = _window_table(world, "Raised")
    hold = request_capacity(name, write=600, clients=world.clients, store=world.store)
    switcher.start(name, Window("spikes", 3600, 1000, 1000))
    # WHEN it is released during the window
    # THEN the release fails, saying the minimum returns with the table, and the hold stays
    with pytest.raises(CapacityRequestFailed, match="on-demand for a window"):
        hold.release()
    assert _holds(world, name) == [hold.id] and not hold.released
    # AND after the window a release lowers the minimum to its base
    switcher.end(name)
    assert world.target_min(name, "write") == 600
    hold.release()
    assert world.target_min(name, "write") == 10 and _holds(world, name) == []


def test_a_learned_window_keeps_a_request_made_during_it(aws_client: Any) -> None:
    from ddb_capacity_runtime.aws import switch_calls as calls
    from ddb_capacity_runtime.hybrid.billing_plan import parse_state
    from ddb_capacity_runtime.hybrid.learning import Learning, acting_for

    # GIVEN a table whose learned plan puts the hour now on-demand, returning writes at 300
    world = World(aws_client)
    name, switcher = _window_table(world, "Learned")
    day, hour = acting_for(time.time())
    text, version = calls.read_state(world.ddb, switcher.store, name)
    plan = tuple(h == hour for h in range(24))
    after = (hour + 1) % 24
    planned = replace(parse_state(text), plan_day=day, plan=plan, returns={after: {"|write": 300}})
    calls.write_state(world.ddb, switcher.store, name, planned.as_text(), version)
    learning = Learning(name, 70, 1000, 1000)
    assert switcher.learned(learning) == "switched-to-on-demand"
    # WHEN a request for 900 writes comes during the window
    during = request_capacity(
        name, write=900, hold=timedelta(minutes=30), clients=world.clients, store=world.store
    )
    assert during.changes == [] and _holds(world, name) == [during.id]
    # AND the window's hours are over (its end moved to now, its hour no longer planned)
    text, version = calls.read_state(world.ddb, switcher.store, name)
    assert parse_state(text).back == {"|write": 300}
    over = replace(parse_state(text), until=time.time(), plan=(False,) * 24)
    calls.write_state(world.ddb, switcher.store, name, over.as_text(), version)
    assert switcher.learned(learning) == "switched-to-provisioned"
    # THEN the table is back at the held level (above the learned return level), its minimum
    # held there, its reads at their level of before; and the targets run again
    assert world.throughput(name) == (10, 900)
    assert world.target_min(name, "write") == 900 and world.target_min(name, "read") == 10
    assert _suspended(world, name) == [False, False]
