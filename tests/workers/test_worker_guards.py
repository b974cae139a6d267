"""What the background workers and the replica-schedule function promise at their edges.

The token bucket: a rate change applies from then on, and a stop ends a wait for debt at
once. The scan: its settings are bounded, a page asks for at most 1,000 items, a backoff
lasts at most 20 s, a stop during a backoff reads nothing more, a page whose handler failed
is delivered again on resume, one segment's failure stops the others, and a cursor table
that cannot be read is not called missing. The writer: it paces by what a batch consumed,
starts slow however long after it was built, slows down for the strongest throttle of a
split batch, writes the valid item of a batch of two, and waits at most 10 s before a
resend. The replica schedule: a failure is logged naming the table and the Region, an
update to a new Region that fails leaves nothing there, properties out of bounds are
refused, and an action moved to another target leaves the old one.

Against moto (dynalite where consumed capacity must follow item size); botocore's Stubber or
an event hook on a real client stands in for what neither server does (throttles and their
reasons, an access denied, an answer without consumed capacity, a refused put)."""

from __future__ import annotations

import logging
import random
import threading
import uuid
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from botocore.stub import Stubber

from ddb_capacity_runtime.core.errors import CapacityError, ReplicaScheduleError, WriteError
from ddb_capacity_runtime.core.names import resource_id
from ddb_capacity_runtime.global_tables.handler import on_event
from ddb_capacity_runtime.global_tables.replica_actions import ACTION_PREFIX, parse_schedule
from ddb_capacity_runtime.workers.pacing import PacingError, TokenBucket
from ddb_capacity_runtime.workers.scan import (
    CursorStore,
    RateLimitedScan,
    ScanError,
    create_cursor_table,
)
from ddb_capacity_runtime.workers.writer import SlowStartWriter
from ddb_capacity_tools import local_aws
from tests.support.background_work import collector, make_table
from tests.support.global_table_actions import (
    INDEX,
    TABLE,
    Tagger,
    action,
    actions_in,
    event,
    ours,
    props,
    run,
    targets,  # noqa: F401
)
from tests.support.worker_throttle_causes import (
    FakeClock,
    add_throttle,
    backoffs,
    batch,
    events,
    expected,
    ok,
    page,
    stubbed,
    write,
)

ITEMS = 1_100


@pytest.fixture(scope="module")
def shelf(moto_endpoint: str) -> tuple[Any, str, set[str]]:
    """A moto table of 1,100 small items (more than one page's 1,000): its client, its name
    and its keys. The tests only read it."""
    ddb = local_aws.client(moto_endpoint, "dynamodb")
    name = f"Shelf{uuid.uuid4().hex[:8]}"
    make_table(ddb, name)
    keys = {f"item-{i:05d}" for i in range(ITEMS)}
    written = SlowStartWriter(ddb, name, start_rate=50_000, max_rate=50_000).write(
        {"pk": k} for k in keys
    )
    assert written.written == ITEMS
    return ddb, name, keys


def new_table(moto_endpoint: str) -> tuple[Any, str]:
    ddb = local_aws.client(moto_endpoint, "dynamodb")
    name = f"Items{uuid.uuid4().hex[:8]}"
    make_table(ddb, name)
    return ddb, name


def stored(ddb: Any, name: str) -> set[str]:
    return {i["pk"]["S"] for i in ddb.scan(TableName=name)["Items"]}


def fail_with(code: str, when: Callable[[dict[str, Any]], bool]) -> Callable[..., None]:
    """An event hook that raises ``code`` for the calls whose parameters ``when`` picks."""

    def hook(params: dict[str, Any], **_: Any) -> None:
        if when(params):
            raise ClientError({"Error": {"Code": code, "Message": "refused"}}, "call")

    return hook


# ---------------------------------------------------------------- the token bucket


def test_a_rate_change_applies_from_then_on_not_to_the_time_before() -> None:
    # GIVEN a bucket of 10 units/s, 90 units in debt, 5 s later (40 in debt at 10/s)
    clock = FakeClock()
    bucket = TokenBucket(10, clock=clock, sleep=clock.sleep)
    bucket.acquire(100)
    clock.now = 5.0
    # WHEN its rate becomes 1,000 units/s and a request follows
    bucket.set_rate(1_000)
    bucket.acquire(1)
    # THEN the 5 s before the change paid 50 of the debt, the 40 left take 0.04 s more
    assert clock.now >= 5.04


