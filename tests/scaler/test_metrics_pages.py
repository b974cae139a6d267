"""GetMetricData answers that CloudWatch-compatible servers never give, through botocore's
Stubber: statuses that differ from page to page, a timestamp returned twice, Timestamps and
Values of different lengths. None of them may read as known data."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from ddb_capacity_runtime.aws.metrics import (
    HISTORY_QUERIES_PER_CALL,
    MAX_QUERIES_PER_CALL,
    _query,
    fetch,
    fetch_history,
    queries,
)
from ddb_capacity_runtime.core.series import MINUTE, Key

START = datetime(2024, 1, 1, 12, 0, tzinfo=UTC)
MINUTES = 5
END = START + MINUTES * MINUTE
STARTS = [START + i * MINUTE for i in range(MINUTES)]
KEY: Key = ("t", None, "read")
FIFTY = 50.0 * 60  # the Sum of a minute at 50 units a second


def client() -> tuple[Any, Stubber]:
    cw = boto3.client(
        "cloudwatch",
        region_name="us-east-1",
        aws_access_key_id="x",
        aws_secret_access_key="x",  # noqa: S106
    )
    return cw, Stubber(cw)


def result(
    qid: str,
    minutes: list[datetime],
    values: list[float] | None = None,
    status: str | None = "Complete",
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "Id": qid,
        "Label": qid,
        "Timestamps": minutes,
        "Values": [FIFTY] * len(minutes) if values is None else values,
    }
    if status is not None:
        out["StatusCode"] = status
    return out


def expect(
    stub: Stubber,
    planned: list[dict[str, Any]],
    pages: list[list[dict[str, Any]]],
    start: datetime = START,
    end: datetime = END,
) -> None:
    """Queue ``pages`` as the answers to one batch of ``planned`` queries, chained by
    NextToken."""
    for n, results in enumerate(pages):
        params: dict[str, Any] = {
            "MetricDataQueries": planned,
            "StartTime": start,
            "EndTime": end,
            "ScanBy": "TimestampAscending",
        }
        if n:
            params["NextToken"] = f"page{n}"
        response: dict[str, Any] = {"MetricDataResults": results}
        if n + 1 < len(pages):
            response["NextToken"] = f"page{n + 1}"
        stub.add_response("get_metric_data", response, params)


def fetch_pages(pages: list[list[dict[str, Any]]], keys: list[Key] | None = None) -> Any:
    keys = [KEY] if keys is None else keys
    cw, stub = client()
    expect(stub, [q for *_, q in queries(keys)], pages)
    with stub:
        out = fetch(cw, keys, START, END)
    stub.assert_no_pending_responses()
    return out


# ------------------------------------------------------------------ fetch: one minute each


def test_a_timestamp_returned_twice_in_one_page_is_unknown_not_doubled() -> None:
    minutes = [STARTS[0], STARTS[1], STARTS[1], *STARTS[2:]]
    (series,) = fetch_pages([[result("c0", minutes), result("t0", [])]]).values()
    assert series.unknown == [False, True, False, False, False]
    assert series.consumed == [50.0, 0.0, 50.0, 50.0, 50.0]


def test_a_timestamp_returned_on_two_pages_is_unknown_not_doubled() -> None:
    pages = [
        [result("c0", STARTS[:2], status="PartialData"), result("t0", [], status="PartialData")],
        [result("c0", STARTS[1:]), result("t0", [])],
    ]
    (series,) = fetch_pages(pages).values()
    assert series.unknown == [False, True, False, False, False]
    assert series.consumed == [50.0, 0.0, 50.0, 50.0, 50.0]


def test_a_throttle_timestamp_returned_twice_is_unknown_not_doubled() -> None:
    throttled = [STARTS[3], STARTS[3]]
    (series,) = fetch_pages(
        [[result("c0", STARTS), result("t0", throttled, values=[7.0, 7.0])]]
    ).values()
    assert series.unknown == [False, False, False, True, False]
    assert series.throttles == [0.0] * MINUTES


@pytest.mark.parametrize("status", ["InternalError", "Forbidden", None])
def test_a_page_not_complete_makes_the_key_unknown_whichever_page_comes_last(
    status: str | None,
) -> None:
    for first, second in ((status, "Complete"), ("Complete", status)):
        pages = [
            [result("c0", STARTS[:2], status=first), result("t0", [], status="PartialData")],
            [result("c0", STARTS[2:], status=second), result("t0", [])],
        ]
        (series,) = fetch_pages(pages).values()
        assert series.unknown == [True] * MINUTES, (first, second)
        assert series.consumed == [0.0] * MINUTES


def test_partial_data_pages_with_a_complete_page_are_trusted_in_either_order() -> None:
    for first, second in (("PartialData", "Complete"), ("Complete", "PartialData")):
        pages = [
            [result("c0", STARTS[:2], status=first), result("t0", [], status=first)],
            [result("c0", STARTS[2:], status=second), result("t0", [], status=second)],
        ]
        (series,) = fetch_pages(pages).values()
        assert series.unknown == [False] * MINUTES, (first, second)
        assert series.consumed == [50.0] * MINUTES


def test_timestamps_and_values_of_different_lengths_make_the_key_unknown() -> None:
    other: Key = ("u", None, "read")
    pages = [
        [
            result("c0", STARTS, values=[FIFTY] * (MINUTES - 1)),
            result("t0", []),
            result("c1", STARTS),
            result("t1", []),
        ]
    ]
    out = fetch_pages(pages, [KEY, other])
    assert out[KEY].unknown == [True] * MINUTES
    assert out[KEY].consumed == [0.0] * MINUTES
    assert out[other].unknown == [False] * MINUTES  # the other key of the batch is known
    assert out[other].consumed == [50.0] * MINUTES


def test_a_result_of_another_batchs_query_is_ignored() -> None:
    # GIVEN two batches, and the first batch's answer carries a datapoint of a query of the
    # second batch (c250), which the second batch's answer also carries
    keys: list[Key] = [(f"t{i}", None, "read") for i in range(MAX_QUERIES_PER_CALL // 2 + 1)]
    planned = [q for *_, q in queries(keys)]
    cw, stub = client()
    first = [result(str(q["Id"]), []) for q in planned[:MAX_QUERIES_PER_CALL]]
    first[0] = result("c0", STARTS)
    expect(stub, planned[:MAX_QUERIES_PER_CALL], [[*first, result("c250", STARTS)]])
    expect(stub, planned[MAX_QUERIES_PER_CALL:], [[result("c250", STARTS), result("t250", [])]])
    with stub:
        out = fetch(cw, keys, START, END)
    stub.assert_no_pending_responses()
    # THEN the last key reads what its own batch said, not twice as much
    assert out[keys[-1]].unknown == [False] * MINUTES
    assert out[keys[-1]].consumed == [50.0] * MINUTES


# ------------------------------------------------------------------ fetch_history


def test_history_steps_of_a_duplicate_or_an_untrusted_query_are_none() -> None:
    # GIVEN one day of 5-minute steps of three keys: h0 has its second step twice, h1 has a
    # page with InternalError and one Complete, h2 is sound
    step = timedelta(minutes=5)
    end = datetime(2024, 1, 2, 0, 0, tzinfo=UTC)
    start = end - timedelta(days=1)
    steps = 288
    keys: list[Key] = [(f"t{i}", None, "read") for i in range(3)]
    planned = [_query(f"h{i}", key, "ConsumedReadCapacityUnits", 300) for i, key in enumerate(keys)]
    assert len(planned) <= HISTORY_QUERIES_PER_CALL
    each = [start + n * step for n in range(steps)]
    sums = [300 * 50.0] * steps  # 50 units a second
    pages = [
        [
            result("h0", each[:2], values=sums[:2], status="PartialData"),
            result("h1", each[:2], values=sums[:2], status="InternalError"),
            result("h2", each[:2], values=sums[:2], status="PartialData"),
        ],
        [
            result("h0", each[1:], values=sums[1:]),
            result("h1", each[2:], values=sums[2:]),
            result("h2", each[2:], values=sums[2:]),
        ],
    ]
    cw, stub = client()
    expect(stub, planned, pages, start, end)
    with stub:
        out = fetch_history(cw, keys, end, 1, 5)
    stub.assert_no_pending_responses()
    assert out[keys[0]] == [50.0, None, *[50.0] * (steps - 2)]
    assert out[keys[1]] == [None] * steps
    assert out[keys[2]] == [50.0] * steps
