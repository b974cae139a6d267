"""Runs in: workstation (`ddb-capacity tune`, `advise`).

A recommendation in words: its one-sentence summary, its reason, what on-demand would
cost, every term explained (`terms`), and the candidates' table (`table`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .candidates import (
    ON_DEMAND,
    SCALER_KINDS,
    STREAM_SECONDS,
    Candidate,
    Rule,
    Tuning,
    compared_only,
    noise,
    rank_by,
    spec_of,
    split_prewarm,
    streamed,
)
from .ensemble import Spread
from .hybrid import HISTORY_DAYS, SWITCH_MINUTES, SWITCHES_PER_DAY
from .table_class import class_lines
from .text import counted, fixed_width
from .trace import Trace
from .tune_prune import PRUNE_MARGIN


def simpler_words(pick: Candidate, ruled: Candidate, rule: Rule, period: str) -> str:
    extra = rank_by(rule)(pick)[0] - rank_by(rule)(ruled)[0]
    verb = "costs" if rule.price is None else "scores"
    than = (
        f"{verb} as much"
        if abs(extra) < 0.005
        else f"{verb} ${abs(extra):,.2f}{period} {'more' if extra > 0 else 'less'}"
    )
    return (
        f"The rule alone picks {ruled.policy} (${ruled.cost:,.2f}{period}); {pick.policy} is "
        f"simpler to deploy and {than}, within the noise "
        f"(${noise(ruled):,.2f}: half the spread of {ruled.policy}'s cost over the ensemble), "
        "so the simpler is recommended."
    )


def recommendation_summary(
    pick: Candidate, best: Candidate, rule: Rule, simpler_than: bool, period: str
) -> str:
    """The recommendation in one sentence (the stock target refusing least, when it is the
    pick, said to be it rather than named as its own limit)."""
    c, r = pick.cost_usd, pick.throttled_requests
    itself = pick.policy == best.policy
    if rule.price is not None:
        why = f"the least cost plus refused units at ${rule.price:,.2f} per million"
    else:
        why = (
            "the cheapest within the refusals it sets as the limit"
            if itself
            else f"the cheapest within the refusals {best.policy} (the stock target refusing "
            "least) sets as the limit"
        )
        why = f"the simplest within the noise of {why}" if simpler_than else why
        why = f"the stock target refusing least, and {why}" if itself else why
    return (
        f"Use {pick.policy}: {why}, at ${c.median:,.2f}{period} (${c.min:,.2f} to "
        f"${c.max:,.2f} over the ensemble), refusing {_amount(r.median)} units{period} "
        f"({_amount(r.min)} to {_amount(r.max)})."
    )


def on_demand_figures(
    placed: Sequence[Candidate], pick: Candidate, within: Sequence[Candidate], rule: Rule
) -> dict[str, Any]:
    """On-demand against the recommendation, or, when on-demand is the recommendation,
    against the provisioned candidate the rule would pick without it (the cheapest within
    the limit, or the best at the refusal price): ``difference_usd`` is what on-demand
    saves in dollars (negative: what it costs more)."""
    od = next((c for c in placed if c.policy == ON_DEMAND), None)
    if od is None:
        return {"wins": False, "cost_usd": None}
    provisioned = [c for c in within if c.policy != ON_DEMAND]
    versus = min(provisioned, key=rank_by(rule), default=None) if pick is od else pick
    return {
        "wins": pick is od,
        "cost_usd": round(od.cost, 6),
        "throttled_requests": round(od.refused, 6),
        "within_limit": any(c is od for c in within),
        "versus": versus.policy if versus else None,
        "versus_cost_usd": round(versus.cost, 6) if versus else None,
        "difference_usd": round(versus.cost - od.cost, 6) if versus else None,
    }


def _money(value: float) -> str:
    return f"${value:,.2f}"


def _share(part: float, whole: float) -> str:
    return f"{part / whole:.0%}" if whole > 0 else "all"


def reason_words(
    pick: Candidate,
    best: Candidate,
    rule: Rule,
    requested: float,
    count: int,
    od: dict[str, Any],
    period: str = "",
) -> str:
    """Why ``pick``, in words; ``period`` follows every amount."""

    def money(value: float) -> str:
        return f"${value:,.2f}{period}"

    units = f"units{period}"
    if rule.price is not None:
        charge = pick.refused * rule.price / 1_000_000
        words = [
            f"{pick.policy} costs the least once each refused unit is charged at "
            f"${rule.price:,.2f} per million: {money(pick.cost)} and {pick.refused:,.0f} "
            f"{units} refused ({money(charge)} at that price), medians over the ensemble."
        ]
    else:
        words = [
            f"{pick.policy} is the cheapest of the {counted(count, 'candidate')} that "
            f"refuse{'s' if count == 1 else ''} "
            f"{_allowed(best, rule, requested, units)}: {money(pick.cost)}, "
            f"{pick.refused:,.0f} {units} refused (medians over the ensemble)."
        ]
    if pick is not best and not (od.get("wins") and od.get("versus") == best.policy):
        saved = best.cost - pick.cost
        more = "less" if saved >= 0 else "more"
        words.append(
            f"It costs {money(abs(saved))} ({_share(abs(saved), best.cost)}) {more} than "
            f"{best.policy} ({money(best.cost)}, {best.refused:,.0f} {units} refused), the "
            "stock setting that refuses least."
        )
    words += _worst_words(pick, best, units)
    words.append(_on_demand_words(od, money, units))
    return " ".join(words)


def _worst_words(pick: Candidate, best: Candidate, units: str) -> list[str]:
    """A warning when ``pick``'s worst model setting refuses more than ``best``'s worst:
    the rule compares medians, and on a trace whose bursts the settings disagree on, the
    pick's worst case can be well past the reference's."""
    worst, theirs = pick.throttled_requests.max, best.throttled_requests.max
    if pick is best or worst <= theirs:
        return []
    return [
        f"Its worst model setting refuses {worst:,.0f} {units}, more than {best.policy}'s "
        f"worst ({theirs:,.0f}): the rule compares medians over the ensemble, so weigh that "
        "worst case (the max of the table's refused units) before deploying, or deploy "
        f"{best.policy}."
    ]


def compared_words(placed: Sequence[Candidate], pick: Candidate, period: str) -> str:
    """What each candidate of ``placed`` whose one-time charge is not priced would cost and
    refuse before it: the one kind the rule cannot weigh against ``pick`` (a pruned candidate
    is marked in the table instead)."""
    return "".join(
        f" {c.policy} would cost ${c.cost:,.2f}{period} and refuse {c.refused:,.0f} "
        f"units{period} before its one-time pre-warming charge, which is not priced: "
        "give --price warm_read_unit=USD and --price warm_write_unit=USD to weigh it."
        for c in placed
        if c.once_usd is None
    )


def _allowed(best: Candidate, rule: Rule, requested: float, units: str) -> str:
    """The limit rule's limit, in words."""
    parts = [f"{best.refused:,.0f} {units}: the stock setting that refuses least"]
    if rule.tolerance:
        parts.append(f"plus {rule.tolerance:.0%}")
    if rule.floor:
        parts.append(
            f"plus {rule.floor:.2%} of the {requested:,.0f} requested {units} "
            f"({rule.floor * requested:,.0f})"
        )
    limit = rule.limit(best, requested)
    extra = f", {limit:,.0f} {units} in all" if len(parts) > 1 else ""
    return f"no more than {best.policy} refuses ({', '.join(parts)}{extra})"


