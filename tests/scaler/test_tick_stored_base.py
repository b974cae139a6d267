"""A dimension's stored base that is not a number, read by a scaler's tick that also ends
an expired hold of that dimension: its reading counted as the scaler counts what it ignores
(IgnoredTags), its replacement by the level the dimension has once (HoldsDropped), and
neither again once replaced."""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.support.faults import busy_and_idle, emf
from tests.support.faults import world as world  # noqa: F401 (a fixture)
from tests.support.moto_world import World
from tests.support.surge_server import counted


def test_a_base_unread_by_a_tick_that_ends_a_hold_is_told_once_read_and_once_replaced(
    world: World,  # noqa: F811 (the fixture)
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_NAME", "scaler")  # EMF counts go out
    busy_and_idle(world)
    name = world.table("unreadbase", 300, 300)
    world.traffic(name, "read", 150)
    # GIVEN the table's read item: a base that is no number, and a hold that has expired
    expired: dict[str, Any] = {
        "units": {"N": "100"},
        "expires": {"N": str(int(time.time()) - 600)},
        "baseline": {"N": "150"},
    }
    world.store_ddb.update_item(
        TableName=world.store.name,
        Key={"pk": {"S": name}, "sk": {"S": "table:read"}},
        UpdateExpression="SET #b = :b, holds = :h",
        ExpressionAttributeNames={"#b": "base"},
        ExpressionAttributeValues={":b": {"S": "300"}, ":h": {"M": {"h1": {"M": expired}}}},
    )
    capsys.readouterr()
    # WHEN a tick runs, then another
    _, events = world.tick()
    out = capsys.readouterr().out
    _, later = world.tick()
    out_later = capsys.readouterr().out
    # THEN the first tells the base unread once (IgnoredTags), and its replacement by the
    # level the dimension had, when the restore it runs recorded that, once (HoldsDropped)
    told = [e["event"] for e in events if e.get("table") == name and "base-" in e["event"]]
    assert told == ["base-unread", "base-replaced"], told
    assert emf(events, name)["IgnoredTags"] == 1
    assert counted(out, "HoldsDropped") == 1
    (state,) = [s for s in world.store.table(name) if s.dimension == "read"]
    assert (state.base, state.base_unread) == (300, False)
    # AND the next tick, reading a sound base, tells nothing
    assert [e for e in later if "base-" in str(e.get("event"))] == []
    assert "IgnoredTags" not in emf(later, name) and counted(out_later, "HoldsDropped") == 0
