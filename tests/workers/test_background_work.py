"""Self-throttling background work: the token bucket, the rate-limited resumable scan and the
slow-start writer, against a moto server, with botocore's Stubber for what moto never does
(throttling, UnprocessedItems, consumed capacity that depends on item size)."""

from __future__ import annotations

import itertools
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.exceptions import EndpointConnectionError
from botocore.stub import ANY, Stubber
from hypothesis import given, settings
from hypothesis import strategies as st

from ddb_capacity_runtime.workers.pacing import PacingError, TokenBucket
from ddb_capacity_runtime.workers.scan import (
    Cursor,
    CursorStore,
    RateLimitedScan,
    ScanError,
    create_cursor_table,
)
from ddb_capacity_runtime.workers.writer import SlowStartWriter, WriteResult
from ddb_capacity_tools import local_aws
from tests.support.background_work import collector, make_table
from tests.support.hypothesis_profiles import examples
from tests.support.shape import ROOT


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


# ---------------------------------------------------------------- the token bucket


@settings(max_examples=examples(80), deadline=None)
@given(
    rate=st.floats(1, 5_000),
    burst_factor=st.floats(0.1, 5),
    requests=st.lists(
        st.tuples(st.floats(0, 200), st.floats(0.2, 5), st.floats(0, 2)), min_size=1, max_size=200
    ),
)
def test_the_limiters_long_run_rate_never_exceeds_its_limit(
    rate: float, burst_factor: float, requests: list[tuple[float, float, float]]
) -> None:
    """Whatever the estimates and the real costs, units consumed by time T stay within
    burst + rate x T + the largest single cost."""
    clock = FakeClock()
    burst = rate * burst_factor
    bucket = TokenBucket(rate, burst, clock=clock, sleep=clock.sleep)
    consumed = 0.0
    for cost, misestimate, think in requests:
        estimate = cost * misestimate
        bucket.acquire(estimate)
        bucket.settle(cost - estimate)
        consumed += cost
        assert consumed <= burst + rate * clock.now + max(c for c, _, _ in requests) + 1e-6
        clock.now += think


def test_the_limiter_paces_a_steady_stream_at_its_rate() -> None:
    clock = FakeClock()
    bucket = TokenBucket(100, clock=clock, sleep=clock.sleep)
    for _ in range(1_000):
        bucket.acquire(10)
    # 10,000 units at 100/s, the first second's burst free: about 99 s.
    assert 98 <= clock.now <= 100.1


@pytest.mark.parametrize("rate", [0, -5, float("nan"), "fast", True])
def test_the_limiter_rejects_a_bad_rate(rate: object) -> None:
    with pytest.raises(
        PacingError, match=f"rate: got {rate!r}; expected a number of capacity units per second > 0"
    ):
        TokenBucket(rate)  # type: ignore[arg-type]


# ---------------------------------------------------------------- helpers


#: The loaded table's client and name, the cursor table's name, and the keys of its items.
Loaded = tuple[Any, str, str, set[str]]


@pytest.fixture(scope="module")
def loaded(aws_env: dict[str, str]) -> Loaded:
    """A table of 3,000 items written by the slow-start writer itself, and a cursor table:
    written once for the module, since the tests only read the items, and each scan keeps
    its cursors under a scan id of its own."""
    ddb = local_aws.client(aws_env["AWS_ENDPOINT_URL"], "dynamodb")
    name = f"Items{uuid.uuid4().hex[:8]}"
    make_table(ddb, name)
    items: list[dict[str, Any]] = [
        {"pk": f"item-{i:05d}", "n": i, "body": "x" * (i % 300)} for i in range(3_000)
    ]
    result = SlowStartWriter(ddb, name, start_rate=5_000, max_rate=50_000).write(items)
    assert result.failed == [] and result.written == 3_000
    cursors = f"Cursors{uuid.uuid4().hex[:8]}"
    create_cursor_table(ddb, cursors)
    return ddb, name, cursors, {i["pk"] for i in items}


# ---------------------------------------------------------------- the writer on moto


def test_slow_start_writer_writes_every_item(loaded: Loaded) -> None:
    ddb, name, _, keys = loaded
    stored: set[str] = set()
    for page in ddb.get_paginator("scan").paginate(TableName=name, ProjectionExpression="pk"):
        stored.update(i["pk"]["S"] for i in page["Items"])
    assert stored == keys


# ---------------------------------------------------------------- the scan on moto


