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
traffic, or down), it is not lowered again; a table at its mark that this deploy did not
provision (auto scaling or a schedule holds it there at a peak, and an Update changes some
other property) is never cut. A retried or repeated event spends no second decrease.

An Update's table is live: an auto-scaled dimension whose mark changed is lowered no
further than what its traffic of the last minutes needs at its target utilization, and not
at all where that is unknown (`traffic.traffic_needs`; ``settle-left``), for auto scaling to
lower. A new table (a Create) has no traffic, and settles to its operating capacity. On both,
an auto-scaled dimension goes no lower than its scalable target's MinCapacity now (a capacity
request's hold, a scheduled action or the scaler may have raised it:
`minimums.live_minimums`), and not at all where that is unknown (a new table's target not
registered yet has none). A step whose properties name the hold store of the
``CapacityRequests`` serving the table (``HoldStore``) lowers no dimension below its active
holds where no minimum says them (a fixed capacity, and every dimension of a Create:
`live_holds.held_levels`), and none whose holds are unknown (a read of them that meets an
error that may pass, a throttle or a denial while IAM applies the step's grant, is tried
again at the next call for `PERMISSION_WAIT_S` first).

What it read may change before its UpdateTable lands: a capacity request records a hold on
a table it found at its mark, and raises nothing. So once it has lowered, the step answers
to wait, and a later call, once the table is ACTIVE again, reads the floors of what it
lowered again (`put_back.after_lowering`): a dimension whose floor rose above its capacity,
or can no longer be read, is put back at its mark. A call knows the step has lowered from
the table's own dates of its decreases (`put_back.decreased_since`): it lowers nothing more
(another writer's decrease in the step's time is taken for the step's: what it leaves at its
mark is counted all the same, by the call after, which decides).
The step lowers only with `LOWER_BY_S` left before its SettleBy, and once it has, its own
decrease still in flight at SettleBy fails no deploy. Every dimension left at its mark, or
put back there, is logged (``settle-left``: auto scaling lowers an auto-scaled one; a fixed
one stays there until someone lowers it) and counted once, by the call that decides it
(`SETTLE_LEFT`), which the step's alarm watches.

Layers: `settle_plan.plan_settle` and `floors.risen` are pure; `settle_table` talks to
DynamoDB through a client passed in; `on_event` and `is_complete` are the thin entry points
(the provider answers CloudFormation).
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from ..aws import table_calls
from ..aws.error_codes import error_code
from ..aws.settle_clients import (
    dynamodb_client,
    settle_autoscaling_client,
    settle_cloudwatch_client,
    settle_store_client,
)
from ..core.errors import HoldsUnread, shown, shown_text, with_notes
from ..core.errors import SettleError as SettleError
from ..core.names import is_table_name
from ..core.validators import whole_text
from ..events import log_event
from .floors import Readers, read_floors
from .live_holds import outlasting_retries
from .put_back import (
    LOWERED,
    Waiting,
    Window,
    after_lowering,
    decreased_since,
    is_active,
    report_left,
    still_updating,
)
from .settle_plan import (
    LOWER_BY_S,
    PERMISSION_WAIT_S,
    PROVISIONED_WITHIN_S,
    SETTLE_WAIT_S,
    SettleTarget,
    at_mark,
    parse_targets,
    plan_settle,
    to_settle,
)
from .traffic import REASON_CHARS, Needs

if TYPE_CHECKING:
    from mypy_boto3_application_autoscaling import ApplicationAutoScalingClient
    from mypy_boto3_cloudwatch import CloudWatchClient
    from mypy_boto3_dynamodb import DynamoDBClient


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
    GSIs are ACTIVE (``Data.Settled`` says whether the step lowered it), and once it has,
    checks what it lowered at a later call; a table not ACTIVE by ``SettleBy`` (before the
    step lowered it, and not UPDATING with its own decrease possibly in flight) fails the
    step. Delete is done at once. ``cloudwatch``,
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
        window = Window(clock, settle_by - SETTLE_WAIT_S, settle_by)
        try:
            settled = _settle_when_active(
                event, (name, store), targets, window, (dynamodb, cloudwatch, autoscaling, holds)
            )
        except ClientError as exc:
            settled = _waited_out(exc, clock() - window.began), window.settle_by
        if isinstance(settled, bool):
            return {"IsComplete": True, "Data": {"Settled": "true" if settled else "false"}}
        status, until = settled
        if clock() > until:
            raise TimeoutError(
                f"table {name} not ACTIVE after {SETTLE_WAIT_S:.0f} s (status {status})"
            )
        log_event("settle-waiting", table=name, status=status)
        return {"IsComplete": False}


