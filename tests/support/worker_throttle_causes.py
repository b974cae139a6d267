"""The background workers' throttled pages, batches and back-offs, with a clock the
tests move."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from ddb_capacity_runtime.events import event_fields
from ddb_capacity_runtime.workers.writer import SlowStartWriter, WriteResult

ARN = "arn:aws:dynamodb:us-east-1:123456789012:table/t"


#: The field botocore parses the reasons into, per error code.
FIELD = {
    "ProvisionedThroughputExceededException": "ThrottlingReasons",
    "RequestLimitExceeded": "ThrottlingReasons",
    "ThrottlingException": "throttlingReasons",
}


def reasons(*names: str) -> list[dict[str, str]]:
    return [{"reason": name, "resource": ARN} for name in names]


def stubbed() -> tuple[Any, Stubber]:
    client = boto3.client(
        "dynamodb", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x"
    )
    return client, Stubber(client)


def add_throttle(
    stub: Stubber,
    operation: str,
    names: list[str] | None,
    code: str = "ProvisionedThroughputExceededException",
    **kw: Any,
) -> None:
    """A throttle whose reasons botocore validates against its model and parses onto the
    exception (``names`` None: no reasons, as moto, DynamoDB Local and older answers)."""
    fields = {FIELD[code]: reasons(*names)} if names is not None else None
    stub.add_client_error(operation, code, "throttled", modeled_fields=fields, **kw)


def events(caplog: pytest.LogCaptureFixture, name: str) -> list[dict[str, Any]]:
    return [f for r in caplog.records if (f := event_fields(r)) is not None and f["event"] == name]


def page(keys: list[str], units: float, last: str | None = None) -> dict[str, Any]:
    response: dict[str, Any] = {
        "Items": [{"pk": {"S": k}} for k in keys],
        "ConsumedCapacity": {"TableName": "tbl", "CapacityUnits": units},
    }
    if last:
        response["LastEvaluatedKey"] = {"pk": {"S": last}}
    return response


class FakeClock:
    def __init__(self, step: float = 0.0) -> None:
        self.now = 0.0
        self.step = step  # each sleep lasts this long, if not 0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += self.step or seconds


def batch(keys: list[str]) -> dict[str, Any]:
    return {"tbl": [{"PutRequest": {"Item": {"pk": {"S": k}}}} for k in keys]}


def expected(keys: list[str]) -> dict[str, Any]:
    return {"RequestItems": batch(keys), "ReturnConsumedCapacity": "TOTAL"}


def ok(n: float) -> dict[str, Any]:
    return {"UnprocessedItems": {}, "ConsumedCapacity": [{"TableName": "tbl", "CapacityUnits": n}]}


class Recorded(logging.Handler):
    """The fields of every ``write-throttled`` event."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.events: list[dict[str, Any]] = []

    def emit(self, record: logging.LogRecord) -> None:
        fields = event_fields(record)
        if fields is not None and fields["event"] == "write-throttled":
            self.events.append(fields)


def write(
    stub_calls: Callable[[Stubber], None],
    keys: list[str],
    *,
    clock: FakeClock | None = None,
    rate: float = 40.0,
    **kw: Any,
) -> tuple[WriteResult, SlowStartWriter, list[dict[str, Any]]]:
    """Write ``keys`` (the writer grown to ``rate``) against a Stubber filled by
    ``stub_calls(stub)``; the result, the writer and its throttle events."""
    client, stub = stubbed()
    stub_calls(stub)
    clock = clock or FakeClock()
    logger = logging.getLogger("ddb_capacity_runtime")
    recorded, level = Recorded(), logger.level
    logger.addHandler(recorded)
    logger.setLevel(logging.INFO)
    try:
        with stub:
            writer = SlowStartWriter(
                client, "tbl", start_rate=10, max_rate=100, clock=clock, sleep=clock.sleep, **kw
            )
            writer.bucket.set_rate(rate)
            result = writer.write({"pk": k} for k in keys)
    finally:
        logger.removeHandler(recorded)
        logger.setLevel(level)
    stub.assert_no_pending_responses()
    return result, writer, recorded.events


def backoffs(events: list[dict[str, Any]]) -> list[float]:
    return [e["retry_in_seconds"] for e in events]