def _on_demand_words(od: dict[str, Any], money: Any, units: str) -> str:
    if od["cost_usd"] is None:
        return "On-demand was not run."
    if od["wins"] and od["versus"] is not None:
        return (
            f"On-demand wins: {money(od['difference_usd'])} "
            f"({_share(od['difference_usd'], od['versus_cost_usd'])}) less than "
            f"{od['versus']} ({money(od['versus_cost_usd'])}), the provisioned candidate the "
            "rule would pick without it."
            if od["difference_usd"] >= 0
            else f"On-demand wins on refusals: it costs {money(-od['difference_usd'])} more "
            f"than {od['versus']} ({money(od['versus_cost_usd'])}), the provisioned candidate "
            "the rule would pick without it."
        )
    if not od["within_limit"]:
        return (
            f"On-demand would cost {money(od['cost_usd'])} but refuses "
            f"{od['throttled_requests']:,.0f} {units}, more than the limit: it serves at once only "
            "up to double its previous peak (more about 30 minutes later), and a hot key's "
            "partition throttles whatever the mode."
        )
    if od["difference_usd"] > 0:  # cheaper, but its refusals cost more at the price
        return (
            f"On-demand would cost {money(od['cost_usd'])}, {money(od['difference_usd'])} "
            f"less, but refuses {od['throttled_requests']:,.0f} {units}."
        )
    return f"On-demand would cost {money(od['cost_usd'])}, {money(-od['difference_usd'])} more."


