"""Runs in: CDK app (synth time).

The scheduled actions of a global table's replicas, as CloudFormation custom resources:
one resource per replica Region (`ReplicaScheduleResource`), served by one
`custom_resources.Provider` per stack whose function
(``ddb_capacity_runtime.global_tables.handler.on_event``) puts the library's actions on
that Region's scalable targets and removes them again. It acts as each table's own role
(`ScheduleRole`, which only the function may assume): that role may tag, and then
schedule, only its table's targets in its replicas' Regions, and every resource of the
table is created after it and its grant and deleted before them. The function's own
policy names no table, so tables may be ordered among themselves freely."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, Unpack

from aws_cdk import (
    Aws,
    CfnResource,
    CustomResource,
    Duration,
    Lazy,
    RemovalPolicy,
    Stack,
    custom_resources,
)
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sns as sns
from constructs import Construct

from ddb_capacity_runtime.core.errors import CapacityConfigError, shown
from ddb_capacity_runtime.core.names import OWNER_TAG, TARGET_TAG
from ddb_capacity_runtime.global_tables.replica_actions import ACTION_PREFIX

from ..common._alarm_sink import chosen_alarm_topic
from ..common._alarms import FIVE_MINUTES, AlarmOptions, AlarmSet, AlarmSpec, says
from ..common._compliance import acknowledge, skip_checkov
from ..common._deploy_limits import check_policy
from ..common._function_options import FunctionConfig, FunctionDefaults
from ..common._iam_statements import VALIDATION_REASON, autoscaling_validation_statement
from ..common._props import MetricProps, is_token
from ..common._runtime import own_policy, runtime_function
from ..settle._settle_step import FRAMEWORK_MEMORY_MB, acknowledge_provider

PROVIDER_ID = "ReplicaScheduleProvider"
HANDLER = "ddb_capacity_runtime.global_tables.handler.on_event"
REPLICA_DEFAULTS = {
    "ReplicaSchedules": FunctionDefaults(
        256,
        Duration.minutes(2),
        shortest=Duration.seconds(30),
        why="each event tags a replica's targets and puts or deletes its scheduled actions "
        "(at most 200, a few calls each): at least 30 seconds, and Lambda's longest is 15 "
        "minutes",
    )
}
"""The replica-schedule function's defaults and the timeouts it allows
(``function_options["ReplicaSchedules"]`` of ``GlobalTableCapacity``)."""


def scalable_targets_in(region: str) -> str:
    """Every scalable target of the account in ``region`` (generated ARNs: a grant can only
    name them all and narrow them down with conditions)."""
    return (
        f"arn:{Aws.PARTITION}:application-autoscaling:{region}:{Aws.ACCOUNT_ID}:scalable-target/*"
    )


class _ReplicaScheduleProvider(Construct):
    """The stack's replica-schedule function behind a `custom_resources.Provider`; its
    statements grow with the tables and Regions it serves (`serve`)."""

    def __init__(self, scope: Construct, id: str, config: FunctionConfig) -> None:
        super().__init__(scope, id)
        self.config = config
        self.function, self.policy = runtime_function(
            self,
            "Function",
            handler=HANDLER,
            description="Puts and removes the scheduled actions of global tables' replicas",
            config=config,
            configured_by_environment=False,  # its tables come in each event
            # AssumeRole at the function's own Region (older boto3 asks the global endpoint,
            # whose tokens an opt-in Region refuses)
            environment={"AWS_STS_REGIONAL_ENDPOINTS": "regional"},
        )
        log_group = logs.LogGroup(
            self,
            "ProviderLogs",
            retention=config.log_retention,
            removal_policy=RemovalPolicy.DESTROY,
        )
        role = iam.Role(
            self,
            "FrameworkOnEventRole",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description="Execution role of the replica-schedule provider (onEvent)",
        )
        self.provider = custom_resources.Provider(
            self,
            "Provider",
            on_event_handler=self.function,
            log_group=log_group,
            framework_on_event_role=role.without_policy_updates(),
        )
        framework = own_policy(
            self, "FrameworkOnEventPolicy", "the replica-schedule provider", role, log_group
        )
        framework.add_statements(
            iam.PolicyStatement(
                sid="InvokeReplicaScheduleFunction",
                actions=["lambda:InvokeFunction", "lambda:GetFunction"],
                resources=[self.function.function_arn],
            )
        )
        on_event = self.provider.node.find_child("framework-onEvent")
        # created after its role's policy (which names no table, so no cycle), deleted before it
        on_event.node.add_dependency(framework)
        framework_function = on_event.node.default_child
        assert isinstance(framework_function, lambda_.CfnFunction)
        self.framework: lambda_.CfnFunction = framework_function
        self.framework.memory_size = FRAMEWORK_MEMORY_MB
        self._assume = self._own_grant()
        self._acknowledge(log_group)

    def _own_grant(self) -> iam.PolicyStatement:
        """The function's own policy: assuming the tables' roles (the statement returned,
        which `serve` extends); it names no table, so the function is created after it
        and deleted before it."""
        self.function.node.add_dependency(self.policy)
        assume = iam.PolicyStatement(sid="AssumeScheduleRoles", actions=["sts:AssumeRole"])
        self.policy.add_statements(assume)
        return assume

    def serve(
        self, scope: Construct, table: str, regions: Sequence[str]
    ) -> tuple[iam.Role, iam.ManagedPolicy]:
        """The role the function acts as on ``table``'s scalable targets (``scope``'s
        ``ScheduleRole``, which only the function's role may assume) and its grant (its
        ``ScheduleGrant``): tag and schedule them in ``regions``, and nothing else."""
        role = iam.Role(
            scope,
            "ScheduleRole",
            assumed_by=iam.ArnPrincipal(self.function_role.role_arn),
            description="Role the replica-schedule function acts as on one global table",
        )
        grant = iam.ManagedPolicy(
            scope,
            "ScheduleGrant",
            description="Tag and schedule one global table's scalable targets in its Regions",
            roles=[role],
            statements=list(
                _statements(
                    [scalable_targets_in(r) for r in regions], table, role.role_arn
                ).values()
            ),
        )
        self._assume.add_resources(role.role_arn)
        _acknowledge_grant(grant, regions)
        check_policy(grant)
        return role, grant

    def alarm(self, alarms: AlarmConfig) -> None:
        """The function's errors alarm (`ALARM_IDS`), notifying ``alarms.topic``: an event
        that failed, a Delete in an update's clean-up phase too (CloudFormation completes
        the stack then, and only its events say so)."""
        self.alarm_config = alarms
        alarm_set = AlarmSet(
            self, alarms.where, alarms.topic, alarms.options, "GlobalTableCapacity", fold=False
        )
        alarm_set.add(
            "Errors",
            AlarmSpec(
                self.metric_errors(),
                says(
                    "A replica schedule event of a GlobalTableCapacity failed (a deploy, or a "
                    "Delete in an update's clean-up phase, which leaves its actions)"
                ),
                look=(
                    "the replica-schedule-failed (table, Region, cause) and "
                    "replica-schedule-left events in the replica-schedule function's log group"
                ),
                do=(
                    "fix the cause it names; delete the ddb-capacity-... scheduled actions a "
                    "failed Delete left on the table's scalable targets"
                ),
                runbook="Errors (ReplicaScheduleProvider/ErrorsAlarm)",
            ),
        )
        self.alarms = alarm_set.alarms

    def metric_errors(self, **props: Unpack[MetricProps]) -> cloudwatch.Metric:
        """The function's errors (the ``Errors`` alarm's metric): the Sum over 5 minutes
        unless ``props`` say."""
        merged: MetricProps = {"period": FIVE_MINUTES, **props}
        return self.function.metric_errors(**merged)

    @property
    def function_role(self) -> iam.IRole:
        role = self.function.role
        assert role is not None
        return role

    def _acknowledge(self, log_group: logs.LogGroup) -> None:
        acknowledge_provider(
            self,
            "Application Auto Scaling in the replicas' Regions",
            log_group,
            [self.function],
            [self.framework],
        )
        skip_checkov(
            self.function,
            "CKV_AWS_173",
            "The environment holds AWS_STS_REGIONAL_ENDPOINTS, no secret; Lambda encrypts "
            "it at rest with its own key.",
        )
        skip_checkov(
            self.framework,
            "CKV_AWS_173",
            "The environment holds the ARN of the replica-schedule function, no secret; "
            "Lambda encrypts it at rest with its own key.",
        )


def _acknowledge_grant(grant: iam.ManagedPolicy, regions: Sequence[str]) -> None:
    """Why a table's grant reads every target, and names every target of its Regions (and,
    to delete, of any Region)."""
    acknowledge(
        grant,
        "AwsSolutions-IAM5[Resource::*]",
        "DescribeScalableTargets and DescribeScheduledActions have no resource-level "
        f"permissions; they only read. {VALIDATION_REASON}",
    )
    skip_checkov(grant, "CKV_AWS_111", VALIDATION_REASON)
    targets = (
        "AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:application-autoscaling:{}:"
        "<AWS::AccountId>:scalable-target/*]"
    )
    for region in regions:
        shown = region if not is_token(region) else "<AWS::Region>"
        acknowledge(
            grant,
            targets.format(shown),
            "Application Auto Scaling generates scalable-target ARNs, so the grant names "
            "scalable-target/* in each replica Region. Tagging is allowed only with the "
            f"tags {TARGET_TAG} naming this global table and {OWNER_TAG} naming this role; "
            "scheduling only on DynamoDB targets that carry the first.",
        )
    acknowledge(
        grant,
        targets.format("*"),
        f"Deleting scheduled actions and the library's tags, in any Region, only on targets "
        f"whose {OWNER_TAG} tag names this role (it tags the targets it schedules): a Region "
        "dropped from the table, or a table replaced, is no longer named by the grant when "
        "its old resource is deleted. Reading targets' tags, which only reads.",
    )


def _read_targets() -> iam.PolicyStatement:
    """Reading scalable targets and their scheduled actions (no resource-level
    permission)."""
    return iam.PolicyStatement(
        sid="ReadTargets",
        actions=[
            "application-autoscaling:DescribeScalableTargets",
            "application-autoscaling:DescribeScheduledActions",
        ],
        resources=["*"],
    )


def _read_tags(targets: list[str]) -> iam.PolicyStatement:
    """Reading the tags of ``targets``."""
    return iam.PolicyStatement(
        sid="ReadTags", actions=["application-autoscaling:ListTagsForResource"], resources=targets
    )


def _statements(arns: list[str], table: str, role: str) -> dict[str, iam.PolicyStatement]:
    """A table's grant to its role ``role`` (an ARN), by Sid: reading targets; tagging them
    with `TARGET_TAG` naming ``table`` and `OWNER_TAG` naming ``role`` (those tags alone; a
    target whose tag names another table keeps it), putting and deleting scheduled actions
    on the DynamoDB targets tagged for ``table``, and removing the tags, each on the
    scalable targets of ``arns``; and in any Region, deleting scheduled actions and the
    tags where `OWNER_TAG` names ``role`` (a Region dropped from the table, the table
    replaced: a table's name is unique in one Region only)."""
    keys = {"ForAllValues:StringEquals": {"aws:TagKeys": [TARGET_TAG, OWNER_TAG]}}
    tagged = {f"aws:ResourceTag/{TARGET_TAG}": table}
    owned = {f"aws:ResourceTag/{OWNER_TAG}": role}
    dynamodb = {"application-autoscaling:service-namespace": "dynamodb"}
    anywhere = [scalable_targets_in("*")]
    return {
        "ReadTargets": _read_targets(),
        "AutoScalingChecksAlarms": autoscaling_validation_statement(),
        "TagTargets": iam.PolicyStatement(
            sid="TagTargets",
            actions=["application-autoscaling:TagResource"],
            resources=arns,
            conditions={
                "StringEquals": {
                    f"aws:RequestTag/{TARGET_TAG}": table,
                    f"aws:RequestTag/{OWNER_TAG}": role,
                },
                "StringEqualsIfExists": dict(tagged),  # never another table's tag replaced
                **keys,
            },
        ),
        "UntagTargets": iam.PolicyStatement(
            sid="UntagTargets",
            actions=["application-autoscaling:UntagResource"],
            resources=arns,
            conditions={"StringEquals": dict(tagged), **keys},
        ),
        "ScheduleTaggedTargets": iam.PolicyStatement(
            sid="ScheduleTaggedTargets",
            actions=[
                "application-autoscaling:PutScheduledAction",
                "application-autoscaling:DeleteScheduledAction",
            ],
            resources=arns,
            conditions={"StringEquals": {**dynamodb, **tagged}},
        ),
        "ReadTags": _read_tags(anywhere),
        "UntagOwnTargets": iam.PolicyStatement(
            sid="UntagOwnTargets",
            actions=["application-autoscaling:UntagResource"],
            resources=anywhere,
            conditions={"StringEquals": dict(owned), **keys},
        ),
        "UnscheduleOwnTargets": iam.PolicyStatement(
            sid="UnscheduleOwnTargets",
            actions=["application-autoscaling:DeleteScheduledAction"],
            resources=anywhere,
            conditions={"StringEquals": {**dynamodb, **owned}},
        ),
    }


ALARM_IDS = ("Errors",)
"""The replica-schedule function's alarms, by stable id (``alarm_options``)."""


@dataclass(frozen=True)
class AlarmConfig:
    """Where the provider's alarms go, their options (`ALARM_IDS`), and the construct that
    set them (``where``)."""

    topic: sns.ITopic | None
    options: Mapping[str, AlarmOptions]
    where: str


def replica_provider(
    scope: Construct,
    where: str,
    config: FunctionConfig,
    alarm_topic: sns.ITopic | None,
    alarm_options: Mapping[str, AlarmOptions] | None,
) -> _ReplicaScheduleProvider:
    """The stack's one replica-schedule provider, made on first use as ``config``,
    ``alarm_topic`` and ``alarm_options`` say (None: an OpsItem for its alarm, the
    defaults); a later table (``where``) must ask for the same ``config``, and for the same
    alarms where it gives them (None: the provider's)."""
    stack = Stack.of(scope)
    existing = stack.node.try_find_child(PROVIDER_ID)
    if existing is None:
        provider = _ReplicaScheduleProvider(stack, PROVIDER_ID, config)
        topic = chosen_alarm_topic(scope, where, alarm_topic, None)
        provider.alarm(AlarmConfig(topic, dict(alarm_options or {}), where))
        return provider
    assert isinstance(existing, _ReplicaScheduleProvider)
    made = existing.alarm_config
    differs = [
        ("function_options['ReplicaSchedules']", str(config), str(existing.config))
        if config != existing.config
        else None,
        ("alarm_topic", shown(alarm_topic), shown(made.topic))
        if alarm_topic is not None and _arn(alarm_topic) != _arn(made.topic)
        else None,
        ("alarm_options", shown(alarm_options), shown(made.options))
        if alarm_options is not None and _options(alarm_options) != _options(made.options)
        else None,
    ]
    for name, given, first in (d for d in differs if d is not None):
        also = "" if name.startswith("function_options") else " (or give it on that one alone)"
        raise CapacityConfigError(
            f"{where}: {name}: got {given}; but {made.where} made the stack's one "
            f"replica-schedule provider with {first}: every GlobalTableCapacity of a stack "
            f"shares it, so give them the same {name}{also}"
        )
    return existing


def _arn(topic: sns.ITopic | None) -> Any:
    """A topic as its ARN resolves in its stack (two imports of one topic are one); None
    for none (OpsItems)."""
    return None if topic is None else Stack.of(topic).resolve(topic.topic_arn)


def _options(options: Mapping[str, AlarmOptions]) -> list[tuple[Any, ...]]:
    """Each alarm's options with the defaults filled in, for comparing two settings."""
    out = []
    for alarm_id in ALARM_IDS:
        o = options.get(alarm_id, AlarmOptions())
        out.append((o.enabled, o.threshold or 1, o.evaluation_periods or 1, list(o.actions)))
    return out


class NamedActions(Protocol):
    """A replica's actions as the template is written (an `IStableAnyProducer`), each name
    beginning with ``prefix``."""

    prefix: str

    def produce(self, context: Any = None) -> Any: ...


class ReplicaScheduleResource(Construct):
    """One replica's scheduled actions (a ``Custom::ReplicaSchedule`` resource): its
    ``Actions`` are written with the template, after every entry and window is known, each
    named with `action_prefix`: the library's prefix and this resource's own (from its
    construct path), so a resource that takes over another's actions (the construct
    renamed, or its table moved to another stack: CloudFormation creates the new resource,
    then deletes the old one) never has its actions deleted by the old one."""

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        provider: _ReplicaScheduleProvider,
        table_name: str,
        region: str,
        indexes: Sequence[str],
        actions: NamedActions,
        role: iam.IRole,
        grant: iam.ManagedPolicy,
    ) -> None:
        super().__init__(scope, id)
        self.resource = CustomResource(
            self,
            "Resource",
            service_token=provider.provider.service_token,
            resource_type="Custom::ReplicaSchedule",
            properties={
                "TableName": table_name,
                "Region": region,
                "Indexes": list(indexes),
                "Actions": Lazy.any(actions),
                "RoleArn": role.role_arn,
            },
        )
        self.resource.node.add_dependency(grant)  # created after its grant, deleted before
        cfn = self.resource.node.default_child
        assert isinstance(cfn, CfnResource)
        self.cfn = cfn
        self.action_prefix = f"{ACTION_PREFIX}{cfn.node.addr[2:10]}-"
        """What every action's name begins with: `ACTION_PREFIX`, then this resource's own
        (8 hex digits of its construct path's hash, after the "c8" every address begins with)."""
        actions.prefix = self.action_prefix