def test_a_parallel_scan_delivers_every_item_once(loaded: Loaded) -> None:
    ddb, name, cursors, keys = loaded
    seen, handle = collector()
    scan = RateLimitedScan(
        ddb, name, rate=100_000, segments=4, store=CursorStore(ddb, cursors), scan_id="full"
    )
    result = scan.run(handle)
    assert sorted(seen) == sorted(keys)  # every item, exactly once
    assert result.items == 3_000 and result.segments_done == [0, 1, 2, 3]
    assert not result.interrupted
    store = CursorStore(ddb, cursors)
    assert sum(store.load("full", s).items for s in range(4)) == 3_000
    assert all(store.load("full", s).done for s in range(4))
    # Done segments are not scanned again.
    again, handle = collector()
    assert (
        RateLimitedScan(ddb, name, rate=100_000, segments=4, store=store, scan_id="full")
        .run(handle)
        .items
        == 0
    )


def test_a_stopped_scan_resumes_where_it_stopped(loaded: Loaded) -> None:
    ddb, name, cursors, keys = loaded
    store = CursorStore(ddb, cursors)
    seen, collect = collector()
    # moto reports 1 unit a page: with page_units 1 the Limit stays at 20 items a page.
    scan = RateLimitedScan(
        ddb,
        name,
        rate=100_000,
        segments=3,
        initial_limit=20,
        page_units=1,
        store=store,
        scan_id="interrupted",
    )
    pages: list[int] = []
    lock = threading.Lock()

    def handle(segment: int, items: list[dict[str, Any]]) -> None:
        collect(segment, items)
        with lock:
            pages.append(segment)
            if len(pages) == 10:
                scan.stop.set()  # what Ctrl-C does in run()

    first = scan.run(handle)
    assert first.interrupted and first.items < 3_000
    seen_first = len(seen)
    second = RateLimitedScan(
        ddb, name, rate=100_000, segments=3, store=store, scan_id="interrupted"
    ).run(collect)
    assert not second.interrupted
    assert set(seen) == keys
    assert second.items < 3_000 and seen_first + second.items >= 3_000


def test_a_scan_resumes_only_with_the_segment_count_it_began_with(loaded: Loaded) -> None:
    # GIVEN a scan of 4 segments stopped after its first pages
    ddb, name, cursors, keys = loaded
    store = CursorStore(ddb, cursors)
    seen, collect = collector()
    first = RateLimitedScan(
        ddb,
        name,
        rate=100_000,
        segments=4,
        initial_limit=20,
        page_units=1,
        store=store,
        scan_id="four",
    )
    pages: list[int] = []

    def handle(segment: int, items: list[dict[str, Any]]) -> None:
        collect(segment, items)
        pages.append(segment)
        if len(pages) == 6:
            first.stop.set()

    assert first.run(handle).interrupted
    # WHEN it is resumed with 2 segments THEN it is refused, naming both counts
    with pytest.raises(ScanError) as refused:
        RateLimitedScan(ddb, name, rate=100_000, segments=2, store=store, scan_id="four").run(
            collect
        )
    assert str(refused.value) == (
        "segments: got 2; the cursor of scan 'four' segment 0 was saved by a scan of 4 "
        "segments; it resumes only with 4 (or use a new scan_id)"
    )
    # AND resumed with 4 it delivers every item
    RateLimitedScan(ddb, name, rate=100_000, segments=4, store=store, scan_id="four").run(collect)
    assert set(seen) == keys


def test_every_segments_cursor_is_checked_for_the_segment_count_before_any_page(
    loaded: Loaded,
) -> None:
    # GIVEN a scan whose only saved cursor, segment 2's, was written by a scan of 8 segments
    ddb, name, cursors, _ = loaded
    store = CursorStore(ddb, cursors)
    store.save("mixed", 2, Cursor(None, False, 40, segments=8))
    seen, collect = collector()
    # WHEN it is run with 4 segments THEN it is refused, naming segment 2 and both counts
    with pytest.raises(ScanError) as refused:
        RateLimitedScan(ddb, name, rate=100_000, segments=4, store=store, scan_id="mixed").run(
            collect
        )
    assert str(refused.value) == (
        "segments: got 4; the cursor of scan 'mixed' segment 2 was saved by a scan of 8 "
        "segments; it resumes only with 8 (or use a new scan_id)"
    )
    # AND no page was read: nothing delivered, no other segment's cursor saved
    assert seen == []
    assert [store.load("mixed", s) for s in (0, 1, 3)] == [Cursor(None, False, 0)] * 3
    assert store.load("mixed", 2) == Cursor(None, False, 40, segments=8)


KILLED_SCAN = textwrap.dedent("""
    import sys
    from ddb_capacity_tools.local_aws import client
    from ddb_capacity_runtime.workers.scan import CursorStore, RateLimitedScan
    endpoint, table, cursors, out = sys.argv[1:]
    ddb = client(endpoint, "dynamodb")
    with open(out, "a") as f:
        def handle(segment, items):
            f.write("".join(i["pk"]["S"] + "\\n" for i in items))
            f.flush()
        RateLimitedScan(ddb, table, rate=40, segments=4, initial_limit=5,
                        store=CursorStore(ddb, cursors), scan_id="killed").run(handle)
""")


