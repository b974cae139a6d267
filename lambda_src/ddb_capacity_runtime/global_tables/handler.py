"""Runs in: global-table schedule Lambda.

The custom resource of one replica of a global table (``GlobalTableCapacity``), as the
``on_event`` handler of aws-cdk-lib's `custom_resources.Provider`:

- Create: tag the replica's scalable targets as the library's (``TARGET_TAG``, the tag its
  roles are scoped by, and ``OWNER_TAG``, the role tagging them), then put every action.
  A failure part way deletes what it put before the deployment fails, so nothing is left
  behind.
- Update: delete the actions the old properties had and the new ones do not, then put
  every new action (a put replaces an action of the same name). A new table or Region is a
  new resource: CloudFormation then deletes the old one.
- Delete: delete the actions of the properties (one already gone, or on a target gone, is
  skipped) and the tags of the targets that are this resource's alone, each tried whatever
  the others do; any left (or a target whose tags cannot be read) fails it, named.

Each call is made as the role the resource names (``RoleArn``: its GlobalTableCapacity's
own, which may tag and schedule only that table's targets in its Regions), assumed for the
event; a rollback to properties written before the roles were is made as the role of the
properties it leaves. CloudFormation creates the role and its grant before the resource, and deletes
them after it; Create and Update still wait out a denial of their first calls (the role
assumed, the targets tagged) for up to `PERMISSION_WAIT_S`, while IAM applies a new role or
grant. A Delete is made as the resource's role too: its grant may delete scheduled actions
and the library's tags in any Region on the targets it tagged (``OWNER_TAG`` names it: a
Region dropped from the table, the table replaced). A resource that names no role (written
before the roles were) is served as the function's own role, which may call Application Auto
Scaling for nothing: its calls fail, naming who was denied.

Every action it puts or deletes is named in its properties and begins with
``ACTION_PREFIX``: it never touches an action it did not make. The global table's own
settings (its minimum, maximum and target value) stay with CloudFormation: a deploy of the
table restores them.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, TypeVar

from ..aws import scheduled_actions as calls
from ..aws.clients import assumed_autoscaling, autoscaling_client
from ..aws.error_codes import error_code
from ..core.errors import ReplicaScheduleError, shown, shown_text, with_notes
from ..core.names import OWNER_TAG, TARGET_TAG
from ..events import log_event
from .replica_actions import (
    ACTION_PREFIX,
    ReplicaAction,
    ReplicaSchedule,
    dimensions_of,
    parse_schedule,
    removed,
)

if TYPE_CHECKING:
    from mypy_boto3_application_autoscaling import ApplicationAutoScalingClient

ClientOf = Callable[[str], "ApplicationAutoScalingClient"]
Clients = tuple["ApplicationAutoScalingClient", "ApplicationAutoScalingClient"]
"""A Region's client, and the one that tags its targets."""
T = TypeVar("T")
K = TypeVar("K", bound=Hashable)
R = TypeVar("R")
SESSION_NAME = "ddb-capacity-replica-schedule"
"""The session name of the role the function assumes (CloudTrail shows it)."""
DENIED = frozenset({"AccessDeniedException", "AccessDenied"})
"""The error codes of a call IAM denied: Application Auto Scaling's, and STS's AssumeRole's."""

CLEANUP_MS = 30_000
"""The function's time kept to delete what a failed Create put (up to 200 actions)."""
PERMISSION_WAIT_S = 60
"""How long a Create or Update waits out a denial of its first calls (its grant's policy
created beside it, or IAM applying it), asking again every `PERMISSION_POLL_S`, and never
into the function's last `CLEANUP_MS`."""
PERMISSION_POLL_S = 5
REASON_CHARS = 2_000
"""The most characters of the reason a failed event gives CloudFormation, which takes a
custom resource's response of at most 4,096 bytes (the provider framework adds its own stack
trace); the function's log (``replica-schedule-failed``) has it whole."""


@contextmanager
def _failures(event: Mapping[str, Any]) -> Iterator[None]:
    """Every failure logged (``replica-schedule-failed``) and raised as a
    `ReplicaScheduleError` naming the table, the Region and the cause, which the provider
    sends CloudFormation as the reason (cut to `REASON_CHARS`)."""
    props = event.get("ResourceProperties")
    props = props if isinstance(props, Mapping) else {}
    where = f"table {shown(props.get('TableName'), 80)} in {shown(props.get('Region'), 40)}"
    try:
        yield
    except Exception as exc:
        log_event(
            "replica-schedule-failed",
            level=logging.ERROR,
            exc_info=True,
            request_type=event.get("RequestType"),
            where=where,
            error=f"{type(exc).__name__}: {exc}",
        )
        reason = f"{where}: {with_notes(exc)}"
        if len(reason) > REASON_CHARS:
            reason = f"{shown_text(reason, REASON_CHARS)}; the function's log has it whole "
            reason += "(replica-schedule-failed)"
        raise ReplicaScheduleError(reason) from exc


