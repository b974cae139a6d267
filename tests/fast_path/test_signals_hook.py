"""The fast path's client hook (``ddb_capacity_runtime.fast_path.hook.watch``) on real boto3
clients: against the session's moto server for real answers, and with answers injected
through botocore's own ``before-send`` event where moto cannot give them (throttles, GSI
capacity, thousands of tables). Reports are captured through ``send=``, and checked
against the contract (``core.surge_report.parse_report``)."""

from __future__ import annotations

import json
import logging
import os
import sys
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError, ParamValidationError
from hypothesis import given, settings
from hypothesis import strategies as st

from ddb_capacity_runtime.core.errors import CapacityError, WatchError, WatchTypeError
from ddb_capacity_runtime.core.report_batch import MAX_BATCH_REPORTS, reports_of
from ddb_capacity_runtime.core.surge_report import (
    FRESH_SECONDS,
    MAX_DIMENSIONS,
    MAX_PROCESS_CHARS,
    Report,
    parse_report,
)
from ddb_capacity_runtime.events import event_fields
from ddb_capacity_runtime.fast_path import hook as signals_hook
from ddb_capacity_runtime.fast_path import parse as signals_parse
from ddb_capacity_runtime.fast_path import sender as signals_sender
from ddb_capacity_runtime.fast_path.hook import (
    KEEPALIVE_SECONDS,
    MAX_TABLES,
    SIGNALS_ENV,
    Watcher,
    watch,
)
from ddb_capacity_runtime.fast_path.ledger import Ledger, report_due
from ddb_capacity_tools.local_aws import REGION
from tests.support.hypothesis_profiles import examples
from tests.support.signals_hook import (
    ACCOUNT,
    PTEE,
    Capture,
    FakeLambda,
    cancelled_by,
    ddb,
    index_arn,
    inject,
    item,
    make_table,
    offline,
    once,
    throttle,
)
from tests.support.signals_hook import table as table  # noqa: F401 (fixture)


def operations(t: str) -> list[tuple[str, dict[str, Any]]]:
    """One call of each watched operation on table ``t``; every one can be repeated with
    the same answer."""
    key = {"pk": {"S": "a"}}
    return [
        ("put_item", {"TableName": t, "Item": item("a")}),
        ("get_item", {"TableName": t, "Key": key}),
        ("update_item", {"TableName": t, "Key": key, "UpdateExpression": "SET v = :v",
                         "ExpressionAttributeValues": {":v": {"S": "value"}}}),
        ("query", {"TableName": t, "KeyConditionExpression": "pk = :p",
                   "ExpressionAttributeValues": {":p": {"S": "a"}}}),
        ("query", {"TableName": t, "IndexName": "by-g", "KeyConditionExpression": "g = :g",
                   "ExpressionAttributeValues": {":g": {"S": "x"}}}),
        ("scan", {"TableName": t}),
        ("batch_write_item", {"RequestItems": {t: [{"PutRequest": {"Item": item("b")}}]}}),
        ("batch_get_item", {"RequestItems": {t: {"Keys": [key, {"pk": {"S": "b"}}]}}}),
        ("transact_write_items", {"TransactItems": [{"Put": {"TableName": t, "Item": item("c")}}]}),
        ("transact_get_items", {"TransactItems": [{"Get": {"TableName": t, "Key": key}}]}),
        ("delete_item", {"TableName": t, "Key": {"pk": {"S": "nothing"}}}),
    ]  # fmt: skip


#: The operations whose ConsumedCapacity moto answers even when not asked for.
MOTO_UNASKED = {"update_item", "batch_write_item", "batch_get_item", "transact_write_items"}
READS = {"get_item", "query", "scan", "batch_get_item", "transact_get_items"}


def seen(response: dict[str, Any]) -> dict[str, Any]:
    """A response as the caller sees it, less what differs between any two calls."""
    return {k: v for k, v in response.items() if k != "ResponseMetadata"}


# --- real answers from moto ---------------------------------------------------------------


def test_reports_sum_what_the_answers_say_per_table_and_dimension(
    moto_endpoint: str, table: str
) -> None:
    # GIVEN a watched client whose caller asks for the consumed capacity itself
    client = ddb(moto_endpoint)
    capture = Capture()
    watcher = watch(client, send=capture, interval=1)
    expected = {"read": 0.0, "write": 0.0}
    calls = {"read": 0, "write": 0}
    # WHEN it calls every watched operation twice
    for _ in range(2):
        for method, kwargs in operations(table):
            answer = getattr(client, method)(**kwargs, ReturnConsumedCapacity="INDEXES")
            dim = "read" if method in READS else "write"
            entries = answer.get("ConsumedCapacity", [])
            for entry in entries if isinstance(entries, list) else [entries]:
                assert entry["TableName"] == table
                expected[dim] += entry.get(
                    f"{dim.capitalize()}CapacityUnits", entry["CapacityUnits"]
                )
            calls[dim] += 1
    watcher.stop()
    # THEN the reports sum to the answers' own units, and count every request
    totals = capture.totals()
    assert set(totals) == {(table, None, "read"), (table, None, "write")}
    for dim in ("read", "write"):
        assert totals[(table, None, dim)]["units"] == pytest.approx(expected[dim])
        assert totals[(table, None, dim)]["requests"] == calls[dim]
    assert expected["read"] > 0 and expected["write"] > 0
    assert {r.process for r in capture.reports} == {watcher.process}
    assert watcher.sent == len(capture.reports) and watcher.failed_sends == watcher.errors == 0


def test_the_caller_sees_what_it_would_see_without_the_hook(moto_endpoint: str, table: str) -> None:
    # GIVEN a plain client and a watched one, on the same table
    plain, hooked = ddb(moto_endpoint), ddb(moto_endpoint)
    bodies: list[bytes] = []
    hooked.meta.events.register(
        "before-send.dynamodb", lambda request, **_: bodies.append(request.body)
    )
    capture = Capture()
    watcher = watch(hooked, send=capture, interval=1)
    unasked: set[str] = set()
    # WHEN each makes the same calls, asking for no capacity, for INDEXES, and for TOTAL
    for asked in ({}, {"ReturnConsumedCapacity": "INDEXES"}, {"ReturnConsumedCapacity": "TOTAL"},
                  {"ReturnConsumedCapacity": "NONE"}):  # fmt: skip
        for method, kwargs in operations(table):
            mine = {**kwargs, **asked}
            before = json.dumps(mine, sort_keys=True)
            want = seen(getattr(plain, method)(**mine))
            got = seen(getattr(hooked, method)(**mine))
            if asked.get("ReturnConsumedCapacity", "NONE") == "NONE" and "ConsumedCapacity" in want:
                # moto answers some capacity unasked; DynamoDB does not
                unasked.add(method)
                del want["ConsumedCapacity"]
            # THEN the answers are the same (no ConsumedCapacity unless asked for)
            assert got == want, (method, asked)
            assert ("ConsumedCapacity" in got) == (
                asked.get("ReturnConsumedCapacity") in ("INDEXES", "TOTAL")
            )
            assert json.dumps(mine, sort_keys=True) == before  # the caller's arguments
    watcher.stop()
    assert unasked == MOTO_UNASKED
    # AND the hook did ask for the capacity on every request (and so reported it)
    assert all(b'"ReturnConsumedCapacity": "INDEXES"' in b or b'"TOTAL"' in b for b in bodies)
    assert capture.totals()[(table, None, "write")]["units"] > 0


def errors_of(client: Any, table: str) -> list[tuple[type, Mapping[str, object], str]]:
    out: list[tuple[type, Mapping[str, object], str]] = []
    calls: list[Callable[[], object]] = [
        lambda: client.get_item(TableName="missing-" + table, Key={"pk": {"S": "a"}}),
        lambda: client.put_item(TableName=table, Item=item("a"), ConditionExpression="attribute_not_exists(pk)"),
        lambda: client.put_item(TableName=table, Item=item("a"), ConditionExpression="attribute_not_exists(pk)",
                                ReturnConsumedCapacity="TOTAL"),
        lambda: client.transact_write_items(TransactItems=[{"ConditionCheck": {
            "TableName": table, "Key": {"pk": {"S": "a"}}, "ConditionExpression": "attribute_not_exists(pk)"}}]),
    ]  # fmt: skip
    for call in calls:
        with pytest.raises(ClientError) as caught:
            call()
        error = caught.value
        out.append((type(error), error.response.get("Error", {}), str(error)))
    return out


