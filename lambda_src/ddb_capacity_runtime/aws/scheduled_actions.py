"""Runs in: global-table schedule Lambda (the custom resource of ``GlobalTableCapacity``).

Application Auto Scaling's calls on one replica's scalable targets, in that replica's
Region: finding the targets of a table and its GSIs, tagging them as the library's (the
tag its roles are scoped by), and putting and deleting the scheduled actions the library
made. Nothing here deletes an action by anything but its exact name; `with_actions` lists
them, to tell the targets that still carry an action of the library's."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, cast

from ..core.names import OWNER_TAG, TARGET_TAG, resource_id, scalable_dimension
from .error_codes import error_code

if TYPE_CHECKING:
    from mypy_boto3_application_autoscaling import ApplicationAutoScalingClient
    from mypy_boto3_application_autoscaling.literals import ScalableDimensionType
    from mypy_boto3_application_autoscaling.type_defs import ScalableTargetActionTypeDef

NAMESPACE: Final = "dynamodb"
_DIMENSIONS = {scalable_dimension(i, d): d for i in (None, "x") for d in ("read", "write")}
"""Each ScalableDimension of a table or a GSI, and the dimension it is (read or write)."""
GONE = {"ObjectNotFoundException", "ResourceNotFoundException"}
"""The error codes of an action or a target that is not there (any more)."""


def targets_of(
    autoscaling: ApplicationAutoScalingClient, table: str, indexes: Sequence[str]
) -> dict[tuple[str | None, str], str]:
    """The ARN of each scalable target of ``table`` and its GSIs ``indexes`` that exists,
    by (index or None, dimension)."""
    wanted = {resource_id(table, i): i for i in [None, *indexes]}
    found: dict[tuple[str | None, str], str] = {}
    pages = autoscaling.get_paginator("describe_scalable_targets").paginate(
        ServiceNamespace=NAMESPACE, ResourceIds=list(wanted)
    )
    for page in pages:
        for target in page.get("ScalableTargets", []):
            index = wanted.get(target.get("ResourceId", ""), "?")
            dimension = _DIMENSIONS.get(target.get("ScalableDimension", ""))
            arn = target.get("ScalableTargetARN")
            if index != "?" and dimension and isinstance(arn, str):
                found[(index, dimension)] = arn
    return found


def tag_targets(
    autoscaling: ApplicationAutoScalingClient,
    arns: Iterable[str],
    table: str,
    owner: str | None = None,
) -> None:
    """Tag each target ``TARGET_TAG=table`` (and ``OWNER_TAG=owner``, the role tagging it,
    when given): the library's roles may then schedule it."""
    tags = {TARGET_TAG: table, **({} if owner is None else {OWNER_TAG: owner})}
    for arn in arns:
        autoscaling.tag_resource(ResourceARN=arn, Tags=tags)


def tags_of(autoscaling: ApplicationAutoScalingClient, arn: str) -> dict[str, str]:
    """The tags of the scalable target ``arn`` (untrusted: the ones of text alone; none for
    a target already gone)."""
    try:
        found = autoscaling.list_tags_for_resource(ResourceARN=arn).get("Tags")
    except Exception as exc:
        if error_code(exc) in GONE:
            return {}
        raise
    if not isinstance(found, Mapping):
        return {}
    return {k: v for k, v in found.items() if isinstance(k, str) and isinstance(v, str)}


def untag_targets(
    autoscaling: ApplicationAutoScalingClient, arns: Iterable[str], owned: bool = False
) -> None:
    """Remove ``TARGET_TAG`` (and ``OWNER_TAG`` when ``owned``) from each target (one
    already gone is skipped)."""
    keys = [TARGET_TAG, OWNER_TAG] if owned else [TARGET_TAG]
    for arn in arns:
        try:
            autoscaling.untag_resource(ResourceARN=arn, TagKeys=keys)
        except Exception as exc:
            if error_code(exc) not in GONE:
                raise


def put_action(
    autoscaling: ApplicationAutoScalingClient,
    table: str,
    index: str | None,
    dimension: str,
    action: Mapping[str, Any],
) -> None:
    """Create or replace the scheduled action ``action`` (its name, schedule, time zone,
    optional start and end, and target action) on one scalable target."""
    extra: dict[str, Any] = {
        k: action[k] for k in ("Timezone", "StartTime", "EndTime") if action.get(k) is not None
    }
    autoscaling.put_scheduled_action(
        ServiceNamespace=NAMESPACE,
        ScheduledActionName=action["ScheduledActionName"],
        ResourceId=resource_id(table, index),
        ScalableDimension=cast("ScalableDimensionType", scalable_dimension(index, dimension)),
        Schedule=action["Schedule"],
        ScalableTargetAction=cast(
            "ScalableTargetActionTypeDef", dict(action["ScalableTargetAction"])
        ),
        **extra,
    )


def delete_action(
    autoscaling: ApplicationAutoScalingClient,
    table: str,
    index: str | None,
    dimension: str,
    name: str,
) -> bool:
    """Delete the scheduled action ``name`` of one scalable target; False when it (or its
    target) is not there."""
    try:
        autoscaling.delete_scheduled_action(
            ServiceNamespace=NAMESPACE,
            ScheduledActionName=name,
            ResourceId=resource_id(table, index),
            ScalableDimension=cast("ScalableDimensionType", scalable_dimension(index, dimension)),
        )
    except Exception as exc:
        if error_code(exc) in GONE:
            return False
        raise
    return True


def with_actions(
    autoscaling: ApplicationAutoScalingClient, table: str, indexes: Sequence[str], prefix: str
) -> set[tuple[str | None, str]]:
    """The scalable targets of ``table`` and its GSIs ``indexes`` (as (index or None,
    dimension)) that carry a scheduled action whose name begins with ``prefix``; an action
    without a name of text counts as one (what cannot be read never frees a target)."""
    found: set[tuple[str | None, str]] = set()
    paginator = autoscaling.get_paginator("describe_scheduled_actions")
    for index in [None, *indexes]:
        for page in paginator.paginate(
            ServiceNamespace=NAMESPACE, ResourceId=resource_id(table, index)
        ):
            for action in page.get("ScheduledActions", []):
                name = action.get("ScheduledActionName")
                dimension = _DIMENSIONS.get(action.get("ScalableDimension", ""))
                if dimension and (not isinstance(name, str) or name.startswith(prefix)):
                    found.add((index, dimension))
    return found
