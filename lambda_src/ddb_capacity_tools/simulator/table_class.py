"""Runs in: workstation (`ddb-capacity tune`, `advise`).

The table class advised with a recommendation (`class_advice`): its dollars a month under
Standard and under Standard-Infrequent Access, storage plus throughput in each, and the
cheaper, which the pasted code then sets.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ddb_capacity_runtime.core.tables import STANDARD as STANDARD
from ddb_capacity_runtime.core.tables import STANDARD_IA as STANDARD_IA
from ddb_capacity_runtime.core.tables import TABLE_CLASSES as TABLE_CLASSES

from .prices import Prices
from .text import fixed_width

CLASS_CAVEATS = (
    "Reserved capacity applies to the Standard class only: a table moved to Standard-IA "
    "leaves any reservation it used. AWS allows at most two table class updates per table "
    "in any 30 days, so switch only for a difference that lasts."
)
"""What the table-class advice cannot weigh, said with every piece of it."""


@dataclass(frozen=True)
class ClassBill:
    """One table class's dollars a month: storage and throughput."""

    storage_usd: float
    throughput_usd: float

    @property
    def total_usd(self) -> float:
        return self.storage_usd + self.throughput_usd

    def as_json(self) -> dict[str, float]:
        return {
            "storage_usd": round(self.storage_usd, 6),
            "throughput_usd": round(self.throughput_usd, 6),
            "total_usd": round(self.total_usd, 6),
        }


@dataclass(frozen=True)
class ClassAdvice:
    """The table class advised for a table of ``size_gb``: each class's bill a month, the
    cheaper recommended (Standard when they cost the same: nothing to move), and
    ``break_even_gb``, the size above which Standard-IA is cheaper at this throughput (None:
    it never is; 0: at any size)."""

    size_gb: float
    standard: ClassBill
    infrequent: ClassBill
    break_even_gb: float | None

    @property
    def recommended(self) -> str:
        cheaper = self.infrequent.total_usd < self.standard.total_usd
        return STANDARD_IA if cheaper else STANDARD

    def as_json(self) -> dict[str, Any]:
        return {
            "recommended": self.recommended,
            "size_gb": round(self.size_gb, 6),
            "standard": self.standard.as_json(),
            "standard_infrequent_access": self.infrequent.as_json(),
        }


def class_advice(size_gb: float, throughput_usd: float, prices: Prices) -> ClassAdvice:
    """The table class for a table of ``size_gb`` whose throughput (read and write
    capacity, or on-demand requests, its indexes' included) costs ``throughput_usd`` a
    month under Standard: storage at ``prices.storage_gb_month`` against
    ``prices.ia_storage_gb_month``, throughput times ``prices.ia_throughput_factor`` under
    Standard-IA. The 25 GB AWS stores free each month are the account's, not a table's, so
    they are not counted."""
    extra = throughput_usd * (prices.ia_throughput_factor - 1)
    saved_per_gb = prices.storage_gb_month - prices.ia_storage_gb_month
    break_even = None if saved_per_gb <= 0 else max(0.0, extra / saved_per_gb)
    return ClassAdvice(
        size_gb,
        ClassBill(size_gb * prices.storage_gb_month, throughput_usd),
        ClassBill(size_gb * prices.ia_storage_gb_month, throughput_usd + extra),
        break_even,
    )


def class_lines(advice: ClassAdvice) -> list[str]:
    """The table-class block: both classes' dollars a month, the recommendation with why in
    one sentence, and what the advice cannot weigh (`CLASS_CAVEATS`)."""
    std, ia = advice.standard, advice.infrequent
    rows: list[tuple[str, ...]] = [("class", "storage $", "throughput $", "total $", "")]
    for name, bill in ((STANDARD, std), (STANDARD_IA, ia)):
        money = (bill.storage_usd, bill.throughput_usd, bill.total_usd)
        mark = "<- recommended" if name == advice.recommended else ""
        rows.append((name, *(f"{v:,.2f}" for v in money), mark))
    stored = std.storage_usd - ia.storage_usd
    served = ia.throughput_usd - std.throughput_usd
    gb = f"{advice.size_gb:,.3f}".rstrip("0").rstrip(".") + " GB"
    if advice.recommended == STANDARD_IA:
        why = (
            f"at {gb}, Standard-IA stores the table for ${stored:,.2f} a month less, more than "
            f"the ${served:,.2f} more it charges for throughput"
        )
    else:
        why = (
            f"at {gb}, Standard-IA would store the table for ${stored:,.2f} a month less but "
            f"charge ${served:,.2f} more for throughput"
        )
    if advice.break_even_gb:
        why += f"; Standard-IA is cheaper above {advice.break_even_gb:,.1f} GB at this throughput"
    return [
        f"table class (dollars a month; {gb} stored, the recommendation's throughput):",
        *(f"  {line}" for line in fixed_width(rows, left=1)),
        f"  {advice.recommended}: {why}.",
        f"  {CLASS_CAVEATS}",
    ]
