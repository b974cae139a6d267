"""Runs in: CDK app (synth time).

``NightlyTuning``: the loop that keeps each table tuned (opt-in). Every night, a while after
a ``FleetAdvisor``'s report, one function (`ddb_capacity_tools.tuning_lambda`) moves
each target value a ``ThrottleAwareScaler(own_target=True)`` owns toward the table's
recommendation, within ``allowed_targets`` and at most ``max_step`` points a night. It
writes the value where the scaler reads it (the dimension's item in the scaler's state
store), and the scaler's next tick writes it to the target-tracking policy it owns: the
loop never writes a scaling policy, a scalable target or a table, and never switches a
billing mode (an on-demand recommendation is logged as advice, with its dollars).

A construct of its own rather than a prop of ``FleetAdvisor``: the advisor only reads
(every table of the account), the loop writes (the scaler's owned tables' target values);
the write permission, its alarms and its off switch (remove the construct) stay in one
place the app names, next to the two constructs it joins.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from aws_cdk import Duration, Stack
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_sns as sns
from constructs import Construct

from ddb_capacity_runtime.aws.store import TUNED
from ddb_capacity_runtime.core.errors import CapacityConfigError, shown
from ddb_capacity_runtime.core.settings import TUNED_SETTINGS, ScalerConfig
from ddb_capacity_tools.tuning_rules import NAMESPACE, Bounds, SettingsError, TuningSettings

from ..common._alarm_sink import chosen_alarm_topic
from ..common._alarms import (
    AlarmOptions,
    AlarmSet,
    AlarmSpec,
    checked_alarm_options,
    deployment_metric,
    says,
)
from ..common._compliance import acknowledge
from ..common._function_options import FunctionDefaults, FunctionOptions, function_configs
from ..common._lazy import lazy_json, lazy_list, lazy_string
from ..common._props import Checked, bool_prop
from ..common._runtime import advisor_code, runtime_function
from ..common._scheduled_function import (
    _acknowledge_no_dead_letters,
    _configure_failed_runs,
    acknowledge_control_plane_function,
    failed_runs,
    one_run_at_a_time,
)
from ..scaler._scaler import ThrottleAwareScaler
from ..scaler._scaler_alarms import worst
from ._advisor import FleetAdvisor

__all__ = ["NightlyTuning"]

AFTER_REPORT_MINUTES = 30
"""How long after the advisor's report the loop runs."""
DEFAULT_MAX_STEP = 10
"""The default largest step a night, in percentage points."""
FUNCTION_DEFAULTS = {"Tuner": FunctionDefaults(256, Duration.minutes(15), Duration.minutes(1))}
"""15 minutes: about 290 ms a table of four owned dimensions on a local moto server (one GetObject,
a GetItem and an UpdateItem each), so about 3,000 owned tables a run."""
ALARM_IDS = (
    "Changed",
    "Errors",
    "RunsDropped",
    "RunsExpired",
    "Failures",
    "TablesFailed",
    "Unreadable",
    "Refused",
)
"""The alarms, by stable id (``alarm_options``, ``alarms``)."""


TUNING_LOG = "the tuning function's log group"
"""Where the nightly tuning's alarms send their on-call engineer first."""
TUNING_COUNT_ALARMS: tuple[tuple[str, str, str, str, str], ...] = (
    (
        "Changed",
        "TargetsChanged",
        "The nightly tuning changed a target value",
        f"the target-tuned events in {TUNING_LOG} (table, dimension, old, new, why, run id)",
        "nothing if you allow the change; else narrow allowed_targets or max_step",
    ),
    (
        "Failures",
        "Failures",
        "The nightly tuning applied nothing: no fresh fleet report, or its settings "
        "could not be read",
        f"the no-fresh-run and tuning-failed events in {TUNING_LOG}; the FleetAdvisor's alarms",
        "fix the advisor's run; nothing was changed",
    ),
    (
        "TablesFailed",
        "TablesFailed",
        "A table could not be tuned (the state store, S3)",
        f"the table-not-tuned events in {TUNING_LOG}",
        "as the error says; the other tables were tuned",
    ),
    (
        "Unreadable",
        "Unreadable",
        "A table's recommendation, or a tuned value in the state store, could not be "
        "read: nothing changed for that table, or the value was replaced",
        f"the recommendation-unreadable and tuned-value-unreadable events in {TUNING_LOG}",
        "find who wrote it: only the advisor's worker writes its bucket, only the "
        "tuning writes tuned values",
    ),
)
"""The tuning's alarms on its EMF counts in 5 minutes: id, metric, what happened, where to
look first, what to do first."""