def test_the_caller_gets_the_same_exceptions(moto_endpoint: str, table: str) -> None:
    plain, hooked = ddb(moto_endpoint), ddb(moto_endpoint)
    plain.put_item(TableName=table, Item=item("a"))
    watcher = watch(hooked, send=Capture(), interval=1)
    want = errors_of(plain, table)
    got = errors_of(hooked, table)
    for client in (plain, hooked):  # a wrong value stays wrong: botocore refuses it
        with pytest.raises(ParamValidationError, match="ReturnConsumedCapacity"):
            client.get_item(TableName=table, Key={"pk": {"S": "a"}}, ReturnConsumedCapacity=None)
    watcher.stop()
    assert [w[0].__name__ for w in want] == [
        "ResourceNotFoundException",
        "ConditionalCheckFailedException",
        "ConditionalCheckFailedException",
        "TransactionCanceledException",
    ]
    assert got == want
    assert watcher.errors == 0


def test_tables_out_of_scope_are_not_reported(moto_endpoint: str) -> None:
    client = ddb(moto_endpoint)
    mine, other = make_table(client), make_table(client)
    capture = Capture()
    arn = f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/{mine}"
    with watch(client, tables=[arn], send=capture, interval=1) as watcher:
        for t in (mine, other, mine):
            client.put_item(TableName=t, Item=item("a"))
        client.batch_write_item(
            RequestItems={t: [{"PutRequest": {"Item": item(t)}}] for t in (mine, other)}
        )
        assert watcher.tracked == 1
    assert {r.table for r in capture.reports} == {mine}
    assert capture.totals()[(mine, None, "write")]["requests"] == 3