def on_event(
    event: Mapping[str, Any],
    context: Any,
    client_of: ClientOf = autoscaling_client,
    tagger_of: ClientOf | None = None,
    sleep: Callable[[float], None] = time.sleep,
    as_role: Callable[[str], ClientOf] | None = None,
) -> dict[str, Any]:
    """The provider's call for each event: ``client_of`` makes a Region's client as the
    function's own role (for a resource that names none), ``as_role`` a role's maker of
    them (default: the role assumed, `assumed_autoscaling`), and ``tagger_of`` the one that
    tags its targets (default: the same client as the call's); ``sleep`` waits between the
    tries of a denied first call."""
    roles = Roles(client_of, as_role or _assumed, tagger_of)
    with _failures(event):
        kind = event.get("RequestType")
        if kind not in ("Create", "Update", "Delete"):
            raise ReplicaScheduleError(
                f"RequestType: got {shown(kind, 40)}; expected Create, Update or Delete"
            )
        new = parse_schedule(event.get("ResourceProperties"))
        if kind == "Delete":
            _delete(*roles.clients(new), new)
            return {"PhysicalResourceId": event.get("PhysicalResourceId") or new.physical_id}
        old = _old(event, new) if kind == "Update" else None
        if new.role_arn is None and old is not None:  # a rollback to properties of before
            new = replace(new, role_arn=old.role_arn)  # the roles: the role still exists
        autoscaling, tagger = _when_permitted(
            lambda: _tagged(*roles.clients(new), new), new, context, sleep
        )
        if old is not None and old.physical_id == new.physical_id:
            _update(autoscaling, tagger, old, new)
        else:
            _create(autoscaling, tagger, new, context)
        return {"PhysicalResourceId": new.physical_id, "Data": {"Actions": len(new.actions)}}


def _old(event: Mapping[str, Any], new: ReplicaSchedule) -> ReplicaSchedule:
    """An Update's old properties. Ones that cannot be read were never acted on (they are
    checked before any call: the deploy that sent them failed): logged, and taken as an
    empty schedule of the same table and Region, so a rollback to good properties puts
    them and removes nothing."""
    try:
        return parse_schedule(event.get("OldResourceProperties"))
    except ReplicaScheduleError as exc:
        log_event(
            "replica-schedule-old-properties-unread",
            level=logging.WARNING,
            table=new.table,
            region=new.region,
            error=str(exc),
        )
        return ReplicaSchedule(new.table, new.region, new.indexes, (), new.role_arn)


def _assumed(role_arn: str) -> ClientOf:
    return assumed_autoscaling(role_arn, SESSION_NAME)


@dataclass(frozen=True)
class Roles:
    """How the function makes its clients: as its own role (``own``), as a role it assumes
    (``as_role``), and the one that tags (``tagger_of``; None: the call's own client)."""

    own: ClientOf
    as_role: Callable[[str], ClientOf]
    tagger_of: ClientOf | None = None

    def clients(self, s: ReplicaSchedule) -> Clients:
        """``s``'s Region's client and tagger, as the role ``s`` names (assumed now: its
        AssumeRole denied is raised as such), or as the function's own role where it names
        none."""
        client_of = self.own if s.role_arn is None else self.as_role(s.role_arn)
        autoscaling = client_of(s.region)
        return autoscaling, autoscaling if self.tagger_of is None else self.tagger_of(s.region)


def _when_permitted(
    call: Callable[[], T], s: ReplicaSchedule, context: Any, sleep: Callable[[float], None]
) -> T:
    """``call()``, tried again every `PERMISSION_POLL_S` while it is denied (`DENIED`), for
    up to `PERMISSION_WAIT_S` and while the function has more than `CLEANUP_MS` left
    (``context``: Lambda's; None: no limit); a denial after that is raised with the grant
    it needs named."""
    left = getattr(context, "get_remaining_time_in_millis", None)
    waited = 0
    while True:
        try:
            return call()
        except Exception as exc:
            if error_code(exc) not in DENIED:
                raise
            more = waited + PERMISSION_POLL_S <= PERMISSION_WAIT_S and not (
                callable(left) and left() < CLEANUP_MS + PERMISSION_POLL_S * 1000
            )
            if not more:
                exc.add_note(_grant_needed(s, waited, getattr(exc, "operation_name", None)))
                raise
        log_event("replica-schedule-waiting", table=s.table, region=s.region, waited=waited)
        sleep(PERMISSION_POLL_S)
        waited += PERMISSION_POLL_S


