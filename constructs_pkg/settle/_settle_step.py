"""Runs in: CDK app (synth time).

The settle step of PROVISION_THEN_SETTLE: a CloudFormation custom resource per table,
served by one `custom_resources.Provider` per stack, whose two functions
(`ddb_capacity_runtime.settle.handler`'s `on_event` and `is_complete`) check the step and
settle the table once it is ACTIVE; the provider waits between calls and answers
CloudFormation."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from aws_cdk import Annotations, CfnResource, CustomResource, Duration, RemovalPolicy, Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from ddb_capacity_runtime.core.errors import CapacityConfigError
from ddb_capacity_runtime.core.names import METRICS_NAMESPACE
from ddb_capacity_runtime.settle.settle_plan import (
    FINISH_S,
    SETTLE_FUNCTION_DIMENSION,
    SETTLE_LEFT,
    SETTLE_WAIT_S,
)

from ..common._alarms import AlarmSet, AlarmSpec, metric, says
from ..common._compliance import acknowledge, acknowledge_all, skip_checkov
from ..common._deploy_limits import check_inline_policies
from ..common._function_options import FunctionConfig
from ..common._iam_statements import read_autoscaling_statement
from ..common._runtime import LOG_KEY_REASON, own_policy, runtime_function

if TYPE_CHECKING:
    from aws_cdk import aws_stepfunctions as stepfunctions

PROVIDER_ID = "CapacitySettleProvider"
QUERY_INTERVAL = Duration.seconds(10)
"""How often the provider asks whether the table is ACTIVE and settled."""
TOTAL_TIMEOUT = Duration.seconds(SETTLE_WAIT_S + FINISH_S + 2 * QUERY_INTERVAL.to_seconds())
"""The provider's own time limit (it counts its calls: their time only adds to it): a minute
more than the settle step waits for its table (`SETTLE_WAIT_S`). A step whose own decrease is
still in flight then waits `FINISH_S` more, and the provider asks twice after that, so the
step's own answer (done, or an error naming the table's status) comes first."""
SERVICE_MARGIN = Duration.minutes(2)
"""What CloudFormation waits for the provider beyond its time limit."""
ANSWERED_BY_PROVIDER = (
    "Invoked only by the custom-resource provider, synchronously: every failure reaches "
    "CloudFormation through the provider's response and fails the deployment."
)
"""Why the functions of the settle step need no dead-letter queue."""
ONCE_PER_TABLE = (
    "Runs at deploy time only, for each table created or updated; reserving concurrency "
    "would take it from the account for nothing."
)
"""Why the settle step's functions and the provider's reserve no concurrency."""

SETTLE_FUNCTIONS = (
    ("OnEvent", "on_event", "Checks the settle step of PROVISION_THEN_SETTLE tables"),
    (
        "IsComplete",
        "is_complete",
        "Settles PROVISION_THEN_SETTLE tables from their high-water mark",
    ),
)
"""The settle step's two functions: construct id, handler, description."""
PACKS = ("HIPAA.Security", "NIST.800.53.R5", "PCI.DSS.321")
"""The compliance packs that check functions' DLQs, concurrency and VPCs."""


