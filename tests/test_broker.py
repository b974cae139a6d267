"""The capacity-request broker against a moto server: a request it accepts, the requests it
refuses (over the maximum units, over the longest hold, a table or an index it does not
serve), concurrent requests, and the client side (request_capacity, release_hold and the
CLI with a broker name) through a real botocore Lambda client."""

from __future__ import annotations

import io
import json
import threading
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest

from ddb_capacity_runtime.requests import (
    CapacityRequestError,
    CapacityRequestTimeout,
    release_hold,
    request_capacity,
)
from ddb_capacity_runtime.requests.broker import BrokerConfig, BrokerConfigError, broker_handler
from ddb_capacity_tools import cli
from tests.local_lambda import local_lambda
from tests.moto_world import World

MAX_UNITS, MAX_HOLD_MINUTES = 2_000, 60


@pytest.fixture
def world(aws_client: Any) -> World:
    return World(aws_client)


@pytest.fixture
def served(world: World, aws_env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> str:
    """A table with a GSI and write targets, served by a broker configured as
    ``CapacityRequests`` configures it; returns the table's name."""
    for key, value in aws_env.items():
        monkeypatch.setenv(key, value)
    name = world.table("Brokered", 10, 100, gsi=(10, 10), tagged=False)
    world.target(name, "write", 100, 10_000)
    world.traffic(name, "write", 50)
    monkeypatch.setenv("CAPACITY_HOLDS_TABLE", world.store.name)
    monkeypatch.setenv("CAPACITY_MAX_UNITS", str(MAX_UNITS))
    monkeypatch.setenv("CAPACITY_MAX_HOLD_MINUTES", str(MAX_HOLD_MINUTES))
    monkeypatch.setenv("CAPACITY_SCOPES", json.dumps([{"table": name, "indexes": ["byUser"]}]))
    monkeypatch.delenv("CAPACITY_BROKER", raising=False)
    return name


def request(served: str, **fields: Any) -> dict[str, Any]:
    event = {"action": "request", "table": served, "hold_minutes": 10, "timeout_seconds": 60}
    return broker_handler({**event, **fields}, None)


def test_an_accepted_request_raises_holds_and_releases(world: World, served: str) -> None:
    answer = request(served, write=500)
    assert answer["ok"] is True
    hold = answer["hold"]
    assert hold["levels"] == {"write": 550}  # 50 units of traffic + 500
    assert world.target_min(served, "write") == 550
    assert world.throughput(served) == (10, 550)
    assert [h.units for s in world.store.table(served) for h in s.holds] == [500]
    released = broker_handler({"action": "release", "table": served, "id": hold["id"]}, None)
    assert released["ok"] is True
    assert world.target_min(served, "write") == 100
    assert world.store.table(served) == []


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        (
            {"write": MAX_UNITS + 1},
            "write: got 2,001; the hold store allows at most 2,000 units per hold",
        ),
        (
            {"write": 10, "hold_minutes": MAX_HOLD_MINUTES + 1},
            "hold: got 1:01:00; the hold store allows at most 1:00:00",
        ),
        (
            {"table": "Elsewhere", "write": 10},
            "table: got 'Elsewhere'; this broker serves only {table}",
        ),
        (
            {"index": "byDay", "write": 10},
            "index: got 'byDay'; on table {table} this broker serves the table and the "
            "indexes byUser",
        ),
        ({"write": "10"}, "write: got '10'; expected a whole number of capacity units"),
        (
            {"write": 10, "timeout_seconds": 3600},
            "timeout_seconds: got 3600; the broker waits at most 780 seconds",
        ),
        (
            {"action": "delete"},
            "action: got 'delete'; expected 'request', 'release' or 'restore'",
        ),
    ],
)
def test_refusals_name_the_field_and_change_nothing(
    world: World, served: str, fields: dict[str, Any], message: str
) -> None:
    answer = request(served, **fields)
    assert answer["ok"] is False and answer["error"] == "refused"
    assert answer["message"].startswith(message.format(table=served))
    assert world.target_min(served, "write") == 100
    assert world.throughput(served) == (10, 100)
    assert world.store.table(served) == []


def test_a_configured_index_is_served(world: World, served: str) -> None:
    answer = request(served, index="byUser", read=20)
    assert answer["ok"] is True, answer
    assert world.throughput(served, "byUser") == (20, 10)