def _grant_needed(s: ReplicaSchedule, waited: int, operation: str | None) -> str:
    """What a call (``operation``) still denied after ``waited`` seconds needs, and from
    whom."""
    if operation == "AssumeRole":
        return (
            f"still denied after {waited} s: the replica-schedule function's role needs "
            f"sts:AssumeRole on {s.role_arn} (its policy's AssumeScheduleRoles statement), "
            "and that role's trust policy must name the function's role; a service control "
            "policy or permissions boundary may deny it"
        )
    who = (
        "the replica-schedule function's role"
        if s.role_arn is None
        else f"the role {s.role_arn} (its GlobalTableCapacity's ScheduleRole, which the "
        "replica-schedule function's role must be allowed to assume)"
    )
    return (
        f"still denied after {waited} s: {who} needs "
        "application-autoscaling:DescribeScalableTargets and TagResource on the targets of "
        f"{s.table} in {s.region} (the ReadTargets and TagTargets statements of its "
        "policy); a service control policy or permissions boundary may deny them"
    )


def _tagged(
    autoscaling: ApplicationAutoScalingClient,
    tagger: ApplicationAutoScalingClient,
    s: ReplicaSchedule,
) -> Clients:
    """Tag the replica's targets; every target an action is on must exist (the global
    table creates them with its auto scaling). The clients it tagged with."""
    targets = calls.targets_of(autoscaling, s.table, s.indexes)
    missing = sorted(dimensions_of(s.actions) - set(targets), key=str)
    if missing:
        names = ", ".join(f"{i or 'table'} {d}" for i, d in missing)
        raise ReplicaScheduleError(
            f"no scalable target for {names}: the global table's capacity there must be "
            "autoscaled (Capacity.autoscaled)"
        )
    calls.tag_targets(tagger, sorted(targets.values()), s.table, s.role_arn)
    return autoscaling, tagger


def _create(
    autoscaling: ApplicationAutoScalingClient,
    tagger: ApplicationAutoScalingClient,
    s: ReplicaSchedule,
    context: Any = None,
) -> None:
    """Tag the targets and put every action. A failure part way, or too little of the
    function's time left to go on (`CLEANUP_MS`), deletes every action put before it is
    raised: CloudFormation never deletes a resource whose creation failed. Its targets are
    tagged before."""
    done: list[ReplicaAction] = []
    try:
        for action in s.actions:
            _time_left(context, len(done), len(s.actions))
            calls.put_action(autoscaling, s.table, action.index, action.dimension, action.api())
            done.append(action)
    except Exception as exc:
        _undo(autoscaling, s, done, exc)
        raise
    log_event("replica-schedule-created", table=s.table, region=s.region, actions=len(done))


def _time_left(context: Any, done: int, of: int) -> None:
    """Raise TimeoutError when the function has less than `CLEANUP_MS` left (``context``:
    Lambda's; None: no limit)."""
    left = getattr(context, "get_remaining_time_in_millis", None)
    if callable(left) and left() < CLEANUP_MS:
        raise TimeoutError(
            f"{done} of {of} actions put when the function's time ran low; raise its timeout "
            "(function_options['ReplicaSchedules'])"
        )


def _undo(
    autoscaling: ApplicationAutoScalingClient,
    s: ReplicaSchedule,
    done: list[ReplicaAction],
    cause: BaseException,
) -> None:
    """Delete every action of ``done`` (each tried, whatever the others do); any that stays
    is named in a note on ``cause`` and logged (``replica-schedule-left``)."""
    _, left = _each(
        done,
        lambda a: calls.delete_action(autoscaling, s.table, a.index, a.dimension, a.name),
        lambda a: a.name,
    )
    if left:
        log_event(
            "replica-schedule-left",
            level=logging.ERROR,
            table=s.table,
            region=s.region,
            actions=left,
        )
        cause.add_note(f"actions left on the targets: {', '.join(left)}")


def _each(
    items: Iterable[K], call: Callable[[K], R], name: Callable[[K], str]
) -> tuple[dict[K, R], list[str]]:
    """``call`` on every item of ``items``, each tried whatever the others do: what it
    answered for each item it did not fail on, and each one it failed on, named (``name``)
    with its error."""
    answers: dict[K, R] = {}
    failed = []
    for item in items:
        try:
            answers[item] = call(item)
        except Exception as exc:
            failed.append(f"{name(item)} ({type(exc).__name__}: {shown(str(exc), 120)})")
    return answers, failed


