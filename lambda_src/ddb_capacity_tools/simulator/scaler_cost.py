"""Runs in: workstation (`ddb-capacity tune`, `advise`, `reserve`; docs: Scaler, "Costs").

What the library's scaler (``ThrottleAwareScaler``) costs a month for one table it manages,
from list prices (`prices.Prices`: us-east-1, Lambda on arm64, CloudWatch's first
tiers), with the construct's defaults (a tick every 2 minutes, its alarms on):

- the tick's custom metrics: a steady table's record makes `TABLE_METRICS` of them (none: a
  count is a metric only in the hours it is not 0, and its levels, ``DecreasesLeft`` and
  ``ForecastsOn``, are fields of the log line only; the hours with something to count are
  not counted);
- its GetMetricData reads: `QUERIES_PER_DIMENSION` metric a dimension a tick (consumed
  capacity), its throttle events on the ticks that read them (`throttle_reads`: one tick in
  `ddb_capacity_runtime.core.plan.THROTTLE_READ_TICKS`, and of the others those about to
  lower it or near its capacity, `DUE_TICKS` of them assumed; the throttles by cause, read
  only while a dimension is throttled, are not counted), and, in autopilot, the
  history, `HISTORY_QUERIES_PER_HOUR` a dimension an hour (a dimension's delivery witness,
  read only at a tick about to lower it on minutes without a datapoint, is not counted);
- its checks on the table, ``SustainedThrottling`` on each dimension and ``HotKey`` on the
  table: in the default summary alarms, `CHECKS_PER_ALARM` of them share one ``Throttled``
  alarm, so each is charged that share of an alarm (with the detailed alarms, one each);
- the tick's invocations, one a tick of `TICK_SECONDS` at `MEMORY_MB`, all charged to the one
  table (a scaler managing more tables shares them: a few cents a month in all).

Not counted, as they are paid once a scaler whatever the number of its tables
(`monthly_fixed_cost`): its own alarms (``Failing`` and ``Stuck``), the state store's
consumed reads (`WITNESS_QUERIES` a tick, what shows the minutes delivered when every table
is idle) and the metrics of the scaler's deployment (dimension ``StateStore``),
`DEPLOYMENT_METRICS` of them in a steady tick; and its log group. So `tune`, `advise` and
`reserve` leave them out of every policy's cost. A table's dimensions are its
read and write and each GSI's. GSIs costed without their table (``table=False``:
``advise --index``) are charged what the scaler adds for them alone, their reads and their
``SustainedThrottling`` checks; the ``HotKey`` check and the invocations are their
table's.
"""

from __future__ import annotations

from dataclasses import dataclass

from ddb_capacity_runtime.core.plan import THROTTLE_READ_TICKS
from ddb_capacity_runtime.core.settings import DEFAULT_TICK_MINUTES

from .candidates import MONTH_HOURS
from .prices import Prices

__all__ = ["ScalerCost", "monthly_fixed_cost", "monthly_scaler_cost", "throttle_reads"]

TABLE_METRICS = 0
"""The custom metrics a steady managed table's record makes in a tick: none. Its counts
(``Decisions``, ``ThrottleEventsSeen``, ``CapacityAtMax``, ``Failures``, ...) are metrics only
while not 0; ``DecreasesLeft`` and ``ForecastsOn`` are fields of its log line only
(`ddb_capacity_runtime.events.LOGGED`)."""
DEPLOYMENT_METRICS = 0
"""The custom metrics a steady scaler's deployment (dimension ``StateStore``) has in a tick:
none (its counts only while not 0; ``TablesManaged`` a field of the log line). Charged to no
table."""
QUERIES_PER_DIMENSION = 1
"""Metrics every tick reads a dimension: its consumed capacity
(`ddb_capacity_runtime.aws.metrics.fetch`, without throttles)."""
DUE_TICKS = 0.19
"""The share of a dimension's ticks, of those that do not read every dimension's throttles,
that read its throttle events as its first decision would lower it or its consumption
reached `ddb_capacity_runtime.core.plan.THROTTLE_READ_SHARE` of its capacity
(`ddb_capacity_runtime.core.plan.throttles_due`): measured by the simulator's scenarios
under its four scaler policies at a 2-minute tick (docs: Scaler, "Costs")."""
WITNESS_QUERIES = 1
"""Metrics a tick reads besides its dimensions': the state store's consumed reads
(`ddb_capacity_runtime.aws.metrics.fetch`'s witness), once a scaler (`monthly_fixed_cost`)."""
OWN_ALARMS = 2
"""The scaler's own summary alarms, whatever its tables: ``Failing`` and ``Stuck`` (its
``Throttled`` is its tables' checks, charged to them)."""
HISTORY_QUERIES_PER_HOUR = 1
"""In autopilot, the history's metrics read a dimension an hour (docs: Autopilot, "Calls and
state": 24 a day)."""
CHECKS_PER_ALARM = 10
"""The checks one summary alarm watches (CloudWatch's 10 metrics an alarm;
``constructs_pkg.common._alarm_summary.MAX_METRICS``)."""
TICK_SECONDS = 1.0
"""An invocation's time for one table: a handful of AWS calls, each tens of milliseconds in the
Region, and Python's own (at a tick every 2 minutes the function mostly stays warm)."""
MEMORY_MB = 256
"""The scaler's memory (``constructs_pkg.scaler._scaler.MEMORY_MB``)."""
TICK_MINUTES = DEFAULT_TICK_MINUTES
"""The construct's default tick."""