def test_kill_and_resume_delivers_every_item_at_least_once(
    loaded: Loaded, moto_endpoint: str, tmp_path: Path
) -> None:
    ddb, name, cursors, keys = loaded
    out = tmp_path / "delivered.txt"
    out.write_text("")
    script = tmp_path / "scan.py"
    script.write_text(KILLED_SCAN)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, str(script), moto_endpoint, name, cursors, str(out)], env=env
    )
    deadline = time.monotonic() + 60
    while len(out.read_text().splitlines()) < 300 and time.monotonic() < deadline:
        assert proc.poll() is None, "the scan finished before it could be killed"
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)
    before = out.read_text().splitlines()
    assert 300 <= len(before) < 3_000
    seen, handle = collector()
    resumed = RateLimitedScan(
        ddb, name, rate=100_000, segments=4, store=CursorStore(ddb, cursors), scan_id="killed"
    ).run(handle)
    assert set(before) | set(seen) == keys  # at least once
    assert resumed.items <= 3_000 - len(set(before)) + 4 * 40  # resumed, not restarted


@pytest.mark.parametrize(
    ("field", "stored", "shown_as"),
    [
        ("done", None, "None"),
        ("done", {"S": "true"}, "{'S': 'true'}"),
        ("items", {"N": "1.5"}, "{'N': '1.5'}"),
        ("items", {"N": "-3"}, "{'N': '-3'}"),
        ("last_key", {"S": "item-00042"}, "{'S': 'item-00042'}"),
        ("last_key", {"M": {}}, "{'M': {}}"),
        ("segments", {"N": "0"}, "{'N': '0'}"),
    ],
)
def test_a_cursor_this_library_did_not_write_is_refused_naming_its_field(
    loaded: Loaded, field: str, stored: dict[str, Any] | None, shown_as: str
) -> None:
    # GIVEN a saved cursor of segment 1 with one field as the library never writes it
    ddb, name, cursors, _ = loaded
    scan_id = f"odd-{field}-{uuid.uuid4().hex[:6]}"
    CursorStore(ddb, cursors).save(scan_id, 1, Cursor({"pk": {"S": "item-00042"}}, False, 9, 4))
    key = {"scan_id": {"S": scan_id}, "segment": {"N": "1"}}
    if stored is None:
        ddb.update_item(TableName=cursors, Key=key, UpdateExpression=f"REMOVE {field}")
    else:
        ddb.update_item(
            TableName=cursors,
            Key=key,
            UpdateExpression="SET #f = :v",
            ExpressionAttributeNames={"#f": field},
            ExpressionAttributeValues={":v": stored},
        )
    seen, collect = collector()
    scan = RateLimitedScan(
        ddb, name, rate=100_000, segments=4, store=CursorStore(ddb, cursors), scan_id=scan_id
    )
    # WHEN the scan resumes THEN it is refused, naming the item, the field and the way out
    with pytest.raises(ScanError) as refused:
        scan.run(collect)
    assert str(refused.value).startswith(
        f"cursor table '{cursors}', scan '{scan_id}' segment 1: {field} is {shown_as}; expected "
    )
    assert str(refused.value).endswith(
        "as this library writes it. Delete that item to scan the segment again from its start"
    )
    assert seen == []


def test_the_cursor_table_is_made_once_and_a_missing_one_is_named(loaded: Loaded) -> None:
    """A job that creates its cursor table runs again to resume: the table is kept with its
    cursors; a table of another key is refused; a scan whose cursor table is missing says
    which table and how to make it."""
    ddb, name, cursors, _ = loaded
    CursorStore(ddb, cursors).save("kept", 0, Cursor(None, True, 7))
    create_cursor_table(ddb, cursors)  # already there: kept as it is
    assert CursorStore(ddb, cursors).load("kept", 0).items == 7
    with pytest.raises(ScanError, match=f"table '{name}' exists with the key"):
        create_cursor_table(ddb, name)
    missing = f"Missing{uuid.uuid4().hex[:8]}"
    scan = RateLimitedScan(ddb, name, rate=1_000, store=CursorStore(ddb, missing), scan_id="x")
    with pytest.raises(ScanError) as caught:
        scan.run(lambda segment, items: None)
    assert str(caught.value) == (
        f"cursor table '{missing}': not found; create it before the scan runs: "
        f"create_cursor_table(dynamodb, '{missing}')"
    )


