"""Carries out a tick's decisions for one table; the only module here that changes AWS.

- A dimension with a scalable target: its MinCapacity is moved (RegisterScalableTarget), so
  auto scaling performs the change and knows it. The minimum it had is remembered in a
  table tag (``ddb-capacity:base-min:...``) until it is restored, so a restart of the
  scaler loses nothing.
- Every other dimension: one UpdateTable carrying the table's and its GSIs' changes.

Errors stay with their table: the caller goes on with the others.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from botocore.exceptions import ClientError

from ..core.names import UNITS, base_min_tag
from ..core.plan import SCALABLE_TARGET, UPDATE_TABLE, Change
from ..core.policy import DECREASE, INCREASE
from ..core.tables import ManagedTable

if TYPE_CHECKING:
    from mypy_boto3_application_autoscaling import ApplicationAutoScalingClient
    from mypy_boto3_application_autoscaling.literals import ScalableDimensionType
    from mypy_boto3_dynamodb import DynamoDBClient


STATUS_BY_CODE = {
    "ResourceInUseException": "retry-next-tick",
    "LimitExceededException": "quota-exceeded",
    "ValidationException": "invalid",
    "AccessDeniedException": "access-denied",
    "ResourceNotFoundException": "not-found",
}


@dataclass(frozen=True)
class Outcome:
    change: Change
    status: str  # applied | dry-run | retry-next-tick | quota-exceeded | invalid | ...
    error: str | None = None


def _status(exc: ClientError) -> tuple[str, str]:
    code = exc.response.get("Error", {}).get("Code", "Unknown")
    return STATUS_BY_CODE.get(code, "failed"), f"{code}: {exc.response['Error'].get('Message', '')}"


def update_table_request(table: ManagedTable, changes: Sequence[Change]) -> dict[str, Any]:
    """One UpdateTable for ``changes``; each touched table or GSI gets both of its values."""
    new = {(c.dimension.index, c.dimension.dimension): c.new for c in changes}
    current = {(d.index, d.dimension): d.provisioned for d in table.dimensions}
    touched = sorted({c.dimension.index for c in changes}, key=lambda i: (i is not None, i or ""))

    def throughput(index: str | None) -> dict[str, int]:
        return {units: new.get((index, dim), current[(index, dim)]) for dim, units in UNITS.items()}

    request: dict[str, Any] = {"TableName": table.name}
    if None in touched:
        request["ProvisionedThroughput"] = throughput(None)
    updates = [
        {"Update": {"IndexName": i, "ProvisionedThroughput": throughput(i)}}
        for i in touched
        if i is not None
    ]
    if updates:
        request["GlobalSecondaryIndexUpdates"] = updates
    return request


def _update_table(
    dynamodb: DynamoDBClient, table: ManagedTable, changes: list[Change]
) -> list[Outcome]:
    try:
        dynamodb.update_table(**update_table_request(table, changes))
        return [Outcome(c, "applied") for c in changes]
    except ClientError as exc:
        status, message = _status(exc)
        increases = [c for c in changes if c.action == INCREASE]
        if status != "quota-exceeded" or not increases or len(increases) == len(changes):
            return [Outcome(c, status, message) for c in changes]
        # The decreases were refused: the increases must not wait for them.
        refused = [Outcome(c, status, message) for c in changes if c.action != INCREASE]
        return refused + _update_table(dynamodb, table, increases)


def _move_min(
    dynamodb: DynamoDBClient, aas: ApplicationAutoScalingClient, table: ManagedTable, change: Change
) -> Outcome:
    d = change.dimension
    assert d.target is not None
    tag = base_min_tag(d.index, d.dimension)
    try:
        if change.action == INCREASE and d.base_min_tag is None:
            dynamodb.tag_resource(
                ResourceArn=table.arn, Tags=[{"Key": tag, "Value": str(d.target.min_capacity)}]
            )
        aas.register_scalable_target(
            ServiceNamespace="dynamodb",
            ResourceId=d.target.resource_id,
            ScalableDimension=cast("ScalableDimensionType", d.target.scalable_dimension),
            MinCapacity=change.new,
        )
        if change.action == DECREASE:
            dynamodb.untag_resource(ResourceArn=table.arn, TagKeys=[tag])
        return Outcome(change, "applied")
    except ClientError as exc:
        status, message = _status(exc)
        return Outcome(change, status, message)


def apply(
    dynamodb: DynamoDBClient,
    aas: ApplicationAutoScalingClient,
    table: ManagedTable,
    changes: Sequence[Change],
    dry_run: bool,
) -> list[Outcome]:
    """Apply one table's changes (or only report them, in dry-run mode)."""
    if dry_run:
        return [Outcome(c, "dry-run") for c in changes]
    outcomes = [_move_min(dynamodb, aas, table, c) for c in changes if c.via == SCALABLE_TARGET]
    direct = [c for c in changes if c.via == UPDATE_TABLE]
    if direct:
        outcomes += _update_table(dynamodb, table, direct)
    return outcomes
