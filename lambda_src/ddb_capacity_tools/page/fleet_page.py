"""Runs in: workstation (``ddb-capacity advise --all-tables --report``), advisor report
Lambda.

The fleet page: the fleet's totals, then one row per table (current cost, recommended
cost, saving, the recommendation and the reason), largest saving first, sortable by any
column and filtered by words and status; each advised or failed table links to its own
page ([`pages.table_page`][ddb_capacity_tools.page.table_page]) under ``links``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ddb_capacity_runtime.core.names import is_table_name

from ..reserve_words import units_words
from .document import bar, document, figure, link, money, table, text
from .pages import table_page

if TYPE_CHECKING:
    from ..advise import Advice, Failure
    from ..fleet_rows import Report, Row

__all__ = ["TABLE_PAGES", "fleet_page", "page_name", "table_pages"]

TABLE_PAGES = "tables/"
"""Where the table pages go, beside the fleet page."""
HEADER = (
    ("table", False),
    ("status", False),
    ("current", False),
    ("now $/mo", True),
    ("recommended", False),
    ("then $/mo", True),
    ("saved $/mo", True),
    ("refusals avoided/mo", True),
    ("reason", False),
)


def page_name(table_name: str) -> str:
    """A table page's file name (a table name is 3-255 of ``a-z A-Z 0-9 _ . -``)."""
    return f"{table_name}.html"


def table_pages(
    results: Sequence[Advice | Failure], about: dict[str, Any] | None = None
) -> dict[str, str]:
    """Each table's page ([`pages.table_page`][ddb_capacity_tools.page.table_page]) by its name
    under `TABLE_PAGES`, for the rows `fleet_page` links: tables (not GSIs) whose
    name is a table name."""
    return {
        TABLE_PAGES + page_name(r.table): table_page(r, about)
        for r in results
        if r.index is None and is_table_name(r.table)
    }


def _name(row: Row, links: str | None) -> object:
    where = row.table + (f" / {row.index}" if row.index else "")
    if links is None or row.status == "missing" or row.index or not is_table_name(row.table):
        return where
    return link(links + page_name(row.table), where)


def _cells(row: Row, links: str | None, most: float) -> list[tuple[object, float | None]]:
    saved = row.usd_saved_per_month
    avoided = row.refusals_avoided_per_month
    return [
        (_name(row, links), None),
        (row.status, None),
        (row.current or "", None),
        (money(row.usd_per_month_current), row.usd_per_month_current),
        (row.recommended or "", None),
        (money(row.usd_per_month_recommended), row.usd_per_month_recommended),
        (bar(money(saved), (saved or 0.0) / most) if saved is not None else "unknown", saved),
        ("unknown" if avoided is None else f"{avoided:,.0f}", avoided),
        (row.reason, None),
    ]


def _totals(t: dict[str, Any]) -> str:
    return (
        '<div class="figures">'
        + figure("tables", f"{t['tables']:,}")
        + figure("advised / failed / missing", f"{t['advised']} / {t['failed']} / {t['missing']}")
        + figure("now, a month", money(t["usd_per_month_current"]))
        + figure("recommended, a month", money(t["usd_per_month_recommended"]))
        + figure(
            "saved a month",
            money(t["usd_saved_per_month"]),
            "good" if t["usd_saved_per_month"] >= 0 else "bad",
        )
        + figure("refusals avoided a month", f"{t['refusals_avoided_per_month']:,.0f}")
        + "</div>"
    )


def _fees(plan: dict[str, Any]) -> str:
    """The Savings Plan's discounts, and which prices are unverified, in words."""
    said = plan.get("unverified") or (
        [] if plan.get("reserved_verified", True) else ["the reserved fees"]
    )
    d = plan.get("savings_plan_discounts")
    off = (
        f" The Savings Plan takes {d['on_demand']:.0%} off on-demand throughput and "
        f"{d['provisioned']:.0%} off provisioned capacity."
        if d
        else ""
    )
    return off + (f" {' and '.join(said).capitalize()} are unverified." if said else "")


