"""Runs in: scaler Lambda, broker Lambda, workers (the user's own jobs, in direct mode),
workstation (simulator).

Per-minute consumed capacity and throttle events, and the window of minutes a tick
reads."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

from .decreases import utc
from .records import direct_init

MINUTE = timedelta(minutes=1)


def step_start(moment: datetime, step_minutes: int) -> datetime:
    """The start (UTC) of the ``step_minutes`` step holding ``moment``."""
    moment = utc(moment).replace(second=0, microsecond=0)
    return moment - (moment.minute % step_minutes) * MINUTE


Key = tuple[str, "str | None", str]


@direct_init
@dataclass(frozen=True)
class Series:
    """Per complete minute, oldest first: consumed units per second, throttle events.

    ``unknown`` marks minutes whose data is not known (CloudWatch did not say the result was
    complete, had not delivered the minute yet, or gave a NaN, negative or infinite value;
    or the minute is among the newest, whose datapoints may still be on their way, and holds
    none of the dimension's own: `ddb_capacity_runtime.aws.metrics.fetch`); their values
    read 0 and they forbid any decrease. Empty: every minute is known.

    ``throttles`` counts every throttle event, whatever its cause. Where DynamoDB's metrics
    by cause were read (`ddb_capacity_runtime.aws.metrics.fetch_causes`),
    ``unfixable`` holds, per minute, the events more capacity could not have served
    (key-range, account-limit and on-demand maximum throttles) and ``key_range`` the
    key-range ones among them (a hot partition). Empty: none known, and every throttle is
    taken for a provisioned-throughput one (the rule from before the causes were
    published). ``causes_unknown`` counts the throttled minutes whose cause could not be
    read, and which were therefore taken for provisioned-throughput ones.

    ``undelivered`` counts the window's newest minutes, not delivered yet, that the lists
    leave out: they end with the newest delivered minute (the simulator's series do, so a
    tick need not trim them). Those minutes are unknown, as if listed reading 0. Set only
    after a known minute: a series of which nothing is known lists every minute. 0: the
    lists hold the whole window.

    ``untrusted`` counts the unknown minutes CloudWatch answered but not to be trusted (a
    status other than ``Complete``, a NaN, negative or infinite value, a minute given
    twice) or whose query failed, as against those it had not delivered: what was served
    in them may have been anything.

    ``throttles_read`` False: the tick read the dimension's consumption alone
    (`core.plan.throttles_due`), so its throttles read 0 but are not known, and it is not
    lowered.
    """

    minute_starts: list[datetime]
    consumed: list[float]
    throttles: list[float]
    unknown: list[bool] = field(default_factory=list)
    unfixable: list[float] = field(default_factory=list)
    key_range: list[float] = field(default_factory=list)
    causes_unknown: int = 0
    undelivered: int = 0
    untrusted: int = 0
    throttles_read: bool = True

    @property
    def unknown_minutes(self) -> int:
        return sum(self.unknown) + self.undelivered

    @classmethod
    def all_unknown(cls, minute_starts: list[datetime]) -> Series:
        """A series of which nothing is known (its query failed)."""
        n = len(minute_starts)
        zeros = [0.0] * n
        return cls(list(minute_starts), zeros, list(zeros), [True] * n, untrusted=n)


def tell_causes(
    lumped: float, provisioned: float, key_range: float, other: float
) -> tuple[float, float] | None:
    """One throttled minute's events told apart by cause: ``lumped`` events in all, of which
    DynamoDB's metrics by cause say ``provisioned`` were provisioned-throughput ones,
    ``key_range`` key-range ones and ``other`` account-limit or on-demand-maximum ones.
    Returns (the events more capacity could not serve, the key-range ones among them),
    each at most ``lumped``: what no cause explains counts as fixable (the rule from before
    the causes). None when no cause explains any of it."""
    explained = provisioned + key_range + other
    if explained <= 0:
        return None
    fixable = provisioned + max(0.0, lumped - explained)
    unfixable = max(0.0, lumped - fixable)
    return unfixable, min(key_range, unfixable)


def window(now: datetime, minutes: int, lag_minutes: int) -> tuple[datetime, datetime]:
    """[start, end) of the minutes a tick reads: up to the newest complete minute, so a
    minute is used as soon as CloudWatch has delivered it. ``minutes`` are read besides the
    newest ``lag_minutes``, which CloudWatch may not have delivered, or not finished: those
    not delivered yet are unknown (never zero), and those delivered count for raises only
    (`ddb_capacity_runtime.core.policy.DimensionState.fresh`)."""
    end = utc(now).replace(second=0, microsecond=0)
    return end - (minutes + lag_minutes) * MINUTE, end


def with_replicas(local: Series, others: Sequence[Series]) -> Series:
    """A global table's write dimension as every replica's scaler decides it: ``local``
    (this Region's replica) with the same dimension of each other replica (``others``,
    read over the same minutes). Every write is replicated to each replica, so each
    minute's consumption is the highest any replica saw, and its throttles this replica's
    plus the others' that more capacity could serve (theirs it could not are theirs alone).
    A minute unknown in any replica is unknown (it forbids a decrease), and so is every
    minute when a replica's series covers other minutes. Each Region's scaler, reading the
    same metrics, makes the same write decision, so the replicas' write capacity stays one."""
    minutes = len(local.minute_starts)
    if not others:
        return local
    if any(o.minute_starts != local.minute_starts or o.undelivered for o in others):
        return replace(
            local,
            unknown=[True] * minutes,
            causes_unknown=local.causes_unknown + sum(o.causes_unknown for o in others),
        )

    def at(values: list[float], i: int) -> float:
        return values[i] if i < len(values) else 0.0

    def fixable(s: Series, i: int) -> float:
        return max(0.0, s.throttles[i] - at(s.unfixable, i))

    everyone = [local, *others]
    return replace(
        local,
        consumed=[max(s.consumed[i] for s in everyone) for i in range(minutes)],
        throttles=[local.throttles[i] + sum(fixable(o, i) for o in others) for i in range(minutes)],
        unknown=[any(i < len(s.unknown) and s.unknown[i] for s in everyone) for i in range(minutes)]
        if any(s.unknown for s in everyone)
        else [],
        causes_unknown=local.causes_unknown + sum(o.causes_unknown for o in others),
    )
