"""Runs in: scaler Lambda, workstation (simulator).

Whether CloudWatch still delivers a dimension's metrics, asked before a decrease that rests
on minutes read as idle: its delivery witness.

DynamoDB publishes no consumption datapoint for a minute without traffic, so a tick reads a
minute without one, once it is older than the minutes still arriving
(`ScalerConfig.arriving_minutes`), as idle. A metric stream that stopped (CloudWatch
delivering nothing of a table for longer than that) reads the same. DynamoDB also publishes
each table's and each GSI's provisioned capacity (``ProvisionedReadCapacityUnits``,
``ProvisionedWriteCapacityUnits``) every 5 minutes, traffic or not: the dimension's witness.
A decrease of a dimension whose window holds a minute read as idle is made only when the
witness has a datapoint within the newest `WITNESS_MINUTES` whose period ends within the
minutes the decrease is decided on (`decided_from`); else those minutes are unknown, and
the decrease is held (`hold_unwitnessed`; why: `verdict`). A witness not published yet (a
new GSI, a new replica's Region, a table switched back from on-demand) is told from one
that stopped by since when the tick has found it missing, kept in the state store
(`MISSING_MARK`). Pure; the scaler's tick reads the witness
(`ddb_capacity_runtime.aws.metrics.fetch_witness`) and keeps the markers, the simulator
models the witness."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from datetime import UTC, datetime
from enum import StrEnum

from .decreases import utc
from .names import scope_label
from .plan import Change
from .policy import DECREASE, Decision
from .series import MINUTE, Key, Series, step_start
from .settings import ScalerConfig

WITNESS_PERIOD_MINUTES = 5
"""DynamoDB publishes a dimension's provisioned capacity once every 5 minutes ("DynamoDB
Metrics and dimensions": its metrics other than the per-minute ones are aggregated at five
minutes; ``ProvisionedReadCapacityUnits`` "is published at five-minute intervals")."""
WITNESS_LAG_MINUTES = 7
"""How late after its period ends a witness datapoint is taken to arrive, at the latest:
6 to 7 minutes were reported for ``ProvisionedRead/WriteCapacityUnits``
(aws/aws-sdk-java#1621), taken from the period's end (from its start, it would be 1-2
minutes, within CloudWatch's usual 1-3 for the per-minute metrics)."""
WITNESS_MINUTES = 20
"""How recent the witness's newest datapoint must be (its timestamp, the start of its
5-minute period, at or after the tick's minute less this). Delivered on time, the newest is
never older than 17 minutes: its own 5 minutes, up to 5 until the next period ends, and
`WITNESS_LAG_MINUTES`. 20 lets a datapoint come up to 3 minutes later than that before
anything is held (7 to 9 with CloudWatch's usual 1-3 minutes); once nothing of the table
arrives any more, the newest is more than 20 minutes old at most 15 minutes later (it began
at least 5 minutes before), and no decrease rests on idle minutes: by then about 20 - 5 -
the arriving minutes (11 by default) of the window have read as idle."""
WITNESS_READ_MINUTES = 180
"""How far back a witness is read, in the same query (GetMetricData is priced by the
metric, not the datapoints: 36 a query, 18,000 in a call of 500, one page): a witness
with a datapoint in it, however old, was published and then stopped (a stall at once;
its newest is what a held decrease's event names), one without any was not published
yet, or stopped longer ago (`verdict`). At least `WITNESS_MINUTES` + `NEW_MINUTES`, so a
stall found at its first tick is still marked (`MISSING_MARK`) when its last datapoint
leaves the read."""
NEW_MINUTES = 60
"""A dimension may have no witness yet for this long: after its table was created, or
switched from on-demand (`ManagedTable.began`), or after a tick first found its witness
missing (`MISSING_MARK`: a GSI added to an older table, a new replica's Region, a table
switched back long after it went, which DynamoDB gives no time of). DynamoDB takes a while
to start publishing a new dimension's provisioned capacity (10 to 15 minutes reported for
a new GSI). Its decrease is held all the same, but not taken for a stall: one never
published is counted at most this long (and a tick) after a tick first found it missing."""
MISSING_MARK = "witness-missing"
"""The state store's marker (`ddb_capacity_runtime.aws.store.HoldStore.mark`) of a witness
a tick found without a recent datapoint: ``witness-missing:<Region, or here>:<table|
index/NAME>:<read|write>:<POSIX seconds>``, since when (`missing_mark`). Written by the
first tick that finds it so, removed by the first that finds it recent again: a steady
tick, which reads no witness, and a tick whose witnesses are delivered write none."""


class Verdict(StrEnum):
    """What a dimension's witness says of a decrease resting on its minutes read as idle."""

    DELIVERED = "delivered"
    """recent, and its period ends within the minutes the decrease is decided on: made"""
    AWAITED = "awaited"
    """recent, but its newest period ends before those minutes (a short scale-down window):
    held until a tick whose witness reaches them"""
    NEW = "new"
    """no datapoint in the read since the table began to be provisioned, of a table that
    began within `NEW_MINUTES` or a witness first found missing within them: held;
    DynamoDB may not publish it yet"""
    UNREAD = "unread"
    """the witness could not be read: held, a failure of its table"""
    STALLED = "stalled"
    """no datapoint within `WITNESS_MINUTES`: the table's metrics may have stopped
    arriving; held, and counted (``MetricsStalled``)"""


WORST_FIRST = (Verdict.STALLED, Verdict.UNREAD, Verdict.NEW, Verdict.AWAITED, Verdict.DELIVERED)
"""Of several witnesses of one dimension (a global table's replicas' Regions), the one that
decides and is reported comes first."""


def witness_start(now: datetime) -> datetime:
    """The oldest timestamp a witness datapoint may have at ``now`` and still count."""
    return step_start(now, 1) - WITNESS_MINUTES * MINUTE


def is_recent(newest: datetime | None, now: datetime) -> bool:
    """Whether a witness whose newest datapoint has timestamp ``newest`` (None: none) has
    one recent enough at ``now`` to count (`witness_start`)."""
    return newest is not None and utc(newest) >= witness_start(now)


def decided_from(now: datetime, config: ScalerConfig) -> datetime:
    """The start of the minutes a decrease at ``now`` is decided on, once a stopped metric
    stream's newest minutes are left out as still arriving: the scale-down window's (all
    low), or the autopilot's settle span's if longer (its load bounds the decrease)."""
    policy = config.policy
    span = max(policy.scale_down_minutes, policy.settle_minutes)
    return step_start(now, 1) - (config.arriving_minutes + span) * MINUTE


def is_new(began: datetime | None, now: datetime) -> bool:
    """Whether a table that began to be provisioned at ``began`` (`ManagedTable.began`;
    None: not known) is younger than `NEW_MINUTES` at ``now``. A time ahead of ``now`` by
    more than a witness period is untrusted: not new."""
    if began is None:
        return False
    age = utc(now) - utc(began)
    return -WITNESS_PERIOD_MINUTES * MINUTE <= age < NEW_MINUTES * MINUTE


def provisioned_newest(
    newest: datetime | None, began: datetime | None, now: datetime
) -> datetime | None:
    """``newest`` (a witness's newest datapoint), unless it is older than ``began`` (not
    ahead of ``now``): published before the table last began to be provisioned (before
    it went on-demand), it is no witness of this provisioning. Of this Region's witness
    only: the table's times here say nothing of another Region's replica."""
    if newest is None or began is None or utc(began) > utc(now):
        return newest
    return None if utc(newest) < utc(began) else newest


def verdict(
    newest: datetime | None,
    now: datetime,
    since: datetime,
    began: datetime | None = None,
    missing: datetime | None = None,
) -> Verdict:
    """The `Verdict` of a witness whose newest datapoint has timestamp ``newest`` (None:
    none in the read, or of an earlier provisioning: `provisioned_newest`), for a decrease
    at ``now`` decided on the minutes from ``since`` (`decided_from`), of a table that
    began to be provisioned at ``began``, the witness found missing since ``missing``
    (`missing_since`; None: not known, so one never published is a stall unless its table
    is new)."""
    if newest is None:
        return Verdict.NEW if is_new(began, now) or is_new(missing, now) else Verdict.STALLED
    if not is_recent(newest, now):
        return Verdict.STALLED
    if utc(newest) + WITNESS_PERIOD_MINUTES * MINUTE <= since:
        return Verdict.AWAITED
    return Verdict.DELIVERED


def missing_mark(region: str | None, key: Key, at: datetime) -> str:
    """The `MISSING_MARK` marker of ``key``'s witness in ``region`` (None: this one), found
    missing since ``at``."""
    return f"{_mark_prefix(region, key)}{int(utc(at).timestamp())}"


def _mark_prefix(region: str | None, key: Key) -> str:
    return f"{MISSING_MARK}:{region or 'here'}:{scope_label(key[1])}:{key[2]}:"


def missing_marks(marks: Iterable[str], region: str | None, key: Key) -> dict[str, datetime | None]:
    """The markers among ``marks`` (a table's, read from the state store: untrusted) of
    ``key``'s witness in ``region``, each with its time (None: not a sound one)."""
    prefix = _mark_prefix(region, key)
    found: dict[str, datetime | None] = {}
    for what in marks:
        raw = what[len(prefix) :] if what.startswith(prefix) else None
        if raw is not None:
            sound = raw.isascii() and raw.isdigit() and len(raw) <= 11
            found[what] = datetime.fromtimestamp(int(raw), UTC) if sound else None
    return found


def missing_since(
    marks: Mapping[str, datetime | None], began: datetime | None, now: datetime
) -> datetime | None:
    """Since when a witness has been found missing, by its markers (`missing_marks`): the
    earliest sound one, neither ahead of ``now`` nor behind ``began`` (not ahead of ``now``:
    one before is of an earlier provisioning) by more than a witness period (a tick's time
    is when it was scheduled: a table may be created in the tick before it runs). None:
    none."""
    period = WITNESS_PERIOD_MINUTES * MINUTE
    floor = utc(began) - period if began is not None and utc(began) <= utc(now) else None
    sound = [
        at
        for at in marks.values()
        if at is not None and at <= utc(now) + period and (floor is None or at >= floor)
    ]
    return min(sound, default=None)


def idle_mask(series: Series) -> list[bool]:
    """Per minute of ``series``: whether it reads as idle, known, with no consumption and
    no throttle (no datapoint of the dimension's own, or datapoints of 0)."""
    unknown = series.unknown
    return [
        used == 0 and events == 0 and not (unknown and unknown[i])
        for i, (used, events) in enumerate(zip(series.consumed, series.throttles, strict=True))
    ]


def idle_minutes(series: Series) -> int:
    """The minutes of ``series`` read as idle (`idle_mask`)."""
    return sum(idle_mask(series))


def decided_idle(series: Series, since: datetime) -> list[bool]:
    """`idle_mask` of ``series``, but for its minutes before ``since`` (`decided_from`)."""
    return [i and m >= since for i, m in zip(idle_mask(series), series.minute_starts, strict=True)]


def idle_unknown(series: Series, also: list[bool] | None = None) -> Series:
    """``series`` with its minutes read as idle unknown, and those marked in ``also`` (read
    as idle in a global table's replica, before merging: `Elsewhere`): late or idle, not to
    be told apart without the witness. They still read 0 (a raise never rests on them)."""
    unknown = series.unknown or [False] * len(series.minute_starts)
    extra = also or [False] * len(series.minute_starts)
    marked = [u or x or i for u, x, i in zip(unknown, extra, idle_mask(series), strict=True)]
    return replace(series, unknown=marked)


Elsewhere = Mapping[Key, list[bool]]
"""Per dimension of a global table's writes: the minutes (of its series) read as idle in
the series of one of its replicas before merging, within the minutes the decrease is
decided on (`decided_idle`). The merged minute may hold another replica's writes, but a
replica whose metrics stopped arriving hides its own: a decrease resting on them waits
for the witness as if the merged minute were idle."""


def idle_decreases(
    planned: list[tuple[Change, Decision]], series: Mapping[Key, Series], elsewhere: Elsewhere
) -> list[Change]:
    """The decreases of ``planned`` whose dimension's series holds a minute read as idle,
    or one read as idle in a replica (``elsewhere``)."""
    return [
        c
        for c, _ in planned
        if c.action == DECREASE
        and c.new < c.old
        and (idle_minutes(series[c.dimension.key]) or any(elsewhere.get(c.dimension.key, ())))
    ]


def hold_unwitnessed(
    plan: Callable[[Mapping[Key, Series]], list[tuple[Change, Decision]]],
    series: Mapping[Key, Series],
    delivered: Callable[[Key], bool],
    elsewhere: Elsewhere | None = None,
) -> tuple[list[tuple[Change, Decision]], list[Change]]:
    """``plan(series)`` (``series``: one table's), with each decrease that rests on minutes
    read as idle (here, or in a replica: ``elsewhere``) of a dimension whose delivery is not
    witnessed (``delivered(key)`` False) held: those minutes are made unknown and the table
    planned again. Returns the plan and the decreases held. Unknown minutes only ever take
    decreases away, so one more plan suffices; the loop asks again until no such decrease
    is left, whatever the plan."""
    replicas: Elsewhere = elsewhere or {}
    planned = plan(series)
    held: list[Change] = []
    while True:
        unwitnessed = [
            c for c in idle_decreases(planned, series, replicas) if not delivered(c.dimension.key)
        ]
        if not unwitnessed:
            return planned, held
        held += unwitnessed
        keys = {c.dimension.key for c in unwitnessed}
        marked = {k: idle_unknown(series[k], replicas.get(k)) for k in keys}
        series = {**series, **marked}
        replicas = {k: v for k, v in replicas.items() if k not in keys}
        planned = plan(series)
