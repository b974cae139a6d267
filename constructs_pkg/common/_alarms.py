"""Runs in: CDK app (synth time).

Alarms and metrics as a construct's surface. `AlarmOptions` is what a user may say
about one alarm (on or off, its threshold, its evaluation periods, more actions), given per
stable alarm id; `AlarmSet` builds a construct's alarms over their defaults with
those options and keeps them by id (a construct's ``alarms``); `emf_metric` is a
construct's ``metric(...)`` on the EMF metrics its functions send, `deployment_metric` the
series of its own deployment of those that are not per table.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Unpack

from aws_cdk import Annotations, Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_sns as sns
from constructs import Construct

from ddb_capacity_runtime.core.errors import CapacityConfigError, shown
from ddb_capacity_runtime.core.validators import is_number
from ddb_capacity_runtime.events import STORE_DIMENSION

from ._alarm_sink import alarm_action
from ._alarm_summary import (
    ALARMS_CONTEXT,
    FAILING,
    MAX_METRICS,
    Check,
    SummaryAlarm,
    alarm_style,
    summary_alarm,
)
from ._props import MetricProps, bool_prop, did_you_mean, duration_seconds, is_token, whole_prop

__all__ = ["AlarmOptions", "AlarmSet", "AlarmSpec", "checked_alarm_options", "emf_metric"]

ALARM_WINDOW_SECONDS = 86_400
"""CloudWatch evaluates an alarm whose period is under an hour over a day at most (period times
evaluation periods; `longest_window`)."""


@dataclass(frozen=True)
class AlarmOptions:
    """What to change of one alarm of a construct (its ``alarm_options``, keyed by the
    alarm's id: ``"Errors"``, ``"PinnedAtMax"``, ...). Unset fields keep the alarm's
    defaults.

    :param enabled: False: the alarm is not made (nor in the construct's ``alarms``); the
        metric is still sent. Default: True.
    :param threshold: the value the alarm compares its metric with, a number above 0.
        Default: the alarm's own (1 for a count: any failure alarms).
    :param evaluation_periods: how many periods in a row must breach, a whole number from 1
        to a day of the alarm's periods (a week of them from a period of an hour on).
        Default: the alarm's own (derived from props such as ``throttled_for`` where it has
        one).
    :param actions: more actions for the alarm (``aws_cloudwatch_actions.SnsAction``, ...),
        besides its topic. Default: none.
    :param description_suffix: text appended to the alarm's description, after the
        library's own (what happened, where to look first, the first action, its runbook
        heading): your team's runbook URL or instructions, say. Plain text, not a token;
        the whole description must fit CloudWatch's 1,024 characters. Default: none.
    """

    enabled: bool = True
    threshold: float | None = None
    evaluation_periods: int | None = None
    actions: Sequence[cloudwatch.IAlarmAction] = ()
    description_suffix: str | None = None


MAX_MORE_ACTIONS = 4
"""The most actions an alarm takes besides its topic's (CloudWatch takes 5 alarm actions)."""

DESCRIPTION_LIMIT = 1024
"""The longest alarm description CloudWatch takes (PutMetricAlarm's AlarmDescription)."""

RUNBOOK_PAGE = "docs/operations/alarms.md"
"""The library's alarm runbook, which every alarm's description names a heading of."""


def checked_alarm_options(
    where: str, known: Sequence[str], options: object
) -> dict[str, AlarmOptions]:
    """``alarm_options`` checked: None, or a mapping from the ids in ``known`` to
    `AlarmOptions` whose fields are each of the allowed kind."""
    if options is None:
        return {}
    if not isinstance(options, Mapping):
        raise CapacityConfigError(
            f"{where}: alarm_options: got {shown(options)}; expected a mapping from an alarm "
            f"id ({', '.join(known)}) to an AlarmOptions, or None"
        )
    for alarm_id, option in options.items():
        name = f"alarm_options[{alarm_id!r}]"
        if alarm_id not in known:
            raise CapacityConfigError(
                f"{where}: alarm_options: unknown alarm id {shown(alarm_id)}"
                + did_you_mean(alarm_id, known)
                + f"; expected one of: {', '.join(known)}"
            )
        if not isinstance(option, AlarmOptions):
            raise CapacityConfigError(
                f"{where}: {name}: got {shown(option)}; expected an AlarmOptions"
            )
        _check_option(where, name, option)
    return dict(options)


