"""Capacity requests ("get ready, here I come") against a moto server on 127.0.0.1: holds
that add up, early release, expiry restored by the scaler's tick and by restore_expired
after the requesting process was killed; botocore's Stubber for what moto never does (a
table that stays UPDATING, refused updates, an exhausted decrease quota)."""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from botocore.exceptions import ClientError

from ddb_capacity_runtime.aws.clients import Clients
from ddb_capacity_runtime.aws.store import CLOCK_SKEW, LEASE, HoldLimits, HoldStore
from ddb_capacity_runtime.core.errors import HoldStoreMissing
from ddb_capacity_runtime.core.hold_requests import new_token
from ddb_capacity_runtime.core.holds import level
from ddb_capacity_runtime.events import event_fields
from ddb_capacity_runtime.requests import (
    CapacityRequestError,
    CapacityRequestFailed,
    CapacityRequestTimeout,
    Hold,
    release_hold,
    request_capacity,
    restore_expired,
)
from ddb_capacity_runtime.requests import restorer as restorer_module
from ddb_capacity_runtime.requests.broker import BrokerConfig, broker_handler, serve
from ddb_capacity_tools.local_aws import put_traffic
from tests.support.capacity_requests import (
    HOLD_ID,
    FakeClock,
    _described,
    _table,
    later,
    stored,
    write_held,
)
from tests.support.capacity_requests import stubbed as stubbed  # noqa: F401 (fixture)
from tests.support.capacity_requests import world as world  # noqa: F401 (fixture)
from tests.support.moto_world import World, base_min_tag
from tests.support.shape import ROOT
from tests.support.surge_guards import untrusted_cloudwatch
from tests.support.surge_server import counted


@pytest.fixture
def moto_world(aws_client: Any) -> Iterator[World]:
    """A world whose store is in moto too: for Lambda entry points, which make their own
    clients from the environment."""
    made = World(aws_client)
    yield made
    made.close()


def no_library_tags(world: World, name: str) -> bool:
    return not any(k.startswith("ddb-capacity:") for k in world.tags(name))


# ------------------------------------------------------------------ holds add up


def test_two_requesters_add_up_over_the_current_traffic(world: World) -> None:
    name = world.table("Adds", 100, 1_500, tagged=False)
    world.target(name, "write", 1_500, 40_000)
    world.traffic(name, "write", 1_000)

    first = request_capacity(name, write=5_000, clients=world.clients, store=world.store)
    assert first.levels == {"write": 6_000}
    assert world.target_min(name, "write") == 6_000
    assert world.throughput(name) == (100, 6_000)
    # The second worker's own traffic may already show; the level counts the traffic the
    # first hold saw, so the first worker's load is not counted twice.
    world.traffic(name, "write", 3_000, minutes=range(1, 3))
    second = request_capacity(name, write=5_000, clients=world.clients, store=world.store)
    assert second.levels == {"write": 11_000}
    assert world.target_min(name, "write") == 11_000
    assert world.throughput(name) == (100, 11_000)
    assert [h.baseline for h in second.holds] == [1_000]
    (write,) = stored(world, name).values()
    assert write.base == 1_500 and len(write.holds) == 2
    assert no_library_tags(world, name)  # holds live in the store, not in tags

    # Early release: the minimum falls to what the other hold needs...
    rows = first.release()
    assert rows == [
        {
            "table": name,
            "index": None,
            "dimension": "write",
            "via": "scalable-target",
            "from": 11_000,
            "to": 6_000,
            "status": "applied",
        }
    ]
    assert world.target_min(name, "write") == 6_000
    assert first.release() == []  # idempotent
    # ...and to the base once no hold is left; auto scaling scales in by its own rules.
    with second:
        pass
    assert world.target_min(name, "write") == 1_500
    assert world.throughput(name) == (100, 11_000)
    assert stored(world, name) == {}


def test_traffic_cloudwatch_cannot_vouch_for_counts_as_the_capacity_provisioned(
    world: World, caplog: pytest.LogCaptureFixture
) -> None:
    # GIVEN a table at 1,500 write units under a target, and CloudWatch answering its traffic
    # with a status not to be trusted (the minutes it gives may say anything)
    name = world.table("Unvouched", 100, 1_500, tagged=False)
    world.target(name, "write", 1_500, 40_000)
    cloudwatch, stub = untrusted_cloudwatch("PartialData")
    clients = Clients(world.ddb, world.aas, cloudwatch, world.clients.tagging)
    # WHEN 500 units are asked for on top of the current traffic
    hold = request_capacity(name, write=500, clients=clients, store=world.store)
    stub.assert_no_pending_responses()
    # THEN the traffic counts as the capacity the table has (what it serves now, at most),
    # never as none: the hold raises the table past it by the units asked for
    assert hold.levels == {"write": 2_000} and [h.baseline for h in hold.holds] == [1_500]
    assert world.target_min(name, "write") == 2_000
    (event,) = [f for r in caplog.records if (f := event_fields(r)) and "baseline" in f]
    assert (event["event"], event["seen"], event["baseline"]) == ("traffic-unknown", 0, 1_500)
    hold.release()


def test_a_gsi_without_a_target_is_raised_and_lowered_with_update_table(world: World) -> None:
    name = world.table("Direct", 10, 10, gsi=(20, 5), tagged=False)
    world.traffic(name, "read", 80, index="byUser")
    hold = request_capacity(
        name, index="byUser", read=300, write=50, clients=world.clients, store=world.store
    )
    assert hold.levels == {"read": 380, "write": 50}
    assert world.throughput(name, "byUser") == (380, 50)
    assert world.throughput(name) == (10, 10)
    assert {c["via"] for c in hold.changes} == {"update-table"}
    assert stored(world, name)[("byUser", "read")].base == 20

    rows = hold.release()
    assert {(r["dimension"], r["from"], r["to"], r["status"]) for r in rows} == {
        ("read", 380, 20, "applied"),
        ("write", 50, 5, "applied"),
    }
    assert world.throughput(name, "byUser") == (20, 5)
    assert stored(world, name) == {}


def test_a_request_below_the_current_capacity_changes_nothing(world: World) -> None:
    name = world.table("Enough", 10, 900, tagged=False)
    world.traffic(name, "write", 100)
    hold = request_capacity(name, write=200, clients=world.clients, store=world.store)
    assert hold.levels == {"write": 900} and hold.changes == []
    assert world.throughput(name) == (10, 900)
    assert hold.release() == [
        {
            "table": name,
            "index": None,
            "dimension": "write",
            "via": "update-table",
            "from": 900,
            "to": 900,
            "status": "unchanged",
        }
    ]
    assert stored(world, name) == {}


