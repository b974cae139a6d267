"""Runs in: signals Lambda, stream reader Lambda.

What DynamoDB itself measured, against what the processes report: a surge raised on the
reports alone goes on after `CONFIRM_SECONDS` only while CloudWatch's consumed capacity, or
its throttle events, confirm it (`surge_confirmed`), and a surge the cap or the budget cut
short is decided again with the demand CloudWatch shows served (`corroborated_plan`).
CloudWatch is read at most once a minute a dimension; a failed read, or an answer with
minutes unknown (not to be trusted, or not known delivered) that does not confirm it, is
counted and the surge goes on.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import timedelta
from typing import Any

from ..aws import combiner, metrics
from ..aws.counts import count
from ..aws.hold_table import Context
from ..aws.store import HoldStore
from ..core.errors import reason_of
from ..core.holds import Hold
from ..core.series import window
from ..core.surge import SURGE_AT, TRUSTED_MINUTES, Combined, Live, Standing, SurgePlan, first_look
from ..core.surge_report import DimensionReport
from ..events import log_event
from .surge_settings import (
    CONFIRM_SECONDS,
    CORROBORATE_SECONDS,
    STREAM,
    TRUSTED_LAG_MINUTES,
    SurgeSettings,
    unbounded_settings,
)

__all__ = [
    "Demand",
    "Signal",
    "trusted_demand",
]


@dataclass(frozen=True)
class Signal:
    """Where a surge decision's demand comes from: ``source``, the hook's reports (`HOOK`)
    or the table's stream (`STREAM`), each with its own burst-bucket estimate;
    ``next_look``, the seconds until that source is looked at again (a report's window; the
    stream's counting window); ``trusted``, the demand DynamoDB itself measured served, in
    units a second, when the source is such a measure (the stream's rate); None for the
    reports, which CloudWatch may corroborate (`trusted_demand`)."""

    source: str
    next_look: float
    trusted: float | None = None

    @property
    def blind(self) -> bool:
        """Whether the source sees no refusals (the stream: only what was served)."""
        return self.source == STREAM


@dataclass(frozen=True)
class Demand:
    """What CloudWatch showed DynamoDB served on a dimension (`trusted_demand`): ``units``,
    its busiest known minute in units a second; ``refused``, the throttle events DynamoDB
    recorded in the known minutes that more capacity could have served (demand it refused);
    ``unknown``, how many minutes of the window it answered but not to be trusted
    (`core.series.Series.untrusted`: the busiest may be among them), and of the minutes
    read those not known delivered."""

    units: float
    unknown: int = 0
    refused: float = 0.0

    def confirms(self, baseline: int) -> bool:
        """Whether DynamoDB's own measure shows a demand at `SURGE_AT` x ``baseline`` or
        more: served, or refused for want of capacity (a throttle at that capacity, or at
        any capacity raised from it, is demand beyond it)."""
        return self.units >= SURGE_AT * baseline or self.refused > 0

    @property
    def reason(self) -> str:
        """Why an answer with minutes unknown (not to be trusted, or not known delivered)
        settled nothing."""
        return f"CloudWatch's answer left {self.unknown} minute(s) unknown"


def trusted_demand(
    ctx: Context, table: str, index: str | None, dimension: str, witness: str | None = None
) -> Demand:
    """The demand DynamoDB itself measured on the dimension over the last
    `core.surge.TRUSTED_MINUTES` CloudWatch shows, read over those and the
    `TRUSTED_LAG_MINUTES` before now it may not have delivered yet: its busiest minute
    served (``Consumed<Read|Write>CapacityUnits``, its Sum / 60, in units a second) and
    the throttle events of those minutes (``<Read|Write>ThrottleEvents``) more capacity
    could have served (those DynamoDB's metrics by cause put on a hot key, the account's
    limit or an on-demand maximum left out; all of them when the causes cannot be read).
    ``witness``: a table read at every look (the state store), whose consumed reads show
    which minutes CloudWatch delivered (`metrics.fetch`): a minute up to the newest
    delivered is known (0 when DynamoDB published nothing for it: an idle dimension), but
    for the newest `TRUSTED_LAG_MINUTES`, known only with a datapoint of the dimension's
    own (the witness's may arrive before the dimension's); a minute after it, or answered
    but not to be trusted, is unknown (`Demand.unknown`: the
    untrusted ones, and those of the minutes read that are not known delivered). Raises
    what GetMetricData raises."""
    key = (table, index, dimension)
    start, end = window(ctx.now(), TRUSTED_MINUTES, TRUSTED_LAG_MINUTES)
    cloudwatch = ctx.clients.cloudwatch
    # a newest minute the witness alone shows delivered, with nothing of the dimension's own
    # in it, may not be delivered for the dimension yet (1-3 minutes late): not known
    series = metrics.fetch(
        cloudwatch, [key], start, end, witness=witness, arriving=TRUSTED_LAG_MINUTES
    )[key]
    if any(t > 0 for t in series.throttles):
        series = metrics.fetch_causes(cloudwatch, {key: series}, start, end, errors={})[key]
    unknown = series.unknown or [False] * len(series.consumed)
    known = [i for i, u in enumerate(unknown) if not u][-TRUSTED_MINUTES:]
    unfixable = series.unfixable or [0.0] * len(series.throttles)
    refused = sum((max(0.0, series.throttles[i] - unfixable[i]) for i in known), 0.0)
    undelivered = max(0, TRUSTED_MINUTES - len(known) - series.untrusted)
    units = max((series.consumed[i] for i in known), default=0.0)
    return Demand(units, series.untrusted + undelivered, refused)


def _not_settled(
    store: HoldStore, first: Seen, where: dict[str, Any], reason: str, now: float, **extra: Any
) -> None:
    """Count and log a read of CloudWatch's that could not settle ``first``'s surge (it
    failed, or some minutes of its answer were not to be trusted and those it trusted did
    not confirm or widen the surge), and remember it in the combiner item
    (`combiner.SurgeMark.unknown`): the looks that do not read again let the surge go on."""
    count("CorroborationFailed")
    try:
        combiner.mark(store.dynamodb, store.name, first.key, unknown=now)
    except Exception as exc:  # the looks within the minute then answer unconfirmed
        reason = f"{reason}; not remembered ({reason_of(exc)})"
    log_event("corroboration-failed", level=logging.ERROR, **where, reason=reason, **extra)


def _unsettled(mark: combiner.SurgeMark) -> bool:
    """Whether the dimension's last read of CloudWatch (at ``mark.checked``) could not settle
    its surge (``mark.unknown``)."""
    unknown, checked = mark.unknown, mark.checked
    return unknown is not None and checked is not None and unknown >= checked


@dataclass(frozen=True)
class Seen:
    """What the first look at one dimension read and saw: the combined reports (and their
    surge mark), the dimension as described, where its surge stood."""

    table: str
    d: DimensionReport
    combined: Combined
    mark: combiner.SurgeMark
    live: Live
    stands: Standing[Hold]
    signal: Signal
    renews: bool = False
    """The first look found a renewal, taken as a raise so that CloudWatch may widen it
    (`to_corroborate`): one it does not widen stays a renewal."""

    @property
    def key(self) -> dict[str, Any]:
        return combiner.combiner_key(self.table, self.d.sort_key)


def surge_confirmed(ctx: Context, store: HoldStore, first: Seen, now: float) -> bool:
    """Whether ``first``'s surge may go on (be renewed or raised): always on the stream's
    signal (DynamoDB's own measure) and for `CONFIRM_SECONDS` from its start; after that,
    only while DynamoDB's own measure confirmed it in the last `CONFIRM_SECONDS`
    (`Demand.confirms`): the demand CloudWatch shows served reached `SURGE_AT` x the surge's
    baseline, or DynamoDB refused requests more capacity could have served. CloudWatch is
    read at most once a minute a dimension (`combiner.claim_check`), with the state store as
    the witness of the minutes delivered; a read that fails is counted
    (``CorroborationFailed``) and the surge goes on (unknown data never lowers capacity), as
    does one whose answer has minutes unknown (not to be trusted, or not known delivered)
    and confirms nothing; a read that shows less is counted (``SurgesUnconfirmed``,
    alarmed) and the surge is left to expire: the processes' reports alone keep no
    dimension raised."""
    mark = first.mark
    if first.signal.trusted is not None or mark.started is None:
        return True
    if now - mark.started < CONFIRM_SECONDS:
        return True
    if mark.confirmed is not None and mark.started <= mark.confirmed > now - CONFIRM_SECONDS:
        return True
    where: dict[str, Any] = {
        "table": first.table,
        "index": first.d.index,
        "dimension": first.d.dimension,
    }
    try:
        claimed = combiner.claim_check(
            store.dynamodb, store.name, first.key, now, CORROBORATE_SECONDS
        )
        if not claimed:  # read within the minute, not confirmed by it: unless unsettled
            return _unsettled(mark)
        trusted = trusted_demand(ctx, first.table, first.d.index, first.d.dimension, store.name)
    except Exception as exc:  # unknown: the surge goes on
        _not_settled(store, first, where, reason_of(exc), now)
        return True
    if _confirms(first, trusted, now, store):
        return True
    if trusted.unknown:  # unknown: the surge goes on
        _not_settled(store, first, where, trusted.reason, now, trusted=round(trusted.units, 1))
        return True
    count("SurgesUnconfirmed")
    log_event(
        "surge-unconfirmed",
        level=logging.WARNING,
        **where,
        trusted=round(trusted.units, 1),
        refused=round(trusted.refused),
        baseline=first.stands.baseline,
    )
    return False


def _confirms(first: Seen, trusted: Demand, now: float, store: HoldStore) -> bool:
    """Whether the ``trusted`` demand confirms ``first``'s surge (`Demand.confirms`;
    remembered in its mark)."""
    if not trusted.confirms(first.stands.baseline):
        return False
    combiner.mark(store.dynamodb, store.name, first.key, confirmed=now)
    return True


def to_corroborate(first: Seen, settings: SurgeSettings, now: float, lifetime: timedelta) -> bool:
    """Whether a renewal is taken as a raise instead, so that CloudWatch may widen it
    (`corroborated_plan`): the surge cap or the budget holds it at its level while the reports
    ask for more, and a read is due."""
    if not may_corroborate(first, settings, now):
        return False
    loose = first_look(
        first.combined,
        first.live,
        now,
        first.stands,
        first.mark,
        unbounded_settings(settings),
        lifetime,
    )
    return loose.status == "raise"


def may_corroborate(first: Seen, settings: SurgeSettings, now: float) -> bool:
    """Whether CloudWatch's trusted demand could widen ``first``'s surge and a read is due:
    the reports ask for it (the stream's rate is trusted already), the cap is the default
    one (``scale`` x the start: an absolute ``cap`` is never widened), and CloudWatch was not
    read for the dimension in the last `CORROBORATE_SECONDS`."""
    if first.signal.trusted is not None or settings.cap is not None or settings.scale is None:
        return False
    checked = first.mark.checked
    return checked is None or now - checked >= CORROBORATE_SECONDS


def corroborated_plan(
    ctx: Context,
    store: HoldStore,
    first: Seen,
    live: Live,
    settings: SurgeSettings,
    decide: Callable[[Live, SurgeSettings], SurgePlan],
) -> tuple[SurgePlan, bool]:
    """The plan ``decide`` makes on ``live``; when the surge cap or the budget cut it short
    of what the rule asks (its level lower, or over budget) and a read is due
    (`may_corroborate`, claimed in the combiner item), decided again with the demand
    CloudWatch shows served (`trusted_demand`), and whether that widened it (counted
    ``SurgesCorroborated``). A failed read is counted (``CorroborationFailed``) and the
    plan stands."""
    plan = decide(live, settings)
    if not may_corroborate(first, settings, ctx.clock()):
        return plan, False
    budget_cut = plan.over_budget and settings.budget is None  # an explicit one never widens
    if not budget_cut and decide(live, unbounded_settings(settings)).want <= plan.want:
        return plan, False  # the rule's own level: nothing to corroborate
    where: dict[str, Any] = {
        "table": first.table,
        "index": first.d.index,
        "dimension": first.d.dimension,
    }
    try:
        claimed = combiner.claim_check(
            store.dynamodb, store.name, first.key, ctx.clock(), CORROBORATE_SECONDS
        )
        if not claimed:
            return plan, False  # another look read CloudWatch for it within the minute
        trusted = trusted_demand(ctx, first.table, first.d.index, first.d.dimension, store.name)
    except Exception as exc:  # the capped plan stands
        _not_settled(store, first, where, reason_of(exc), ctx.clock())
        return plan, False
    if first.stands.surge is not None:
        _confirms(first, trusted, ctx.clock(), store)
    wider = decide(replace(live, trusted=max(live.trusted, trusted.units)), settings)
    was = plan.applied if plan.status == "raise" else 0
    if wider.status != "raise" or wider.applied <= max(was, wider.before):
        if trusted.unknown:  # the capped plan stands
            trusted_units = round(trusted.units, 1)
            _not_settled(store, first, where, trusted.reason, ctx.clock(), trusted=trusted_units)
        else:
            log_event(
                "surge-not-corroborated", **where, trusted=round(trusted.units, 1), want=plan.want
            )
        return plan, False
    count("SurgesCorroborated")
    log_event(
        "surge-corroborated",
        **where,
        trusted=round(trusted.units, 1),
        capped=plan.want,
        want=wider.want,
    )
    return wider, True
