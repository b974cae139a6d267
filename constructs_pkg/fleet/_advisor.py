"""Runs in: CDK app (synth time).

``FleetAdvisor``: the fleet report of every table of the account and Region, made nightly
in the account, on SQS to Lambda (`ddb_capacity_tools.fleet_lambda`).

One function (``worker``) does the three steps, each on its own trigger. An EventBridge rule
runs the list step at a daily UTC time (``schedule``): it lists the tables, writes the run's
manifest to the report bucket and sends one message per table to the ``Tables`` queue; the
queue's event source (batch size 1, at most ``max_concurrency`` at once) has it advise one
table and write its result; a second rule, ``report_delay`` after the first, runs the report
step, which writes ``runs/<run-id>/report.csv|json|html`` and the same under ``latest/``. A
message that fails three times, and a scheduled run that fails, go to the dead-letter queue;
it, the ``Failures``, ``TablesFailed`` and ``TablesMissing`` metrics alarm to ``topic``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from aws_cdk import Aws, Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from ddb_capacity_runtime.core.errors import CapacityConfigError
from ddb_capacity_tools.fleet_settings import (
    MAX_DAYS,
    NAMESPACE,
    REPORT_BUCKET_DIMENSION,
    AdvisorSettings,
)

from ..common._alarm_sink import chosen_alarm_topic
from ..common._alarms import AlarmOptions, AlarmSet, AlarmSpec, checked_alarm_options, metric, says
from ..common._compliance import acknowledge, acknowledge_all, skip_checkov
from ..common._function_options import (
    FunctionDefaults,
    FunctionOptions,
    function_configs,
)
from ..common._iam_statements import read_autoscaling_statement
from ..common._props import duration_prop, known_at_synth, whole_prop
from ..common._runtime import advisor_code, runtime_function
from ..common._scheduled_function import (
    _configure_failed_runs,
    _dead_letter_queue,
    acknowledge_control_plane_function,
    dead_letters,
)

__all__ = ["FleetAdvisor"]

DEFAULT_SCHEDULE = events.CronOptions(minute="0", hour="2")
"""The listing's default time: 02:00 UTC, every day."""
DEFAULT_REPORT_DELAY = Duration.hours(3)
DEFAULT_MAX_CONCURRENCY = 10
"""Workers at once: 10 advise about 1,800 tables of 14 days in 3 hours at 61 s a table
(benchmarks/fleet_report.py; docs: Fleet report, "Limits")."""
DEFAULT_WORKER_MEMORY = 1769
"""One full vCPU: a table's advice is single-threaded simulation."""
DEFAULT_RETENTION = Duration.days(90)
DEFAULT_DAYS = 14
WORKER_TIMEOUT = Duration.minutes(15)
"""Lambda's longest run: the function advises one table within it (and lists and reports within
it too), unless function_options say."""
MAX_RECEIVES = 3
"""A message is received this many times before it goes to the dead-letter queue."""
CANDIDATE_KINDS = ("stock", "autopilot", "on-demand", "hybrid", "windows")
"""The kinds of policy ``advise`` can recommend (``candidates``)."""
PACKS_VPC = ("HIPAA.Security", "NIST.800.53.R5", "PCI.DSS.321")
ALARM_IDS = ("DeadLetters", "Failures", "TablesFailed", "TablesMissing")
"""The alarms, by stable id (``alarm_options``, ``alarms``)."""


def function_defaults(worker_memory_size: int) -> dict[str, FunctionDefaults]:
    """The function's defaults (``function_options``): it may run 1 to 15 minutes."""
    return {
        "Worker": FunctionDefaults(worker_memory_size, WORKER_TIMEOUT, shortest=Duration.minutes(1))
    }


STEPS = ("list", "report")
"""The scheduled steps of the advisor's function (`fleet_lambda.advisor_handler`)."""