def test_release_keeps_capacity_raised_beyond_the_holds_by_someone_else(world: World) -> None:
    name = world.table("Kept", 10, 10, tagged=False)
    hold = request_capacity(name, write=100, clients=world.clients, store=world.store)
    world.ddb.update_table(
        TableName=name, ProvisionedThroughput={"ReadCapacityUnits": 10, "WriteCapacityUnits": 700}
    )  # the scaler, for traffic
    (row,) = hold.release()
    assert (row["status"], row["from"], row["to"]) == ("kept", 700, 700)
    assert world.throughput(name) == (10, 700)
    assert stored(world, name) == {}


def targeted_with_a_clock(world: World, base: str) -> tuple[str, list[float], dict[str, Any]]:
    """A table whose writes are under a target (minimum 100) with 50 units of traffic, a
    clock that moves when told (``now[0]``), and the arguments of a request on that clock."""
    name = world.table(base, 10, 100, tagged=False)
    world.target(name, "write", 100, 10_000)
    world.traffic(name, "write", 50)
    now = [time.time()]
    store = replace(world.store, clock=lambda: now[0])
    return name, now, {"store": store, "clients": world.clients, "clock": lambda: now[0]}


def test_a_release_after_another_hold_expired_unrestored_lowers_to_the_holds_left(
    world: World,
) -> None:
    # GIVEN a target's minimum raised by two holds (+500 for a minute, +300 for 30 minutes)
    name, now, kw = targeted_with_a_clock(world, "Expired")
    store = kw["store"]
    request_capacity(name, write=500, hold=timedelta(minutes=1), **kw)
    second = request_capacity(name, write=300, hold=timedelta(minutes=30), **kw)
    assert world.target_min(name, "write") == 850
    # WHEN the first expires, and the second is released before the restorer ends the first
    now[0] += 120
    (row,) = second.release()
    # THEN the minimum goes back to its base at once (no hold is active): the expired hold's
    # raise is the library's own, not capacity raised beyond the holds by someone else
    assert (row["status"], row["from"], row["to"]) == ("applied", 850, 100)
    assert world.target_min(name, "write") == 100
    # and the restorer then ends the expired hold, with nothing left to lower
    restore_expired(name, store=store, clients=world.clients, clock=lambda: now[0])
    assert [h for s in store.table(name) for h in s.holds] == []
    assert world.target_min(name, "write") == 100


# ------------------------------------------------------------------ expiry after a crash


def test_the_scaler_tick_restores_the_hold_of_a_killed_worker(
    world: World, aws_env: dict[str, str], dynalite_endpoint: str
) -> None:
    name = world.table("Crash", 10, 100)
    world.target(name, "write", 100, 10_000)
    direct = world.table("CrashDirect", 10, 100)
    request_capacity(
        direct, write=2_000, hold=timedelta(minutes=5), clients=world.clients, store=world.store
    )
    env = {**os.environ, **aws_env, "PYTHONPATH": str(ROOT)}
    script = textwrap.dedent(f"""
        import os, signal
        from datetime import timedelta
        from ddb_capacity_runtime.requests import request_capacity
        from ddb_capacity_runtime.aws.store import HoldStore
        from ddb_capacity_tools.local_aws import client
        store = HoldStore(client({dynalite_endpoint!r}, "dynamodb"), {world.store.name!r})
        request_capacity({name!r}, write=2_000, hold=timedelta(minutes=5), store=store)
        print("raised", flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
    """)
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == -signal.SIGKILL, done.stderr
    assert done.stdout.strip() == "raised"
    assert world.target_min(name, "write") == 2_000
    assert world.throughput(name) == (10, 2_000)

    # While the holds last, a tick neither restores the minimum nor lowers the table
    # without a target to its max (500 here).
    summary, _ = world.tick(world.now + timedelta(minutes=1), SCALER_DEFAULT_MAX="500")
    assert world.target_min(name, "write") == 2_000
    assert world.throughput(direct)[1] == 2_000
    assert summary["failed"] == []
    assert [c for c in summary["changes"] if c["dimension"] == "write"] == []
    # After they expired, the tick ends them and the tags go away: the minimum goes back to
    # its base; the table without a target is left to the policy, which lowers it in the
    # same tick (to its max of 500 here), spending one decrease rather than two. (It lowers
    # only on evidence: CloudWatch shows it delivered the window's newest minutes.)
    world.traffic(name, "read", 1, minutes=range(-6, 16))
    summary, events = world.tick(world.now + timedelta(minutes=7), SCALER_DEFAULT_MAX="500")
    assert world.target_min(name, "write") == 100
    (lowered,) = [
        c for c in summary["changes"] if (c["table"], c["dimension"]) == (direct, "write")
    ]
    assert (lowered["from"], lowered["to"]) == (2_000, 500)
    assert world.throughput(direct)[1] == 500
    for table in (name, direct):
        assert stored(world, table) == {} and no_library_tags(world, table)
    ended = {e["table"]: e for e in events if e.get("event") == "hold-ended"}
    assert {t: (e["via"], e["from"], e["to"], e["status"]) for t, e in ended.items()} == {
        name: ("scalable-target", 2_000, 100, "applied"),
        direct: ("update-table", 2_000, 2_000, "left-to-policy"),
    }


def test_restore_expired_ends_only_expired_and_malformed_holds(world: World) -> None:
    name = world.table("Expiry", 10, 50, tagged=False)
    short = request_capacity(
        name, write=100, hold=timedelta(minutes=2), clients=world.clients, store=world.store
    )
    long = request_capacity(
        name, write=400, hold=timedelta(minutes=30), clients=world.clients, store=world.store
    )
    # A forged hold written straight into the store: far more than the quota
    world.store_ddb.update_item(
        TableName=world.store.name,
        Key={"pk": {"S": name}, "sk": {"S": "table:write"}},
        UpdateExpression="SET holds.junk = :h",
        ExpressionAttributeValues={
            ":h": {
                "M": {
                    "units": {"N": "10000000"},
                    "expires": {"N": "4102444800"},
                    "baseline": {"N": "0"},
                }
            }
        },
    )
    assert world.throughput(name) == (10, 500)
    assert stored(world, name)[(None, "write")].malformed == ("junk",)
    # Nothing expired yet: only the malformed hold goes, told (the broker's restore counts
    # it as dropped), and nothing moves.
    rows = restore_expired(name, clients=world.clients, store=world.store)
    assert [(r["status"], r["from"], r["to"]) for r in rows] == [
        ("unchanged", 500, 500),
        ("dropped", 500, 500),
    ]
    assert "1 malformed hold(s) dropped unread ('junk')" in rows[1]["note"]
    assert {h.id for h in stored(world, name)[(None, "write")].holds} == {short.id, long.id}
    assert stored(world, name)[(None, "write")].malformed == ()

    rows = restore_expired(name, clients=world.clients, store=world.store, clock=later(5))
    assert [(r["from"], r["to"], r["status"]) for r in rows] == [(500, 400, "applied")]
    assert world.throughput(name) == (10, 400)
    assert {h.id for h in stored(world, name)[(None, "write")].holds} == {long.id}
    assert short.release() == []  # already ended: nothing left to do
    assert world.throughput(name) == (10, 400)
    rows = restore_expired(name, clients=world.clients, store=world.store, clock=later(45))
    assert [(r["from"], r["to"]) for r in rows] == [(400, 50)]
    assert stored(world, name) == {}


