"""Runs in: global-table schedule Lambda.

The custom resource of one replica of a global table (``GlobalTableCapacity``), as the
``on_event`` handler of aws-cdk-lib's `custom_resources.Provider`:

- Create: tag the replica's scalable targets as the library's (``TARGET_TAG``, the tag its
  roles are scoped by), then put every action. A failure part way deletes what it put
  before the deployment fails, so nothing is left behind.
- Update: put every new action (a put replaces an action of the same name), then delete
  the actions the old properties had and the new ones do not. A new table or Region is a
  new resource: CloudFormation then deletes the old one.
- Delete: delete the actions of the properties (one already gone is skipped) and the tag.

Every action it puts or deletes is named in its properties and begins with
``ACTION_PREFIX``: it never touches an action it did not make. The global table's own
settings (its minimum, maximum and target value) stay with CloudFormation: a deploy of the
table restores them.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from ..aws import scheduled_actions as calls
from ..aws.clients import autoscaling_client
from ..core.errors import ReplicaScheduleError
from ..events import log_event
from .replica_actions import ReplicaAction, ReplicaSchedule, dimensions_of, parse_schedule, removed

if TYPE_CHECKING:
    from mypy_boto3_application_autoscaling import ApplicationAutoScalingClient

ClientOf = Callable[[str], "ApplicationAutoScalingClient"]


@contextmanager
def _failures(event: Mapping[str, Any]) -> Iterator[None]:
    """Every failure logged (``replica-schedule-failed``) and raised as a
    `ReplicaScheduleError` naming the table, the Region and the cause, which the provider
    sends CloudFormation as the reason."""
    props = event.get("ResourceProperties") or {}
    where = f"table {props.get('TableName')!r:.80} in {props.get('Region')!r:.40}"
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
        raise ReplicaScheduleError(f"{where}: {type(exc).__name__}: {exc}") from exc


def on_event(
    event: Mapping[str, Any],
    context: Any,
    client_of: ClientOf = autoscaling_client,
    tagger_of: ClientOf | None = None,
) -> dict[str, Any]:
    """The provider's call for each event: ``client_of`` makes a Region's client, and
    ``tagger_of`` the one that tags its targets (default: the same client)."""
    with _failures(event):
        new = parse_schedule(event.get("ResourceProperties"))
        autoscaling = client_of(new.region)
        tagger = autoscaling if tagger_of is None else tagger_of(new.region)
        kind = event.get("RequestType")
        if kind == "Delete":
            _delete(autoscaling, tagger, new)
            return {"PhysicalResourceId": event.get("PhysicalResourceId") or new.physical_id}
        old = parse_schedule(event["OldResourceProperties"]) if kind == "Update" else None
        if old is not None and old.physical_id == new.physical_id:
            _update(autoscaling, tagger, old, new)
        else:
            _create(autoscaling, tagger, new)
        return {"PhysicalResourceId": new.physical_id, "Data": {"Actions": len(new.actions)}}


def _tagged(
    autoscaling: ApplicationAutoScalingClient,
    tagger: ApplicationAutoScalingClient,
    s: ReplicaSchedule,
) -> None:
    """Tag the replica's targets; every target an action is on must exist (the global
    table creates them with its auto scaling)."""
    targets = calls.targets_of(autoscaling, s.table, s.indexes)
    missing = sorted(dimensions_of(s.actions) - set(targets), key=str)
    if missing:
        names = ", ".join(f"{i or 'table'} {d}" for i, d in missing)
        raise ReplicaScheduleError(
            f"no scalable target for {names}: the global table's capacity there must be "
            "autoscaled (Capacity.autoscaled)"
        )
    calls.tag_targets(tagger, sorted(targets.values()), s.table)


def _create(
    autoscaling: ApplicationAutoScalingClient,
    tagger: ApplicationAutoScalingClient,
    s: ReplicaSchedule,
) -> None:
    _tagged(autoscaling, tagger, s)
    done: list[ReplicaAction] = []
    try:
        for action in s.actions:
            calls.put_action(autoscaling, s.table, action.index, action.dimension, action.api())
            done.append(action)
    except Exception:
        for action in done:  # leave nothing behind a failed creation
            calls.delete_action(autoscaling, s.table, action.index, action.dimension, action.name)
        raise
    log_event("replica-schedule-created", table=s.table, region=s.region, actions=len(done))


def _update(
    autoscaling: ApplicationAutoScalingClient,
    tagger: ApplicationAutoScalingClient,
    old: ReplicaSchedule,
    new: ReplicaSchedule,
) -> None:
    _tagged(autoscaling, tagger, new)
    for action in new.actions:
        calls.put_action(autoscaling, new.table, action.index, action.dimension, action.api())
    gone = removed(old, new)
    for action in gone:
        calls.delete_action(autoscaling, new.table, action.index, action.dimension, action.name)
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
    deleted = [
        a.name
        for a in s.actions
        if calls.delete_action(autoscaling, s.table, a.index, a.dimension, a.name)
    ]
    calls.untag_targets(tagger, sorted(calls.targets_of(autoscaling, s.table, s.indexes).values()))
    log_event("replica-schedule-deleted", table=s.table, region=s.region, deleted=deleted)