class _SettleProvider(Construct):
    """The stack's settle step: its two functions (`on_event`, `is_complete`) behind a
    `custom_resources.Provider`, made with ``config``; ``policy`` is `is_complete`'s."""

    def __init__(self, scope: Construct, id: str, config: FunctionConfig) -> None:
        super().__init__(scope, id)
        self.config = config
        made = {
            name: runtime_function(
                self,
                name,
                handler=f"ddb_capacity_runtime.settle.handler.{handler}",
                description=description,
                config=config,
                configured_by_environment=False,  # its tables come in each event
            )
            for name, handler, description in SETTLE_FUNCTIONS
        }
        (on_event, _), (is_complete, self.policy) = made["OnEvent"], made["IsComplete"]
        _grant_reads(self.policy)
        self.alarms = _settle_left_alarm(self, is_complete)
        """The step's alarms by id (``SettleLeft``), each opening an OpsItem."""
        assert is_complete.role is not None
        self.role = is_complete.role
        """The role of `is_complete`, the one function that calls DynamoDB: each step's grant
        on its table is a policy of its own on it (`SettleStep`)."""
        self.grants: list[iam.Policy] = []
        """Those inline policies, one a table: IAM takes 10,240 characters of them a role."""
        check_inline_policies(self.role, lambda: self.grants)
        # its own policy names no table: created before it, deleted after it
        is_complete.node.add_dependency(self.policy)
        log_group = logs.LogGroup(
            self,
            "ProviderLogs",
            retention=config.log_retention,
            removal_policy=RemovalPolicy.DESTROY,
        )
        roles = {name: self._framework_role(name) for name in FRAMEWORK_ROLES}
        from aws_cdk import custom_resources  # only with a settle: a synth without one skips it

        self.provider = custom_resources.Provider(
            self,
            "Provider",
            on_event_handler=on_event,
            is_complete_handler=is_complete,
            query_interval=QUERY_INTERVAL,
            total_timeout=TOTAL_TIMEOUT,
            log_group=log_group,
            # roles whose grants are the policies below, not the provider's inline ones
            framework_on_event_role=roles["OnEvent"].without_policy_updates(),
            framework_complete_and_timeout_role=roles[
                "CompleteAndTimeout"
            ].without_policy_updates(),
        )
        self._grant_framework(roles, log_group, on_event, is_complete)
        self._acknowledge(log_group, on_event, is_complete)

    def _framework_role(self, name: str) -> iam.Role:
        return iam.Role(
            self,
            f"Framework{name}Role",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description=f"Execution role of the settle step's provider ({FRAMEWORK_ROLES[name]})",
        )

    def _grant_framework(
        self,
        roles: dict[str, iam.Role],
        log_group: logs.LogGroup,
        *functions: lambda_.Function,
    ) -> None:
        """What the provider's framework functions may do, in one customer-managed policy a
        role: write their log group, invoke (and wait for) the two settle functions, and,
        for its onEvent, start its waiter."""
        waiter = self._waiter()
        for name, role in roles.items():
            policy = own_policy(
                self, f"Framework{name}Policy", "the settle step's provider", role, log_group
            )
            # each framework function created after its role's policy (which names no
            # table, so no cycle), deleted before it
            for framework in FRAMEWORK_FUNCTIONS[name]:
                self.provider.node.find_child(framework).node.add_dependency(policy)
            policy.add_statements(
                iam.PolicyStatement(
                    sid="InvokeSettleFunctions",
                    actions=["lambda:InvokeFunction", "lambda:GetFunction"],
                    resources=[f.function_arn for f in functions],
                )
            )
            if name == "OnEvent":
                policy.add_statements(
                    iam.PolicyStatement(
                        sid="StartWaiter",
                        actions=["states:StartExecution"],
                        resources=[waiter.ref],  # a state machine's Ref is its ARN
                    )
                )
        for cfn in self._framework_functions():
            cfn.memory_size = FRAMEWORK_MEMORY_MB

    def _framework_functions(self) -> list[lambda_.CfnFunction]:
        """The provider's framework functions: onEvent, isComplete, onTimeout."""
        found = []
        for framework in (f for functions in FRAMEWORK_FUNCTIONS.values() for f in functions):
            cfn = self.provider.node.find_child(framework).node.default_child
            assert isinstance(cfn, lambda_.CfnFunction)
            found.append(cfn)
        return found

    def _waiter(self) -> stepfunctions.CfnStateMachine:
        """The provider's waiter: the state machine that calls is_complete again."""
        from aws_cdk import aws_stepfunctions as stepfunctions  # only with a settle

        cfn = self.provider.node.find_child("waiter-state-machine").node.default_child
        assert isinstance(cfn, stepfunctions.CfnStateMachine)
        return cfn

    def _acknowledge(self, log_group: logs.LogGroup, *functions: lambda_.Function) -> None:
        acknowledge_provider(
            self,
            "DynamoDB (DescribeTable, UpdateTable, a Query of a hold store), CloudWatch "
            "(GetMetricData), Application Auto Scaling (DescribeScalableTargets) and Lambda",
            log_group,
            functions,
            self._framework_functions(),
        )
        for cfn in self._framework_functions():
            skip_checkov(
                cfn,
                "CKV_AWS_173",
                "The environment holds the ARNs of the settle functions and the waiter, no "
                "secret; Lambda encrypts it at rest with its own key.",
            )
        self._acknowledge_waiter()

    def _acknowledge_waiter(self) -> None:
        """The waiter state machine and its role, which the provider makes as it will."""
        waiter = self.provider.node.find_child("waiter-state-machine")
        stack = Stack.of(self)
        for cfn in self._framework_functions()[1:]:  # isComplete, onTimeout
            acknowledge(
                waiter,
                f"AwsSolutions-IAM5[Resource::<{stack.get_logical_id(cfn)}.Arn>:*]",
                "The provider's waiter may invoke its own framework function and that "
                "function's versions (the grant aws-cdk-lib's Provider makes), nothing else.",
            )
        for pack in PACKS:
            acknowledge(
                waiter,
                f"{pack}-IAMNoInlinePolicy",
                "The provider's waiter role and its one inline policy are made by aws-cdk-lib's "
                "Provider, which takes no role for it; the policy only invokes the provider's "
                "two framework functions.",
            )
        for finding in (
            "AwsSolutions-SF1",
            "AwsSolutions-SF2",
            "Serverless-StepFunctionStateMachineXray",
        ):
            acknowledge(
                waiter,
                finding,
                "The waiter only calls is_complete again every 10 seconds at deploy time; "
                "each call logs the table's status in the settle function's log group, and "
                "a failure reaches CloudFormation with its reason.",
            )


