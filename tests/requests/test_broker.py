"""The capacity-request broker against a moto server: a request it accepts, the requests it
refuses (over the maximum units, over the longest hold, a table or an index it does not
serve), concurrent requests, and the client side (request_capacity, release_hold and the
CLI with a broker name) through a real botocore Lambda client."""

from __future__ import annotations

import io
import json
import math
import threading
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from botocore.exceptions import ClientError

from ddb_capacity_runtime.core.hold_requests import new_token
from ddb_capacity_runtime.requests import (
    CapacityHold,
    CapacityRequestError,
    CapacityRequestFailed,
    CapacityRequestTimeout,
    release_hold,
    request_capacity,
)
from ddb_capacity_runtime.requests.broker import (
    BrokerConfig,
    BrokerConfigError,
    broker_handler,
)
from ddb_capacity_runtime.requests.client import invoke_broker
from ddb_capacity_tools import cli
from ddb_capacity_tools.cli_options import build_parser
from tests.support.broker import (
    MAX_HOLD_MINUTES,
    MAX_UNITS,
    call,
    request,
    serve_table,
)
from tests.support.broker import served as served  # noqa: F401 (fixture)
from tests.support.broker import world as world  # noqa: F401 (fixture)
from tests.support.local_lambda import local_lambda
from tests.support.moto_world import World


@pytest.fixture
def moto_world(aws_client: Any) -> Iterator[World]:
    """A world whose hold store is in moto too: for the broker's Lambda entry point, which
    makes its own clients from the environment."""
    made = World(aws_client)
    yield made
    made.close()