def test_many_threads_on_one_client_give_exact_totals(moto_endpoint: str, table: str) -> None:
    # GIVEN one watched client shared by 8 threads, reporting every second as they run
    client = ddb(moto_endpoint, max_pool_connections=8)
    per_put = client.put_item(TableName=table, Item=item("probe"), ReturnConsumedCapacity="TOTAL")[
        "ConsumedCapacity"
    ]["CapacityUnits"]
    capture = Capture()
    watcher = watch(client, send=capture, interval=1)
    threads, n = 8, 30

    def work(k: int) -> None:
        for i in range(n):
            asked = {"ReturnConsumedCapacity": "INDEXES"} if i % 2 else {}
            client.put_item(TableName=table, Item=item(f"{k}-{i}"), **asked)

    workers = [threading.Thread(target=work, args=(k,)) for k in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    watcher.stop()
    # THEN every request and unit is reported exactly once
    row = capture.totals()[(table, None, "write")]
    assert row["requests"] == threads * n
    assert row["units"] == pytest.approx(threads * n * per_put)
    assert watcher.errors == watcher.dropped == 0


def test_a_failing_send_is_counted_and_never_reaches_the_caller(
    moto_endpoint: str, table: str
) -> None:
    def broken(_payload: dict[str, Any]) -> None:
        raise ConnectionError("the signals function is unreachable")

    client = ddb(moto_endpoint)
    watcher = watch(client, send=broken, interval=60)
    for i in range(3):
        client.put_item(TableName=table, Item=item(str(i)))
    watcher.flush()
    assert watcher.failed_sends == 1 and watcher.sent == 0
    client.get_item(TableName=table, Key={"pk": {"S": "0"}})
    watcher.stop()
    assert watcher.failed_sends == 2 and watcher.sent == 0 and watcher.errors == 0


@pytest.mark.parametrize("in_lambda", [True, False])
def test_in_a_lambda_function_the_hooks_failures_are_counted_as_a_metric(
    moto_endpoint: str,
    table: str,
    in_lambda: bool,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # GIVEN a hook whose sends fail, in a Lambda function (whose log's EMF lines Lambda
    # makes metrics) or in a process of its own, granted the signals function of the
    # deployment whose hold store is orders-holds
    monkeypatch.setenv("CAPACITY_METRICS_STORE", "orders-holds")
    if in_lambda:
        monkeypatch.setenv("AWS_LAMBDA_FUNCTION_NAME", "orders-worker")
    else:
        monkeypatch.delenv("AWS_LAMBDA_FUNCTION_NAME", raising=False)

    def broken(_payload: dict[str, Any]) -> None:
        raise ConnectionError("the signals function is unreachable")

    client = ddb(moto_endpoint)
    watcher = watch(client, send=broken, interval=60)
    capsys.readouterr()
    # WHEN its rounds meet failures, then none
    client.put_item(TableName=table, Item=item("0"))
    watcher.flush()
    watcher.flush()
    client.get_item(TableName=table, Key={"pk": {"S": "0"}})
    watcher.stop()
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    # THEN in Lambda each round with new failures writes one HookFailures count of them, in
    # the namespace and for the deployment (dimension StateStore, its hold store) its
    # CapacityRequests alarms on; elsewhere the program's output is left alone
    counts = [r["HookFailures"] for r in records if "HookFailures" in r]
    assert watcher.failed_sends >= 2 and watcher.errors == watcher.dropped == 0
    assert counts == ([1] * watcher.failed_sends if in_lambda else [])
    for r in records:
        (group,) = r["_aws"]["CloudWatchMetrics"]
        assert (group["Namespace"], group["Dimensions"]) == ("DynamoDBCapacity", [["StateStore"]])
        assert r["StateStore"] == "orders-holds"


@pytest.mark.parametrize(
    ("operation", "params", "most"),
    [
        ("get_item", {"Key": {"pk": {"S": "a"}}}, 100),
        # 400 KB on the table, and twice that on each of 25 indexes whose key it moves (an
        # answer without a breakdown by index counts them all on the table)
        ("put_item", {"Item": {"pk": {"S": "a"}}}, 20_400),
        # a megabyte, strongly consistent, and the 400 KB item the page ends on
        ("query", {"KeyConditionExpression": "pk = :a"}, 356),
    ],
)
def test_an_answer_past_belief_counts_as_the_most_its_call_can_consume(
    operation: str, params: dict[str, Any], most: int
) -> None:
    # GIVEN answers saying one call consumed 1e300 units, then one saying half a unit
    answers = [
        {"ConsumedCapacity": {"TableName": "Orders", "CapacityUnits": units}}
        for units in (1e300, 0.5)
    ]
    # WHEN the caller makes the two calls
    capture = answered(operation, params, answers)
    # THEN the first counts as the most one such call can consume, not the table quota
    (row,) = capture.totals().values()
    assert row["requests"] == 2 and row["units"] == most + 0.5


def answered(operation: str, params: dict[str, Any], answers: list[dict[str, Any]]) -> Capture:
    """What a watched client's hook reported of one call of ``operation`` on table Orders
    (or the transaction ``params`` name) for each of ``answers`` (botocore's Stubber: what no local tool answers)."""
    from botocore.stub import Stubber

    client = boto3.client(
        "dynamodb", region_name=REGION, aws_access_key_id="x", aws_secret_access_key="x"
    )
    capture = Capture()
    watcher = watch(client, send=capture, interval=60)
    stub = Stubber(client)
    for answer in answers:
        stub.add_response(operation, answer)
    with stub:
        for _ in answers:
            named = {} if "TransactItems" in params else {"TableName": "Orders"}
            getattr(client, operation)(**named, **params)
        watcher.stop()
    stub.assert_no_pending_responses()
    return capture


@pytest.mark.parametrize(
    ("operation", "params", "consumed", "rest"),
    [
        # a 300 KB item on a table whose one local index projects it whole
        ("put_item", {"Item": {"pk": {"S": "a"}}}, {"CapacityUnits": 600.0}, {}),
        # the same item moving its key in a GSI: deleted there, and put again
        (
            "put_item",
            {"Item": {"pk": {"S": "a"}}},
            {"CapacityUnits": 900.0, "GlobalSecondaryIndexes": {"byUser": {"CapacityUnits": 600}}},
            {},
        ),
        # a 400 KB item moving its key in 6 GSIs, answered TOTAL (no breakdown by index)
        ("put_item", {"Item": {"pk": {"S": "a"}}}, {"CapacityUnits": 5_200.0}, {}),
        # a page of 100 items of 10 KB from a keys-only local index, each fetched from the
        # table, strongly consistent: 100 x 3 units and the index's page
        (
            "query",
            {"KeyConditionExpression": "pk = :a", "IndexName": "byDate"},
            {"CapacityUnits": 301.0},
            {"Items": [{"pk": {"S": "a"}}] * 100, "ScannedCount": 100},
        ),
        # the same local index counted (Select=COUNT) under a filter on an attribute it
        # does not hold: 100 items of 20 KB read and fetched, none returned
        (
            "query",
            {"KeyConditionExpression": "pk = :a", "IndexName": "byDate", "Select": "COUNT"},
            {"CapacityUnits": 556.0},
            {"Count": 0, "ScannedCount": 100},
        ),
        # 100 items of 41,943 bytes in a transaction: 11 units each, twice
        (
            "transact_get_items",
            {},
            {"CapacityUnits": 2_200.0},
            {"Responses": [{"Item": {"pk": {"S": "a"}}}]},
        ),
    ],
    ids=["lsi-write", "gsi-key-move", "total-key-moves", "lsi-fetch", "lsi-count", "rounding"],
)
def test_a_real_answer_above_one_items_or_pages_cost_counts_whole(
    operation: str, params: dict[str, Any], consumed: dict[str, Any], rest: dict[str, Any]
) -> None:
    # GIVEN an answer a real table can give, more than one item or one page costs alone
    answer = {"ConsumedCapacity": {"TableName": "Orders", **consumed}, **rest}
    if operation == "transact_get_items":  # a list of entries, the call names its tables
        answer["ConsumedCapacity"] = [answer["ConsumedCapacity"]]
        key = {"Key": {"pk": {"S": "a"}}, "TableName": "Orders"}
        params = {"TransactItems": [{"Get": key}]}
    # WHEN the caller makes the call
    capture = answered(operation, params, [answer])
    # THEN every unit it consumed counts, on the table and on the GSI
    gsis = consumed.get("GlobalSecondaryIndexes", {})
    on_gsis = {(i, c["CapacityUnits"]) for i, c in gsis.items()}
    table = consumed["CapacityUnits"] - sum(u for _, u in on_gsis)
    counted = {(index, row["units"]) for (_, index, _), row in capture.totals().items()}
    assert counted == {(None, table), *on_gsis}


def test_a_slow_send_never_slows_the_caller(moto_endpoint: str, table: str) -> None:
    # GIVEN a send that blocks until released
    started, release = threading.Event(), threading.Event()
    capture = Capture()

    def slow(payload: dict[str, Any]) -> None:
        started.set()
        release.wait(20)
        capture(payload)

    client = ddb(moto_endpoint)
    watcher = watch(client, send=slow, interval=1)
    for i in range(10):  # a new rate: reported on the thread's first round
        client.put_item(TableName=table, Item=item(f"first-{i}"))
    assert started.wait(10), "the thread never sent"
    # WHEN the caller goes on while the sending thread is stuck
    for i in range(10):
        client.put_item(TableName=table, Item=item(str(i)))
    # THEN every call returned while the send was still stuck (no clock: a call that waited
    # for it would return only once the send had finished and captured its batch)
    assert not capture.reports, "a call waited for the send"
    release.set()
    watcher.stop()
    assert capture.totals()[(table, None, "write")]["requests"] == 20


def test_a_handler_error_is_counted_and_the_call_succeeds(
    moto_endpoint: str, table: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*_: object) -> dict[Any, float]:
        raise RuntimeError("a bug in the hook")

    monkeypatch.setattr(signals_hook, "consumed", broken)
    client = ddb(moto_endpoint)
    with watch(client, send=Capture(), interval=1) as watcher:
        answer = client.put_item(TableName=table, Item=item("a"), ReturnValues="ALL_OLD")
        assert "ConsumedCapacity" not in answer
    assert watcher.errors == 1


def test_stop_removes_the_hook(moto_endpoint: str, table: str) -> None:
    client = ddb(moto_endpoint)
    bodies: list[bytes] = []
    client.meta.events.register(
        "before-send.dynamodb", lambda request, **_: bodies.append(request.body)
    )
    capture = Capture()
    watcher = watch(client, send=capture, interval=1)
    client.put_item(TableName=table, Item=item("a"))
    watcher.stop()
    watcher.stop()  # again: nothing
    client.put_item(TableName=table, Item=item("a"))
    assert b"ReturnConsumedCapacity" in bodies[0] and b"ReturnConsumedCapacity" not in bodies[1]
    assert capture.totals()[(table, None, "write")]["requests"] == 1


def test_a_session_hook_watches_the_clients_it_makes_later(moto_endpoint: str, table: str) -> None:
    session = boto3.Session(
        aws_access_key_id="test", aws_secret_access_key="test", region_name=REGION
    )  # noqa: S106
    capture = Capture()
    with watch(session, send=capture, interval=1):
        for _ in range(2):
            session.client("dynamodb", endpoint_url=moto_endpoint).put_item(
                TableName=table, Item=item("a")
            )
        resource = session.resource("dynamodb", endpoint_url=moto_endpoint)
        answer = resource.Table(table).get_item(Key={"pk": "a"})
        assert answer["Item"]["g"] == "x" and "ConsumedCapacity" not in answer
    totals = capture.totals()
    assert totals[(table, None, "write")]["requests"] == 2
    assert totals[(table, None, "read")]["requests"] == 1


# --- answers injected through botocore: GSI capacity, throttles, many tables ---------------


def test_gsi_capacity_counts_on_the_index_and_the_rest_on_the_table() -> None:
    # GIVEN answers shaped as DynamoDB's own with INDEXES (moto names no GSI's capacity)
    t = "orders"
    cc_write = {
        "TableName": index_arn(t),
        "CapacityUnits": 3.0,
        "Table": {"CapacityUnits": 1.0},
        "GlobalSecondaryIndexes": {"by-g": {"CapacityUnits": 2.0}},
    }
    cc_query = {
        "TableName": t,
        "CapacityUnits": 0.5,
        "Table": {"CapacityUnits": 0.0},
        "GlobalSecondaryIndexes": {"by-g": {"CapacityUnits": 0.5}},
    }
    cc_trans = [
        {
            "TableName": t,
            "CapacityUnits": 4.0,
            "ReadCapacityUnits": 0.0,
            "WriteCapacityUnits": 4.0,
            "Table": {"CapacityUnits": 2.0, "WriteCapacityUnits": 2.0},
            "GlobalSecondaryIndexes": {"by-g": {"CapacityUnits": 2.0, "WriteCapacityUnits": 2.0}},
        },
        {"TableName": "other", "CapacityUnits": 2.0, "Table": {"CapacityUnits": 2.0}},
    ]
    sent: list[dict[str, Any]] = []
    answers: dict[str, dict[str, Any]] = {"PutItem": {"ConsumedCapacity": cc_write},
               "Query": {"Items": [], "Count": 0, "ScannedCount": 0, "ConsumedCapacity": cc_query},
               "TransactWriteItems": {"ConsumedCapacity": cc_trans}}  # fmt: skip

    def bodies(operation: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        sent.append(body)
        return 200, answers[operation]

    client = offline()
    inject(client, bodies)
    capture = Capture()
    with watch(client, send=capture, interval=1):
        put = client.put_item(TableName=index_arn(t), Item=item("a"))
        query = client.query(TableName=t, IndexName="by-g", KeyConditionExpression="g = :g",
                             ExpressionAttributeValues={":g": {"S": "x"}}, ReturnConsumedCapacity="INDEXES")  # fmt: skip
        client.transact_write_items(TransactItems=[
            {"Put": {"TableName": t, "Item": item("b")}}, {"Put": {"TableName": "other", "Item": item("c")}}])  # fmt: skip
    # THEN the caller's answers are as asked, and the units land on their dimensions
    assert "ConsumedCapacity" not in put and query["ConsumedCapacity"] == cc_query
    assert [b.get("ReturnConsumedCapacity") for b in sent] == ["INDEXES"] * 3
    totals = capture.totals()
    assert {k: (v["units"], v["requests"]) for k, v in totals.items()} == {
        (t, None, "write"): (1.0 + 2.0, 2),
        (t, "by-g", "write"): (2.0 + 2.0, 2),
        (t, None, "read"): (0.0, 1),
        (t, "by-g", "read"): (0.5, 1),
        ("other", None, "write"): (2.0, 1),
    }


@pytest.mark.parametrize(
    ("code", "reasons", "where", "cause"),
    [
        (PTEE, None, None, "unknown"),
        (
            PTEE,
            [{"reason": "TableWriteProvisionedThroughputExceeded", "resource": "T"}],
            None,
            "provisioned",
        ),
        (
            PTEE,
            [{"reason": "TableWriteKeyRangeThroughputExceeded", "resource": "T"}],
            None,
            "key_range",
        ),
        (
            PTEE,
            [{"reason": "IndexWriteProvisionedThroughputExceeded", "resource": "I"}],
            "by-g",
            "provisioned",
        ),
        (PTEE, [{"reason": "TableWriteAccountLimitExceeded", "resource": "T"}], None, "other"),
        ("ThrottlingException", None, None, "other"),
        ("RequestLimitExceeded", None, None, "other"),
    ],
)
def test_every_throttled_attempt_counts_with_its_cause(
    moto_endpoint: str,
    table: str,
    code: str,
    reasons: list[dict[str, str]] | None,
    where: str | None,
    cause: str,
) -> None:
    arns = {"T": index_arn(table), "I": index_arn(table, "by-g")}
    reasons = [{**r, "resource": arns[r["resource"]]} for r in reasons] if reasons else reasons

    def run(hooked: bool) -> tuple[list[object], int, Capture]:
        """A client with retries on whose first 2 attempts of a PutItem are throttled (then
        moto answers), and whose second PutItem is always throttled: what the caller got,
        and how many throttled answers it was sent."""
        attempts: dict[str, int] = defaultdict(int)
        injected = [0]

        def bodies(_op: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]] | None:
            key = body["Item"]["pk"]["S"]
            attempts[key] += 1
            if key == "ok" and attempts[key] > 2:
                return None
            injected[0] += 1
            return throttle(code, reasons)

        client = ddb(moto_endpoint, retries={"mode": "legacy", "total_max_attempts": 3})
        inject(client, bodies)
        capture = Capture()
        watcher = watch(client, send=capture, interval=1) if hooked else None
        outcomes: list[object] = []
        for key, asked in (("ok", {}), ("never", {"ReturnConsumedCapacity": "TOTAL"})):
            try:
                outcomes.append(seen(client.put_item(TableName=table, Item=item(key), **asked)))
            except ClientError as exc:
                outcomes.append((type(exc).__name__, exc.response["Error"], str(exc)))
        if watcher is not None:
            watcher.stop()
        return outcomes, injected[0], capture

    # WHEN the same calls are throttled with and without the hook
    want, _, _ = run(hooked=False)
    got, injected, capture = run(hooked=True)
    # THEN the caller sees the same, and every throttled attempt counts once, by cause
    assert got == want
    assert want[1][0] == code  # type: ignore[index]
    if code != "RequestLimitExceeded":  # botocore's legacy retries skip RequestLimitExceeded
        assert injected == 2 + 3 and want[0] == {}
    totals = capture.totals()
    assert totals[(table, where, "write")]["throttles"] == {cause: injected}
    answered = int(want[0] == {})
    assert totals.get((table, None, "write"), {}).get("requests", 0) == answered
    # AND the request never served counts once as failed, when capacity could serve it
    assert totals[(table, where, "write")]["failed"] == int(cause in ("provisioned", "unknown"))


def test_the_memory_is_bounded_and_drops_are_counted() -> None:
    # GIVEN a client answering GetItem for any table, with 2 units
    client = offline()
    inject(
        client,
        lambda _op, body: (
            200,
            {"ConsumedCapacity": {"TableName": body["TableName"], "CapacityUnits": 2.0}},
        ),
    )
    capture = Capture()
    extra = 50
    watcher = watch(client, send=capture, interval=60)
    # WHEN it reads more distinct tables than a watcher tracks
    for i in range(MAX_TABLES + extra):
        client.get_item(TableName=f"table-{i:05d}", Key={"pk": {"S": "a"}})
    # THEN the tracked tables stay at the bound and the rest is dropped and counted
    assert watcher.tracked == MAX_TABLES
    assert watcher.dropped == 2 * extra  # each request: its count and its units
    watcher.stop()
    assert len({r.table for r in capture.reports}) == MAX_TABLES
    assert watcher.sent == MAX_TABLES and watcher.errors == 0


def test_a_report_carries_at_most_the_contracts_dimensions() -> None:
    gsis = {f"index-{i:02d}": {"CapacityUnits": 1.0} for i in range(30)}
    client = offline()
    inject(client, lambda _op, _b: (200, {"ConsumedCapacity": {"TableName": "t1", "CapacityUnits": 31.0,
                                                               "GlobalSecondaryIndexes": gsis}}))  # fmt: skip
    capture = Capture()
    with watch(client, send=capture, interval=60) as watcher:
        client.put_item(TableName="t1", Item=item("a"))
        client.get_item(TableName="t1", Key={"pk": {"S": "a"}})
    assert [len(r.dims) for r in capture.reports] == [MAX_DIMENSIONS]
    assert watcher.dropped == 2 * 31 - MAX_DIMENSIONS


# --- fork ---------------------------------------------------------------------------------


class FileSink:
    """A ``send`` whose reports outlive a forked child: one JSON line each, with the pid."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __call__(self, payload: dict[str, Any]) -> None:
        with self.path.open("a") as f:
            f.write(json.dumps({"pid": os.getpid(), "report": payload}) + "\n")

    def reports(self) -> list[tuple[int, Report]]:
        lines = self.path.read_text().splitlines() if self.path.exists() else []
        return [
            (r["pid"], parse_report(raw, time.time()))
            for r in map(json.loads, lines)
            for raw in reports_of(r["report"])
        ]


def test_a_forked_child_reports_as_its_own_process(
    moto_endpoint: str, table: str, tmp_path: Path
) -> None:
    # GIVEN a watched session whose client made 3 writes, its sums not yet sent
    session = boto3.Session(
        aws_access_key_id="test", aws_secret_access_key="test", region_name=REGION
    )  # noqa: S106
    sink = FileSink(tmp_path / "reports.jsonl")
    watcher = watch(session, send=sink, interval=60)
    client = session.client("dynamodb", endpoint_url=moto_endpoint)
    for i in range(3):
        client.put_item(TableName=table, Item=item(f"parent-{i}"))
    parent_id = watcher.process
    # WHEN the process forks, and the child writes twice (on the inherited client and on one of its own)
    pid = os.fork()
    if pid == 0:  # pragma: no cover (the child)
        code = 1
        try:
            assert watcher.sent == 0 and watcher.tracked == 0
            client.put_item(TableName=table, Item=item("child-1"))
            session.client("dynamodb", endpoint_url=moto_endpoint).put_item(
                TableName=table, Item=item("child-2")
            )
            watcher.stop()
            code = 0 if watcher.sent == 1 else 2
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    client.put_item(TableName=table, Item=item("parent-3"))
    watcher.stop()
    # THEN each reports its own writes under its own id
    by_pid = defaultdict(list)
    for sender, report in sink.reports():
        by_pid[sender].append(report)
    assert set(by_pid) == {os.getpid(), pid}
    child_ids = {r.process for r in by_pid[pid]}
    assert {r.process for r in by_pid[os.getpid()]} == {parent_id}
    assert len(child_ids) == 1 and parent_id not in child_ids and f"-{pid}-" in child_ids.pop()

    def writes(reports: list[Report]) -> int:
        return sum(d.requests for r in reports for d in r.dims if d.dimension == "write")

    assert writes(by_pid[pid]) == 2 and writes(by_pid[os.getpid()]) == 4


# --- the default transport: an asynchronous Lambda invocation ----------------------------------


@pytest.mark.parametrize("status", [202, 404])
def test_reports_go_to_the_signals_function_as_asynchronous_invocations(
    moto_endpoint: str, table: str, monkeypatch: pytest.MonkeyPatch, status: int
) -> None:
    fake = FakeLambda(status)
    monkeypatch.setenv("AWS_ENDPOINT_URL_LAMBDA", fake.url)
    monkeypatch.setenv(SIGNALS_ENV, "capacity-signals")
    session = boto3.Session(
        aws_access_key_id="test", aws_secret_access_key="test", region_name=REGION
    )  # noqa: S106
    try:
        with watch(session, interval=60) as watcher:
            session.client("dynamodb", endpoint_url=moto_endpoint).put_item(
                TableName=table, Item=item("a")
            )
    finally:
        fake.close()
    path, headers, body = fake.requests[0]
    assert path == "/2015-03-31/functions/capacity-signals/invocations"
    assert headers["X-Amz-Invocation-Type"] == "Event"
    (raw,) = reports_of(json.loads(body))
    report = parse_report(raw, time.time())
    assert report.table == table and report.process == watcher.process
    assert (watcher.sent, watcher.failed_sends) == ((1, 0) if status == 202 else (0, 1))


# --- the rules, on their own ----------------------------------------------------------------


def test_when_a_report_is_due() -> None:
    key = (None, "write")
    due = report_due
    assert not due(5, 5, {key: 100}, {key: 100}, throttles=False, traffic=True)
    assert not due(5, 5, {key: 119}, {key: 100}, throttles=False, traffic=True)  # < 20 %
    assert due(5, 5, {key: 120}, {key: 100}, throttles=False, traffic=True)
    assert due(5, 5, {key: 80}, {key: 100}, throttles=False, traffic=True)
    assert due(5, 5, {}, {key: 100}, throttles=False, traffic=False)  # dropped to nothing
    assert not due(5, 5, {key: 0.5}, {}, throttles=False, traffic=True)  # under 1 unit/s
    assert due(5, 5, {key: 0}, {}, throttles=True, traffic=True)
    assert due(5, KEEPALIVE_SECONDS, {key: 100}, {key: 100}, throttles=False, traffic=True)
    assert not due(5, KEEPALIVE_SECONDS, {}, {}, throttles=False, traffic=False)


def test_the_ledger_reports_rates_over_its_window() -> None:
    ledger = Ledger(start=1000.0, interval=5)
    for _ in range(50):
        ledger.add(1001.0, "t", None, "write", units=2.0, requests=1)
    # due at once (a new rate), over the window since watching started
    assert ledger.due(1005.0) == ["t"]
    report = ledger.take("t", 1005.0, time.time(), "p")
    assert report is not None and (report.seconds, report.dims[0].units) == (5.0, 100.0)
    # a steady rate: nothing until the keepalive
    ledger.add(1009.0, "t", None, "write", units=100.0, requests=50)
    assert ledger.due(1010.0) == []
    ledger.add(1034.0, "t", None, "write", units=500.0, requests=250)
    assert ledger.due(1035.0) == ["t"]
    report = ledger.take("t", 1035.0, time.time(), "p")
    assert report is not None and report.seconds == 30.0 and report.dims[0].units == 600.0
    # quiet: one report of zero, then forgotten after FRESH_SECONDS
    assert ledger.due(1040.0) == ["t"]
    report = ledger.take("t", 1040.0, time.time(), "p")
    assert report is not None and report.dims[0].units == 0 and report.dims[0].requests == 0
    assert ledger.due(1040.0 + FRESH_SECONDS - 1) == [] and "t" in ledger.tables
    assert ledger.due(1040.0 + FRESH_SECONDS) == [] and "t" not in ledger.tables
    # traffic after a quiet spell: the window starts one interval before it
    ledger.add(2000.0, "t", None, "write", units=50.0, requests=5)
    report = ledger.take("t", 2001.0, time.time(), "p")
    assert report is not None and report.seconds == 6.0
    # a window longer than the contract's: scaled to 60 s at the same rate
    ledger.add(2002.0, "t", None, "write", units=1200.0, requests=120, cause="provisioned")
    report = ledger.take("t", 2121.0, time.time(), "p")
    assert report is not None and report.seconds == 60.0
    assert (report.dims[0].units, report.dims[0].requests) == (600.0, 60)
    assert report.dims[0].throttles == {"provisioned": 1}


def test_the_process_id_fits_the_contract() -> None:
    watcher = watch(offline(), send=Capture(), process="x" * 40)
    watcher.stop()
    assert len(watcher.process) <= MAX_PROCESS_CHARS and f"-{os.getpid()}-" in watcher.process


# --- errors -------------------------------------------------------------------------------


def test_wrong_arguments_are_refused_clearly(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(SIGNALS_ENV, raising=False)
    client = offline()
    s3 = boto3.client("s3", region_name=REGION)
    cases: list[tuple[Callable[[], object], type[Exception], str]] = [
        (lambda: watch(object(), send=print), TypeError, "session_or_client: got object; expected a boto3 Session"),
        (lambda: watch(s3, send=print), ValueError, "session_or_client: got a s3 client"),
        (lambda: watch(client), ValueError, f"function: got None and ${SIGNALS_ENV} is not set"),
        (lambda: watch(client, function="f", send=print), ValueError, "function: got 'f' with send"),
        (lambda: watch(client, send=print, interval=0.5), ValueError, "interval: got 0.5; expected seconds from 1 to 60"),
        (lambda: watch(client, send=print, interval=61), ValueError, "interval: got 61"),
        (lambda: watch(client, send=print, interval=True), ValueError, "interval: got True"),
        (lambda: watch(client, tables="orders", send=print), TypeError, "tables: got 'orders'; expected an iterable"),
        (lambda: watch(client, tables=[""], send=print), ValueError, "tables: got ''"),
        (lambda: watch(client, tables=[], send=print), ValueError, "tables: got []; expected at least one table name (or None"),
        (lambda: watch(client, tables=iter(list[str]()), send=print), ValueError, "tables: got <list_iterator"),
        (lambda: watch(client, send=print, process="x" * 41), ValueError, "process: got 'xxxx"),
        (lambda: watch(client, send="print"), TypeError, "send: got 'print'"),  # type: ignore[arg-type]
        (lambda: watch(client, send=print, account="12"), ValueError, "account: got '12'; expected a 12-digit"),
        (lambda: watch(client, send=print, mode="throttle"), ValueError, "mode: got 'throttle'; expected one of"),
        (lambda: watch(boto3.resource("dynamodb", region_name=REGION), send=print), TypeError, "session_or_client: got dynamodb.ServiceResource"),
    ]  # fmt: skip
    for call, kind, message in cases:
        with pytest.raises(kind) as caught:
            call()
        assert str(caught.value).startswith(message), str(caught.value)
        # like every exception of the library: a CapacityError, the built-in kept
        wanted = WatchTypeError if kind is TypeError else WatchError
        assert type(caught.value) is wanted, f"{message}: {type(caught.value)}"
        assert isinstance(caught.value, CapacityError)


def test_many_threads_at_full_speed_give_exact_totals() -> None:
    # GIVEN one watched client answered at once (no network), its threads switched often
    client = offline(max_pool_connections=16)
    inject(
        client,
        lambda _op, b: (
            200,
            {"ConsumedCapacity": {"TableName": b["TableName"], "CapacityUnits": 0.5}},
        ),
    )
    capture = Capture()
    watcher = watch(client, send=capture, interval=1)
    threads, tables, rounds = 8, 60, 3

    def work() -> None:  # every thread meets each table at about the same time
        for _ in range(rounds):
            for t in range(tables):
                client.get_item(TableName=f"hot-{t:03d}", Key={"pk": {"S": "a"}})

    switch = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        workers = [threading.Thread(target=work) for _ in range(threads)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
    finally:
        sys.setswitchinterval(switch)
    watcher.stop()
    # THEN not one request or unit is lost or counted twice
    totals = capture.totals()
    assert len(totals) == tables
    assert {(v["requests"], v["units"]) for v in totals.values()} == {
        (threads * rounds, threads * rounds * 0.5)
    }


def test_two_watchers_on_one_client_never_count_a_request_twice(
    moto_endpoint: str, table: str
) -> None:
    session = boto3.Session(
        aws_access_key_id="test", aws_secret_access_key="test", region_name=REGION
    )  # noqa: S106
    first, second = Capture(), Capture()
    on_session = watch(session, send=first, interval=1)
    client = session.client("dynamodb", endpoint_url=moto_endpoint)
    on_client = watch(client, send=second, interval=1)
    answers = [client.put_item(TableName=table, Item=item(str(i))) for i in range(3)]
    on_session.stop()
    client.put_item(TableName=table, Item=item("after"))  # the client's own watcher only
    on_client.stop()
    assert all("ConsumedCapacity" not in a for a in answers)
    assert first.totals()[(table, None, "write")]["requests"] == 3
    assert second.totals()[(table, None, "write")]["requests"] == 1


json_values = st.recursive(
    st.none() | st.booleans() | st.floats() | st.integers() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
capacities = st.fixed_dictionaries({"CapacityUnits": st.integers(0, 400).map(lambda n: n / 2)})


@settings(max_examples=examples(200), deadline=None)
@given(
    garbage=st.dictionaries(
        st.sampled_from(
            [
                "TableName",
                "ConsumedCapacity",
                "RequestItems",
                "TransactItems",
                "Error",
                "ThrottlingReasons",
                "throttlingReasons",
                "GlobalSecondaryIndexes",
                "Table",
                "LocalSecondaryIndexes",
                "CapacityUnits",
                "ReadCapacityUnits",
            ]
        ),
        json_values,
    ),
    operation=st.sampled_from(sorted(signals_parse.OPERATIONS)),
)
def test_odd_answers_and_arguments_never_raise(garbage: dict[str, Any], operation: str) -> None:
    signals_parse.request_tables(operation, garbage)
    signals_parse.consumed(garbage, "read")
    signals_parse.throttled({**garbage, "Error": {"Code": PTEE}}, operation, ["t"])


@settings(max_examples=examples(200), deadline=None)
@given(
    gsis=st.dictionaries(st.text(min_size=3, max_size=8), capacities, max_size=5),
    table=st.integers(0, 400).map(lambda n: n / 2),
)
def test_the_table_and_its_gsis_add_up_to_the_answers_total(
    gsis: dict[str, dict[str, float]], table: float
) -> None:
    total = table + sum(g["CapacityUnits"] for g in gsis.values())
    entry = {"TableName": "t", "CapacityUnits": total, "GlobalSecondaryIndexes": gsis}
    units = signals_parse.consumed(entry, "write")
    assert sum(units.values()) == pytest.approx(total)
    assert units[(None, "write")] == pytest.approx(table)
    assert {i for i, _ in units if i is not None} == set(gsis)
    # the same answer without a total: the table's own part, and its LSIs'
    no_total = {
        "Table": {"CapacityUnits": table / 2},
        "LocalSecondaryIndexes": {"l": {"CapacityUnits": table / 2}},
    }
    assert signals_parse.consumed({**no_total, "GlobalSecondaryIndexes": gsis}, "write")[
        (None, "write")
    ] == pytest.approx(table)


# --- where a throttle counts, and what is not counted ------------------------------------------


def test_a_throttle_without_reasons_on_a_gsi_read_counts_on_that_gsi() -> None:
    # GIVEN a table whose Query and Scan are throttled with no reason given, except the
    # first Query of its LSI, answered
    answered: set[str] = set()

    def bodies(_op: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        index = body.get("IndexName")
        if index == "by-l" and index not in answered:
            answered.add(index)
            cc = {"TableName": "t", "CapacityUnits": 1.0, "Table": {"CapacityUnits": 0.0},
                  "LocalSecondaryIndexes": {"by-l": {"CapacityUnits": 1.0}}}  # fmt: skip
            return 200, {"Items": [], "Count": 0, "ScannedCount": 0, "ConsumedCapacity": cc}
        return throttle(PTEE, None)

    client = once()
    inject(client, bodies)
    capture = Capture()
    with watch(client, send=capture, interval=60):
        client.query(TableName="t", IndexName="by-l", KeyConditionExpression="pk = :p",
                     ExpressionAttributeValues={":p": {"S": "a"}})  # fmt: skip
        for kwargs in ({"IndexName": "by-g"}, {"IndexName": "by-l"},
                       {"IndexName": "by-c", "ConsistentRead": True}, {}):  # fmt: skip
            with pytest.raises(ClientError, match=PTEE):
                client.scan(TableName="t", **kwargs)
    # THEN the GSI's read counts its throttle; the LSI's and a consistent read's count on
    # the table (a GSI is never read consistently), as does the table's own
    totals = capture.totals()
    assert totals[("t", "by-g", "read")] == {
        "units": 0.0, "requests": 0, "throttles": {"unknown": 1}, "failed": 1}  # fmt: skip
    assert totals[("t", None, "read")]["throttles"] == {"unknown": 3}
    assert totals[("t", None, "read")]["failed"] == 3
    assert set(totals) == {("t", "by-g", "read"), ("t", None, "read")}


def test_requests_to_another_region_are_neither_counted_nor_changed(
    moto_endpoint: str,
) -> None:
    # GIVEN one watched session, and a client of it in its region and one in another
    session = boto3.Session(
        aws_access_key_id="test", aws_secret_access_key="test", region_name=REGION
    )  # noqa: S106
    capture = Capture()
    watcher = watch(session, send=capture, interval=60)
    here = session.client("dynamodb", endpoint_url=moto_endpoint)
    there = session.client("dynamodb", endpoint_url=moto_endpoint, region_name="eu-west-1")
    bodies: list[bytes] = []
    there.meta.events.register(
        "before-send.dynamodb", lambda request, **_: bodies.append(request.body)
    )
    mine, theirs = make_table(here), make_table(there)
    # WHEN each writes and reads its own region's table
    for client, t in ((here, mine), (there, theirs)):
        client.put_item(TableName=t, Item=item("a"))
        client.get_item(TableName=t, Key={"pk": {"S": "a"}})
    watcher.stop()
    # THEN only the reporting region's table is reported, the other's requests untouched
    assert watcher.region == REGION
    assert {r.table for r in capture.reports} == {mine}
    assert capture.totals()[(mine, None, "write")]["requests"] == 1
    assert bodies and not any(b"ReturnConsumedCapacity" in b for b in bodies)
    assert watcher.errors == 0


def test_a_table_arn_of_another_account_or_region_is_not_counted() -> None:
    # GIVEN a watched client of the reporting account, answering any write
    sent: list[dict[str, Any]] = []

    def bodies(_op: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        sent.append(body)
        name = body["TableName"]
        return 200, {"ConsumedCapacity": {"TableName": name, "CapacityUnits": 1.0}}

    client = once()
    inject(client, bodies)
    capture = Capture()
    other_account = f"arn:aws:dynamodb:{REGION}:999999999999:table/orders"
    other_region = f"arn:aws:dynamodb:eu-west-1:{ACCOUNT}:table/orders"
    with watch(client, send=capture, interval=60, account=ACCOUNT) as watcher:
        for name in (other_account, other_region, index_arn("orders"), "orders"):
            client.put_item(TableName=name, Item=item("a"))
    # THEN the account's own table counts twice (by ARN and by name), the others never,
    # and their requests go as the caller made them
    assert capture.totals() == {
        ("orders", None, "write"): {"units": 2.0, "requests": 2, "throttles": {}, "failed": 0}
    }
    assert [b.get("ReturnConsumedCapacity") for b in sent] == [None, None, "INDEXES", "INDEXES"]
    assert watcher.account == ACCOUNT
    # AND the account defaults to the one the signals function's ARN names
    function = f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:signals"
    by_function = watch(once(), function=function)
    by_function.stop()
    assert by_function.account == ACCOUNT and by_function.region == REGION


def test_requests_on_tables_out_of_scope_are_left_as_made(moto_endpoint: str) -> None:
    client = ddb(moto_endpoint)
    mine, other = make_table(client), make_table(client)
    bodies: list[dict[str, Any]] = []
    client.meta.events.register(
        "before-send.dynamodb", lambda request, **_: bodies.append(json.loads(request.body))
    )
    with watch(client, tables=[mine], send=Capture(), interval=60):
        client.put_item(TableName=other, Item=item("a"))
        client.put_item(TableName=mine, Item=item("a"))
    assert [b.get("ReturnConsumedCapacity") for b in bodies] == [None, "INDEXES"]


@pytest.mark.parametrize(
    ("reasons", "where"),
    [
        (["None", "ThrottlingError"], "t2"),  # one for one: the throttled item's table
        (["ThrottlingError"], "t1"),  # unclear: the request's first table
        (["ConditionalCheckFailed", "None"], None),  # not a throttle
    ],
)
def test_a_transaction_cancelled_for_throttling_counts_as_a_throttle(
    reasons: list[str], where: str | None
) -> None:
    client = once()
    inject(client, lambda _op, _b: cancelled_by(reasons))
    capture = Capture()
    with watch(client, send=capture, interval=60) as watcher:
        with pytest.raises(ClientError, match="TransactionCanceledException"):
            client.transact_write_items(TransactItems=[
                {"Put": {"TableName": "t1", "Item": item("a")}},
                {"Put": {"TableName": "t2", "Item": item("b")}}])  # fmt: skip
    expected = {} if where is None else {
        (where, None, "write"): {"units": 0.0, "requests": 0, "throttles": {"unknown": 1}, "failed": 1}}  # fmt: skip
    assert capture.totals() == expected
    assert watcher.errors == 0


# --- robustness: stopping, threads, logs, forks ------------------------------------------------


class Ticking:
    """A monotonic clock that moves only when told (`advance`)."""

    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def reads(tables: int) -> Any:
    """A client answering GetItem on any table with 1 unit, and read once per table."""
    client = once()
    inject(client, lambda _op, b: (200, {"ConsumedCapacity": {"TableName": b["TableName"], "CapacityUnits": 1.0}}))  # fmt: skip
    return client


def test_stop_is_bounded_when_no_thread_can_start(monkeypatch: pytest.MonkeyPatch) -> None:
    # GIVEN 120 tables to report (3 batches) through a send that takes 0.6 s a batch, by
    # the watcher's clock
    class NoLastThread(threading.Thread):
        def start(self) -> None:
            if self.name == "ddb-capacity-signals-last":
                raise RuntimeError("can't create new thread at interpreter shutdown")
            super().start()

    monkeypatch.setattr(vars(signals_hook)["threading"], "Thread", NoLastThread)
    client = reads(120)
    capture = Capture()
    clock = Ticking()
    started: list[float] = []

    def send(payload: dict[str, Any]) -> None:
        started.append(clock())
        clock.advance(0.6)
        capture(payload)

    watcher = Watcher(
        client.meta.events,
        tables=None,
        send=send,
        interval=60.0,
        label="worker",
        region=client.meta.region_name,
        clock=clock,
    )
    for t in range(120):
        client.get_item(TableName=f"t{t}", Key={"pk": {"S": "a"}})
    # WHEN it stops as at interpreter exit, where no thread starts
    t0 = clock()
    watcher.stop(timeout=1.0)
    # THEN no send is made on the calling thread (its timeouts could hold the exit far
    # past the second): stop takes no time, and every report is counted as not sent
    assert started == [] and capture.batches == []
    assert clock() - t0 == 0
    assert (watcher.sent, watcher.failed_sends) == (0, 120)


def test_at_exit_every_watcher_stops_within_one_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    # GIVEN two watchers whose last reports would each take all the time they are given
    # (a signals function, or a Lambda endpoint, that never answers)
    given: list[float] = []

    class Stuck:
        def stop(self, timeout: float) -> None:
            given.append(timeout)
            time.sleep(timeout)

    monkeypatch.setattr(signals_hook, "_WATCHERS", [Stuck(), Stuck()])
    # WHEN the interpreter exits
    began = time.monotonic()
    signals_hook._stop_at_exit()
    # THEN both stop within one budget of half a second, not one each: the exit is held
    # well under a second
    assert time.monotonic() - began < signals_hook.EXIT_SECONDS + 0.2
    assert given[0] == pytest.approx(signals_hook.EXIT_SECONDS, abs=0.05)
    assert given[1] < 0.1


@pytest.mark.parametrize("in_lambda", [True, False])
def test_reports_a_send_still_holds_when_stop_ends_are_counted_as_not_sent(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    in_lambda: bool,
) -> None:
    # GIVEN 60 tables to report (2 batches) through a send that does not return until told
    # (a slow network, or the search for credentials the first send starts)
    if in_lambda:
        monkeypatch.setenv("AWS_LAMBDA_FUNCTION_NAME", "orders-worker")
    else:
        monkeypatch.delenv("AWS_LAMBDA_FUNCTION_NAME", raising=False)
    client = reads(60)
    capture = Capture()
    release = threading.Event()

    def send(payload: dict[str, Any]) -> None:
        release.wait(10)
        capture(payload)

    watcher = Watcher(
        client.meta.events, tables=None, send=send, interval=60.0, label="worker",
        region=client.meta.region_name,
    )  # fmt: skip
    for t in range(60):
        client.get_item(TableName=f"t{t}", Key={"pk": {"S": "a"}})
    capsys.readouterr()
    # WHEN it stops with 0.3 s to spare, the first batch's send still under way at the end
    watcher.stop(timeout=0.3)
    counted = (watcher.sent, watcher.failed_sends)
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    release.set()
    deadline = time.monotonic() + 10
    while not capture.batches and time.monotonic() < deadline:
        time.sleep(0.01)
    # THEN every report is counted as not sent (the process may end before the send),
    # published in a Lambda function as one HookFailures count; the send that ends
    # afterwards changes no count
    assert counted == (0, 60)
    hook_failures = [r["HookFailures"] for r in records if "HookFailures" in r]
    assert hook_failures == ([60] if in_lambda else [])
    assert capture.batches == [MAX_BATCH_REPORTS]
    assert (watcher.sent, watcher.failed_sends) == (0, 60)


def test_the_sending_thread_starts_no_batch_once_stop_s_time_is_up() -> None:
    # GIVEN 60 tables to report (2 batches) in the sending thread's round, whose first
    # batch's send does not return until told
    client = reads(60)
    capture = Capture()
    entered, release = threading.Event(), threading.Event()

    def send(payload: dict[str, Any]) -> None:
        entered.set()
        release.wait(10)
        capture(payload)

    watcher = Watcher(
        client.meta.events, tables=None, send=send, interval=0.5, label="worker",
        region=client.meta.region_name,
    )  # fmt: skip
    for t in range(60):
        client.get_item(TableName=f"t{t}", Key={"pk": {"S": "a"}})
    assert entered.wait(10)
    # WHEN it stops with 0.1 s to spare, and the send returns afterwards
    watcher.stop(timeout=0.1)
    counted = (watcher.sent, watcher.failed_sends)
    release.set()
    thread = next(t for t in threading.enumerate() if t.name == "ddb-capacity-signals")
    thread.join(10)
    # THEN the thread ended without starting the round's second batch, whose reports stop
    # counted as not sent with the first's; the send under way changed no count
    assert not thread.is_alive()
    assert capture.batches == [MAX_BATCH_REPORTS]
    assert counted[0] == 0 and counted[1] >= 60
    assert (watcher.sent, watcher.failed_sends) == counted


def test_a_thread_that_cannot_start_is_tried_again_and_stop_never_raises(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    refused = [0]

    class OnceRefused(threading.Thread):
        def start(self) -> None:
            if self.name == "ddb-capacity-signals" and not refused[0]:
                refused[0] += 1
                raise RuntimeError("can't start new thread")
            super().start()

    monkeypatch.setattr(vars(signals_hook)["threading"], "Thread", OnceRefused)
    client = reads(2)
    capture = Capture()
    watcher = watch(client, send=capture, interval=60)
    client.get_item(TableName="t0", Key={"pk": {"S": "a"}})  # its thread cannot start
    assert watcher.errors == 1 and refused[0] == 1
    client.get_item(TableName="t1", Key={"pk": {"S": "a"}})  # it starts now
    watcher.stop(timeout=5)
    assert {r.table for r in capture.reports} == {"t0", "t1"} and watcher.errors == 1


def test_the_first_failed_send_and_handler_error_of_each_kind_are_logged(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken_send(_payload: dict[str, Any]) -> None:
        raise PermissionError("not authorized to perform: lambda:InvokeFunction")

    caplog.set_level(logging.WARNING, logger="ddb_capacity_runtime")
    client = reads(3)
    watcher = watch(client, send=broken_send, interval=60)
    for t in range(3):
        client.get_item(TableName=f"t{t}", Key={"pk": {"S": "a"}})
    watcher.flush()

    def broken(*_: object) -> dict[Any, float]:
        raise RuntimeError("a bug in the hook")

    monkeypatch.setattr(signals_hook, "consumed", broken)
    for t in range(2):
        client.get_item(TableName=f"t{t}", Key={"pk": {"S": "a"}})
    watcher.stop()
    logged = [(r.levelno, event_fields(r)) for r in caplog.records]
    assert [(level, (fields or {}).get("event")) for level, fields in logged] == [
        (logging.WARNING, "signals-send-failed"),
        (logging.WARNING, "signals-hook-error"),
    ]
    sent, hook = (fields or {} for _, fields in logged)
    assert sent["error"] == "PermissionError" and "lambda:InvokeFunction" in sent["reason"]
    assert (hook["handler"], hook["error"]) == ("after-call", "RuntimeError")
    # AND every one of them is counted
    assert watcher.failed_sends >= 3 + 3 and watcher.errors == 2


def test_in_a_lambda_function_errors_alone_are_counted_by_the_running_hook(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a hook in a Lambda function whose every answer its handler fails to read (so
    # nothing is ever recorded), never stopped (Lambda seldom runs a process's exit)
    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_NAME", "orders-worker")

    def broken(*_: object) -> dict[Any, float]:
        raise RuntimeError("a bug in the hook")

    monkeypatch.setattr(signals_hook, "consumed", broken)
    client = reads(2)
    watcher = watch(client, send=Capture(), interval=1)
    capsys.readouterr()
    # WHEN the function's calls go on
    for t in range(2):
        client.get_item(TableName=f"t{t}", Key={"pk": {"S": "a"}})
    # THEN the hook's own round counts the errors as a metric within seconds
    counts: list[int] = []
    for _ in range(50):
        time.sleep(0.1)
        lines = capsys.readouterr().out.splitlines()
        counts += [json.loads(line).get("HookFailures", 0) for line in lines]
        if sum(counts) >= 2:
            break
    watcher.stop()
    assert sum(counts) == watcher.errors == 2


def test_after_a_fork_the_sender_makes_its_client_from_a_fresh_session() -> None:
    session = boto3.Session(
        aws_access_key_id="test", aws_secret_access_key="test", region_name=REGION
    )  # noqa: S106
    sender = signals_sender.LambdaSender("signals", session, eager=True)
    sender.after_fork()
    made: list[Any] = []
    fresh = sender.fresh_session

    def counted() -> Any:
        made.append(fresh())
        return made[-1]

    sender.fresh_session = counted  # type: ignore[method-assign]
    client = sender._make()  # noqa: SLF001 (what the child's first send does)
    assert len(made) == 1 and made[0] is not session
    assert made[0].region_name == REGION and client.meta.region_name == REGION
    keys = made[0].get_credentials().get_frozen_credentials()
    assert (keys.access_key, keys.secret_key) == ("test", "test")


def test_the_throttles_mode_leaves_every_request_as_made_and_still_reports_throttles(
    moto_endpoint: str, table: str
) -> None:
    # GIVEN a real client on moto, watched in the mode that changes no request, whose
    # PutItems of key "hot" are always throttled for provisioned throughput
    reason = [{"reason": "TableWriteProvisionedThroughputExceeded", "resource": index_arn(table)}]
    bodies: list[dict[str, Any]] = []

    def answers(_op: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]] | None:
        bodies.append(body)
        hot = body.get("Item", {}).get("pk", {}).get("S") == "hot"
        return throttle(PTEE, reason) if hot else None

    client = ddb(moto_endpoint, retries={"mode": "legacy", "total_max_attempts": 3})
    inject(client, answers)
    capture = Capture()
    watcher = watch(client, send=capture, interval=1, mode="throttles")
    # WHEN it writes, is throttled, and asks for its own capacity once
    client.put_item(TableName=table, Item=item("cold"))
    with pytest.raises(ClientError):
        client.put_item(TableName=table, Item=item("hot"))
    asked = client.put_item(TableName=table, Item=item("told"), ReturnConsumedCapacity="TOTAL")
    watcher.stop()
    # THEN no request the hook saw carries a ReturnConsumedCapacity it added
    assert len(bodies) == 5 and "ConsumedCapacity" in asked
    assert [b.get("ReturnConsumedCapacity") for b in bodies] == [None, None, None, None, "TOTAL"]
    # AND the throttles, the refused request and the answered ones are reported; the
    # capacity only of the request that asked for it
    totals = capture.totals()[(table, None, "write")]
    assert totals["throttles"] == {"provisioned": 3} and totals["failed"] == 1
    assert totals["requests"] == 2 and totals["units"] == 1.0


def test_an_unknown_mode_is_refused_naming_it() -> None:
    with pytest.raises(ValueError, match="mode: got 'quiet'; expected one of"):
        watch(offline(), send=Capture(), mode="quiet")


@pytest.mark.parametrize(
    ("status", "code", "hint"),
    [
        (403, "AccessDeniedException", "grant it lambda:InvokeFunction"),
        (404, "ResourceNotFoundException", "no such function in this account and Region"),
        (429, "TooManyRequestsException", "reserved concurrency"),
    ],
)
def test_a_refused_send_logs_aws_code_and_a_hint_readable_without_a_formatter(
    table: str,
    moto_endpoint: str,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    status: int,
    code: str,
    hint: str,
) -> None:
    # GIVEN a signals function that refuses the invocation as Lambda does
    fake = FakeLambda(status, code)
    monkeypatch.setenv("AWS_ENDPOINT_URL_LAMBDA", fake.url)
    caplog.set_level(logging.WARNING, logger="ddb_capacity_runtime")
    session = boto3.Session(
        aws_access_key_id="test", aws_secret_access_key="test", region_name=REGION
    )  # noqa: S106
    # WHEN a watched process's report is sent
    try:
        with watch(session, function="capacity-signals", interval=60) as watcher:
            session.client("dynamodb", endpoint_url=moto_endpoint).put_item(
                TableName=table, Item=item("a")
            )
    finally:
        fake.close()
    # THEN the one line logged names AWS's code and what usually causes it
    (record,) = [r for r in caplog.records if r.getMessage().startswith("signals-send-failed")]
    assert code in record.getMessage() and hint in record.getMessage()
    fields = event_fields(record) or {}
    assert (fields["code"], watcher.failed_sends) == (code, 1)


def test_the_first_drop_is_logged_with_a_hint(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="ddb_capacity_runtime")
    client = reads(MAX_TABLES + 5)
    watcher = watch(client, send=Capture(), interval=60)
    for t in range(MAX_TABLES + 5):
        client.get_item(TableName=f"t{t}", Key={"pk": {"S": "a"}})
    watcher.stop()
    (record,) = [r for r in caplog.records if r.getMessage().startswith("signals-dropped")]
    assert "pass tables=" in record.getMessage() and watcher.dropped >= 5
