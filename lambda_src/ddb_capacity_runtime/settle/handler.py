"""Runs in: settle Lambda.

The one-shot settle step of PROVISION_THEN_SETTLE, as the two handlers of a CloudFormation
custom resource provider (aws-cdk-lib's `custom_resources.Provider`, which answers
CloudFormation and asks `is_complete` again every few seconds until it says done or the
step's time is up).

A table created provisioned at its high-water mark is brought down to its operating
capacity with one UpdateTable that carries the table and every GSI together, so it
spends exactly one decrease on each counter it touches, once the table and all its GSIs
are ACTIVE.

It is idempotent by construction: a dimension is lowered only where CloudFormation
provably provisioned it at its high-water mark in this deploy (a table created, a mark
changed: `settle_plan.to_settle`), and only while its provisioned capacity
still equals that mark. Once it has been settled, or auto scaling has moved it (up for
traffic, or down), it is left alone; a table at its mark that this deploy did not provision
(auto scaling or a schedule holds it there at a peak, and an Update changes some other
property) is never cut. A retried or repeated event spends no second decrease.

An Update's table is live: an auto-scaled dimension whose mark changed is lowered no
further than what its traffic of the last minutes needs at its target utilization, nor below
its scalable target's MinCapacity now (a capacity request's hold or a scheduled action may
have raised it: `minimums.live_minimums`), and not at all where either is unknown
(`traffic.traffic_needs`; ``settle-left``), for auto scaling to lower. A new table (a
Create) has no traffic, and settles to its operating capacity.

Layers: `plan.plan_settle` is pure; `settle_table` talks to DynamoDB through a
client passed in; `on_event` and `is_complete` are the thin entry points (the provider
answers CloudFormation).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from ..aws import table_calls
from ..aws.clients import dynamodb_client, settle_autoscaling_client, settle_cloudwatch_client
from ..aws.error_codes import error_code
from ..core.errors import SettleError as SettleError
from ..core.errors import shown, shown_text, with_notes
from ..core.names import is_table_name
from ..core.validators import whole_text
from ..events import log_event
from .minimums import live_minimums
from .settle_plan import (
    PERMISSION_WAIT_S,
    PROVISIONED_WITHIN_S,
    SETTLE_WAIT_S,
    SettleTarget,
    at_mark,
    parse_targets,
    plan_settle,
    to_settle,
)
from .traffic import Needs, traffic_needs

if TYPE_CHECKING:
    from mypy_boto3_application_autoscaling import ApplicationAutoScalingClient
    from mypy_boto3_cloudwatch import CloudWatchClient
    from mypy_boto3_dynamodb import DynamoDBClient


def _is_active(description: Mapping[str, Any]) -> bool:
    return description["TableStatus"] == "ACTIVE" and all(
        gsi.get("IndexStatus", "ACTIVE") == "ACTIVE"
        for gsi in description.get("GlobalSecondaryIndexes", [])
    )


def settle_table(
    dynamodb: DynamoDBClient,
    description: Mapping[str, Any],
    targets: list[SettleTarget],
    needs: Needs | None = None,
) -> dict[str, Any] | None:
    """Settle one ACTIVE table (``description``, its DescribeTable) on ``targets``, the
    dimensions this deploy provisioned at their mark (`to_settle`), each no lower than
    its floor in ``needs`` (what a live table's traffic needs, or its minimum now where
    that is higher: `Needs.lowest`): the UpdateTable arguments sent, or None if none was
    needed."""
    table_name = description["TableName"]
    needs = needs or Needs()
    lowest = needs.lowest
    update = plan_settle(description, targets, lowest)
    if update is None:
        log_event(
            "settle-skipped",
            table=table_name,
            reason="nothing this deploy provisioned is at its high-water mark above what it "
            "needs, no decrease spent",
        )
        return None
    fields: dict[str, Any] = {"update": update}
    if lowest:  # a live table: what its traffic needs, and its minimum now
        fields["traffic"] = [
            {
                "index": i,
                "dimension": d,
                "peak": round(needs.peaks[(i, d)], 1),
                "need": needs.floors[(i, d)],
                "min_capacity": needs.minimums.get((i, d)),
            }
            for i, d in lowest
        ]
    log_event("settle", table=table_name, **fields)
    table_calls.update(dynamodb, update)
    return update


@contextmanager
def _failures(event: Mapping[str, Any]) -> Iterator[None]:
    """Every failure logged (``settle-failed``) and raised as a `SettleError` naming its
    cause, which the provider sends CloudFormation as the reason, failing the deploy."""
    try:
        yield
    except Exception as exc:
        props = event.get("ResourceProperties")
        name = props.get("TableName") if isinstance(props, Mapping) else None
        log_event(
            "settle-failed",
            level=logging.ERROR,
            exc_info=True,
            table=shown_text(name) if isinstance(name, str) else None,
            request_type=shown(event.get("RequestType")),
            error=f"{type(exc).__name__}: {exc}",
        )
        raise SettleError(with_notes(exc)) from exc


def _properties(event: Mapping[str, Any], key: str = "ResourceProperties") -> Mapping[str, Any]:
    """The event's properties (untrusted: an object with a table's name)."""
    props = event.get(key)
    if not isinstance(props, Mapping) or not is_table_name(props.get("TableName")):
        raise ValueError(f"{key} must be an object with a table's TableName; got {props!r:.200}")
    return props


def _previous(
    event: Mapping[str, Any], name: str, targets: list[SettleTarget]
) -> list[SettleTarget] | None:
    """An Update's last targets when it is of the same table (None: a Create, or a new
    table, which `to_settle` judges by the table's dates). Old properties that cannot be
    read are logged and taken as the new ``targets``: nothing is taken for newly
    provisioned."""
    if event["RequestType"] != "Update":
        return None
    try:
        old = _properties(event, "OldResourceProperties")
        if old["TableName"] != name:
            return None
        return parse_targets(old["Targets"])
    except (KeyError, ValueError) as exc:
        log_event("settle-old-properties-unread", level=logging.WARNING, table=name, error=str(exc))
        return targets


def on_event(
    event: Mapping[str, Any], context: Any, clock: Callable[[], float] = time.time
) -> dict[str, Any]:
    """The provider's first call for each event: Create and Update check the targets and
    note by when the table must be ACTIVE (``Data.SettleBy``, seconds since the epoch);
    Delete does nothing. The waiting and the UpdateTable are `is_complete`'s."""
    with _failures(event):
        if event.get("RequestType") not in ("Create", "Update", "Delete"):
            got = shown(event.get("RequestType"))
            raise ValueError(f"RequestType must be Create, Update or Delete; got {got}")
        if event["RequestType"] == "Delete":
            return {"PhysicalResourceId": event.get("PhysicalResourceId")}
        props = _properties(event)
        physical = event.get("PhysicalResourceId") or f"{props['TableName']}-settle"
        parse_targets(props.get("Targets"))
        settle_by = int(clock() + SETTLE_WAIT_S)
        return {"PhysicalResourceId": physical, "Data": {"SettleBy": str(settle_by)}}