@dataclass(frozen=True, kw_only=True)
class FleetAdvisorProps:
    """`FleetAdvisor`'s props, each with its default: the keyword arguments of
    `FleetAdvisor`, which takes them as they are (and checks them)."""

    schedule: events.CronOptions | None = None
    """When the tables are listed, a daily UTC time (minute and hour only). Default: 02:00 UTC."""

    report_delay: Duration = DEFAULT_REPORT_DELAY
    """How long after the listing the report runs (15 minutes to 23 hours, whole minutes);
    tables without a result by then are listed as missing. Default: 3 hours."""

    max_concurrency: int = DEFAULT_MAX_CONCURRENCY
    """Workers at once (the event source's maximum concurrency, 2 to 1,000). Default: 10."""

    days: int = DEFAULT_DAYS
    """Days of CloudWatch history each table is advised on (1 to 14: CloudWatch keeps 1-minute
    datapoints 15 days, and a worker may run a day after its run). Default: 14."""

    candidates: Sequence[str] | None = None
    """The policies tried (as ``advise --candidate``). Default: advise's."""

    worker_memory_size: int = DEFAULT_WORKER_MEMORY
    """The function's memory in MB (1,769 is one vCPU). Default: 1769."""

    report_retention: Duration = DEFAULT_RETENTION
    """How long runs are kept in the bucket. Default: 90 days."""

    alarm_topic: sns.ITopic | None = None
    """Where the alarms go. Default: None, each alarm opens an OpsItem in OpsCenter (no
    topic or key deployed); pass a topic (an `AlarmTopic`'s, say) to be notified."""

    topic: sns.ITopic | None = None
    """The earlier name of ``alarm_topic`` (a warning at synth)."""

    alarm_options: Mapping[str, AlarmOptions] | None = None
    """Per alarm id (``"DeadLetters"``, ``"Failures"``, ``"TablesFailed"``,
    ``"TablesMissing"``), an ``AlarmOptions``: off, another threshold or evaluation periods,
    more actions. Default: every alarm on any count in 5 minutes."""

    function_options: Mapping[str, FunctionOptions] | None = None
    """For the advisor's one function (``"Worker"``: it lists, advises and reports), a
    ``FunctionOptions`` merged over its defaults (``worker_memory_size``; 15 minutes, from 1
    to 15 minutes; logs kept one year; ARM_64). The ``Tables`` queue hides a message six
    times its timeout. A ``memory_size`` here wins over ``worker_memory_size``."""


