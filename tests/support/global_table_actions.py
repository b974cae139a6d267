"""The global tables' replica actions, run against a world of targets and tags."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from botocore.stub import Stubber

from ddb_capacity_runtime.core.names import (
    OWNER_TAG,
    TARGET_TAG,
    resource_id,
    scalable_dimension,
)
from ddb_capacity_runtime.global_tables.handler import (
    on_event,
)
from ddb_capacity_runtime.global_tables.replica_actions import ACTION_PREFIX
from ddb_capacity_tools import local_aws

REGIONS = ("us-east-1", "eu-west-1")


TABLE, OTHER, INDEX = "GlobalOrders", "SomeoneElses", "byCustomer"


@pytest.fixture
def targets(moto_endpoint: str) -> Iterator[dict[str, Any]]:
    """Each Region's client, with the global table's targets (table and GSI, read and
    write) and another table's, each target carrying an action the library did not make."""
    clients = {r: local_aws.client(moto_endpoint, "application-autoscaling", r) for r in REGIONS}
    for autoscaling in clients.values():
        for table in (TABLE, OTHER):
            for index in (None, INDEX):
                for dim in ("read", "write"):
                    key = {
                        "ServiceNamespace": "dynamodb",
                        "ResourceId": resource_id(table, index),
                        "ScalableDimension": scalable_dimension(index, dim),
                    }
                    autoscaling.register_scalable_target(**key, MinCapacity=5, MaxCapacity=100)
                    autoscaling.put_scheduled_action(
                        **key,
                        ScheduledActionName="operators-own",
                        Schedule="cron(0 1 * * ? *)",
                        ScalableTargetAction={"MinCapacity": 7},
                    )
    yield clients
    for autoscaling in clients.values():
        for target in autoscaling.describe_scalable_targets(ServiceNamespace="dynamodb")[
            "ScalableTargets"
        ]:
            autoscaling.deregister_scalable_target(
                ServiceNamespace="dynamodb",
                ResourceId=target["ResourceId"],
                ScalableDimension=target["ScalableDimension"],
            )


def action(name: str, dimension: str, minimum: int | str, index: str = "") -> dict[str, Any]:
    return {
        "ScheduledActionName": f"{ACTION_PREFIX}{name}",
        "Schedule": "cron(45 8 ? * MON-FRI *)",
        "Timezone": "Europe/Paris",
        "ScalableTargetAction": {"MinCapacity": str(minimum)},  # as CloudFormation sends it
        "Index": index,
        "Dimension": dimension,
    }


def props(region: str, *actions: dict[str, Any]) -> dict[str, Any]:
    return {"TableName": TABLE, "Region": region, "Indexes": [INDEX], "Actions": list(actions)}


def event(kind: str, new: dict[str, Any], old: dict[str, Any] | None = None) -> dict[str, Any]:
    found: dict[str, Any] = {"RequestType": kind, "ResourceProperties": new}
    if old is not None:
        found["OldResourceProperties"] = old
    if kind != "Create":
        found["PhysicalResourceId"] = f"{TABLE}@{new['Region']}"
    return found


class Tagger:
    """The Region's tagging calls, each expected with its arguments (botocore's Stubber)."""

    def __init__(self, endpoint: str, region: str, autoscaling: Any) -> None:
        self.client = local_aws.client(endpoint, "application-autoscaling", region)
        self.stubber = Stubber(self.client)
        self.autoscaling = autoscaling

    def arns(self, table: str) -> list[str]:
        found = self.autoscaling.describe_scalable_targets(
            ServiceNamespace="dynamodb",
            ResourceIds=[resource_id(table, None), resource_id(table, INDEX)],
        )["ScalableTargets"]
        return sorted(t["ScalableTargetARN"] for t in found)

    def expect_tags(self, owner: str | None = None) -> None:
        """A tag of each of the table's targets (and of the role ``owner`` tagging them)."""
        tags = {TARGET_TAG: TABLE, **({} if owner is None else {OWNER_TAG: owner})}
        for arn in self.arns(TABLE):
            self.stubber.add_response("tag_resource", {}, {"ResourceARN": arn, "Tags": tags})

    def expect_untags(self, but: tuple[str, str] | None = None, owner: str | None = None) -> None:
        """A read of the tags of each of the table's targets, ``but`` one (its resource id
        and scalable dimension), each tagged for the table (and by the role ``owner``), then
        an untag of each (of the role's tag too, where ``owner``)."""
        kept = set()
        if but is not None:
            (target,) = self.autoscaling.describe_scalable_targets(
                ServiceNamespace="dynamodb", ResourceIds=[but[0]], ScalableDimension=but[1]
            )["ScalableTargets"]
            kept.add(target["ScalableTargetARN"])
        tags = {TARGET_TAG: TABLE, **({} if owner is None else {OWNER_TAG: owner})}
        free = sorted(set(self.arns(TABLE)) - kept)
        for arn in free:
            self.stubber.add_response(
                "list_tags_for_resource", {"Tags": tags}, {"ResourceARN": arn}
            )
        keys = [TARGET_TAG, OWNER_TAG] if owner else [TARGET_TAG]
        for arn in free:
            self.stubber.add_response("untag_resource", {}, {"ResourceARN": arn, "TagKeys": keys})


def run(clients: dict[str, Any], tagger: Tagger, ev: dict[str, Any]) -> dict[str, Any]:
    with tagger.stubber:
        answer = on_event(ev, None, clients.__getitem__, lambda _: tagger.client)
        tagger.stubber.assert_no_pending_responses()
    return answer


def actions_in(autoscaling: Any) -> dict[tuple[str, str], dict[str, Any]]:
    """Every scheduled action of the Region, by (resource id, name)."""
    found = autoscaling.describe_scheduled_actions(ServiceNamespace="dynamodb")
    return {(a["ResourceId"], a["ScheduledActionName"]): a for a in found["ScheduledActions"]}


def ours(autoscaling: Any) -> set[tuple[str, str]]:
    return {k for k in actions_in(autoscaling) if k[1].startswith(ACTION_PREFIX)}