def is_complete(
    event: Mapping[str, Any],
    context: Any,
    dynamodb: DynamoDBClient | None = None,
    clock: Callable[[], float] = time.time,
    cloudwatch: CloudWatchClient | None = None,
    autoscaling: ApplicationAutoScalingClient | None = None,
) -> dict[str, Any]:
    """The provider's call every few seconds until done: settles the table once it and its
    GSIs are ACTIVE (``Data.Settled`` says whether an UpdateTable was sent); a table not
    ACTIVE by ``SettleBy`` fails the step. Delete is done at once."""
    with _failures(event):
        if event.get("RequestType") not in ("Create", "Update"):
            return {"IsComplete": True}
        props = _properties(event)
        name = props["TableName"]
        targets = parse_targets(props.get("Targets"))
        settle_by = _settle_by(event, name, clock())
        try:
            settled = _settle_when_active(
                event, name, targets, settle_by, (dynamodb, cloudwatch, autoscaling), clock
            )
        except ClientError as exc:
            status = _waited_out(exc, clock() - (settle_by - SETTLE_WAIT_S))
        else:
            if isinstance(settled, bool):
                return {"IsComplete": True, "Data": {"Settled": "true" if settled else "false"}}
            status = settled
        if clock() > settle_by:
            raise TimeoutError(
                f"table {name} not ACTIVE after {SETTLE_WAIT_S:.0f} s (status {status})"
            )
        log_event("settle-waiting", table=name, status=status)
        return {"IsComplete": False}


SETTLE_BY_SKEW_S = 300
"""How far ``Data.SettleBy`` may lie outside the step's own window: a call after it fails the
step (`is_complete`'s TimeoutError), so a legitimate one comes at most a poll interval and its
latency past it; a second function's clock may differ from the first's by a little."""