def _check_option(where: str, name: str, option: AlarmOptions) -> None:
    bool_prop(where, f"{name}.enabled", option.enabled)
    threshold = option.threshold
    if threshold is not None and not (is_number(threshold) and threshold > 0):
        raise CapacityConfigError(
            f"{where}: {name}.threshold: got {shown(threshold)}; expected a number above 0, "
            "or None (the alarm's own)"
        )
    if option.evaluation_periods is not None:
        whole_prop(where, f"{name}.evaluation_periods", option.evaluation_periods, 1, 1_440)
    actions = option.actions
    if isinstance(actions, str | bytes) or not isinstance(actions, Sequence):
        raise CapacityConfigError(
            f"{where}: {name}.actions: got {shown(actions)}; expected a list of CloudWatch "
            "alarm actions (aws_cloudwatch_actions.SnsAction(topic), say)"
        )
    if len(actions) > MAX_MORE_ACTIONS:
        raise CapacityConfigError(
            f"{where}: {name}.actions: got {len(actions)}; expected at most {MAX_MORE_ACTIONS} "
            f"(CloudWatch takes {MAX_MORE_ACTIONS + 1} alarm actions, and the alarm topic is one)"
        )
    for action in actions:
        if not callable(getattr(action, "bind", None)):
            raise CapacityConfigError(
                f"{where}: {name}.actions: got {shown(action)}; expected a CloudWatch alarm "
                "action (aws_cloudwatch.IAlarmAction: aws_cloudwatch_actions.SnsAction(topic), "
                "say)"
            )
    suffix = option.description_suffix
    if suffix is not None and (
        not isinstance(suffix, str) or not suffix.strip() or is_token(suffix)
    ):
        raise CapacityConfigError(
            f"{where}: {name}.description_suffix: got {shown(suffix)}; expected plain text "
            "that is not blank (not a token: its length is checked at synth), such as your "
            "runbook's URL, or None"
        )


@dataclass(frozen=True)
class AlarmSpec:
    """One alarm's defaults: ``describe`` says what happened, from its evaluation periods;
    ``look``, where to look first (the log group and its events; for an alarm on the worst
    table of a deployment, the metric by ``TableName`` that names the table); ``do``, the
    first thing to do; ``runbook``, its heading in the runbook (`RUNBOOK_PAGE`), by default
    the alarm id in words and the alarm's construct id (``Dead letters (DeadLettersAlarm)``).
    `AlarmSet.add` makes the description of them all. ``every_period``: every evaluation
    period must breach (DatapointsToAlarm set)."""

    metric: cloudwatch.Metric | cloudwatch.MathExpression
    describe: Callable[[int], str]
    look: str
    do: str
    runbook: str = ""
    threshold: float = 1
    evaluation_periods: int = 1
    every_period: bool = False
    comparison: cloudwatch.ComparisonOperator = field(
        default=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD
    )
    missing: cloudwatch.TreatMissingData = field(default=cloudwatch.TreatMissingData.NOT_BREACHING)
    window_prop: str = ""
    """The prop that sets ``evaluation_periods``, named when its window is too long."""
    group: str = ""
    """The summary alarm it folds into (`_alarm_summary`): by default ``Failing`` for a check
    of one period; a check of a longer window without a group is an alarm of its own."""


def longest_window(period_seconds: float) -> float:
    """CloudWatch's longest alarm window (periods x period) at a period: a day below an
    hour, a week from an hour on (PutMetricAlarm)."""
    return ALARM_WINDOW_SECONDS if period_seconds < 3600 else 7 * ALARM_WINDOW_SECONDS


def says(description: str) -> Callable[[int], str]:
    """What happened, not depending on the evaluation periods."""
    return lambda _periods: description


