"""A release that finds its table being updated (another request's raise, another release of
the same table) waits for it to be ACTIVE and tries once more; a dimension a release could
not lower, in direct mode as through a broker, is an error its holder is told, never a
success with the capacity still raised. DynamoDB's UPDATING status and its decrease quota
are what moto never answers: the table's client is botocore's Stubber, the hold store moto."""

from __future__ import annotations

import dataclasses
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from ddb_capacity_runtime.aws.hold_table import Context
from ddb_capacity_runtime.core.hold_requests import DEFAULT_TIMEOUT, new_token
from ddb_capacity_runtime.core.holds import Hold, token_digest
from ddb_capacity_runtime.requests import (
    CapacityHold,
    CapacityRequestError,
    CapacityRequestFailed,
    release_hold,
    request_capacity,
)
from ddb_capacity_runtime.requests.broker import BrokerConfig, serve
from ddb_capacity_runtime.requests.ending import RELEASE_WAIT
from tests.support.capacity_requests import (  # noqa: F401
    HOLD_ID,
    FakeClock,
    _described,
    _table,
    stubbed,
)

UPDATE = {"TableDescription": {"TableName": "Orders"}}


def _held(store: Any, token: str) -> None:
    """A hold of 490 write units on "Orders" (base 10), for the next hour."""
    until = datetime.now(UTC) + timedelta(hours=1)
    hold = Hold(HOLD_ID, None, "write", 490, until, 10, token_digest(token))
    with store.lease("Orders", None, "write", deadline=time.time() + 5) as lease:
        lease.write(10, [hold])


def _holds(store: Any) -> list[str]:
    return [h.id for s in store.table("Orders") for h in s.holds]


def test_a_release_that_finds_its_table_updating_waits_for_it_and_lowers(stubbed: Any) -> None:  # noqa: F811
    stub, clients, store = stubbed
    clock = FakeClock()
    start, token = clock.t, new_token()
    _held(store, token)
    # GIVEN a table being updated when the release reads it, ACTIVE a poll later
    stub.add_response("describe_table", _table("UPDATING", write=500))  # the release's read
    stub.add_response("describe_table", _table("UPDATING", write=500))  # waiting
    _described(stub, _table(write=500))  # ACTIVE again
    _described(stub, _table(write=500))  # the second try's read
    stub.add_response("describe_table", _table(write=500))  # read again before the update
    stub.add_response("update_table", UPDATE)
    # WHEN its holder releases it
    rows = release_hold(
        "Orders", HOLD_ID, token=token, store=store, clients=clients, clock=clock, sleep=clock.sleep
    )
    # THEN it waited, and the decrease was made: one row, the second try's, and no hold left
    assert [(r["status"], r["from"], r["to"]) for r in rows] == [("applied", 500, 10)]
    assert clock.t >= start + 5
    assert _holds(store) == []