def _settle_by(event: Mapping[str, Any], name: str, now: float) -> int:
    """``Data.SettleBy`` as `on_event` returned it (the provider passes it on): whole
    seconds since the epoch, at most `SETTLE_WAIT_S` (and `SETTLE_BY_SKEW_S`) after ``now``
    and at most `SETTLE_BY_SKEW_S` before it; a `ValueError` naming the table ``name`` and
    the field otherwise (an older one would date the step, and what it may settle, before
    this deploy)."""
    data = event.get("Data")
    value = data.get("SettleBy") if isinstance(data, Mapping) else None
    low, high = now - SETTLE_BY_SKEW_S, now + SETTLE_WAIT_S + SETTLE_BY_SKEW_S
    settle_by = whole_text(value, low, high, digits=12)
    if settle_by is None:
        raise ValueError(
            f"table {name}: Data.SettleBy: got {shown(value)}; expected the whole seconds "
            f"since the epoch that the step's first call returned, from {low:.0f} to "
            f"{high:.0f} at {now:.0f}"
        )
    return settle_by


def _settle_when_active(
    event: Mapping[str, Any],
    name: str,
    targets: list[SettleTarget],
    settle_by: int,
    clients: tuple[
        DynamoDBClient | None, CloudWatchClient | None, ApplicationAutoScalingClient | None
    ],
    clock: Callable[[], float],
) -> bool | str:
    """Whether the table was settled (an UpdateTable sent) once it and its GSIs are ACTIVE;
    its status while they are not. On an Update of the same table (a live one), the
    traffic and the minimums now of the dimensions to lower are read first
    (`_live_needs`)."""
    dynamodb = clients[0] or dynamodb_client()
    description = table_calls.describe(dynamodb, name)
    if not _is_active(description):
        return str(description["TableStatus"])
    since = settle_by - SETTLE_WAIT_S - PROVISIONED_WITHIN_S
    previous = _previous(event, name, targets)
    chosen = to_settle(description, targets, previous, since)
    needs = None
    if previous is not None:  # an Update of the same table: it is live
        cloudwatch, autoscaling = clients[1], clients[2]
        needs = _live_needs(
            (
                lambda: cloudwatch or settle_cloudwatch_client(),
                lambda: autoscaling or settle_autoscaling_client(),
            ),
            name,
            at_mark(description, chosen),
            clock(),
        )
        chosen = [t for t in chosen if t.key not in needs.left]
    return settle_table(dynamodb, description, chosen, needs) is not None


def _live_needs(
    clients: tuple[Callable[[], CloudWatchClient], Callable[[], ApplicationAutoScalingClient]],
    name: str,
    targets: list[SettleTarget],
    now: float,
) -> Needs:
    """What the traffic of the live table ``name`` needs of the ``targets`` to lower
    (`traffic.traffic_needs`), then the minimums now of those whose need is known
    (`minimums.live_minimums`, made by the second of ``clients``); each dimension left at
    its mark for want of either is logged (``settle-left``): auto scaling lowers it later,
    and the deploy goes on."""
    needs = traffic_needs(clients[0], name, targets, datetime.fromtimestamp(now, UTC))
    minimums = live_minimums(clients[1], name, [t for t in targets if t.key not in needs.left])
    needs.minimums.update(minimums.held)
    needs.left.update(minimums.left)
    for t in targets:
        if t.key in needs.left:
            log_event(
                "settle-left",
                level=logging.WARNING,
                table=name,
                index=t.index,
                dimension=t.dimension,
                high_water_mark=t.high_water_mark,
                reason=needs.left[t.key],
                consequence="left at its high-water mark, for auto scaling to lower",
            )
    return needs


def _waited_out(exc: ClientError, elapsed: float) -> str:
    """The status to wait on for an error the next call may not meet: an UpdateTable already
    in flight, or a denial within `PERMISSION_WAIT_S` of the step's first call; any other
    error is raised."""
    code = error_code(exc)
    if code == "ResourceInUseException":
        return "ResourceInUseException (another update of the table)"
    if code == "AccessDeniedException" and elapsed < PERMISSION_WAIT_S:
        return "AccessDeniedException (the step's permission possibly not yet in force)"
    if code == "AccessDeniedException":
        exc.add_note(
            f"still denied {elapsed:.0f} s after the step began: the settle function's role "
            "needs dynamodb:DescribeTable and dynamodb:UpdateTable on the table (the "
            "table's SettleGrant policy); a service control policy or permissions boundary "
            "may deny them"
        )
    raise exc