def test_scan_settings_are_checked() -> None:
    ddb = boto3.client("dynamodb", region_name="us-east-1")
    with pytest.raises(ScanError, match="segments: got 0; expected a whole number from 1"):
        RateLimitedScan(ddb, "tbl", rate=10, segments=0)
    with pytest.raises(ScanError, match="store and scan_id: got only one"):
        RateLimitedScan(ddb, "tbl", rate=10, scan_id="x")
    with pytest.raises(PacingError, match="rate: got -1"):
        RateLimitedScan(ddb, "tbl", rate=-1)
    for retries in (-1, 2.5, True, "3"):
        with pytest.raises(ScanError, match=f"max_throttle_retries: got {retries!r}; expected"):
            RateLimitedScan(ddb, "tbl", rate=10, max_throttle_retries=retries)  # type: ignore[arg-type]


# ---------------------------------------------------------------- Stubber: what moto never does


def stubbed() -> tuple[Any, Stubber]:
    client = boto3.client(
        "dynamodb", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x"
    )  # noqa: S106
    return client, Stubber(client)


def page(keys: list[str], units: float, last: str | None = None) -> dict[str, Any]:
    response: dict[str, Any] = {
        "Items": [{"pk": {"S": k}} for k in keys],
        "ConsumedCapacity": {"TableName": "tbl", "CapacityUnits": units},
    }
    if last:
        response["LastEvaluatedKey"] = {"pk": {"S": last}}
    return response


def test_scan_retries_a_throttled_page_and_adapts_the_limit_to_item_size() -> None:
    client, stub = stubbed()
    base = {"TableName": "tbl", "Segment": 0, "TotalSegments": 1, "ReturnConsumedCapacity": "TOTAL"}
    stub.add_client_error(
        "scan", "ProvisionedThroughputExceededException", expected_params={**base, "Limit": 10}
    )
    # 10 items cost 5 units: 2 items per unit; page_units 3 -> the next Limit is 6.
    stub.add_response(
        "scan",
        page([f"a{i}" for i in range(10)], 5.0, last="a9"),
        expected_params={**base, "Limit": 10},
    )
    stub.add_response(
        "scan",
        page([f"b{i}" for i in range(6)], 3.0),
        expected_params={**base, "Limit": 6, "ExclusiveStartKey": {"pk": {"S": "a9"}}},
    )
    sleeps: list[float] = []
    seen, handle = collector()
    with stub:
        result = RateLimitedScan(
            client,
            "tbl",
            rate=1_000,
            segments=1,
            page_units=3,
            initial_limit=10,
            sleep=sleeps.append,
        ).run(handle)
    stub.assert_no_pending_responses()
    assert result.throttled == 1 and sleeps == [0.1]
    assert result.throttled_by_cause["unknown"] == 1  # no ThrottlingReasons: as before
    assert sum(result.throttled_by_cause.values()) == result.throttled
    assert len(seen) == 16 and result.consumed == 8.0


def test_scan_gives_up_after_repeated_throttles_with_the_error() -> None:
    client, stub = stubbed()
    for _ in range(3):
        stub.add_client_error("scan", "ProvisionedThroughputExceededException")
    with stub, pytest.raises(Exception, match="ProvisionedThroughputExceeded"):
        RateLimitedScan(
            client, "tbl", rate=10, segments=1, max_throttle_retries=2, sleep=lambda s: None
        ).run(lambda s, i: None)


def batch(keys: list[str]) -> dict[str, Any]:
    return {"tbl": [{"PutRequest": {"Item": {"pk": {"S": k}}}} for k in keys]}


def test_writer_resends_unprocessed_items_and_slows_down() -> None:
    client, stub = stubbed()
    clock = FakeClock()
    keys = [f"k{i}" for i in range(5)]
    stub.add_response(
        "batch_write_item",
        {
            "UnprocessedItems": batch(["k1", "k3"]),
            "ConsumedCapacity": [{"TableName": "tbl", "CapacityUnits": 3.0}],
        },
        expected_params={"RequestItems": batch(keys), "ReturnConsumedCapacity": "TOTAL"},
    )
    stub.add_client_error(
        "batch_write_item",
        "ProvisionedThroughputExceededException",
        expected_params={"RequestItems": batch(["k1", "k3"]), "ReturnConsumedCapacity": "TOTAL"},
    )
    stub.add_response(
        "batch_write_item",
        {"UnprocessedItems": {}, "ConsumedCapacity": [{"TableName": "tbl", "CapacityUnits": 2.0}]},
        expected_params={"RequestItems": batch(["k1", "k3"]), "ReturnConsumedCapacity": "TOTAL"},
    )
    with stub:
        writer = SlowStartWriter(
            client, "tbl", start_rate=10, max_rate=100, clock=clock, sleep=clock.sleep
        )
        writer.bucket.set_rate(40)  # as if it had grown already
        result = writer.write({"pk": k} for k in keys)
    stub.assert_no_pending_responses()
    assert result.written == 5 and result.failed == [] and result.throttled == 2
    assert result.rates == [40, 20.0, 10.0]  # halved twice, not below the start rate
    # neither UnprocessedItems nor an exception without ThrottlingReasons says why
    assert result.throttled_by_cause["unknown"] == 2
    assert sum(result.throttled_by_cause.values()) == result.throttled