def _reservation(plan: dict[str, Any] | None) -> str:
    """The fleet's reservation plan, and each table's median hourly units under its
    recommendation beside it; nothing when no plan was made."""
    if plan is None:
        return ""
    units = plan["median_hourly_units"]
    total = {d: sum(v[d] for v in units.values()) or 1.0 for d in ("read", "write")}
    rows = sorted(units.items(), key=lambda kv: -(kv[1]["read"] + 5 * kv[1]["write"]))
    m = plan["monthly_usd"]
    words = (
        "no reservation pays"
        if plan["term"] is None
        else units_words(plan["read_units"], plan["write_units"], plan["term"])
    )
    hourly = plan.get("savings_plan_hourly", 0.0)
    return (
        "<h2>Reserved capacity and Savings Plan</h2>"
        '<div class="figures">'
        + figure("plan", words)
        + figure("Savings Plan, an hour", money(hourly))
        + figure("a month with them", money(m["with_plan"]), "good")
        + figure("a month without them", money(m["without_plan"]))
        + figure("up front", money(plan["upfront_usd"]))
        + "</div>"
        + '<p class="muted">'
        + text(
            "Sized on each table's recommendation over its whole history (docs: Commitments): "
            "an hour's units are the highest provisioned in it, summed over the tables; the "
            "Database Savings Plan's hourly commitment (one year, no upfront) is the one that "
            "would have cost least beside the reservation, on the on-demand spend and the "
            "provisioned spend the reservation leaves. `ddb-capacity reserve` plans them "
            "with each table's policy chosen again at the reserved rate and scores them on "
            "history they were not planned on."
            + _fees(plan)
        )
        + "</p>"
        + table(
            (("table", False), ("read units an hour", True), ("share", True),
             ("write units an hour", True), ("share", True)),
            (
                (
                    (name, None),
                    ("Standard-IA" if v.get("infrequent_access") else f"{v['read']:,.0f}",
                     v["read"]),
                    (f"{v['read'] / total['read']:.0%}", v["read"] / total["read"]),
                    (
                        "Standard-IA" if v.get("infrequent_access")
                        else "replicated" if v.get("replicated_writes")
                        else f"{v['write']:,.0f}",
                        v["write"],
                    ),
                    (f"{v['write'] / total['write']:.0%}", v["write"] / total["write"]),
                )
                for name, v in rows
            ),
            'id="reservation" class="sortable"',
        )
    )  # fmt: skip


def _controls() -> str:
    return (
        '<div class="controls"><input type="search" data-filter="fleet" '
        'placeholder="Filter: table, policy or reason" aria-label="filter the tables">'
        '<select data-status="fleet" aria-label="status"><option value="">every status'
        '</option><option value="advised">advised</option><option value="failed">failed'
        '</option><option value="missing">missing</option></select>'
        '<span data-shown="fleet" class="muted"></span></div>'
    )


def fleet_page(report: Report, links: str | None = TABLE_PAGES) -> str:
    """The fleet page of ``report``; table pages linked under ``links`` (None: no links)."""
    rows = sorted(report.rows, key=lambda r: -(r.usd_saved_per_month or 0.0))
    most = max((abs(r.usd_saved_per_month or 0.0) for r in rows), default=0.0) or 1.0
    about = ", ".join(f"{k} {v}" for k, v in report.about.items())
    t = report.totals()
    unknown = t["current_unknown"]
    body = (
        f'<h1>Fleet report</h1><p class="lead">{text(about)}</p>{_totals(t)}'
        '<p class="muted">Totals cover the tables whose current settings are known'
        f"{text(f' (unknown for {unknown})' if unknown else '')}; a saving below zero is a "
        "recommendation that costs more because it refuses less. Click a column to sort, "
        "a table to see its own page.</p>"
        f"{_reservation(report.reservation)}"
        "<h2>Tables</h2>"
        f"{_controls()}"
        + table(
            HEADER,
            (_cells(r, links, most) for r in rows),
            'id="fleet" class="sortable filterable"',
            (
                f'data-status="{text(r.status)}" data-saved="{r.usd_saved_per_month or 0.0:.2f}"'
                for r in rows
            ),
        )
    )
    return document("Fleet report", body)