def throttle_reads(due: float = DUE_TICKS) -> float:
    """A dimension's throttle-event reads a tick: one tick in `THROTTLE_READ_TICKS`, and
    ``due`` of the others (`ddb_capacity_runtime.core.plan.throttles_due`)."""
    if not 0 <= due <= 1:
        raise ValueError(f"due: got {due!r}; the share of ticks must be from 0 to 1")
    every = 1 / THROTTLE_READ_TICKS
    return every + (1 - every) * due


@dataclass(frozen=True)
class ScalerCost:
    """Dollars a month, by what is charged, for one table of ``dimensions`` dimensions."""

    dimensions: int
    metrics: float
    reads: float
    alarms: float
    invocations: float

    @property
    def total(self) -> float:
        return self.metrics + self.reads + self.alarms + self.invocations


def monthly_scaler_cost(
    dimensions: int,
    *,
    autopilot: bool = True,
    tick_minutes: int = TICK_MINUTES,
    prices: Prices | None = None,
    table: bool = True,
    due: float = DUE_TICKS,
) -> ScalerCost:
    """The scaler's dollars a month on one table of ``dimensions`` dimensions, in autopilot
    (the default mode) or reactive mode, ticking every ``tick_minutes``; with ``table``
    False, on ``dimensions`` of GSIs without their table: their reads and alarms only.
    ``due``: the share of the other ticks that read throttle events (`throttle_reads`; a
    simulated run's ``ThrottleAware.throttle_reads`` tells it)."""
    if dimensions < 1 or tick_minutes < 1:
        raise ValueError(
            f"dimensions {dimensions} and tick_minutes {tick_minutes}: each must be 1 or more"
        )
    prices = prices or Prices()
    ticks = MONTH_HOURS * 60 / tick_minutes
    metrics = TABLE_METRICS * prices.custom_metric_month * table
    requested = dimensions * (
        (QUERIES_PER_DIMENSION + throttle_reads(due)) * ticks
        + autopilot * HISTORY_QUERIES_PER_HOUR * MONTH_HOURS
    )
    invocation = (
        prices.lambda_request_million / 1e6
        + TICK_SECONDS * MEMORY_MB / 1024 * prices.lambda_gb_second
    )
    return ScalerCost(
        dimensions,
        metrics,
        requested / 1_000 * prices.metrics_requested_thousand,
        (dimensions + table) / CHECKS_PER_ALARM * prices.alarm_month,
        ticks * invocation * table,
    )


def monthly_fixed_cost(*, tick_minutes: int = TICK_MINUTES, prices: Prices | None = None) -> float:
    """What a scaler costs a month whatever the number of its tables, charged to none of
    them: its own summary alarms (`OWN_ALARMS`), the state store's read a tick
    (`WITNESS_QUERIES`) and its deployment's metrics in a steady tick (`DEPLOYMENT_METRICS`).
    No topic or key: its alarms open OpsItems unless given a topic."""
    prices = prices or Prices()
    ticks = MONTH_HOURS * 60 / tick_minutes
    return (
        OWN_ALARMS * prices.alarm_month
        + WITNESS_QUERIES * ticks / 1_000 * prices.metrics_requested_thousand
        + DEPLOYMENT_METRICS * prices.custom_metric_month
    )