def test_a_stop_while_the_bucket_is_in_debt_returns_at_once() -> None:
    # GIVEN a bucket of 1 unit/s, 999 units in debt (a quarter hour to wait), and a stop set
    clock = FakeClock()
    bucket = TokenBucket(1, clock=clock, sleep=clock.sleep)
    bucket.acquire(1_000)
    stop = threading.Event()
    stop.set()
    # WHEN a caller asks for more THEN it is told to stop without waiting out the debt
    assert bucket.acquire(1, stop) is False
    assert clock.now == 0.0


@pytest.mark.parametrize("units", ["5", None, float("nan"), float("inf")], ids=repr)
def test_the_bucket_refuses_units_that_are_not_a_number(units: Any) -> None:
    # GIVEN a bucket WHEN it is asked to reserve, or settle, what is not a number of units
    bucket = TokenBucket(10)
    for call, name in ((bucket.acquire, "estimate"), (bucket.settle, "difference")):
        # THEN it is refused, named, and the bucket is as it was
        with pytest.raises(PacingError) as caught:
            call(units)
        assert str(caught.value) == f"{name}: got {units!r}; expected a number of capacity units"
    assert bucket.acquire(1) is True


# ---------------------------------------------------------------- the scan


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"initial_limit": 0}, "initial_limit: got 0; expected a whole number from 1 to 1000"),
        ({"initial_limit": 1_001}, "initial_limit: got 1001; expected a whole number from 1"),
        ({"page_units": float("nan")}, "page_units: got nan; expected a number > 0"),
        ({"page_units": float("inf")}, "page_units: got inf; expected a number > 0"),
    ],
)
def test_scan_settings_out_of_range_are_refused(kwargs: dict[str, Any], message: str) -> None:
    # GIVEN a setting out of its range WHEN a scan is made with it THEN it is refused, named
    ddb = boto3.client("dynamodb", region_name="us-east-1")
    with pytest.raises(ScanError, match=message):
        RateLimitedScan(ddb, "tbl", rate=10, **kwargs)


def test_a_page_never_asks_for_more_than_a_thousand_items(shelf: tuple[Any, str, set[str]]) -> None:
    # GIVEN a table of 1,100 items whose pages moto reports at 1 unit whatever their size,
    # and a scan aiming at 100 units a page (2,000 items, from its first page of 20)
    ddb, name, keys = shelf
    sizes: list[int] = []
    seen, collect = collector()

    def handle(segment: int, items: list[dict[str, Any]]) -> None:
        sizes.append(len(items))
        collect(segment, items)

    # WHEN it runs
    RateLimitedScan(ddb, name, rate=100_000, segments=1, initial_limit=20, page_units=100).run(
        handle
    )
    # THEN every item is delivered, in pages of at most 1,000
    assert set(seen) == keys
    assert sizes[0] == 20 and max(sizes) == 1_000


def test_a_scan_backoff_never_exceeds_twenty_seconds() -> None:
    # GIVEN a page throttled 12 times (no reasons), then read
    client, stub = stubbed()
    for _ in range(12):
        add_throttle(stub, "scan", None)
    stub.add_response("scan", page(["a"], 1.0))
    sleeps: list[float] = []
    # WHEN a scan that retries up to 12 times reads it
    with stub:
        result = RateLimitedScan(
            client, "tbl", rate=100, segments=1, max_throttle_retries=12, sleep=sleeps.append
        ).run(lambda segment, items: None)
    # THEN its backoff doubled from 0.1 s up to 20 s, never more
    assert result.items == 1 and len(sleeps) == 12
    assert sleeps[:3] == [0.1, 0.2, 0.4] and max(sleeps) == 20.0


def test_a_stop_during_a_throttle_backoff_ends_the_segment_without_another_read() -> None:
    # GIVEN a scan whose page is throttled, and a stop set while it backs off
    client, stub = stubbed()
    for _ in range(3):
        add_throttle(stub, "scan", None)
    seen: list[dict[str, Any]] = []
    scan = RateLimitedScan(client, "tbl", rate=100, segments=1, max_throttle_retries=2)
    scan.sleep = lambda seconds: scan.stop.set()
    # WHEN it runs
    with stub:
        result = scan.run(lambda segment, items: seen.extend(items))
    # THEN it ends interrupted after that one read: no retry, no error, nothing delivered
    assert result.interrupted and seen == [] and result.throttled == 1


