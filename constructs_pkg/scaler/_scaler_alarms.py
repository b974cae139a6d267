"""Runs in: CDK app (synth time).

The alarms of [`ThrottleAwareScaler`][]: its function's, its sharded batches', what its
ticks find (targets it holds, tags it refuses, tables pinned at their max, UPDATING or
whose raises cannot be sent, decreases held because a table's metrics were not delivered,
the autopilot's plans not kept), and
each managed table's sustained throttling and hot keys. They are made in the scope of the
scaler (their construct ids, and so the template, are the scaler's own).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from ddb_capacity_runtime.core.names import WORST_TABLE_METRICS
from ddb_capacity_runtime.core.settings import ScalerConfig

from ..common._alarms import (
    ONE_MINUTE,
    AlarmOptions,
    AlarmSet,
    AlarmSpec,
    deployment_metric,
    metric,
    says,
)
from ..common._lazy import lazy_string
from ..common._props import duration_prop
from ._scaler_props import known_duration

if TYPE_CHECKING:
    from aws_cdk import aws_lambda as lambda_

    from ._batches import BatchPath

NAMESPACE = "DynamoDBCapacity"

THROTTLED = "Throttled"
"""The summary alarm of the tables' sustained throttling and hot keys."""
STUCK = "Stuck"
"""The summary alarm of tables the scaler cannot raise: at their max, or UPDATING."""

LOG = "the scaler function's log group"
"""Where a scaler's alarm sends its on-call engineer first."""


def worst(metric_name: str, events: str) -> str:
    """Where to look first for an alarm on the worst table of the deployment: the metric
    by ``TableName`` that names the table, then ``events`` of the scaler's log."""
    return (
        f"the {metric_name} metric by TableName (namespace {NAMESPACE}) for which table, "
        f"then {events} in {LOG}"
    )


FINDINGS: dict[str, tuple[str, str, str, str, str]] = {
    "BadTargets": (
        "BadTargets",
        "targets with min > max, worst table",
        "A managed table has a scalable target whose minimum is above its maximum; the scaler "
        "holds that dimension until the target is fixed",
        "the target-held warnings (target_min, target_max)",
        "set a consistent range: redeploy the stack that owns the target, or "
        "register-scalable-target with a minimum no higher than the maximum",
    ),
    "RefusedTags": (
        "RefusedTags",
        "tags refused, worst table",
        "A managed table has a min or max tag the scaler does not obey: it would lower a "
        "limit below what the dimension consumes at its target utilization, or put its min "
        "above its max (one refused while the consumption is not known is only logged, not "
        "counted)",
        "the tag-refused warnings (key, value, consumed, needs, reason)",
        "correct or remove the tag (CloudTrail TagResource: who wrote it); reserve the "
        "library's tag keys if nobody meant to",
    ),
    "IgnoredTags": (
        "IgnoredTags",
        "tags and stored items ignored, worst table",
        "A managed table has a library tag the scaler ignores (malformed, or out of bounds: "
        "the defaults stand for it), or an item in the state store it ignores (a hold, a plan "
        "or a base no writer of the library could have written)",
        "the tag-ignored, plan-ignored, base-unread and holds-dropped warnings",
        "correct or remove the tag; for a store item, find what else writes the state store; "
        "for a base, set the dimension's minimum back by hand (register-scalable-target "
        "--min-capacity)",
    ),
    "TargetNotOwned": (
        "TargetsNotOwned",
        "target values not owned, worst table",
        "A managed table's dimension has no target-tracking policy the scaler can write back "
        "whole (a predefined metric and nothing else): the autopilot does not own its target "
        "value, nor does nightly tuning reach it",
        "the target-not-owned warnings (dimension, reason)",
        "give the dimension a target-tracking policy on DynamoDB's predefined utilization "
        "metric, or leave the table out of own_target",
    ),
    "MetricsStalled": (
        "MetricsStalled",
        "decreases held, metrics not delivered, worst table",
        "A managed table was about to be lowered on minutes without a datapoint, but "
        "CloudWatch has delivered none of its provisioned capacity (published every 5 "
        "minutes, traffic or not) for 20 minutes: its metrics may have stopped arriving, so "
        "those minutes are unknown, not idle, and the decrease was held; nor would a "
        "throttle of it be seen",
        "the metrics-stalled warnings (index, dimension, witness: its newest datapoint)",
        "check the table's metrics in CloudWatch (ConsumedReadCapacityUnits, "
        "ProvisionedReadCapacityUnits) and the AWS Health Dashboard; nothing to undo: the "
        "scaler lowers it once they arrive again",
    ),
    "PlansNotKept": (
        "PlansNotKept",
        "plans not kept, worst table",
        "The autopilot's forecast plans for a managed table's dimension could not be kept in "
        "the state store: a capacity request, a restore or a surge held the dimension's lease "
        "at its forecast tick. The dimension reacts alone until the next hour's forecast",
        "the plans-not-kept warnings (table, not_kept)",
        "nothing for once; if the same table recurs hour after hour, find what holds its "
        "lease at that minute",
    ),
}
"""The alarms on the worst table's count of a tick (`ScalerAlarms.per_table`), by id: its
metric, the metric's label, what happened, the events of the scaler's log to look at once
the metric by ``TableName`` named the table, what to do first."""


