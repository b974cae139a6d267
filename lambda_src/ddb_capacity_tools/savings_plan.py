"""Runs in: workstation (`ddb-capacity reserve`, `advise`).

A Database Savings Plan beside reserved capacity (docs: Commitments), as pure rules on a
fleet's hours (`reserve_sizing.Hours`): the spend it may cover each hour (`eligible`), what
it saves at an hourly commitment (`saved`), the commitment that saves most (`best`), a
fleet's bill with both instruments (`fleet_bill_with`) and the pair best in hindsight
(`hindsight`).

The plan is a commitment of dollars an hour, paid whether used or not. Each hour it covers,
up to its amount, the hour's eligible spend at the discounted rates: on-demand throughput
and the provisioned capacity left after the reservation (a reservation applies first),
the spend with the deeper discount first, as AWS applies a Savings Plan. What it does not
cover is billed at the list price. So an hour's bill at commitment ``c`` is ``c`` plus the
list dollars left uncovered: a convex, piecewise linear function of ``c`` whose slope
changes only where ``c`` reaches the hour's discounted spend of the first kind, or of both
kinds. The fleet's bill, the hours' bills weighted by the share of each hour the part holds,
is the same, and its least lies at one of those points: `best` sorts them and walks the
slope up to where it stops falling, exactly.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .reserve_sizing import DIMENSIONS, Hours, fleet_bill, size
from .simulator.prices import BLOCK_UNITS, Prices

__all__ = [
    "Hour",
    "best",
    "bill",
    "commitment",
    "eligible",
    "fleet_bill_with",
    "hindsight",
    "saved",
]


@dataclass(frozen=True)
class Hour:
    """One hour's spend a Savings Plan may cover, in list dollars an hour (the whole hour's
    rate: ``weight`` is the share of the hour the part holds), by kind: on-demand throughput
    and provisioned capacity left after the reservation."""

    weight: float
    on_demand: float
    provisioned: float


def eligible(
    hours: Hours,
    reserved: dict[str, int],
    term: str | None,
    prices: Prices,
    factor: float = 1.0,
) -> list[Hour]:
    """``hours``' eligible spend (with every hour's units and on-demand dollars times
    ``factor``): on-demand dollars, and the provisioned units above ``reserved`` of ``term``
    (None: no reservation) at the list price, with what a reservation never covers
    (`Hours.outside`)."""
    on_demand, outside = hours.other_hourly()
    out = []
    for h, weight in enumerate(hours.weights):
        if weight <= 0:
            continue
        above = sum(
            max(0.0, factor * hours.units(d)[h] - (reserved.get(d, 0) if term else 0))
            * prices.unit_hour(d)
            for d in DIMENSIONS
        )
        out.append(
            Hour(weight, factor * on_demand[h] / weight, above + factor * outside[h] / weight)
        )
    return out


def _kinds(hour: Hour, prices: Prices) -> tuple[tuple[float, float], tuple[float, float]]:
    """The hour's two kinds of spend as (list dollars, discount), the deeper discount first."""
    od = (hour.on_demand, prices.savings_plan_on_demand_discount)
    pv = (hour.provisioned, prices.savings_plan_provisioned_discount)
    return (od, pv) if od[1] >= pv[1] else (pv, od)


def _covered(hour: Hour, commitment: float, prices: Prices) -> float:
    """The list dollars an hour ``commitment`` covers of ``hour``: the deeper-discounted
    kind first, each list dollar costing ``1 - discount`` of the commitment."""
    covered, left = 0.0, commitment
    for spend, discount in _kinds(hour, prices):
        used = min(left, spend * (1 - discount))
        covered += used / (1 - discount)
        left -= used
    return covered


def saved(spend: Sequence[Hour], commitment: float, prices: Prices) -> float:
    """Dollars the plan saves over ``spend`` at ``commitment`` dollars an hour: the list
    dollars it covers less the commitment paid (less than 0 when it covers too little)."""
    return sum(h.weight * (_covered(h, commitment, prices) - commitment) for h in spend)


def bill(spend: Sequence[Hour], commitment: float, prices: Prices) -> float:
    """Dollars for ``spend`` with the plan: the commitment, and every dollar it leaves
    uncovered at the list price."""
    listed = sum(h.weight * (h.on_demand + h.provisioned) for h in spend)
    return listed - saved(spend, commitment, prices)


def best(spend: Sequence[Hour], prices: Prices) -> float:
    """The hourly commitment whose bill over ``spend`` is least (the least of equal bills).

    The bill's slope in the commitment is, per hour and weighted, ``1 - 1 / (1 - d)``
    while the commitment is below the hour's discounted spend of the kind with the deeper
    discount ``d``, the same for the other kind up to the hour's whole discounted spend,
    and 1 above it. The slope only rises, so the least is at the first of those points
    where the slope to its right is no longer below 0."""
    events: list[tuple[float, float]] = []
    slope = 0.0
    for h in spend:
        (first, d1), (second, d2) = _kinds(h, prices)
        slope += h.weight * (1 - 1 / (1 - d1))
        events.append((first * (1 - d1), h.weight * (1 / (1 - d1) - 1 / (1 - d2))))
        events.append((first * (1 - d1) + second * (1 - d2), h.weight / (1 - d2)))
    events.sort()
    total = sum(h.weight for h in spend)
    at, i = 0.0, 0
    while True:
        while i < len(events) and events[i][0] <= at:
            slope += events[i][1]
            i += 1
        if slope >= -1e-9 * total or i == len(events):
            return at
        at = events[i][0]


def commitment(hours: Hours, reserved: dict[str, int], term: str | None, prices: Prices) -> float:
    """The hourly commitment that costs least over ``hours`` beside ``reserved`` units of
    ``term`` (`best` of their `eligible` spend)."""
    return best(eligible(hours, reserved, term, prices), prices)


def fleet_bill_with(
    hours: Hours,
    reserved: dict[str, int],
    term: str | None,
    prices: Prices,
    hourly: float,
    factor: float = 1.0,
) -> float:
    """`reserve_sizing.fleet_bill` with a Savings Plan of ``hourly`` dollars an hour besides
    (0: none)."""
    total = fleet_bill(hours, reserved, term, prices, factor)
    if hourly > 0:
        total -= saved(eligible(hours, reserved, term, prices, factor), hourly, prices)
    return total


HINDSIGHT_STEPS = 200
"""The most block steps the hindsight search takes from the reservation best alone."""


def hindsight(
    hours: Hours, term: str, prices: Prices, with_plan: bool = True
) -> tuple[dict[str, int], float, float]:
    """The reserved units of ``term``, the hourly commitment (0 when not ``with_plan``) and
    the bill that cost least over ``hours`` themselves: from the reservation best alone
    (`reserve_sizing.size`), one block at a time up or down per dimension while the bill
    with the commitment best beside it (`commitment`) falls."""

    def cost(units: dict[str, int]) -> tuple[float, float]:
        hourly = commitment(hours, units, term, prices) if with_plan else 0.0
        return fleet_bill_with(hours, units, term, prices, hourly), hourly

    units = size(hours, term, prices, futures=(1.0,))
    (least, hourly), steps = cost(units), 0
    moved = True
    while moved and steps < HINDSIGHT_STEPS:
        moved = False
        for d in DIMENSIONS:
            for step in (-BLOCK_UNITS, BLOCK_UNITS):
                trial = {**units, d: units[d] + step}
                if trial[d] < 0:
                    continue
                bill_, trial_hourly = cost(trial)
                if bill_ < least - 1e-9:
                    units, least, hourly, moved = trial, bill_, trial_hourly, True
                    steps += 1
    return units, hourly, least
