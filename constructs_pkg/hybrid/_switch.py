"""Runs in: CDK app (synth time).

The stack's on-demand switch: one function (`ddb_capacity_runtime.hybrid.handler`) with its
own state store, invoked by EventBridge Scheduler at each window's start and end (learned
windows: at :55 and :00 of every hour) and every 15 minutes (`CHECK_AT`) to finish what a
start or end left (a missed end, a deploy that made the table provisioned underneath). Only
its role may call ``dynamodb:UpdateTable``, and only on the tables given windows (and their
indexes); it registers only those tables' scalable targets. Its refusals, failures and errors
fold into the stack's one ``Failing`` alarm of the switch.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from aws_cdk import Annotations, Duration, Stack
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_scheduler as scheduler
from constructs import Construct

if TYPE_CHECKING:
    from aws_cdk import aws_lambda as lambda_

from ddb_capacity_runtime.core.errors import CapacityConfigError
from ddb_capacity_runtime.core.names import METRICS_NAMESPACE, STORE_ENV, TARGET_TAG
from ddb_capacity_runtime.hybrid.held import HOLD_STORES_ENV
from ddb_capacity_runtime.schedule.on_demand_windows import OnDemandWindow

from ..common._alarms import AlarmSet, AlarmSpec, deployment_metric, says
from ..common._compliance import acknowledge, acknowledge_all
from ..common._function_options import (
    FunctionConfig,
    FunctionDefaults,
    FunctionOptions,
    function_configs,
)
from ..common._iam_statements import (
    HOLD_STORE_ACTIONS,
    SCALABLE_TARGETS_FINDING,
    autoscaling_validation_statement,
    move_minimums_statement,
    read_autoscaling_statement,
    scalable_targets_reason,
    state_store_statement,
)
from ..common._lazy import lazy_any, lazy_json, lazy_list
from ..common._runtime import runtime_function, state_store_table
from ..common._scheduled_function import acknowledge_control_plane_function

SWITCH_ID = "OnDemandSwitch"
LEARNED_AT = "cron(0,55 * * * ? *)"
"""When the learned windows' run comes (UTC): at :55 it starts the next hour's window, at :00
it ends the last hour's (`ddb_capacity_runtime.hybrid.learning`)."""
CHECK_AT = "cron(7/15 * * * ? *)"
"""When the switch checks its tables between the windows' own starts and ends (UTC): every
15 minutes from :07, clear of the learned windows' runs (:55 and :00)
and of the hours' and half-hours' window starts and ends, so that two invocations rarely act
on one table at once (the second's write of its state would fail, counted)."""
FUNCTION = "Switch"
"""The switch function's name in ``function_options``."""
FUNCTION_DEFAULTS = {
    FUNCTION: FunctionDefaults(
        256,
        Duration.minutes(2),
        shortest=Duration.minutes(1),
        why="a check serves every table of the stack, each a few calls and, for a held "
        "table, a wait of up to 20 seconds for each held dimension's lease",
    )
}
"""The switch function's defaults (256 MB, 2 minutes) and the timeouts its work allows."""
HANDLER = "ddb_capacity_runtime.hybrid.handler.lambda_handler"
ASYNC_REASON = (
    "EventBridge Scheduler retries an invocation it could not deliver (twice, within 15 "
    "minutes); one that failed is not retried (an invocation acting beside the next run would "
    "fail the second's state write): every failure is counted (SwitchFailed, SwitchRefused, "
    "Errors) and alarmed, and the check every 15 minutes, or a learned table's next hourly run, "
    "finishes what a failed one left, so a dead-letter queue would keep nothing of use."
)


@dataclass(frozen=True)
class LearnedWindows:
    """A table's learned on-demand windows (``learn_on_demand_windows``): the target its
    on-demand hours are costed at as provisioned, and its on-demand maximums."""

    target_utilization: int
    max_read_request_units: int
    max_write_request_units: int


