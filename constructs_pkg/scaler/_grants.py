"""Runs in: CDK app (synth time).

The least-privilege IAM of [`ThrottleAwareScaler`][constructs_pkg.scaler.ThrottleAwareScaler]:
reading metrics, targets and the table quota; describing, updating and listing the tags of
the tables it manages (by ARN, or by tag); moving the minimums (and, with ``own_target``,
the target values) of their scalable targets only; forgetting 0.4's state tags, and nothing
else. Every statement is in the scaler's managed policy."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aws_cdk import Aws
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam

from ddb_capacity_runtime.core.names import SCALER_TAGS, TARGET_TAG

from ..common._compliance import acknowledge_all, skip_checkov
from ..common._iam_statements import (
    SCALABLE_TARGETS_FINDING,
    VALIDATION_REASON,
    autoscaling_validation_statement,
    move_minimums_statement,
    read_autoscaling_statement,
    scalable_targets_reason,
    set_target_values_statement,
)
from ..common._lazy import lazy_list

TABLE_ACTIONS = ["dynamodb:DescribeTable", "dynamodb:UpdateTable", "dynamodb:ListTagsOfResource"]
"""What the scaler does to a table it manages."""


class ScalerGrants:
    """The statements of the scaler's ``policy``: those it always needs, those of the tables
    tagged ``tag_key=tag_value`` (none without a ``tag_key``), and those that grow with the
    tables it manages (`table`) and the target values it owns (`owned`)."""

    def __init__(self, policy: iam.ManagedPolicy, tag_key: str | None, tag_value: str) -> None:
        self._policy = policy
        self._tag_key, self._tag_value = tag_key, tag_value
        self._forget_state_tags: iam.PolicyStatement | None = None
        self._manage_tables: iam.PolicyStatement | None = None
        self._set_target_values: iam.PolicyStatement | None = None
        self._tables: list[dynamodb.ITable] = []
        policy.add_statements(
            read_autoscaling_statement(),
            iam.PolicyStatement(
                sid="ReadMetrics", actions=["cloudwatch:GetMetricData"], resources=["*"]
            ),
            # the account's table quota, where above table_quota, bounds levels and minimums
            iam.PolicyStatement(
                sid="ReadTableQuota", actions=["dynamodb:DescribeLimits"], resources=["*"]
            ),
            autoscaling_validation_statement(),
        )  # no PutMetricData: the tick's metrics are EMF lines in its own log
        skip_checkov(policy, "CKV_AWS_111", VALIDATION_REASON)
        if tag_key:
            self._tagged(tag_key, tag_value)

    def table(self, table: dynamodb.ITable) -> None:
        """Describe, update and list the tags of ``table``; forget its state tags; move the
        minimums of its scalable targets (one statement of each for every explicit table:
        the managed policy holds 6,144 characters at most)."""
        self._tables.append(table)
        if self._manage_tables is None:
            self._manage_tables = iam.PolicyStatement(
                sid="ManageTables", actions=list(TABLE_ACTIONS), resources=[table.table_arn]
            )
            self._policy.add_statements(self._manage_tables)
        else:
            self._manage_tables.add_resources(table.table_arn)
        if self._forget_state_tags is None:
            self._forget_state_tags = _forget_state_tags("ForgetStateTags", [table.table_arn])
            # every explicit table's name, written when the template is
            names = lazy_list(lambda: [t.table_name for t in self._tables])
            move = move_minimums_statement("MoveMinimums", TARGET_TAG, names)
            self._policy.add_statements(self._forget_state_tags, move)
        else:
            self._forget_state_tags.add_resources(table.table_arn)

    def owned(self, names: Callable[[], list[str]]) -> None:
        """Write the target-tracking policies of the targets of the tables ``names()`` says
        when the template is written (every table whose target values it owns)."""
        if self._set_target_values is None:
            self._set_target_values = set_target_values_statement(
                "SetOwnedTargetValues", TARGET_TAG, lazy_list(names)
            )
            self._policy.add_statements(self._set_target_values)

    def _tagged(self, key: str, value: str) -> None:
        """Find the tables tagged ``key=value``, and manage them as `table` does, by an
        ``aws:ResourceTag`` condition."""
        tables = f"arn:{Aws.PARTITION}:dynamodb:{Aws.REGION}:{Aws.ACCOUNT_ID}:table/*"
        self._policy.add_statements(
            iam.PolicyStatement(
                sid="DiscoverTables", actions=["tag:GetResources"], resources=["*"]
            ),
            iam.PolicyStatement(
                sid="ManageTaggedTables",
                actions=list(TABLE_ACTIONS),
                resources=[tables],
                conditions={"StringEquals": {f"aws:ResourceTag/{key}": value}},
            ),
            _forget_state_tags(
                "ForgetStateTagsOnTaggedTables",
                [tables],
                {"StringEquals": {f"aws:ResourceTag/{key}": value}},
            ),
            # a tag-discovered table's targets are adopted only if they carry the tag too
            move_minimums_statement("MoveMinimumsOfTaggedTargets", key, [value]),
        )

    def acknowledge(self) -> None:
        """The wildcards cdk-nag finds in the policy, each with what it still allows."""
        tag_key, tag_value = self._tag_key, self._tag_value
        wildcards = {
            "Resource::*": "DescribeScalableTargets, DescribeScalingPolicies, GetMetricData, "
            "DescribeLimits and tag:GetResources have no resource-level permissions; they "
            "only read. " + VALIDATION_REASON,
            SCALABLE_TARGETS_FINDING: scalable_targets_reason(
                f"{TARGET_TAG} with the name of a table the scaler manages"
                + (f", or tagged {tag_key}={tag_value}" if tag_key else ""),
                "the ProvisionedTables it manages (own_target)" if self._set_target_values else "",
            ),
        }
        if tag_key:
            wildcards[
                "Resource::arn:<AWS::Partition>:dynamodb:<AWS::Region>:<AWS::AccountId>:table/*"
            ] = (
                f"Tables found by tag are only known at run time; the "
                f"statement is limited to tables tagged "
                f"{tag_key}={tag_value} by an aws:ResourceTag "
                f"condition."
            )
        acknowledge_all(
            self._policy, {f"AwsSolutions-IAM5[{r}]": reason for r, reason in wildcards.items()}
        )


def _forget_state_tags(
    sid: str, resources: list[str], conditions: dict[str, Any] | None = None
) -> iam.PolicyStatement:
    """Removing the state tags 0.4 wrote (its base-min memory and its forecast plans), once
    the run-time has moved them into the state store; nothing else. The scaler writes no
    tag: it can neither add nor change the discovery tag, nor remove any other tag."""
    return iam.PolicyStatement(
        sid=sid,
        actions=["dynamodb:UntagResource"],
        resources=resources,
        conditions={
            **(conditions or {}),
            "ForAllValues:StringLike": {"aws:TagKeys": [f"{k}*" for k in SCALER_TAGS]},
        },
    )