@pytest.fixture
def served_by_lambda(
    moto_world: World, aws_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> str:
    return serve_table(moto_world, monkeypatch, aws_env)


def release(world: World, served: str, hold: dict[str, Any]) -> dict[str, Any]:
    return call(
        world, {"action": "release", "table": served, "id": hold["id"], "token": hold["token"]}
    )


def test_an_accepted_request_raises_holds_and_releases(world: World, served: str) -> None:
    answer = request(world, served, write=500)
    assert answer["ok"] is True
    hold = answer["hold"]
    assert hold["levels"] == {"write": 550}  # 50 units of traffic + 500
    assert world.target_min(served, "write") == 550
    assert world.throughput(served) == (10, 550)
    assert [h.units for s in world.store.table(served) for h in s.holds] == [500]
    assert release(world, served, hold)["ok"] is True
    assert world.target_min(served, "write") == 100
    assert not any(s.holding for s in world.store.table(served))


def test_the_lambda_entry_point_reads_its_store_from_the_environment(
    moto_world: World, served_by_lambda: str
) -> None:
    event = {"action": "request", "table": served_by_lambda, "write": 500, "hold_minutes": 10}
    hold = broker_handler(event, None)["hold"]
    assert moto_world.target_min(served_by_lambda, "write") == 550
    assert [h.id for s in moto_world.store.table(served_by_lambda) for h in s.holds] == [hold["id"]]
    event = {"action": "release", "table": served_by_lambda, **hold}
    assert broker_handler(event, None)["ok"] is True
    assert moto_world.target_min(served_by_lambda, "write") == 100


def test_a_hold_is_released_only_with_its_own_token(world: World, served: str) -> None:
    # GIVEN two holds on one table
    mine = request(world, served, write=500)["hold"]
    theirs = request(world, served, write=300)["hold"]
    # WHEN a worker that learned the other's id tries to end it without its token
    forged = theirs["token"][:-1] + ("y" if theirs["token"].endswith("x") else "x")
    for token in (None, "", mine["token"], forged):
        event = {"action": "release", "table": served, "id": theirs["id"], "token": token}
        answer = call(world, event)
        # THEN it is refused, and the refusal names no hold of the table
        assert answer["ok"] is False and answer["error"] == "refused"
        assert mine["id"] not in answer["message"]
        assert mine["token"] not in answer["message"]
    assert world.target_min(served, "write") == 850
    assert {h.id for s in world.store.table(served) for h in s.holds} == {
        mine["id"],
        theirs["id"],
    }
    # AND the holder's own token ends it
    assert release(world, served, theirs)["ok"] is True
    assert world.target_min(served, "write") == 550
    # AND the token is in the answer but not in the store: only its digest is
    raw = world.store_ddb.scan(TableName=world.store.name)["Items"]
    assert mine["token"] not in json.dumps(raw)


@pytest.mark.parametrize(
    ("ident", "token", "shown"),
    [
        ("x" * 5_000, "t", "'" + "x" * 199 + "... (5,002 characters) and a str of 1"),
        ("abc", "t" * 129, "'abc' and a str of 129"),
        ("x" * 129, "t", "'" + "x" * 129 + "' and a str of 1"),
        ("", "t", "'' and a str of 1"),
        ("abc", 7, "'abc' and a int of 0"),
    ],
)
def test_a_release_names_a_bounded_id_and_token(
    world: World, served: str, ident: Any, token: Any, shown: str
) -> None:
    answer = call(world, {"action": "release", "table": served, "id": ident, "token": token})
    assert answer["ok"] is False
    assert answer["message"] == (
        f"id and token: got {shown} characters; expected the hold's id and the token its "
        "request returned (1 to 128 characters each)"
    )


def test_the_holds_of_a_dimension_add_up_to_max_total_units_at_most(
    world: World, served: str
) -> None:
    # GIVEN holds of 2,000 and 900 units (a total of 2,900 of the 3,000 allowed)
    first = request(world, served, write=2_000)
    assert first["ok"] is True
    assert request(world, served, write=900)["ok"] is True
    # WHEN a third asks for 200 more
    answer = request(world, served, write=200)
    # THEN it is refused by name, and nothing changes
    assert answer["ok"] is False
    assert answer["message"] == (
        "write: got 200 units; with the 2 active hold(s) on table the holds would add up "
        "to 3,100, and the hold store allows at most 3,000 units held per dimension"
    )
    assert world.target_min(served, "write") == 50 + 2_900
    assert sum(h.units for s in world.store.table(served) for h in s.holds) == 2_900
    # AND the index's dimensions have totals of their own
    assert request(world, served, index="byUser", write=100)["ok"] is True


@pytest.mark.parametrize("made_by", ["construct", "environment without a total"])
def test_by_default_the_holds_of_a_dimension_add_up_to_one_largest_hold(
    world: World, served: str, stack: Any, monkeypatch: pytest.MonkeyPatch, made_by: str
) -> None:
    # GIVEN a broker bounded to 2,000 units a hold and no max_total_units: as the construct
    # configures it, or from an environment that names no total (an older construct's)
    if made_by == "construct":
        from aws_cdk import aws_dynamodb as dynamodb

        from constructs_pkg import CapacityRequests

        table = dynamodb.Table.from_table_name(stack, "Served", served)
        made = CapacityRequests(stack, "Requests", tables=[table], max_units=MAX_UNITS)
        assert made.environment["CAPACITY_MAX_TOTAL_UNITS"] == str(MAX_UNITS)
        for name in ("CAPACITY_MAX_UNITS", "CAPACITY_MAX_TOTAL_UNITS"):
            monkeypatch.setenv(name, made.environment[name])
    else:
        monkeypatch.delenv("CAPACITY_MAX_TOTAL_UNITS")
    # WHEN four workers each ask for the largest hold
    answers = [request(world, served, write=MAX_UNITS) for _ in range(4)]
    # THEN the first is held and the three others are refused by name: the store holds
    # one largest hold, and the minimum is raised by that much only
    assert [a["ok"] for a in answers] == [True, False, False, False]
    assert answers[1]["message"] == (
        "write: got 2,000 units; with the 1 active hold(s) on table the holds would add up "
        "to 4,000, and the hold store allows at most 2,000 units held per dimension"
    )
    assert world.target_min(served, "write") == 50 + MAX_UNITS
    assert sum(h.units for s in world.store.table(served) for h in s.holds) == MAX_UNITS


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
            {"write": 10, "hold_minutes": 10**13},
            "hold_minutes: got 10000000000000; expected a whole number from 1 to 1440",
        ),
        (
            {"write": 10, "hold_minutes": 0},
            "hold_minutes: got 0; expected a whole number from 1 to 1440",
        ),
        (
            {"write": 10**13},
            "write: got 10000000000000; expected a whole number of capacity units from 0 to 40,000",
        ),
        (
            {"table": "Elsewhere", "write": 10},
            "table: got 'Elsewhere'; this broker serves only {table}",
        ),
        (
            {"table": "x" * 1_500_000, "write": 10},
            "event: larger than 65,536 characters of JSON; expected at most 65,536",
        ),
        (
            {"table": "x" * 60_000, "write": 10},
            "table: got '" + "x" * 199 + "... (60,002 characters); expected a name of 3 "
            "to 255 characters",
        ),
        (
            {"index": "byDay", "write": 10},
            "index: got 'byDay'; on table {table} this broker serves the table and the "
            "indexes byUser",
        ),
        ({"write": "10"}, "write: got '10'; expected a whole number of capacity units"),
        (
            {"write": 10, "timeout_seconds": 3600},
            "timeout_seconds: got 3600; expected a whole number from 0 to 780",
        ),
        (
            {"write": 10, "timeout_seconds": 781},  # a second past the 13 minutes
            "timeout_seconds: got 781; expected a whole number from 0 to 780",
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
    answer = request(world, served, **fields)
    assert answer["ok"] is False and answer["error"] == "refused"
    assert answer["message"].startswith(message.format(table=served))
    assert len(json.dumps(answer)) < 1_500  # never the caller's whole input
    assert world.target_min(served, "write") == 100
    assert world.throughput(served) == (10, 100)
    assert not any(s.holding for s in world.store.table(served))


def test_a_request_may_wait_the_whole_13_minutes(world: World, served: str) -> None:
    """The longest wait the broker accepts, 13 minutes (780 seconds), is a request it makes."""
    answer = request(world, served, write=500, timeout_seconds=780)
    assert answer["ok"] is True, answer
    assert answer["hold"]["levels"] == {"write": 550}
    assert world.target_min(served, "write") == 550
    assert release(world, served, answer["hold"])["ok"] is True


@pytest.mark.parametrize(
    ("operation", "service"),
    [("RegisterScalableTarget", "autoscaling"), ("UpdateItem", "dynamodb")],
)
def test_a_call_aws_fails_for_a_request_fails_the_invocation_not_a_refusal(
    world: World,
    served: str,
    operation: str,
    service: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A denied RegisterScalableTarget (the target's tag missing from the broker's grant,
    say), or a hold store throttled past the SDK's retries: the invocation fails (a Lambda
    error, alarmed), never an answer of "refused" (counted as ``Refused``, which nothing
    alarms on). The hold is withdrawn; nothing is raised."""
    client = world.aas if service != "dynamodb" else world.store.dynamodb
    error = "AccessDeniedException" if service != "dynamodb" else "ThrottlingException"

    def fail(**_: Any) -> None:
        raise ClientError({"Error": {"Code": error, "Message": "injected"}}, operation)

    event = f"before-parameter-build.{client.meta.service_model.service_name}.{operation}"
    client.meta.events.register(event, fail)
    try:
        with pytest.raises(CapacityRequestFailed, match=error):
            request(world, served, write=500)
    finally:
        client.meta.events.unregister(event, fail)
    assert "Refused" not in capsys.readouterr().out
    assert world.target_min(served, "write") == 100
    assert world.throughput(served) == (10, 100)


def test_a_configured_index_is_served(world: World, served: str) -> None:
    answer = request(world, served, index="byUser", read=20)
    assert answer["ok"] is True, answer
    assert world.throughput(served, "byUser") == (20, 10)


def test_concurrent_requests_all_count(world: World, served: str) -> None:
    answers: list[dict[str, Any]] = []
    lock = threading.Lock()

    def one() -> None:
        answer = request(world, served, write=100)
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
    releases = [threading.Thread(target=release, args=(world, served, a["hold"])) for a in answers]
    for thread in releases:
        thread.start()
    for thread in releases:
        thread.join()
    assert world.target_min(served, "write") == 100
    assert not any(s.holding for s in world.store.table(served))


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
def broker(served_by_lambda: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The broker behind a local Lambda Invoke endpoint; returns its function name."""

    def failing(event: Any, context: Any) -> Any:
        raise RuntimeError("AWS is down")

    with local_lambda({"capacity-broker": broker_handler, "failing-broker": failing}) as url:
        monkeypatch.setenv("AWS_ENDPOINT_URL_LAMBDA", url)
        yield "capacity-broker"


def test_request_capacity_and_release_go_through_the_broker(
    moto_world: World, served_by_lambda: str, broker: str
) -> None:
    made = request_capacity(served_by_lambda, write=300, broker=broker)
    assert made.levels == {"write": 350}
    assert moto_world.target_min(served_by_lambda, "write") == 350
    assert [h.units for h in made.holds] == [300]
    made.release()
    assert made.released
    assert moto_world.target_min(served_by_lambda, "write") == 100
    # by id, from another process, with the broker taken from the environment
    again = request_capacity(served_by_lambda, write=300, broker=broker)
    # without its token: refused before the broker is invoked, and by the broker itself
    with pytest.raises(CapacityRequestError, match="^token: got None; a broker ends a hold"):
        release_hold(served_by_lambda, again.id, broker=broker)
    untokened = {"action": "release", "table": served_by_lambda, "id": again.id}
    with pytest.raises(CapacityRequestError, match="id and token: got '.*' and a NoneType of 0"):
        invoke_broker(broker, untokened)
    changes = release_hold(served_by_lambda, again.id, token=again.token, broker=broker)
    assert changes[0]["to"] == 100
    assert not any(s.holding for s in moto_world.store.table(served_by_lambda))


def test_the_broker_is_the_default_when_the_environment_names_it(
    moto_world: World, served_by_lambda: str, broker: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CAPACITY_BROKER", broker)
    monkeypatch.setenv("CAPACITY_SCOPES", "[]")  # the broker now fails every invocation
    with pytest.raises(
        CapacityRequestError, match="broker capacity-broker failed: CAPACITY_SCOPES"
    ):
        request_capacity(served_by_lambda, write=300)


def test_refusals_and_failures_reach_the_caller(served_by_lambda: str, broker: str) -> None:
    with pytest.raises(CapacityRequestError) as info:
        request_capacity(served_by_lambda, write=MAX_UNITS + 1, broker=broker)
    assert not isinstance(info.value, CapacityRequestTimeout | CapacityRequestFailed)
    assert str(info.value) == (
        "broker capacity-broker: write: got 2,001; the hold store allows at most 2,000 "
        "units per hold"
    )
    # a broker that failed, or could not be invoked, is no refusal of the request
    with pytest.raises(CapacityRequestFailed, match="broker failing-broker failed: AWS is down"):
        request_capacity(served_by_lambda, write=1, broker="failing-broker")
    with pytest.raises(CapacityRequestFailed, match="broker nobody: .*ResourceNotFound"):
        request_capacity(served_by_lambda, write=1, broker="nobody")
    with pytest.raises(CapacityRequestError, match="timeout: got 0:20:00; through a broker"):
        request_capacity(served_by_lambda, write=1, broker=broker, timeout=timedelta(minutes=20))


def test_through_a_broker_a_request_waits_13_minutes_at_most(
    moto_world: World, served_by_lambda: str, broker: str
) -> None:
    """A request through a broker may wait 13 minutes exactly; a second more is refused
    by the caller's own side, before the broker is asked."""
    made = request_capacity(
        served_by_lambda, write=300, broker=broker, timeout=timedelta(minutes=13)
    )
    assert made.levels == {"write": 350}
    made.release()
    with pytest.raises(CapacityRequestError) as info:
        request_capacity(
            served_by_lambda, write=300, broker=broker, timeout=timedelta(minutes=13, seconds=1)
        )
    assert str(info.value) == (
        "timeout: got 0:13:01; through a broker a request waits at most 0:13:00"
    )
    assert moto_world.target_min(served_by_lambda, "write") == 100
    assert not any(s.holding for s in moto_world.store.table(served_by_lambda))


def test_a_release_token_is_read_by_the_cli_written_as_a_separate_argument() -> None:
    """One token in 64 used to begin with '-', which ``--token TOKEN`` read as an option:
    the release failed with "expected one argument". 3,000 tokens (none would begin with '-'
    by chance once in 10**20 runs): each is parsed back whole, and is as long as before."""
    parser = build_parser()
    for _ in range(3000):
        token = new_token()
        args = parser.parse_args(["release", "--table", "T", "--id", "h1", "--token", token])
        assert args.token == token
        assert len(token) == 32


def test_the_cli_requests_and_releases_through_the_broker(
    moto_world: World, served_by_lambda: str, broker: str
) -> None:
    out = io.StringIO()
    code = cli.main(
        ["request", "--table", served_by_lambda, "--write", "200", "--broker", broker, "--json"],
        out,
    )
    assert code == 0
    hold = json.loads(out.getvalue())
    assert hold["levels"] == {"write": 250}
    out = io.StringIO()
    code = cli.main(
        [
            "release",
            "--table",
            served_by_lambda,
            "--id",
            hold["id"],
            "--token",
            hold["token"],
            "--broker",
            broker,
            "--json",
        ],
        out,
    )
    assert code == 0
    assert json.loads(out.getvalue())["changes"][0]["to"] == 100
    err = io.StringIO()
    code = cli.main(
        ["release", "--table", served_by_lambda, "--expired", "--broker", broker],
        io.StringIO(),
        err,
    )
    assert code == 2
    assert err.getvalue().startswith("ddb-capacity: error: --expired: got --broker too")


GOOD_HOLD: dict[str, Any] = {
    "table": "Orders",
    "index": None,
    "id": "abc",
    "token": "t0k",
    "expires": "2026-01-01T00:00:00+00:00",
    "holds": {"write": {"units": 10, "baseline": 5}},
    "levels": {"write": 15},
    "changes": [],
}


@pytest.mark.parametrize(
    "answer",
    [
        [1],
        "x",
        None,
        {**GOOD_HOLD, "holds": {"write": {"units": math.inf, "baseline": 5}}},
        {**GOOD_HOLD, "holds": {"write": {"units": math.nan, "baseline": 5}}},
        {**GOOD_HOLD, "holds": {"write": {"units": -5, "baseline": 5}}},
        {**GOOD_HOLD, "holds": {"write": {"units": 10.5, "baseline": 5}}},
        {**GOOD_HOLD, "holds": {"writes": {"units": 10, "baseline": 5}}},
        {**GOOD_HOLD, "holds": [10]},
        {**GOOD_HOLD, "levels": {"write": math.inf}},
        {**GOOD_HOLD, "levels": {"write": 15, "scan": 5}},
        {**GOOD_HOLD, "expires": "2026-01-01T00:00:00"},
        {**GOOD_HOLD, "index": 7},
        {**GOOD_HOLD, "table": "a/b"},
    ],
)
def test_an_answer_that_is_not_a_hold_is_refused_as_one(answer: object) -> None:
    # GIVEN a broker's answer that is not a hold (each field is untrusted)
    # WHEN it is read THEN it is a CapacityRequestError (what a caller catches), naming the
    # broker, whatever in it is wrong: never a TypeError, an OverflowError, nor a hold
    with pytest.raises(
        CapacityRequestError, match="^broker capacity-broker: an answer that is not a hold"
    ):
        CapacityHold.from_json(answer, "capacity-broker")


def test_a_sound_answer_is_read_as_the_hold_it_names() -> None:
    hold = CapacityHold.from_json({**GOOD_HOLD, "changes": 5}, "capacity-broker")
    assert (hold.table, hold.levels, hold.changes) == ("Orders", {"write": 15}, [])
    assert [(h.dimension, h.units, h.baseline) for h in hold.holds] == [("write", 10, 5)]


@pytest.mark.parametrize(
    ("variable", "value", "says"),
    [
        ("CAPACITY_MAX_UNITS", "lots", "CAPACITY_MAX_UNITS: got 'lots'; expected a whole number"),
        ("CAPACITY_TABLE_QUOTA", "-1", "CAPACITY_TABLE_QUOTA"),
        ("CAPACITY_HOLDS_TABLE", " ", "no CAPACITY_HOLDS_TABLE"),
    ],
)
def test_a_broken_store_setting_fails_the_invocation_never_refuses_the_worker(
    monkeypatch: pytest.MonkeyPatch, variable: str, value: str, says: str
) -> None:
    # GIVEN a broker whose own hold-store settings are broken (edited by hand, say)
    monkeypatch.setenv("CAPACITY_SCOPES", '[{"table": "Orders"}]')
    monkeypatch.setenv("CAPACITY_HOLDS_TABLE", "holds")
    monkeypatch.setenv(variable, value)
    # WHEN a worker's well-formed request reaches it
    # THEN the invocation fails by the setting's name (BrokerErrors alarms on it): no worker
    # is answered a refusal as though its own request were wrong
    with pytest.raises(BrokerConfigError, match=says):
        broker_handler({"action": "request", "table": "Orders", "write": 1}, None)
