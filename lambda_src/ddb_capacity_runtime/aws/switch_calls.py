"""Runs in: on-demand switch Lambda.

The on-demand switch's calls as they are: a table's scalable targets read and registered
(their minimum, maximum and suspended state), and its one state item in the switch's state
store read and written conditionally. Clients are passed in; nothing here decides.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mypy_boto3_application_autoscaling import ApplicationAutoScalingClient
    from mypy_boto3_dynamodb import DynamoDBClient

STATE_SORT_KEY = "on-demand"
"""The sort key of a table's switch state (its partition key is the table's name)."""


def read_targets(
    aas: ApplicationAutoScalingClient, resource_ids: Sequence[str]
) -> list[dict[str, Any]]:
    """DescribeScalableTargets' entries of ``resource_ids`` (DynamoDB's), every page."""
    found: list[dict[str, Any]] = []
    pages = aas.get_paginator("describe_scalable_targets").paginate(
        ServiceNamespace="dynamodb", ResourceIds=list(resource_ids)
    )
    for page in pages:
        found += [dict(t) for t in page.get("ScalableTargets", [])]
    return found


def register(
    aas: ApplicationAutoScalingClient,
    resource_id: str,
    dimension: str,
    bounds: tuple[int, int],
    suspended: Mapping[str, bool],
) -> None:
    """One RegisterScalableTarget of a DynamoDB target: its min and max as they are given,
    and its suspended state."""
    aas.register_scalable_target(
        ServiceNamespace="dynamodb",
        ResourceId=resource_id,
        ScalableDimension=dimension,  # type: ignore[arg-type]
        MinCapacity=bounds[0],
        MaxCapacity=bounds[1],
        SuspendedState=dict(suspended),  # type: ignore[arg-type]
    )


def read_state(dynamodb: DynamoDBClient, store: str, table: str) -> tuple[str | None, int]:
    """The table's switch state in ``store`` as it was written (None: none yet) and its
    version (0: none yet), read consistently."""
    item = dynamodb.get_item(
        TableName=store,
        Key={"pk": {"S": table}, "sk": {"S": STATE_SORT_KEY}},
        ConsistentRead=True,
    ).get("Item")
    if not item:
        return None, 0
    version = item.get("version", {}).get("N", "0")
    return item.get("state", {}).get("S"), int(version) if version.isdigit() else -1


def write_state(dynamodb: DynamoDBClient, store: str, table: str, state: str, version: int) -> None:
    """Write the table's switch state as version ``version`` + 1, only if the stored one is
    still ``version`` (0: none yet): ConditionalCheckFailedException otherwise."""
    condition = "attribute_not_exists(pk)" if version == 0 else "version = :v"
    values = {} if version == 0 else {":v": {"N": str(version)}}
    dynamodb.put_item(
        TableName=store,
        Item={
            "pk": {"S": table},
            "sk": {"S": STATE_SORT_KEY},
            "state": {"S": state},
            "version": {"N": str(version + 1)},
        },
        ConditionExpression=condition,
        **({"ExpressionAttributeValues": values} if values else {}),  # type: ignore[arg-type]
    )
