"""The one-shot settle step of PROVISION_THEN_SETTLE.

A table created provisioned at its high-water mark is brought down to its operating
capacity with one UpdateTable that carries the table and every GSI together, so it
spends exactly one decrease on each counter it touches.

It is idempotent by construction: a dimension is lowered only while its provisioned
capacity still equals the high-water mark that CloudFormation provisioned. Once it has
been settled, or auto scaling has moved it (up for traffic, or down), it is left alone,
so a retried or repeated event spends no second decrease and never cuts live capacity.

Layers: :func:`plan_settle` is pure; :func:`settle_table` talks to DynamoDB through a
client passed in; :func:`handler` is the thin CloudFormation custom-resource entry point.
"""

from __future__ import annotations

import json
import logging
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .discovery import UNITS, throughput_of

LOG = logging.getLogger(__name__)
LOG.setLevel(logging.INFO)

READ, WRITE = "read", "write"


@dataclass(frozen=True)
class SettleTarget:
    """One dimension to settle: ``index`` is None for the base table."""

    index: str | None
    dimension: str
    high_water_mark: int
    operating: int


def parse_targets(raw: Any) -> list[SettleTarget]:
    """Read the targets from custom-resource properties (CloudFormation sends strings)."""
    if not isinstance(raw, list):
        raise ValueError(f"Targets must be a list; got {type(raw).__name__}")
    targets = []
    for i, item in enumerate(raw):
        dimension = item.get("Dimension")
        if dimension not in UNITS:
            raise ValueError(f"Targets[{i}].Dimension must be read or write; got {dimension!r}")
        targets.append(
            SettleTarget(
                index=item.get("Index") or None,
                dimension=dimension,
                high_water_mark=int(item["HighWaterMark"]),
                operating=int(item["Operating"]),
            )
        )
    return targets


def plan_settle(
    description: Mapping[str, Any], targets: list[SettleTarget]
) -> dict[str, Any] | None:
    """The UpdateTable arguments that settle ``targets``, or None when nothing is left.

    ``description`` is DescribeTable's ``Table``. Only dimensions still at their
    high-water mark, and whose mark is above the operating capacity, are lowered; every
    other dimension of a touched table or GSI is sent unchanged (UpdateTable needs both).
    """
    wanted: dict[str | None, dict[str, int]] = {}
    for t in targets:
        current = int(throughput_of(description, t.index)[UNITS[t.dimension]])
        if t.high_water_mark > t.operating and current == t.high_water_mark:
            wanted.setdefault(t.index, {})[t.dimension] = t.operating
    if not wanted:
        return None

    def throughput(index: str | None) -> dict[str, int]:
        now = throughput_of(description, index)
        return {
            UNITS[d]: int(wanted[index].get(d, now[UNITS[d]])) for d in (READ, WRITE)
        }

    update: dict[str, Any] = {"TableName": description["TableName"]}
    if None in wanted:
        update["ProvisionedThroughput"] = throughput(None)
    gsi_updates = [
        {"Update": {"IndexName": name, "ProvisionedThroughput": throughput(name)}}
        for name in sorted(n for n in wanted if n is not None)
    ]
    if gsi_updates:
        update["GlobalSecondaryIndexUpdates"] = gsi_updates
    return update


def _is_active(description: Mapping[str, Any]) -> bool:
    return description["TableStatus"] == "ACTIVE" and all(
        gsi.get("IndexStatus", "ACTIVE") == "ACTIVE"
        for gsi in description.get("GlobalSecondaryIndexes", [])
    )


def wait_until_active(
    dynamodb: Any,
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
        description: dict[str, Any] = dynamodb.describe_table(TableName=table_name)["Table"]
        if _is_active(description):
            return description
        if clock() + poll_s > deadline:
            raise TimeoutError(
                f"table {table_name} not ACTIVE after {timeout_s:.0f} s "
                f"(status {description['TableStatus']})"
            )
        sleep(poll_s)


def settle_table(
    dynamodb: Any, table_name: str, targets: list[SettleTarget], *, timeout_s: float = 600.0
) -> dict[str, Any] | None:
    """Settle one table; returns the UpdateTable arguments sent, or None if none was needed."""
    description = wait_until_active(dynamodb, table_name, timeout_s=timeout_s)
    update = plan_settle(description, targets)
    if update is None:
        LOG.info("table %s: nothing at its high-water mark, no decrease spent", table_name)
        return None
    LOG.info("table %s: settling with %s", table_name, json.dumps(update))
    dynamodb.update_table(**update)
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


def handler(event: Mapping[str, Any], context: Any, dynamodb: Any = None) -> None:
    """CloudFormation custom-resource entry point (Create and Update settle; Delete is a no-op)."""
    data: dict[str, Any] = {"Settled": "false"}
    try:
        if event["RequestType"] in ("Create", "Update"):
            if dynamodb is None:
                import boto3

                dynamodb = boto3.client("dynamodb")
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
        LOG.exception("settle failed")
        _respond(event, "FAILED", f"{type(exc).__name__}: {exc}", data)