def _update(
    autoscaling: ApplicationAutoScalingClient,
    tagger: ApplicationAutoScalingClient,
    old: ReplicaSchedule,
    new: ReplicaSchedule,
) -> None:
    # the dropped ones first: a target's 200 actions are never passed on the way (a new
    # name for each, as when the names change, would double them)
    gone = removed(old, new)
    for action in gone:
        calls.delete_action(autoscaling, new.table, action.index, action.dimension, action.name)
    for action in new.actions:
        calls.put_action(autoscaling, new.table, action.index, action.dimension, action.api())
    log_event(
        "replica-schedule-updated",
        table=new.table,
        region=new.region,
        actions=len(new.actions),
        removed=[a.name for a in gone],
    )


def _delete(
    autoscaling: ApplicationAutoScalingClient,
    tagger: ApplicationAutoScalingClient,
    s: ReplicaSchedule,
) -> None:
    """Delete the actions ``s`` names on the targets that still exist (a target
    deregistered, as a replica removed, took its actions with it), then the tags of those
    that are this resource's alone: a target that still carries the library's actions, or
    whose `OWNER_TAG` names another role, is another resource's now (the construct renamed
    or moved: its new resource was created, and tagged the targets, before this one's
    Delete). Every delete and untag is tried whatever the others do; any that failed, and
    any target whose tags could not be read (kept: unknown data never frees a target), is
    logged (``replica-schedule-left``) and fails the Delete, named in its error: CloudFormation
    reports it, and the function's ``Errors`` alarm fires."""
    targets = calls.targets_of(autoscaling, s.table, s.indexes)
    there = [a for a in s.actions if (a.index, a.dimension) in targets]
    answers, actions_left = _each(
        there,
        lambda a: calls.delete_action(autoscaling, s.table, a.index, a.dimension, a.name),
        lambda a: a.name,
    )
    kept = calls.with_actions(autoscaling, s.table, s.indexes, ACTION_PREFIX)
    free = sorted(arn for key, arn in targets.items() if key not in kept)
    ours, unread, not_untagged = _untag_own(tagger, s, free)
    left = {
        "actions not deleted": actions_left,
        "targets whose tags it could not read (their tags kept)": unread,
        "targets whose tags it could not remove": not_untagged,
    }
    if any(left.values()):
        log_event(
            "replica-schedule-left",
            level=logging.ERROR,
            table=s.table,
            region=s.region,
            actions=actions_left,
            tags=unread + not_untagged,
        )
        said = "; ".join(f"{what}: {', '.join(names)}" for what, names in left.items() if names)
        raise ReplicaScheduleError(f"the Delete left {said}")
    log_event(
        "replica-schedule-deleted",
        table=s.table,
        region=s.region,
        deleted=[a.name for a in there if answers[a]],
        skipped=[a.name for a in s.actions if a not in there],
        tag_kept=sorted(f"{i or 'table'} {d}" for i, d in kept) + sorted(set(free) - set(ours)),
    )


def _untag_own(
    tagger: ApplicationAutoScalingClient, s: ReplicaSchedule, free: list[str]
) -> tuple[list[str], list[str], list[str]]:
    """Remove the library's tags from the targets ``free`` (ARNs) whose tags are ``s``'s
    (`_tagged_by`): each read, then each untagged, whatever the others do. The targets it
    untagged (or tried to), then each it could not read the tags of (they are kept: unknown
    data never frees a target), and each it could not untag, named with the error."""
    tags, unread = _each(free, lambda arn: calls.tags_of(tagger, arn), lambda arn: arn)
    ours = [arn for arn in free if arn in tags and _tagged_by(tags[arn], s)]
    _, not_untagged = _each(
        ours,
        lambda arn: calls.untag_targets(tagger, [arn], owned=s.role_arn is not None),
        lambda arn: arn,
    )
    return ours, unread, not_untagged


def _tagged_by(tags: Mapping[str, str], s: ReplicaSchedule) -> bool:
    """Whether a target's ``tags`` are ``s``'s to remove: its `OWNER_TAG` names ``s``'s
    role, or it has none and its `TARGET_TAG` names ``s``'s table (tagged before the roles
    were, or by a resource of no role)."""
    owner = tags.get(OWNER_TAG)
    if owner is not None:
        return s.role_arn is not None and owner == s.role_arn
    return tags.get(TARGET_TAG) == s.table
