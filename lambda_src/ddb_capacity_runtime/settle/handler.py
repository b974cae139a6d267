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
Create) has no traffic, and settles to its operating capacity. A step whose properties name
the hold store of the ``CapacityRequests`` serving the table (``HoldStore``) lowers no
dimension below its active holds where no minimum says them (a fixed capacity, and every
dimension of a Create: `live_holds.held_levels`), and none whose holds are unknown (a
read of them that meets an error that may pass, a throttle or a denial while IAM applies the
step's grant, is tried again at the next call for `PERMISSION_WAIT_S` first). Every
dimension left at its mark is logged (``settle-left``: auto scaling lowers an auto-scaled
one; a fixed one stays there until someone lowers it) and counted once (`SETTLE_LEFT`),
which the step's alarm watches.

Layers: `plan.plan_settle` is pure; `settle_table` talks to DynamoDB through a
client passed in; `on_event` and `is_complete` are the thin entry points (the provider
answers CloudFormation).
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from ..aws import table_calls
from ..aws.clients import (
    dynamodb_client,
    settle_autoscaling_client,
    settle_cloudwatch_client,
    settle_store_client,
)
from ..aws.error_codes import error_code
from ..core.errors import HoldsUnread, shown, shown_text, with_notes
from ..core.errors import SettleError as SettleError
from ..core.names import METRICS_NAMESPACE, is_table_name
from ..core.validators import whole_text
from ..events import LAMBDA_ENV, count_in_lambda, log_event
from .live_holds import held_levels
from .minimums import live_minimums
from .settle_plan import (
    PERMISSION_WAIT_S,
    PROVISIONED_WITHIN_S,
    SETTLE_FUNCTION_DIMENSION,
    SETTLE_LEFT,
    SETTLE_WAIT_S,
    SettleTarget,
    at_mark,
    parse_targets,
    plan_settle,
    to_settle,
)
from .traffic import REASON_CHARS, Needs, traffic_needs

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
    if lowest:  # a live table: what its traffic needs, its minimum now, its holds' level
        fields["traffic"] = [
            {
                "index": i,
                "dimension": d,
                "peak": round(needs.peaks[(i, d)], 1) if (i, d) in needs.peaks else None,
                "need": needs.floors.get((i, d)),
                "min_capacity": needs.minimums.get((i, d)),
                "held": needs.held.get((i, d)),
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


def _hold_store(props: Mapping[str, Any]) -> str | None:
    """The properties' ``HoldStore``: absent or empty (None: the step reads no holds), or
    the name of a hold store table."""
    store = props.get("HoldStore")
    if store is None or store == "":
        return None
    if not is_table_name(store):
        raise ValueError(
            f"ResourceProperties.HoldStore must be empty or the name of the hold store table "
            f"of the CapacityRequests serving the table; got {shown(store)}"
        )
    return str(store)


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
        _hold_store(props)
        settle_by = int(clock() + SETTLE_WAIT_S)
        return {"PhysicalResourceId": physical, "Data": {"SettleBy": str(settle_by)}}


def is_complete(
    event: Mapping[str, Any],
    context: Any,
    dynamodb: DynamoDBClient | None = None,
    clock: Callable[[], float] = time.time,
    cloudwatch: CloudWatchClient | None = None,
    autoscaling: ApplicationAutoScalingClient | None = None,
    holds: DynamoDBClient | None = None,
) -> dict[str, Any]:
    """The provider's call every few seconds until done: settles the table once it and its
    GSIs are ACTIVE (``Data.Settled`` says whether an UpdateTable was sent); a table not
    ACTIVE by ``SettleBy`` fails the step. Delete is done at once. ``cloudwatch``,
    ``autoscaling`` and ``holds`` (a DynamoDB client of the hold store): the readers of a
    table's traffic, minimums and holds (default: the function's own)."""
    with _failures(event):
        if event.get("RequestType") not in ("Create", "Update"):
            return {"IsComplete": True}
        props = _properties(event)
        name = props["TableName"]
        targets = parse_targets(props.get("Targets"))
        store = _hold_store(props)
        settle_by = _settle_by(event, name, clock())
        try:
            settled = _settle_when_active(
                event,
                (name, store),
                targets,
                settle_by,
                (dynamodb, cloudwatch, autoscaling, holds),
                clock,
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


Clients = tuple[
    "DynamoDBClient | None",
    "CloudWatchClient | None",
    "ApplicationAutoScalingClient | None",
    "DynamoDBClient | None",
]
"""The settle step's clients given (None: the function's own): its table's, its traffic's,
its minimums' and its hold store's."""


def _settle_when_active(
    event: Mapping[str, Any],
    table: tuple[str, str | None],
    targets: list[SettleTarget],
    settle_by: int,
    clients: Clients,
    clock: Callable[[], float],
) -> bool | str:
    """Whether the table (``table``: its name and its hold store's, if any) was settled (an
    UpdateTable sent) once it and its GSIs are ACTIVE; its status while they are not. On an
    Update of the same table (a live one), the traffic and the minimums now of the
    dimensions to lower are read first (`_live_needs`); with a hold store, the holds of
    those no minimum bounds (`_held`): a read of them that meets an error that may pass,
    within `PERMISSION_WAIT_S` of the step's first call, answers a status to wait on (read
    again at the next call). Each dimension left at its mark is logged and counted once the
    step is done (`_left`), so a call answered to wait counts none."""
    name, store = table
    dynamodb = clients[0] or dynamodb_client()
    description = table_calls.describe(dynamodb, name)
    if not _is_active(description):
        return str(description["TableStatus"])
    since = settle_by - SETTLE_WAIT_S - PROVISIONED_WITHIN_S
    previous = _previous(event, name, targets)
    chosen = at_mark(description, to_settle(description, targets, previous, since))
    needs = Needs()
    if previous is not None:  # an Update of the same table: it is live
        cloudwatch, autoscaling = clients[1], clients[2]
        needs = _live_needs(
            (
                lambda: cloudwatch or settle_cloudwatch_client(),
                lambda: autoscaling or settle_autoscaling_client(),
            ),
            name,
            chosen,
            clock(),
        )
    if store is not None:
        reader = clients[3]
        now = clock()
        patient = now - (settle_by - SETTLE_WAIT_S) < PERMISSION_WAIT_S
        try:
            _held(
                lambda: reader or settle_store_client(),
                (name, store),
                chosen,
                needs,
                (now, patient),
            )
        except HoldsUnread as exc:  # read again at the next call
            return f"capacity holds not read yet ({shown_text(str(exc), REASON_CHARS)})"
    lowered = [t for t in chosen if t.key not in needs.left]
    settled = settle_table(dynamodb, description, lowered, needs) is not None
    _left(name, chosen, needs, clock())  # once the step is done: counted once
    return settled


def _live_needs(
    clients: tuple[Callable[[], CloudWatchClient], Callable[[], ApplicationAutoScalingClient]],
    name: str,
    targets: list[SettleTarget],
    now: float,
) -> Needs:
    """What the traffic of the live table ``name`` needs of the ``targets`` to lower
    (`traffic.traffic_needs`), then the minimums now of those whose need is known
    (`minimums.live_minimums`, made by the second of ``clients``); each dimension whose
    need or minimum is unknown is ``left``."""
    needs = traffic_needs(clients[0], name, targets, datetime.fromtimestamp(now, UTC))
    minimums = live_minimums(clients[1], name, [t for t in targets if t.key not in needs.left])
    needs.minimums.update(minimums.held)
    needs.left.update(minimums.left)
    return needs


def _held(
    client: Callable[[], DynamoDBClient],
    table: tuple[str, str],
    targets: list[SettleTarget],
    needs: Needs,
    when: tuple[float, bool],
) -> None:
    """The active holds' level (`live_holds.held_levels`, from the hold store ``table[1]``) in
    ``needs`` for each of ``targets`` no minimum now bounds and not left yet: a fixed
    capacity, and on a Create (no minimum read) every dimension; those whose holds are
    unknown are ``left``. ``when``: the time now, and whether the step still waits for
    an error that may pass (`HoldsUnread`: within `PERMISSION_WAIT_S` of its first call)."""
    read = [
        t
        for t in targets
        if t.key not in needs.left and (t.target_utilization is None or t.key not in needs.floors)
    ]
    now = datetime.fromtimestamp(when[0], UTC)
    found = held_levels(client, table[1], table[0], read, now, patient=when[1])
    needs.held.update(found.held)
    needs.left.update(found.left)


LEFT_FOR_AUTO_SCALING = "left at its high-water mark: auto scaling lowers it"
LEFT_FIXED = (
    "left at its high-water mark: a fixed capacity (no scalable target), it stays there until "
    "someone lowers it (aws dynamodb update-table; docs/operations/alarms.md, Settle left)"
)
"""What becomes of a dimension left at its mark, by kind (``settle-left``'s consequence)."""


def _left(name: str, targets: list[SettleTarget], needs: Needs, now: float) -> None:
    """Each of ``targets`` left at its mark (``needs.left``) logged (``settle-left``, with
    what becomes of it: auto scaling lowers an auto-scaled one, a fixed one stays) and, in
    a Lambda function, counted at ``now`` (`SETTLE_LEFT`, for the table and for the settle
    function; a count that cannot be written fails nothing): the deploy goes on."""
    left = [t for t in targets if t.key in needs.left]
    for t in left:
        log_event(
            "settle-left",
            level=logging.WARNING,
            table=name,
            index=t.index,
            dimension=t.dimension,
            high_water_mark=t.high_water_mark,
            reason=needs.left[t.key],
            consequence=LEFT_FIXED if t.target_utilization is None else LEFT_FOR_AUTO_SCALING,
        )
    if left:
        count_in_lambda(
            METRICS_NAMESPACE,
            SETTLE_LEFT,
            len(left),
            store=os.environ.get(LAMBDA_ENV, "").strip() or None,
            dimension=SETTLE_FUNCTION_DIMENSION,
            table=name,
            at=now,
        )


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
