"""The broker's answers and how workers read them: a release names only a table the broker
serves (a hold on any other table stays, with its capacity); a table that stays UPDATING
behind the broker reaches the worker as CapacityRequestTimeout, not as a plain refusal; and
an answer that does not say ``"ok": true`` is never taken for success."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from ddb_capacity_runtime.core.hold_requests import new_token
from ddb_capacity_runtime.core.holds import Hold, token_digest
from ddb_capacity_runtime.requests import (
    CapacityRequestError,
    CapacityRequestFailed,
    CapacityRequestTimeout,
    release_hold,
    request_capacity,
)
from ddb_capacity_runtime.requests.broker import BrokerConfig, serve
from tests.support.broker import call, served, world  # noqa: F401
from tests.support.capacity_requests import HOLD_ID, _described, _table, stubbed  # noqa: F401
from tests.support.local_lambda import local_lambda
from tests.support.moto_world import World
from tests.support.untrusted_json import emf_total


def test_a_release_on_a_table_the_broker_does_not_serve_is_refused_and_keeps_the_hold(
    world: World,  # noqa: F811
    served: str,  # noqa: F811
) -> None:
    # GIVEN a hold, made directly, on a table the broker does not serve
    other = world.table("Elsewhere", 10, 100, tagged=False)
    world.target(other, "write", 100, 10_000)
    world.traffic(other, "write", 50)
    made = request_capacity(other, write=500, store=world.store, clients=world.clients)
    assert world.target_min(other, "write") == 550
    # WHEN a worker asks the broker to release it, with its own id and token
    event = {"action": "release", "table": other, "id": made.id, "token": made.token}
    answer = call(world, event)
    # THEN it is refused by the table's name
    assert answer == {
        "ok": False,
        "error": "refused",
        "message": f"table: got '{other}'; this broker serves only {served}",
    }
    # AND the hold and the capacity it holds stay
    assert [h.id for s in world.store.table(other) for h in s.holds] == [made.id]
    assert world.target_min(other, "write") == 550
    assert world.throughput(other) == (10, 550)


def test_a_table_that_stays_updating_behind_the_broker_times_out_the_workers_request(
    stubbed: Any,  # noqa: F811
    aws_env: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    stub, clients, store = stubbed
    config = BrokerConfig({"Orders": frozenset()})
    event = {"action": "request", "table": "Orders", "write": 500, "timeout_seconds": 0}
    # GIVEN a table that stays UPDATING: the broker answers a timeout as a timeout
    stub.add_response("describe_table", _table("UPDATING"))
    assert serve(event, config, clients=clients, store=store) == {
        "ok": False,
        "error": "timeout",
        "message": "table Orders: still busy (status UPDATING)",
    }
    # AND counts it as a timeout, which CapacityRequests alarms on, not as a refusal
    out = capsys.readouterr().out
    assert (emf_total(out, "TimedOut"), emf_total(out, "Refused")) == (1, 0)
    # WHEN a worker asks through the broker, behind Lambda's Invoke API
    stub.add_response("describe_table", _table("UPDATING"))
    for key, value in aws_env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("CAPACITY_BROKER", raising=False)

    def broker(event: Any, context: Any) -> dict[str, Any]:
        return serve(event, config, clients=clients, store=store)

    with local_lambda({"capacity-broker": broker}) as url:
        monkeypatch.setenv("AWS_ENDPOINT_URL_LAMBDA", url)
        with pytest.raises(CapacityRequestTimeout) as info:
            request_capacity("Orders", write=500, timeout=timedelta(0), broker="capacity-broker")
    # THEN it gets CapacityRequestTimeout (not a plain CapacityRequestError), by the table
    assert type(info.value) is CapacityRequestTimeout
    assert str(info.value) == "broker capacity-broker: table Orders: still busy (status UPDATING)"
    assert store.table("Orders") == []  # nothing held


@pytest.mark.parametrize(
    ("hold", "minutes"),
    [(timedelta(minutes=1, seconds=59), 2), (timedelta(minutes=3), 3), (timedelta(seconds=61), 2)],
)
def test_a_hold_asked_of_a_broker_is_never_shorter_than_the_one_asked_for(
    aws_env: dict[str, str], monkeypatch: pytest.MonkeyPatch, hold: timedelta, minutes: int
) -> None:
    # GIVEN a broker behind Lambda's Invoke API that keeps what it is asked
    for key, value in aws_env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("CAPACITY_BROKER", raising=False)
    asked: list[dict[str, Any]] = []

    def broker(event: Any, context: Any) -> dict[str, Any]:
        asked.append(event)
        return {"ok": False, "error": "refused", "message": "kept for the test"}

    # WHEN a worker asks it for a hold that is not a whole number of minutes
    with local_lambda({"capacity-broker": broker}) as url:
        monkeypatch.setenv("AWS_ENDPOINT_URL_LAMBDA", url)
        with pytest.raises(CapacityRequestError, match="kept for the test"):
            request_capacity("Orders", write=100, hold=hold, broker="capacity-broker")
    # THEN the broker is asked for the whole minutes that cover it, never fewer
    assert [e["hold_minutes"] for e in asked] == [minutes]


ODD_ANSWERS = [{}, {"ok": "yes"}, {"ok": 1}, {"ok": "true", "changes": []}, {"ok": None}]
"""Answers of something that is not the broker (a function named by mistake, say)."""


@pytest.fixture
def odd_broker(
    aws_env: dict[str, str], monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> Iterator[str]:
    """A function behind Lambda's Invoke API that answers ``request.param``; returns its name."""
    for key, value in aws_env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("CAPACITY_BROKER", raising=False)
    with local_lambda({"odd-broker": lambda event, context: request.param}) as url:
        monkeypatch.setenv("AWS_ENDPOINT_URL_LAMBDA", url)
        yield "odd-broker"