def test_a_page_whose_handler_failed_is_delivered_again_on_resume(
    shelf: tuple[Any, str, set[str]],
) -> None:
    # GIVEN a resumable scan in pages of 100 whose handler fails on the second page
    ddb, name, keys = shelf
    cursors = f"Cursors{uuid.uuid4().hex[:8]}"
    create_cursor_table(ddb, cursors)
    store = CursorStore(ddb, cursors)
    handled: list[str] = []
    calls: list[int] = []

    def handle(segment: int, items: list[dict[str, Any]]) -> None:
        calls.append(segment)
        if len(calls) == 2:
            raise RuntimeError("the handler failed")
        handled.extend(i["pk"]["S"] for i in items)

    scan = RateLimitedScan(
        ddb, name, rate=100_000, segments=1, initial_limit=100, page_units=1,
        store=store, scan_id="handler-failed",
    )  # fmt: skip
    with pytest.raises(RuntimeError, match="the handler failed"):
        scan.run(handle)
    assert len(handled) == 100
    # WHEN the scan is resumed
    seen, collect = collector()
    RateLimitedScan(ddb, name, rate=100_000, segments=1, store=store, scan_id="handler-failed").run(
        collect
    )
    # THEN the page the handler failed on is delivered again: every item at least once
    assert set(handled) | set(seen) == keys


def test_one_segments_failure_stops_the_others(shelf: tuple[Any, str, set[str]]) -> None:
    # GIVEN a scan of 2 segments of which segment 0 is refused access, and segment 1's
    # handler which waits (up to 5 s) on its first page for the scan to stop
    ddb, name, _ = shelf
    hook = fail_with("AccessDeniedException", lambda p: p.get("Segment") == 0)
    ddb.meta.events.register("before-parameter-build.dynamodb.Scan", hook)
    scan = RateLimitedScan(ddb, name, rate=100_000, segments=2, initial_limit=20, page_units=1)
    pages: list[int] = []

    def handle(segment: int, items: list[dict[str, Any]]) -> None:
        pages.append(segment)
        if len(pages) == 1:
            scan.stop.wait(timeout=5)

    # WHEN it runs
    try:
        with pytest.raises(ClientError, match="AccessDenied"):
            scan.run(handle)
    finally:
        ddb.meta.events.unregister("before-parameter-build.dynamodb.Scan", hook)
    # THEN segment 0's error ends the scan: segment 1 reads no page after the one in hand
    assert pages in ([], [1])


def test_a_cursor_table_that_cannot_be_read_is_not_called_missing(
    shelf: tuple[Any, str, set[str]],
) -> None:
    # GIVEN a cursor table that exists, which the scan's role may not read
    ddb, name, _ = shelf
    cursors = f"Cursors{uuid.uuid4().hex[:8]}"
    create_cursor_table(ddb, cursors)
    hook = fail_with("AccessDeniedException", lambda p: p.get("TableName") == cursors)
    ddb.meta.events.register("before-parameter-build.dynamodb.GetItem", hook)
    scan = RateLimitedScan(ddb, name, rate=1_000, store=CursorStore(ddb, cursors), scan_id="denied")
    # WHEN the scan runs THEN it fails with the access error itself, not "not found"
    try:
        with pytest.raises(ClientError, match="AccessDenied") as caught:
            scan.run(lambda segment, items: None)
    finally:
        ddb.meta.events.unregister("before-parameter-build.dynamodb.GetItem", hook)
    assert not isinstance(caught.value, ScanError)


# ---------------------------------------------------------------- the writer


def test_the_writer_paces_by_what_a_batch_consumed_not_by_its_estimate(
    dynalite_endpoint: str,
) -> None:
    # GIVEN 50 items of 9 KB (9 write units each, as dynalite counts them), and a writer
    # at 10 units/s that estimates 1 unit an item before its first batch
    ddb = local_aws.client(dynalite_endpoint, "dynamodb")
    name = f"Heavy{uuid.uuid4().hex[:8]}"
    make_table(ddb, name)
    ddb.get_waiter("table_exists").wait(TableName=name, WaiterConfig={"Delay": 0.1})
    clock = FakeClock()
    writer = SlowStartWriter(ddb, name, start_rate=10, max_rate=10, clock=clock, sleep=clock.sleep)
    # WHEN it writes them
    result = writer.write({"pk": f"k{i}", "body": "x" * 9_000} for i in range(50))
    # THEN it stayed within burst + rate x time + one batch, by the units each consumed
    assert result.written == 50 and result.consumed == 450
    assert result.consumed <= 10 + 10 * clock.now + 225 + 1e-6


