"""The settle step against what changes while it lowers, and a Create against the minimums
registered on its new table.

What the step reads (a capacity request's holds, a scalable target's MinCapacity) may change
before its UpdateTable lands: a request records its hold on a table it found at its mark, and
raises nothing; a scheduled action raises a minimum. The concurrent write is made by a botocore
hook on the step's own UpdateTable, after every read of the step and before the update goes,
so each interleaving is played exactly. The call that lowers answers to wait, and a later
one reads the floors of what it lowered again; the step's time (SettleBy) bounds when it
lowers, never whether its own decrease fails the deploy. The table, its scalable targets, its
traffic and its hold store are a moto server's (DescribeTable dating the step's decreases as
DynamoDB does: `conftest.dated_decreases`); the table states moto never shows (UPDATING after
an update) are a Stubber's, as in the other settle tests."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from botocore.awsrequest import AWSResponse
from botocore.compat import HTTPHeaders
from botocore.config import Config
from botocore.stub import Stubber

from ddb_capacity_runtime.aws.settle_clients import settle_autoscaling_client, settle_store_client
from ddb_capacity_runtime.settle.handler import is_complete
from ddb_capacity_runtime.settle.settle_plan import FINISH_S
from ddb_capacity_tools import local_aws
from tests.conftest import dated_decreases
from tests.support.retry_policy import _Raw
from tests.support.settle_holds import (
    counts,
    create_event,
    hold,
)
from tests.support.settle_holds import (
    dynamodb as dynamodb,  # noqa: F401 (fixture)
)
from tests.support.settle_holds import (
    in_lambda as in_lambda,  # noqa: F401 (fixture)
)
from tests.support.settle_holds import (
    store as store,  # noqa: F401 (fixture)
)
from tests.support.settle_live import (
    autoscaling as autoscaling,  # noqa: F401 (fixture)
)
from tests.support.settle_live import (
    busy,
    left_events,
    register,
    table_name,
    update_event,
)
from tests.support.settle_live import (
    cloudwatch as cloudwatch,  # noqa: F401 (fixture)
)

MARKED = {None: (2000, 500), "bySku": (1000, 5)}
"""The table's capacity at its marks (`test_settle_live.targets`: read 2,000, write 500, the
GSI's read 1,000), as CloudFormation provisioned it."""


def table_at_marks(dynamodb: Any) -> str:
    """A table (and its GSI ``bySku``) created now at its marks, in moto."""
    name = table_name()
    dynamodb.create_table(
        TableName=name,
        AttributeDefinitions=[
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "sku", "AttributeType": "S"},
        ],
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        ProvisionedThroughput={"ReadCapacityUnits": 2000, "WriteCapacityUnits": 500},
        GlobalSecondaryIndexes=[
            {
                "IndexName": "bySku",
                "KeySchema": [{"AttributeName": "sku", "KeyType": "HASH"}],
                "Projection": {"ProjectionType": "KEYS_ONLY"},
                "ProvisionedThroughput": {"ReadCapacityUnits": 1000, "WriteCapacityUnits": 5},
            }
        ],
    )
    return name


def capacity(dynamodb: Any, name: str) -> dict[str | None, tuple[int, int]]:
    """The table's and its GSI's (read, write) now."""
    table = dynamodb.describe_table(TableName=name)["Table"]
    out: dict[str | None, tuple[int, int]] = {}
    for key, spec in [
        (None, table),
        *((g["IndexName"], g) for g in table["GlobalSecondaryIndexes"]),
    ]:
        pt = spec["ProvisionedThroughput"]
        out[key] = (pt["ReadCapacityUnits"], pt["WriteCapacityUnits"])
    return out


@pytest.fixture(autouse=True)
def dated(dynamodb: Any) -> None:
    """The step's decreases dated by DescribeTable, as DynamoDB does (`conftest.dated_decreases`)."""
    dated_decreases(dynamodb)


@pytest.fixture
def before_the_update(dynamodb: Any) -> Iterator[Callable[[Callable[[], None]], None]]:
    """Run a write once, as the step's first UpdateTable is sent: after every read of the
    step, before its update lands (what a concurrent writer does in that window)."""
    hooks: list[Any] = []

    def arrange(write: Callable[[], None]) -> None:
        done: list[bool] = []

        def hook(**_: Any) -> None:
            if not done:
                done.append(True)
                write()

        dynamodb.meta.events.register("before-call.dynamodb.UpdateTable", hook)
        hooks.append(hook)

    yield arrange
    for hook in hooks:
        dynamodb.meta.events.unregister("before-call.dynamodb.UpdateTable", hook)


