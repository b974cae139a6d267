"""Runs in: workstation (the `ddb-capacity` command).

``ddb-capacity reserve``'s plan in words (`text`), its fees and prices' status
(`fees_words`, the page's too), and the short plan ``advise --all-tables`` prints
(`summary_words`).
"""

from __future__ import annotations

from typing import Any

from .reserve import UNVERIFIED_WORDS, Plan, figures
from .simulator.prices import BLOCK_UNITS, TERMS, Prices, unverified
from .simulator.text import counted

__all__ = ["fees_words", "summary_words", "text", "units_words"]


def units_words(read: int, write: int, term: str) -> str:
    """A reservation's units and term, as every view of a plan says them."""
    return f"{read:,} read and {write:,} write units for {term}"


def summary_words(short: dict[str, Any]) -> str:
    """`summary` in one paragraph."""
    m, fall = short["monthly_usd"], short["fall_by_third_monthly_usd"]
    plan = (
        "no reservation pays"
        if short["term"] is None
        else f"reserve {units_words(short['read_units'], short['write_units'], short['term'])} "
        f"({_money(short['upfront_usd'])} up front)"
    )
    hourly = short.get("savings_plan_hourly", 0.0)
    if hourly > 0:
        d = short["savings_plan_discounts"]
        plan += (
            f", and commit {_money(hourly)} an hour to a Database Savings Plan (one year, no "
            f"upfront; {d['on_demand']:.0%} off on-demand, {d['provisioned']:.0%} off "
            "provisioned capacity)"
        )
    said = _unverified_words(short)
    return (
        f"commitments, on the recommendations: {plan}: {_money(m['with_plan'])} a month "
        f"with them, {_money(m['without_plan'])} without; with a third less traffic "
        f"{_money(fall['with_plan'])} and {_money(fall['without_plan'])}"
        f"{'; ' + said if said else ''} "
        "(docs: Commitments; ddb-capacity reserve plans them with each table's policy "
        "chosen again at the reserved rate)"
    )


def _unverified_words(short: dict[str, Any]) -> str:
    """Which of the commitments' prices are unverified defaults, in words ('' for none)."""
    names = short.get("unverified", [])
    return f"{' and '.join(names)} are unverified" if names else ""


def _money(value: float) -> str:
    return f"${value:,.2f}"


def text(plan: Plan, about: dict[str, Any]) -> str:
    """The plan in words: what was planned on, the plan, its dollars, the stress, how it was
    sized, and the prices' status."""
    f = figures(plan)
    lines = [about["heading"], ""]
    width = max((len(t.name) for t in plan.tables), default=5)
    lines.append(f"{'table':<{width}}  policy")
    for t in plan.tables:
        policy = plan.policies[t.name]
        why = "" if policy == t.listed.policy else f" (at list prices: {t.listed.policy})"
        why += " (the fleet report's)" if t.name in plan.setup.policies else ""
        lines.append(f"{t.name:<{width}}  {policy}{why}")
        lines.extend(f"{'':<{width}}  {w}" for w in t.warnings)
    lines += ["", *_plan_words(plan, f)]
    m, fall = f["monthly_usd"], f["fall_by_third_monthly_usd"]
    on = "the scored part" if plan.score is not None else "the planning part"
    lines += [
        f"a month, on {on}: {_money(m['with_plan'])} with the plan, "
        f"{_money(m['reservation_only'])} with the reservation alone, "
        f"{_money(m['without_plan'])} without either",
        f"if traffic falls by a third: {_money(fall['with_plan'])} with the plan, "
        f"{_money(fall['without_plan'])} without it",
    ]
    if plan.score is not None and plan.term is not None and m["with_plan"] > m["without_plan"]:
        lines.append(
            f"warning: on the scored part the reservation cost "
            f"{_money(m['with_plan'] - m['without_plan'])} a month more than buying none: the "
            "planning part's hours did not hold there; plan on a longer history, or reserve "
            "less than this plan"
        )
    if "hindsight" in f:
        lines.append(_hindsight_words(f["hindsight"], m["with_plan"]))
    if "current_monthly_usd" in f:
        lines.append(
            f"every table on --current {plan.setup.current} (the policy taken to have made "
            f"the past bill), no reservation: {_money(f['current_monthly_usd'])} a month"
        )
    if plan.score is not None:
        lines.append(
            f"refused on the scored part: {plan.refused:,.0f} units under these policies, "
            f"{plan.current_refused:,.0f} under "
            f"{plan.setup.current}"
        )
    be = f["break_even"]
    lines += [
        "break-even: a reserved unit pays when provisioned in "
        + "; ".join(f"{t}: {be[t]['read']:.0%} (read), {be[t]['write']:.0%} (write)" for t in TERMS)
        + " of hours",
        _sized_words(plan, f),
        *fees_words(plan),
    ]
    return "\n".join(lines)