def in_words(alarm_id: str) -> str:
    """An alarm id as its runbook heading names it: ``DeadLetters``, ``Dead letters``."""
    words = re.findall(r"[A-Z][a-z]*", alarm_id)
    return " ".join([words[0], *(w.lower() for w in words[1:])]) if words else alarm_id


class AlarmSet:
    """A construct's alarms, by stable id: each made from its `AlarmSpec` with the
    construct's `AlarmOptions` over it, notifying ``topic`` (else opening an OpsItem) and the
    option's actions. In the app's summary style (`alarm_style`, the default), a check given
    no option is folded into its group's summary alarm instead. ``alarms`` is the read-only
    view a construct returns: each check's id to the alarm that watches it."""

    def __init__(
        self,
        owner: Construct,
        where: str,
        topic: sns.ITopic | None,
        options: Mapping[str, AlarmOptions],
        section: str,
        *,
        fold: bool = True,
    ) -> None:
        self._owner, self._where, self._options = owner, where, options
        self._section = section
        """The runbook's section of the construct's alarms (its class name)."""
        self._notify = alarm_action(topic)
        """The alarms' action, one object for every alarm of the set (it keeps no state)."""
        self._summary = fold and alarm_style(owner) == "summary"
        """Whether checks fold into summary alarms: the app's style, unless ``fold`` is
        False (a construct of one check, one a stack, whose alarm users add actions to)."""
        self._groups: dict[str, list[SummaryAlarm]] = {}
        self._alarms: dict[str, cloudwatch.IAlarm] = {}
        self.alarms: Mapping[str, cloudwatch.IAlarm] = MappingProxyType(self._alarms)
        self._asked: set[str] = set()
        """Every id `add` was asked for, an alarm its options turn off included."""
        for alarm_id in sorted(i for i, o in options.items() if not o.enabled):
            Annotations.of(owner).add_warning_v2(
                f"ddb-capacity:alarm-off:{alarm_id}",
                f"{where}: alarm {alarm_id} is off (alarm_options): its metric is still sent, "
                "but nothing alarms on it",
            )

    def add(
        self, alarm_id: str, spec: AlarmSpec, *, construct_id: str = "", key: str = ""
    ) -> cloudwatch.Alarm | None:
        """The alarm ``alarm_id`` (child ``construct_id``, default ``<alarm_id>Alarm``; kept
        as ``key``, default ``alarm_id``), or None when its options turn it off."""
        self._asked.add(alarm_id)
        option = self._options.get(alarm_id, AlarmOptions())
        if not option.enabled:
            return None
        periods = option.evaluation_periods or spec.evaluation_periods
        self._check_window(alarm_id, spec, option.evaluation_periods)
        if self._folds(alarm_id, spec):
            self._fold(alarm_id, spec, key or alarm_id)
            return None
        construct_id = construct_id or f"{alarm_id}Alarm"
        alarm = spec.metric.create_alarm(
            self._owner,
            construct_id,
            threshold=spec.threshold if option.threshold is None else option.threshold,
            evaluation_periods=periods,
            datapoints_to_alarm=periods if spec.every_period else None,
            comparison_operator=spec.comparison,
            treat_missing_data=spec.missing,
            alarm_description=self._description(alarm_id, spec, construct_id, periods, option),
        )
        alarm.add_alarm_action(self._notify, *option.actions)
        self._alarms[key or alarm_id] = alarm
        return alarm

    def _description(
        self, alarm_id: str, spec: AlarmSpec, construct_id: str, periods: int, option: AlarmOptions
    ) -> str:
        """The alarm's description: what happened, where to look first, what to do first,
        its runbook heading, then the option's ``description_suffix``; refused over
        CloudWatch's `DESCRIPTION_LIMIT` (the deploy would fail), naming what to shorten."""
        heading = spec.runbook or f"{in_words(alarm_id)} ({construct_id})"
        said = (
            f"{spec.describe(periods).rstrip('.')}. Look first: {spec.look}. Do: {spec.do}. "
            f"Runbook: {heading} under {self._section} in {RUNBOOK_PAGE}."
        )
        suffix = option.description_suffix
        if suffix is None:
            if len(said) > DESCRIPTION_LIMIT:
                raise CapacityConfigError(
                    f"{self._where}: alarm {construct_id}: its description is {len(said)} "
                    f"characters; CloudWatch takes at most {DESCRIPTION_LIMIT} (a shorter "
                    "index name, say)"
                )
            return said
        room = DESCRIPTION_LIMIT - len(said) - 1
        if len(suffix) > room:
            raise CapacityConfigError(
                f"{self._where}: alarm_options[{alarm_id!r}].description_suffix: got "
                f"{len(suffix)} characters; expected at most {max(room, 0)} for alarm "
                f"{construct_id} (its own description is {len(said)} characters, and "
                f"CloudWatch takes {DESCRIPTION_LIMIT} in all)"
            )
        return f"{said} {suffix}"

    def _folds(self, alarm_id: str, spec: AlarmSpec) -> bool:
        """Whether the check goes into a summary alarm: the summary style, no option given
        for it, a metric (not an expression), and a group (or a window of one period)."""
        return (
            self._summary
            and alarm_id not in self._options
            and isinstance(spec.metric, cloudwatch.Metric)
            and bool(spec.group or (spec.evaluation_periods == 1 and not spec.every_period))
        )

    def _fold(self, alarm_id: str, spec: AlarmSpec, key: str) -> None:
        """Add the check to its group's last summary alarm, or to a new one when that one
        watches `MAX_METRICS` already."""
        assert isinstance(spec.metric, cloudwatch.Metric)
        group = spec.group or FAILING
        alarms = self._groups.setdefault(group, [])
        if not alarms or len(alarms[-1].checks) >= MAX_METRICS:
            n = len(alarms) + 1
            construct_id = f"{group}{'' if n == 1 else n}Alarm"
            made = summary_alarm(self._owner, construct_id, self._summary_description)
            made.cfn.alarm_actions = [self._notify.bind(self._owner, made.alarm).alarm_action_arn]
            alarms.append(made)
        period = duration_seconds(spec.metric.period) or 60
        alarms[-1].checks.append(
            Check(
                alarm_id,
                key,
                key.replace("/", " "),
                spec.metric,
                spec.threshold,
                spec.comparison,
                spec.missing == cloudwatch.TreatMissingData.BREACHING,
                period * spec.evaluation_periods,
            )
        )
        self._alarms[key] = alarms[-1].alarm

    def _summary_description(self, alarm: SummaryAlarm) -> str:
        """A summary alarm's description: its checks, and where each is explained."""
        counts: dict[str, int] = {}
        for check in alarm.checks:
            counts[check.alarm_id] = counts.get(check.alarm_id, 0) + 1
        named = ", ".join(f"{a} ({n})" if n > 1 else a for a, n in counts.items())
        said = (
            f"One or more checks of {self._where} breached: {named}. Look first: the alarm's "
            "graph, whose metrics are labelled with their checks (a check is 1 in the "
            "'checks breached' sum while it breaches). Do: what the check's heading under "
            f"{self._section} in {RUNBOOK_PAGE} says (where to look, the first action). "
            f"To alarm on a check alone, give it alarm_options, or set the context "
            f"{ALARMS_CONTEXT} to detailed."
        )
        return said if len(said) <= DESCRIPTION_LIMIT else said[: DESCRIPTION_LIMIT - 1] + "…"

    def unused(self) -> list[str]:
        """The ids given options that no alarm was asked for (so far): options that do
        nothing."""
        return sorted(set(self._options) - self._asked)

    def remove(self, alarm_id: str) -> None:
        """Remove the alarm ``alarm_id`` (kept under that key), if it was made, or its check
        from its summary alarm (the summary alarm too once it has no check left)."""
        alarm = self._alarms.pop(alarm_id, None)
        if alarm is None:
            return
        for alarms in self._groups.values():
            for summary in alarms:
                if summary.alarm is alarm:
                    summary.checks[:] = [c for c in summary.checks if c.key != alarm_id]
                    if not summary.checks:
                        self._owner.node.try_remove_child(summary.cfn.node.id)
                        self._owner.node.try_remove_child(summary.alarm.node.id)
                        alarms.remove(summary)
                    return
        self._owner.node.try_remove_child(alarm.node.id)

    def _check_window(self, alarm_id: str, spec: AlarmSpec, periods: int | None) -> None:
        """The alarm's window (periods x period) within CloudWatch's longest (`longest_window`),
        else the deploy would fail: ``periods`` (its ``alarm_options``) a whole number up to
        it, or, when None, the spec's own (a prop's, rounded up to whole periods), refused
        naming that prop."""
        period = duration_seconds(spec.metric.period)
        if period is None:
            return
        most, human = longest_window(period), Duration.seconds
        if periods is not None:
            whole_prop(
                f"{self._where} ({human(most).to_human_string()} of "
                f"{human(period).to_human_string()} periods)",
                f"alarm_options[{alarm_id!r}].evaluation_periods",
                periods,
                1,
                int(most // period),
            )
            return
        window = spec.evaluation_periods * period
        if window > most:
            raise CapacityConfigError(
                f"{self._where}: {spec.window_prop or 'a prop'}: alarm {alarm_id} would watch "
                f"{spec.evaluation_periods} periods of {human(period).to_human_string()} "
                f"({human(window).to_human_string()}); CloudWatch watches at most "
                f"{human(most).to_human_string()} at that period: give a shorter one"
            )


ONE_MINUTE = Duration.minutes(1)
FIVE_MINUTES = Duration.minutes(5)
"""Periods the constructs' metrics share (a Duration is immutable: one object serves all)."""


def metric(namespace: str, metric_name: str, **props: Unpack[MetricProps]) -> cloudwatch.Metric:
    """The one factory of the constructs' metrics, for their alarms and their ``metric_*``
    methods: ``metric_name`` of ``namespace``, the Sum over 5 minutes unless ``props`` say
    otherwise."""
    merged: MetricProps = {"statistic": "Sum", "period": FIVE_MINUTES, **props}
    return cloudwatch.Metric(namespace=namespace, metric_name=metric_name, **merged)


def deployment_metric(
    namespace: str, metric_name: str, store: str, **props: Unpack[MetricProps]
) -> cloudwatch.Metric:
    """A count a deployment's functions send that is not per table (`metric`): its series of
    dimension ``StateStore``, the name of the state store ``store`` (the functions'), never
    another deployment's of the account and Region."""
    merged: MetricProps = {**props}
    merged["dimensions_map"] = {STORE_DIMENSION: store, **props.get("dimensions_map", {})}
    return metric(namespace, metric_name, **merged)


def emf_metric(
    where: str,
    namespace: str,
    known: Mapping[str, str],
    metric_name: str,
    table_name: str | None,
    default_period: Duration,
    props: MetricProps,
    store: str,
) -> cloudwatch.Metric:
    """The EMF metric ``metric_name`` of ``namespace``: one of ``known`` (name to where it
    is sent: ``"table"``, per table, dimension ``TableName``; ``"run"``, for the deployment,
    dimension ``StateStore``: ``store``, the name of its functions' state store; ``"both"``),
    for ``table_name`` or for the deployment. Default statistic Sum, default period
    ``default_period``; ``props`` win."""
    scope = known.get(metric_name)
    if scope is None:
        raise CapacityConfigError(
            f"{where}: metric: got {shown(metric_name)}; expected one of the metrics it "
            f"sends: {', '.join(sorted(known))}"
        )
    needs = ""
    if scope == "table" and table_name is None:
        needs = "needs table_name (it is sent per table)"
    elif scope == "run" and table_name is not None:
        needs = "is sent once a run, for the deployment, with no TableName: leave table_name out"
    if needs:
        raise CapacityConfigError(
            f"{where}: metric {metric_name!r} {needs}; got table_name={shown(table_name)}"
        )
    merged: MetricProps = {"statistic": "Sum", "period": default_period, **props}
    if table_name is None:
        return deployment_metric(namespace, metric_name, store, **merged)
    merged["dimensions_map"] = {"TableName": table_name, **props.get("dimensions_map", {})}
    return metric(namespace, metric_name, **merged)
