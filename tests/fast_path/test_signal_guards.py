"""The signals path's guards on what it reads and what it promises the user's program.

The client hook reads DynamoDB's answers as untrusted input: an answer that is not one
DynamoDB gives (a GSI consuming more than the request, negative units, more throttling
reasons than a table has resources, a cancellation with more reasons than items) never
lowers a table's reported demand, never adds to a table the request did not name and
never invents a throttle; another account's table (one of the same name too, named by its
ARN in an answer's consumed capacity or a throttling reason) or a table out of
``tables=`` is never counted as one of the watched tables; two watchers of one request
count its throttle once. The hook never fails the caller, even when logging itself raises;
its sending thread goes on after an error; a forked child finds credentials it was not
given explicitly afresh; and every report ``stop`` leaves unsent, taken or not, is counted.

The signals function refuses a batch that breaks the contract, or is larger than it, whole
and counted; a report of a batch that fails is counted and the next one taken; and no
report is started with less of the invocation left than the function keeps in hand.

The stream reader clamps record times from the future, counts malformed and late records,
never merges two batches whose records carry no event id, never trusts GSI writes of
records that disagree on their view type, decides at exactly what is provisioned, on the
window before as well as the one under way, and renews a surge under way below its
raised capacity.
"""

from __future__ import annotations

import itertools
import json
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from ddb_capacity_runtime.aws import stream_counts
from ddb_capacity_runtime.core.report_batch import (
    MAX_BATCH_CHARS,
    MAX_BATCH_REPORTS,
    batch_json,
    batches,
)
from ddb_capacity_runtime.core.stream import WINDOW_SECONDS
from ddb_capacity_runtime.core.surge_report import DimensionReport, Report
from ddb_capacity_runtime.core.untrusted_values import check_json
from ddb_capacity_runtime.events import LOGGER
from ddb_capacity_runtime.fast_path import hook as signals_hook
from ddb_capacity_runtime.fast_path.hook import Watcher, watch
from ddb_capacity_runtime.fast_path.sender import LambdaSender
from ddb_capacity_runtime.fast_path.signals_function import (
    RESERVE_MS,
    signals_handler,
    take_reports,
)
from ddb_capacity_tools.local_aws import REGION
from tests.support.moto_world import World
from tests.support.signals_hook import (
    ACCOUNT,
    PTEE,
    Capture,
    cancelled_by,
    index_arn,
    inject,
    item,
    once,
    throttle,
)
from tests.support.stream_reader import (
    lambda_event,
    put_items,
    read,
    settled,
    stream_records,
    streamed_table,
    window_sum,
)
from tests.support.surge_server import SETTINGS, a_table, counted, report, served, write
from tests.support.surge_server import prompt_store as prompt_store  # noqa: F401 (fixture)
from tests.support.surge_server import world as world  # noqa: F401 (fixture)

OTHER_ACCOUNT = "999999999999"
WRITE_PROVISIONED = "TableWriteProvisionedThroughputExceeded"


def other_account(table: str) -> str:
    return f"arn:aws:dynamodb:{REGION}:{OTHER_ACCOUNT}:table/{table}"


def wait_for(done: Callable[[], bool], seconds: float = 5.0) -> bool:
    """Whether ``done`` holds within ``seconds`` (the hook's threads finish on their own)."""
    deadline = time.monotonic() + seconds
    while not done():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


# ------------------------------------------------------------------ the hook: odd answers


@pytest.mark.parametrize(
    ("gsi_units", "total", "expected"),
    [
        (5.0, 1.0, {None: 0.0, "g": 5.0}),  # a GSI consuming more than the whole request
        (-100.0, 3.0, {None: 3.0}),  # a GSI's negative units
    ],
)
def test_an_odd_answer_never_lowers_the_tables_demand(
    gsi_units: float, total: float, expected: dict[str | None, float]
) -> None:
    # GIVEN answers whose ConsumedCapacity DynamoDB never gives
    client = once()
    entry = {
        "TableName": "t",
        "CapacityUnits": total,
        "GlobalSecondaryIndexes": {"g": {"CapacityUnits": gsi_units}},
    }
    inject(client, lambda _op, _b: (200, {"ConsumedCapacity": entry}))
    capture = Capture()
    # WHEN a watched write gets one
    with watch(client, send=capture, interval=60):
        client.put_item(TableName="t", Item=item("a"))
    # THEN no dimension is reported below zero, and the table keeps its own units
    units = {index: row["units"] for (_t, index, _d), row in capture.totals().items()}
    assert units == expected


