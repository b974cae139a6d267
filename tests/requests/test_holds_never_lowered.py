"""A dimension held by a capacity request is never lowered below its hold, and a table's
tags (untrusted input) neither undo a hold nor stop the table being scaled: each test runs
a real tick against the moto server, with a throttled and an idle table beside the one under
test that the same tick must still scale."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from ddb_capacity_runtime.aws.store import HoldStore
from ddb_capacity_runtime.requests import request_capacity
from tests.support.faults import assert_handled, busy_and_idle, emf
from tests.support.faults import world as world  # noqa: F401 (a fixture)
from tests.support.moto_world import World
from tests.support.scaler_errors import UNITS_REASON


def write_changes(summary: dict[str, Any], name: str) -> list[dict[str, Any]]:
    return [c for c in summary["changes"] if (c["table"], c["dimension"]) == (name, "write")]


@pytest.mark.parametrize("default_max", [None, "100"], ids=["default-max", "max-below-hold"])
def test_a_calm_tick_never_lowers_a_held_table_below_its_hold(
    world: World, default_max: str | None
) -> None:
    """A table without a scalable target, raised by UpdateTable to a 300-unit hold and
    without traffic, keeps 300 while the hold lasts, even where the configured maximum is
    below the hold."""
    # GIVEN a throttled table and an idle one (CloudWatch shows the newest minutes
    # delivered), and a table a capacity request raised from 5 to 300 writes
    busy, idle = busy_and_idle(world)
    held = world.table("held", 5, 5)
    hold = request_capacity(
        held, write=300, hold=timedelta(minutes=15), clients=world.clients, store=world.store
    )
    assert hold.levels == {"write": 300} and world.throughput(held) == (5, 300)
    # WHEN a tick runs during the hold
    env = {} if default_max is None else {"SCALER_DEFAULT_MAX": default_max}
    summary, events = world.tick(**env)
    # THEN the held dimension keeps its hold, and the other tables are still scaled
    assert world.throughput(held) == (5, 300)
    assert write_changes(summary, held) == []
    if default_max is None:
        assert_handled(world, busy, idle)
    else:  # both capped at the maximum of 100
        assert world.throughput(busy) == world.throughput(idle) == (100, 100)
    assert summary["failures"] == [] and emf(events, held)["Failures"] == 0


def test_a_refused_tag_keeps_the_holds_raised_maximum(world: World) -> None:
    """A write-min tag refused for lowering the limit below the load leaves the hold's
    lift as it was: the maximum it raised above the configured one too."""
    # GIVEN a table writing 10 units/s, tagged write-min=1 (below what that load needs),
    # held at 350 (10 + 340) by a capacity request, with a configured maximum of 100
    busy, idle = busy_and_idle(world)
    held = world.table("held", 5, 5, tags={"ddb-capacity:write-min": "1"})
    world.traffic(held, "write", 10)
    hold = request_capacity(
        held, write=340, hold=timedelta(minutes=15), clients=world.clients, store=world.store
    )
    assert hold.levels == {"write": 350} and world.throughput(held) == (5, 350)
    # WHEN a tick runs during the hold
    summary, events = world.tick(SCALER_DEFAULT_MAX="100")
    # THEN the held dimension keeps its hold, and the other tables are capped at 100
    assert world.throughput(held) == (5, 350)
    assert write_changes(summary, held) == []
    assert world.throughput(busy) == world.throughput(idle) == (100, 100)
    # AND the tag is refused and counted: 10 units/s needs 15 at the 70% target
    refused = [(e["key"], e["needs"]) for e in events if e.get("event") == "tag-refused"]
    assert refused == [("ddb-capacity:write-min", 15)]
    assert emf(events, held)["RefusedTags"] == 1
    assert summary["failures"] == []


def test_a_max_tag_is_checked_against_the_windows_peak_not_its_newest_minute(
    world: World,
) -> None:
    """A max tag that would cap a dimension below the load it carried earlier in the
    window is refused, however quiet the newest minutes are."""
    # GIVEN a table at 150 writes tagged write-max=50, writing 100 units/s until its
    # newest minute, which carried 1 unit/s
    busy, idle = busy_and_idle(world)
    name = world.table("peaked", 5, 150, tags={"ddb-capacity:write-max": "50"})
    world.traffic(name, "write", 100, minutes=range(2, 16))
    world.traffic(name, "write", 1, minutes=range(1, 2))
    # WHEN a tick runs
    summary, events = world.tick()
    # THEN the table is not cut to the tag's 50, below the load it carried
    assert world.throughput(name) == (5, 150) and write_changes(summary, name) == []
    assert_handled(world, busy, idle)
    # AND the tag is refused and counted: 100 units/s needs 143 at the 70% target
    refused = [(e["key"], e["needs"]) for e in events if e.get("event") == "tag-refused"]
    assert refused == [("ddb-capacity:write-max", 143)]
    assert emf(events, name)["RefusedTags"] == 1
    assert summary["failures"] == []


@pytest.mark.parametrize(
    "key",
    [
        "ddb-capacity:min",
        "ddb-capacity:max",
        "ddb-capacity:write-min",
        "ddb-capacity:write-max",
        "ddb-capacity:read-max",
    ],
)
def test_a_zero_limit_tag_is_ignored_and_counted_and_the_table_still_scaled(
    world: World, key: str
) -> None:
    """A min or max tag of 0 is outside the bounds (1 to the table quota): it is ignored and
    counted, never the reason a table is not scaled."""
    # GIVEN a throttled table, an idle one, and an idle one tagged <key>=0
    busy, idle = busy_and_idle(world)
    tagged = world.table("zero", 200, 200, tags={key: "0"})
    # WHEN a tick runs
    summary, events = world.tick()
    # THEN every table is scaled as if the tag were not there, and none failed
    assert world.throughput(tagged) == (5, 5)
    assert_handled(world, busy, idle)
    assert summary["failures"] == [] and emf(events, tagged)["Failures"] == 0
    # AND the tag is ignored, said with its reason, and counted
    ignored = [
        (e["table"], e["key"], e["value"], e["reason"])
        for e in events
        if e.get("event") == "tag-ignored"
    ]
    assert ignored == [(tagged, key, "0", UNITS_REASON)]
    assert emf(events, tagged)["IgnoredTags"] == 1


def test_a_stored_base_that_is_no_number_is_counted_and_never_lowers_the_held_table(
    world: World,
) -> None:
    """The state store is untrusted input too: a dimension's base read back as something
    that is not one (here a string) is told and counted, and the hold it sits beside still
    holds its table up."""
    # GIVEN a table a capacity request raised from 5 to 300 writes, whose stored base then
    # reads back as a string
    busy, idle = busy_and_idle(world)
    held = world.table("held", 5, 5)
    request_capacity(
        held, write=300, hold=timedelta(minutes=15), clients=world.clients, store=world.store
    )
    world.store_ddb.update_item(
        TableName=world.store.name,
        Key={"pk": {"S": held}, "sk": {"S": HoldStore.sort_key(None, "write")}},
        UpdateExpression="SET #b = :b",
        ExpressionAttributeNames={"#b": "base"},
        ExpressionAttributeValues={":b": {"S": "5"}},
    )
    # WHEN a tick runs during the hold
    summary, events = world.tick()
    # THEN the held dimension keeps its hold, and the other tables are still scaled
    assert world.throughput(held) == (5, 300) and write_changes(summary, held) == []
    assert_handled(world, busy, idle)
    # AND the unread base is told, by its dimension, and counted
    told = [(e["table"], e["dimension"]) for e in events if e.get("event") == "base-unread"]
    assert told == [(held, "write")]
    assert emf(events, held)["IgnoredTags"] == 1
    assert summary["failures"] == []
