"""A process that lies for over two hours, against real parts (the table, its target and
CloudWatch in a moto server, the state store in dynalite; auto scaling never scales the
table in, as when its decreases for the day are spent): the surge cap counts from the
dimension's configured base, not from where the last surge left it, a surge DynamoDB's own
measure never confirms is not renewed, and the alarms' counts see the lies.

The expected figures follow the documented rules, not the code's functions: the default cap
is 4x the base (100 -> 400); a surge on reports alone goes on for 5 minutes, then expires 5
minutes after its last renewal unless CloudWatch shows the demand served; the restore runs
every 5 minutes."""

from __future__ import annotations

import time
from typing import Any

import pytest

from ddb_capacity_runtime.fast_path.surge_settings import SurgeSettings
from ddb_capacity_runtime.requests import restore_expired
from tests.support.moto_world import World
from tests.support.surge_server import (
    a_table,
    counted,
    report,
    send,
    served,
    served_writes,
    store_reads,
    write,
)
from tests.support.surge_server import prompt_store as prompt_store  # noqa: F401 (fixture)
from tests.support.surge_server import world as world  # noqa: F401 (fixture)

#: Past two hours: past the budget window of the first surge and the one back to back with
#: it, after which a new window would count from where the surge left the table (400, never
#: scaled in), were the cap not counted from the configured base.
MINUTES = 2 * 60 + 10
EVERY_MINUTES = 1
RESTORE_MINUTES = 5
LIE = write(2_000, throttles={"provisioned": 5_000})


def lie_for_hours(world: World, name: str) -> tuple[list[int], list[dict[str, Any]]]:
    """The liar's report every minute for `MINUTES`, the restore every five: the target's
    minimum after each minute, and every row the signals function answered."""
    start = time.time()
    minimums, rows = [], []
    for minute in range(MINUTES):
        at = start + minute * 60

        def clock(at: float = at) -> float:
            return at

        (row,) = send(
            world, report(name, LIE, sent=at), served(name), SurgeSettings(), clock=clock
        )["dimensions"]
        rows.append(row)
        if minute % RESTORE_MINUTES == RESTORE_MINUTES - 1:
            restore_expired(name, clients=world.clients, store=world.store, clock=clock)
        minimums.append(world.target_min(name, "write"))
    return minimums, rows


def test_a_liar_gets_one_capped_surge_of_minutes_and_is_counted_all_along(
    world: World,  # noqa: F811 (the fixture)
    capsys: pytest.CaptureFixture[str],
) -> None:
    # GIVEN a table at 100 write units under its target, which never scales in, and
    # CloudWatch delivering every minute (the state store's reads show them)
    name = a_table(world, "Liar", write_min=100)
    store_reads(world, range(-8, MINUTES + 2))
    capsys.readouterr()
    # WHEN a process reports 2,000 units/s and throttles every minute for over two hours,
    # while CloudWatch shows nothing served
    minimums, rows = lie_for_hours(world, name)
    out = capsys.readouterr().out
    # THEN the level never passes 4x the configured base, though the table stays at 400
    assert max(minimums) == 400 and world.throughput(name)[1] >= 400
    # AND the table is held raised for minutes, not hours: the first surge's 5 minutes of
    # renewals, its last 5 minutes to expire, and the restore's next run
    raised = sum(1 for m in minimums if m > 100)
    assert raised <= 5 + 5 + RESTORE_MINUTES, raised
    # AND every later lie is refused by the cap and counted over budget (the SurgeBudget
    # alarm), and the unconfirmed surge counted too (the SurgesUnconfirmed alarm)
    statuses = [r["status"] for r in rows]
    assert statuses.count("applied") == 1
    assert statuses.count("limited") >= MINUTES - 20
    assert counted(out, "SurgesOverBudget") == statuses.count("limited")
    assert counted(out, "SurgesUnconfirmed") >= 1


def test_a_crowd_cloudwatch_shows_served_is_renewed_past_the_first_minutes(
    world: World,  # noqa: F811 (the fixture)
    capsys: pytest.CaptureFixture[str],
) -> None:
    # GIVEN a table at 100 write units whose writes CloudWatch shows at 300 units/s served
    name = a_table(world, "Crowd3", write_min=100)
    served_writes(world, name, 300, range(-5, 30))
    start = time.time()
    rows = []
    # WHEN its processes report 300 units/s and throttles every minute for 20 minutes
    for minute in range(20):
        at = start + minute * 60

        def clock(at: float = at) -> float:
            return at

        event = report(name, write(300, throttles={"provisioned": 100}), sent=at)
        (row,) = send(world, event, served(name), SurgeSettings(), clock=clock)["dimensions"]
        rows.append(row["status"])
    # THEN the surge goes on all along, confirmed, never left to expire
    assert "unconfirmed" not in rows and rows[0] == "applied"
    assert world.target_min(name, "write") > 100
    assert counted(capsys.readouterr().out, "SurgesUnconfirmed") == 0