@dataclass(frozen=True)
class _Table:
    name: str
    arn: str


class OnDemandSwitch(Construct):
    """The stack's switch (`on_demand_switch` makes it once): its function, state store,
    scheduler role, check schedule and alarm; each window adds its two schedules."""

    def __init__(self, scope: Construct, id: str, config: FunctionConfig) -> None:
        super().__init__(scope, id)
        self.config = config  # its function's settings (`switch_config`)
        self._tables: dict[str, _Table] = {}
        self._learned: dict[str, LearnedWindows] = {}
        self._hold_stores: list[tuple[dynamodb.ITable, dynamodb.ITable]] = []
        self.store = state_store_table(
            self,
            "StateStore",
            contents="each switched table's billing history and its targets before a window",
            backup_reason="It holds run-time state only: a table's item is written again at "
            "its next window, and the table itself keeps its billing mode.",
        )
        self.function, self.policy = runtime_function(
            self,
            "Function",
            handler=HANDLER,
            description="the on-demand switch of DynamoDB tables' on-demand windows",
            config=self.config,
            environment={STORE_ENV: self.store.table_name},
        )
        _acknowledge_function(self.function)
        self.function.configure_async_invoke(retry_attempts=0)
        self._grant()
        self.role = iam.Role(
            self,
            "SchedulerRole",
            assumed_by=iam.ServicePrincipal("scheduler.amazonaws.com"),
            description="Lets EventBridge Scheduler invoke the on-demand switch",
        )
        iam.ManagedPolicy(
            self,
            "SchedulerPolicy",
            description="Lets EventBridge Scheduler invoke the on-demand switch, nothing else",
            roles=[self.role],
            statements=[
                iam.PolicyStatement(
                    sid="InvokeSwitch",
                    actions=["lambda:InvokeFunction"],
                    resources=[self.function.function_arn],
                )
            ],
        )
        self._schedule(
            self,
            "Check",
            CHECK_AT,
            None,
            {
                "Action": "check",
                "Tables": lazy_list(lambda: sorted(self._tables)),
            },
        )
        self.alarms = self._alarms()

    def _grant(self) -> None:
        """The function's grants: its state store; DescribeTable and UpdateTable on its
        tables and their indexes alone; their targets registered (tagged with their names);
        their metrics read (what a table served at a window's end, a learned table's days)."""
        arns = lazy_list(
            lambda: [
                arn
                for t in sorted(self._tables.values(), key=lambda t: t.name)
                for arn in (t.arn, f"{t.arn}/index/*")
            ]
        )
        names = lazy_list(lambda: sorted(self._tables))
        self.policy.add_statements(
            state_store_statement(
                "StateStore", self.store, ["dynamodb:GetItem", "dynamodb:PutItem"]
            ),
            iam.PolicyStatement(
                sid="SwitchTables",
                actions=["dynamodb:DescribeTable", "dynamodb:UpdateTable"],
                resources=arns,
            ),
            read_autoscaling_statement(policies=False),
            iam.PolicyStatement(
                sid="ReadMetrics", actions=["cloudwatch:GetMetricData"], resources=["*"]
            ),
            move_minimums_statement("SuspendTargets", TARGET_TAG, names),
            autoscaling_validation_statement(),
        )
        acknowledge(
            self.policy,
            "AwsSolutions-IAM5[Resource::*]",
            "DescribeScalableTargets and GetMetricData (a window's end reads what its table "
            "served) have no resource-level permissions, and Application Auto Scaling checks "
            "CloudWatch alarm permissions of a caller that changes a target.",
        )
        acknowledge(
            self.policy,
            f"AwsSolutions-IAM5[{SCALABLE_TARGETS_FINDING}]",
            scalable_targets_reason("with the names of the tables given on-demand windows"),
        )

    def read_holds(self, table: dynamodb.ITable, store: dynamodb.ITable) -> None:
        """Let the function read and lease ``table``'s capacity holds in ``store``, the hold
        store of the ``CapacityRequests`` that serves it (``CAPACITY_WINDOW_HOLD_STORES``,
        and the hold store's actions on the items of the table's name alone): a window's end
        returns the table no lower than its holds, and sets their minimums as a request
        does. A store of another stack is not read, with a warning (the two stacks would
        depend on each other)."""
        if Stack.of(store) is not Stack.of(self):
            Annotations.of(self).add_warning_v2(
                "ddb-capacity:switch-holds-elsewhere",
                f"the on-demand switch does not read the capacity holds of {store.node.path}, "
                "a hold store of another stack: a request made during a window is not held "
                "when the table returns to provisioned; put the CapacityRequests in the "
                "table's stack",
            )
            return
        if not self._hold_stores:
            self.function.add_environment(
                HOLD_STORES_ENV,
                lazy_json(
                    self, lambda: [[t.table_name, s.table_name] for t, s in self._hold_stores]
                ),
            )
        self._hold_stores.append((table, store))
        self.policy.add_statements(
            iam.PolicyStatement(
                sid=f"Holds{len(self._hold_stores)}",
                actions=list(HOLD_STORE_ACTIONS),
                resources=[store.table_arn],
                conditions={
                    "ForAllValues:StringEquals": {"dynamodb:LeadingKeys": [table.table_name]}
                },
            )
        )

    def _schedule(
        self,
        scope: Construct,
        id: str,
        expression: str,
        time_zone: str | None,
        payload: dict[str, object],
    ) -> scheduler.CfnSchedule:
        return scheduler.CfnSchedule(
            scope,
            id,
            schedule_expression=expression,
            schedule_expression_timezone=time_zone,
            flexible_time_window=scheduler.CfnSchedule.FlexibleTimeWindowProperty(mode="OFF"),
            target=scheduler.CfnSchedule.TargetProperty(
                arn=self.function.function_arn,
                role_arn=self.role.role_arn,
                input=Stack.of(self).to_json_string(payload),
                retry_policy=scheduler.CfnSchedule.RetryPolicyProperty(
                    maximum_event_age_in_seconds=900, maximum_retry_attempts=2
                ),
            ),
        )

    def _add_table(self, table: dynamodb.ITable) -> str:
        """``table`` among the switch's (its grants and its check); its name."""
        name = table.table_name
        if name not in self._tables:
            self._tables[name] = _Table(name, table.table_arn)
            acknowledge(
                self.policy,
                f"AwsSolutions-IAM5[Resource::{_index_arns(table)}]",
                "UpdateTable of a table that has GSIs is authorized on its indexes too; the "
                "grant names this table's indexes alone.",
            )
        return name

    def add_learned(self, table: dynamodb.ITable, learned: LearnedWindows) -> None:
        """``table``'s learned windows: the table among the switch's, and among the tables of
        the hourly run (`LEARNED_AT`), made with the first."""
        name = self._add_table(table)
        if not self._learned:
            self._schedule(
                self,
                "Learned",
                LEARNED_AT,
                None,
                {"Action": "learned", "Tables": lazy_any(self._learned_tables)},
            )
        self._learned[name] = learned

    def _learned_tables(self) -> list[dict[str, object]]:
        return [
            {
                "Table": name,
                "TargetUtilization": w.target_utilization,
                "MaxReadRequestUnits": w.max_read_request_units,
                "MaxWriteRequestUnits": w.max_write_request_units,
            }
            for name, w in sorted(self._learned.items())
        ]

    def add_window(self, scope: Construct, table: dynamodb.ITable, window: OnDemandWindow) -> None:
        """The two schedules of ``window`` on ``table`` (children of ``scope``: ``Start``
        and ``End``), and the table among the switch's."""
        name = self._add_table(table)
        seconds = int(window.duration.total_seconds())
        start = {
            "Action": "start",
            "Table": name,
            "Window": window.name,
            "DurationSeconds": seconds,
            "MaxReadRequestUnits": window.max_read_request_units,
            "MaxWriteRequestUnits": window.max_write_request_units,
        }
        zone = window.time_zone
        self._schedule(scope, "Start", window.start_schedule, zone, start)
        self._schedule(scope, "End", window.end_schedule, zone, {"Action": "end", "Table": name})

    def _alarms(self) -> object:
        alarm_set = AlarmSet(
            self, f"the on-demand switch {self.node.path}", None, {}, "OnDemandSwitch"
        )
        store = self.store.table_name
        checks = {
            "SwitchFailed": "A window's switch of a table's billing mode failed (the table "
            "stays as it was: on-demand past its window's end, or provisioned through it)",
            "SwitchRefused": "A window's switch to on-demand was refused: the table had used "
            "DynamoDB's 4 switches to on-demand of the rolling 24 hours, or was on-demand by "
            "other hands",
        }
        for metric_name, said in checks.items():
            alarm_set.add(
                metric_name,
                AlarmSpec(
                    deployment_metric(METRICS_NAMESPACE, metric_name, store),
                    says(said),
                    look="the switch-failed events of the switch function's log group (table, "
                    "action, error); the metric by TableName names the table",
                    do="fix what the error names; the check every 15 minutes tries an end "
                    "again, and the next window's start comes on its own",
                ),
            )
        alarm_set.add(
            "Errors",
            AlarmSpec(
                self.function.metric_errors(period=Duration.minutes(5)),
                says("The on-demand switch function failed"),
                look="the switch function's log group",
                do="fix what the log names",
            ),
        )
        return alarm_set.alarms