def test_a_writer_built_long_before_it_writes_still_starts_slow(moto_endpoint: str) -> None:
    # GIVEN a writer of 10 units/s, stepping every 60 s, built 10 minutes before it writes
    ddb, name = new_table(moto_endpoint)
    clock = FakeClock()
    writer = SlowStartWriter(
        ddb, name, start_rate=10, max_rate=100, step_seconds=60, clock=clock, sleep=clock.sleep
    )
    clock.now += 600
    # WHEN it writes 5 items
    result = writer.write({"pk": f"k{i}"} for i in range(5))
    # THEN it wrote them at its start rate: the idle minutes are no step
    assert result.written == 5 and result.rates == [10.0]


@pytest.mark.parametrize("other", ["provisioned", "unprocessed"])
def test_a_split_batch_slows_down_for_its_strongest_throttle(other: str) -> None:
    """A batch with an invalid item is sent one item at a time: there, one item meets a hot
    key and another a throttle that slowing cures (a provisioned throttle, or
    UnprocessedItems, which say no cause)."""

    def calls(stub: Stubber) -> None:
        stub.add_client_error(
            "batch_write_item", "ValidationException", "bad",
            expected_params=expected(["bad", "hot", "other"]),
        )  # fmt: skip
        stub.add_client_error(
            "batch_write_item", "ValidationException", "bad", expected_params=expected(["bad"])
        )
        hot = ["TableWriteKeyRangeThroughputExceeded"]
        add_throttle(stub, "batch_write_item", hot, expected_params=expected(["hot"]))
        if other == "provisioned":
            cold = ["TableWriteProvisionedThroughputExceeded"]
            add_throttle(stub, "batch_write_item", cold, expected_params=expected(["other"]))
        else:
            stub.add_response(
                "batch_write_item",
                {"UnprocessedItems": batch(["other"]), "ConsumedCapacity": []},
                expected_params=expected(["other"]),
            )
        stub.add_response("batch_write_item", ok(2.0), expected_params=expected(["hot", "other"]))

    # WHEN the writer (grown to 40 units/s) writes the three
    result, writer, _ = write(calls, ["bad", "hot", "other"], rng=random.Random(1))
    # THEN it halves its rate, writes the two and returns the invalid one
    assert result.rates == [40, 20.0] and writer.bucket.rate == 20.0
    assert result.written == 2 and [f.item for f in result.failed] == [{"pk": "bad"}]


def test_an_invalid_item_in_a_batch_of_two_does_not_fail_the_other(moto_endpoint: str) -> None:
    # GIVEN two items, the first over DynamoDB's 400 KB item size
    ddb, name = new_table(moto_endpoint)
    big = {"pk": "big", "body": "x" * 420_000}
    # WHEN the writer writes them
    result = SlowStartWriter(ddb, name, start_rate=1_000, max_rate=1_000).write([big, {"pk": "ok"}])
    # THEN the valid one is written, and the invalid one returned with DynamoDB's reason
    assert result.written == 1 and stored(ddb, name) == {"ok"}
    [failed] = result.failed
    assert failed.item is big and failed.reason.startswith("ValidationException")


def test_a_write_backoff_never_exceeds_ten_seconds() -> None:
    # GIVEN an item throttled 11 times, then written, by a writer allowed 12 attempts
    def calls(stub: Stubber) -> None:
        for _ in range(11):
            add_throttle(stub, "batch_write_item", None, expected_params=expected(["k0"]))
        stub.add_response("batch_write_item", ok(1.0), expected_params=expected(["k0"]))

    # WHEN it writes the item
    result, _, throttles = write(calls, ["k0"], max_attempts=12)
    # THEN its backoff doubled from 0.1 s up to 10 s, never more
    assert result.written == 1 and result.failed == []
    waits = backoffs(throttles)
    assert waits[:3] == [0.1, 0.2, 0.4] and max(waits) == 10.0


