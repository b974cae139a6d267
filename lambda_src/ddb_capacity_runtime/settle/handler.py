"""Runs in: settle Lambda.

The one-shot settle step of PROVISION_THEN_SETTLE, as the two handlers of a CloudFormation
custom resource provider (aws-cdk-lib's `custom_resources.Provider`, which answers
CloudFormation and asks `is_complete` again every few seconds until it says done or the
step's time is up).

A table created provisioned at its high-water mark is brought down to its operating
capacity with one UpdateTable that carries the table and every GSI together, so it
spends exactly one decrease on each counter it touches, once the table and all its GSIs
are ACTIVE.

It is idempotent by construction: a dimension is lowered only while its provisioned
capacity still equals the high-water mark that CloudFormation provisioned. Once it has
been settled, or auto scaling has moved it (up for traffic, or down), it is left alone,
so a retried or repeated event spends no second decrease and never cuts live capacity.

Layers: `plan.plan_settle` is pure; `settle_table` talks to DynamoDB through a
client passed in; `on_event` and `is_complete` are the thin entry points (the provider
answers CloudFormation).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from ..aws import table_calls
from ..aws.clients import dynamodb_client
from ..core.errors import SettleError as SettleError
from ..events import log_event
from .settle_plan import SETTLE_WAIT_S, SettleTarget, parse_targets, plan_settle

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


def _is_active(description: Mapping[str, Any]) -> bool:
    return description["TableStatus"] == "ACTIVE" and all(
        gsi.get("IndexStatus", "ACTIVE") == "ACTIVE"
        for gsi in description.get("GlobalSecondaryIndexes", [])
    )


def settle_table(
    dynamodb: DynamoDBClient, description: Mapping[str, Any], targets: list[SettleTarget]
) -> dict[str, Any] | None:
    """Settle one ACTIVE table (``description``, its DescribeTable): the UpdateTable
    arguments sent, or None if none was needed."""
    table_name = description["TableName"]
    update = plan_settle(description, targets)
    if update is None:
        log_event(
            "settle-skipped",
            table=table_name,
            reason="nothing at its high-water mark, no decrease spent",
        )
        return None
    log_event("settle", table=table_name, update=update)
    table_calls.update(dynamodb, update)
    return update


@contextmanager
def _failures(event: Mapping[str, Any]) -> Iterator[None]:
    """Every failure logged (``settle-failed``) and raised as a `SettleError` naming its
    cause, which the provider sends CloudFormation as the reason, failing the deploy."""
    try:
        yield
    except Exception as exc:
        log_event(
            "settle-failed",
            level=logging.ERROR,
            exc_info=True,
            table=event.get("ResourceProperties", {}).get("TableName"),
            request_type=event.get("RequestType"),
            error=f"{type(exc).__name__}: {exc}",
        )
        raise SettleError(f"{type(exc).__name__}: {exc}") from exc


def on_event(
    event: Mapping[str, Any], context: Any, clock: Callable[[], float] = time.time
) -> dict[str, Any]:
    """The provider's first call for each event: Create and Update check the targets and
    note by when the table must be ACTIVE (``Data.SettleBy``, seconds since the epoch);
    Delete does nothing. The waiting and the UpdateTable are `is_complete`'s."""
    with _failures(event):
        props = event["ResourceProperties"]
        physical = event.get("PhysicalResourceId") or f"{props['TableName']}-settle"
        if event["RequestType"] not in ("Create", "Update"):
            return {"PhysicalResourceId": physical}
        parse_targets(props["Targets"])
        settle_by = int(clock() + SETTLE_WAIT_S)
        return {"PhysicalResourceId": physical, "Data": {"SettleBy": str(settle_by)}}


def is_complete(
    event: Mapping[str, Any],
    context: Any,
    dynamodb: DynamoDBClient | None = None,
    clock: Callable[[], float] = time.time,
) -> dict[str, Any]:
    """The provider's call every few seconds until done: settles the table once it and its
    GSIs are ACTIVE (``Data.Settled`` says whether an UpdateTable was sent); a table not
    ACTIVE by ``SettleBy`` fails the step. Delete is done at once."""
    with _failures(event):
        if event["RequestType"] not in ("Create", "Update"):
            return {"IsComplete": True}
        props = event["ResourceProperties"]
        name = props["TableName"]
        targets = parse_targets(props["Targets"])
        dynamodb = dynamodb or dynamodb_client()
        description = table_calls.describe(dynamodb, name)
        if not _is_active(description):
            status = description["TableStatus"]
            if clock() > int(event["Data"]["SettleBy"]):
                raise TimeoutError(
                    f"table {name} not ACTIVE after {SETTLE_WAIT_S:.0f} s (status {status})"
                )
            log_event("settle-waiting", table=name, status=status)
            return {"IsComplete": False}
        update = settle_table(dynamodb, description, targets)
        return {"IsComplete": True, "Data": {"Settled": "true" if update else "false"}}