TERMS = {
    "stock": "stock:T: Application Auto Scaling target tracking at T % utilization on read "
    "and write, as ProvisionedTable sets it up alone; no library scaler",
    "autopilot": "autopilot:T: the library's ThrottleAwareScaler in autopilot mode, without "
    "target tracking: it raises at once when requests are throttled, raises ahead of peaks "
    "it forecasts from the table's own history and plans decreases within the day's quota, "
    "aiming at T % utilization",
    "autopilot+stock": "autopilot+stock:T: stock target tracking at T % with the autopilot "
    "scaler on top (it moves the scalable target's minimum, so auto scaling knows)",
    "owned": "+owned: the scaler also owns target tracking's target value (own_target=True) "
    "and moves it, instead of only the minimum",
    "prewarm": "+prewarm: the table pre-warmed once to the earlier part's busiest minute / T "
    "on each dimension (its high-water mark), so a raise up to it lands in seconds; the "
    "one-time charge is in the cost (the 'once' column) and counted in the first month. It "
    "is priced as one hour provisioned at the marks, table and GSIs, at the list price: "
    "what pre-warming by provisioning and then settling costs "
    "(prewarm=PrewarmMethod.PROVISION_THEN_SETTLE, in the pasted code). With --price "
    "warm_read_unit=USD --price warm_write_unit=USD (dollars per unit/s of warm throughput "
    "added; no default is published here) it is priced as DynamoDB's warm throughput instead",
    "stream": "+stream: the library's policy with the table's own stream as a write signal "
    f"(its writes seen about {STREAM_SECONDS} s later; FastPath(stream=True), no client "
    "code); the stream reader's own cost (its Lambda and state store) is in the cost. The "
    "stream sees writes only: reads need the client hook (CapacityRequests' FastPath in "
    "your processes, or ddb-capacity-instrument)",
    "on-demand": "on-demand: PAY_PER_REQUEST billing, charged per request. It refuses units "
    "too: DynamoDB serves at once up to double the previous peak (at least the warm "
    "throughput: 12,000 reads / 4,000 writes a second on a new table) and more only about "
    "30 minutes later, so a burst beyond double what came before is throttled",
    "hybrid": "hybrid:T: autopilot+stock:T (a ProvisionedTable with the scaler), with the "
    "table on-demand in the hours of each day (UTC) where on-demand cost less over its last "
    f"{HISTORY_DAYS} days (an on-demand hour costed as provisioned at T), learned each day by "
    "the stack's on-demand switch (learn_on_demand_windows), at most "
    f"{SWITCHES_PER_DAY} switches to on-demand in any 24 hours; each switch starts "
    f"{SWITCH_MINUTES} minutes before its hour, and the table returns to provisioned as its "
    "window ends, no lower than its level of before the window nor than the level the hour "
    "after usually needs (docs: On-demand windows, Learned windows)",
    "windows": "windows:T: autopilot+stock:T with declared on-demand windows "
    "(add_on_demand_window, every day, UTC, at most 3) at the hours of the day where "
    "on-demand cost less on the part fitted on, kept only where they cost less there without "
    "refusing more, then kept on the hours scored; each switch starts 5 minutes before its "
    "hour (the minutes DynamoDB takes to switch), and a window returns the table at its level "
    "of before, until the autopilot acts",
    "scaler": "functions: the scaler's running cost on this table is in the cost of each "
    "policy that runs it (the 'functions' column): its custom metrics, GetMetricData reads, "
    "alarms on the table and invocations, at list prices (docs: Scaler, Costs); the alarm "
    "topic's key and the function's own alarms, paid once a stack, are not",
}
"""What each term a tune or advise answer shows means, keyed by what shows it."""