def test_consumption_an_answer_gives_for_a_table_not_asked_about_is_not_counted() -> None:
    # GIVEN a write on "t" answered with the consumed capacity of a table it never named
    client = once()
    inject(client, lambda _op, _b: (200, {"ConsumedCapacity": {"TableName": "other", "CapacityUnits": 50.0}}))  # fmt: skip
    capture = Capture()
    # WHEN a watcher of every table sees it
    with watch(client, send=capture, interval=60):
        client.put_item(TableName="t", Item=item("a"))
    # THEN "t" counts its request, and nothing counts on the table it never named
    assert set(capture.totals()) == {("t", None, "write")}


def test_a_throttled_item_of_another_accounts_table_is_not_ours() -> None:
    # GIVEN a transaction on the account's "orders" and another account's "orders",
    # cancelled because the other account's item was throttled
    client = once()
    inject(client, lambda _op, _b: cancelled_by(["None", "ThrottlingError"]))
    capture = Capture()
    # WHEN a watcher of the account sees it
    with watch(client, send=capture, interval=60, account=ACCOUNT) as watcher:
        with pytest.raises(ClientError, match="TransactionCanceledException"):
            client.transact_write_items(TransactItems=[
                {"Put": {"TableName": "orders", "Item": item("a")}},
                {"Put": {"TableName": other_account("orders"), "Item": item("b")}}])  # fmt: skip
    # THEN nothing counts on the account's own "orders"
    assert capture.totals() == {}
    assert watcher.errors == 0


@pytest.mark.parametrize(
    ("reasons", "expected"),
    [
        # more reasons than DynamoDB gives: as none at all, once on the request's table
        (
            [{"reason": WRITE_PROVISIONED, "resource": index_arn("orders", f"i{i}")}
             for i in range(65)],
            {("orders", None): {"unknown": 1}},
        ),
        # a reason naming no resource: none placed, the strongest cause on the table
        (
            [{"reason": "TableWriteKeyRangeThroughputExceeded", "resource": index_arn("orders")},
             {"reason": WRITE_PROVISIONED, "resource": "not an arn"}],
            {("orders", None): {"provisioned": 1}},
        ),
        # a table ARN with a suffix that names no index: on the table
        (
            [{"reason": WRITE_PROVISIONED, "resource": index_arn("orders") + "/stream/2025"}],
            {("orders", None): {"provisioned": 1}},
        ),
    ],
)  # fmt: skip
def test_throttling_reasons_that_cannot_be_placed_count_on_the_requests_table(
    reasons: list[dict[str, str]], expected: dict[tuple[str, str | None], dict[str, int]]
) -> None:
    # GIVEN a write throttled with reasons DynamoDB would not give
    client = once()
    inject(client, lambda _op, _b: throttle(PTEE, reasons))
    capture = Capture()
    # WHEN a watched client makes it
    with watch(client, send=capture, interval=60) as watcher:
        with pytest.raises(ClientError):
            client.put_item(TableName="orders", Item=item("a"))
    # THEN it counts once, where it can be placed, and invents no index
    throttles = {(t, i): row["throttles"] for (t, i, _d), row in capture.totals().items()}
    assert {k: v for k, v in throttles.items() if v} == expected
    assert watcher.errors == 0


@pytest.mark.parametrize(
    ("codes", "expected"),
    [
        (["None"] * 1_000 + ["ThrottlingError"], {}),  # more reasons than any transaction
        (["None", "None", "ThrottlingError"], {"t1": 1}),  # more reasons than its items
    ],
)
def test_a_cancellation_that_matches_no_items_counts_at_most_once(
    codes: list[str], expected: dict[str, int]
) -> None:
    # GIVEN a two-item transaction cancelled with reasons that do not match its items
    client = once()
    inject(client, lambda _op, _b: cancelled_by(codes))
    capture = Capture()
    # WHEN a watched client makes it
    with watch(client, send=capture, interval=60) as watcher:
        with pytest.raises(ClientError, match="TransactionCanceledException"):
            client.transact_write_items(TransactItems=[
                {"Put": {"TableName": "t1", "Item": item("a")}},
                {"Put": {"TableName": "t2", "Item": item("b")}}])  # fmt: skip
    # THEN a huge one counts nothing, and a longer one once on the first table
    totals = capture.totals()
    assert {t: sum(row["throttles"].values()) for (t, _i, _d), row in totals.items()} == expected
    assert watcher.errors == 0


