"""Surges a lie cannot buy: the default surge cap (a multiple of the capacity a dimension
had when its surge started) and the per-dimension budget of surge units a window, as pure
rules and against real parts (tables and targets in moto, the state store in dynalite)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from ddb_capacity_runtime.aws import combiner
from ddb_capacity_runtime.core.surge import (
    BUDGET_WINDOW_SECONDS,
    MIN_SURGE_ROOM,
    UNBOUNDED,
    Budget,
    SurgeReportError,
    budget_left,
    budget_window,
    read_budget,
    surge_room,
)
from ddb_capacity_runtime.core.surge_report import (
    MAX_PROCESS_CHARS,
    MAX_REQUESTS_PER_SECOND,
    MAX_UNITS_PER_SECOND,
    is_process_id,
    parse_report,
)
from ddb_capacity_runtime.fast_path.surge_settings import SurgeSettings
from ddb_capacity_runtime.requests import restore_expired
from tests.support.moto_world import World
from tests.support.surge_server import a_table, counted, report, send, served, write
from tests.support.surge_server import prompt_store as prompt_store  # noqa: F401 (fixture)
from tests.support.surge_server import world as world  # noqa: F401 (fixture)

#: A process that lies: the most units a report may carry, and throttles.
LIE = write(MAX_UNITS_PER_SECOND, throttles={"provisioned": 10_000_000}, failed=1_000_000)


# ------------------------------------------------------------------ the rules


def test_the_default_cap_is_a_multiple_of_the_start_with_a_floor() -> None:
    assert surge_room(100, None, 4.0) == MIN_SURGE_ROOM * 3  # 400 at most: adds 300
    assert surge_room(1_000, None, 4.0) == 3_000
    assert surge_room(1, None, 4.0) == MIN_SURGE_ROOM  # a tiny dimension may still surge
    assert surge_room(1_000, 50, 4.0) == 50  # a cap that is set is kept
    assert surge_room(1_000, None, None) is None  # unbounded


def test_the_budget_counts_from_the_lowest_start_of_back_to_back_windows() -> None:
    first = budget_window(None, 1_000.0, 100)
    assert first == Budget(1_000.0, 100, 0)
    assert budget_left(Budget(1_000.0, 100, 250), None, None, 4.0) == 350  # 2 x 300 - 250
    # a window that ended: the next counts from the lower of its start and the last one's
    later = budget_window(Budget(1_000.0, 100, 600), 1_000.0 + BUDGET_WINDOW_SECONDS, 700)
    assert later == Budget(1_000.0 + BUDGET_WINDOW_SECONDS, 100, 0)
    # after a quiet window, it counts from the dimension's level again
    quiet = budget_window(Budget(1_000.0, 100, 600), 1_000.0 + 2 * BUDGET_WINDOW_SECONDS, 700)
    assert quiet.level == 700
    assert budget_left(first, 5_000, None, 4.0) == 5_000
    assert budget_left(first, None, None, None) is None


def test_a_budget_window_round_trips_and_a_bad_one_is_none() -> None:
    window = Budget(1_700_000_000.0, 250, 75)
    assert read_budget(window.text(), 1_700_000_100.0) == window
    for bad in (None, "", "1:2", "a:b:c", "1:0:3", "9999999999:1:1", "1:2:3:4", 7):
        assert read_budget(bad, 1_700_000_100.0) is None


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"scale": 1.0}, "scale: got 1.0; expected None or a number over 1, at most 100"),
        ({"budget": 0}, "budget: got 0; expected None, 'unbounded' or a whole number from 1"),
        ({"budget": "lots"}, "budget: got 'lots'; expected None, 'unbounded'"),
    ],
)
def test_a_bad_bound_is_refused_naming_it(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        SurgeSettings(**kwargs)


# ------------------------------------------------------------------ end to end


def test_one_lie_with_the_defaults_raises_at_most_four_times_the_start(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a table at 100 write units under a target whose max is 40,000
    name = a_table(world, "OneLie", write_max=40_000)
    # WHEN a process that may only invoke the signals function lies once
    (row,) = send(world, report(name, LIE), served(name), SurgeSettings())["dimensions"]
    # THEN the surge stops at 4 x 100, not at the target's max
    assert (row["status"], row["to"]) == ("applied", 400)
    assert world.target_min(name, "write") == 400
    assert counted(capsys.readouterr().out, "SurgeUnits") == 300


def scale_in(world: World, name: str) -> None:
    """What auto scaling does after a surge's restore: the table back at its minimum (moto
    never scales in by itself)."""
    world.clients.dynamodb.update_table(
        TableName=name,
        ProvisionedThroughput={
            "ReadCapacityUnits": world.throughput(name)[0],
            "WriteCapacityUnits": world.target_min(name, "write"),
        },
    )


def test_repeated_lies_never_add_more_than_the_budget_in_a_window(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a table at 100 under a target whose max is 40,000, and the default bounds: a
    # surge to 400 at most, 2 x 300 units an hour
    name = a_table(world, "Budgeted", write_max=40_000)
    settings = SurgeSettings()
    start = time.time()
    levels = []
    for minutes in (0, 7, 14, 21):

        def at(m: int = minutes) -> float:
            return start + m * 60

        # WHEN the liar reports after each restore and scale-in
        restore_expired(name, clients=world.clients, store=world.store, clock=at)
        scale_in(world, name)
        (row,) = send(world, report(name, LIE, sent=at()), served(name), settings, clock=at)[
            "dimensions"
        ]
        levels.append((row["status"], world.throughput(name)[1]))
    # THEN the surges add 600 units in the hour: 300, 300, then none
    assert levels == [("applied", 400), ("applied", 400), ("limited", 100), ("limited", 100)]
    out = capsys.readouterr().out
    assert counted(out, "SurgeUnits") == 600
    assert counted(out, "SurgesOverBudget") == 3
    # and a new window an hour later allows 600 more
    later: Callable[[], float] = lambda: start + BUDGET_WINDOW_SECONDS + 60  # noqa: E731
    send(world, report(name, LIE, sent=later()), served(name), settings, clock=later)
    assert world.throughput(name)[1] == 400


def test_lies_after_each_restore_never_climb_over_the_cap_of_where_they_began(
    world: World,
) -> None:
    # GIVEN a table raised to 400 by a lie, restored, but not yet scaled in (auto scaling
    # takes about 15 minutes)
    name = a_table(world, "Climber", write_max=40_000)
    start = time.time()
    for minutes in (0, 7, 14, 70, 77):

        def at(m: int = minutes) -> float:
            return start + m * 60

        restore_expired(name, clients=world.clients, store=world.store, clock=at)
        # WHEN the liar reports again, from the raised level
        send(world, report(name, LIE, sent=at()), served(name), SurgeSettings(), clock=at)
        # THEN the surge never counts its cap from a level a surge of its own raised
        assert world.throughput(name)[1] == 400
        assert world.target_min(name, "write") in (100, 400)


def test_an_explicit_budget_and_no_bounds_at_all(world: World) -> None:
    small = a_table(world, "SmallBudget", write_max=40_000)
    send(world, report(small, LIE), served(small), SurgeSettings(budget=50))
    assert world.target_min(small, "write") == 150
    free = a_table(world, "Unbounded", write_max=40_000)
    send(world, report(free, LIE), served(free), SurgeSettings(scale=None, budget=UNBOUNDED))
    assert world.target_min(free, "write") == 40_000


# ------------------------------------------------------------------ process ids, item size


@pytest.mark.parametrize(
    "process", ["", "a b", "p" * 65, "naïve", "x\x00y", 7, None, "../etc/passwd", "a;b"]
)
def test_a_process_id_out_of_its_format_is_refused_naming_it(process: object) -> None:
    raw = {**report("Orders", write(1)), "process": process}
    with pytest.raises(SurgeReportError, match="process: got .*; expected 1 to 64 letters, digits"):
        parse_report(raw, time.time())


def test_the_hooks_process_ids_are_in_the_format() -> None:
    from ddb_capacity_runtime.fast_path.hook import _label, _process_id

    assert is_process_id(_process_id("web.host-01_a"))
    assert is_process_id(_process_id("host name/with:odd chars é"))
    with pytest.raises(ValueError, match="process: got 'a b'; expected a label of 1 to 40"):
        _label("a b")


def test_a_reports_write_stays_within_12_units_when_the_combiner_is_full(
    world: World,
) -> None:
    # GIVEN a dimension whose combiner holds all but one process it keeps, each with the
    # longest id and numbers near their bounds
    name = a_table(world, "Sized")
    key = combiner.combiner_key(name, "table:write")
    now = time.time()
    highs = {"d": combiner.MAX_DEMAND, "c": MAX_UNITS_PER_SECOND, "at": now}
    entry = {
        f: {"N": f"{highs.get(f, MAX_REQUESTS_PER_SECOND) - 0.123:.3f}"}
        for f in ("d", "t", "k", "c", "u", "at")
    }
    fresh = {
        f"w{i:0{MAX_PROCESS_CHARS - 1}d}": {"M": entry} for i in range(combiner.MAX_PROCESSES - 1)
    }
    world.store_ddb.put_item(TableName=world.store.name, Item={**key, "reports": {"M": fresh}})
    used: list[float] = []

    def ask(params: dict[str, Any], **_: Any) -> None:
        params["ReturnConsumedCapacity"] = "TOTAL"

    def note(parsed: dict[str, Any], **_: Any) -> None:
        used.append(parsed.get("ConsumedCapacity", {}).get("CapacityUnits", 0))

    events = world.store_ddb.meta.events
    events.register("before-parameter-build.dynamodb.UpdateItem", ask, unique_id="sized-ask")
    events.register("after-call.dynamodb.UpdateItem", note, unique_id="sized-note")
    try:
        # WHEN the last process it keeps reports (dynalite counts units by item size, as
        # DynamoDB does: 1 per KB of the larger of the item before and after)
        last = "n" * MAX_PROCESS_CHARS
        answer = send(world, report(name, write(1), process=last), served(name))
    finally:
        events.unregister("before-parameter-build.dynamodb.UpdateItem", unique_id="sized-ask")
        events.unregister("after-call.dynamodb.UpdateItem", unique_id="sized-note")
    # THEN it was let in, and its write cost 12 units at most
    assert answer["dimensions"][0]["status"] != "refused"
    print("write units of a report on a full combiner:", used[0])
    assert used and used[0] <= 12, used