# ---------------------------------------------------------------- the workers' arguments

CLIENT = "dynamodb: got {}; expected a DynamoDB client (boto3.client('dynamodb'))"
RESOURCE = (
    "dynamodb: got a boto3 resource (dynamodb.ServiceResource); expected a DynamoDB client "
    "(boto3.client('dynamodb'), or the resource's own: resource.meta.client)"
)
TABLE_NAME = (
    "{}: got {!r}; expected a table name (3 to 255 letters, digits, '_', '.' or '-') or a "
    "table's ARN"
)


def workers(dynamodb: Any, table: Any) -> dict[str, Callable[[], object]]:
    """Each worker's entry point made with ``dynamodb`` for the client and ``table`` for the
    table's name."""
    return {
        "RateLimitedScan": lambda: RateLimitedScan(dynamodb, table, rate=10),
        "SlowStartWriter": lambda: SlowStartWriter(dynamodb, table, start_rate=1, max_rate=1),
        "CursorStore": lambda: CursorStore(dynamodb, table),
        "create_cursor_table": lambda: create_cursor_table(dynamodb, table),
    }


@pytest.mark.parametrize("worker", list(workers(None, None)))
def test_a_worker_refuses_what_is_not_a_dynamodb_client(worker: str) -> None:
    # GIVEN a boto3 resource, another service's client and a string for the client
    resource = boto3.resource("dynamodb", region_name="us-east-1")
    s3 = boto3.client("s3", region_name="us-east-1")
    wrong = [
        (resource, RESOURCE),
        (s3, CLIENT.format("a s3 client")),
        ("ddb", CLIENT.format("'ddb'")),
    ]
    for given, message in wrong:
        # WHEN a worker is made with it THEN it is refused at once, naming the argument
        with pytest.raises(CapacityError) as caught:
            workers(given, "Orders")[worker]()
        assert str(caught.value) == message
        assert isinstance(caught.value, ValueError)


@pytest.mark.parametrize("worker", list(workers(None, None)))
@pytest.mark.parametrize("table", ["", "ab", None, "bad name"], ids=repr)
def test_a_worker_refuses_what_is_not_a_table_name(worker: str, table: Any) -> None:
    ddb = boto3.client("dynamodb", region_name="us-east-1")
    with pytest.raises(CapacityError) as caught:
        workers(ddb, table)[worker]()
    field = "name" if worker == "create_cursor_table" else "table"
    assert str(caught.value) == TABLE_NAME.format(field, table)


def test_a_table_given_as_its_arn_is_a_table_name() -> None:
    ddb = boto3.client("dynamodb", region_name="us-east-1")
    arn = "arn:aws:dynamodb:us-east-1:123456789012:table/Orders"
    assert RateLimitedScan(ddb, arn, rate=10).table == arn
    assert SlowStartWriter(ddb, arn, start_rate=1, max_rate=1).table == arn


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (
            {"store": "scan-cursors", "scan_id": "a"},
            "store: got 'scan-cursors'; expected a CursorStore (CursorStore(dynamodb, "
            "'scan-cursors')), or None",
        ),
        (
            {
                "store": CursorStore(boto3.client("dynamodb", region_name="us-east-1"), "cur"),
                "scan_id": "",
            },
            "scan_id: got ''; expected the id its cursors are kept under: 1 to 1024 characters",
        ),
        (
            {"index": ""},
            "index: got ''; expected None or an index name (3 to 255 letters, digits, '_', "
            "'.' or '-')",
        ),
        ({"projection": ""}, "projection: got ''; expected None or a ProjectionExpression"),
        ({"consistent_read": "yes"}, "consistent_read: got 'yes'; expected True or False"),
        ({"bucket": 100}, "bucket: got 100; expected a TokenBucket, or None for its own"),
    ],
    ids=["store", "scan_id", "index", "projection", "consistent_read", "bucket"],
)
def test_a_scan_refuses_settings_of_the_wrong_kind(kwargs: dict[str, Any], message: str) -> None:
    # GIVEN a setting of the wrong kind WHEN a scan is made with it THEN it is refused, named
    ddb = boto3.client("dynamodb", region_name="us-east-1")
    with pytest.raises(ScanError) as caught:
        RateLimitedScan(ddb, "Orders", rate=10, **kwargs)
    assert str(caught.value) == message


