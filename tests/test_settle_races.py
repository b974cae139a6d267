"""The settle step against what changes while it lowers, and a Create against the minimums
registered on its new table.

What the step reads (a capacity request's holds, a scalable target's MinCapacity) may change
before its UpdateTable lands: a request records its hold on a table it found at its mark, and
raises nothing; a scheduled action raises a minimum. The concurrent write is made by a botocore
hook on the step's own UpdateTable, after every read of the step and before the update goes,
so each interleaving is played exactly. The table, its scalable targets, its traffic and its
hold store are a moto server's; the table states moto never shows (UPDATING after an update)
are a Stubber's, as in the other settle tests."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.awsrequest import AWSResponse
from botocore.compat import HTTPHeaders
from botocore.stub import Stubber

from ddb_capacity_runtime.aws.clients import settle_autoscaling_client, settle_store_client
from ddb_capacity_runtime.settle import handler
from ddb_capacity_runtime.settle.handler import is_complete
from tests.test_retry_policy import _Raw
from tests.test_settle_holds import (
    counts,
    create_event,
    hold,
    settled_to,
)
from tests.test_settle_holds import (
    dynamodb as dynamodb,  # noqa: F401 (fixture)
)
from tests.test_settle_holds import (
    in_lambda as in_lambda,  # noqa: F401 (fixture)
)
from tests.test_settle_holds import (
    store as store,  # noqa: F401 (fixture)
)
from tests.test_settle_live import (
    autoscaling as autoscaling,  # noqa: F401 (fixture)
)
from tests.test_settle_live import (
    busy,
    described,
    left_events,
    register,
    settle,
    table_name,
    update_event,
)
from tests.test_settle_live import (
    cloudwatch as cloudwatch,  # noqa: F401 (fixture)
)

ROOT = Path(__file__).resolve().parent.parent
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


PUT_BACK = [{"IsComplete": False}, {"IsComplete": True, "Data": {"Settled": "true"}}]
"""The answers of a step that lowered, found a floor risen, and put the dimension back."""


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


def test_the_reads_again_take_what_the_page_says(monkeypatch: pytest.MonkeyPatch) -> None:
    # the reads again of a served table (its targets' listing, up to 2 pages of its holds),
    # each at its worst through the settle function's own clients: 33 s, which the page
    # gives as what a call must have left to make them
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    readers = handler._readers((None, None, None, None), ("orders", "holds"), new=True)
    again = readers.bound(traffic=False)
    assert again == 33.0
    page = " ".join((ROOT / "docs/guides/high-water-marks.md").read_text().split())
    assert f"({again:.0f} seconds at most, with a hold store)" in page


class Context:
    """Lambda's context of a call with ``seconds`` left."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    def get_remaining_time_in_millis(self) -> int:
        return int(self.seconds * 1000)


@pytest.mark.usefixtures("in_lambda")
def test_a_call_without_the_time_to_read_again_leaves_it_to_the_next(
    dynamodb: Any,
    store: str,
    aws_env: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
    before_the_update: Callable[[Callable[[], None]], None],
    caplog: pytest.LogCaptureFixture,
) -> None:
    # GIVEN a new table at its marks, read through the settle function's own clients (their
    # reads again may take 33 s at worst: a listing of its targets, 2 pages of its holds),
    # and calls with 30 s left; a capacity request records a hold of 1,500 on its read as
    # the step's UpdateTable goes
    name = table_at_marks(dynamodb)
    for key, value in aws_env.items():
        monkeypatch.setenv(key, value)
    autoscaling, holds = settle_autoscaling_client(), settle_store_client()
    before_the_update(lambda: hold(dynamodb, store, name, "table:read", 1400))
    event = create_event(name, store)
    # WHEN the provider runs the step's Create
    with caplog.at_level(logging.INFO):
        answers = [
            is_complete(event, Context(30), dynamodb, autoscaling=autoscaling, holds=holds)
            for _ in range(2)
        ]
    # THEN the call that lowered leaves the reads again to the next call, which puts the
    # read back at its mark
    assert answers == PUT_BACK
    (waiting,) = [vars(r) for r in caplog.records if r.getMessage() == "settle-waiting"]
    assert "read again at the next call" in waiting["status"], waiting
    assert capacity(dynamodb, name) == {None: (2000, 5), "bySku": (10, 5)}


def not_found_after_first(client: Any, operation: str) -> None:
    """``client``'s attempts of ``operation`` after its first answered
    ResourceNotFoundException (the hold store gone), as AWS answers it."""
    sent: list[int] = []

    def answer(request: Any, **_: Any) -> AWSResponse | None:
        sent.append(1)
        if len(sent) == 1:
            return None
        body = b'{"__type":"com.amazonaws.dynamodb.v20120810#ResourceNotFoundException","message":"gone"}'
        headers = HTTPHeaders.from_dict({"Content-Type": "application/x-amz-json-1.0"})
        return AWSResponse(request.url, 400, headers, _Raw(body))

    client.meta.events.register(f"before-send.dynamodb.{operation}", answer)