@dataclass(frozen=True, kw_only=True)
class NightlyTuningProps:
    """`NightlyTuning`'s props, each with its default: the keyword arguments of
    `NightlyTuning`, which takes them as they are (and checks them)."""

    advisor: FleetAdvisor
    """The ``FleetAdvisor`` whose report it applies; it runs 30 minutes after the report."""

    scaler: ThrottleAwareScaler
    """The ``ThrottleAwareScaler`` whose target values it tunes; it needs ``own_target=True``,
    and tunes every table (and GSI) the scaler owns the target value of. The scaler is told
    to obey the tuned values (``SCALER_TUNED_TARGETS``) that lie in ``allowed_targets``
    (``SCALER_TUNED_ALLOWED``)."""

    allowed_targets: Sequence[int]
    """The target values (whole percentages, 20 to 90) it may set: a set, a list or a ``range``
    (``range(50, 91, 5)``). Nothing outside them is ever set, so their lowest is the lowest
    target value (the most capacity) and their highest the highest (the least)."""

    max_step: int = DEFAULT_MAX_STEP
    """The most percentage points the loop moves one dimension's target value a night, 1 to
    70. It bounds the loop's own moves only: the scaler obeys any stored tuned value among
    ``allowed_targets`` at once, wherever the last one it obeyed was (only the library's
    roles may write the state store). Default: 10."""

    dry_run: bool = False
    """Compute and log every change (``target-tuned`` with ``dry_run``), and count it
    (``TargetsWouldChange``), but change nothing. Default: False."""

    alarm_topic: sns.ITopic | None = None
    """Where the alarms go. Default: None, each alarm opens an OpsItem in OpsCenter (no
    topic or key deployed); pass a topic (an `AlarmTopic`'s, say) to be notified."""

    topic: sns.ITopic | None = None
    """The earlier name of ``alarm_topic`` (a warning at synth)."""

    alarm_options: Mapping[str, AlarmOptions] | None = None
    """Per alarm id (``"Changed"``, ``"Errors"``, ``"RunsDropped"``, ``"RunsExpired"``,
    ``"Failures"``, ``"TablesFailed"``, ``"Unreadable"``, ``"Refused"``), an
    ``AlarmOptions``. Default: every alarm on any count in 5 minutes (``Changed``: a target
    value was changed; ``Refused``: the scaler refused a tuned value outside
    ``allowed_targets``, on any count in a tick)."""

    function_options: Mapping[str, FunctionOptions] | None = None
    """``{"Tuner": FunctionOptions(...)}`` merged over its defaults: 256 MB, 15 minutes (1 to
    15), logs kept one year, ARM_64."""