def test_two_watchers_count_one_throttle_once() -> None:
    # GIVEN a session watched, and a client of it watched too, always throttled
    session = boto3.Session(
        aws_access_key_id="test",
        aws_secret_access_key="test",  # noqa: S106 (nothing is reached)
        region_name=REGION,
    )
    first, second = Capture(), Capture()
    on_session = watch(session, send=first, interval=60)
    client = session.client(
        "dynamodb",
        endpoint_url="http://127.0.0.1:9",
        config=Config(retries={"mode": "standard", "total_max_attempts": 1}),
    )
    inject(client, lambda _op, _b: throttle(PTEE, None))
    on_client = watch(client, send=second, interval=60)
    # WHEN one request is throttled
    with pytest.raises(ClientError):
        client.put_item(TableName="orders", Item=item("a"))
    on_session.stop()
    on_client.stop()
    # THEN the two watchers' reports count that one throttle once between them
    rows = [*first.totals().values(), *second.totals().values()]
    assert sum(sum(row["throttles"].values()) for row in rows) == 1


def test_a_throttle_on_a_table_out_of_scope_is_not_reported() -> None:
    # GIVEN a watcher of "a" alone, and a batch write on "a" and "b" throttled on "b"
    reasons = [{"reason": WRITE_PROVISIONED, "resource": index_arn("b")}]
    client = once()
    inject(client, lambda _op, _b: throttle(PTEE, reasons))
    capture = Capture()
    # WHEN the watched client makes it
    with watch(client, send=capture, interval=60, tables=["a"]):
        with pytest.raises(ClientError):
            client.batch_write_item(RequestItems={
                "a": [{"PutRequest": {"Item": item("a")}}],
                "b": [{"PutRequest": {"Item": item("b")}}]})  # fmt: skip
    # THEN nothing of "b" is reported
    assert {t for t, _i, _d in capture.totals()} <= {"a"}