def forge_hold(world: World, table: str) -> None:
    """A hold written straight into the store, far over the quota: malformed to a reader."""
    world.store_ddb.update_item(
        TableName=world.store.name,
        Key={"pk": {"S": table}, "sk": {"S": "table:write"}},
        UpdateExpression="SET holds.junk = :h",
        ExpressionAttributeValues={
            ":h": {"M": {"units": {"N": "10000000"}, "expires": {"N": "4102444800"}}}
        },
    )


@pytest.mark.parametrize("where", ["request", "release", "restore"])
def test_a_malformed_hold_a_write_leaves_out_is_counted_in_a_lambda_function(
    world: World,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
    where: str,
) -> None:
    # GIVEN a table whose writes hold a malformed hold beside a well-formed one
    name = world.table("Forged", 10, 50, tagged=False)
    kept = request_capacity(name, write=100, clients=world.clients, store=world.store)
    forge_hold(world, name)
    assert stored(world, name)[(None, "write")].malformed == ("junk",)
    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_NAME", "the-broker")
    capsys.readouterr()
    # WHEN the broker (a Lambda function) writes the dimension's holds, leaving it out
    config = BrokerConfig({name: frozenset()})
    events: dict[str, dict[str, Any]] = {
        "request": {"action": "request", "table": name, "write": 50, "hold_minutes": 5},
        "release": {"action": "release", "table": name, "id": kept.id, "token": kept.token},
        "restore": {"action": "restore"},
    }
    answer = serve(events[where], config, clients=world.clients, store=world.store)
    # THEN it is gone, logged and counted once as HoldsDropped (alarmed)
    assert answer["ok"] is True
    assert counted(capsys.readouterr().out, "HoldsDropped") == 1
    assert all(s.malformed == () for s in world.store.table(name))
    logged = [f for r in caplog.records if (f := event_fields(r)) and f["event"] == "holds-dropped"]
    assert logged and all("junk" in str(f) for f in logged)


NOT_MAPS = [{"S": "garbage"}, {"L": [{"M": {"units": {"N": "5"}}}]}, {"NULL": True}]
"""``holds`` attributes that are not a map: no component writes them."""


@pytest.mark.parametrize("holds", NOT_MAPS, ids=["string", "list", "null"])
@pytest.mark.parametrize("where", ["request", "restore"])
def test_a_holds_attribute_that_is_not_a_map_is_malformed_never_no_holds(
    world: World,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    where: str,
    holds: dict[str, Any],
) -> None:
    # GIVEN a dimension a hold raised from 50 to 100, whose item's holds were then
    # overwritten by something that is not a map
    name = world.table("NotAMap", 10, 50, tagged=False)
    request_capacity(name, write=100, clients=world.clients, store=world.store)
    assert world.throughput(name) == (10, 100)
    world.store_ddb.update_item(
        TableName=world.store.name,
        Key={"pk": {"S": name}, "sk": {"S": "table:write"}},
        UpdateExpression="SET holds = :h",
        ExpressionAttributeValues={":h": holds},
    )
    # THEN a reader takes it for one malformed hold, not for no holds
    state = stored(world, name)[(None, "write")]
    assert (state.holds, state.malformed) == ((), ("(holds: not a map)",))
    # AND the broker's next write of the dimension drops it, counted once (alarmed), and
    # lowers nothing on it: what it held is not known
    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_NAME", "the-broker")
    capsys.readouterr()
    events: dict[str, dict[str, Any]] = {
        "request": {"action": "request", "table": name, "write": 50, "hold_minutes": 5},
        "restore": {"action": "restore"},
    }
    config = BrokerConfig({name: frozenset()})
    answer = serve(events[where], config, clients=world.clients, store=world.store)
    assert answer["ok"] is True
    assert counted(capsys.readouterr().out, "HoldsDropped") == 1
    assert all(s.malformed == () for s in world.store.table(name))
    assert world.throughput(name) == (10, 100)