def test_writer_returns_items_it_could_not_write_instead_of_dropping_them() -> None:
    client, stub = stubbed()
    clock = FakeClock()
    for _ in range(3):
        stub.add_response(
            "batch_write_item", {"UnprocessedItems": batch(["k0"]), "ConsumedCapacity": []}
        )
    with stub:
        result = SlowStartWriter(
            client,
            "tbl",
            start_rate=10,
            max_rate=10,
            max_attempts=3,
            clock=clock,
            sleep=clock.sleep,
        ).write([{"pk": "k0"}])
    assert result.written == 0
    assert [(f.item, f.reason) for f in result.failed] == [
        ({"pk": "k0"}, "still unprocessed after 3 attempts")
    ]


def test_writer_isolates_an_invalid_item_and_writes_the_rest() -> None:
    client, stub = stubbed()
    clock = FakeClock()
    stub.add_client_error("batch_write_item", "ValidationException", "Item too large")
    for key in ("ok1", "big", "ok2"):
        if key == "big":
            stub.add_client_error(
                "batch_write_item",
                "ValidationException",
                "Item too large",
                expected_params={"RequestItems": batch([key]), "ReturnConsumedCapacity": "TOTAL"},
            )
        else:
            stub.add_response(
                "batch_write_item",
                {"UnprocessedItems": {}},
                expected_params={"RequestItems": batch([key]), "ReturnConsumedCapacity": "TOTAL"},
            )
    with stub:
        result = SlowStartWriter(
            client, "tbl", start_rate=10, max_rate=10, clock=clock, sleep=clock.sleep
        ).write([{"pk": "ok1"}, {"pk": "big"}, {"pk": "ok2"}])
    assert result.written == 2
    assert [(f.item, f.reason) for f in result.failed] == [
        ({"pk": "big"}, "ValidationException: Item too large")
    ]


def test_writer_starts_slow_and_grows_in_steps_to_its_ceiling() -> None:
    client, stub = stubbed()
    clock = FakeClock()
    for _ in range(2_400):
        stub.add_response(
            "batch_write_item",
            {
                "UnprocessedItems": {},
                "ConsumedCapacity": [{"TableName": "tbl", "CapacityUnits": 25.0}],
            },
            expected_params={"RequestItems": ANY, "ReturnConsumedCapacity": "TOTAL"},
        )
    with stub:
        writer = SlowStartWriter(
            client,
            "tbl",
            start_rate=50,
            max_rate=500,
            step_seconds=60,
            step_factor=2,
            clock=clock,
            sleep=clock.sleep,
        )
        result = writer.write({"pk": f"k{i}"} for i in range(60_000))
    assert result.written == 60_000 and result.throttled == 0
    assert result.rates == [50, 100, 200, 400, 500]
    # 60 s each at 50, 100, 200 and 400 units/s is 45,000 units; the last 15,000 at 500/s
    # take 30 s more.
    assert 265 <= clock.now <= 275


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"start_rate": 0, "max_rate": 10}, "start_rate: got 0; expected a number > 0"),
        ({"start_rate": 20, "max_rate": 10}, "max_rate: got 10; expected at least start_rate (20)"),
        ({"start_rate": 1, "max_rate": 10, "step_factor": 0.5}, "step_factor: got 0.5"),
        ({"start_rate": 1, "max_rate": 10, "max_attempts": 0}, "max_attempts: got 0"),
    ],
)
def test_writer_settings_are_checked(kwargs: dict[str, Any], message: str) -> None:
    client, _ = stubbed()
    with pytest.raises(PacingError, match=message.replace("(", r"\(").replace(")", r"\)")):
        SlowStartWriter(client, "tbl", **kwargs)


# ------------------------------------------------- what an answer says of its cost, untrusted


class BoundedClock(FakeClock):
    """A fake clock whose waits fail the test past a day: an answer that stalls a worker."""

    def sleep(self, seconds: float) -> None:
        super().sleep(seconds)
        assert self.now < 86_400, "still waiting after a day"