def _grant_reads(policy: iam.ManagedPolicy) -> None:
    """``is_complete``'s reads: a live table's traffic (on an Update) and a table's scalable
    targets' minimums now (on a Create and an Update, and again once it lowered): they bound
    how far the table is lowered."""
    policy.add_statements(
        iam.PolicyStatement(
            sid="ReadTraffic", actions=["cloudwatch:GetMetricData"], resources=["*"]
        ),
        read_autoscaling_statement(policies=False),
    )
    acknowledge(
        policy,
        "AwsSolutions-IAM5[Resource::*]",
        "GetMetricData and DescribeScalableTargets have no resource-level permissions; they "
        "only read (a live table's consumed capacity and a table's scalable targets' "
        "minimums, before the settle step lowers it and after).",
    )


def _settle_left_alarm(
    provider: Construct, function: lambda_.Function
) -> Mapping[str, cloudwatch.IAlarm]:
    """``SettleLeft``: the settle function (``function``) left a dimension at its high-water
    mark, or put one back there (its ``SettleLeft`` count, for the function, in 5 minutes),
    opening an OpsItem: the step is the stack's, not a construct's given a topic."""
    alarm_set = AlarmSet(
        provider,
        f"the settle step {provider.node.path}",
        None,
        {},
        "PROVISION_THEN_SETTLE",
        fold=False,  # its one check, one a stack: an alarm users may add an action to
    )
    series = {SETTLE_FUNCTION_DIMENSION: function.function_name}
    alarm_set.add(
        "SettleLeft",
        AlarmSpec(
            metric(METRICS_NAMESPACE, SETTLE_LEFT, dimensions_map=series),
            says(
                "The settle step of PROVISION_THEN_SETTLE left a dimension at its high-water "
                "mark: what bounds its lowering (its traffic, its minimum now, its capacity "
                "holds) could not be read, or the table was ACTIVE too late in the step, so it "
                "was not lowered; or that bound rose while it was being lowered, so it was put "
                "back; the deploy went on"
            ),
            look=(
                "the settle-left warnings (table, index, dimension, reason, consequence) in "
                "the settle function's log group; the metric SettleLeft by TableName names "
                "the table"
            ),
            do=(
                "fix what the reason names (AccessDenied: redeploy the stack's policies); "
                "auto scaling lowers an auto-scaled dimension as its traffic allows, but a "
                "fixed one (no scalable target) stays at its mark until you lower it with "
                "aws dynamodb update-table (the runbook gives the command); one whose "
                "consequence says to raise it, raise it to its mark where its holds or minimum "
                "are above it"
            ),
        ),
    )
    return alarm_set.alarms