class NightlyTuning(Construct):
    """The nightly loop that keeps each owned target value tuned (module docstring).

    Its props, each with its default and what it does, are the fields of
    `NightlyTuningProps`: the keyword arguments here.
    """

    @property
    def topic(self) -> sns.ITopic | None:
        """The earlier name of `alarm_topic`."""
        return self.alarm_topic

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        advisor: FleetAdvisor,
        scaler: ThrottleAwareScaler,
        allowed_targets: Sequence[int],
        max_step: int = NightlyTuningProps.max_step,
        dry_run: bool = NightlyTuningProps.dry_run,
        alarm_topic: sns.ITopic | None = NightlyTuningProps.alarm_topic,
        topic: sns.ITopic | None = NightlyTuningProps.topic,
        alarm_options: Mapping[str, AlarmOptions] | None = NightlyTuningProps.alarm_options,
        function_options: Mapping[str, FunctionOptions] | None = (
            NightlyTuningProps.function_options
        ),
    ) -> None:
        super().__init__(scope, id)
        self._where = f"NightlyTuning {self.node.path}"
        bounds = self._validate(advisor, scaler, allowed_targets, max_step, dry_run)
        alarm_options = checked_alarm_options(self._where, ALARM_IDS, alarm_options)
        config = function_configs(self._where, function_options, FUNCTION_DEFAULTS)["Tuner"]
        self.scaler, self.advisor, self.bounds, self.dry_run = scaler, advisor, bounds, dry_run
        settings = TuningSettings(
            advisor.bucket.bucket_name,
            lazy_string(lambda: scaler.state_store.table_name),
            {},
            bounds,
            dry_run,
            advisor.report_delay_minutes,
        )
        env = settings.to_env()
        env["NIGHTLY_TUNING_OWNED"] = lazy_json(scaler, lambda: dict(scaler.owned_targets or {}))
        self.dead_letter_queue = None
        """None: a failed run is counted (its ``Errors``, ``RunsDropped``, ``RunsExpired``),
        not kept; its scheduled event carries nothing to replay."""
        self.function, self.policy = runtime_function(
            self,
            "Function",
            handler="ddb_capacity_tools.tuning_lambda.tuning_handler",
            description="DynamoDB nightly tuning",
            config=config,
            environment=env,
            code=advisor_code(),
        )
        one_run_at_a_time(self.function)
        _configure_failed_runs(self, self.function, None, Duration.hours(1))
        acknowledge_control_plane_function(self.function, "S3, DynamoDB")
        self.rule = self._render_schedule(advisor.report_minute + AFTER_REPORT_MINUTES)
        _acknowledge_no_dead_letters(self, self.function, self.rule, "DynamoDB nightly tuning")
        self._grant()
        tuned = ScalerConfig(tuned_targets=True, tuned_allowed=bounds.allowed)
        for key, value in tuned.to_env(TUNED_SETTINGS).items():
            scaler.add_environment(key, value)
        self.alarm_topic = chosen_alarm_topic(self, self._where, alarm_topic, topic)
        alarm_set = AlarmSet(self, self._where, self.alarm_topic, alarm_options, "NightlyTuning")
        self._render_alarms(alarm_set)
        self.alarms = alarm_set.alarms
        """The alarms by stable id (read-only); one turned off is absent."""
        self.node.add_validation(Checked(self._check_tunable))

    def _validate(
        self,
        advisor: object,
        scaler: object,
        allowed: object,
        max_step: object,
        dry_run: object,
    ) -> Bounds:
        if not isinstance(advisor, FleetAdvisor):
            raise CapacityConfigError(
                f"{self._where}: advisor: got {shown(advisor)}; expected a FleetAdvisor"
            )
        from ddb_capacity_tools.simulator.candidates import MIN_HISTORY_DAYS

        if advisor.days < MIN_HISTORY_DAYS:
            raise CapacityConfigError(
                f"{self._where}: advisor: got a FleetAdvisor with days={advisor.days}; expected "
                f"days of at least {MIN_HISTORY_DAYS}: on less history each recommendation is "
                "a guess (one day to fit on and one to choose on), and the loop would apply it"
            )
        if not isinstance(scaler, ThrottleAwareScaler) or scaler.owned_targets is None:
            got = (
                f"ThrottleAwareScaler {scaler.node.path} without own_target=True"
                if isinstance(scaler, ThrottleAwareScaler)
                else shown(scaler)
            )
            raise CapacityConfigError(
                f"{self._where}: scaler: got {got}; expected a ThrottleAwareScaler with "
                "own_target=True (the loop tunes the target values the scaler owns)"
            )
        bool_prop(self._where, "dry_run", dry_run)
        try:
            return Bounds.checked(self._where, allowed, max_step)
        except SettingsError as exc:
            raise CapacityConfigError(str(exc)) from None

    def _check_tunable(self) -> list[str]:
        """At synth: the scaler owns a target value to tune."""
        if self.scaler.owned_targets:
            return []
        return [
            f"{self._where}: nothing to tune: the scaler owns no target value (add a "
            "ProvisionedTable to the ThrottleAwareScaler with own_target=True)"
        ]

    def _render_schedule(self, minute_of_day: int) -> events.Rule:
        minute = minute_of_day % 1440
        return events.Rule(
            self,
            "Schedule",
            schedule=events.Schedule.cron(minute=str(minute % 60), hour=str(minute // 60)),
            description="Runs the DynamoDB nightly tuning after the fleet report",
            targets=[
                targets.LambdaFunction(
                    self.function,
                    retry_attempts=2,
                    max_event_age=Duration.hours(1),
                )
            ],
        )

    def _grant(self) -> None:
        """Read the advisor's runs; read and write the ``tuned`` attribute of the owned
        tables' items in the scaler's state store, and nothing else."""
        bucket = self.advisor.bucket
        self.policy.add_statements(
            iam.PolicyStatement(
                sid="ReadRuns",
                actions=["s3:GetObject"],
                resources=[bucket.arn_for_objects("runs/*")],
            ),
            iam.PolicyStatement(
                # a missing result is then NoSuchKey, not AccessDenied
                sid="ListRuns",
                actions=["s3:ListBucket"],
                resources=[bucket.bucket_arn],
            ),
            iam.PolicyStatement(
                sid="TuneOwnedTargets",
                actions=["dynamodb:GetItem", "dynamodb:UpdateItem"],
                resources=[lazy_string(lambda: self.scaler.state_store.table_arn)],
                conditions={
                    "ForAllValues:StringEquals": {
                        "dynamodb:LeadingKeys": lazy_list(
                            lambda: list(self.scaler.owned_targets or {})
                        ),
                        "dynamodb:Attributes": ["pk", "sk", TUNED],
                    },
                    # a read or an answer of whole items names no attributes: refused too
                    "StringEqualsIfExists": {
                        "dynamodb:Select": "SPECIFIC_ATTRIBUTES",
                        "dynamodb:ReturnValues": ["NONE", "UPDATED_OLD", "UPDATED_NEW"],
                    },
                },
            ),
        )
        logical = bucket.node.default_child
        assert logical is not None
        ref = f"<{Stack.of(bucket).get_logical_id(logical)}.Arn>"  # type: ignore[arg-type]
        acknowledge(
            self.policy,
            f"AwsSolutions-IAM5[Resource::{ref}/runs/*]",
            "The loop reads the latest run's pointer and the owned tables' results, under "
            "the run's prefix, named at run time; it writes nothing there.",
        )

    def _render_alarms(self, alarm_set: AlarmSet) -> None:
        period = Duration.minutes(5)
        alarm_set.add(
            "Errors",
            AlarmSpec(
                self.function.metric_errors(period=period),
                says("A scheduled run of the nightly tuning failed"),
                look=f"the run's error in {TUNING_LOG}",
                do="fix the cause; the next night runs again",
            ),
        )
        for alarm_id, spec in failed_runs(self.function, self.rule, period, "nightly tuning"):
            alarm_set.add(alarm_id, spec)
        for name, metric_name, what, look, do in TUNING_COUNT_ALARMS:
            alarm_set.add(
                name,
                AlarmSpec(
                    deployment_metric(
                        NAMESPACE,
                        metric_name,
                        lazy_string(lambda: self.scaler.state_store.table_name),
                        period=period,
                    ),
                    says(what),
                    look=look,
                    do=do,
                ),
            )
        # the worst table's count in a tick: its twin for the scaler's deployment
        refused = self.scaler.metric(
            "RefusedTunedTargets", statistic="Maximum", label="tuned values refused, worst table"
        )
        alarm_set.add(
            "Refused",
            AlarmSpec(
                refused,
                says(
                    "The scaler refused a tuned target value outside allowed_targets and aims "
                    "at the configured one"
                ),
                look=worst("RefusedTunedTargets", "the tuned-target-refused warnings"),
                do="nothing if you narrowed allowed_targets; else find who wrote the item",
            ),
        )