@pytest.mark.parametrize("odd_broker", ODD_ANSWERS, indirect=True)
def test_an_answer_without_ok_true_fails_the_release(odd_broker: str) -> None:
    with pytest.raises(CapacityRequestError) as info:
        release_hold("Orders", "0123456789ab", token="t" * 32, broker=odd_broker)
    assert type(info.value) is CapacityRequestError
    assert str(info.value).startswith("broker odd-broker: ")


@pytest.mark.parametrize("odd_broker", ODD_ANSWERS, indirect=True)
def test_an_answer_without_ok_true_is_named_as_such(odd_broker: str) -> None:
    with pytest.raises(CapacityRequestError) as info:
        release_hold("Orders", "0123456789ab", token="t" * 32, broker=odd_broker)
    message = str(info.value)
    assert re.search(r"\bok\b", message), message
    assert not message.endswith(": None"), message


def test_a_release_whose_decrease_is_not_made_fails_the_invocation_and_keeps_the_hold(
    stubbed: Any,  # noqa: F811
) -> None:
    # GIVEN a hold on a table whose decreases are spent for the day
    stub, clients, store = stubbed
    token = new_token()
    until = datetime.now(UTC) + timedelta(hours=1)
    held = Hold(HOLD_ID, None, "write", 490, until, 10, token_digest(token))
    with store.lease("Orders", None, "write", deadline=time.time() + 5) as lease:
        lease.write(10, [held])
    _described(stub, _table(write=500, decreases=27))  # no update_table: it is never sent
    # WHEN a worker releases it through the broker
    event = {"action": "release", "table": "Orders", "id": HOLD_ID, "token": token}
    with pytest.raises(CapacityRequestFailed) as info:
        serve(event, BrokerConfig({"Orders": frozenset()}), clients=clients, store=store)
    # THEN the invocation fails (a Lambda error, which BrokerErrors alarms on), saying why and
    # what stays; the worker is not told its release lowered anything
    assert str(info.value) == (
        f"release of hold {HOLD_ID} on Orders: its decrease was not made ('no decrease "
        "allowed now; tried again at the next restore'); the hold stays, and the capacity it "
        "raised, until a restore ends it at its expiry"
    )
    assert [h.id for h in store.table("Orders")[0].holds] == [HOLD_ID]