class FleetAdvisor(Construct):
    """The nightly fleet report of the account and Region (module docstring).

    Its props, each with its default and what it does, are the fields of
    `FleetAdvisorProps`: the keyword arguments here.
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
        schedule: events.CronOptions | None = FleetAdvisorProps.schedule,
        report_delay: Duration = FleetAdvisorProps.report_delay,
        max_concurrency: int = FleetAdvisorProps.max_concurrency,
        days: int = FleetAdvisorProps.days,
        candidates: Sequence[str] | None = FleetAdvisorProps.candidates,
        worker_memory_size: int = FleetAdvisorProps.worker_memory_size,
        report_retention: Duration = FleetAdvisorProps.report_retention,
        alarm_topic: sns.ITopic | None = FleetAdvisorProps.alarm_topic,
        topic: sns.ITopic | None = FleetAdvisorProps.topic,
        alarm_options: Mapping[str, AlarmOptions] | None = FleetAdvisorProps.alarm_options,
        function_options: Mapping[str, FunctionOptions] | None = FleetAdvisorProps.function_options,
    ) -> None:
        super().__init__(scope, id)
        self._where = f"FleetAdvisor {self.node.path}"
        cron = schedule or DEFAULT_SCHEDULE
        start = self._validate(cron, report_delay, max_concurrency, days, worker_memory_size)
        alarm_options = checked_alarm_options(self._where, ALARM_IDS, alarm_options)
        self._functions = function_configs(
            self._where, function_options, function_defaults(worker_memory_size)
        )
        self._check_candidates(candidates or ())
        self.days = days
        """days of CloudWatch history each table is advised on"""
        self.bucket = self._render_bucket(report_retention)
        self.dead_letter_queue = _dead_letter_queue(self, "DynamoDB fleet advisor")
        """failed table messages (after three receives) and failed scheduled runs"""
        self.queue = self._render_queue()
        settings = AdvisorSettings(
            self.bucket.bucket_name,
            self.queue.queue_url,
            days,
            int(report_delay.to_minutes()),
            ",".join(candidates or ()),
        )
        self.alarm_topic = chosen_alarm_topic(self, self._where, alarm_topic, topic)
        self.worker, policy = self._render_worker(settings, max_concurrency)
        """The advisor's one function: it lists the tables, advises each and reports."""
        delayed = (start + int(report_delay.to_minutes())) % 1440
        self.report_minute, self.report_delay_minutes = delayed, settings.report_delay_minutes
        """the report's minute of the day (UTC) and its delay after the listing, in minutes"""
        self.schedules = {
            step: self._schedule(step, minute)
            for step, minute in zip(STEPS, (start, delayed), strict=True)
        }
        """The rules that run the list and the report steps, by step (``"list"``,
        ``"report"``)."""
        self._grant(policy)
        alarm_set = AlarmSet(self, self._where, self.alarm_topic, alarm_options, "FleetAdvisor")
        self._render_alarms(alarm_set)
        self.alarms = alarm_set.alarms
        """The alarms by stable id (read-only); one turned off is absent."""

    # ---------------------------------------------------------------- validation

    def _validate(
        self,
        cron: events.CronOptions,
        delay: Duration,
        concurrency: int,
        days: int,
        memory: int,
    ) -> int:
        """The props, checked; the listing's minute of the day."""
        others = {"day": cron.day, "month": cron.month, "week_day": cron.week_day}
        given = [k for k, v in {**others, "year": cron.year}.items() if v is not None]
        if given:
            raise CapacityConfigError(
                f"{self._where}: schedule: got {given[0]}={getattr(cron, given[0])!r}; "
                "expected a daily time: minute and hour only"
            )
        minute, hour = (
            self._whole("schedule.minute", cron.minute, 59),
            self._whole("schedule.hour", cron.hour, 23),
        )
        duration_prop(self._where, "report_delay", delay, Duration.seconds(0))  # range: below
        known_at_synth(
            self._where,
            "report_delay",
            delay,
            "its minutes set the report's schedule",
            "whole minutes, 15 minutes to 23 hours",
        )
        if delay.to_seconds() % 60:
            raise CapacityConfigError(
                f"{self._where}: report_delay: got {delay.to_human_string()}; expected whole "
                "minutes, 15 minutes to 23 hours"
            )
        delay_minutes = delay.to_minutes()
        if not 15 <= delay_minutes <= 23 * 60:
            raise CapacityConfigError(
                f"{self._where}: report_delay: got {delay_minutes} minutes; expected 15 "
                "minutes to 23 hours"
            )
        for name, value, low, high in (
            ("max_concurrency", concurrency, 2, 1_000),
            ("days", days, 1, MAX_DAYS),
            ("worker_memory_size", memory, 128, 10_240),
        ):
            whole_prop(self._where, name, value, low, high)
        return hour * 60 + minute

    def _whole(self, name: str, text: str | None, high: int) -> int:
        value = "0" if text is None else text
        if not (value.isdigit() and int(value) <= high):
            raise CapacityConfigError(
                f"{self._where}: {name}: got {text!r}; expected a whole number from 0 to {high}"
            )
        return int(value)

    def _check_candidates(self, candidates: Sequence[str]) -> None:
        from ddb_capacity_tools.simulator.candidates import CANDIDATE_HELP
        from ddb_capacity_tools.simulator.policies import PolicyError, parse

        if isinstance(candidates, str | bytes):
            raise CapacityConfigError(
                f"{self._where}: candidates: got {candidates!r}; expected a list of policies "
                f"({CANDIDATE_HELP})"
            )
        for c in candidates:
            if not isinstance(c, str):
                raise CapacityConfigError(
                    f"{self._where}: candidates: got {c!r} (a {type(c).__name__}); expected a "
                    f"policy's name: {CANDIDATE_HELP}"
                )
            try:
                kind = parse(c, option="candidates").kind
            except PolicyError as exc:
                raise CapacityConfigError(f"{self._where}: {exc}") from None
            if kind not in CANDIDATE_KINDS:
                raise CapacityConfigError(
                    f"{self._where}: candidates: got {c!r}; expected {CANDIDATE_HELP}"
                )

    # ---------------------------------------------------------------- storage and queues

    def _render_bucket(self, retention: Duration) -> s3.Bucket:
        duration_prop(
            self._where, "report_retention", retention, Duration.days(1), step=Duration.days(1)
        )
        bucket = s3.Bucket(
            self,
            "Reports",
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            enforce_ssl=True,
            encryption=s3.BucketEncryption.S3_MANAGED,
            lifecycle_rules=[s3.LifecycleRule(id="ExpireRuns", expiration=retention)],
        )
        reasons = {
            "AwsSolutions-S1": "The bucket holds the advisor's own reports, written and read "
            "by its function only; CloudTrail records their API calls, and access "
            "logs would need a second bucket.",
            "S3BucketLoggingEnabled": "As AwsSolutions-S1: the advisor's own reports, "
            "written and read by its function only; CloudTrail records their calls.",
            "S3BucketReplicationEnabled": "Reports are made again every night from "
            "CloudWatch; a replica would keep nothing that is not rebuilt within a day.",
            "S3BucketVersioningEnabled": "Each run writes its own prefix once and latest/ "
            "is a copy of the newest run; a lost report is made again the next night, and "
            "the lifecycle rule expires runs.",
            "S3DefaultEncryptionKMS": "Encrypted at rest with S3-managed keys (SSE-S3); it "
            "holds table names and dollar figures, so a KMS key ($1 a month) would protect "
            "nothing more.",
        }
        for finding, reason in reasons.items():
            packs = ("AwsSolutions",) if finding.startswith("AwsSolutions") else PACKS_VPC
            for pack in packs:
                name = finding if finding.startswith("AwsSolutions") else f"{pack}-{finding}"
                acknowledge(bucket, name, reason)
        skip_checkov(bucket, "CKV_AWS_18", reasons["S3BucketLoggingEnabled"])
        skip_checkov(bucket, "CKV_AWS_21", reasons["S3BucketVersioningEnabled"])
        return bucket

    def _render_queue(self) -> sqs.Queue:
        queue = sqs.Queue(
            self,
            "Tables",
            enforce_ssl=True,
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            # six times the worker's timeout, as AWS advises for an SQS event source: an
            # invocation throttled by the account's concurrency still counts as a receive
            visibility_timeout=Duration.seconds(self._functions["Worker"].timeout.to_seconds() * 6),
            retention_period=Duration.days(1),
            dead_letter_queue=sqs.DeadLetterQueue(
                queue=self.dead_letter_queue, max_receive_count=MAX_RECEIVES
            ),
        )
        skip_checkov(queue, "CKV_AWS_27", _SQS_KEY_REASON)
        return queue

    # ---------------------------------------------------------------- function

    def _render_worker(
        self, settings: AdvisorSettings, concurrency: int
    ) -> tuple[lambda_.Function, iam.ManagedPolicy]:
        """The advisor's one function: the ``Tables`` queue's event source (batch size 1, at
        most ``concurrency`` at once) and two schedules (`_schedule`) invoke it."""
        function, policy = runtime_function(
            self,
            "Worker",
            handler="ddb_capacity_tools.fleet_lambda.advisor_handler",
            description="DynamoDB fleet advisor",
            config=self._functions["Worker"],
            environment=settings.to_env(),
            code=advisor_code(),
            own=[dead_letters(self.dead_letter_queue)],
        )
        acknowledge_control_plane_function(
            function, "DynamoDB, Application Auto Scaling, CloudWatch, SQS, S3"
        )
        # a scheduled run that fails goes to the dead-letter queue, never retried once stale
        _configure_failed_runs(self, function, self.dead_letter_queue, Duration.hours(1))
        unreserved = (
            "The SQS event source's maximum concurrency (max_concurrency) limits the "
            "advising; reserving as much would take it from the account's other functions "
            "all day for a nightly job."
        )
        acknowledge_all(
            function,
            {f"{p}-LambdaConcurrency": unreserved for p in ("HIPAA.Security", "NIST.800.53.R5")},
        )
        skip_checkov(function, "CKV_AWS_115", unreserved)
        source = lambda_.EventSourceMapping(
            self,
            "WorkerSource",
            target=function,
            event_source_arn=self.queue.queue_arn,
            batch_size=1,
            max_concurrency=concurrency,
            report_batch_item_failures=True,
        )
        source.node.add_dependency(policy)
        acknowledge(
            source,
            "Serverless-LambdaEventSourceMappingDestination",
            "SQS event sources take no on-failure destination: a message that fails three "
            "times goes to the queue's dead-letter queue (redrive policy), which alarms.",
        )
        return function, policy

    def _schedule(self, step: str, minute_of_day: int) -> events.Rule:
        """The rule that runs ``step`` of the function daily at ``minute_of_day`` UTC: the
        event's time names the run; a failed run goes to the dead-letter queue."""
        return events.Rule(
            self,
            f"{step.capitalize()}Schedule",
            schedule=events.Schedule.cron(
                minute=str(minute_of_day % 60), hour=str(minute_of_day // 60)
            ),
            description=f"Runs the DynamoDB fleet advisor's {step} step",
            targets=[
                targets.LambdaFunction(
                    self.worker,
                    event=events.RuleTargetInput.from_object(
                        {"step": step, "time": events.EventField.time}
                    ),
                    dead_letter_queue=self.dead_letter_queue,
                    retry_attempts=2,
                    max_event_age=Duration.hours(1),
                )
            ],
        )

    # ---------------------------------------------------------------- permissions

    def _grant(self, policy: iam.ManagedPolicy) -> None:
        runs = self.bucket.arn_for_objects("runs/*")
        policy.add_statements(
            iam.PolicyStatement(sid="ListTables", actions=["dynamodb:ListTables"], resources=["*"]),
            iam.PolicyStatement(
                sid="SendTables", actions=["sqs:SendMessage"], resources=[self.queue.queue_arn]
            ),
            iam.PolicyStatement(
                sid="ReceiveTables",
                actions=[
                    "sqs:ReceiveMessage",
                    "sqs:DeleteMessage",
                    "sqs:ChangeMessageVisibility",
                    "sqs:GetQueueAttributes",
                ],
                resources=[self.queue.queue_arn],
            ),
            iam.PolicyStatement(
                sid="ReadMetrics", actions=["cloudwatch:GetMetricData"], resources=["*"]
            ),
            iam.PolicyStatement(
                sid="DescribeTables",
                actions=["dynamodb:DescribeTable"],
                resources=[f"arn:{Aws.PARTITION}:dynamodb:{Aws.REGION}:{Aws.ACCOUNT_ID}:table/*"],
            ),
            read_autoscaling_statement(),
            iam.PolicyStatement(
                sid="ReadWriteRuns",
                actions=["s3:GetObject", "s3:PutObject"],
                resources=[runs, self.bucket.arn_for_objects("latest/*")],
            ),
            iam.PolicyStatement(
                # a missing result is then NoSuchKey, not AccessDenied; no s3:prefix
                # condition: a GetObject carries none, so S3 would answer 403 again
                sid="ListRuns",
                actions=["s3:ListBucket"],
                resources=[self.bucket.bucket_arn],
            ),
        )
        self._acknowledge_wildcards(policy)

    def _acknowledge_wildcards(self, policy: iam.ManagedPolicy) -> None:
        logical = self.bucket.node.default_child
        assert logical is not None
        ref = f"<{self.bucket.stack.get_logical_id(logical)}.Arn>"  # type: ignore[arg-type]
        acknowledge(
            policy,
            "AwsSolutions-IAM5[Resource::*]",
            "ListTables, GetMetricData, DescribeScalableTargets and DescribeScalingPolicies "
            "have no resource-level permissions: ListTables names the account's tables, the "
            "others only read.",
        )
        acknowledge(
            policy,
            "AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:dynamodb:<AWS::Region>:"
            "<AWS::AccountId>:table/*]",
            "The advisor advises every table of the account and Region, listed at run "
            "time; DescribeTable only reads.",
        )
        for target in (f"{ref}/runs/*", f"{ref}/latest/*"):
            acknowledge(
                policy,
                f"AwsSolutions-IAM5[Resource::{target}]",
                "Each run writes its manifest, its tables' results and its report under "
                "its own prefix (named at run time) and copies the report to latest/.",
            )

    # ---------------------------------------------------------------- alarms

    def _render_alarms(self, alarm_set: AlarmSet) -> None:
        period = Duration.minutes(5)
        logs = "the advisor function's log group"
        metrics: dict[str, tuple[cloudwatch.Metric, str, str, str]] = {
            "DeadLetters": (
                self.dead_letter_queue.metric_approximate_number_of_messages_visible(
                    period=period, statistic="Maximum"
                ),
                "A table message failed three times, or a scheduled run failed",
                f"the advisor's dead-letter queue (a message names its table) and {logs}",
                "fix the cause, then purge the queue; the next night lists every table again",
            ),
        }
        for name, what, look, do in (
            (
                "Failures",
                "The advisor failed (a run, a result not written, a message not its own)",
                f"{logs}: list_failed, messages_not_sent, result_not_written, "
                "invalid_message, no_run, report_failed",
                "as the log says; for invalid_message, find its sender (CloudTrail data "
                "events on the queue)",
            ),
            (
                "TablesFailed",
                "A table could not be advised (access denied, deleted, a malformed answer)",
                "the fleet report's reason for each failed table",
                "as the reason says; the other tables were advised",
            ),
            (
                "TablesMissing",
                "Tables had no result when the report ran",
                "each missing row's reason in the report; the list step's messages_not_sent, "
                "the function's log group and Duration",
                "raise max_concurrency or report_delay; for tables never sent, as the error "
                "code says",
            ),
        ):
            metrics[name] = (
                metric(
                    NAMESPACE,
                    name,
                    period=period,
                    dimensions_map={REPORT_BUCKET_DIMENSION: self.bucket.bucket_name},
                ),
                what,
                look,
                do,
            )
        for name, (made, what, look, do) in metrics.items():
            alarm_set.add(name, AlarmSpec(made, says(what), look=look, do=do))


_SQS_KEY_REASON = (
    "Encrypted at rest with SQS-managed keys (SSE-SQS); a message names a table and a run, "
    "which ListTables shows anyone allowed to list them, so a KMS key ($1 a month) would "
    "protect nothing more."
)