def test_a_watch_of_an_arn_that_names_no_table_is_refused() -> None:
    with pytest.raises(ValueError, match="tables: got 'arn:aws:dynamodb:us-east-1:1"):
        watch(once(), send=Capture(), tables=[f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:stream/x"])


def test_another_accounts_consumption_in_one_answer_is_not_counted() -> None:
    # GIVEN a batch read of the account's "orders" and another account's "orders",
    # answered, as DynamoDB does, with the ARN the caller gave
    theirs = other_account("orders")
    answer = {"ConsumedCapacity": [
        {"TableName": "orders", "CapacityUnits": 1.0},
        {"TableName": theirs, "CapacityUnits": 50.0}]}  # fmt: skip
    client = once()
    inject(client, lambda _op, _b: (200, {**answer, "Responses": {}}))
    capture = Capture()
    # WHEN a watcher of the account sees it
    with watch(client, send=capture, interval=60, account=ACCOUNT):
        client.batch_get_item(RequestItems={
            "orders": {"Keys": [{"pk": {"S": "a"}}]},
            theirs: {"Keys": [{"pk": {"S": "a"}}]}})  # fmt: skip
    # THEN the account's "orders" counts its own unit alone
    assert capture.totals()[("orders", None, "read")]["units"] == 1.0


def test_another_accounts_throttle_in_one_answer_is_not_counted() -> None:
    # GIVEN a batch write on the account's "orders" and another account's "orders",
    # throttled with a reason that names the other account's table
    theirs = other_account("orders")
    reasons = [{"reason": WRITE_PROVISIONED, "resource": theirs}]
    client = once()
    inject(client, lambda _op, _b: throttle(PTEE, reasons))
    capture = Capture()
    # WHEN a watcher of the account sees it
    with watch(client, send=capture, interval=60, account=ACCOUNT):
        with pytest.raises(ClientError):
            client.batch_write_item(RequestItems={
                "orders": [{"PutRequest": {"Item": item("a")}}],
                theirs: [{"PutRequest": {"Item": item("b")}}]})  # fmt: skip
    # THEN no throttle and no failed request count on the account's own "orders"
    assert capture.totals() == {}


# ------------------------------------------------------------------ the hook: the caller


def test_logging_that_raises_never_fails_the_callers_request(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # GIVEN a process whose logging filter raises, and a hook whose handler meets an error
    class Broken(logging.Filter):
        def filter(self, record: logging.LogRecord) -> bool:
            raise RuntimeError("a broken logging filter")

    def broken(*_: object) -> dict[Any, float]:
        raise RuntimeError("a bug in the hook")

    monkeypatch.setattr(signals_hook, "consumed", broken)
    client = once()
    inject(client, lambda _op, _b: (200, {"ConsumedCapacity": {"TableName": "t", "CapacityUnits": 1.0}}))  # fmt: skip
    bad = Broken()
    LOGGER.addFilter(bad)
    try:
        # WHEN the caller writes
        with watch(client, send=Capture(), interval=60) as watcher:
            answer = client.put_item(TableName="t", Item=item("a"))
    finally:
        LOGGER.removeFilter(bad)
    # THEN its request succeeds, and the error is counted
    assert "ConsumedCapacity" not in answer
    assert watcher.errors == 1


def test_the_sending_thread_goes_on_after_an_error() -> None:
    # GIVEN a watcher whose clock fails once in its sending thread
    failed: list[str] = []

    def clock() -> float:
        if threading.current_thread().name == "ddb-capacity-signals" and not failed:
            failed.append("once")
            raise RuntimeError("a clock that failed once")
        return time.monotonic()

    client = once()
    inject(client, lambda _op, b: (200, {"ConsumedCapacity": {"TableName": b["TableName"], "CapacityUnits": 100.0}}))  # fmt: skip
    capture = Capture()
    watcher = Watcher(
        client.meta.events, tables=None, send=capture, interval=1.0, label="w", clock=clock
    )
    try:
        # WHEN the process reads, and the thread's first round fails
        client.get_item(TableName="t", Key={"pk": {"S": "a"}})
        # THEN a later round still reports, and the failure is counted
        assert wait_for(lambda: bool(capture.reports)), "no round after the error reported"
        assert failed and watcher.errors == 1
    finally:
        watcher.stop()


def test_after_a_fork_credentials_found_in_the_environment_are_found_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # GIVEN a sender made from a session whose keys come from the environment
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "before")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "before-secret")
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    sender = LambdaSender("signals", boto3.Session(region_name=REGION), eager=True)
    # WHEN the keys rotate and the process forks
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "after")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "after-secret")
    sender.after_fork()
    # THEN the child's session finds the keys of now, not a frozen copy of the parent's
    keys = sender.fresh_session().get_credentials().get_frozen_credentials()
    assert (keys.access_key, keys.secret_key) == ("after", "after-secret")


def test_every_report_stop_leaves_unsent_is_counted() -> None:
    # GIVEN a watcher with three tables to report
    client = once()
    inject(client, lambda _op, b: (200, {"ConsumedCapacity": {"TableName": b["TableName"], "CapacityUnits": 1.0}}))  # fmt: skip
    capture = Capture()
    watcher = watch(client, send=capture, interval=60)
    for t in range(3):
        client.get_item(TableName=f"t{t}", Key={"pk": {"S": "a"}})
    # WHEN it stops with no time left (as when a slow send took stop's whole timeout)
    watcher.stop(timeout=0)
    # THEN each table's report is sent or counted as not delivered
    assert wait_for(lambda: watcher.sent + watcher.failed_sends == 3, 2.0), (
        watcher.sent,
        watcher.failed_sends,
    )


# ------------------------------------------------------------------ the signals function