def test_a_scan_refuses_a_handler_it_cannot_call() -> None:
    ddb = boto3.client("dynamodb", region_name="us-east-1")
    with pytest.raises(ScanError) as caught:
        RateLimitedScan(ddb, "Orders", rate=10).run("handle")  # type: ignore[arg-type]
    assert str(caught.value) == (
        "handle: got 'handle'; expected a function taking a segment and a page of items"
    )


def test_a_scan_of_a_missing_table_names_it(moto_endpoint: str) -> None:
    # GIVEN a table name that is no table of the account and Region
    ddb = local_aws.client(moto_endpoint, "dynamodb")
    missing = f"Missing{uuid.uuid4().hex[:8]}"
    # WHEN a scan of it runs THEN it fails with a ScanError naming the table
    with pytest.raises(ScanError) as caught:
        RateLimitedScan(ddb, missing, rate=100, segments=2).run(lambda s, i: None)
    assert str(caught.value) == (
        f"table: got {missing!r}; no such table in this account and Region (us-east-1): "
        "check the name, and the client's credentials and Region"
    )


@pytest.mark.parametrize(
    "items",
    [{"pk": "w2"}, "w2", b"w2", None, 5],
    ids=["a dict", "a str", "bytes", "None", "an int"],
)
def test_the_writer_refuses_what_is_not_a_collection_of_items(
    moto_endpoint: str, items: Any
) -> None:
    # GIVEN one item, a string or no collection at all where the items are expected
    ddb, name = new_table(moto_endpoint)
    writer = SlowStartWriter(ddb, name, start_rate=10, max_rate=10)
    # WHEN it is written THEN it is refused, named, and nothing is sent
    with pytest.raises(WriteError) as caught:
        writer.write(items)
    assert str(caught.value).startswith(f"items: got {items!r}; expected an iterable of items")
    assert stored(ddb, name) == set()


def test_a_missing_table_is_named_in_each_failed_item(moto_endpoint: str) -> None:
    ddb = local_aws.client(moto_endpoint, "dynamodb")
    missing = f"Missing{uuid.uuid4().hex[:8]}"
    result = SlowStartWriter(ddb, missing, start_rate=100, max_rate=100).write([{"pk": "a"}])
    [failed] = result.failed
    assert failed.reason.startswith(f"table {missing!r}: no such table in this account and Region")


# ---------------------------------------------------------------- the replica schedule


