"""A surge's max, against real parts (tables and scalable targets in moto, the state store in
dynalite): a dimension without a scalable target is bounded by the table quota (the hold
store's), not by a scaler's default max the signals function never had; and a due surge that
the dimension's max leaves no room is a surge not applied, counted (``SurgesFailed``,
alarmed) and logged with the reason, never passed over as nothing due."""

from __future__ import annotations

import pytest

from ddb_capacity_runtime.aws.store import HoldLimits, HoldStore
from tests.support.moto_world import World
from tests.support.surge_server import (
    a_table,
    counted,
    report,
    send,
    served,
    write,
)
from tests.support.surge_server import prompt_store as prompt_store  # noqa: F401 (fixture)
from tests.support.surge_server import world as world  # noqa: F401 (fixture)


def test_a_dimension_without_a_target_is_raised_past_a_thousand_units(
    world: World,  # noqa: F811 (the fixture)
    capsys: pytest.CaptureFixture[str],
) -> None:
    # GIVEN a table without a scalable target, provisioned at 1,500 write units
    name = world.table("Large", 50, 1_500, tagged=False)
    # WHEN one process reports 2,500 units/s
    (row,) = send(world, report(name, write(2_500)), served(name))["dimensions"]
    # THEN the table goes to 2,500 / 0.7 at once, within the table quota (40,000)
    assert (row["status"], row["to"]) == ("applied", 3_572)
    assert world.throughput(name) == (50, 3_572)
    assert counted(capsys.readouterr().out, "SurgesApplied") == 1


def test_a_surge_the_quota_leaves_no_room_is_counted_not_passed_over(
    world: World,  # noqa: F811 (the fixture)
    capsys: pytest.CaptureFixture[str],
) -> None:
    # GIVEN a table without a scalable target at 1,500 write units, the table quota
    name = world.table("AtQuota", 50, 1_500, tagged=False)
    limits = HoldLimits(max_units=1_500, max_total_units=1_500, quota=1_500)
    store = HoldStore(world.store_ddb, world.store.name, limits)
    # WHEN one process reports 2,500 units/s
    (row,) = send(world, report(name, write(2_500)), served(name), store=store)["dimensions"]
    # THEN the surge fails, saying why, and is counted
    assert row["status"] == "failed"
    assert row["reason"].startswith("the dimension's max (1,500: its scalable target's, or the")
    assert world.throughput(name) == (50, 1_500)
    assert counted(capsys.readouterr().out, "SurgesFailed") == 1


def test_a_surge_a_targets_max_leaves_no_room_is_counted_not_passed_over(
    world: World,  # noqa: F811 (the fixture)
    capsys: pytest.CaptureFixture[str],
) -> None:
    # GIVEN a table whose write target's minimum is at its max, 400
    name = a_table(world, "TargetAtMax", write_min=400, write_max=400)
    # WHEN one process reports 600 units/s
    (row,) = send(world, report(name, write(600)), served(name))["dimensions"]
    # THEN the surge fails, saying why, and is counted; the minimum stays at its max
    assert row["status"] == "failed"
    assert "the dimension's max (400" in row["reason"]
    assert "no room for a surge to 858 over the 400 units provisioned" in row["reason"]
    assert world.target_min(name, "write") == 400
    assert counted(capsys.readouterr().out, "SurgesFailed") == 1
