"""Runs in: scaler Lambda, workstation (examples, benchmarks).

Min and max tags a tick refuses: those that would lower a dimension's limit below what it
consumes at its target utilization, or while that is not known (`refuse_tags`).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import replace

from ..core.plan import delivered
from ..core.policy import capacity_units
from ..core.series import Key, Series
from ..core.settings import ScalerConfig
from ..core.table_limits import Limits
from ..core.tables import ManagedTable
from ..events import log_event


def consumption_need(
    series: Series | None, target: float, lag_minutes: int = 0
) -> tuple[float | None, int | None]:
    """The dimension's peak consumption (units per second) over the tick's window, and the
    capacity it takes at ``target``; (None, None) when not every minute up to the newest
    delivered one is known (`plan.delivered`: as for a decrease). A minute still
    being added to only reads low, so the peak over the window is never above the truth."""
    if series is None:
        return None, None
    known, stopped = delivered(series, lag_minutes)
    if known.unknown_minutes or stopped or not known.consumed:
        return None, None
    peak = max(known.consumed)
    return peak, capacity_units(peak / target)


def refuse_tags(
    config: ScalerConfig, table: ManagedTable, series: Mapping[Key, Series]
) -> ManagedTable:
    """``table`` with the min and max tags that would lower a dimension's limit below what
    it consumes at its target utilization (or while that is not known) refused for that
    dimension (`ScalerConfig.refuse_lowering_tags`): the dimension keeps the limits
    it would have without them (and any hold's lift). Each refusal is logged
    (``tag-refused``) and the tags refused are counted (``table.refused_tags``, on top of
    those refused already for putting a min above its max). A dimension
    under a scalable target has the target's limits, not the tags'."""
    if not any(not name.endswith("target") for name in table.tag_limits):
        return table
    dims = []
    refused_keys: set[str] = set()
    for d in table.dimensions:
        if d.target is not None:
            dims.append(d)
            continue
        target = d.limits.target_utilization
        peak, need = consumption_need(series.get(d.key), target, config.metric_lag_minutes)
        kept, refused = config.refuse_lowering_tags(table.name, table.tag_limits, d.dimension, need)
        if refused:
            # only ever raised: a hold's lift on top of the tags' limits stays
            d = replace(
                d,
                limits=Limits(
                    max(d.limits.min_capacity, kept.min_capacity),
                    max(d.limits.max_capacity, kept.max_capacity),
                    d.limits.target_utilization,
                ),
            )
        for r in refused:
            if need is not None:  # known to hurt: counted (and alarmed); unknown: held back
                refused_keys.add(r.key)
            now_limit = getattr(d.limits, f"{r.limit}_capacity")
            consumption = (
                "its consumption is not known this tick, and unknown data never lowers capacity"
                if need is None
                else f"it consumes up to {peak:.1f} units/s, {need} units at its "
                f"{target:.0%} target"
            )
            log_event(
                "tag-refused",
                level=logging.WARNING if need is not None else logging.INFO,
                table=table.name,
                index=d.index,
                dimension=d.dimension,
                key=r.key,
                value=r.value,
                consumed=None if peak is None else round(peak, 3),
                needs=need,
                reason=f"{r.key}={r.value} would lower the dimension's {r.limit} below what "
                f"it needs: {consumption}. Not obeyed: the {r.limit} stays {now_limit}",
            )
        dims.append(d)
    return replace(table, dimensions=dims, refused_tags=table.refused_tags + len(refused_keys))