def test_a_failure_is_logged_naming_the_table_and_the_region(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # GIVEN a Create whose action names no dimension the library knows
    caplog.set_level(logging.INFO, logger="ddb_capacity_runtime")
    given = props("us-east-1", action("a", "write", 5))
    given["Actions"][0]["Dimension"] = "both"

    def no_client(region: str) -> Any:
        raise AssertionError("no AWS call for properties that are refused")

    # WHEN the function gets it THEN it fails, naming the table, the Region and the field
    with pytest.raises(ReplicaScheduleError) as caught:
        on_event(event("Create", given), None, no_client)
    where = f"table '{TABLE}' in 'us-east-1'"
    assert str(caught.value).startswith(f"{where}: ReplicaScheduleError: Actions[0].Dimension")
    # AND the failure is logged as an error with the same facts
    [failed] = events(caplog, "replica-schedule-failed")
    assert failed["where"] == where and failed["request_type"] == "Create"
    assert "Actions[0].Dimension" in failed["error"]
    assert [r.levelno for r in caplog.records if r.message == "replica-schedule-failed"] == [
        logging.ERROR
    ]


def test_an_update_to_a_new_region_that_fails_leaves_nothing_there(
    targets: dict[str, Any],  # noqa: F811
    moto_endpoint: str,
) -> None:
    # GIVEN a replica's schedule moved from us-east-1 to eu-west-1, where the second put
    # is refused (a target's 200 actions; moto never refuses one)
    eu = targets["eu-west-1"]
    old = props("us-east-1", action("a", "write", 5))
    new = props("eu-west-1", action("a", "write", 5), action("b", "write", 6))
    moved = {**event("Update", new, old), "PhysicalResourceId": f"{TABLE}@us-east-1"}
    puts: list[str] = []

    def refuse_second(params: dict[str, Any], **_: Any) -> None:
        puts.append(params["ScheduledActionName"])
        if len(puts) == 2:
            raise ClientError({"Error": {"Code": "LimitExceededException"}}, "Put")

    eu.meta.events.register(
        "before-parameter-build.application-autoscaling.PutScheduledAction", refuse_second
    )
    tagger = Tagger(moto_endpoint, "eu-west-1", eu)
    tagger.expect_tags()
    # WHEN the function gets the update THEN it fails
    try:
        with pytest.raises(ReplicaScheduleError, match="LimitExceeded"):
            run(targets, tagger, moved)
    finally:
        eu.meta.events.unregister(
            "before-parameter-build.application-autoscaling.PutScheduledAction", refuse_second
        )
    # AND the action it put in eu-west-1 is gone again (CloudFormation knows of no resource
    # there to delete), and us-east-1 is left to the old resource
    assert ours(eu) == set()


def many(n: int) -> dict[str, Any]:
    return props("us-east-1", *[action(f"a{i}", "write", 5) for i in range(n)])


def without(key: str) -> Callable[[dict[str, Any]], Any]:
    return lambda p: p["Actions"][0].pop(key)


def target_action(**values: str) -> Callable[[dict[str, Any]], Any]:
    return lambda p: p["Actions"][0].update(ScalableTargetAction=values)


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (lambda p: p.update(Region="us-east-1.example.com"), "Region"),
        (lambda p: p.update(Region="us-east-1x"), "Region"),
        (lambda p: p.update(Indexes=[INDEX, "x"]), "Indexes"),
        (lambda p: p.update(Indexes=[INDEX, 7]), "Indexes"),
        (without("Schedule"), "Schedule"),
        (lambda p: p["Actions"][0].update(Timezone="x" * 1_601), "Timezone"),
        (lambda p: p["Actions"][0].update(Schedule="x" * 1_601), "Schedule"),
        (lambda p: p.update(Indexes=[f"i{n}" for n in range(21)]), "at most 20 index names"),
        (target_action(), "expected MinCapacity, MaxCapacity or both"),
        (target_action(MaxCapacity="1000001"), "MaxCapacity"),
        (lambda p: p.update(Actions=many(201)["Actions"]), "at most 200 actions"),
    ],
)
def test_properties_out_of_bounds_are_refused(
    change: Callable[[dict[str, Any]], Any], field: str
) -> None:
    # GIVEN a replica's properties with one value out of bounds
    given = props("us-east-1", action("a", "write", 5))
    change(given)
    # WHEN they are read THEN they are refused, naming the field
    with pytest.raises(ReplicaScheduleError, match=field):
        parse_schedule(given)


def test_a_target_may_carry_its_two_hundred_actions() -> None:
    # GIVEN 200 actions (Application Auto Scaling's most a target) WHEN read THEN all kept
    assert len(parse_schedule(many(200)).actions) == 200


def test_a_replica_takes_a_schedule_as_long_as_application_auto_scaling_does() -> None:
    # GIVEN 100 actions on the table's write target and 100 on the GSI's, one of them with a
    # long schedule AAS takes (321 characters; up to 1,600)
    given = props(
        "us-east-1",
        *[action(f"t{i}", "write", 5) for i in range(100)],
        *[action(f"g{i}", "write", 5, INDEX) for i in range(100)],
    )
    minutes, hours, days = (",".join(str(n) for n in range(*r)) for r in ((60,), (24,), (1, 29)))
    given["Actions"][0]["Schedule"] = f"cron({minutes} {hours} {days} * ? *)"
    assert len(given["Actions"][0]["Schedule"]) > 256
    # WHEN read THEN all are kept
    assert len(parse_schedule(given).actions) == 200


def test_an_action_moved_to_another_target_is_removed_from_the_old_one(
    targets: dict[str, Any],  # noqa: F811
    moto_endpoint: str,
) -> None:
    # GIVEN an action of one name on the table's write target
    us = targets["us-east-1"]
    tagger = Tagger(moto_endpoint, "us-east-1", us)
    first = props("us-east-1", action("launch", "write", 9))
    tagger.expect_tags()
    run(targets, tagger, event("Create", first))
    # WHEN an update moves it to the GSI's write target
    moved = props("us-east-1", action("launch", "write", 9, INDEX))
    tagger.expect_tags()
    run(targets, tagger, event("Update", moved, first))
    # THEN it is on the GSI's target alone, and every other action is as it was
    assert ours(us) == {(resource_id(TABLE, INDEX), f"{ACTION_PREFIX}launch")}
    assert (resource_id(TABLE, None), "operators-own") in actions_in(us)


