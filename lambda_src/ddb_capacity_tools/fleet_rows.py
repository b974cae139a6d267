"""Runs in: workstation (``ddb-capacity advise --all-tables --report``), advisor report
Lambda.

The fleet report's data: one `Row` a table and the `Report` of them, with its totals.
`fleet` builds it from ``advise``'s results and writes it as CSV and JSON; the fleet page
(`page.fleet_page`) renders it. Both import it; it imports neither.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Report", "Row"]


@dataclass(frozen=True)
class Row:
    """One table of the report; None where a figure is unknown."""

    table: str
    index: str | None
    status: str  # advised | failed | missing
    recommended: str | None = None
    usd_per_month_recommended: float | None = None
    current: str | None = None
    usd_per_month_current: float | None = None
    usd_saved_per_month: float | None = None
    refused_per_month_current: float | None = None
    refused_per_month_recommended: float | None = None
    refusals_avoided_per_month: float | None = None
    reason: str = ""
    table_class: str | None = None
    """the table class advised (`simulator.tune.TABLE_CLASSES`); None: none was"""


@dataclass(frozen=True)
class Report:
    rows: list[Row]
    about: dict[str, Any] = field(default_factory=dict)
    reservation: dict[str, Any] | None = None
    """the fleet's commitments on the recommendations (`reserve.summary`: the reservation
    and the Database Savings Plan's hourly commitment beside it); None: not made (a single
    table, or the nightly advisor)"""

    def totals(self) -> dict[str, Any]:
        """Counts by status, and the figures summed over the tables whose current
        settings are known."""
        known = [r for r in self.rows if r.usd_saved_per_month is not None]
        return {
            "tables": len(self.rows),
            "advised": sum(r.status == "advised" for r in self.rows),
            "failed": sum(r.status == "failed" for r in self.rows),
            "missing": sum(r.status == "missing" for r in self.rows),
            "current_unknown": sum(
                r.status == "advised" and r.usd_saved_per_month is None for r in self.rows
            ),
            "usd_per_month_current": _sum(r.usd_per_month_current for r in known),
            "usd_per_month_recommended": _sum(r.usd_per_month_recommended for r in known),
            "usd_saved_per_month": _sum(r.usd_saved_per_month for r in known),
            "refusals_avoided_per_month": _sum(r.refusals_avoided_per_month for r in known),
        }


def _sum(values: Iterable[float | None]) -> float:
    return round(sum(v or 0.0 for v in values), 2)