def test_a_release_whose_table_stays_updating_raises_and_keeps_the_hold(stubbed: Any) -> None:  # noqa: F811
    stub, clients, store = stubbed
    clock = FakeClock()
    start, token = clock.t, new_token()
    _held(store, token)
    # GIVEN a table that stays UPDATING: the release's read, each poll of its wait, the
    # second try's read
    polls = int(RELEASE_WAIT.total_seconds() // 5) + 1
    for _ in range(1 + polls + 1):
        stub.add_response("describe_table", _table("UPDATING", write=500))
    # WHEN its holder releases it (no update_table: the stub fails the test if one is sent)
    handle = CapacityHold(
        "Orders",
        None,
        HOLD_ID,
        datetime.now(UTC) + timedelta(hours=1),
        [],
        token=token,
        _ctx=Context(clients, clock, clock.sleep, 5.0),
        _store=store,
    )
    with pytest.raises(CapacityRequestFailed) as info:
        handle.release()
    # THEN it is told what stays, after waiting RELEASE_WAIT, and may release it again later
    assert str(info.value) == (
        f"release of hold {HOLD_ID} on Orders: its decrease was not made ('table Orders: "
        "still busy (status UPDATING)'); the hold stays, and the capacity it raised, until a "
        "restore ends it at its expiry"
    )
    assert clock.t >= start + RELEASE_WAIT.total_seconds()
    assert _holds(store) == [HOLD_ID]
    assert handle.released is False


def test_a_direct_release_whose_decrease_quota_is_spent_raises_and_keeps_the_hold(
    stubbed: Any,  # noqa: F811
) -> None:
    stub, clients, store = stubbed
    token = new_token()
    _held(store, token)
    # GIVEN a table whose decreases are spent for the day (no update_table is ever sent)
    _described(stub, _table(write=500, decreases=27))
    # WHEN its holder releases it directly, without a broker
    with pytest.raises(CapacityRequestFailed, match="no decrease allowed now") as info:
        release_hold("Orders", HOLD_ID, token=token, store=store, clients=clients)
    # THEN as through a broker: the release fails, saying the hold and its capacity stay
    assert "the hold stays, and the capacity it raised" in str(info.value)
    assert _holds(store) == [HOLD_ID]


def test_a_broker_release_meeting_another_update_in_flight_tries_again_once_active(
    stubbed: Any,  # noqa: F811
) -> None:
    stub, clients, store = stubbed
    token = new_token()
    _held(store, token)
    # GIVEN a table ACTIVE when the release reads it, being updated by another release of
    # the same table when it is read again before the decrease, and ACTIVE after that
    _described(stub, _table(write=500))
    stub.add_response("describe_table", _table("UPDATING", write=500))
    _described(stub, _table(write=500))  # the wait: ACTIVE at once
    _described(stub, _table(write=500))  # the second try
    stub.add_response("describe_table", _table(write=500))
    stub.add_response("update_table", UPDATE)
    # WHEN a worker releases it through the broker
    event = {"action": "release", "table": "Orders", "id": HOLD_ID, "token": token}
    answer = serve(event, BrokerConfig({"Orders": frozenset()}), clients=clients, store=store)
    # THEN the broker answers the decrease made, and the hold is gone
    assert answer["ok"] is True
    assert [(r["status"], r["to"]) for r in answer["changes"]] == [("applied", 10)]
    assert _holds(store) == []


@pytest.mark.parametrize("table", [5, "", "a", "bad name!"])
def test_a_release_of_no_table_name_is_refused_before_any_call(table: object) -> None:
    # GIVEN a table argument DynamoDB would refuse (direct mode: botocore's own error before)
    # WHEN it is released THEN the library refuses it by name, without a store or a Region
    with pytest.raises(CapacityRequestError, match=r"^table: got .*; expected a table name"):
        release_hold(table, HOLD_ID, token="t" * 32, store="holds")  # type: ignore[arg-type]


def test_a_second_try_whose_lease_is_busy_past_the_deadline_fails_as_a_release_not_made(
    stubbed: Any,  # noqa: F811
) -> None:
    stub, clients, plain = stubbed
    clock = FakeClock()
    store = dataclasses.replace(plain, clock=clock, sleep=clock.sleep)
    token = new_token()
    _held(store, token)
    taken: list[Any] = []

    def sleep(seconds: float) -> None:
        # the table being updated is waited for: meanwhile another writer takes the lease,
        # and the release's own deadline passes
        clock.t += seconds
        if not taken:
            clock.t += DEFAULT_TIMEOUT.total_seconds()
            taken.append(store.lease("Orders", None, "write", deadline=clock()))
            taken[0].__enter__()

    # GIVEN a table being updated at the release's first try, ACTIVE after a poll
    stub.add_response("describe_table", _table("UPDATING", write=500))
    stub.add_response("describe_table", _table("UPDATING", write=500))
    _described(stub, _table(write=500))
    # WHEN its holder releases it, and the second try's lease stays busy
    with pytest.raises(CapacityRequestFailed, match="still busy") as info:
        release_hold(
            "Orders", HOLD_ID, token=token, store=store, clients=clients, clock=clock, sleep=sleep
        )
    # THEN it is a release not made (counted and alarmed through a broker), not a timeout
    # refusal, and the hold stays
    assert type(info.value) is CapacityRequestFailed
    assert _holds(store) == [HOLD_ID]


@pytest.mark.parametrize("status", ["INACCESSIBLE_ENCRYPTION_CREDENTIALS", "ARCHIVED"])
def test_a_request_on_a_table_no_wait_makes_active_is_refused_at_once(
    stubbed: Any,  # noqa: F811
    status: str,
) -> None:
    stub, clients, store = stubbed
    clock = FakeClock()
    start = clock.t
    # GIVEN a table whose KMS key DynamoDB cannot use (or archived): no wait ends it
    stub.add_response("describe_table", _table(status))
    # WHEN a worker asks for capacity, ready to wait 10 minutes
    with pytest.raises(CapacityRequestError) as info:
        request_capacity(
            "Orders", write=500, clients=clients, store=store, clock=clock, sleep=clock.sleep
        )
    # THEN it is refused at once, naming the status (it waited its whole timeout, then
    # answered a timeout, as for a table being updated), and nothing is held
    assert type(info.value) is CapacityRequestError
    assert f"status '{status}'" in str(info.value)
    assert clock.t == start
    assert _holds(store) == []