def paced_writer(
    answers: list[dict[str, Any]],
    items: list[dict[str, Any]],
    *,
    rate: float = 10,
    hook: tuple[str, Callable[..., None]] | None = None,
) -> tuple[WriteResult, float]:
    """``items`` written at ``rate`` units a second (start and ceiling), each BatchWriteItem
    answered by the next of ``answers`` (every one of them used), with ``hook`` (an event
    of the client's and its handler) registered; the result and the seconds it took."""
    client, stub = stubbed()
    clock = BoundedClock()
    for answer in answers:
        stub.add_response("batch_write_item", answer)
    if hook is not None:
        client.meta.events.register(*hook)
    with stub:
        writer = SlowStartWriter(
            client, "tbl", start_rate=rate, max_rate=rate, clock=clock, sleep=clock.sleep
        )
        result = writer.write(items)
    stub.assert_no_pending_responses()
    return result, clock.now


@pytest.mark.parametrize("units", [0.0, 1e-9, 1e300, 1e308])
def test_a_writer_told_a_cost_past_belief_paces_by_its_estimate(units: float) -> None:
    # GIVEN 500 small items (1 write unit each) and answers whose ConsumedCapacity says
    # what was written cost less than an item's unit, or more than any 25 items can
    cost = [{"TableName": "tbl", "CapacityUnits": units}] * 2  # two entries: 1e308 sums to inf
    said = {"UnprocessedItems": {}, "ConsumedCapacity": cost}
    items = [{"pk": f"k{i}"} for i in range(500)]
    # WHEN the writer writes them at 10 units a second
    result, seconds = paced_writer([said] * 20, items)
    # THEN it paces by its estimate: 500 units at 10 a second, neither free nor a debt it
    # never pays off
    assert result.written == 500 and result.failed == []
    assert 45 <= seconds <= 55


def test_a_writer_without_a_cost_in_the_answer_charges_each_item_by_its_size() -> None:
    # GIVEN 100 items of 10 KB and answers that do not say what they consumed
    items = [{"pk": f"k{i}", "body": "x" * 10_000} for i in range(100)]
    # WHEN the writer writes them at 10 units a second
    result, seconds = paced_writer([{"UnprocessedItems": {}}] * 4, items)
    # THEN each is charged the 10 units a kilobyte started makes: the writer waits out each
    # batch's 250 units before the next (charged a unit an item, 25 a batch, it took 6.5 s)
    assert result.written == 100
    assert 70 <= seconds <= 80


@pytest.mark.parametrize(
    "unprocessed",
    [
        None,
        [],
        {"tbl": None},
        {"tbl": [{"DeleteRequest": {"Key": {"pk": {"S": "k0"}}}}]},
        {"tbl": [{"PutRequest": {"Item": {"pk": {"S": "k0"}, "x": {"N": "1"}}}}]},  # not sent
    ],
)
def test_a_malformed_answer_returns_its_batch_and_the_rest_are_written(unprocessed: Any) -> None:
    # GIVEN a first answer whose UnprocessedItems is not a list of the puts sent (botocore's
    # parser never gives one; a proxy or an endpoint of another make could), then sound ones
    answers = [0]

    def malformed(parsed: dict[str, Any], **_: Any) -> None:
        answers[0] += 1
        if answers[0] == 1:
            parsed["UnprocessedItems"] = unprocessed

    items = [{"pk": f"k{i}"} for i in range(30)]
    # WHEN the writer writes 30 items (two batches)
    hook = ("after-call.dynamodb.BatchWriteItem", malformed)
    fresh: list[dict[str, Any]] = [{"UnprocessedItems": {}} for _ in range(2)]  # hook changes #1
    result, _ = paced_writer(fresh, items, hook=hook)
    # THEN the first batch's items are returned, whether they were written not being known
    # (none dropped, none sent twice behind the caller's back), no throttle is counted, and
    # the second batch is written
    assert [f.item for f in result.failed] == items[:25]
    assert all("UnprocessedItems is not a list of the puts sent" in f.reason for f in result.failed)
    assert result.written == 5 and result.throttled == 0 and result.batches == 2


def test_calls_without_an_answer_stop_the_write_and_leave_the_rest_of_the_items() -> None:
    # GIVEN an endpoint that never answers (every call fails after the SDK's retries)
    client, _ = stubbed()

    def down(**_: Any) -> None:
        raise EndpointConnectionError(endpoint_url="https://dynamodb.us-east-1.amazonaws.com")

    client.meta.events.register("before-parameter-build.dynamodb.BatchWriteItem", down)
    clock = BoundedClock()
    items = iter([{"pk": f"k{i}"} for i in range(1_000)])
    # WHEN the writer is given 1,000 items
    writer = SlowStartWriter(
        client, "tbl", start_rate=10, max_rate=10, clock=clock, sleep=clock.sleep
    )
    result = writer.write(items)
    # THEN it stops after three calls in a row without an answer, returns the items it took
    # with the error, and says why it stopped and how many it took
    assert result.batches == 3 and result.written == 0
    assert [f.item["pk"] for f in result.failed] == [f"k{i}" for i in range(75)]
    assert all("Could not connect" in f.reason for f in result.failed)
    assert result.taken == 75 and result.stopped is not None
    assert result.stopped.startswith("3 calls in a row failed (EndpointConnectionError")
    # AND the rest of the items is left in the iterator, not drawn into memory
    assert next(items) == {"pk": "k75"}


