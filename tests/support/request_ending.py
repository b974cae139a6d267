"""An expired hold left by a worker that died, and the capacity it left raised, as the
request tests make them."""

from __future__ import annotations

import time
from datetime import UTC, datetime

from ddb_capacity_runtime.aws.store import HoldStore
from ddb_capacity_runtime.requests import Hold
from tests.support.moto_world import World


def _expired_hold(
    world: World,
    name: str,
    units: int,
    index: str | None = None,
    base: int = 10,
    store: HoldStore | None = None,
    now: float | None = None,
) -> str:
    """An expired hold of ``units`` write (table) or read (``index``) units over ``base``,
    left by a worker that died; returns its id."""
    dim = "read" if index else "write"
    ident = f"dead{name[-4:]}"
    gone = datetime.fromtimestamp((now or time.time()) - 60, UTC)
    with (store or world.store).lease(name, index, dim, deadline=time.time() + 5) as lease:
        lease.write(base, [Hold(ident, index, dim, units, gone, base)])
    return ident


def _raised(world: World, name: str, write: int) -> None:
    """The table's write capacity as the dead worker's hold left it."""
    world.ddb.update_table(
        TableName=name, ProvisionedThroughput={"ReadCapacityUnits": 10, "WriteCapacityUnits": write}
    )
