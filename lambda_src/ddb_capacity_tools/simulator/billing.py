"""Runs in: workstation (the `ddb-capacity` command).

How provisioned capacity is billed: the one rule every command (`simulate`, `backtest`,
`tune`, `advise`, `reserve`, their pages) and every policy, the oracle and the bound
included, prices provisioned capacity by.

AWS bills provisioned capacity in unit-hours (the Cost and Usage Report's
``ReadCapacityUnit-Hrs`` and ``WriteCapacityUnit-Hrs`` line items, at the pricing page's
hourly rate). How a level that changes within an hour becomes that hour's units is not
spelled out in AWS's own material, so the default basis is the one that never under-charges
provisioned capacity against on-demand: each clock hour at its highest level
(`HOURLY_MAX`). Billing by the minute (`PER_MINUTE`: unit-minutes over 60) is the option.

A series' minutes are grouped by the UTC clock hour they fall in; an hour that the series
holds only some minutes of (at a trace's or a part's edge) is weighted by those minutes. A
minute provisioned at 0 is a minute on on-demand (the hybrid's): its requests are billed
by request, outside provisioned capacity.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final, Literal, TypeGuard

from ..tool_errors import ModelError
from .prices import Prices

BillingBasis = Literal["hourly-max", "per-minute"]
"""How a provisioned level that changes within an hour is billed: ``hourly-max``, each clock
hour at its highest level (the default); ``per-minute``, each minute at its level, a sixtieth
of the hour's price."""

HOURLY_MAX: Final = "hourly-max"
PER_MINUTE: Final = "per-minute"
BASES: Final[tuple[BillingBasis, ...]] = (HOURLY_MAX, PER_MINUTE)
DEFAULT_BASIS: Final[BillingBasis] = HOURLY_MAX

BASIS_WORDS: Final[dict[str, str]] = {
    HOURLY_MAX: "each clock hour billed at its highest provisioned level",
    PER_MINUTE: "provisioned capacity billed by the minute",
}
"""Each basis as outputs say it."""

BILLING_HELP: Final = (
    "how provisioned capacity is billed, hourly-max or per-minute: hourly-max, each clock "
    "hour at its highest "
    "provisioned level; per-minute, each minute at its level, a sixtieth of the hour's "
    "price; default hourly-max (docs: Simulator, 'Billing basis')"
)
"""The ``--billing`` option's help, every command's."""

HOUR_MINUTES = 60


def is_basis(value: object) -> TypeGuard[BillingBasis]:
    return isinstance(value, str) and value in BASES


def check_basis(value: object, name: str = "billing") -> BillingBasis:
    """``value`` as a basis; a `ModelError` naming ``name``, the value and the bases."""
    if not is_basis(value):
        raise ModelError(
            f"{name}: got {value!r}; expected hourly-max (each clock hour at its highest "
            "provisioned level, the default) or per-minute (each minute at its level)"
        )
    return value


def basis_line(basis: str) -> str:
    """The line outputs print: the basis and what it means."""
    return f"Billing basis: {basis} ({BASIS_WORDS[basis]})."


def billed_hours(
    levels: Sequence[float], first: int, basis: str
) -> tuple[list[float], list[float]]:
    """Per clock hour ``levels`` (one a minute) touch: the units billed for it and its
    weight (the share of the hour they hold). ``first``: the minute of its clock hour the
    first level is at (0 to 59). Hourly-max: the hour's highest level; per-minute: the mean
    of its levels (so units x weight is its unit-minutes over 60)."""
    units: list[float] = []
    weights: list[float] = []
    i, n = 0, len(levels)
    step = HOUR_MINUTES - first % HOUR_MINUTES
    hourly = basis == HOURLY_MAX
    while i < n:
        chunk = levels[i : i + step]
        units.append(max(chunk) if hourly else sum(chunk) / len(chunk))
        weights.append(len(chunk) / HOUR_MINUTES)
        i += step
        step = HOUR_MINUTES
    return units, weights


def unit_hours(levels: Sequence[float], first: int, basis: str) -> float:
    """The unit-hours billed for ``levels`` (as `billed_hours` takes them)."""
    if basis == PER_MINUTE:
        return sum(levels) / HOUR_MINUTES
    units, weights = billed_hours(levels, first, basis)
    return sum(u * w for u, w in zip(units, weights, strict=True))


def charge(
    dimension: str,
    provisioned: Sequence[int],
    served: Sequence[float],
    prices: Prices,
    first: int,
    basis: str,
) -> float:
    """Dollars for one key's minutes: its provisioned unit-hours (`unit_hours`) at the list
    price, and the requests of its minutes provisioned at 0 (on-demand) by request."""
    od = sum(s for p, s in zip(provisioned, served, strict=True) if p <= 0)
    billed = unit_hours(provisioned, first, basis) * prices.unit_hour(dimension)
    return billed + (prices.on_demand(dimension, od) if od else 0.0)


def charged_above(
    levels: Sequence[Sequence[int]], reserved: int, first: int, basis: str
) -> list[float]:
    """Per key of one dimension (``levels``: each key's minutes), the unit-hours charged
    at the list price when ``reserved`` units cover the dimension's total: per minute
    (per-minute) or per clock hour (hourly-max, the keys' highest levels summed), the part
    of the total above ``reserved``, shared among the keys in proportion to what each had
    then, so the keys' charges add up to the dimension's."""
    if basis == PER_MINUTE:
        totals = [sum(minute) for minute in zip(*levels, strict=True)]
        shares = [1 - reserved / t if t > reserved else 0.0 for t in totals]
        return [sum(p * s for p, s in zip(key, shares, strict=True)) / 60 for key in levels]
    hours = [billed_hours(key, first, basis) for key in levels]
    weights = hours[0][1] if hours else []
    totals = [sum(h) for h in zip(*(units for units, _ in hours), strict=True)]
    shares = [
        w * (1 - reserved / t) if t > reserved else 0.0
        for t, w in zip(totals, weights, strict=True)
    ]
    return [sum(u * s for u, s in zip(units, shares, strict=True)) for units, _ in hours]