def _acknowledge_function(function: lambda_.Function) -> None:
    """The switch function's findings that do not apply, acknowledged with their reasons."""
    acknowledge_control_plane_function(function, "DynamoDB and Application Auto Scaling")
    acknowledge_all(
        function,
        {f"{p}-LambdaDLQ": ASYNC_REASON for p in ("Serverless", "HIPAA.Security", "NIST.800.53.R5")}
        | {f"{p}-LambdaConcurrency": ASYNC_REASON for p in ("HIPAA.Security", "NIST.800.53.R5")}
        | {"Serverless-LambdaAsyncFailureDestination": ASYNC_REASON},
    )


def _index_arns(table: dynamodb.ITable) -> str:
    """How cdk-nag prints the ARN of ``table``'s indexes: its own table's by its logical id,
    one imported by name by its name."""
    cfn = table.node.default_child
    if isinstance(cfn, dynamodb.CfnTable):
        return f"<{Stack.of(cfn).get_logical_id(cfn)}.Arn>/index/*"
    return (
        "arn:<AWS::Partition>:dynamodb:<AWS::Region>:<AWS::AccountId>:table/"
        f"{table.table_name}/index/*"
    )


def switch_config(where: str, options: Mapping[str, FunctionOptions] | None) -> FunctionConfig:
    """``function_options`` of a window (only ``"Switch"``), checked and merged over the
    switch function's defaults."""
    return function_configs(where, options, FUNCTION_DEFAULTS)[FUNCTION]


def on_demand_switch(
    scope: Construct, where: str = "", options: Mapping[str, FunctionOptions] | None = None
) -> OnDemandSwitch:
    """The stack's one switch, made on first use with ``options`` (a window's
    ``function_options``, checked and named by ``where``); options given later must say
    what the switch has."""
    stack = Stack.of(scope)
    config = switch_config(where, options) if options is not None else None
    existing = stack.node.try_find_child(SWITCH_ID)
    if existing is None:
        return OnDemandSwitch(stack, SWITCH_ID, config or switch_config(where, None))
    assert isinstance(existing, OnDemandSwitch)
    if config is not None and config != existing.config:
        raise CapacityConfigError(
            f"{where}: function_options: got {config} for the stack's on-demand switch, which "
            f"has {existing.config} already (one switch a stack): give the same "
            "function_options with every window of the stack, or with its first window only"
        )
    return existing