def test_a_batch_larger_than_the_contract_is_refused_whole(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a batch of reports that together pass the batch's size (each one alone would not)
    pad = "x" * 6_000
    event = batch_json([{"v": 1, "table": f"t{i}", "pad": pad} for i in range(MAX_BATCH_REPORTS)])
    capsys.readouterr()
    # WHEN the signals function takes it
    out = take_reports(event, served("t0"), SETTINGS, clients=world.clients, store=world.store)
    # THEN it is refused whole, once, before any of its reports is read
    assert out["ok"] is False and "larger than" in out["reason"]
    assert counted(capsys.readouterr().out, "ReportsRefused") == 1


def test_every_batch_the_hook_cuts_passes_the_functions_own_measure() -> None:
    # GIVEN the reports of 60 tables of 42 dimensions each, their units floats (JSON prints
    # them shorter than the 24 characters the signals function counts each one as)
    reports = [
        Report(
            f"orders-{t:03d}",
            "web-1-0123abcd",
            5.0,
            1.7e9,
            tuple(
                DimensionReport(
                    None if i < 2 else f"gsi-by-attribute-{i // 2:03d}",
                    ("read", "write")[i % 2],
                    (t * 42 + i) / 7,
                    1 + (t + i) % 99,
                    {},
                    0,
                )
                for i in range(42)
            ),
        ).as_json()
        for t in range(60)
    ]
    # WHEN the hook cuts them into batches
    cut = batches(reports)
    # THEN each passes the size the function checks a batch against, and none is lost
    for one in cut:
        check_json(batch_json(one), "batch", max_chars=MAX_BATCH_CHARS)
    assert [r for one in cut for r in one] == reports
    assert len(cut) > 1  # the reports do not fit one batch: the bound was met


def test_a_batch_that_breaks_the_contract_is_refused_and_counted(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # GIVEN a batch of another version than the contract's
    event = {"v": 2, "reports": [report("t", write(10))]}
    capsys.readouterr()
    # WHEN the signals function takes it
    out = take_reports(event, served("t"), SETTINGS)
    # THEN it is refused, naming the field, and counted; the invocation does not fail
    assert out["ok"] is False and out["reason"].startswith("v: got 2")
    assert counted(capsys.readouterr().out, "ReportsRefused") == 1


def test_a_report_that_raises_is_counted_and_the_next_is_taken(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a batch of two reports of a table under throttles, the first of which raises
    name = a_table(world, "RaisesOnce", write_min=100)
    throttled = write(300, throttles={"provisioned": 50})
    event = batch_json([report(name, throttled, process=p) for p in ("p1", "p2")])
    calls = itertools.count()

    def clock() -> float:
        if next(calls) == 0:
            raise RuntimeError("the first report's taking failed")
        return time.time()

    capsys.readouterr()
    # WHEN the signals function takes it
    out = take_reports(
        event, served(name), SETTINGS, clients=world.clients, store=world.store, clock=clock
    )
    # THEN the first is counted as failed, and the second raises the table
    assert [a["ok"] for a in out["reports"]] == [False, True]
    assert counted(capsys.readouterr().out, "SurgesFailed") == 1
    assert world.target_min(name, "write") > 100


def test_the_entry_point_starts_no_report_without_the_time_it_keeps(
    aws_client: Any,
    aws_env: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # GIVEN the function's environment, and an invocation with less time left than it keeps
    world = World(aws_client)
    try:
        for key, value in aws_env.items():
            monkeypatch.setenv(key, value)
        name = a_table(world, "NoTime", write_min=100)
        monkeypatch.setenv("CAPACITY_HOLDS_TABLE", world.store.name)
        monkeypatch.setenv("CAPACITY_SCOPES", json.dumps([{"table": name}]))
        event = batch_json([report(name, write(300), process=f"p{i}") for i in range(2)])

        class Context:
            def get_remaining_time_in_millis(self) -> int:
                return RESERVE_MS - 1

        capsys.readouterr()
        # WHEN a batch arrives
        out = signals_handler(event, Context())
        # THEN no report is started, both are counted as failed, and nothing is raised
        assert out == {"ok": True, "reports": []}
        assert counted(capsys.readouterr().out, "SurgesFailed") == 2
        assert world.target_min(name, "write") == 100
    finally:
        world.close()


# ------------------------------------------------------------------ the stream reader


def test_record_times_ahead_of_now_count_in_the_present(world: World) -> None:
    # GIVEN two records of a table: one dated a day ahead, one with no time at all
    name = streamed_table(world, "Ahead", write=100)
    put_items(world, name, 2, user=False)
    arn, records = stream_records(world, name)
    event = lambda_event(arn, records)
    now = time.time()
    ahead = now + 86_400
    event["Records"][0]["dynamodb"]["ApproximateCreationDateTime"] = ahead
    del event["Records"][1]["dynamodb"]["ApproximateCreationDateTime"]
    # WHEN the reader takes them
    read(world, event, served(name))
    # THEN nothing is counted a day ahead: both count in the windows of the present
    day_ahead = int(ahead // WINDOW_SECONDS) * WINDOW_SECONDS
    assert window_sum(world, name, "table:write", day_ahead) is None
    first = int(now // WINDOW_SECONDS) * WINDOW_SECONDS
    sums = [window_sum(world, name, "table:write", first + k * WINDOW_SECONDS) for k in range(5)]
    assert sum(s or 0.0 for s in sums) == 4


def test_a_record_without_a_body_is_counted_as_malformed(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    name = streamed_table(world, "NoBody", write=100)
    put_items(world, name, 2, user=False)
    arn, records = stream_records(world, name)
    _, at = settled(time.time())
    event = lambda_event(arn, records, at)
    event["Records"].append({**event["Records"][0], "dynamodb": "not a record's body"})
    read(world, event, served(name))
    assert counted(capsys.readouterr().out, "StreamRecordsMalformed") == 1


def test_a_gsi_written_in_one_window_of_two_is_counted_in_it(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a batch over two windows: GSI writes in the first, table-only writes in the second
    name = streamed_table(world, "TwoWindows", write=100, gsi_write=100)
    put_items(world, name, 3)
    put_items(world, name, 3, user=False)
    arn, records = stream_records(world, name)
    start, at = settled(time.time())
    first = lambda_event(arn, records[:3], at - WINDOW_SECONDS)["Records"]
    event = {"Records": first + lambda_event(arn, records[3:], at)["Records"]}
    # WHEN the reader takes it
    answer = read(world, event, served(name, indexes=("byUser",)))
    # THEN the GSI's units count in their window, and no dimension fails
    assert window_sum(world, name, "index/byUser:write", start - WINDOW_SECONDS) == 6
    assert "failed" not in {r["status"] for r in answer["dimensions"]}
    assert counted(capsys.readouterr().out, "StreamFailed") == 0


def test_records_that_disagree_on_their_view_count_no_gsi_writes(world: World) -> None:
    # GIVEN a batch of GSI writes whose records do not agree on the stream's view type
    name = streamed_table(world, "Views", write=100, gsi_write=100)
    put_items(world, name, 4)
    arn, records = stream_records(world, name)
    start, at = settled(time.time())
    event = lambda_event(arn, records, at)
    event["Records"][0]["dynamodb"]["StreamViewType"] = "NEW_IMAGE"
    # WHEN the reader takes it
    answer = read(world, event, served(name, indexes=("byUser",)))
    # THEN the table's writes count, and no GSI's: the images are not trusted to show them
    assert window_sum(world, name, "table:write", start) == 8
    assert window_sum(world, name, "index/byUser:write", start) is None
    assert [r["index"] for r in answer["dimensions"]] == [None]


def test_writes_at_exactly_what_is_provisioned_raise(world: World) -> None:
    # GIVEN a table at 10 write units, written 50 units in the window's first 5 seconds
    name = streamed_table(world, "Exactly")
    put_items(world, name, 25, user=False)
    arn, records = stream_records(world, name)
    _, at = settled(time.time())
    # WHEN the reader takes them: 10 units/s, the bucket starts to drain
    answer = read(world, lambda_event(arn, records, at), served(name))
    # THEN the table is raised
    (row,) = answer["dimensions"]
    assert (row["status"], row["rate"]) == ("applied", 10.0)
    assert world.target_min(name, "write") > 10


def test_a_surge_under_way_is_renewed_below_its_raised_capacity(world: World) -> None:
    # GIVEN a table at 10 raised to 18 by 12 units/s of writes
    name = streamed_table(world, "UnderWay")
    put_items(world, name, 30, user=False)
    arn, records = stream_records(world, name)
    _, at = settled(time.time())
    first = read(world, lambda_event(arn, records, at), served(name))
    assert [(r["status"], r["to"]) for r in first["dimensions"]] == [("applied", 18)]
    # WHEN the writes go on at about 12 units/s in the next window (under the 18 now)
    put_items(world, name, 31, user=False)
    arn, records = stream_records(world, name)
    second = read(world, lambda_event(arn, records[30:], at + WINDOW_SECONDS), served(name))
    # THEN the surge is renewed rather than left to expire under the burst
    assert [r["status"] for r in second["dimensions"]] == ["renewed"]
    assert world.target_min(name, "write") == 18


def test_records_too_late_for_their_window_are_counted_late(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a table whose counter slot holds a newer window than a batch's records
    name = streamed_table(world, "Late", write=100)
    put_items(world, name, 2, user=False)
    arn, records = stream_records(world, name)
    start, _ = settled(time.time())
    old = start - stream_counts.SLOTS * WINDOW_SECONDS
    stream_counts.add(world.store_ddb, world.store.name, name, "table:write", start, 1)
    # WHEN the reader takes those records
    answer = read(world, lambda_event(arn, records, old + 4.0), served(name))
    # THEN they are answered late, and their units counted as late
    assert [r["status"] for r in answer["dimensions"]] == ["late"]
    assert counted(capsys.readouterr().out, "StreamRecordsLate") == 4
    assert window_sum(world, name, "table:write", start) == 1


def test_batches_whose_records_have_no_event_id_all_count(world: World) -> None:
    # GIVEN two batches of two records each, in one window, their records without eventID
    name = streamed_table(world, "NoIds", write=100)
    put_items(world, name, 4, user=False)
    arn, records = stream_records(world, name)
    start, at = settled(time.time())
    events = [lambda_event(arn, records[:2], at), lambda_event(arn, records[2:], at)]
    for event in events:
        for record in event["Records"]:
            del record["eventID"]
    # WHEN the reader takes both
    for event in events:
        read(world, event, served(name))
    # THEN neither is taken for a replay of the other: all four writes count
    assert window_sum(world, name, "table:write", start) == 8


@pytest.mark.parametrize("event_id", [None, "e" * 129], ids=["no-event-id", "an-event-id-too-long"])
def test_a_batch_without_usable_event_ids_delivered_again_is_counted_once(
    world: World, capsys: pytest.CaptureFixture[str], event_id: str | None
) -> None:
    # GIVEN a batch of two records, in one window, with no eventID of at most 128 characters
    # (no event DynamoDB's stream delivers: a forged one)
    name = streamed_table(world, "Forged", write=100)
    put_items(world, name, 2, user=False)
    arn, records = stream_records(world, name)
    start, at = settled(time.time())
    event = lambda_event(arn, records, at)
    for record in event["Records"]:
        record.pop("eventID")
        if event_id is not None:
            record["eventID"] = event_id
    read(world, event, served(name))
    assert window_sum(world, name, "table:write", start) == 4
    # WHEN Lambda delivers the same batch again
    read(world, event, served(name))
    # THEN its records are known by their content: not added again
    assert window_sum(world, name, "table:write", start) == 4
    assert counted(capsys.readouterr().out, "StreamUnitsReplayed") == 4


def test_the_window_before_counts_early_in_a_window(world: World) -> None:
    # GIVEN a table at 10 whose shards counted 150 units (15 units/s) in the last window
    name = streamed_table(world, "Before")
    put_items(world, name, 2, user=False)
    arn, records = stream_records(world, name)
    start, _ = settled(time.time())
    previous = start - WINDOW_SECONDS
    stream_counts.add(world.store_ddb, world.store.name, name, "table:write", previous, 148)
    # WHEN a batch brings a record at the end of that window and one in the window's
    # first second
    event = {"Records": [
        *lambda_event(arn, records[:1], previous + 9.0)["Records"],
        *lambda_event(arn, records[1:], float(start))["Records"]]}  # fmt: skip
    answer = read(world, event, served(name))
    # THEN the rate is the last window's 15 units/s, not 2 units over one second: raised
    (row,) = answer["dimensions"]
    assert (row["status"], row["rate"]) == ("applied", 15.0)


def test_a_batch_added_to_a_window_whose_ids_are_full_is_counted_unguarded(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a window whose counter keeps as many batch ids as it may
    name = streamed_table(world, "Crowded", write=100_000)
    put_items(world, name, 2, user=False)
    arn, records = stream_records(world, name)
    start, at = settled(time.time())
    for n in range(stream_counts.MAX_BATCH_IDS):
        stream_counts.add(world.store_ddb, world.store.name, name, "table:write", start, 0, str(n))
    # WHEN the reader takes a batch of that window
    read(world, lambda_event(arn, records, at), served(name))
    # THEN its units are added, and counted as added without their batch's id
    assert window_sum(world, name, "table:write", start) == 4
    assert counted(capsys.readouterr().out, "StreamUnitsUnguarded") == 4
