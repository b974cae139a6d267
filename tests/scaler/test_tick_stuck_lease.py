"""A state-store item whose lease no writer could have set (a ``lock_until`` far in the
future, or not a number): the store is untrusted input, so such a lease is taken over,
told and counted, never a dimension kept from every change for good; a lease taken goes on
from whatever version the item held."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from ddb_capacity_runtime.aws.store import HoldStore, _next_version
from tests.support.faults import busy_and_idle
from tests.support.faults import world as world  # noqa: F401 (a fixture)
from tests.support.moto_world import World
from tests.support.surge_server import counted


@pytest.mark.parametrize(
    "lock_until", [{"N": "4102444800"}, {"S": "tomorrow"}], ids=["year-2100", "not-a-number"]
)
def test_a_lease_no_writer_could_have_set_is_taken_over_told_and_counted(
    world: World,  # noqa: F811 (the fixture)
    lock_until: dict[str, str],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_NAME", "scaler")  # EMF counts go out
    # GIVEN an idle table without a scalable target at 200 (a tick lowers it to 5), whose
    # write item in the store says its lease is held (until 2100, or until "tomorrow")
    busy, name = busy_and_idle(world)
    item: dict[str, Any] = {
        "pk": {"S": name},
        "sk": {"S": HoldStore.sort_key(None, "write")},
        "lock_owner": {"S": "someone"},
        "lock_until": lock_until,
        "lease_version": {"N": "7"},
    }
    world.store_ddb.put_item(TableName=world.store.name, Item=item)
    capsys.readouterr()
    # WHEN a tick runs
    _, events = world.tick()
    out = capsys.readouterr().out
    # THEN the write is lowered: the lease was taken over (its version went on from 7), told
    # once by the item it was on, and counted
    assert world.throughput(name) == (5, 5)
    assert world.throughput(busy) == (100, 215)  # and the throttled table beside it raised
    told = [e for e in events if e.get("event") == "lease-taken-over"]
    assert [(e["table"], e["item"]) for e in told] == [(name, "table:write")], told
    assert counted(out, "HoldsDropped") == 1
    raw = world.store_ddb.get_item(
        TableName=world.store.name, Key={k: item[k] for k in ("pk", "sk")}
    )
    assert raw["Item"]["lease_version"] == {"N": "8"} and "lock_until" not in raw["Item"]


def test_a_lease_held_now_is_not_taken_over(
    world: World,  # noqa: F811 (the fixture)
) -> None:
    # GIVEN the same table whose write lease another process holds now (for a minute)
    _, name = busy_and_idle(world)
    with world.store.lease(name, None, "write", deadline=0):
        # WHEN a tick runs
        _, events = world.tick()
    # THEN the write decrease waits for the next tick; nothing is taken over
    assert world.throughput(name) == (5, 200)
    assert [e for e in events if e.get("event") == "lease-taken-over"] == []


@pytest.mark.parametrize(
    ("before", "after"),
    [
        (None, 1),
        ({"N": "7"}, 8),
        ({"N": "1.5"}, Decimal("2.5")),
        ({"N": "9" * 38}, 10**38),
        ({"S": "7"}, 1),
    ],
    ids=["none", "whole", "fraction", "38-digits", "not-a-number"],
)
def test_a_lease_taken_goes_on_from_the_version_dynamodb_held(
    before: dict[str, str] | None, after: int | Decimal
) -> None:
    # what the take's ADD of 1 made of the item's version, exactly (a forged one included),
    # so that the writes under the lease are conditional on what the item holds
    assert _next_version(before) == after