def test_a_write_stopped_by_failed_calls_returns_from_an_endless_source() -> None:
    # GIVEN an endpoint that never answers, and a source that never ends
    client, _ = stubbed()

    def down(**_: Any) -> None:
        raise EndpointConnectionError(endpoint_url="https://dynamodb.us-east-1.amazonaws.com")

    client.meta.events.register("before-parameter-build.dynamodb.BatchWriteItem", down)
    drawn = itertools.count()

    def endless() -> Iterator[dict[str, str]]:
        for i in drawn:
            assert i < 1_000, "the writer drew on an endless source past its stop"
            yield {"pk": f"k{i}"}

    writer = SlowStartWriter(client, "tbl", start_rate=1e6, max_rate=1e6, clock=BoundedClock())
    # WHEN the writer writes it THEN it returns after three calls, having taken 75 items
    result = writer.write(endless())
    assert result.batches == 3 and result.taken == 75 and next(drawn) == 75
    assert len(result.failed) == 75 and result.stopped is not None


@pytest.mark.parametrize(
    ("code", "status", "charged"),
    [("ServiceUnavailable", 503, True), ("AccessDeniedException", 400, False)],
)
def test_calls_that_keep_failing_stop_the_write_and_a_server_error_is_charged(
    code: str, status: int, charged: bool
) -> None:
    # GIVEN an endpoint whose every BatchWriteItem fails after the SDK's retries: a server
    # error (the items may have been written) or a refusal (none was)
    client, stub = stubbed()
    for _ in range(4):
        stub.add_client_error("batch_write_item", code, "injected", http_status_code=status)
    clock = BoundedClock()
    writer = SlowStartWriter(
        client, "tbl", start_rate=10, max_rate=10, clock=clock, sleep=clock.sleep
    )
    # WHEN the writer is given 1,000 items (25 of them a call, 1 unit each by estimate)
    with stub:
        result = writer.write({"pk": f"k{i}"} for i in range(1_000))
    # THEN it stops after three failed calls in a row and returns the items it took, with
    # the error; the others are left in the source
    assert result.batches == 3 and result.written == 0 and result.taken == 75
    assert [f.item["pk"] for f in result.failed] == [f"k{i}" for i in range(75)]
    assert all(code in f.reason for f in result.failed)
    assert result.stopped is not None and code in result.stopped
    # AND a server error's unknown cost is charged as estimated, never read as free: at 10
    # units a second the second and third calls wait for the 25 units of the one before (4
    # seconds in all); a refusal wrote nothing, its estimate is given back, nothing waits
    assert clock.now == (pytest.approx(4.0, abs=0.01) if charged else 0.0)


def test_a_full_item_collection_refuses_its_items_alone_and_never_stops_the_write() -> None:
    # GIVEN a table whose local secondary index's item collection for "full" is full:
    # DynamoDB refuses a batch holding one of its items, whatever the others
    client, stub = stubbed()
    code = "ItemCollectionSizeLimitExceededException"
    for _ in range(4):  # each batch refused, then sent an item at a time: "full" last
        stub.add_client_error("batch_write_item", code, "full", http_status_code=400)
        for _ in range(24):
            stub.add_response("batch_write_item", {"UnprocessedItems": {}})
        stub.add_client_error("batch_write_item", code, "full", http_status_code=400)
    writer = SlowStartWriter(client, "tbl", start_rate=1000, max_rate=1000, clock=BoundedClock())
    items = [{"pk": "full" if i % 25 == 24 else f"k{i}"} for i in range(100)]
    # WHEN it writes 100 items: 4 calls of 25, each with a "full" item
    with stub:
        result = writer.write(items)
    # THEN each call is sent again an item at a time: the others are written, the "full"
    # ones returned with the reason, and four such refusals in a row stop nothing
    assert result.written == 96
    assert [f.item["pk"] for f in result.failed] == ["full"] * 4
    assert all(code in f.reason for f in result.failed)


