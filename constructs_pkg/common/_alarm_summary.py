"""Runs in: CDK app (synth time).

A construct's summary alarms: its checks (each an `AlarmSpec`) folded into a few metric-math
alarms, one a group (``Failing``: any failure in one period; a construct names its other
groups, e.g. the scaler's ``Throttled``), at most `MAX_METRICS` checks an alarm (CloudWatch's
limit; a fuller group gets ``<group>2``, ...). Each check becomes a 0-or-1 term of the alarm's
expression, its metric labelled with its check, so the alarm's graph names the check that
breached. `ALARMS_CONTEXT` chooses the alarms of the whole app: ``summary`` (the default) or
``detailed`` (one alarm a check, as `AlarmSet` makes them).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

from aws_cdk import aws_cloudwatch as cloudwatch
from constructs import Construct

from ddb_capacity_runtime.core.errors import CapacityConfigError, shown

from ._lazy import lazy_any, lazy_number, lazy_string

ALARMS_CONTEXT = "ddb-capacity:alarms"
"""The context key that chooses the library's alarms for the app: ``summary`` (default) or
``detailed``."""
ALARM_STYLES = ("summary", "detailed")

MAX_METRICS = 10
"""The most metrics one alarm watches (PutMetricAlarm: 10 MetricStat queries)."""

FAILING = "Failing"
"""The group of the checks that breach in one period (any failure, a function's errors)."""

Cmp = cloudwatch.ComparisonOperator
_OPERATORS: dict[cloudwatch.ComparisonOperator, tuple[str, Callable[[float, float], bool]]] = {
    Cmp.GREATER_THAN_OR_EQUAL_TO_THRESHOLD: (">=", lambda v, t: v >= t),
    Cmp.GREATER_THAN_THRESHOLD: (">", lambda v, t: v > t),
    Cmp.LESS_THAN_THRESHOLD: ("<", lambda v, t: v < t),
    Cmp.LESS_THAN_OR_EQUAL_TO_THRESHOLD: ("<=", lambda v, t: v <= t),
}


def alarm_style(scope: Construct) -> str:
    """The app's `ALARMS_CONTEXT`, checked: ``summary`` when unset."""
    style = scope.node.try_get_context(ALARMS_CONTEXT)
    if style is None:
        return "summary"
    if style not in ALARM_STYLES:
        raise CapacityConfigError(
            f"context {ALARMS_CONTEXT}: got {shown(style)}; expected one of: "
            f"{', '.join(ALARM_STYLES)} (summary when unset)"
        )
    return str(style)


@dataclass(frozen=True)
class Check:
    """One check of a summary alarm: its id, its key in the construct's ``alarms``, its
    metric, and when it breaches (threshold, comparison, missing data, window)."""

    alarm_id: str
    key: str
    label: str
    metric: cloudwatch.Metric
    threshold: float
    comparison: cloudwatch.ComparisonOperator
    breaching_when_missing: bool
    window_seconds: float

    @property
    def period(self) -> float:
        return float(self.metric.period.to_seconds())

    def term(self, qid: str) -> str:
        """The check as a 0-or-1 expression of its metric ``qid``: missing data is filled
        with a value that breaches exactly when the check's missing data does."""
        op, compare = _OPERATORS[self.comparison]
        fill = next(
            v
            for v in (0, self.threshold, self.threshold + 1, self.threshold - 1)
            if compare(v, self.threshold) == self.breaching_when_missing
        )
        return f"IF(FILL({qid}, {fill:g}) {op} {self.threshold:g}, 1, 0)"


@dataclass
class SummaryAlarm:
    """One summary alarm (a CloudFormation alarm whose metrics, window and description are
    read at synth, from its ``checks`` as they are then) and the alarm it is to users."""

    cfn: cloudwatch.CfnAlarm
    alarm: cloudwatch.IAlarm
    checks: list[Check] = field(default_factory=list)

    @property
    def period(self) -> int:
        """The longest period of its checks: each check's metric is read over it."""
        return int(max(c.period for c in self.checks))

    @property
    def evaluation_periods(self) -> int:
        """Enough periods for the longest window of its checks."""
        return max(1, math.ceil(max(c.window_seconds for c in self.checks) / self.period))

    def metrics(self) -> list[cloudwatch.CfnAlarm.MetricDataQueryProperty]:
        period = self.period
        queries = [_query(f"m{i}", c, period) for i, c in enumerate(self.checks)]
        expression = " + ".join(c.term(f"m{i}") for i, c in enumerate(self.checks))
        return [
            *queries,
            cloudwatch.CfnAlarm.MetricDataQueryProperty(
                id="failing", expression=expression, label="checks breached", return_data=True
            ),
        ]


def _query(qid: str, check: Check, period: int) -> cloudwatch.CfnAlarm.MetricDataQueryProperty:
    stat = check.metric.to_metric_config().metric_stat
    assert stat is not None, "a summary check watches a metric, not an expression"
    dimensions = [
        cloudwatch.CfnAlarm.DimensionProperty(name=d.name, value=d.value)
        for d in stat.dimensions or []
    ]
    return cloudwatch.CfnAlarm.MetricDataQueryProperty(
        id=qid,
        label=check.label,
        return_data=False,
        metric_stat=cloudwatch.CfnAlarm.MetricStatProperty(
            metric=cloudwatch.CfnAlarm.MetricProperty(
                namespace=stat.namespace, metric_name=stat.metric_name, dimensions=dimensions
            ),
            period=period,
            stat=stat.statistic,
        ),
    )


def summary_alarm(
    owner: Construct, construct_id: str, description: Callable[[SummaryAlarm], str]
) -> SummaryAlarm:
    """An empty summary alarm, child ``construct_id`` of ``owner``; its checks are added
    after, and read at synth."""
    holder: list[SummaryAlarm] = []
    cfn = cloudwatch.CfnAlarm(
        owner,
        construct_id,
        comparison_operator="GreaterThanOrEqualToThreshold",
        threshold=1,
        evaluation_periods=lazy_number(lambda: holder[0].evaluation_periods),
        datapoints_to_alarm=lazy_number(lambda: holder[0].evaluation_periods),
        treat_missing_data="notBreaching",
        metrics=lazy_any(lambda: holder[0].metrics()),
        alarm_description=lazy_string(lambda: description(holder[0])),
    )
    alarm = cloudwatch.Alarm.from_alarm_arn(owner, f"{construct_id}Ref", cfn.attr_arn)
    holder.append(SummaryAlarm(cfn, alarm))
    return holder[0]