FRAMEWORK_ROLES = {"OnEvent": "onEvent", "CompleteAndTimeout": "isComplete and onTimeout"}
"""The provider's framework roles: one for its onEvent function, one shared by its isComplete and
onTimeout functions (two, as aws-cdk-lib asks, so they form no cycle)."""
FRAMEWORK_FUNCTIONS = {
    "OnEvent": ("framework-onEvent",),
    "CompleteAndTimeout": ("framework-isComplete", "framework-onTimeout"),
}
"""The provider's framework functions (their construct ids), by the role of
`FRAMEWORK_ROLES` they run on."""
FRAMEWORK_MEMORY_MB = 128
"""The memory of the provider's framework functions, which only relay events (Lambda's default, set
explicitly)."""


def acknowledge_provider(
    scope: Construct,
    calls: str,
    log_group: logs.LogGroup,
    functions: Sequence[lambda_.Function],
    frameworks: Sequence[lambda_.CfnFunction],
) -> None:
    """The findings of a custom-resource provider's functions (``functions``, which call
    ``calls`` only, and aws-cdk-lib's framework functions ``frameworks``), answered once for
    the whole provider ``scope``: invoked by the provider, at deploy time only."""
    reasons = {
        "Serverless-LambdaDLQ": ANSWERED_BY_PROVIDER,
        "Serverless-LambdaAsyncFailureDestination": ANSWERED_BY_PROVIDER,
        "Serverless-LambdaTracing": "A few calls per table creation; its log lines "
        "record them, tracing adds nothing but cost.",
        **{f"{pack}-LambdaDLQ": ANSWERED_BY_PROVIDER for pack in PACKS},
        **{f"{pack}-LambdaConcurrency": ONCE_PER_TABLE for pack in PACKS[:2]},
        **{
            f"{pack}-LambdaInsideVPC": f"Calls only {calls}; it reaches no resource inside a VPC."
            for pack in PACKS
        },
    }
    acknowledge_all(scope, reasons)
    acknowledge_all(
        log_group, {f"{pack}-CloudWatchLogGroupEncrypted": LOG_KEY_REASON for pack in PACKS}
    )
    skip_checkov(log_group, "CKV_AWS_158", LOG_KEY_REASON)
    for function in [*functions, *frameworks]:
        skip_checkov(function, "CKV_AWS_116", ANSWERED_BY_PROVIDER)
        skip_checkov(function, "CKV_AWS_115", ONCE_PER_TABLE)
    for cfn in frameworks:
        skip_checkov(
            cfn,
            "CKV_AWS_117",
            "The provider's framework calls only Lambda and Step Functions APIs; it "
            "reaches nothing in a VPC.",
        )


def settle_provider(scope: Construct, where: str, config: FunctionConfig) -> _SettleProvider:
    """The stack's one settle step, created on first use as ``config`` says; a later table
    (``where``) must ask for the same ``config``."""
    stack = Stack.of(scope)
    existing = stack.node.try_find_child(PROVIDER_ID)
    if existing is None:
        return _SettleProvider(stack, PROVIDER_ID, config)
    assert isinstance(existing, _SettleProvider)
    if existing.config != config:
        raise CapacityConfigError(
            f"{where}: function_options['Settle']: got {config}; but the stack's one "
            f"settle step ({existing.node.path}) is already made with {existing.config}: "
            "every PROVISION_THEN_SETTLE table of a stack shares it, so give them the same "
            "function_options"
        )
    return existing


INLINE_REASON = (
    "One inline policy for each PROVISION_THEN_SETTLE table, on the settle function's role, "
    "naming that table alone, so the table's settle step can wait for its own grant: one "
    "policy naming every table would make a table ordered after another wait for itself "
    "(a cycle CloudFormation refuses). It allows DescribeTable and UpdateTable on the table "
    "and, for a table a CapacityRequests serves, Query on that construct's hold store."
)
"""Why each table's grant is an inline policy."""