def test_a_malformed_hold_dropped_in_a_users_process_is_logged_not_printed(
    world: World,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    # GIVEN a malformed hold, and a request made in a process of the user's (direct mode)
    name = world.table("Direct", 10, 50, tagged=False)
    request_capacity(name, write=100, clients=world.clients, store=world.store)
    forge_hold(world, name)
    monkeypatch.delenv("AWS_LAMBDA_FUNCTION_NAME", raising=False)
    capsys.readouterr()
    request_capacity(name, write=50, clients=world.clients, store=world.store)
    # THEN the drop is logged, and nothing is written among the program's own output
    assert capsys.readouterr().out == ""
    assert [
        f["by"] for r in caplog.records if (f := event_fields(r)) and f["event"] == "holds-dropped"
    ] == ["capacity request"]


def test_an_ender_that_read_before_another_ended_the_holds_does_nothing_again(
    world: World,
) -> None:
    # GIVEN an expired hold, and what one ender (a scaler's tick) read of the store
    name = world.table("Twice", 10, 50, tagged=False)
    request_capacity(
        name, write=100, hold=timedelta(minutes=1), clients=world.clients, store=world.store
    )
    stale = world.store.table(name)
    # WHEN another ender (the broker's restore) ends it first, then the first goes on with
    # its read
    first = restore_expired(name, clients=world.clients, store=world.store, clock=later(5))
    again = restore_expired(
        name, clients=world.clients, store=world.store, clock=later(5), held=stale
    )
    # THEN the second, reading the item again under the lease, has nothing left to end:
    # no row (a dropped hold is never told, nor counted, twice)
    assert [r["status"] for r in first] == ["applied"]
    assert again == []


def test_expiry_moves_an_auto_scaled_gsis_minimum_back(world: World) -> None:
    name = world.table("GsiTarget", 10, 10, gsi=(20, 20), tagged=False)
    world.target(name, "read", 20, 5_000, index="byUser")
    request_capacity(
        name,
        index="byUser",
        read=700,
        hold=timedelta(minutes=2),
        clients=world.clients,
        store=world.store,
    )
    assert world.target_min(name, "read", "byUser") == 700
    # The restorer names no index: it must still see the GSI's scalable target, and move
    # its minimum back rather than lowering the index's capacity with UpdateTable.
    (row,) = restore_expired(name, clients=world.clients, store=world.store, clock=later(5))
    assert (row["index"], row["via"], row["from"], row["to"], row["status"]) == (
        "byUser",
        "scalable-target",
        700,
        20,
        "applied",
    )
    assert world.target_min(name, "read", "byUser") == 20
    assert world.throughput(name, "byUser") == (700, 20)  # auto scaling scales in itself
    assert stored(world, name) == {}


def test_release_by_id_from_another_process(world: World) -> None:
    name = world.table("ById", 10, 10, tagged=False)
    hold = request_capacity(name, read=90, clients=world.clients, store=world.store)
    other = request_capacity(name, read=10, clients=world.clients, store=world.store)
    # an unknown id, or a token not its own: refused, naming no other hold
    for ident, token in (("nope", None), (hold.id, other.token), (hold.id, "")):
        with pytest.raises(CapacityRequestError) as refused:
            release_hold(name, ident, token=token, clients=world.clients, store=world.store)
        assert str(refused.value) == (
            f"id and token: table '{name}' has no hold '{ident}' with that token"
        )
        assert other.id not in str(refused.value)
    (row,) = release_hold(name, hold.id, token=hold.token, clients=world.clients, store=world.store)
    assert (row["from"], row["to"]) == (100, 10)  # the other hold: 10 over no traffic


def test_a_failed_release_never_stands_in_for_the_works_own_error(
    world: World, caplog: pytest.LogCaptureFixture
) -> None:
    # GIVEN two holds whose release will fail: their hold store is gone
    name = world.table("Lost", 10, 10, tagged=False)
    failing = request_capacity(name, read=90, clients=world.clients, store=world.store)
    quiet = request_capacity(name, read=10, clients=world.clients, store=world.store)
    world.store_ddb.delete_table(TableName=world.store.name)
    # WHEN the work under the first raises THEN its own error is the one raised, and the
    # failed release is logged
    with pytest.raises(ValueError, match="the work failed"), failing:
        raise ValueError("the work failed")
    assert "hold-release-failed" in caplog.text
    # AND when the work went well, the failed release is raised, naming the store
    with pytest.raises(HoldStoreMissing, match=r"^hold store \S+: no such table in this"), quiet:
        pass


def test_a_hold_recorded_before_tokens_is_released_by_no_token(world: World) -> None:
    # GIVEN a hold recorded without a token's digest (as before tokens)
    name = world.table("NoToken", 10, 10, tagged=False)
    expires = (datetime.now(UTC) + timedelta(hours=1)).replace(microsecond=0)
    with world.store.lease(name, None, "read", deadline=time.time() + 5) as lease:
        lease.write(10, [Hold("0123456789ab", None, "read", 90, expires, 0)])
    # THEN no token opens it: a release by id with one is refused as for a wrong token
    for token in (new_token(), ""):
        with pytest.raises(CapacityRequestError) as refused:
            release_hold(
                name, "0123456789ab", token=token, clients=world.clients, store=world.store
            )
        assert str(refused.value) == (
            f"id and token: table '{name}' has no hold '0123456789ab' with that token"
        )
    (held,) = world.store.table(name)
    assert [h.id for h in held.holds] == ["0123456789ab"]  # still held, to end at its expiry


def test_a_request_holds_for_15_minutes_unless_told(world: World) -> None:
    name = world.table("Default", 10, 10, tagged=False)
    before = time.time()
    hold = request_capacity(name, write=100, clients=world.clients, store=world.store)
    after = time.time()
    # the expiry is the request's time plus 15 minutes, up to the next whole second
    assert math.ceil(before + 900) <= hold.expires.timestamp() <= math.ceil(after + 900)


# ------------------------------------------------------------------ refusals


def test_a_request_above_the_targets_max_is_refused_and_withdrawn(world: World) -> None:
    name = world.table("OverMax", 10, 100, tagged=False)
    world.target(name, "write", 100, 5_000)
    with pytest.raises(
        CapacityRequestError,
        match="write: the request needs a minimum of "
        "9,000 but the scalable target of table "
        "has a max of 5,000",
    ):
        request_capacity(name, write=9_000, clients=world.clients, store=world.store)
    assert world.target_min(name, "write") == 100
    assert stored(world, name) == {}


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"table": "t"}, "table: got 't'; expected a table name"),
        (
            {"write": -1},
            "write: got -1; expected a whole number of capacity units from 0 to 40,000",
        ),
        ({"read": 2.5}, "read: got 2.5; expected a whole number"),
        ({"write": True}, "write: got True"),
        ({"read": 0, "write": 0}, "read and write: got 0 and 0"),
        (
            {"hold": timedelta(seconds=30)},
            "hold: got datetime.timedelta(seconds=30); expected a timedelta from 1 minute to 1 day",
        ),
        ({"hold": 15}, "hold: got 15; expected a timedelta"),
        ({"timeout": timedelta(seconds=-1)}, "timeout: got "),
        ({"store": ""}, "store: got '' and no CAPACITY_HOLDS_TABLE; name the hold store table"),
    ],
)
def test_bad_input_names_the_field_and_value(
    kwargs: dict[str, Any], message: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CAPACITY_HOLDS_TABLE", raising=False)
    args: dict[str, Any] = {"table": "Orders", "write": 10, "store": "holds", **kwargs}
    with pytest.raises(CapacityRequestError) as info:
        request_capacity(args.pop("table"), **args)
    assert message in str(info.value)


def test_unknown_table_index_and_on_demand_are_clear_errors(world: World) -> None:
    with pytest.raises(CapacityRequestError, match="table: got 'NoSuchTable'; no such table"):
        request_capacity("NoSuchTable", write=1, clients=world.clients, store=world.store)
    name = world.table("Idx", 10, 10, gsi=(5, 5), tagged=False)
    with pytest.raises(CapacityRequestError, match=f"index: got 'Nope'; table {name} has byUser"):
        request_capacity(name, index="Nope", write=1, clients=world.clients, store=world.store)
    od = world.name("OnDemand")
    world.ddb.create_table(
        TableName=od,
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
    )
    with pytest.raises(CapacityRequestError, match=f"table: {od} is on-demand"):
        request_capacity(od, write=1, clients=world.clients, store=world.store)
    assert stored(world, name) == {}


# ------------------------------------------------------------------ Stubber: what moto never does


def _raise_sent(stub: Any) -> None:
    """A request's reads up to its raise of "Orders", sent: the first read, the read in the
    lease, the read again before the update, the update."""
    _described(stub)
    _described(stub)
    stub.add_response("describe_table", _table())
    stub.add_response("update_table", {"TableDescription": {"TableName": "Orders"}})


def request_in_15_seconds(clients: Clients, store: HoldStore, clock: FakeClock) -> None:
    """A request of 500 write units on "Orders" that times out after 15 s of ``clock``."""
    request_capacity(
        "Orders",
        write=500,
        timeout=timedelta(seconds=15),
        clients=clients,
        store=store,
        clock=clock,
        sleep=clock.sleep,
    )


@pytest.mark.parametrize("withdrawn", [True, False])
def test_a_table_that_stays_updating_times_out_and_withdraws_the_hold(
    stubbed: Any, withdrawn: bool
) -> None:
    # GIVEN a request on a table that stays UPDATING (in the lease, then at 5, 10, 15 s;
    # timeout 15 s), and, unless ``withdrawn``, a hold store whose reads fail when the hold
    # is withdrawn
    stub, clients, store = stubbed
    clock = FakeClock()
    _described(stub)
    for _ in range(4):
        stub.add_response("describe_table", _table("UPDATING"))

    def down(**_: Any) -> None:
        raise ClientError({"Error": {"Code": "InternalServerError", "Message": "x"}}, "Query")

    if not withdrawn:
        store.dynamodb.meta.events.register("before-parameter-build.dynamodb.Query", down)
    # WHEN it is made
    with pytest.raises(CapacityRequestTimeout if withdrawn else CapacityRequestFailed) as error:
        request_in_15_seconds(clients, store, clock)
    # THEN it times out, the hold withdrawn: nothing held, nothing left behind; or, when the
    # hold could not be withdrawn, the caller is told of the timeout and of the hold left,
    # as a failure (through a broker: its invocation fails, alarmed)
    assert "table Orders: still busy (status UPDATING)" in str(error.value)
    if withdrawn:
        assert store.table("Orders") == []
    else:
        assert f"withdrawing its hold {HOLD_ID} failed (InternalServerError" in str(error.value)
        assert isinstance(error.value.__cause__, CapacityRequestTimeout)


def test_a_timeout_after_its_raise_whose_hold_stays_is_a_failure_that_says_so(
    stubbed: Any,
) -> None:
    # GIVEN a request whose raise is sent, and a table that stays UPDATING past the
    # timeout, still UPDATING when the hold is to be withdrawn (it cannot be lowered yet)
    stub, clients, store = stubbed
    clock = FakeClock()
    _raise_sent(stub)
    for _ in range(5):  # waiting until ACTIVE, then the withdrawal's read
        stub.add_response("describe_table", _table("UPDATING", write=510))
    # WHEN it is made
    with pytest.raises(CapacityRequestFailed) as failed:
        request_in_15_seconds(clients, store, clock)
    # THEN the caller is told the hold stays (a restore ends it), as a failure: never a
    # timeout that says it was withdrawn
    assert f"its hold {HOLD_ID} could not be withdrawn yet" in str(failed.value)
    assert isinstance(failed.value.__cause__, CapacityRequestTimeout)
    assert [h.id for s in store.table("Orders") for h in s.holds] == [HOLD_ID]


def test_resource_in_use_is_waited_out_and_a_refused_raise_is_reported(stubbed: Any) -> None:
    stub, clients, store = stubbed
    clock = FakeClock()
    start = clock.t
    _described(stub)
    # Round 1: the hold is recorded; another update is in flight.
    _described(stub)
    stub.add_response("describe_table", _table())  # read again just before the update
    stub.add_client_error("update_table", "ResourceInUseException", "Table is being updated")
    _described(stub)  # waiting until ACTIVE
    # Round 2: the account's limit refuses the raise.
    _described(stub)
    stub.add_response("describe_table", _table())
    stub.add_client_error(
        "update_table",
        "LimitExceededException",
        "Subscriber limit exceeded: Provisioned throughput can not exceed the account limit",
    )
    # Withdrawn: nothing had been raised.
    _described(stub)
    with pytest.raises(
        CapacityRequestError,
        match="table Orders table write: raising to 500 "
        "failed: LimitExceededException: "
        "Subscriber limit exceeded",
    ):
        request_capacity(
            "Orders", write=500, clients=clients, store=store, clock=clock, sleep=clock.sleep
        )
    assert clock.t >= start + 5  # it waited a poll interval after ResourceInUse
    assert not any(s.holding for s in store.table("Orders"))


def test_an_exhausted_decrease_quota_keeps_the_hold_for_the_next_restore(stubbed: Any) -> None:
    stub, clients, store = stubbed
    clock = FakeClock()
    expired = Hold(HOLD_ID, None, "write", 490, datetime.fromtimestamp(clock.t - 60, UTC), 10)
    with store.lease("Orders", None, "write", deadline=time.time() + 5) as lease:
        lease.write(10, [expired])
    _described(stub, _table(write=500, decreases=27))
    # No update_table: the stub fails the test if it is called.
    (row,) = restore_expired("Orders", clients=clients, store=store, clock=clock)
    assert (row["status"], row["from"], row["to"]) == ("quota-exceeded", 500, 10)
    assert [h.id for h in store.table("Orders")[0].holds] == [HOLD_ID]


@pytest.mark.parametrize("status", ["UPDATING", "INACCESSIBLE_ENCRYPTION_CREDENTIALS"])
def test_a_restore_that_finds_its_table_not_active_keeps_the_hold_and_counts_it(
    stubbed: Any, capsys: pytest.CaptureFixture[str], status: str
) -> None:
    # GIVEN an expired hold on a table that is not ACTIVE
    stub, clients, store = stubbed
    expired = Hold(HOLD_ID, None, "write", 490, datetime.now(UTC) - timedelta(minutes=1), 10)
    with store.lease("Orders", None, "write", deadline=time.time() + 5) as lease:
        lease.write(10, [expired])
    stub.add_response("describe_table", _table(status=status, write=500))
    # WHEN the broker's restore runs (no update_table: the stub fails the test if it is called)
    out = restorer_module.restore_tables(["Orders"], clients=clients, store=store)
    # THEN the hold stays for a later restore, not a failure of this one, and it is counted
    (row,) = out["restored"]
    assert row["status"] == "busy" and out["failed"] == []
    assert [h.id for h in store.table("Orders")[0].holds] == [HOLD_ID]
    assert counted(capsys.readouterr().out, "HoldsBusy") == 1


# ------------------------------------------------------------------ the store


def test_holds_add_up_and_out_of_bounds_ones_are_malformed(world: World) -> None:
    expires = datetime.now(UTC) + timedelta(hours=1)
    holds = [
        Hold("a1", "byUser", "read", 300, expires.replace(microsecond=0), 80),
        Hold("b2", "byUser", "read", 200, expires.replace(microsecond=0), 120),
    ]
    with world.store.lease("t1", "byUser", "read", deadline=time.time() + 5) as lease:
        lease.write(50, holds)
    for ident, units, until in (
        ("c", "10000000", str(int(expires.timestamp()))),  # more than the quota
        ("d", "10", "1795262400000"),  # year 58860
        ("e", "10", str(int(expires.timestamp()) + 2 * 86400)),  # after the longest hold
        ("f", "-5", "0"),
    ):
        world.store_ddb.update_item(
            TableName=world.store.name,
            Key={"pk": {"S": "t1"}, "sk": {"S": "index/byUser:read"}},
            UpdateExpression=f"SET holds.{ident} = :h",
            ExpressionAttributeValues={
                ":h": {
                    "M": {"units": {"N": units}, "expires": {"N": until}, "baseline": {"N": "0"}}
                }
            },
        )
    (state,) = world.store.table("t1")
    assert (state.base, list(state.holds), sorted(state.malformed)) == (
        50,
        holds,
        ["c", "d", "e", "f"],
    )
    assert level(holds) == 80 + 300 + 200
    assert level([]) == 0


def test_a_release_after_a_smaller_hold_expired_under_less_traffic_lowers_to_the_base(
    world: World,
) -> None:
    # GIVEN a target's minimum raised by a hold of +100 over 50 units of traffic, which
    # expires, then by a hold of +500 over 1,000 units of traffic (the minimum at 1,550)
    name, now, kw = targeted_with_a_clock(world, "Baselines")
    store = kw["store"]
    request_capacity(name, write=100, hold=timedelta(minutes=1), **kw)
    now[0] += 120
    world.traffic(name, "write", 1000)
    second = request_capacity(name, write=500, hold=timedelta(minutes=30), **kw)
    assert world.target_min(name, "write") == 1550
    # WHEN the second is released before the restorer ends the first
    (row,) = second.release()
    # THEN the minimum the library set is its own to lower: back to the base at once (the
    # two holds' level at the first's baseline, 650, is below it)
    assert (row["status"], row["from"], row["to"]) == ("applied", 1550, 100)
    restore_expired(name, store=store, clients=world.clients, clock=lambda: now[0])
    assert world.target_min(name, "write") == 100


def test_a_longest_hold_made_by_a_clock_ahead_within_the_skew_is_well_formed(
    world: World,
) -> None:
    # GIVEN a hold as long as the store allows, made by a writer whose clock is 170 s ahead
    # (two writers' clocks may be up to `CLOCK_SKEW` apart: each within 90 s of the time)
    bounds = HoldLimits(max_hold=timedelta(minutes=60))
    name = world.table("Ahead", 10, 50, tagged=False)

    def made(seconds_ahead: float) -> str:
        def clock() -> float:
            return time.time() + seconds_ahead

        store = replace(world.store, limits=bounds, clock=clock)
        hold = request_capacity(
            name,
            write=100,
            hold=timedelta(minutes=60),
            clients=world.clients,
            store=store,
            clock=clock,
        )
        return hold.id

    first = made(170)
    # WHEN a reader with the right time reads it, under the same bounds
    (state,) = replace(world.store, limits=bounds).table(name)
    # THEN it is the hold as made, not a malformed one (which an ending would drop)
    assert ([h.id for h in state.holds], state.malformed) == ([first], ())
    # and one made further ahead than the skew explains is malformed
    second = made(CLOCK_SKEW.total_seconds() + 30)
    (state,) = replace(world.store, limits=bounds).table(name)
    assert ([h.id for h in state.holds], state.malformed) == ([first], (second,))


def test_the_lease_is_exclusive_and_runs_out(world: World) -> None:
    clock = FakeClock()
    store = HoldStore(world.store_ddb, world.store.name, clock=clock)
    with (
        store.lease("t2", None, "write", deadline=clock.t + 5),
        pytest.raises(CapacityRequestTimeout, match="kept the hold store busy"),
    ):
        with store.lease("t2", None, "write", deadline=clock.t + 5, sleep=clock.sleep):
            pass
    # A lease left by a process that died runs out (once the skew tolerated has passed too)
    abandoned = store.lease("t2", None, "read", deadline=clock.t + 5)
    left = abandoned.__enter__()
    clock.t += (LEASE + CLOCK_SKEW).total_seconds() + 1
    with store.lease("t2", None, "read", deadline=clock.t + 5) as lease:
        assert lease.version == left.version + 1  # the fencing token only grows
        lease.write(10, [])
    assert not any(s.holding for s in store.table("t2"))
    # and the process that had it can change nothing any more
    with pytest.raises(CapacityRequestError, match="the hold store's lease ran out"):
        left.write(20, [])
    abandoned.__exit__(None, None, None)  # nothing to give back: it is another's now
    assert store.get("t2", None, "read").base == 10  # type: ignore[union-attr]


def test_the_restorers_event_has_the_broker_end_expired_holds_on_its_tables(
    moto_world: World, aws_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for key, value in aws_env.items():
        monkeypatch.setenv(key, value)
    name = moto_world.table("Restorer", 10, 40, tagged=False)
    moto_world.ddb.update_table(
        TableName=name, ProvisionedThroughput={"ReadCapacityUnits": 10, "WriteCapacityUnits": 640}
    )
    gone = Hold("deadworker01", None, "write", 600, datetime.now(UTC) - timedelta(minutes=1), 40)
    with moto_world.store.lease(name, None, "write", deadline=time.time() + 5) as lease:
        lease.write(40, [gone])
    monkeypatch.setenv("CAPACITY_HOLDS_TABLE", moto_world.store.name)
    monkeypatch.setenv("CAPACITY_SCOPES", json.dumps([{"table": name}]))
    # the restorer's rule sends the broker this event, which restores the tables it serves
    out = broker_handler({"action": "restore"}, None)
    assert out == {
        "ok": True,
        "restored": [
            {
                "table": name,
                "index": None,
                "dimension": "write",
                "via": "update-table",
                "from": 640,
                "to": 40,
                "status": "applied",
            }
        ],
        "failed": [],
    }
    assert moto_world.throughput(name) == (10, 40)
    assert stored(moto_world, name) == {}
    # a restore that fails raises: the run fails, counted in the broker's Errors
    monkeypatch.setenv("CAPACITY_HOLDS_TABLE", "NoSuchStore")
    with pytest.raises(RuntimeError, match="restoring holds failed: reading the hold store No"):
        broker_handler({"action": "restore"}, None)


def test_after_a_hold_and_a_scaler_raise_the_minimum_comes_back_to_the_base(
    world: World,
) -> None:
    # GIVEN a hold raising the write minimum from 100 to 2,000
    name, _ = write_held(world, "HoldThenRaise", 100, 2_000, minutes=5)
    # WHEN the work is throttled and the scaler raises the minimum further
    world.traffic(name, "write", 2_000)
    world.traffic(name, "write", 0, throttles=60_000, minutes=range(1, 3))
    world.tick(world.now + timedelta(minutes=1), SCALER_TABLES=name, SCALER_TAG_KEY="")
    raised = world.target_min(name, "write")
    assert raised > 2_000
    # it remembers the holds' base, not the hold's level, as the base of its own raise
    assert world.memory(name, "write") == f"100:{raised}"
    # AND the hold expires (the scaler's raise is kept) and a later calm tick comes
    world.tick(world.now + timedelta(minutes=7), SCALER_TABLES=name, SCALER_TAG_KEY="")
    assert world.target_min(name, "write") == raised
    assert [(s.holds, s.set_to) for s in world.store.table(name)] == [((), raised)]
    world.traffic(name, "write", 5, minutes=range(-44, -28))
    world.tick(world.now + timedelta(minutes=45), SCALER_TABLES=name, SCALER_TAG_KEY="")
    # THEN the minimum is the base again, not the hold's level
    assert world.target_min(name, "write") == 100


def test_a_throttle_raise_then_a_hold_come_back_to_the_base_in_calm_traffic(
    world: World,
) -> None:
    # GIVEN a table at write 100 whose target runs 100 to 10,000
    name = world.table("RaiseThenHold", 10, 100)
    world.target(name, "write", 100, 10_000)
    # WHEN a tick meets throttles (the scaler raises the minimum to 215), a direct request
    # holds 1,000 more for 30 minutes, and a tick follows
    world.traffic(name, "write", 100, throttles=3_000)
    world.tick()
    assert world.target_min(name, "write") == 215
    request_capacity(
        name,
        write=1_000,
        hold=timedelta(minutes=30),
        store=world.store,
        clients=world.clients,
        poll_seconds=0.01,
    )
    world.tick()
    assert world.target_min(name, "write") == 1_320
    # AND the traffic is calm (10 units/s) for the 20 minutes before each later tick
    for minutes in (60, 90, 120):
        now = world.now + timedelta(minutes=minutes)
        put_traffic(
            world.cw, name, "write", 10, end=now - timedelta(minutes=2), minutes=range(1, 21)
        )
        world.tick(now)
        # THEN from the first tick after the hold expired on, the minimum is the base
        assert world.target_min(name, "write") == 100, minutes


def test_the_restorer_fails_one_table_alone_and_drops_holds_that_can_do_nothing(
    world: World, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a broker whose hold store is the world's (as its function's environment names it)
    monkeypatch.setenv("CAPACITY_HOLDS_TABLE", world.store.name)
    # AND expired holds on two real tables, on a table that no longer exists, and on a
    # table the broker no longer serves; DescribeTable fails for one of the real tables
    gone = datetime.now(UTC) - timedelta(minutes=1)
    names = [world.table(f"Restore{i}", 10, 40, tagged=False) for i in range(2)]
    left = world.table("LeftScope", 10, 40, tagged=False)
    switched = world.table("OnDemandNow", 10, 40, tagged=False)
    ghost = world.name("Ghost")
    for name in [names[0], ghost, names[1], left, switched]:
        if name != ghost:
            world.ddb.update_table(
                TableName=name,
                ProvisionedThroughput={"ReadCapacityUnits": 10, "WriteCapacityUnits": 640},
            )
        with world.store.lease(name, None, "write", deadline=time.time() + 5) as lease:
            lease.write(40, [Hold(f"dead{name[-4:]}", None, "write", 600, gone, 40)])

    def fail_one(params: dict[str, Any], **_: Any) -> None:
        if params.get("TableName") == names[1]:
            raise ClientError(
                {"Error": {"Code": "InternalServerError", "Message": "try again"}},
                "DescribeTable",
            )

    world.ddb.update_table(TableName=switched, BillingMode="PAY_PER_REQUEST")
    world.ddb.meta.events.register("before-parameter-build.dynamodb.DescribeTable", fail_one)
    config = BrokerConfig({t: frozenset() for t in [names[0], ghost, names[1], switched]})
    try:
        # WHEN the broker restores THEN it fails, naming the one faulty table
        with pytest.raises(RuntimeError, match="restoring holds failed on 1 table") as caught:
            serve({"action": "restore"}, config, clients=world.clients, store=world.store)
    finally:
        world.ddb.meta.events.unregister("before-parameter-build.dynamodb.DescribeTable", fail_one)
    assert names[1] in str(caught.value) and names[0] not in str(caught.value)
    # AND the healthy table was restored; the faulty table's hold is left for the next run
    assert world.throughput(names[0]) == (10, 40) and stored(world, names[0]) == {}
    assert [h.id for h in world.store.table(names[1])[0].holds] == [f"dead{names[1][-4:]}"]
    # AND the holds of the deleted table, of the table gone on-demand and of the table out
    # of scope are dropped (the broker may not change a table it no longer serves: it
    # stays where the hold left it)
    assert stored(world, ghost) == {} and stored(world, switched) == {}
    assert stored(world, left) == {} and world.throughput(left) == (10, 640)
    # AND counted: three dimensions dropped, for the broker's deployment (dimension
    # StateStore, its hold store), which its CapacityRequests alarms on alone
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    (dropped,) = [r for r in records if "HoldsDropped" in r]
    assert (dropped["HoldsDropped"], dropped["StateStore"]) == (3, world.store.name)
    (group,) = dropped["_aws"]["CloudWatchMetrics"]
    assert (group["Namespace"], group["Dimensions"]) == ("DynamoDBCapacity", [["StateStore"]])


def test_a_scaler_raise_a_hold_and_a_raise_during_it_never_lose_the_configured_minimum(
    world: World,
) -> None:
    # GIVEN a write minimum of 100 that the scaler raised for throttling (memory 100:<set>)
    name = world.table("RaiseHoldRaise", 10, 100, tagged=False)
    world.target(name, "write", 100, 10_000)
    world.traffic(name, "write", 100)
    world.traffic(name, "write", 0, throttles=3_000, minutes=range(1, 3))
    world.tick(SCALER_TABLES=name, SCALER_TAG_KEY="", SCALER_MODE="reactive")
    first = world.target_min(name, "write")
    assert first > 100
    assert world.memory(name, "write") == f"100:{first}"
    # AND a capacity request holds it higher, on top of that raise
    hold = request_capacity(
        name, write=1_000, hold=timedelta(minutes=5), clients=world.clients, store=world.store
    )
    held = world.target_min(name, "write")
    assert held > first
    # WHEN the work is throttled and the scaler raises again during the hold
    world.traffic(name, "write", held)
    world.traffic(name, "write", 0, throttles=120_000, minutes=range(1, 3))
    world.tick(
        world.now + timedelta(minutes=1),
        SCALER_TABLES=name,
        SCALER_TAG_KEY="",
        SCALER_MODE="reactive",
    )
    raised = world.target_min(name, "write")
    assert raised > held
    # THEN its memory keeps the configured minimum, not the minimum the hold started from
    assert world.memory(name, "write") == f"100:{raised}"
    # AND after the release (the scaler's raise is kept) and a calm spell, the minimum is
    # the configured one again
    hold.release()
    assert world.target_min(name, "write") == raised
    assert [(s.holds, s.set_to) for s in world.store.table(name)] == [((), raised)]
    world.traffic(name, "write", 5, minutes=range(-44, -28))
    world.tick(
        world.now + timedelta(minutes=45),
        SCALER_TABLES=name,
        SCALER_TAG_KEY="",
        SCALER_MODE="reactive",
    )
    assert world.target_min(name, "write") == 100


def test_a_minimum_an_operator_raised_during_a_hold_stays_and_is_the_new_base(
    world: World,
) -> None:
    # GIVEN a hold raising the write minimum from 100 to 1,000
    name = world.table("OperatorAbove", 10, 100, tagged=False)
    world.target(name, "write", 100, 10_000)
    hold = request_capacity(name, write=1_000, clients=world.clients, store=world.store)
    assert world.target_min(name, "write") == 1_000
    # WHEN an operator sets it to 1,500, and the hold is released
    world.aas.register_scalable_target(
        ServiceNamespace="dynamodb",
        ResourceId=f"table/{name}",
        ScalableDimension="dynamodb:table:WriteCapacityUnits",
        MinCapacity=1_500,
    )
    (row,) = hold.release()
    # THEN the operator's minimum stands, and nothing of the library's is remembered (a
    # later minimum of 1,000 would otherwise read as the library's)
    assert row["status"] == "unchanged" and world.target_min(name, "write") == 1_500
    assert not any(s.holding for s in world.store.table(name))


def test_the_restore_drops_holds_only_never_a_scalers_memory_or_plan(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a store shared with a connected scaler: a table the broker does not serve with
    # only the scaler's memory of a raised minimum, and another with only a plan
    remembered = world.table("Remembered", 10, 40, tagged=False)
    planned = world.table("Planned", 10, 40, tagged=False)
    with world.store.lease(remembered, None, "write", deadline=time.time() + 5) as lease:
        lease.write(40, set_to=640)
    world.set_plan(planned, "write", "29000000:70:0:0:500")
    before = {t: world.store.table(t) for t in (remembered, planned)}
    # WHEN the broker restores the tables it serves (neither of them)
    config = BrokerConfig({world.table("Served", 10, 40, tagged=False): frozenset()})
    answer = serve({"action": "restore"}, config, clients=world.clients, store=world.store)
    # THEN nothing of the scaler's is touched, and nothing is counted as dropped
    assert answer == {"ok": True, "restored": [], "failed": []}
    assert {t: world.store.table(t) for t in (remembered, planned)} == before
    assert "HoldsDropped" not in capsys.readouterr().out


def test_every_state_store_call_is_one_the_roles_may_make(world: World) -> None:
    """moto and dynalite check no IAM: the calls the run-time makes on the state store are
    recorded and checked against the actions the constructs grant on it: the scaler's
    (`STORE_ACTIONS`), and the broker's and the restorer's (`HOLD_STORE_ACTIONS`, no
    delete)."""
    from constructs_pkg.common._iam_statements import HOLD_STORE_ACTIONS, STORE_ACTIONS

    calls: dict[str, set[str]] = {"scaler": set(), "requests": set()}
    role = ["requests"]

    def record(**kwargs: Any) -> None:
        calls[role[0]].add(kwargs["model"].name)

    world.store_ddb.meta.events.register("before-call.dynamodb", record)
    try:
        name = world.table("Granted", 10, 100, tags={base_min_tag(None, "write"): "100:150"})
        world.target(name, "write", 150, 10_000)
        world.traffic(name, "write", 50, throttles=6_000, minutes=range(1, 3))
        hold = request_capacity(name, write=500, clients=world.clients, store=world.store)
        role[0] = "scaler"
        world.tick(SCALER_TABLES=name, SCALER_TAG_KEY="")
        role[0] = "requests"
        hold.release()
        restore_expired(name, clients=world.clients, store=world.store)
        release_hold(name, hold.id, token=hold.token, clients=world.clients, store=world.store)
    except CapacityRequestError:
        pass  # the second release finds no hold: refused, as it should be
    finally:
        world.store_ddb.meta.events.unregister("before-call.dynamodb", record)
    for who, actions in (("scaler", STORE_ACTIONS), ("requests", HOLD_STORE_ACTIONS)):
        made = calls[who] - {"CreateTable", "DescribeTable"}
        assert made, who  # the store was used
        assert made <= {a.split(":", 1)[1] for a in actions}, (who, made)


def test_a_hold_a_failed_request_withdraws_from_a_table_deleted_meanwhile_is_counted(
    stubbed: Any,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    # GIVEN a request, in the broker (a Lambda function), whose raise is sent to a table
    # that stays UPDATING past its timeout, and is deleted before its hold is withdrawn
    stub, clients, store = stubbed
    clock = FakeClock()
    _raise_sent(stub)
    for _ in range(4):  # waiting until ACTIVE
        stub.add_response("describe_table", _table("UPDATING", write=510))
    stub.add_client_error("describe_table", "ResourceNotFoundException", "Table not found")
    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_NAME", "the-broker")
    capsys.readouterr()
    # WHEN it times out and withdraws its hold
    with pytest.raises(CapacityRequestTimeout):
        request_in_15_seconds(clients, store, clock)
    # THEN the hold, dropped without lowering anything, is logged and counted as
    # HoldsDropped (alarmed), as the broker's release and restore count theirs
    assert [h for s in store.table("Orders") for h in s.holds] == []
    assert counted(capsys.readouterr().out, "HoldsDropped") == 1
    logged = [f for r in caplog.records if (f := event_fields(r)) and f["event"] == "holds-dropped"]
    assert logged and "no such table" in str(logged)