def _plan_words(plan: Plan, f: dict[str, Any]) -> list[str]:
    """The plan's lines: the reservation, then the Savings Plan's commitment."""
    if plan.term is None:
        out = ["plan: no reservation (no block of 100 units pays on these hours)"]
    else:
        r, w = plan.units["read"], plan.units["write"]
        out = [
            f"plan: reserve {r:,} read units ({counted(r // BLOCK_UNITS, 'block')}) and {w:,} "
            f"write units ({counted(w // BLOCK_UNITS, 'block')}) for {plan.term} "
            f"({_money(f['upfront_usd'])} up front)"
        ]
    hourly = plan.savings_plan_hourly
    if not plan.setup.savings_plan:
        out.append("Database Savings Plan: not planned (--no-savings-plan)")
    elif hourly > 0:
        out.append(
            f"and a Database Savings Plan: commit {_money(hourly)} an hour for one year, no "
            f"upfront ({_money(f['savings_plan_monthly_usd'])} a month, paid whether used or "
            "not), on the on-demand spend and the provisioned spend the reservation leaves"
        )
    else:
        out.append("Database Savings Plan: none pays on these hours")
    return out


def _hindsight_words(best: dict[str, Any], ours: float) -> str:
    return (
        f"in hindsight (the plan best for the scored hours themselves): reserve "
        f"{best['read_units']:,} read / {best['write_units']:,} write units for "
        f"{best['term']} and commit {_money(best['savings_plan_hourly'])} an hour: "
        f"{_money(best['monthly_usd'])} a month (the plan: {_money(ours)}, "
        f"{ours / best['monthly_usd'] if best['monthly_usd'] else 1.0:.3f} x)"
    )


def fees_words(plan: Plan) -> list[str]:
    """Each instrument's fees (reserved capacity's per 100 units and term, the Savings
    Plan's discounts), then which prices are unverified (the text's and the page's)."""
    prices = plan.prices
    reserved = "; ".join(
        f"{term}: {_money(getattr(prices, f'reserved_{term}_wcu_upfront'))} up front + "
        f"${getattr(prices, f'reserved_{term}_wcu_hour'):.4f} an hour (write), "
        f"{_money(getattr(prices, f'reserved_{term}_rcu_upfront'))} + "
        f"${getattr(prices, f'reserved_{term}_rcu_hour'):.4f} (read)"
        for term in TERMS
    )
    return [
        f"fees: reserved capacity per 100 units, {reserved}",
        "fees: Database Savings Plan, one year, no upfront, the hourly commitment paid every "
        f"hour: {prices.savings_plan_on_demand_discount:.0%} off on-demand throughput, "
        f"{prices.savings_plan_provisioned_discount:.0%} off provisioned capacity",
        _prices_words(prices),
    ]


def _sized_words(plan: Plan, f: dict[str, Any]) -> str:
    anchor = f["anchors"]
    terms = ", ".join(
        f"{t}: {v['units']['read']:,} read / {v['units']['write']:,} write"
        for t, v in plan.by_term.items()
    )
    return (
        "how it was sized: the blocks that would have cost least over the planning part's "
        "hours under each table's policy, cut to the most that still cost no more than no "
        f"reservation if traffic fell by a third ({terms}); the least bill chooses the term. "
        "From "
        f"{plan.setup.current}'s hours instead, the level met in 95 % of hours would be "
        f"{anchor['nops_95']['units']['read']:,} / {anchor['nops_95']['units']['write']:,} "
        f"({_money(anchor['nops_95']['monthly_usd'])} a month), the past-optimal level "
        f"{anchor['past_optimal']['units']['read']:,} / "
        f"{anchor['past_optimal']['units']['write']:,} "
        f"({_money(anchor['past_optimal']['monthly_usd'])} a month)"
    )


def _prices_words(prices: Prices) -> str:
    said = [UNVERIFIED_WORDS[k] for k in unverified(prices)]
    given = "us-east-1 list prices" if prices == Prices() else "as given with --price"
    if not said:
        return f"prices: {given}"
    return (
        f"prices: {given}; {' and '.join(said)} are UNVERIFIED defaults (docs: Commitments, "
        "'Checking the prices'): check them and override with --price"
    )