def test_a_write_without_an_answer_returns_its_items_and_the_rest_are_written() -> None:
    # GIVEN the second of three BatchWriteItem calls gets no answer (after the SDK's retries)
    calls = [0]

    def lost(**_: Any) -> None:
        calls[0] += 1
        if calls[0] == 2:
            raise EndpointConnectionError(endpoint_url="https://dynamodb.us-east-1.amazonaws.com")

    items = [{"pk": f"k{i}"} for i in range(60)]
    # WHEN the writer writes 60 items
    hook = ("before-parameter-build.dynamodb.BatchWriteItem", lost)
    result, _ = paced_writer([{"UnprocessedItems": {}}] * 2, items, rate=100, hook=hook)
    # THEN the call's 25 items are returned with the reason, and the others written
    assert result.written == 35
    assert [f.item for f in result.failed] == items[25:50]
    assert all("Could not connect" in f.reason for f in result.failed)


def test_a_writer_idle_for_a_step_starts_slow_again() -> None:
    # GIVEN a writer that grew to 40 units a second, then waited a step (60 s) and more
    client, stub = stubbed()
    for _ in range(4):
        stub.add_response("batch_write_item", {"UnprocessedItems": {}})
    clock = BoundedClock()
    writer = SlowStartWriter(
        client, "tbl", start_rate=10, max_rate=40, step_seconds=60, clock=clock, sleep=clock.sleep
    )
    with stub:
        writer.bucket.set_rate(40)
        writer.write([{"pk": "a"}])
        assert writer.bucket.rate == 40  # one write after another: the rate it had
        writer.write([{"pk": "b"}])
        assert writer.bucket.rate == 40
        clock.now += 6 * 3600
        # WHEN it writes again
        result = writer.write([{"pk": "c"}])
    # THEN it starts at its start rate: the table may have scaled in meanwhile
    assert result.rates == [10.0] and writer.bucket.rate == 10


def test_a_source_that_pauses_for_a_step_within_one_write_starts_slow_again() -> None:
    # GIVEN a writer grown to 40 units a second, and a source that pauses for an hour after
    # its first 25 items (a queue or a paginated read, drawn lazily)
    client, stub = stubbed()
    for _ in range(2):
        stub.add_response("batch_write_item", {"UnprocessedItems": {}})
    clock = BoundedClock()

    def source() -> Any:
        yield from ({"pk": f"a{i}"} for i in range(25))
        clock.now += 3600
        yield from ({"pk": f"b{i}"} for i in range(25))

    writer = SlowStartWriter(
        client, "tbl", start_rate=10, max_rate=40, step_seconds=60, clock=clock, sleep=clock.sleep
    )
    writer.bucket.set_rate(40)
    # WHEN it writes them
    with stub:
        result = writer.write(source())
    # THEN the batch after the pause goes at the start rate (the table may have scaled in
    # meanwhile), the pause counting as no step of growth
    assert result.written == 50
    assert result.rates == [40.0, 10.0] and writer.bucket.rate == 10


def test_an_index_scan_that_fetches_from_its_table_is_paced_by_what_it_reports() -> None:
    # GIVEN a local secondary index whose pages cost 500 units each (every item fetched
    # from the table: more than a page of 1 MB read from the index alone)
    client, stub = stubbed()
    for n in range(5):
        answer = page([f"k{n}-{i}" for i in range(500)], 500.0, last=None if n == 4 else f"k{n}")
        stub.add_response("scan", answer)
    clock = BoundedClock()
    bucket = TokenBucket(100, clock=clock, sleep=clock.sleep)
    # WHEN it is scanned at 100 units a second, pages meant to cost 50
    with stub:
        result = RateLimitedScan(
            client,
            "tbl",
            index="byDate",
            rate=100,
            segments=1,
            page_units=50,
            initial_limit=500,
            bucket=bucket,
            sleep=clock.sleep,
        ).run(lambda segment, items: None)
    # THEN each page is charged the 500 units it reported, not its estimate: the scan waits
    # out each before the next
    assert result.pages == 5 and result.consumed == 2_500
    assert 15 <= clock.now <= 25


@pytest.mark.parametrize("units", [0.0, 1e308])
def test_a_scan_told_a_cost_past_belief_paces_by_its_estimate(units: float) -> None:
    # GIVEN 40 pages of 25 items, each answer saying the page cost 0 units, or 1e308
    client, stub = stubbed()
    for n in range(40):
        answer = page([f"k{n}-{i}" for i in range(25)], units, last=None if n == 39 else f"k{n}")
        stub.add_response("scan", answer)
    clock = BoundedClock()
    bucket = TokenBucket(10, clock=clock, sleep=clock.sleep)
    # WHEN a scan reads them at 10 units a second, 5 units a page
    with stub:
        result = RateLimitedScan(
            client, "tbl", rate=10, segments=1, page_units=5, bucket=bucket, sleep=clock.sleep
        ).run(lambda segment, items: None)
    # THEN each page is charged its estimate (5 units): 200 units at 10 a second
    assert result.items == 1000 and result.pages == 40
    assert 15 <= clock.now <= 25