def terms(tuning: Tuning) -> list[str]:
    """One line for each term the answer shows: the policies' names, the rule, the
    figures, the validation."""
    shown = [c.policy for c in tuning.candidates]
    keys = set()
    for name in shown:
        spec = spec_of(name)
        keys.add("autopilot+stock" if spec.with_stock else spec.kind)
        keys |= {"scaler"} if spec.kind in SCALER_KINDS else set()
        keys |= {"owned"} if spec.owned else set()
        keys |= {"prewarm"} if split_prewarm(name)[1] else set()
        keys |= {"stream"} if streamed(name) else set()
    lines = [f"- {TERMS[k]}." for k in TERMS if k in keys]
    v = tuning.validation
    signals = v.get("signals", {})
    if signals.get("fast_path_seconds") is not None or signals.get("stream_seconds") is not None:
        lines.append(
            "- with the fast path: the library's policies (autopilot) also receive the "
            "signals you said you have (--fast-path-seconds: the hook; --stream-seconds: "
            "the table's stream); stock target tracking and on-demand see none."
        )
    lines += [
        f"- the rule: {_rule_words(tuning.rule)}",
        "- refused units: capacity units DynamoDB would throttle (a request retried counts "
        "each time); $: what DynamoDB bills for read and write capacity (a pre-warmed "
        "option's one-time charge included), and what the library's functions an option "
        "deploys cost to run (the 'functions' column), nothing else.",
        "- min / median / max: over the ensemble's model settings (CloudWatch delay, "
        "update latency, burst, retries): a choice must hold across them.",
        "- frontier: no other option refuses no more and costs no more.",
    ]
    if any(c.pruned_by is not None for c in tuning.candidates):
        lines.append(
            f"- pruned: beaten in the first setting's run on the earlier part, on refusals and "
            f"on dollars by more than {PRUNE_MARGIN:.0%}, so not run under the other settings "
            "(min, median and max are that one run's) and never recommended; --no-prune runs "
            "every candidate under every setting."
        )
    if v:
        lines.append(
            f"- validation: each option family (the same policy at another T) was fitted on "
            f"the earlier {counted(v['fit_minutes'], 'minute')}, and the fitted options were "
            f"compared on the later {v['choose_minutes']:,} (from {v['split_time']}); the figures "
            f"shown are the later part's, scaled to a month of {v['month_hours']} hours."
        )
    return lines


def _rule_words(rule: Rule) -> str:
    if rule.price is not None:
        first = (
            f"the option whose cost plus its refused units at ${rule.price:,.2f} per million "
            "is least"
        )
    else:
        more = f" plus {rule.tolerance:.0%}" if rule.tolerance else ""
        first = (
            "the cheapest option that refuses no more than the stock target refusing least"
            f"{more}, plus {rule.floor:.2%} of the requested units (the refusal floor: a "
            "smaller difference is the simulator's noise, not the policy's)"
        )
    return (
        f"{first}; then, of it and a simpler option (stock before the autopilot, fewer "
        "features) the rule also allows at no more than its cost plus the noise (half the "
        "spread of its cost over the ensemble), the simpler."
    )