def test_concurrent_requests_all_count(world: World, served: str) -> None:
    answers: list[dict[str, Any]] = []
    lock = threading.Lock()

    def one() -> None:
        answer = request(served, write=100)
        with lock:
            answers.append(answer)

    threads = [threading.Thread(target=one) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert [a["ok"] for a in answers] == [True] * 6, answers
    # every hold is recorded, and the minimum is the traffic plus all of them
    assert world.target_min(served, "write") == 50 + 600
    (write,) = world.store.table(served)
    assert len(write.holds) == 6
    ids = [a["hold"]["id"] for a in answers]
    releases = [
        threading.Thread(
            target=broker_handler, args=({"action": "release", "table": served, "id": i}, None)
        )
        for i in ids
    ]
    for thread in releases:
        thread.start()
    for thread in releases:
        thread.join()
    assert world.target_min(served, "write") == 100
    assert world.store.table(served) == []


def test_a_broken_configuration_fails_the_invocation_by_name(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CAPACITY_SCOPES", "[]")
    with pytest.raises(BrokerConfigError, match="CAPACITY_SCOPES: got '\\[\\]'; expected a JSON"):
        broker_handler({"action": "request", "table": "Orders", "write": 1}, None)
    assert BrokerConfig.from_env({"CAPACITY_SCOPES": '[{"table": "Orders"}]'}).scopes == {
        "Orders": frozenset()
    }


# ---------------------------------------------------------------- the client side


@pytest.fixture
def broker(served: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The broker behind a local Lambda Invoke endpoint; returns its function name."""

    def failing(event: Any, context: Any) -> Any:
        raise RuntimeError("AWS is down")

    with local_lambda({"capacity-broker": broker_handler, "failing-broker": failing}) as url:
        monkeypatch.setenv("AWS_ENDPOINT_URL_LAMBDA", url)
        yield "capacity-broker"


def test_request_capacity_and_release_go_through_the_broker(
    world: World, served: str, broker: str
) -> None:
    made = request_capacity(served, write=300, broker=broker)
    assert made.levels == {"write": 350}
    assert world.target_min(served, "write") == 350
    assert [h.units for h in made.holds] == [300]
    made.release()
    assert made.released
    assert world.target_min(served, "write") == 100
    # by id, from another process, with the broker taken from the environment
    again = request_capacity(served, write=300, broker=broker)
    assert release_hold(served, again.id, broker=broker)[0]["to"] == 100
    assert world.store.table(served) == []


def test_the_broker_is_the_default_when_the_environment_names_it(
    world: World, served: str, broker: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CAPACITY_BROKER", broker)
    monkeypatch.setenv("CAPACITY_SCOPES", "[]")  # the broker now fails every invocation
    with pytest.raises(
        CapacityRequestError, match="broker capacity-broker failed: CAPACITY_SCOPES"
    ):
        request_capacity(served, write=300)


def test_refusals_and_failures_reach_the_caller(served: str, broker: str) -> None:
    with pytest.raises(CapacityRequestError) as info:
        request_capacity(served, write=MAX_UNITS + 1, broker=broker)
    assert not isinstance(info.value, CapacityRequestTimeout)
    assert str(info.value) == (
        "broker capacity-broker: write: got 2,001; the hold store allows at most 2,000 "
        "units per hold"
    )
    with pytest.raises(CapacityRequestError, match="broker failing-broker failed: AWS is down"):
        request_capacity(served, write=1, broker="failing-broker")
    with pytest.raises(CapacityRequestError, match="broker nobody: .*ResourceNotFound"):
        request_capacity(served, write=1, broker="nobody")
    with pytest.raises(CapacityRequestError, match="timeout: got 0:20:00; through a broker"):
        request_capacity(served, write=1, broker=broker, timeout=timedelta(minutes=20))


def test_the_cli_requests_and_releases_through_the_broker(
    world: World, served: str, broker: str
) -> None:
    out = io.StringIO()
    code = cli.main(
        ["request", "--table", served, "--write", "200", "--broker", broker, "--json"], out
    )
    assert code == 0
    hold = json.loads(out.getvalue())
    assert hold["levels"] == {"write": 250}
    out = io.StringIO()
    code = cli.main(
        ["release", "--table", served, "--id", hold["id"], "--broker", broker, "--json"], out
    )
    assert code == 0
    assert json.loads(out.getvalue())["changes"][0]["to"] == 100
    err = io.StringIO()
    code = cli.main(
        ["release", "--table", served, "--expired", "--broker", broker], io.StringIO(), err
    )
    assert code == 2
    assert err.getvalue().startswith("ddb-capacity: error: --expired: got --broker too")