SETTLE_BY_SKEW_S = 300
"""How far ``Data.SettleBy`` may lie outside the step's own window: a legitimate call comes at
most the provider's last minute past it (a call after it fails a step that has not lowered:
`is_complete`'s TimeoutError); a second function's clock may differ from the first's by a
little."""


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
    window: Window,
    clients: Clients,
) -> bool | Waiting:
    """Whether the step lowered the table (``table``: its name and its hold store's, if
    any), once it and its GSIs are ACTIVE; while it waits, its status and until when
    (``window``: the step's time). Once the table shows a decrease since the step began,
    the step has lowered: it lowers nothing more, and checks what it lowered
    (`put_back.after_lowering`). Before, the dimensions this deploy provisioned still at
    their mark are lowered, each no lower than what bounds it (`floors.read_floors`: a hold
    read that meets an error that may pass, within `PERMISSION_WAIT_S` of the step's first
    call, answers a status to wait on, read again at the next call), in one UpdateTable,
    and the call answers to wait, counting nothing: a later one reads the floors of what it
    lowered, and of what is still at its mark, again, and counts every dimension left at
    its mark (`put_back.after_lowering`). A call that lowers nothing decides for good: each
    one left at its mark is logged and counted (`put_back.report_left`). A table ACTIVE
    with less than `LOWER_BY_S` left before ``SettleBy`` is not lowered: its dimensions
    stay at their mark, counted. A table UPDATING then, no decrease dated (its own may be
    in flight, dated only once done), is waited for until the step's end, then counted
    unchecked (`put_back.still_updating`); one not ACTIVE otherwise by ``SettleBy`` fails
    the step."""
    name = table[0]
    dynamodb = clients[0] or dynamodb_client()
    description = table_calls.describe(dynamodb, name)
    previous = _previous(event, name, targets)
    provisioned = to_settle(description, targets, previous, window.began - PROVISIONED_WITHIN_S)
    readers = _readers(clients, table, new=previous is None)
    decreased = decreased_since(description, provisioned, window.began)
    if decreased:  # the step lowered: only what it lowered is looked at again
        return after_lowering(dynamodb, description, (provisioned, decreased), readers, window)
    chosen, now = at_mark(description, provisioned), window.clock()
    if not is_active(description):
        if now > window.settle_by - LOWER_BY_S and _updating(description):
            maybe = (provisioned, {t.index for t in provisioned})  # its decrease, undated
            return still_updating(description, maybe, window, MAYBE_LOWERED)
        return str(description["TableStatus"]), window.settle_by
    if chosen and now > window.settle_by - LOWER_BY_S:
        late = TOO_LATE.format(left=max(0.0, window.settle_by - now), by=LOWER_BY_S)
        report_left(name, chosen, Needs(left=dict.fromkeys([t.key for t in chosen], late)), now)
        return False
    try:
        needs = read_floors(readers, chosen, (), (now, now - window.began < PERMISSION_WAIT_S))[0]
    except HoldsUnread as exc:  # read again at the next call
        status = f"capacity holds not read yet ({shown_text(str(exc), REASON_CHARS)})"
        return status, window.settle_by
    lowered = [t for t in chosen if t.key not in needs.left]
    if settle_table(dynamodb, description, lowered, needs) is not None:
        return LOWERED, window.settle_by  # what it leaves is counted by the call that decides
    report_left(name, chosen, needs, window.clock())  # decided for good: counted once
    return False


def _updating(description: Mapping[str, Any]) -> bool:
    """Whether the table is UPDATING, no GSI of it being created: possibly the step's own
    decrease in flight, which DynamoDB may date only once it is done."""
    return description["TableStatus"] == "UPDATING" and all(
        gsi.get("IndexStatus") != "CREATING"
        for gsi in description.get("GlobalSecondaryIndexes", [])
    )


MAYBE_LOWERED = (
    "possibly lowered: the table is UPDATING past the step's time to lower, waited for until "
    "the step's end"
)
"""The status of a call that finds the table UPDATING, no decrease dated, once the step may no
longer lower: its own decrease may be in flight (`put_back.still_updating`)."""


TOO_LATE = (
    "not lowered: the table was ACTIVE {left:.0f} s before the step's end (SettleBy), and the "
    "step lowers only with {by} s left, to read the floors of what it lowered again once the "
    "decrease is done, and put back any that rose"
)
"""Why the dimensions of a table ACTIVE late in the step stay at their marks."""


def _readers(clients: Clients, table: tuple[str, str | None], *, new: bool) -> Readers:
    """The readers of ``table``'s floors (its name and its hold store's), through the clients
    given or the function's own; ``new``: a Create."""
    cloudwatch, autoscaling, holds = clients[1], clients[2], clients[3]
    return Readers(  # each client made once a call, on first use
        table[0],
        table[1],
        new,
        functools.cache(lambda: cloudwatch or settle_cloudwatch_client()),
        functools.cache(lambda: autoscaling or settle_autoscaling_client()),
        functools.cache(lambda: holds or settle_store_client()),
    )


def _waited_out(exc: ClientError, elapsed: float) -> str:
    """The status to wait on for an error the next call may not meet: an UpdateTable already
    in flight, a throttle or an error of AWS's own (5xx) that outlasted botocore's retries
    (so that a passing error between the call that lowered and the one that decides never
    fails the deploy with what it left uncounted), or a denial within `PERMISSION_WAIT_S`
    of the step's first call; any other error is raised."""
    code = error_code(exc)
    if code == "ResourceInUseException":
        return "ResourceInUseException (another update of the table)"
    if outlasting_retries(exc):
        return f"{code} (an error that may pass, after the client's retries)"
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