def _spread(s: Spread, digits: int) -> str:
    """``s`` as min / median / max, each at ``digits`` decimals (`_amount`)."""
    return " / ".join(_amount(v, digits) for v in (s.min, s.median, s.max))


def _amount(value: float, digits: int = 0) -> str:
    """A count of units or dollars, never below 0: a sum of figures that cancel out can come
    to a negative rounding residue (-0.0000000005 units), which is no amount."""
    return f"{max(value, 0.0):,.{digits}f}"


def _rows(tuning: Tuning, period: str) -> list[tuple[str, ...]]:
    """The table's header and a row per candidate, cheapest first."""
    header = (
        "policy",
        "frontier",
        f"refused units {period} (min / median / max)",
        f"$ {period} (min / median / max)",
        "of which once $",
        "of which functions $",
    )
    rows: list[tuple[str, ...]] = [header]
    for c in sorted(tuning.candidates, key=lambda c: (c.cost, c.refused)):
        mark = " <- recommended" if c is tuning.recommended else ""
        mark += _mark(c)
        once = "" if c.once_usd == 0 else "unpriced" if c.once_usd is None else f"{c.once_usd:,.2f}"
        rows.append(
            (
                c.policy + mark,
                "yes" if c.frontier else "",
                _spread(c.throttled_requests, 0),
                _spread(c.cost_usd, 2),
                once,
                f"{c.running_usd:,.2f}" if c.running_usd else "",
            )
        )
    return rows


def _before_scored(of_minutes: int | None) -> str:
    return "" if of_minutes is None else f" before --score-from (of {of_minutes:,})"


def table(
    tuning: Tuning, trace: Trace, ensemble: str, settings: int, of_minutes: int | None = None
) -> str:
    """The warnings, the recommendation in one sentence, the candidates cheapest first
    with every column labelled, the frontier, the reason, a line for each term shown, the
    code to paste. ``of_minutes``: the whole trace's minutes when ``trace`` is only its
    minutes before ``--score-from`` (the choice's), said in the first line."""
    v = tuning.validation
    rows = _rows(tuning, "a month" if v else "over the trace")
    frontier = ", ".join(
        f"{c.policy} ({_money(c.cost)}, {c.refused:,.0f} refused)" for c in tuning.frontier
    )
    scope = (
        f"fitted on {counted(v['fit_minutes'], 'minute')}, chosen on the later "
        f"{v['choose_minutes']:,} (from {v['split_time']}); figures a month ({v['month_hours']} h)"
        if v
        else "figures over the trace"
    )
    return "\n".join(
        [
            *tuning.warnings,
            f"{trace.name}: {counted(trace.minutes, 'minute')}{_before_scored(of_minutes)}, "
            f"ensemble {ensemble} ({settings} settings), read + write; {scope}",
            "",
            tuning.summary,
            "",
            *fixed_width(rows),
            "",
            "frontier (cost vs refused units: no other candidate refuses no more and costs "
            f"no more, and less on one of the two), cheapest first: {frontier}",
            "",
            f"recommended: {tuning.recommended.policy}. {tuning.reason}",
            "",
            *([*class_lines(tuning.table_class), ""] if tuning.table_class else []),
            "what the terms mean:",
            *terms(tuning),
            "",
            "code to paste (CDK, Python):",
            tuning.code,
            *tuning.warnings,
        ]
    )


def _mark(c: Candidate) -> str:
    """What the table says after a candidate that cannot be recommended: unpriced, pruned
    (by what beat it), or compared only."""
    if c.once_usd is None:
        return " (unpriced)"
    if c.pruned_by is not None:
        return f" (pruned: beaten by {c.pruned_by} in one setting)"
    return " (compared only)" if compared_only(c) else ""
