"""Runs in: workstation (the `ddb-capacity` command).

List prices the simulator charges, in one place (us-east-1, Standard table class): the
Amazon DynamoDB pricing page's, after the November 2024 cut of on-demand prices (docs:
Simulator, "Prices"); and the AWS Lambda pricing page's for the library's own functions
(us-east-1, arm64), which the fleet advisor's and the stream signal's costs are priced at.

Override any of them from code (``Prices(wcu_hour=...)``) or from the command line
(``--price wcu_hour=0.00070``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, fields, replace


class PriceError(ValueError):
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
