"""Holds on a table the broker does not serve (one it no longer serves, or one held in direct
mode by an administrator): the restore may not change that table, so it forgets their holds,
but only once they expired. An active hold stays, and a scaler connected to the hold store
keeps obeying it for the whole of its window; once it expired and was dropped, the store keeps
the dimension's base and the minimum the hold set, so that scaler lowers the minimum to its
base as its own raise, as the dropped row says."""

from __future__ import annotations

from datetime import timedelta

import pytest

from ddb_capacity_runtime.aws.store import HoldStore
from ddb_capacity_runtime.core.outcomes import Status
from ddb_capacity_runtime.requests.restorer import restore_tables
from tests.support.capacity_requests import later, write_held
from tests.support.capacity_requests import world as world  # noqa: F401 (fixture)
from tests.support.moto_world import World
from tests.support.surge_server import counted


def test_an_unserved_tables_active_hold_stays_and_its_expired_one_goes_as_the_row_says(
    world: World,  # noqa: F811 (the fixture)
    capsys: pytest.CaptureFixture[str],
) -> None:
    # GIVEN a write minimum of 100 held at 2,000 for an hour, on a table the broker does not
    # serve (held in direct mode), and managed by a scaler connected to the hold store
    name, hold = write_held(world, "Unserved", 100, 2_000, minutes=60)
    # WHEN the broker's scheduled restore runs during the hold
    out = restore_tables([], clients=world.clients, store=world.store)
    # THEN the hold stays, and nothing is counted
    assert out["restored"] == []
    assert [h.id for s in world.store.table(name) for h in s.holds] == [hold.id]
    assert counted(capsys.readouterr().out, "HoldsDropped") == 0
    # AND a calm tick inside the hold's window keeps the minimum it holds
    world.traffic(name, "write", 5, minutes=range(-44, -28))
    world.tick(world.now + timedelta(minutes=45), SCALER_TABLES=name, SCALER_TAG_KEY="")
    assert world.target_min(name, "write") == 2_000
    # WHEN the restore runs after the hold expired
    after = HoldStore(world.store_ddb, world.store.name, clock=later(61))
    (row,) = restore_tables([], clients=world.clients, store=after)["restored"]
    # THEN its hold is dropped, counted, the minimum left where it was, and the row says
    # what the store keeps and who lowers it
    assert (row["status"], row["from"], row["to"]) == (Status.DROPPED, 2_000, 100)
    assert row["note"] == (
        "the broker does not serve this table: its expired holds are forgotten without "
        "lowering it (held at 2,000); the store keeps its base (100) and the minimum set "
        "(2,000): a scaler connected to this hold store lowers the minimum to its base as its "
        "own raise, and without one it stays where the holds left it"
    )
    assert counted(capsys.readouterr().out, "HoldsDropped") == 1
    assert world.target_min(name, "write") == 2_000
    assert [(s.holds, s.base, s.set_to) for s in world.store.table(name)] == [((), 100, 2_000)]
    # AND the connected scaler's next calm tick lowers the minimum to its base
    world.traffic(name, "write", 5, minutes=range(-89, -73))
    world.tick(world.now + timedelta(minutes=90), SCALER_TABLES=name, SCALER_TAG_KEY="")
    assert world.target_min(name, "write") == 100
