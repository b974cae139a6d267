"""A tick's UpdateTable decrease under its dimension's lease, with the state store failing:
the table's increases go on, what was sent keeps its outcome, and the failure is counted."""

from __future__ import annotations

from typing import Any

from tests.support.faults import assert_handled, busy_and_idle, client_error, emf, fail_before
from tests.support.faults import world as world  # noqa: F401 (a fixture)
from tests.support.moto_world import World


def _mixed(world: World) -> str:  # noqa: F811
    """A table whose idle reads a tick lowers (200 to 5) and whose throttled writes it
    raises (100 to 215), both by one UpdateTable (no scalable target)."""
    name = world.table("mixed", 200, 100)
    world.traffic(name, "write", 100)
    world.traffic(name, "write", 0, throttles=3000, minutes=range(1, 3))
    return name


def _decisions(events: list[dict[str, Any]], name: str) -> dict[str, dict[str, Any]]:
    return {
        e["dimension"]: e for e in events if e.get("event") == "decision" and e.get("table") == name
    }


def test_a_store_read_failing_under_a_decrease_lease_still_lets_the_increase_go(
    world: World,  # noqa: F811 (the fixture)
) -> None:
    busy, idle = busy_and_idle(world)  # two other tables, healthy
    name = _mixed(world)
    # GIVEN the state store's GetItem of that table's items fails (throttled)
    fail_before(
        world.store_ddb,
        "GetItem",
        lambda p: p.get("TableName") == world.store.name and p["Key"]["pk"] == {"S": name},
        client_error("ProvisionedThroughputExceededException", "GetItem"),
    )
    # WHEN a tick runs
    _, events = world.tick()
    # THEN the writes are raised all the same; the read decrease is not sent, a failure of
    # the table (counted), its store named
    assert world.throughput(name) == (200, 215)
    decisions = _decisions(events, name)
    assert {d: e["status"] for d, e in decisions.items()} == {"read": "failed", "write": "applied"}
    assert "the state store: ProvisionedThroughputExceededException" in decisions["read"]["error"]
    assert emf(events, name)["Failures"] == 1
    # AND the other tables are scaled as usual
    assert_handled(world, busy, idle)


def test_a_lease_not_given_back_after_the_update_keeps_what_was_sent(
    world: World,  # noqa: F811 (the fixture)
) -> None:
    busy, idle = busy_and_idle(world)  # two other tables, healthy
    name = _mixed(world)
    # GIVEN giving a lease of that table back fails (the UpdateTable is sent before)
    fail_before(
        world.store_ddb,
        "UpdateItem",
        lambda p: (
            p.get("TableName") == world.store.name
            and p["Key"]["pk"] == {"S": name}
            and p.get("UpdateExpression") == "REMOVE #o, #u"
        ),
        client_error("InternalServerError", "UpdateItem"),
    )
    # WHEN a tick runs
    _, events = world.tick()
    # THEN both changes were sent
    assert world.throughput(name) == (5, 215)
    # AND their outcomes are reported as sent, not lost; the lease not given back is a
    # failure of the table all the same (counted), said as such
    decisions = _decisions(events, name)
    assert {d: e["status"] for d, e in decisions.items()} == {"read": "applied", "write": "applied"}
    (failed,) = [e for e in events if e.get("event") == "table-failed" and e["table"] == name]
    assert "a lease of the state store not given back" in failed["reason"], failed
    assert emf(events, name)["Failures"] == 1
    # AND the other tables are scaled as usual
    assert_handled(world, busy, idle)