@pytest.mark.usefixtures("in_lambda")
def test_what_cannot_be_read_again_once_lowered_is_put_back(
    dynamodb: Any,
    store: str,
    autoscaling: Any,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # GIVEN a new table at its marks whose hold store answers the step's first read, and no
    # read after it (unknown data: what it holds now is not known)
    name = table_at_marks(dynamodb)
    reader = boto3.client(
        "dynamodb",
        endpoint_url=dynamodb.meta.endpoint_url,
        region_name="us-east-1",
        aws_access_key_id="test",
        aws_secret_access_key="test",
    )
    not_found_after_first(reader, "Query")
    # WHEN the provider runs the step's Create
    with caplog.at_level(logging.INFO):
        answers = provider(
            create_event(name, store), dynamodb=dynamodb, autoscaling=autoscaling, holds=reader
        )
    # THEN what it lowered is put back at its marks: unknown data never lowers capacity
    assert answers == PUT_BACK
    assert capacity(dynamodb, name) == MARKED
    left = left_events(caplog)
    assert len(left) == 3 and all("its floor could not be read (" in e["reason"] for e in left), (
        left
    )
    assert [r["SettleLeft"] for r in counts(capsys)] == [3]


def updating(name: str, read: int) -> dict[str, Any]:
    """DescribeTable's ``Table`` of ``name``, created a minute ago, its read at ``read`` (the
    others settled), ``UPDATING`` (its own update in flight)."""
    return {
        "TableName": name,
        "TableStatus": "UPDATING",
        "CreationDateTime": datetime.now(UTC) - timedelta(minutes=1),
        "ProvisionedThroughput": {"ReadCapacityUnits": read, "WriteCapacityUnits": 5},
        "GlobalSecondaryIndexes": [
            {
                "IndexName": "bySku",
                "IndexStatus": "ACTIVE",
                "ProvisionedThroughput": {"ReadCapacityUnits": 10, "WriteCapacityUnits": 5},
            }
        ],
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
        active = {**updating(name, 100), "TableStatus": "ACTIVE"}
        stubber.add_response("describe_table", {"Table": active}, {"TableName": name})
        stubber.add_client_error("update_table", "ResourceInUseException", "updating", 400)
        stubber.add_response("describe_table", {"Table": active}, {"TableName": name})
        back = settled_to(name, 2000)
        del back["GlobalSecondaryIndexUpdates"]  # the GSI is not touched
        stubber.add_response("update_table", {"TableDescription": {}}, back)
        # WHEN the provider asks again, and again
        answers = provider(event, dynamodb=table, autoscaling=autoscaling, holds=dynamodb)
        stubber.assert_no_pending_responses()
    # THEN it waits while the table is UPDATING, and for another update in flight; then
    # puts the read back at its mark, the write and the GSI as they are
    assert answers == [{"IsComplete": False}] * 2 + [
        {"IsComplete": True, "Data": {"Settled": "true"}}
    ]


@pytest.mark.usefixtures("in_lambda")
def test_a_call_that_puts_a_dimension_back_lowers_nothing_and_counts_what_it_leaves(
    cloudwatch: Any,
    autoscaling: Any,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # GIVEN a live table whose new marks this deploy set, but whose read is at 1,500 (below
    # its mark of 2,000) while its scalable target's MinCapacity is 1,800 now; its write and
    # its GSI's read still at their marks, their traffic and minimums known
    name = table_name()
    busy(cloudwatch, name)
    register(autoscaling, name, {"read": 1800})
    # WHEN the step's Update runs: THEN its one UpdateTable puts the read back at its mark,
    # and lowers nothing else
    back = {
        "TableName": name,
        "ProvisionedThroughput": {"ReadCapacityUnits": 2000, "WriteCapacityUnits": 500},
    }
    with caplog.at_level(logging.INFO):
        answer = settle(
            update_event(name), described(name, read=1500), back, cloudwatch, autoscaling
        )
    assert answer == {"IsComplete": True, "Data": {"Settled": "true"}}
    # AND every dimension it leaves at its mark is logged and counted, the read saying why
    left = {(e["index"], e["dimension"]): e["reason"] for e in left_events(caplog)}
    assert set(left) == {(None, "read"), (None, "write"), ("bySku", "read")}
    assert (
        "at 1,500, below its mark, while its scalable target's MinCapacity is 1,800"
        in (left[(None, "read")])
    )
    assert left[(None, "write")].startswith("not lowered: the same call put another dimension")
    assert [r["SettleLeft"] for r in counts(capsys)] == [3]


def stubbed_dynamodb() -> Any:
    return boto3.client(
        "dynamodb", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x"
    )


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
    assert answers == [{"IsComplete": True, "Data": {"Settled": "true"}}]
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
    assert answers == [{"IsComplete": True, "Data": {"Settled": "true"}}]
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
