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
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, fields, replace

from ddb_capacity_runtime.core.errors import CapacityError


class PriceError(CapacityError, ValueError):
    """A price override that is not a known name with a non-negative number."""


@dataclass(frozen=True)
class Prices:
    """Dollars per provisioned unit-hour and per million on-demand request units; and
    Lambda's per GB-second (arm64) and per million requests."""

    wcu_hour: float = 0.00065
    rcu_hour: float = 0.00013
    write_request_million: float = 0.625
    read_request_million: float = 0.125
    lambda_gb_second: float = 0.0000133334
    lambda_request_million: float = 0.20
    warm_read_unit: float | None = None
    """One-time dollars per unit per second of warm throughput added by pre-warming (read, write).
    None: not priced (no published default; see the module's docstring)."""
    warm_write_unit: float | None = None

    def unit_hour(self, dimension: str) -> float:
        return self.wcu_hour if dimension == "write" else self.rcu_hour

    def request_unit(self, dimension: str) -> float:
        per_million = (
            self.write_request_million if dimension == "write" else self.read_request_million
        )
        return per_million / 1_000_000

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
            if not math.isfinite(value) or value < 0:
                raise PriceError(f"--price {name}: got {text!r}; expected a number of dollars >= 0")
            changes[name] = value
        return replace(self, **changes)