# ---------------------------------------------------------------- not yet what they promise


def test_a_number_beyond_dynamodbs_precision_is_returned_in_failed(moto_endpoint: str) -> None:
    # GIVEN three items, the second with a number of 41 digits (DynamoDB keeps 38)
    ddb, name = new_table(moto_endpoint)
    wide: Mapping[str, Any] = {"pk": "wide", "n": 10**40}
    # WHEN the writer writes them
    result = SlowStartWriter(ddb, name, start_rate=1_000, max_rate=1_000).write(
        [{"pk": "a"}, wide, {"pk": "b"}]
    )
    # THEN the two others are written, and that one is returned with its reason
    assert stored(ddb, name) == {"a", "b"} and result.written == 2
    assert [(f.item, f.reason.startswith("not serializable")) for f in result.failed] == [
        (wide, True)
    ]


def test_a_none_among_the_items_does_not_end_the_write(moto_endpoint: str) -> None:
    # GIVEN items of which one, in the middle, is None (a row its producer skipped)
    ddb, name = new_table(moto_endpoint)
    items: list[Any] = [{"pk": "a"}, None, {"pk": "b"}]
    # WHEN the writer writes them
    result = SlowStartWriter(ddb, name, start_rate=1_000, max_rate=1_000).write(items)
    # THEN the items after it are written too, and the None is accounted for
    assert stored(ddb, name) == {"a", "b"}
    assert result.written + len(result.failed) == 3


def strip_consumed(http_response: Any, parsed: dict[str, Any], **_: Any) -> None:
    """An answer that does not say what it consumed (an endpoint that ignores
    ReturnConsumedCapacity)."""
    parsed.pop("ConsumedCapacity", None)


@pytest.fixture
def unreported(moto_endpoint: str) -> Iterator[tuple[Any, str]]:
    """A moto table whose client's Scan and BatchWriteItem answers carry no consumed capacity."""
    ddb, name = new_table(moto_endpoint)
    for operation in ("Scan", "BatchWriteItem"):
        ddb.meta.events.register(f"after-call.dynamodb.{operation}", strip_consumed)
    yield ddb, name
    for operation in ("Scan", "BatchWriteItem"):
        ddb.meta.events.unregister(f"after-call.dynamodb.{operation}", strip_consumed)


def test_a_batch_of_unknown_cost_is_charged_the_writers_estimate(
    unreported: tuple[Any, str],
) -> None:
    # GIVEN a writer of 10 units/s, whose answers never say what they consumed
    ddb, name = unreported
    clock = FakeClock()
    writer = SlowStartWriter(ddb, name, start_rate=10, max_rate=10, clock=clock, sleep=clock.sleep)
    # WHEN it writes 100 items (its estimate: 1 unit an item)
    result = writer.write({"pk": f"k{i}"} for i in range(100))
    # THEN it paced them as its estimate says: within burst + rate x time + one batch
    assert result.written == 100
    assert 100 <= 10 + 10 * clock.now + 25 + 1e-6


def test_a_page_of_unknown_cost_is_charged_the_scans_estimate(
    unreported: tuple[Any, str],
) -> None:
    # GIVEN 200 items and a scan of 10 units/s in pages of 20, whose answers never say
    # what they consumed
    ddb, name = unreported
    SlowStartWriter(ddb, name, start_rate=1_000, max_rate=1_000).write(
        {"pk": f"k{i}"} for i in range(200)
    )
    clock = FakeClock()
    bucket = TokenBucket(10, clock=clock, sleep=clock.sleep)
    sizes: list[int] = []
    scan = RateLimitedScan(ddb, name, rate=10, segments=1, initial_limit=20, bucket=bucket)
    # WHEN it runs
    result = scan.run(lambda segment, items: sizes.append(len(items)))
    # THEN unknown costs raised no page's Limit, and each page was charged the estimate
    assert result.items == 200 and max(sizes) == 20
    assert result.pages * scan.page_units <= 10 + 10 * clock.now + scan.page_units + 1e-6
