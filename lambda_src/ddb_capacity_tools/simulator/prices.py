"""Runs in: workstation (the `ddb-capacity` command).

List prices the simulator charges, in one place (us-east-1, Standard table class): the
Amazon DynamoDB pricing page's, after the November 2024 cut of on-demand prices (docs:
Simulator, "Prices"); and the AWS Lambda pricing page's for the library's own functions
(us-east-1, arm64), which the fleet advisor's and the stream signal's costs are priced at.

Override any of them from code (``Prices(wcu_hour=...)``) or from the command line
(``--price wcu_hour=0.00070``).

Pre-warming (raising a table's warm throughput) is billed once for the warm throughput
added ("Understanding DynamoDB warm throughput": pre-warming beyond the default values is
charged; the amount is on the pricing page). No price for it was found published in a form
this project could check, so it has no default: ``warm_read_unit`` and ``warm_write_unit``
are the user's (``--price warm_write_unit=...``, dollars per read or write unit per second
of warm throughput added), and where they are not given a pre-warmed option is shown
unpriced and never recommended.

Reserved capacity (``ddb-capacity reserve``, docs: Reserved capacity) is bought per Region in
blocks of 100 provisioned units of the Standard table class, for a term of one year or three:
a one-time upfront fee and an hourly fee per block, paid whether the units are used or not.
The defaults are the us-east-1 figures in wide circulation (per 100 units: one year, $150 and
$0.0128 an hour for writes, $30 and $0.0025 for reads; three years, $180 and $0.0081 for
writes, $36 and $0.0016 for reads). AWS's own pages as stored here state the terms and the
discounts ("up to 54 %" for one year, "up to 77 %" for three: Amazon DynamoDB Developer
Guide, "DynamoDB reserved capacity"), which these figures reproduce to the percent, but not
the dollar figures themselves: they are UNVERIFIED (`RESERVED_VERIFIED`), and the plan says
so. Override each (``--price reserved_1y_wcu_upfront=...``).

A Database Savings Plan (docs: Commitments) is a one-year, no-upfront commitment of dollars
an hour across AWS's database services and Regions; for DynamoDB it takes a share off
on-demand throughput and off provisioned capacity, applied after reserved capacity. The
defaults are the shares commonly quoted for DynamoDB (up to 18 % off on-demand throughput, up
to 12 % off provisioned capacity), not checked against AWS's own pages: UNVERIFIED
(`SAVINGS_PLAN_VERIFIED`), and the plan says so. Override each
(``--price savings_plan_on_demand_discount=0.18``).

The Standard-Infrequent Access table class (docs: Tune, "Table class") stores data for less
and serves throughput for more: us-east-1 list prices, $0.25 a GB-month stored in Standard
against $0.10 in Standard-IA, and 25 % more per provisioned unit-hour and per on-demand
request unit in Standard-IA.

The library's own functions are priced at CloudWatch's us-east-1 list prices too (the
scaler's running cost, `scaler_cost`): $0.30 a custom metric a month, $0.01 per 1,000
metrics GetMetricData requests, $0.10 an alarm a month.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, fields, replace

from ddb_capacity_runtime.core.on_demand_hours import UnitPrices

from ..tool_errors import PriceError as PriceError

TERMS: dict[str, int] = {"1y": 8760, "3y": 26280}
"""The reservation terms AWS offers, and the hours each runs (a year of 365 days)."""
BLOCK_UNITS = 100
"""Reserved capacity is bought in blocks of this many read or write units."""
POSITIVE = {
    "wcu_hour": "the list price a reserved unit's break-even is a share of",
    "rcu_hour": "the list price a reserved unit's break-even is a share of",
}
"""The prices that may not be 0, and why: `Prices.break_even` divides by them."""
RESERVED_VERIFIED = False
"""Whether the reserved prices' defaults were checked against AWS's own pricing page (see the
module's docstring): they were not, and output that uses them says so."""
SAVINGS_PLAN_VERIFIED = False
"""Whether the Database Savings Plan's default discounts were checked against AWS's own
pricing page: they were not, and output that uses them says so."""
SAVINGS_PLAN_HOURS = 8760
"""A Database Savings Plan's term: one year, in hours."""
FRACTIONS = {
    "savings_plan_on_demand_discount": "the share a Database Savings Plan takes off on-demand "
    "throughput",
    "savings_plan_provisioned_discount": "the share a Database Savings Plan takes off "
    "provisioned capacity",
}
"""The prices that are shares of a list price, from 0 to below 1, and what each is."""
INSTRUMENT_PRICES = {
    "reserved": tuple(
        f"reserved_{term}_{kind}_{fee}"
        for term in ("1y", "3y")
        for kind in ("wcu", "rcu")
        for fee in ("upfront", "hour")
    ),
    "savings_plan": tuple(FRACTIONS),
}
"""Each commitment's prices, whose defaults are unverified (`unverified`)."""


@dataclass(frozen=True)
class Prices(UnitPrices):
    """Dollars per provisioned unit-hour and per million on-demand request units (`UnitPrices`,
    ``wcu_hour``, ``rcu_hour``, ``write_request_million``, ``read_request_million``); and
    Lambda's per GB-second (arm64) and per million requests."""

    lambda_gb_second: float = 0.0000133334
    lambda_request_million: float = 0.20
    warm_read_unit: float | None = None
    """One-time dollars per unit per second of warm throughput added by pre-warming (read, write).
    None: not priced (no published default; see the module's docstring)."""
    warm_write_unit: float | None = None
    reserved_1y_wcu_upfront: float = 150.0
    """Reserved capacity, one year: dollars up front per 100 write units."""
    reserved_1y_wcu_hour: float = 0.0128
    """Reserved capacity, one year: dollars an hour per 100 write units."""
    reserved_1y_rcu_upfront: float = 30.0
    reserved_1y_rcu_hour: float = 0.0025
    reserved_3y_wcu_upfront: float = 180.0
    reserved_3y_wcu_hour: float = 0.0081
    reserved_3y_rcu_upfront: float = 36.0
    reserved_3y_rcu_hour: float = 0.0016
    savings_plan_on_demand_discount: float = 0.18
    """Database Savings Plan: the share taken off on-demand throughput (UNVERIFIED)."""
    savings_plan_provisioned_discount: float = 0.12
    """Database Savings Plan: the share taken off provisioned capacity (UNVERIFIED)."""
    storage_gb_month: float = 0.25
    """Standard table class: dollars a GB-month stored (the 25 GB AWS stores free each month
    are the account's, whichever tables hold them, so a table's class is compared without them)."""
    ia_storage_gb_month: float = 0.10
    """Standard-Infrequent Access: dollars a GB-month stored."""
    ia_throughput_factor: float = 1.25
    """Standard-Infrequent Access: its price per provisioned unit-hour and per on-demand request
    unit, as a multiple of Standard's."""
    custom_metric_month: float = 0.30
    """CloudWatch: dollars a custom metric a month (an account's first 10,000), billed by the
    hour it has data."""
    metrics_requested_thousand: float = 0.01
    """CloudWatch: dollars per 1,000 metrics requested by GetMetricData."""
    alarm_month: float = 0.10
    """CloudWatch: dollars a standard-resolution alarm a month."""

    def provisioned(self, dimension: str, unit_minutes: float) -> float:
        """Dollars for ``unit_minutes`` of provisioned capacity (units x minutes)."""
        return unit_minutes / 60 * self.unit_hour(dimension)

    def on_demand(self, dimension: str, unit_second_minutes: float) -> float:
        """Dollars on-demand charges for serving ``unit_second_minutes`` (units per second,
        summed over minutes: each minute's requests are its units/s x 60)."""
        return unit_second_minutes * 60 * self.request_unit(dimension)

    def prewarm(self, read_units: float, write_units: float) -> float | None:
        """The one-time charge for pre-warming ``read_units`` and ``write_units`` of warm
        throughput (None: a price that is needed is not given)."""
        total = 0.0
        for units, price in (
            (read_units, self.warm_read_unit),
            (write_units, self.warm_write_unit),
        ):
            if units > 0:
                if price is None:
                    return None
                total += units * price
        return total

    def reserved_unit_hour(self, term: str, dimension: str) -> float:
        """Dollars an hour for one reserved unit of ``dimension`` over ``term`` (a key of
        `TERMS`): the hourly fee plus the upfront fee spread evenly over the term's hours, per
        unit (a block is `BLOCK_UNITS`)."""
        kind = "wcu" if dimension == "write" else "rcu"
        upfront = float(getattr(self, f"reserved_{term}_{kind}_upfront"))
        hourly = float(getattr(self, f"reserved_{term}_{kind}_hour"))
        return (upfront / TERMS[term] + hourly) / BLOCK_UNITS

    def break_even(self, term: str, dimension: str) -> float:
        """The share of hours a reserved unit must be provisioned to cost no more than the
        same unit bought hour by hour at the list price."""
        return self.reserved_unit_hour(term, dimension) / self.unit_hour(dimension)

    def overridden(self, pairs: Sequence[str]) -> Prices:
        """These prices with ``name=value`` overrides applied."""
        names = [f.name for f in fields(self)]
        changes: dict[str, float] = {}
        for pair in pairs:
            name, sep, text = pair.partition("=")
            if not sep or name not in names:
                raise PriceError(
                    f"--price: got {pair!r}; expected NAME=VALUE with NAME one of "
                    f"{', '.join(names)}"
                )
            try:
                value = float(text)
            except ValueError:
                value = math.nan
            if name in FRACTIONS and not 0 <= value < 1:
                raise PriceError(
                    f"--price {name}: got {text!r}; expected a fraction from 0 up to but not "
                    f"including 1 ({FRACTIONS[name]}: 0.18 is 18 %)"
                )
            if not math.isfinite(value) or value < 0:
                raise PriceError(f"--price {name}: got {text!r}; expected a number of dollars >= 0")
            if name in POSITIVE and value == 0:
                raise PriceError(
                    f"--price {name}: got {text!r}; expected a number of dollars > 0 "
                    f"({POSITIVE[name]})"
                )
            changes[name] = value
        return replace(self, **changes)


def unverified(prices: Prices) -> list[str]:
    """The commitments (keys of `INSTRUMENT_PRICES`) any of whose prices in ``prices`` is a
    default nobody checked: ``--price`` gives the user's own, taken as checked."""
    default = Prices()
    checked = {"reserved": RESERVED_VERIFIED, "savings_plan": SAVINGS_PLAN_VERIFIED}
    return [
        kind
        for kind, names in INSTRUMENT_PRICES.items()
        if not checked[kind] and any(getattr(prices, n) == getattr(default, n) for n in names)
    ]