@dataclass(frozen=True)
class AlarmedScaler:
    """What the scaler's alarms are made of, handed over by the scaler once its function is
    rendered: the alarms' scope (the scaler: their ids are its own), its ``where`` for
    errors, its tick and alarm windows, and what the alarms watch."""

    scope: Construct
    where: str
    tick: Duration
    throttled_for: Duration
    hot_key_ticks: int
    own_target: bool
    function: lambda_.IFunction
    function_timeout: Duration
    dead_letter_queue: sqs.IQueue | None
    """Where failed batches go (a sharded scaler's only)."""
    failed_runs: list[tuple[str, AlarmSpec]]
    """The checks of its function's dropped runs (`ScheduledFunction.failed_runs`)."""
    batches: BatchPath | None
    alarm_topic: sns.ITopic | None
    alarm_options: Mapping[str, AlarmOptions]
    store_name: Callable[[], str]
    """The name of the scaler's state store as the template is written (a connected
    ``CapacityRequests``' hold store once `ThrottleAwareScaler.use_state_store` moved it)."""


class ScalerAlarms:
    """The scaler's alarms (`ThrottleAwareScaler.alarms`), in ``alarm_set``: those of the
    function and the ticks at once, a table's (`throttled`, `hot_key`) as it is added."""

    @functools.cached_property
    def store_name(self) -> str:
        """The name of the scaler's state store, as the template is written (a connected
        ``CapacityRequests``' hold store once `ThrottleAwareScaler.use_state_store` moved
        it): the ``StateStore`` dimension of its counts that are not per table."""
        return lazy_string(self._scaler.store_name)

    def per_table(self, metric_name: str, label: str) -> cloudwatch.Metric:
        """The tick's per-table EMF metric ``metric_name``, the worst table's in each
        tick-long period: its twin for the scaler's deployment (dimension ``StateStore``),
        which each table's record publishes too (`WORST_TABLE_METRICS`); an alarm cannot
        watch a SEARCH over the tables'."""
        if metric_name not in WORST_TABLE_METRICS:
            raise ValueError(f"{metric_name}: the tick publishes no twin of it to alarm on")
        tick = self._scaler.tick
        return deployment_metric(
            NAMESPACE, metric_name, self.store_name, period=tick, statistic="Maximum", label=label
        )

    def __init__(
        self,
        scaler: AlarmedScaler,
        pinned_for: Duration,
        updating_ticks: int,
        settings: ScalerConfig,
    ) -> None:
        self._scaler = o = scaler
        for name, duration in (
            ("pinned_at_max_for", pinned_for),
            ("throttled_for", o.throttled_for),
        ):
            known_duration(o.where, name, duration)
            duration_prop(o.where, name, duration, ONE_MINUTE)
        self.alarm_set = AlarmSet(
            o.scope, o.where, o.alarm_topic, o.alarm_options, "ThrottleAwareScaler"
        )
        self._function()
        self._batches()
        self._tick_findings()
        self._pinned(pinned_for)
        self._updating(updating_ticks)
        self._store()
        if settings.policy.autopilot and not settings.dry_run:  # it keeps plans
            self._plans()

    def _function(self) -> None:
        """The function failed, its ticks were dropped, or it has not run for 3 ticks."""
        o = self._scaler
        add = self.alarm_set.add
        add(
            "Errors",
            AlarmSpec(
                o.function.metric_errors(period=o.tick),
                says(
                    "The capacity scaler failed: a table or a shared AWS call failed in a "
                    "tick, or the function could not start it"
                ),
                look=(
                    f"the tick-done summary, table-failed and shared-call-failed events in {LOG} "
                    f"(the Failures metric by TableName, namespace {NAMESPACE}, names the table)"
                ),
                do=(
                    "fix the reason logged (AccessDenied: tag the table's scalable targets; a "
                    "table that does not exist: remove it from tables; a bad override: fix "
                    "it); throttled AWS calls pass by themselves"
                ),
            ),
        )
        for alarm_id, spec in o.failed_runs:
            add(alarm_id, spec)
        if o.dead_letter_queue is not None:
            self._dead_letters(o.dead_letter_queue)
        self._not_running()

    def _dead_letters(self, queue: sqs.IQueue) -> None:
        """A sharded tick's batch failed into the dead-letter queue."""
        self.alarm_set.add(
            "DeadLetters",
            AlarmSpec(
                queue.metric_approximate_number_of_messages_visible(period=Duration.minutes(5)),
                says(
                    "Batches of a sharded scaler tick failed (a message is on the scaler's "
                    "dead-letter queue)"
                ),
                look=(
                    "the error attributes of the messages on the scaler's dead-letter queue, "
                    "the function's Throttles metric, and whether the Errors alarm fired too"
                ),
                do=(
                    "fix the cause, then purge the queue (nothing needs replaying: every tick "
                    "reads everything afresh)"
                ),
            ),
        )

    def _not_running(self) -> None:
        """No invocation of the function in 3 ticks (no data breaches)."""
        o = self._scaler
        self.alarm_set.add(
            "NotRunning",
            AlarmSpec(
                o.function.metric_invocations(period=Duration.seconds(o.tick.to_seconds() * 3)),
                says("The capacity scaler has not run for 3 ticks"),
                look=(
                    "the scaler's EventBridge schedule rule (enabled?) and its function "
                    "(deleted, reserved concurrency 0, throttled); CloudTrail DisableRule, "
                    "PutFunctionConcurrency, DeleteFunction"
                ),
                do=(
                    "re-enable the rule or redeploy the stack; meanwhile the tables stay under "
                    "stock target tracking"
                ),
                comparison=cloudwatch.ComparisonOperator.LESS_THAN_THRESHOLD,
                missing=cloudwatch.TreatMissingData.BREACHING,
            ),
        )

    def _batches(self) -> None:
        """A batch of a sharded tick failed (its function's errors; the batch itself goes
        to the dead-letter queue), or waited a whole tick on the queue."""
        o = self._scaler
        if o.batches is None:
            return
        self.alarm_set.add(
            "BatchErrors",
            AlarmSpec(
                o.batches.function.metric_errors(period=o.tick),
                says("A batch of the capacity scaler's sharded tick failed"),
                look=(
                    "batch-refused, batch-late, table-failed and shared-call-failed events in "
                    "the batch function's log group"
                ),
                do=(
                    "fix the reason logged, as for the Errors alarm; a refused batch was not "
                    "the scaler's: find its sender (CloudTrail SendMessage), then purge the "
                    "dead letters"
                ),
            ),
        )
        self.alarm_set.add(
            "BatchesLate",
            AlarmSpec(
                o.batches.queue.metric_approximate_age_of_oldest_message(
                    period=ONE_MINUTE, statistic="Maximum"
                ),
                says(
                    "A batch of the capacity scaler's sharded tick waited on its queue past "
                    "its tick and the function's timeout: its tables wait"
                ),
                look=(
                    "the batch function's Duration and Throttles metrics against the tick, and "
                    "TablesFound of the scheduled invocation (the fleet grew)"
                ),
                do="raise batch_concurrency, or lower tables_per_batch",
                # a failed batch stays in flight for the function's timeout before it goes
                # to the dead-letter queue: only older than that is a batch waiting
                threshold=o.tick.to_seconds() + o.function_timeout.to_seconds(),
            ),
        )

    def _tick_findings(self) -> None:
        """A tick found a target it holds, a tag it does not obey or ignores, a decrease it
        held because the table's metrics were not delivered, or (with ``own_target``) a
        target value it cannot own."""
        for alarm_id in ("BadTargets", "RefusedTags", "IgnoredTags", "MetricsStalled"):
            self._finding(alarm_id)
        if self._scaler.own_target:
            self._finding("TargetNotOwned")

    def _finding(self, alarm_id: str) -> None:
        """The alarm ``alarm_id`` of `FINDINGS`: the worst table's count in a tick."""
        metric_name, label, what, events, do = FINDINGS[alarm_id]
        self.alarm_set.add(
            alarm_id,
            AlarmSpec(
                self.per_table(metric_name, label),
                says(what),
                look=worst(metric_name, events),
                do=do,
            ),
        )

    def _store(self) -> None:
        """The tick found an item in the scaler's own state store that no writer of the
        library could have written, and replaced it (a base) or took it over (a lease):
        ``HoldsDropped``, which a connected ``CapacityRequests`` alarms on instead
        (`ThrottleAwareScaler.use_state_store` removes this one)."""
        self.alarm_set.add(
            "HoldsDropped",
            AlarmSpec(
                deployment_metric(
                    NAMESPACE,
                    "HoldsDropped",
                    self.store_name,
                    period=Duration.minutes(5),
                    statistic="Sum",
                    label="state store items replaced or taken over",
                ),
                says(
                    "The scaler's state store held an item no writer of the library could "
                    "have written: a dimension's stored base, replaced by the level it had, "
                    "or a lease, taken over"
                ),
                look=(
                    f"the base-replaced warnings (table, item, base recorded) and "
                    f"lease-taken-over errors in {LOG}"
                ),
                do=(
                    "for a base, set the dimension's minimum back to its configured value "
                    "(register-scalable-target --min-capacity); for a lease, find what else "
                    "writes the state store"
                ),
                runbook="Holds dropped, the scaler's (HoldsDroppedAlarm)",
            ),
        )

    def _plans(self) -> None:
        """The autopilot's plans of a tick that the state store could not keep (made only
        when the scaler keeps plans: autopilot, not a dry run)."""
        self._finding("PlansNotKept")

    def _ticks(self, periods: int) -> str:
        """``periods`` ticks, in words."""
        o = self._scaler
        return Duration.seconds(o.tick.to_seconds() * periods).to_human_string()

    def _pinned(self, pinned_for: Duration) -> None:
        o = self._scaler
        periods = max(1, math.ceil(pinned_for.to_seconds() / o.tick.to_seconds()))
        given = pinned_for.to_human_string()
        self.alarm_set.add(
            "PinnedAtMax",
            AlarmSpec(
                self.per_table("CapacityAtMax", "dimensions at max, worst table"),
                lambda n: (
                    "A managed table has sat at its max for "
                    + (given if n == periods else self._ticks(n))
                ),
                look=worst(
                    "CapacityAtMax",
                    "its consumed capacity and throttle events, and the decision events",
                ),
                do=(
                    "if the load is real, raise the max (up to the table quota) and deploy; "
                    "if not (a runaway job, a retry storm), find its source"
                ),
                evaluation_periods=periods,
                window_prop="pinned_at_max_for",
                group=STUCK,
            ),
        )

    def _updating(self, updating_ticks: int) -> None:
        # one datapoint per tick: a table found UPDATING, or whose raise was left for the
        # next tick (retry-next-tick), by every tick of the window (a tick that finds none
        # sends none, and a missing datapoint is not breaching)
        self.alarm_set.add(
            "Updating",
            AlarmSpec(
                self.per_table("Updating", "tables UPDATING or raises retried, worst table"),
                lambda n: (
                    f"A managed table has been UPDATING, or its raises left for the next "
                    f"tick (retry-next-tick: another update in flight, its capacity moved), "
                    f"for {n} ticks in a row ({self._ticks(n)}): the scaler could not raise "
                    "it"
                ),
                look=worst(
                    "Updating",
                    "the raise-retried warnings (error says why); describe-table (TableStatus, "
                    "IndexStatus)",
                ),
                do=(
                    "wait if the update is expected (a GSI backfill); else find what keeps "
                    "updating it (CloudTrail UpdateTable, RegisterScalableTarget)"
                ),
                evaluation_periods=updating_ticks,
                window_prop="updating_for_ticks",
                every_period=True,
                group=STUCK,
            ),
        )

    def unused_options(self, where: str) -> list[str]:
        """An error for each ``alarm_options`` entry of an alarm this scaler never made
        (asked at synth, once every table is added), naming the option and why."""
        per_table = "it manages no table explicitly (tables found by tag get no per-table alarms)"
        why = {
            "BatchErrors": "it is not sharded (sharded=False)",
            "BatchesLate": "it is not sharded (sharded=False)",
            "TargetNotOwned": "own_target is off",
            "PlansNotKept": "it keeps no plans (mode='reactive', or dry_run=True)",
            "SustainedThrottling": per_table,
            "HotKey": per_table,
        }
        return [
            f"{where}: alarm_options[{a!r}] configures an alarm this scaler never makes: "
            f"{why.get(a, 'its props leave it out')}; remove it"
            for a in self.alarm_set.unused()
        ]

    def hot_key(self, table: dynamodb.ITable, label: str) -> None:
        """The table's hot-key alarm: the key-range throttles the scaler counts for it (its
        GSIs' included) in every tick of ``hot_key_for``. Named after the table, as the
        throttle alarms are."""
        o = self._scaler
        found = metric(
            NAMESPACE,
            "KeyRangeThrottleEvents",
            dimensions_map={"TableName": table.table_name},
            period=o.tick,
        )
        self.alarm_set.add(
            "HotKey",
            AlarmSpec(
                found,
                lambda n: (
                    f"A hot key has throttled this table (the alarm's TableName) or a GSI of "
                    f"it for {self._ticks(n)}: key-range throttles, which more capacity cannot "
                    "fix and the scaler does not raise for"
                ),
                look=(
                    f"the hot-key events (index, dimension, events) in {LOG}; CloudWatch "
                    "Contributor Insights on the table in throttled-keys mode "
                    "(ContributorInsightsMode THROTTLED_KEYS) names the keys"
                ),
                do="spread, shard or cache the hot key's traffic; raising the max does not help",
                runbook="Hot key (HotKey<table>)",
                evaluation_periods=o.hot_key_ticks,
                window_prop="hot_key_for",
                every_period=True,
                group=THROTTLED,
            ),
            construct_id=f"HotKey{label}",
            key=f"HotKey/{label}",
        )

    @functools.cached_property
    def _throttled_minutes(self) -> int:
        """``throttled_for`` in whole minutes, read once for every table's alarm."""
        return max(1, math.ceil(self._scaler.throttled_for.to_seconds() / 60))

    def throttled(
        self, table: dynamodb.ITable, table_label: str, index: str | None, dim: str
    ) -> None:
        dims = {"TableName": table.table_name}
        if index:
            dims["GlobalSecondaryIndexName"] = index
        minutes = self._throttled_minutes
        found = metric(
            "AWS/DynamoDB",
            f"{dim.capitalize()}ThrottleEvents",
            dimensions_map=dims,
            period=ONE_MINUTE,
        )
        # named after the table and index, never after list positions: removing one table
        # leaves every other alarm as it is
        label = f"{table_label}{'' if index is None else '-' + index}-{dim}"
        self.alarm_set.add(
            "SustainedThrottling",
            AlarmSpec(
                found,
                lambda n: (
                    f"Sustained {dim} throttling of this table (the alarm's TableName)"
                    f"{'' if index is None else ', index ' + index}: throttle events in "
                    f"each of {n} minutes in a row, despite the scaler"
                ),
                look=(
                    f"the PinnedAtMax alarm (at its max?), then the decision events of the "
                    f"table's {dim} dimension in {LOG} (status quota-exceeded, "
                    "retry-next-tick, held, error), and the HotKey alarm"
                ),
                do=(
                    "raise the max if it is at it; spread a hot key; ask for capacity before "
                    "work that knows when it starts (capacity requests)"
                ),
                runbook="Throttled (Throttled<table>[-<index>]-<read|write>)",
                evaluation_periods=minutes,
                window_prop="throttled_for",
                every_period=True,
                group=THROTTLED,
            ),
            construct_id=f"Throttled{label}",
            key=f"SustainedThrottling/{label}",
        )
