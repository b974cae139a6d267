"""Runs in: settle Lambda.

The one-shot settle step of PROVISION_THEN_SETTLE.

A table created provisioned at its high-water mark is brought down to its operating
capacity with one UpdateTable that carries the table and every GSI together, so it
spends exactly one decrease on each counter it touches.

It is idempotent by construction: a dimension is lowered only while its provisioned
capacity still equals the high-water mark that CloudFormation provisioned. Once it has
been settled, or auto scaling has moved it (up for traffic, or down), it is left alone,
so a retried or repeated event spends no second decrease and never cuts live capacity.

Layers: `plan.plan_settle` is pure; `settle_table` talks to DynamoDB through a
client passed in; `handler` is the thin CloudFormation custom-resource entry point.
"""

from __future__ import annotations

import json
import logging
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from ..aws import tables
from ..aws.clients import dynamodb_client
from ..events import log_event
from .plan import SettleTarget, parse_targets, plan_settle

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


def _is_active(description: Mapping[str, Any]) -> bool:
    return description["TableStatus"] == "ACTIVE" and all(
        gsi.get("IndexStatus", "ACTIVE") == "ACTIVE"
        for gsi in description.get("GlobalSecondaryIndexes", [])
    )


def wait_until_active(
    dynamodb: DynamoDBClient,
    table_name: str,
    *,
    timeout_s: float,
    poll_s: float = 5.0,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> dict[str, Any]:
    """DescribeTable until the table and all its GSIs are ACTIVE; TimeoutError after."""
    deadline = clock() + timeout_s
    while True:
        description = tables.describe(dynamodb, table_name)
        if _is_active(description):
            return description
        if clock() + poll_s > deadline:
            raise TimeoutError(
                f"table {table_name} not ACTIVE after {timeout_s:.0f} s "
                f"(status {description['TableStatus']})"
            )
        sleep(poll_s)


def settle_table(
    dynamodb: DynamoDBClient,
    table_name: str,
    targets: list[SettleTarget],
    *,
    timeout_s: float = 600.0,
) -> dict[str, Any] | None:
    """Settle one table; returns the UpdateTable arguments sent, or None if none was needed."""
    description = wait_until_active(dynamodb, table_name, timeout_s=timeout_s)
    update = plan_settle(description, targets)
    if update is None:
        log_event(
            "settle-skipped",
            table=table_name,
            reason="nothing at its high-water mark, no decrease spent",
        )
        return None
    log_event("settle", table=table_name, update=update)
    tables.update(dynamodb, update)
    return update


def _respond(event: Mapping[str, Any], status: str, reason: str, data: Mapping[str, Any]) -> None:
    body = json.dumps(
        {
            "Status": status,
            "Reason": reason[:3000],
            "PhysicalResourceId": event.get("PhysicalResourceId")
            or f"{event['ResourceProperties']['TableName']}-settle",
            "StackId": event["StackId"],
            "RequestId": event["RequestId"],
            "LogicalResourceId": event["LogicalResourceId"],
            "Data": dict(data),
        }
    ).encode()
    url = event["ResponseURL"]
    if urllib.parse.urlsplit(url).scheme not in ("https", "http"):
        raise ValueError(f"ResponseURL must be an http(s) URL; got {url!r}")
    request = urllib.request.Request(  # noqa: S310 (scheme checked above)
        url,
        data=body,
        method="PUT",
        headers={"Content-Type": "", "Content-Length": str(len(body))},
    )
    with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310 (checked)
        response.read()


def handler(event: Mapping[str, Any], context: Any, dynamodb: DynamoDBClient | None = None) -> None:
    """CloudFormation custom-resource entry point (Create and Update settle; Delete is a no-op)."""
    data: dict[str, Any] = {"Settled": "false"}
    try:
        if event["RequestType"] in ("Create", "Update"):
            if dynamodb is None:
                dynamodb = dynamodb_client()
            props = event["ResourceProperties"]
            remaining_s = context.get_remaining_time_in_millis() / 1000 if context else 600.0
            update = settle_table(
                dynamodb,
                props["TableName"],
                parse_targets(props["Targets"]),
                timeout_s=max(remaining_s - 30, 1),
            )
            data["Settled"] = "true" if update else "false"
        _respond(event, "SUCCESS", "settled", data)
    except Exception as exc:  # every failure must reach CloudFormation, or it waits an hour
        log_event(
            "settle-failed",
            level=logging.ERROR,
            exc_info=True,
            table=event.get("ResourceProperties", {}).get("TableName"),
            request_type=event.get("RequestType"),
            error=f"{type(exc).__name__}: {exc}",
        )
        _respond(event, "FAILED", f"{type(exc).__name__}: {exc}", data)