def provider(event: dict[str, Any], **clients: Any) -> list[dict[str, Any]]:
    """What the provider does: is_complete on ``event`` until it is done (at most 5 calls);
    every answer, in order."""
    answers: list[dict[str, Any]] = []
    for _ in range(5):
        answers.append(is_complete(event, None, **clients))
        if answers[-1]["IsComplete"]:
            return answers
    raise AssertionError(f"not complete after 5 calls: {answers}")


LOWERED_THEN_DONE = [{"IsComplete": False}, {"IsComplete": True, "Data": {"Settled": "true"}}]
"""The answers of a step that lowered: the call that lowers waits, and the next, once the
table is ACTIVE again, reads the floors of what it lowered (putting back any that rose) and
is done."""
PUT_BACK = LOWERED_THEN_DONE


# ---------------------------------------------------------------- what rises while it lowers


@pytest.mark.usefixtures("in_lambda")
def test_a_hold_recorded_while_the_step_lowers_puts_its_dimension_back(
    dynamodb: Any,
    store: str,
    autoscaling: Any,
    before_the_update: Callable[[Callable[[], None]], None],
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # GIVEN a new table at its marks, served by a CapacityRequests whose store holds nothing
    # when the step reads it; and a capacity request that, having read the table at its mark
    # (2,000: enough, nothing to raise), records a hold of 1,500 on its read just as the
    # step's UpdateTable goes
    name = table_at_marks(dynamodb)
    before_the_update(lambda: hold(dynamodb, store, name, "table:read", 1400))
    # WHEN the provider runs the step's Create
    with caplog.at_level(logging.INFO):
        answers = provider(
            create_event(name, store), dynamodb=dynamodb, autoscaling=autoscaling, holds=dynamodb
        )
    # THEN the call that lowered reads the holds again, finds the read's above what it was
    # lowered to, and waits; the next call puts the read back at its mark (the others stay
    # settled: their floors did not move)
    assert answers == PUT_BACK
    assert capacity(dynamodb, name) == {None: (2000, 5), "bySku": (10, 5)}
    (risen,) = [vars(r) for r in caplog.records if r.getMessage() == "settle-floor-risen"]
    assert "its active capacity holds are at 1,500" in risen["reason"], risen
    # AND the read is left at its mark as any dimension whose floor is unknown is: logged
    # with why, and counted once (SettleLeft, which the step's alarm watches)
    (left,) = left_events(caplog)
    assert (left["index"], left["dimension"]) == (None, "read")
    assert "at 100, below its mark, while its active capacity holds are at 1,500" in left["reason"]
    assert [r["SettleLeft"] for r in counts(capsys)] == [1]


@pytest.mark.usefixtures("in_lambda")
def test_a_minimum_raised_while_the_step_lowers_puts_its_dimension_back(
    dynamodb: Any,
    cloudwatch: Any,
    autoscaling: Any,
    before_the_update: Callable[[Callable[[], None]], None],
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # GIVEN a live table at its new marks whose read needs 800 for its traffic, its
    # minimums at 1; and a scheduled action (or a capacity request) that raises the read's
    # MinCapacity to 1,200 just as the step's UpdateTable goes
    name = table_at_marks(dynamodb)
    busy(cloudwatch, name)
    register(autoscaling, name)

    def scheduled() -> None:
        register(autoscaling, name, {"read": 1200})

    before_the_update(scheduled)
    # WHEN the provider runs the step's Update
    with caplog.at_level(logging.INFO):
        answers = provider(
            update_event(name), dynamodb=dynamodb, cloudwatch=cloudwatch, autoscaling=autoscaling
        )
    # THEN the read, lowered to its need of 800 under a minimum now of 1,200, is put back at
    # its mark, counted; the write and the GSI's read stay at their needs
    assert answers == PUT_BACK
    assert capacity(dynamodb, name) == {None: (2000, 10), "bySku": (50, 5)}
    (left,) = left_events(caplog)
    assert "its scalable target's MinCapacity is 1,200" in left["reason"], left
    assert [r["SettleLeft"] for r in counts(capsys)] == [1]


class Context:
    """Lambda's context of a call with ``seconds`` left."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    def get_remaining_time_in_millis(self) -> int:
        return int(self.seconds * 1000)


@pytest.mark.usefixtures("in_lambda")
def test_a_step_that_lowered_says_so_once_it_has_read_its_floors_again(
    dynamodb: Any,
    store: str,
    aws_env: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    # GIVEN a new table at its marks, read through the settle function's own clients, and
    # calls with 30 s left; nothing holds it
    name = table_at_marks(dynamodb)
    for key, value in aws_env.items():
        monkeypatch.setenv(key, value)
    autoscaling, holds = settle_autoscaling_client(), settle_store_client()
    event = create_event(name, store)
    # WHEN the provider runs the step's Create
    with caplog.at_level(logging.INFO):
        answers = [
            is_complete(event, Context(30), dynamodb, autoscaling=autoscaling, holds=holds)
            for _ in range(2)
        ]
    # THEN the call that lowered waits, and the next one, finding no floor risen, is done
    # and says the step lowered the table (no "nothing lowered" of its own)
    assert answers == LOWERED_THEN_DONE
    assert capacity(dynamodb, name) == {None: (100, 5), "bySku": (10, 5)}
    messages = [r.getMessage() for r in caplog.records]
    assert "settle-skipped" not in messages
    assert messages.count("settle-floors-held") == 1


@pytest.mark.usefixtures("in_lambda")
def test_a_hold_recorded_after_the_call_that_lowered_is_read_by_a_later_one(
    dynamodb: Any, store: str, autoscaling: Any, caplog: pytest.LogCaptureFixture
) -> None:
    # GIVEN a new table at its marks, served by a CapacityRequests whose store holds nothing
    name = table_at_marks(dynamodb)
    queries = reads_of(dynamodb, "Query")
    event = create_event(name, store)
    # WHEN the step's first call lowers it; then a capacity request, whose DescribeTable
    # still showed the table at its mark (DynamoDB's reads of it are eventually consistent),
    # records a hold of 1,500 on its read; and the provider asks again
    first = is_complete(event, None, dynamodb=dynamodb, autoscaling=autoscaling, holds=dynamodb)
    hold(dynamodb, store, name, "table:read", 1400)
    with caplog.at_level(logging.INFO):
        second = is_complete(
            event, None, dynamodb=dynamodb, autoscaling=autoscaling, holds=dynamodb
        )
    # THEN the call that lowered read the holds once, before it lowered; the later call
    # reads them again, and puts the read back at its mark
    assert [first, second] == PUT_BACK
    assert len(queries) == 2
    assert capacity(dynamodb, name) == {None: (2000, 5), "bySku": (10, 5)}


def reads_of(client: Any, operation: str) -> list[dict[str, Any]]:
    """The ``operation`` calls ``client`` makes, their parameters."""
    calls: list[dict[str, Any]] = []
    client.meta.events.register(
        f"provide-client-params.dynamodb.{operation}", lambda params, **_: calls.append(params)
    )
    return calls


def refused_after_first(
    client: Any, operation: str, code: str = "ResourceNotFoundException"
) -> None:
    """``client``'s attempts of ``operation`` after its first answered ``code`` (400: the
    hold store gone, or a throttle), as AWS answers it."""
    sent: list[int] = []

    def answer(request: Any, **_: Any) -> AWSResponse | None:
        sent.append(1)
        if len(sent) == 1:
            return None
        body = json.dumps(
            {"__type": f"com.amazonaws.dynamodb.v20120810#{code}", "message": "no"}
        ).encode()
        headers = HTTPHeaders.from_dict({"Content-Type": "application/x-amz-json-1.0"})
        return AWSResponse(request.url, 400, headers, _Raw(body))

    client.meta.events.register(f"before-send.dynamodb.{operation}", answer)


def hold_reader(dynamodb: Any) -> Any:
    """A client of the hold store's server that tries each call once."""
    return boto3.client(
        "dynamodb",
        endpoint_url=dynamodb.meta.endpoint_url,
        region_name="us-east-1",
        aws_access_key_id="test",
        aws_secret_access_key="test",
        config=Config(retries={"total_max_attempts": 1}),
    )


@pytest.mark.parametrize("code", ["ResourceNotFoundException", "ThrottlingException"])
@pytest.mark.usefixtures("in_lambda")
def test_what_cannot_be_read_again_once_lowered_is_put_back(
    dynamodb: Any,
    store: str,
    autoscaling: Any,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
    code: str,
) -> None:
    # GIVEN a new table at its marks whose hold store answers the step's first read, and no
    # read after it: gone, or throttled (an error that may pass: before the step lowers, it
    # would wait for it; once it has lowered, what the table holds now is not known)
    name = table_at_marks(dynamodb)
    reader = hold_reader(dynamodb)
    refused_after_first(reader, "Query", code)
    # WHEN the provider runs the step's Create
    with caplog.at_level(logging.INFO):
        answers = provider(
            create_event(name, store), dynamodb=dynamodb, autoscaling=autoscaling, holds=reader
        )
    # THEN what it lowered is put back at its marks at once: unknown data never lowers
    # capacity
    assert answers == PUT_BACK
    assert capacity(dynamodb, name) == MARKED
    left = left_events(caplog)
    assert len(left) == 3 and all("its floor could not be read (" in e["reason"] for e in left), (
        left
    )
    assert all(code in e["reason"] for e in left), left
    assert [r["SettleLeft"] for r in counts(capsys)] == [3]


@pytest.mark.usefixtures("in_lambda")
def test_a_hold_past_any_quota_puts_its_dimension_back_at_its_mark(
    dynamodb: Any,
    store: str,
    autoscaling: Any,
    before_the_update: Callable[[Callable[[], None]], None],
) -> None:
    # GIVEN a new table at its marks, and a hold of 500,000 units recorded on its read as
    # the step's UpdateTable goes: within the widest a hold store allows, above what the
    # account lets a table have (an UpdateTable to it would be refused)
    name = table_at_marks(dynamodb)
    before_the_update(lambda: hold(dynamodb, store, name, "table:read", 500_000))
    updates = reads_of(dynamodb, "UpdateTable")
    # WHEN the provider runs the step's Create
    answers = provider(
        create_event(name, store), dynamodb=dynamodb, autoscaling=autoscaling, holds=dynamodb
    )
    # THEN the read is put back at its mark, what the table held minutes before, never at
    # the hold's level: a request raises it further
    assert answers == PUT_BACK
    assert capacity(dynamodb, name) == {None: (2000, 5), "bySku": (10, 5)}
    assert updates[-1] == {
        "TableName": name,
        "ProvisionedThroughput": {"ReadCapacityUnits": 2000, "WriteCapacityUnits": 5},
    }


@pytest.mark.parametrize("mended", [False, True], ids=["still-malformed", "mended"])
@pytest.mark.usefixtures("in_lambda")
def test_a_dimension_left_at_its_mark_is_counted_once_and_never_lowered_later(
    dynamodb: Any,
    store: str,
    autoscaling: Any,
    before_the_update: Callable[[Callable[[], None]], None],
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
    mended: bool,
) -> None:
    # GIVEN a new table at its marks whose GSI's read holds a malformed hold (left at its
    # mark), and a hold of 1,500 on the table's read recorded as the step's UpdateTable goes
    name = table_at_marks(dynamodb)
    hold(dynamodb, store, name, "index/bySku:read", 2_000_000)
    before_the_update(lambda: hold(dynamodb, store, name, "table:read", 1400))
    updates = reads_of(dynamodb, "UpdateTable")
    event = create_event(name, store)
    # WHEN the step's first call lowers the table; then (or not) the malformed hold is
    # mended, and the provider asks again
    with caplog.at_level(logging.INFO):
        first = is_complete(event, None, dynamodb=dynamodb, autoscaling=autoscaling, holds=dynamodb)
        if mended:
            key = {"pk": {"S": name}, "sk": {"S": "index/bySku:read"}}
            dynamodb.delete_item(TableName=store, Key=key)
        second = is_complete(
            event, None, dynamodb=dynamodb, autoscaling=autoscaling, holds=dynamodb
        )
    # THEN the later call puts the read back, and lowers nothing more: one decrease, the
    # GSI's read stays at its mark
    assert [first, second] == PUT_BACK
    assert len(updates) == 2 and "GlobalSecondaryIndexUpdates" not in updates[1]
    assert capacity(dynamodb, name) == {None: (2000, 5), "bySku": (1000, 5)}
    # AND each dimension left at its mark is counted once, by the call that decided it (the
    # call that lowered counts none): the read put back, and the GSI's read still at its
    # mark, its holds unknown, or (mended) known but too late: the step did not lower it
    left = {(e["index"], e["dimension"]): e["reason"] for e in left_events(caplog)}
    assert list(left) == [(None, "read"), ("bySku", "read")]
    assert ("the step did not lower it" in left[("bySku", "read")]) is mended
    assert [r["SettleLeft"] for r in counts(capsys)] == [2]


def before_the_step(dynamodb: Any) -> Any:
    """A client of ``dynamodb``'s server whose decreases go undated: made before the step
    began (DescribeTable dates them earlier than its first call)."""
    return local_aws.client(dynamodb.meta.endpoint_url, "dynamodb")


def test_a_dimension_the_step_did_not_lower_is_not_its_to_put_back(
    dynamodb: Any, store: str, autoscaling: Any
) -> None:
    # GIVEN a new table created at its marks but its GSI's read, already below its mark
    # when the step begins (a replaced step settled it before); and a hold store that answers
    # the step's first read, and no read after it
    name = table_at_marks(dynamodb)
    before_the_step(dynamodb).update_table(
        TableName=name,
        GlobalSecondaryIndexUpdates=[
            {
                "Update": {
                    "IndexName": "bySku",
                    "ProvisionedThroughput": {"ReadCapacityUnits": 10, "WriteCapacityUnits": 5},
                }
            }
        ],
    )
    reader = hold_reader(dynamodb)
    refused_after_first(reader, "Query")
    # WHEN the provider runs the step's Create (begun after that decrease)
    answers = provider(
        create_event(name, store), dynamodb=dynamodb, autoscaling=autoscaling, holds=reader
    )
    # THEN what it lowered (the table's read and write) is put back at its marks, its floors
    # unknown; the GSI's read, which it did not lower, stays where it was
    assert answers == PUT_BACK
    assert capacity(dynamodb, name) == {None: (2000, 500), "bySku": (10, 5)}


def test_a_step_begun_on_a_table_already_below_its_marks_touches_nothing(
    dynamodb: Any, store: str, autoscaling: Any
) -> None:
    # GIVEN a table created minutes ago below its marks (a replaced step settled it), and a
    # hold store that cannot be read
    name = table_at_marks(dynamodb)
    before_the_step(dynamodb).update_table(
        TableName=name,
        ProvisionedThroughput={"ReadCapacityUnits": 100, "WriteCapacityUnits": 5},
    )
    updates = reads_of(dynamodb, "UpdateTable")
    # WHEN the provider runs the new step's Create
    answers = provider(
        create_event(name, f"gone-{name}"), dynamodb=dynamodb, autoscaling=autoscaling
    )
    # THEN it lowers nothing (nothing is at its mark) and puts nothing back (it lowered
    # nothing): no UpdateTable
    assert answers == [{"IsComplete": True, "Data": {"Settled": "false"}}]
    assert updates == []
    assert capacity(dynamodb, name) == {None: (100, 5), "bySku": (1000, 5)}


def updating(name: str, read: int, status: str = "UPDATING") -> dict[str, Any]:
    """DescribeTable's ``Table`` of ``name``, created a minute ago, its read at ``read`` (the
    others settled), ``status`` (UPDATING: its own update in flight), the table and its GSI
    decreased a moment ago."""
    decreased = datetime.now(UTC)
    return {
        "TableName": name,
        "TableStatus": status,
        "CreationDateTime": datetime.now(UTC) - timedelta(minutes=1),
        "ProvisionedThroughput": {
            "ReadCapacityUnits": read,
            "WriteCapacityUnits": 5,
            "LastDecreaseDateTime": decreased,
        },
        "GlobalSecondaryIndexes": [
            {
                "IndexName": "bySku",
                "IndexStatus": "ACTIVE",
                "ProvisionedThroughput": {
                    "ReadCapacityUnits": 10,
                    "WriteCapacityUnits": 5,
                    "LastDecreaseDateTime": decreased,
                },
            }
        ],
    }


def read_back(name: str) -> dict[str, Any]:
    """The UpdateTable that puts ``name``'s read back at its mark (2,000), the rest as is."""
    return {
        "TableName": name,
        "ProvisionedThroughput": {"ReadCapacityUnits": 2000, "WriteCapacityUnits": 5},
    }


def test_a_dimension_is_put_back_once_the_table_is_active_again(
    dynamodb: Any, store: str, autoscaling: Any
) -> None:
    # GIVEN a new table the step lowered (read to 100) while a capacity request recorded a
    # hold of 1,500 on its read: DynamoDB takes no UpdateTable while the table is UPDATING,
    # as it is for a while after the step's own
    name = table_name()
    hold(dynamodb, store, name, "table:read", 1400)
    event = create_event(name, store)
    table = stubbed_dynamodb()
    with Stubber(table) as stubber:
        stubber.add_response("describe_table", {"Table": updating(name, 100)}, {"TableName": name})
        active = updating(name, 100, "ACTIVE")
        stubber.add_response("describe_table", {"Table": active}, {"TableName": name})
        stubber.add_client_error("update_table", "ResourceInUseException", "updating", 400)
        stubber.add_response("describe_table", {"Table": active}, {"TableName": name})
        stubber.add_response("update_table", {"TableDescription": {}}, read_back(name))
        # WHEN the provider asks again, and again
        answers = provider(event, dynamodb=table, autoscaling=autoscaling, holds=dynamodb)
        stubber.assert_no_pending_responses()
    # THEN it waits while the table is UPDATING, and for another update in flight; then
    # puts the read back at its mark, the write and the GSI as they are
    assert answers == [{"IsComplete": False}] * 2 + [
        {"IsComplete": True, "Data": {"Settled": "true"}}
    ]


def stubbed_dynamodb() -> Any:
    return boto3.client(
        "dynamodb", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x"
    )


# ---------------------------------------------------------------- the step's time


@pytest.mark.usefixtures("in_lambda")
def test_a_table_active_too_late_to_check_what_it_lowers_is_left_at_its_marks(
    dynamodb: Any,
    store: str,
    autoscaling: Any,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # GIVEN a new table at its marks that is ACTIVE only 20 s before the step's SettleBy:
    # too late to lower it and still read its floors again once the decrease is done
    name = table_at_marks(dynamodb)
    event = create_event(name, store)
    settle_by = int(event["Data"]["SettleBy"])
    # WHEN the provider asks
    with caplog.at_level(logging.INFO):
        answer = is_complete(
            event,
            None,
            dynamodb=dynamodb,
            autoscaling=autoscaling,
            holds=dynamodb,
            clock=lambda: settle_by - 20,
        )
    # THEN nothing is lowered: the step is done, every dimension left at its mark, saying
    # why, and counted
    assert answer == {"IsComplete": True, "Data": {"Settled": "false"}}
    assert capacity(dynamodb, name) == MARKED
    left = left_events(caplog)
    assert len(left) == 3
    assert all(
        e["reason"].startswith("not lowered: the table was ACTIVE 20 s before the step's end")
        for e in left
    ), left
    assert [r["SettleLeft"] for r in counts(capsys)] == [3]


def test_the_step_s_own_decrease_in_flight_past_its_settle_by_fails_no_deploy(
    dynamodb: Any, store: str, autoscaling: Any
) -> None:
    # GIVEN a new table the step lowered (read to 100) 400 s before its SettleBy, in time,
    # while a capacity request recorded a hold of 1,500 on its read; its decrease is still
    # in flight past SettleBy (the table UPDATING, DescribeTable dating the decrease)
    name = table_name()
    hold(dynamodb, store, name, "table:read", 1400, expires_in=3600)
    event = create_event(name, store)
    settle_by = int(event["Data"]["SettleBy"])
    table = stubbed_dynamodb()
    with Stubber(table) as stubber:
        stubber.add_response("describe_table", {"Table": updating(name, 100)}, {"TableName": name})
        active = updating(name, 100, "ACTIVE")
        stubber.add_response("describe_table", {"Table": active}, {"TableName": name})
        stubber.add_response("update_table", {"TableDescription": {}}, read_back(name))
        # WHEN the provider asks 5 s past SettleBy, and 10 s later
        answers = [
            is_complete(
                event,
                None,
                dynamodb=table,
                autoscaling=autoscaling,
                holds=dynamodb,
                clock=lambda at=at: settle_by + at,  # type: ignore[misc]
            )
            for at in (5, 15)
        ]
        stubber.assert_no_pending_responses()
    # THEN it waits for its own decrease instead of failing the deploy, then puts the read
    # back at its mark
    assert answers == PUT_BACK


@pytest.mark.usefixtures("in_lambda")
def test_a_decrease_that_outlasts_the_step_leaves_what_it_lowered_counted_unchecked(
    dynamodb: Any,
    store: str,
    autoscaling: Any,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # GIVEN a new table the step lowered whose decrease is still in flight at the step's end
    # (FINISH_S past SettleBy, the provider's last calls)
    name = table_name()
    event = create_event(name, store)
    settle_by = int(event["Data"]["SettleBy"])
    table = stubbed_dynamodb()
    with Stubber(table) as stubber, caplog.at_level(logging.INFO):
        stubber.add_response("describe_table", {"Table": updating(name, 100)}, {"TableName": name})
        # WHEN the provider asks then
        answer = is_complete(
            event,
            None,
            dynamodb=table,
            autoscaling=autoscaling,
            holds=dynamodb,
            clock=lambda: settle_by + FINISH_S + 1,
        )
        stubber.assert_no_pending_responses()
    # THEN the step is done (the deploy goes on), and each dimension of the table and GSI
    # it decreased says its floors were not read again, counted for the alarm
    assert answer == {"IsComplete": True, "Data": {"Settled": "true"}}
    left = left_events(caplog)
    assert {(e["index"], e["dimension"]) for e in left} == {
        (None, "read"),
        (None, "write"),
        ("bySku", "read"),
    }
    assert all("the table is still UPDATING at the step's end" in e["reason"] for e in left)
    assert all(e["consequence"].startswith("its capacity holds and MinCapacity") for e in left)
    assert [r["SettleLeft"] for r in counts(capsys)] == [3]


@pytest.mark.usefixtures("in_lambda")
def test_a_dimension_above_its_mark_at_the_step_s_end_is_none_of_its_to_count(
    dynamodb: Any,
    store: str,
    autoscaling: Any,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # GIVEN a new table the step lowered whose decrease is still in flight at the step's
    # end, its GSI's read meanwhile raised above its mark (1,000) by auto scaling
    name = table_name()
    event = create_event(name, store)
    settle_by = int(event["Data"]["SettleBy"])
    table = stubbed_dynamodb()
    raised = updating(name, 100)
    raised["GlobalSecondaryIndexes"][0]["ProvisionedThroughput"]["ReadCapacityUnits"] = 1200
    with Stubber(table) as stubber, caplog.at_level(logging.INFO):
        stubber.add_response("describe_table", {"Table": raised}, {"TableName": name})
        # WHEN the provider asks at the step's end
        answer = is_complete(
            event,
            None,
            dynamodb=table,
            autoscaling=autoscaling,
            holds=dynamodb,
            clock=lambda: settle_by + FINISH_S + 1,
        )
        stubber.assert_no_pending_responses()
    # THEN only what a decrease of the step's left below its mark is counted unchecked: the
    # GSI's read above its mark is no dimension the step left (no false alarm)
    assert answer == {"IsComplete": True, "Data": {"Settled": "true"}}
    assert {(e["index"], e["dimension"]) for e in left_events(caplog)} == {
        (None, "read"),
        (None, "write"),
    }
    assert [r["SettleLeft"] for r in counts(capsys)] == [2]


def undated(table: dict[str, Any]) -> dict[str, Any]:
    """``table`` (`updating`) whose decrease DescribeTable does not date yet (DynamoDB may
    date it only once the update is done)."""
    for spec in [table, *table["GlobalSecondaryIndexes"]]:
        spec["ProvisionedThroughput"].pop("LastDecreaseDateTime")
    return table


@pytest.mark.usefixtures("in_lambda")
def test_the_step_s_own_undated_decrease_in_flight_past_its_settle_by_fails_no_deploy(
    dynamodb: Any,
    store: str,
    autoscaling: Any,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # GIVEN a new table at its marks that the step lowers 400 s before its SettleBy, in
    # time; its decrease is still in flight past SettleBy and to the step's end, the table
    # UPDATING and DescribeTable dating no decrease
    name = table_name()
    event = create_event(name, store)
    settle_by = int(event["Data"]["SettleBy"])
    table = stubbed_dynamodb()
    marks = undated(updating(name, 2000, "ACTIVE"))
    marks["ProvisionedThroughput"]["WriteCapacityUnits"] = 500
    marks["GlobalSecondaryIndexes"][0]["ProvisionedThroughput"]["ReadCapacityUnits"] = 1000
    with Stubber(table) as stubber, caplog.at_level(logging.INFO):
        stubber.add_response("describe_table", {"Table": marks}, {"TableName": name})
        stubber.add_response("update_table", {"TableDescription": {}})
        for _ in range(2):
            stubber.add_response(
                "describe_table", {"Table": undated(updating(name, 100))}, {"TableName": name}
            )
        # WHEN the provider asks, then 5 s past SettleBy, then past the step's end
        answers = [
            is_complete(
                event,
                None,
                dynamodb=table,
                autoscaling=autoscaling,
                holds=dynamodb,
                clock=lambda at=at: settle_by + at,  # type: ignore[misc]
            )
            for at in (-400, 5, FINISH_S + 1)
        ]
        stubber.assert_no_pending_responses()
    # THEN it waits for what may be its own decrease instead of failing the deploy; at the
    # step's end it is done, each dimension it may have lowered counted as not checked
    assert answers == [{"IsComplete": False}, *LOWERED_THEN_DONE]
    left = left_events(caplog)
    assert {(e["index"], e["dimension"]) for e in left} == {
        (None, "read"),
        (None, "write"),
        ("bySku", "read"),
    }
    assert all("the table is still UPDATING at the step's end" in e["reason"] for e in left)
    assert [r["SettleLeft"] for r in counts(capsys)] == [3]


@pytest.mark.usefixtures("in_lambda")
def test_another_writer_s_decrease_in_the_step_s_window_leaves_nothing_uncounted(
    dynamodb: Any,
    store: str,
    autoscaling: Any,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # GIVEN a new table at its marks whose GSI's read another writer (auto scaling's
    # scale-in, the scaler) lowers after the step began, before its first call looks
    name = table_at_marks(dynamodb)
    event = create_event(name, store)
    dynamodb.update_table(
        TableName=name,
        GlobalSecondaryIndexUpdates=[
            {
                "Update": {
                    "IndexName": "bySku",
                    "ProvisionedThroughput": {"ReadCapacityUnits": 900, "WriteCapacityUnits": 5},
                }
            }
        ],
    )
    # WHEN the provider runs the step's Create
    with caplog.at_level(logging.INFO):
        answers = provider(event, dynamodb=dynamodb, autoscaling=autoscaling, holds=dynamodb)
    # THEN the step takes that decrease for its own and lowers nothing more; but each
    # dimension this deploy provisioned still at its mark is logged, saying the step did not
    # lower it, and counted once (SettleLeft, which the step's alarm watches)
    assert answers == [{"IsComplete": True, "Data": {"Settled": "true"}}]
    assert capacity(dynamodb, name) == {None: (2000, 500), "bySku": (900, 5)}
    left = left_events(caplog)
    assert {(e["index"], e["dimension"]) for e in left} == {(None, "read"), (None, "write")}
    assert all("the step did not lower it" in e["reason"] for e in left), left
    assert [r["SettleLeft"] for r in counts(capsys)] == [2]


# ---------------------------------------------------------------- a Create and its minimums


def test_a_create_never_lowers_below_a_registered_minimum(
    dynamodb: Any, autoscaling: Any, caplog: pytest.LogCaptureFixture
) -> None:
    # GIVEN a new table at its marks whose read's scalable target is registered with a
    # MinCapacity of 700 (a capacity request of another stack, the scaler or a scheduled
    # action raised it before the step ran), its other targets at 1
    name = table_at_marks(dynamodb)
    register(autoscaling, name, {"read": 700})
    # WHEN the provider runs the step's Create (its table served by no hold store)
    with caplog.at_level(logging.INFO):
        answers = provider(create_event(name, None), dynamodb=dynamodb, autoscaling=autoscaling)
    # THEN the read goes no lower than its minimum, the others to their operating capacity
    assert answers == LOWERED_THEN_DONE
    assert capacity(dynamodb, name) == {None: (700, 5), "bySku": (10, 5)}
    (settled,) = [vars(r) for r in caplog.records if r.getMessage() == "settle"]
    minimums = {(t["index"], t["dimension"]): t["min_capacity"] for t in settled["traffic"]}
    assert minimums == {(None, "read"): 700, (None, "write"): 1, ("bySku", "read"): 1}


@pytest.mark.parametrize("answered", ["ThrottlingException", "InternalServerError"])
def test_a_create_s_minimum_read_is_retried_by_the_function_s_own_client(
    dynamodb: Any,
    autoscaling: Any,
    aws_env: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
    answered: str,
) -> None:
    # GIVEN a new table whose read's MinCapacity is 700, and the settle function's own
    # Application Auto Scaling client, whose first attempt is answered with a throttle or
    # a server's error
    name = table_at_marks(dynamodb)
    register(autoscaling, name, {"read": 700})
    for key, value in aws_env.items():
        monkeypatch.setenv(key, value)
    own = settle_autoscaling_client()
    attempts = first_attempt_fails(own, answered)
    # WHEN the provider runs the step's Create through it
    answers = provider(create_event(name, None), dynamodb=dynamodb, autoscaling=own)
    # THEN the read was tried again (botocore's retries, as on an Update) and its minimum kept
    assert answers == LOWERED_THEN_DONE
    assert len(attempts) >= 2
    assert capacity(dynamodb, name)[None] == (700, 5)


def first_attempt_fails(client: Any, code: str) -> list[int]:
    """``client``'s (Application Auto Scaling's) first attempt of DescribeScalableTargets
    answered with ``code`` (a throttle, 400; a server's error, 500), as AWS answers them;
    the attempts sent."""
    sent: list[int] = []
    status = 400 if code == "ThrottlingException" else 500

    def answer(request: Any, **_: Any) -> AWSResponse | None:
        sent.append(1)
        if len(sent) > 1:
            return None
        body = json.dumps({"__type": code, "message": "try again"}).encode()
        headers = HTTPHeaders.from_dict({"Content-Type": "application/x-amz-json-1.1"})
        return AWSResponse(request.url, status, headers, _Raw(body))

    client.meta.events.register(
        "before-send.application-auto-scaling.DescribeScalableTargets", answer
    )
    return sent


@pytest.mark.usefixtures("in_lambda")
def test_a_create_whose_minimums_cannot_be_read_leaves_its_dimensions_at_their_marks(
    dynamodb: Any, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a new table whose scalable targets cannot be listed (denied)
    name = table_at_marks(dynamodb)
    denied = boto3.client(
        "application-autoscaling",
        region_name="us-east-1",
        aws_access_key_id="x",
        aws_secret_access_key="x",
    )
    stubber = Stubber(denied)
    stubber.add_client_error("describe_scalable_targets", "AccessDeniedException", "no")
    stubber.activate()
    # WHEN the provider runs the step's Create
    with caplog.at_level(logging.INFO):
        answers = provider(create_event(name, None), dynamodb=dynamodb, autoscaling=denied)
    # THEN nothing is lowered: each auto-scaled dimension stays at its mark, for auto
    # scaling to lower, logged and counted as on an Update
    assert answers == [{"IsComplete": True, "Data": {"Settled": "false"}}]
    assert capacity(dynamodb, name) == MARKED
    left = left_events(caplog)
    assert len(left) == 3
    assert all("DescribeScalableTargets: AccessDeniedException" in e["reason"] for e in left)
    assert [r["SettleLeft"] for r in counts(capsys)] == [3]