def _grant(scope: Construct, provider: _SettleProvider, table: dynamodb.Table) -> iam.Policy:
    """The settle function's grant on ``table``: DescribeTable and UpdateTable, an inline
    policy of the function's role naming that table alone."""
    cfn_table = table.node.default_child
    assert isinstance(cfn_table, dynamodb.CfnTable)
    grant = iam.Policy(
        scope,
        "Grant",
        roles=[provider.role],
        statements=[
            iam.PolicyStatement(
                sid=f"Settle{Stack.of(table).get_logical_id(cfn_table)}",
                actions=["dynamodb:DescribeTable", "dynamodb:UpdateTable"],
                resources=[table.table_arn],
            )
        ],
    )
    acknowledge_all(grant, {f"{pack}-IAMNoInlinePolicy": INLINE_REASON for pack in PACKS})
    provider.grants.append(grant)
    return grant


class SettleStep(Construct):
    """Lowers a PROVISION_THEN_SETTLE table's dimensions from their high-water mark to
    their operating minimum (on an Update, an auto-scaled one no lower than its traffic
    needs), once, with one UpdateTable (one decrease per counter)."""

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        table: dynamodb.Table,
        where: str,
        config: FunctionConfig,
    ) -> None:
        super().__init__(scope, id)
        self._targets: list[dict[str, Any]] = []
        self._table_name = table.table_name
        provider = settle_provider(self, where, config)
        grant = self._grant = _grant(self, provider, table)
        # Not "Resource": CloudFormation cannot change a custom resource's ServiceToken, so
        # the step served by the provider has a new id, which replaces the one served by a
        # single function before it (the old one's Delete goes to the old function).
        self.resource = CustomResource(
            self,
            "Step",
            service_token=provider.provider.service_token,
            resource_type="Custom::CapacitySettle",
            service_timeout=Duration.seconds(
                TOTAL_TIMEOUT.to_seconds() + SERVICE_MARGIN.to_seconds()
            ),
            properties={"TableName": table.table_name, "Targets": []},
        )
        # called only once its grant is attached, and deleted before it goes; the grant names
        # this table alone, so a table made to depend on another forms no cycle
        self.resource.node.add_dependency(grant)

    def read_holds(self, store: dynamodb.ITable) -> None:
        """Let the step read the table's capacity holds in ``store``, the hold store of the
        ``CapacityRequests`` that serves it (its ``HoldStore`` property, and Query on the
        store in the table's grant, of the table's own items alone: the step queries only
        the partition of its table's name), so it lowers no dimension below its active holds where
        no minimum says them (a fixed capacity, a new table's). A store of another stack
        is not read, with a warning: that stack refers to the table already, so the step
        referring to the store would make the two stacks depend on each other."""
        if Stack.of(store) is not Stack.of(self):
            Annotations.of(self).add_warning_v2(
                "ddb-capacity:settle-holds-elsewhere",
                f"the settle step of table {self.node.scope.node.path if self.node.scope else ''} "
                f"does not read the capacity holds of {store.node.path}, a hold store of another "
                "stack (its stack refers to this one's table, so the step referring to the store "
                "would make the two stacks depend on each other): a new table is settled to "
                "min_capacity whatever it holds; put the CapacityRequests in the table's stack",
            )
            return
        cfn = self.resource.node.default_child
        assert isinstance(cfn, CfnResource)
        cfn.add_property_override("HoldStore", store.table_name)
        self._grant.add_statements(
            iam.PolicyStatement(
                sid="ReadHolds",
                actions=["dynamodb:Query"],
                resources=[store.table_arn],
                conditions={
                    "ForAllValues:StringEquals": {"dynamodb:LeadingKeys": [self._table_name]}
                },
            )
        )

    def add_target(
        self,
        index_name: str | None,
        dimension: str,
        high_water_mark: int,
        operating: int,
        target_utilization: float | None = None,
    ) -> None:
        """One dimension to settle; ``target_utilization``: its auto scaling's target (in
        percent), so an Update lowers it no further than its traffic needs, nor below its
        scalable target's minimum then (None: a fixed capacity, lowered to ``operating``)."""
        target: dict[str, Any] = {
            "Index": index_name or "",
            "Dimension": dimension,
            "HighWaterMark": high_water_mark,
            "Operating": operating,
        }
        if target_utilization is not None:
            target["TargetUtilization"] = target_utilization
        self._targets.append(target)
        cfn = self.resource.node.default_child
        assert isinstance(cfn, CfnResource)
        cfn.add_property_override("Targets", list(self._targets))
