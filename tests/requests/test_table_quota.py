"""A table above the default table quota (40,000 units) is remembered and restored: the
state store reads the levels a table had up to the library's largest quota whatever the
quota of the component reading them, so a restorer run with the default quota restores a
hold a broker with a larger one recorded (the table and its target in moto, the state store
in dynalite)."""

from __future__ import annotations

import time
from datetime import UTC, datetime

from ddb_capacity_runtime.aws.store import HoldLimits, HoldStore
from ddb_capacity_runtime.core.holds import Hold
from ddb_capacity_runtime.core.names import DEFAULT_TABLE_QUOTA
from ddb_capacity_runtime.requests import restore_expired
from tests.support.moto_world import World
from tests.support.surge_server import prompt_store as prompt_store  # noqa: F401 (fixture)
from tests.support.surge_server import world as world  # noqa: F401 (fixture)

BASE, HELD = 50_000, 60_000


def test_a_hold_above_the_default_quota_is_restored_by_a_default_restorer(
    world: World,  # noqa: F811 (the fixture)
) -> None:
    # GIVEN a table whose write target's minimum is 50,000, raised to 60,000 by a hold that
    # a store with an 80,000-unit quota recorded, and that has expired
    assert BASE > DEFAULT_TABLE_QUOTA
    name = world.table("Big", 50, HELD, tagged=False)
    world.target(name, "write", HELD, 100_000)
    big = HoldStore(
        world.store_ddb,
        world.store.name,
        limits=HoldLimits(max_units=80_000, max_total_units=80_000, quota=80_000),
    )
    expired = datetime.fromtimestamp(time.time() - 60, UTC)
    hold = Hold("load", None, "write", HELD - BASE, expired, BASE)
    with big.lease(name, None, "write", deadline=time.time() + 5) as lease:
        lease.write(BASE, [hold], set_to=HELD)
    # WHEN the restorer runs with the default quota
    default = HoldStore(world.store_ddb, world.store.name)
    remembered = default.get(name, None, "write")
    assert remembered is not None and (remembered.base, remembered.set_to) == (BASE, HELD)
    (row,) = restore_expired(name, clients=world.clients, store=default)
    # THEN the target's minimum is back at its base, and nothing is left held
    assert (row["status"], row["to"]) == ("applied", BASE)
    assert world.target_min(name, "write") == BASE
    after = default.get(name, None, "write")
    assert after is None or not after.holds


def test_a_stored_level_past_the_largest_quota_is_not_believed(
    world: World,  # noqa: F811 (the fixture)
) -> None:
    name = world.name("Forged")
    key = {"pk": {"S": name}, "sk": {"S": "table:write"}}
    item = {**key, "base": {"N": "2000000"}, "set_to": {"N": "60000"}}
    world.store_ddb.put_item(TableName=world.store.name, Item=item)
    state = HoldStore(world.store_ddb, world.store.name).get(name, None, "write")
    # neither level is believed, and the base read is said to be unsound (it is counted)
    assert state is not None and (state.base, state.set_to, state.holding) == (None, None, False)
    assert state.base_unread
