"""``ddb-capacity tune``: the frontier under an ensemble, a recommendation and its code."""

from __future__ import annotations

import ast
import dataclasses
import json
import math
import random
import re
from datetime import UTC, datetime
from pathlib import Path

import pytest

from ddb_capacity_tools.cli_options import build_parser
from ddb_capacity_tools.simulator import ModelParams, Trace, parse
from ddb_capacity_tools.simulator.candidates import (
    REFUSAL_FLOOR,
    STOCK,
    Candidate,
    Rule,
    with_frontier,
)
from ddb_capacity_tools.simulator.ensemble import Spread
from ddb_capacity_tools.simulator.trace import read_csv
from ddb_capacity_tools.simulator.tune import TuneError, choose, decide, tune
from ddb_capacity_tools.simulator.tune_options import (
    refusal_floor,
    refusal_price,
    refusal_tolerance,
)
from tests.support.cli import run
from tests.support.tune import short_trace, trace_file


def test_tune_recommends_the_cheapest_that_refuses_no_more_than_the_best_stock(
    tmp_path: Path,
) -> None:
    path = trace_file(tmp_path)
    args = ["tune", "--trace", str(path), "--quiet", "--workers", "2"]
    for c in ("autopilot:70", "autopilot+stock:70", "hybrid:70"):
        args += ["--candidate", c]
    code, out, err = run(*args, "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["ensemble"] == "plausible"
    # the keys `tune --help` lists for --json are the object's
    commands = next(a for a in build_parser()._actions if a.dest == "command")
    usage = commands.choices["tune"].format_help()  # type: ignore[index]
    listed = re.search(r"--json\s+print one JSON object, \{(.*?)\}", usage, re.S)
    assert listed is not None, usage
    assert set(re.findall(r'"(\w+)"', listed.group(1))) == set(doc), usage
    by = {c["policy"]: c for c in doc["candidates"]}
    # every stock target from 30 to 90 % and on-demand are always candidates
    assert set(by) == {*STOCK, "on-demand", "autopilot:70", "autopilot+stock:70", "hybrid:70"}
    # every candidate can be recommended, the hybrid too (its learned windows deploy)
    assert all(not c["compared_only"] for c in by.values())
    assert "shown for comparison" not in doc["reason"]
    median = {
        p: (c["throttled_requests"]["median"], c["cost_usd"]["median"]) for p, c in by.items()
    }

    def beaten(p: str) -> bool:
        t, c = median[p]
        return any(
            t2 <= t and c2 <= c and (t2, c2) != (t, c) for q, (t2, c2) in median.items() if q != p
        )

    for p, c in by.items():
        assert c["frontier"] == (not beaten(p)), p
    frontier = sorted((p for p in by if not beaten(p)), key=lambda p: median[p][1])
    assert doc["frontier"] == frontier
    assert median["on-demand"][0] == 0
    # the nightly hour is learned: the autopilot refuses far less than stock, alone and on it
    assert median["autopilot:70"][0] < 0.5 * median["stock:70"][0]
    # the rule: the cheapest of those refusing no more than the stock target refusing least,
    # plus the floor: 0.02 % of the units the trace asks for
    # on the later half (from the split tune says it used), scaled to a month of 730 hours
    best = min(STOCK, key=lambda p: median[p])
    split = doc["validation"]["split_minute"]
    assert split == 3 * 1440 // 2 and doc["validation"]["choose_minutes"] == 3 * 1440 - split
    requested = requested_of(path, split) * 730 * 60 / (3 * 1440 - split)
    limit = median[best][0] + REFUSAL_FLOOR * requested
    assert doc["rule"] == {
        "best_stock": best,
        "refusal_tolerance": 0.0,
        "refusal_floor": REFUSAL_FLOOR,
        "requested_units": pytest.approx(requested),
        "refusal_limit": pytest.approx(limit),
        "refusal_price": None,
    }
    within = [p for p in by if median[p][0] <= limit + 1e-6]
    recommended = doc["recommended"]
    assert median[recommended][1] == min(median[p][1] for p in within)
    assert recommended in frontier
    assert recommended in doc["reason"] and best in doc["reason"]
    assert f"${median[recommended][1]:,.2f}" in doc["reason"]
    ast.parse(doc["code"])  # code to paste, as written
    # the text output: the table, the frontier, the recommendation with its reason, the code
    code, out, _ = run(*args)
    assert code == 0 and "<- recommended" in out and doc["code"].strip() in out
    assert f"recommended: {recommended}. {doc['reason']}" in out
    assert "frontier (cost vs refused units" in out
    # ... defined as computed above: beaten is no more on both, and less on one
    assert "no other candidate refuses no more and costs no more, and less on one" in out
    assert all(p in out.split("frontier (cost vs refused units")[1] for p in frontier)
    # the recommendation is a policy simulate takes, as printed
    code, out, err = run("simulate", "--trace", str(path), "--policy", recommended, "--json")
    assert code == 0, err
    assert {r["policy"] for r in json.loads(out)["policies"]} == {recommended}


def requested_of(path: Path, start: int = 0) -> float:
    """The units a trace file asks for from minute ``start`` on: every minute's read +
    write units/s x 60."""
    lines = path.read_text().splitlines()[1 + start :]
    return sum(float(v) for line in lines for v in line.split(",")[1:]) * 60


def test_when_on_demand_wins_it_says_by_how_much() -> None:
    # GIVEN every stock target refusing (the lower the target, the less and the dearer) and
    # on-demand refusing none, for less than the stock target refusing least
    trace = Trace("t", datetime(2026, 1, 5, tzinfo=UTC), {(None, "write"): [1.0] * 1440})
    stock = [_c(p, 1_000 * (n + 1), 40 - 5 * n) for n, p in enumerate(STOCK)]
    cands = [*stock, _c("on-demand", 0, 12)]
    # WHEN the rule chooses
    tuning = decide(cands, Rule(floor=0.0), trace, ModelParams())
    # THEN on-demand, with what it saves against the provisioned candidate the rule would
    # pick without it (stock:30, the only stock target within the limit), and its code
    assert tuning.recommended.policy == "on-demand"
    od = tuning.on_demand
    assert od["wins"] and od["versus"] == "stock:30"
    assert od["difference_usd"] == pytest.approx(40 - 12)
    assert "On-demand wins: $28.00 (70%) less than stock:30 ($40.00)" in tuning.reason
    assert "PAY_PER_REQUEST" in tuning.code


def placed(rng: random.Random) -> list[Candidate]:
    """Stock targets, autopilot candidates and on-demand with random refusals and costs."""
    names = [*STOCK, "autopilot:60", "autopilot:70", "autopilot+stock:70", "on-demand"]
    out = []
    for name in names:
        refused = 0.0 if rng.random() < 0.15 else rng.uniform(0, 1_000)
        cost = rng.uniform(1, 100)
        out.append(Candidate(name, Spread(refused, refused, refused), Spread(cost, cost, cost)))
    return out


@pytest.mark.parametrize("floor", [0.0, REFUSAL_FLOOR, 0.01])
def test_the_rule_holds_at_every_tolerance_on_random_candidates(floor: float) -> None:
    rng = random.Random(7)
    requested = 20_000.0
    for _ in range(300):
        candidates = placed(rng)
        last = None
        for tolerance in (0.0, 0.05, 0.5, 1.0):
            pick, best = choose(candidates, Rule(tolerance, floor), requested)
            stock = [c for c in candidates if c.policy in STOCK]
            assert best.refused == min(c.refused for c in stock)
            limit = best.refused * (1 + tolerance) + floor * requested
            assert pick.refused <= limit + 1e-6
            assert all(c.cost >= pick.cost for c in candidates if c.refused <= limit)
            # the cheapest within a limit is never beaten on both
            assert not any(c.refused <= pick.refused and c.cost < pick.cost for c in candidates)
            assert last is None or pick.cost <= last  # more tolerance never costs more
            last = pick.cost


def test_the_reason_says_what_on_demand_would_cost_when_it_loses() -> None:
    trace = Trace(
        "t", datetime(2026, 1, 5, tzinfo=UTC), {(None, "read"): [10.0], (None, "write"): [5.0]}
    )

    def c(name: str, refused: float, cost: float) -> Candidate:
        return Candidate(name, Spread(refused, refused, refused), Spread(cost, cost, cost))

    stock = [c(p, 100 + 10 * n, 50 - 5 * n) for n, p in enumerate(STOCK)]
    cands = [*stock, c("autopilot:70", 80, 20), c("on-demand", 0, 70)]
    tuning = decide(cands, Rule(), trace, ModelParams())
    assert tuning.recommended.policy == "autopilot:70"
    assert tuning.best_stock.policy == STOCK[0]
    assert not tuning.on_demand["wins"] and tuning.on_demand["versus"] == "autopilot:70"
    assert tuning.on_demand["difference_usd"] == pytest.approx(20 - 70)
    assert "On-demand would cost $70.00, $50.00 more." in tuning.reason
    assert "$30.00 (60%) less than stock:30 ($50.00, 100 units refused)" in tuning.reason


@pytest.mark.parametrize(
    ("given", "fraction"), [("0", 0.0), ("0.1", 0.1), ("10%", 0.1), ("100%", 1.0), (" 1 ", 1.0)]
)
def test_a_refusal_tolerance_is_a_fraction_or_a_percent(given: str, fraction: float) -> None:
    assert refusal_tolerance(given) == pytest.approx(fraction)


@pytest.mark.parametrize(
    ("given", "hint"),
    [
        ("5", "(for a percent, write it with %: 5%)"),
        ("-0.1", ""),
        ("150%", ""),
        ("nan", ""),
        ("inf", ""),
        ("ten", ""),
        ("", ""),
    ],
)
def test_a_bad_refusal_tolerance_is_refused_naming_what_is_allowed(
    tmp_path: Path, given: str, hint: str
) -> None:
    code, _, err = run(
        "tune", "--trace", str(tmp_path / "never-read.csv"), f"--refusal-tolerance={given}"
    )
    assert code == 2 and err.count("\n") == 1
    assert f"--refusal-tolerance: got {given!r}; expected a fraction from 0 to 1" in err
    assert "or a percent from 0 to 100 followed by %" in err
    assert hint in err


def test_the_code_takes_the_traffics_own_range() -> None:
    from ddb_capacity_tools.simulator.tune_code import code_for

    start = datetime(2026, 1, 5, tzinfo=UTC)
    reads = [37.5, 400.0, 812.0, 90.0]
    writes = [3.0, 1_000.0, 20.0, 250.0]
    for keys in ((None, None), ("ByGroup", "ByGroup")):  # the table, or a trace of one GSI
        trace = Trace("t", start, {(keys[0], "read"): reads, (keys[1], "write"): writes})
        for policy in ("stock:60", "autopilot:80", "autopilot+stock:70"):
            target = parse(policy).value
            assert target is not None
            t = target / 100
            code = code_for(parse(policy), trace, ModelParams())
            numbers = [int(n) for n in re.findall(r"(?:min|max)\D{0,20}?(\d+)", code)]
            lo_r, hi_r = math.ceil(min(reads) / t), math.ceil(2 * max(reads) / t)
            lo_w, hi_w = math.ceil(min(writes) / t), math.ceil(2 * max(writes) / t)
            assert sorted(set(numbers)) == sorted({lo_r, hi_r, lo_w, hi_w}), (policy, code)
    # within the model's range
    trace = Trace("t", start, {(None, "read"): [0.0, 30_000.0], (None, "write"): [5.0, 6.0]})
    code = code_for(parse("stock:50"), trace, ModelParams(max_capacity=40_000))
    assert "min_capacity=1, max_capacity=40000" in code


def test_tune_refuses_a_candidate_it_cannot_deploy(tmp_path: Path) -> None:
    code, _, err = run("tune", "--trace", str(trace_file(tmp_path)), "--candidate", "oracle")
    assert code == 2
    assert "--candidate: got 'oracle'; expected stock:T, autopilot, autopilot:T, " in err


def test_every_candidates_code_parses_and_names_what_it_deploys() -> None:
    from ddb_capacity_tools.simulator import ModelParams, Trace
    from ddb_capacity_tools.simulator.candidates import CANDIDATES, spec_of, split_prewarm
    from ddb_capacity_tools.simulator.tune_code import code_for
    from ddb_capacity_tools.simulator.tune_runs import warm_levels

    trace = Trace(
        "t", datetime(2026, 1, 5, tzinfo=UTC), {(None, "read"): [10.0], (None, "write"): [5.0]}
    )
    for name in CANDIDATES:
        spec = spec_of(name)
        warmed = split_prewarm(name)[1]
        warm = warm_levels(trace, 1, spec.value or 70, ModelParams()) if warmed else None
        code = code_for(spec, trace, ModelParams(), warm)
        ast.parse(code)
        scaler = spec.kind in ("autopilot", "windows", "hybrid")
        assert ("ThrottleAwareScaler" in code) == scaler, name
        provisioned = spec.kind in ("stock", "windows", "hybrid") or spec.with_stock
        assert ("ProvisionedTable" in code) == provisioned, name
        assert ("on-demand window" in code) == (spec.kind == "windows"), name
        assert ("learn_on_demand_windows(" in code) == (spec.kind == "hybrid"), name
        assert ("high_water_mark=" in code) == warmed, name
        if spec.value:
            assert f"{spec.value}" in code, name
        if warm:  # pre-warmed to the peak / T: 10 / 0.8 = 13 and 5 / 0.8 = 7 at T = 80
            assert f"high_water_mark={warm['read']})" in code, name
            assert spec.value is not None
            assert warm == {
                "read": math.ceil(10 / (spec.value / 100)),
                "write": math.ceil(5 / (spec.value / 100)),
            }
        # in Standard-IA (the table class advised): the same code, the class on the table
        infrequent = code_for(spec, trace, ModelParams(), warm, "STANDARD_INFREQUENT_ACCESS")
        ast.parse(infrequent)
        klass = "table_class=dynamodb.TableClass.STANDARD_INFREQUENT_ACCESS"
        assert infrequent.count(klass) == 1 and "table_class" not in code, name
        assert infrequent.replace(f"    {klass},\n", "").replace(f", {klass}", "") == code, name


def _c(name: str, refused: float, cost: float) -> Candidate:
    return Candidate(name, Spread(refused, refused, refused), Spread(cost, cost, cost))


def test_the_floor_lets_a_cheaper_candidate_refusing_a_little_more_be_recommended() -> None:
    trace = Trace(
        "t", datetime(2026, 1, 5, tzinfo=UTC), {(None, "read"): [1_000.0] * 1440}
    )  # 86,400,000 units asked for: the floor is 17,280 of them
    stock = [_c(p, 10 * n, 100 - 5 * n) for n, p in enumerate(STOCK)]
    cands = [*stock, _c("autopilot:70", 17_000, 40), _c("on-demand", 0, 120)]
    strict = decide(cands, Rule(floor=0.0), trace, ModelParams())
    assert strict.recommended.policy == STOCK[0]  # nothing else refuses 0
    # the pick is the limit's own stock target: said so, not named as its own limit
    assert strict.summary.startswith(
        f"Use {STOCK[0]}: the stock target refusing least, and the cheapest within the "
        "refusals it sets as the limit, at $100.00"
    )
    floored = decide(cands, Rule(), trace, ModelParams())
    assert floored.recommended.policy == "autopilot:70"
    assert floored.summary.startswith(
        f"Use autopilot:70: the cheapest within the refusals {STOCK[0]} (the stock target "
        "refusing least) sets as the limit, at $40.00"
    )
    assert floored.limit == pytest.approx(0 + REFUSAL_FLOOR * 86_400_000)
    assert "plus 0.02% of the 86,400,000 requested units (17,280)" in floored.reason
    assert "$60.00 (60%) less than stock:30 ($100.00" in floored.reason
    # a candidate just over the floor is not within it
    over = [*stock, _c("autopilot:70", 17_300, 40), _c("on-demand", 0, 120)]
    assert decide(over, Rule(), trace, ModelParams()).recommended.policy != "autopilot:70"


def test_a_pick_whose_worst_setting_refuses_more_than_the_references_worst_is_flagged() -> None:
    trace = Trace("t", datetime(2026, 1, 5, tzinfo=UTC), {(None, "read"): [1_000.0] * 1440})
    stock = [_c(p, 10 * n, 100 - 5 * n) for n, p in enumerate(STOCK)]
    stock[0] = Candidate(STOCK[0], Spread(0, 0, 500), Spread(100, 100, 100))

    def decided(worst: float) -> str:
        pick = Candidate("autopilot:70", Spread(0, 100, worst), Spread(40, 40, 40))
        tuning = decide([*stock, pick, _c("on-demand", 0, 120)], Rule(), trace, ModelParams())
        assert tuning.recommended.policy == "autopilot:70"
        return tuning.reason

    flagged = decided(3_000)
    assert (
        "Its worst model setting refuses 3,000 units, more than stock:30's worst (500): the "
        "rule compares medians over the ensemble" in flagged
    )
    assert "or deploy stock:30." in flagged
    assert "worst model setting" not in decided(500)


def test_the_price_rule_minimises_cost_plus_the_refusals_at_the_price() -> None:
    rng = random.Random(11)
    for _ in range(300):
        candidates = placed(rng)
        last_refused = None
        for price in (0.01, 1.0, 100.0, 100_000.0):
            pick, _ = choose(candidates, Rule(price=price))
            score = {c.policy: c.cost + c.refused * price / 1e6 for c in candidates}
            assert score[pick.policy] == pytest.approx(min(score.values()))
            # a higher price for a refusal never recommends one that refuses more
            assert last_refused is None or pick.refused <= last_refused + 1e-9
            last_refused = pick.refused


def test_the_price_rules_reason_names_the_price_and_what_the_refusals_cost() -> None:
    trace = Trace("t", datetime(2026, 1, 5, tzinfo=UTC), {(None, "read"): [10.0]})
    stock = [_c(p, 1_000_000 * (n + 1), 50 - 5 * n) for n, p in enumerate(STOCK)]
    cands = [*stock, _c("on-demand", 0, 40)]
    tuning = decide(cands, Rule(price=2.0), trace, ModelParams())
    # stock:90 pays $20 + 7 M refused x $2/M = $34; on-demand $40; stock:30 $50 + $2
    assert tuning.recommended.policy == "stock:90"
    assert tuning.as_json()["rule"]["refusal_price"] == 2.0
    assert tuning.as_json()["rule"]["refusal_limit"] is None
    assert "charged at $2.00 per million: $20.00 and 7,000,000 units refused ($14.00" in (
        tuning.reason
    )
    assert "On-demand would cost $40.00, $20.00 more." in tuning.reason


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--refusal-floor", "2"], "--refusal-floor: got '2'; expected a fraction from 0 to 0.01"),
        (["--refusal-floor", "2%"], "--refusal-floor: got '2%'"),
        (["--refusal-price", "0"], "--refusal-price: got '0'; expected dollars per million"),
        (["--refusal-price", "cheap"], "--refusal-price: got 'cheap'"),
        (["--refusal-price", "1_0"], "--refusal-price: got '1_0'"),
        (["--refusal-price", "-1", "--refusal-floor", "0"], "--refusal-price: got '-1'"),
        (
            ["--refusal-price", "1", "--refusal-tolerance", "5%"],
            "--refusal-tolerance: got '5%' with --refusal-price 1; the price replaces the limit",
        ),
        (
            ["--refusal-price", "1", "--refusal-floor", "0"],
            "--refusal-floor: got '0' with --refusal-price 1",
        ),
    ],
)
def test_bad_rule_options_are_refused_naming_the_option(
    tmp_path: Path, options: list[str], message: str
) -> None:
    code, _, err = run("tune", "--trace", str(tmp_path / "never-read.csv"), *options)
    assert code == 2
    assert message in err


def test_a_floor_written_as_a_whole_number_is_told_to_use_a_percent() -> None:
    with pytest.raises(TuneError, match=r"for a percent, write it with %: 0.5%\)"):
        refusal_floor("0.5")
    with pytest.raises(TuneError) as too_big:  # 2 % is over the 1 % most: no such hint
        refusal_floor("2")
    assert "write it with %" not in str(too_big.value)
    assert refusal_floor("0.02%") == pytest.approx(0.0002)
    assert refusal_floor("0") == 0.0
    assert refusal_price("1.5") == 1.5


def test_the_hybrid_is_recommended_like_any_other_with_its_learned_windows_code() -> None:
    from ddb_capacity_tools.simulator.tune_code import code_for

    trace = Trace("t", datetime(2026, 1, 5, tzinfo=UTC), {(None, "read"): [10.0]})
    stock = [_c(p, 100 * (n + 1), 50 - 5 * n) for n, p in enumerate(STOCK)]
    # the hybrid refuses least and costs least: it wins every rule (as typed, too)
    for hybrid, target in (("hybrid:70", 70), (" hybrid:60 ", 60), ("hybrid", 70)):
        cands = with_frontier([*stock, _c(hybrid, 0, 1), _c("on-demand", 0, 40)])
        for rule in (Rule(), Rule(floor=0.0), Rule(price=1.0), Rule(price=1e5)):
            tuning = decide(cands, rule, trace, ModelParams())
            assert tuning.recommended.policy == hybrid
            by = {c["policy"]: c for c in tuning.as_json()["candidates"]}
            assert not by[hybrid]["compared_only"] and by[hybrid]["frontier"]
            assert not by["on-demand"]["frontier"]  # beaten by the hybrid
            assert "for comparison" not in tuning.reason
            # the code: autopilot+stock:T's (a ProvisionedTable, whose method learns the
            # windows), then the switch that learns the hours each day
            base = code_for(parse(f"autopilot+stock:{target}"), trace, ModelParams())
            assert base.startswith("table = ProvisionedTable(")
            assert f"target_utilization_percent={target}" in base
            learn = f"table.learn_on_demand_windows(target_utilization={target})\n"
            assert tuning.code.startswith(base) and tuning.code.endswith(learn)
            assert "from the table's last 7 days" in tuning.code
            ast.parse(tuning.code)


# --- choosing by validation, the simpler policy, pre-warming, and output a person can act on


def _spread(name: str, refused: float, cost: float, noise: float = 0.0) -> Candidate:
    """A candidate whose cost spreads ``noise`` either side of ``cost`` over the ensemble."""
    return Candidate(
        name, Spread(refused, refused, refused), Spread(cost - noise, cost, cost + noise)
    )


def test_the_choice_follows_the_later_part_of_the_history() -> None:
    from ddb_capacity_tools.simulator.tune import validate

    # GIVEN a history whose later half differs from its earlier: stock:90 refused nothing
    # early on, and refuses much in the later half, where stock:60 refuses nothing
    minutes = 2 * 2 * 1440
    trace = Trace("t", datetime(2026, 1, 5, tzinfo=UTC), {(None, "read"): [100.0] * minutes})
    early = [_c(p, 0, 100 - n) for n, p in enumerate(STOCK)] + [_c("on-demand", 0, 500)]
    later = [_c(p, 0 if p <= "stock:60" else 5e6, 100 - n) for n, p in enumerate(STOCK)]
    later += [_c("on-demand", 0, 500)]
    # WHEN tune validates: fitted on the earlier half, chosen on the later
    tuning = validate(early, later, Rule(floor=0.0), trace, ModelParams(), minutes // 2)
    # THEN the choice is the later half's, and the answer says which split it used
    assert early[-2].policy == "stock:90"  # the earlier half alone would pick stock:90
    assert tuning.recommended.policy == "stock:60"
    assert tuning.validation["split_minute"] == minutes // 2
    assert tuning.validation["split_time"] == "2026-01-07T00:00Z"
    assert tuning.validation["fit_minutes"] == tuning.validation["choose_minutes"] == 2880
    assert tuning.warnings == ()  # four days: long enough


def test_a_family_is_fitted_on_the_earlier_part_and_only_its_fit_goes_on() -> None:
    from ddb_capacity_tools.simulator.tune import fit, validate

    stock = [_c(p, 0, 100) for p in STOCK]
    # GIVEN autopilot:60 the cheapest of its family refusing no more on the earlier half,
    # and autopilot:80 cheaper on the later half (but not fitted)
    early = [*stock, _c("autopilot:60", 0, 50), _c("autopilot:80", 10, 40), _c("on-demand", 0, 99)]
    later = [*stock, _c("autopilot:60", 0, 60), _c("autopilot:80", 0, 30), _c("on-demand", 0, 99)]
    assert fit(early, Rule(floor=0.0), 1e6) == {"autopilot:T": "autopilot:60"}
    trace = Trace("t", datetime(2026, 1, 5, tzinfo=UTC), {(None, "read"): [1.0] * 2880})
    tuning = validate(early, later, Rule(floor=0.0), trace, ModelParams(), 1440)
    # THEN only the fitted member is compared on the later half, and recommended there
    shown = {c.policy for c in tuning.candidates}
    assert "autopilot:80" not in shown and "autopilot:60" in shown
    assert tuning.recommended.policy == "autopilot:60"
    assert tuning.validation["fitted"] == {"autopilot:T": "autopilot:60"}


@pytest.mark.parametrize(
    ("stock_cost", "expected"), [(104.0, "stock:70"), (106.0, "autopilot+stock:70")]
)
def test_the_simpler_policy_is_preferred_within_the_noise(stock_cost: float, expected: str) -> None:
    # GIVEN autopilot+stock:70 cheapest at $100, its cost spreading $95-$105 over the
    # ensemble (the noise: half that spread, $5), and stock:70 refusing as little
    trace = Trace("t", datetime(2026, 1, 5, tzinfo=UTC), {(None, "read"): [1.0] * 1440})
    stock = [_c(p, 0 if p == "stock:70" else 1e6, stock_cost) for p in STOCK]
    cands = [*stock, _spread("autopilot+stock:70", 0, 100, noise=5), _c("on-demand", 0, 900)]
    tuning = decide(cands, Rule(floor=0.0), trace, ModelParams())
    # THEN stock:70 when it costs within the noise ($104 <= $105), else the autopilot
    assert tuning.recommended.policy == expected
    if expected == "stock:70":
        assert tuning.simpler_than is not None
        simpler, margin = tuning.simpler_than
        assert simpler == "autopilot+stock:70" and margin == pytest.approx(5.0)
        assert "within the noise ($5.00: half the spread of autopilot+stock:70's cost" in (
            tuning.reason
        )
        assert "the simplest within the noise of the cheapest" in tuning.summary
    else:
        assert tuning.simpler_than is None


def test_a_rounding_residue_below_zero_refused_units_is_shown_as_0() -> None:
    from ddb_capacity_tools.simulator.tune_words import table

    # GIVEN the hybrid's refusals summed to -0.0000000005 units under one setting (figures
    # that cancel out), and 0 and 98,344 under the others
    trace = Trace("t", datetime(2026, 1, 5, tzinfo=UTC), {(None, "read"): [1.0] * 1440})
    stock = [_c(p, 1e6, 900) for p in STOCK]
    hybrid = Candidate("hybrid:70", Spread(-5e-10, 0.0, 98_344.0), Spread(835, 839.56, 881))
    tuning = decide([*stock, hybrid], Rule(floor=0.0), trace, ModelParams())
    # THEN the sentence and the table say 0, never -0
    assert tuning.summary.endswith("refusing 0 units (0 to 98,344).")
    [row] = [
        line
        for line in table(tuning, trace, "plausible", 8).splitlines()
        if "hybrid:70 " in line[:12]
    ]
    assert "  0 / 0 / 98,344  " in row and "-0" not in row


def test_the_hybrids_base_alone_is_preferred_to_the_hybrid_within_the_noise() -> None:
    # GIVEN the hybrid cheapest at $100, its cost spreading $95-$105, and its base alone (the
    # autopilot on stock target tracking) at $104, refusing as little: the switch that learns
    # on-demand hours is one more thing
    trace = Trace("t", datetime(2026, 1, 5, tzinfo=UTC), {(None, "read"): [1.0] * 1440})
    stock = [_c(p, 0 if p == "stock:70" else 1e6, 900) for p in STOCK]
    cands = [*stock, _spread("hybrid:70", 0, 100, noise=5), _c("autopilot+stock:70", 0, 104)]
    tuning = decide([*cands, _c("on-demand", 0, 900)], Rule(floor=0.0), trace, ModelParams())
    # THEN its base alone, the hybrid named as the rule's pick
    assert tuning.recommended.policy == "autopilot+stock:70"
    assert tuning.simpler_than is not None
    assert tuning.simpler_than[0] == "hybrid:70"
    assert tuning.simpler_than[1] == pytest.approx(5.0)


def _steady_then_step() -> Trace:
    """Two days: reads and writes at 100 units/s, with an hour at 400 each afternoon."""
    demand = [400.0 if 900 <= m % 1440 < 960 else 100.0 for m in range(2 * 1440)]
    return Trace(
        "step", datetime(2026, 1, 5, tzinfo=UTC), {(None, "read"): demand, (None, "write"): demand}
    )


def test_the_earlier_and_later_parts_add_up_to_the_whole_run() -> None:
    from ddb_capacity_tools.simulator.ensemble import settings_of
    from ddb_capacity_tools.simulator.tune_runs import place, place_split

    trace = _steady_then_step()
    settings = settings_of("plausible", ModelParams(), trace)[:2]
    names = ["stock:70", "on-demand"]
    early, later = place_split(trace, names, settings, None, 5, 1, 1440)
    whole = place(trace, names, settings, None, 5, 1)
    for e, late, w in zip(early, later, whole, strict=True):
        assert e.policy == late.policy == w.policy
        assert e.cost + late.cost == pytest.approx(w.cost)
        assert e.refused + late.refused == pytest.approx(w.refused, abs=1e-6)
        assert e.cost > 0 and late.cost > 0


def test_a_pre_warmed_candidate_pays_its_one_time_charge() -> None:
    from ddb_capacity_tools.simulator import Prices
    from ddb_capacity_tools.simulator.candidates import compared_only
    from ddb_capacity_tools.simulator.ensemble import settings_of
    from ddb_capacity_tools.simulator.tune_runs import place, warm_levels

    trace = _steady_then_step()
    settings = settings_of("plausible", ModelParams(), trace)[:1]
    names = ["autopilot+stock:80", "autopilot+stock:80+prewarm"]
    # GIVEN the pre-warming prices (dollars per unit/s of warm throughput added)
    prices = Prices(warm_read_unit=0.01, warm_write_unit=0.05)
    plain, warmed = place(trace, names, settings, prices, 5, 1, score_from=1440)
    # THEN the table is warmed to the earlier day's peak / 0.8 on each dimension, and the
    # charge for it is in the cost, once: 500 x $0.01 + 500 x $0.05 = $30
    assert warm_levels(trace, 1440, 80, ModelParams()) == {"read": 500, "write": 500}
    assert warmed.once_usd == pytest.approx(30.0)
    assert warmed.cost > 30.0 and not compared_only(warmed)
    assert plain.once_usd == 0.0
    # GIVEN no such price: the candidate is priced as an hour provisioned at the marks (how
    # PROVISION_THEN_SETTLE pre-warms), at the list prices, and may be recommended
    [settled] = place(trace, names[1:], settings, None, 5, 1, score_from=1440)
    hour = 500 * Prices().unit_hour("read") + 500 * Prices().unit_hour("write")
    assert settled.once_usd == pytest.approx(hour) and not compared_only(settled)
    assert settled.cost == pytest.approx(warmed.cost - 30.0 + hour)
    cheap = dataclasses.replace(replace_cost(settled, 1), throttled_requests=Spread(0.0, 0.0, 0.0))
    cands = [*(_c(p, 0, 100) for p in STOCK), _c("on-demand", 0, 100), cheap]
    tuning = decide(cands, Rule(), trace, ModelParams())
    assert tuning.recommended.policy == settled.policy
    assert "prewarm=PrewarmMethod.PROVISION_THEN_SETTLE" in tuning.code
    assert "high_water_mark=" in tuning.code


def replace_cost(c: Candidate, cost: float) -> Candidate:
    from dataclasses import replace

    return replace(c, cost_usd=Spread(cost, cost, cost))


def test_a_pre_warming_price_is_a_price_override() -> None:
    from ddb_capacity_tools.simulator import Prices

    prices = Prices().overridden(["warm_read_unit=0.002", "warm_write_unit=0.01"])
    assert prices.prewarm(1_000, 100) == pytest.approx(3.0)
    assert Prices().prewarm(1_000, 0) is None  # needed, not given: unpriced
    assert Prices().prewarm(0, 0) == 0.0  # nothing added: nothing to pay


def test_tune_shows_progress_a_summary_the_terms_and_the_code(tmp_path: Path) -> None:
    path = trace_file(tmp_path)
    args = ["tune", "--trace", str(path), "--workers", "2"]
    code, out, err = run(*args, "--candidate", "autopilot+stock:70+owned", terminal=True)
    assert code == 0, err
    # progress on stderr, a terminal's: the runs done (9 candidates under 8 settings), to the
    # last, each run counted as it ends whatever the processes
    assert "tune [" in err and "0/72 runs" in err and "72/72 runs" in err
    assert all(f" {n}/72 runs " in err for n in range(73))
    lines = out.splitlines()
    # the recommendation in one sentence, with its dollars a month and their spread
    [summary] = [line for line in lines if line.startswith("Use ")]
    assert summary.count(". ") == 0 and summary.endswith(".")
    assert " a month ($" in summary and "over the ensemble" in summary
    assert "figures a month (730 h)" in lines[0]
    assert "fitted on 2,160 minutes, chosen on the later 2,160 (from 2026-01-06T12:00Z)" in lines[0]
    # every column labelled, with the period
    assert "refused units a month (min / median / max)" in out
    assert "$ a month (min / median / max)" in out
    # a line for each term shown
    terms = out.split("what the terms mean:")[1].split("code to paste")[0]
    for term in (
        "- stock:T:",
        "- autopilot+stock:T:",
        "- +owned:",
        "- on-demand:",
        "- the rule:",
        "- validation:",
        "double the previous peak",
    ):
        assert term in terms, term
    assert "- +prewarm:" not in terms and "- hybrid" not in terms  # not shown: not explained
    assert "code to paste (CDK, Python):" in out
    assert not any(line.startswith("warning:") for line in lines)  # three days: enough


def test_tune_warns_plainly_when_the_history_is_too_short(tmp_path: Path) -> None:
    # GIVEN the shortest trace tune splits: an hour to fit on, an hour to choose on
    path = short_trace(tmp_path, 120)
    args = ["tune", "--trace", str(path), "--candidate", "on-demand"]
    code, _, err = run(*args, terminal=True)
    assert code == 0 and "tune [" in err and "64/64 runs" in err  # the bar, as on any history
    # --quiet: no bar
    code, out, err = run(*args, "--quiet", terminal=True)
    assert code == 0 and err == ""
    # AND lines, not a bar, where stderr is no terminal (a CI log, a file); the same answer
    code, again, err = run(*args)
    assert (code, again) == (0, out) and "\r" not in err
    assert err.splitlines()[0] == "tune: 0% (0 of 64 runs, 0 s)"
    lines = out.splitlines()
    # first and last before the billing basis: the warning, with the minimum needed and why
    assert lines[-1].startswith("Billing basis: hourly-max")
    for line in (lines[0], lines[-2]):
        assert line.startswith("warning: short.csv holds 120 minutes of traffic; at least 2 days")
        assert "one day to fit on and one to choose on" in line
        assert line.endswith(
            "with --score-from, an earlier time: the choice is made on the minutes before it)."
        )
    code, out, err = run(
        "tune", "--trace", str(path), "--quiet", "--json", "--candidate", "on-demand"
    )
    assert json.loads(out)["warnings"] == [lines[0]]


@pytest.mark.parametrize("minutes", [1, 2, 119])
def test_a_trace_too_short_to_split_is_refused_before_any_run(tmp_path: Path, minutes: int) -> None:
    # GIVEN a trace too short to fit on one part and choose on the other
    path = short_trace(tmp_path, minutes)
    # WHEN it is tuned THEN it is refused, saying how much trace is needed: no pick, and
    # nothing run (no progress bar)
    code, out, err = run("tune", "--trace", str(path), "--candidate", "on-demand")
    held = "1 minute" if minutes == 1 else f"{minutes} minutes"
    assert (code, out) == (2, "")
    assert err == (
        f"ddb-capacity: error: --trace: short.csv holds {held} of traffic; tune needs at least "
        "120 minutes: 60 to fit on and 60 to choose on (and 2 days to judge well: a whole "
        "daily cycle in each)\n"
    )
    # AND tune itself refuses it alike
    with pytest.raises(TuneError, match=f"^short.csv holds {held} of traffic; tune needs"):
        tune(read_csv(str(path)), [ModelParams()], ["on-demand"], workers=1)


def test_the_right_bill_benchmark_runs_in_its_quick_mode(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from benchmarks import right_bill

    right_bill.main(["--quick", "--workers", "1"])
    out = capsys.readouterr().out
    # per trace: tuned on the first half (validated within it), scored on the second, with
    # its verdict; then the goals with their distance
    assert "noisy-diurnal: tuned on 1,440 minutes, scored on 1,440" in out
    assert re.search(r"verdict \(the default rule\): (not dominated|dominated by \S+)", out)
    assert "the cheapest stock target refusing no more" in out
    assert "(c) in total, refused" in out and "stock:70's" in out
    # (d) under each rule: the pick held its rule on the future (within its limit, or no
    # stock target better at the price)
    held = re.findall(r"\(d\) the recommendation within its rule's limit on the scored half", out)
    assert len(held) == 2
    priced = re.findall(r"\(d\) the recommendation no worse at the price than stock on the", out)
    assert len(priced) == 1


def test_right_bills_goal_d_misses_a_pick_past_its_rules_limit_on_the_scored_half(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from benchmarks import right_bill

    stock = {p: _c(p, 100 + 10 * n, 50 - n) for n, p in enumerate(STOCK)}  # stock:30 least
    within = (_c("autopilot:70", 100 + 0.0002 * 1_000_000, 40), {**stock}, 1_000_000.0)
    past = (_c("autopilot+stock:90", 700, 30), {**stock}, 1_000_000.0)
    right_bill.goal_d([("a", *within), ("b", *past)], Rule())
    out = capsys.readouterr().out
    assert (
        "(d) the recommendation within its rule's limit on the scored half: MISS on 1 of 2" in out
    )
    # ... with the stock setting that would have held it: the cheapest within the limit
    assert (
        "b: autopilot+stock:90 refuses 700, limit 300 (stock:30 refuses 100; 2.3x); stock:90 "
        "would have held it" in out
    )
    right_bill.goal_d([("a", *within)], Rule())
    assert out_line(capsys.readouterr().out) == (
        "(d) the recommendation within its rule's limit on the scored half: PASS"
    )


def test_right_bills_goal_d_judges_the_price_rule_by_its_own_verdict(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from benchmarks import right_bill

    # GIVEN stock targets scored on the future, and at $1 per million refused units a pick
    # that a stock target beats there (a), or that beats them all (b)
    stock = {p: _c(p, 100 + 10 * n, 50 - n) for n, p in enumerate(STOCK)}  # stock:90 $44
    worse = (_c("autopilot:70", 1_000_000, 44), {**stock}, 1_000_000.0)  # $45 at the price
    better = (_c("autopilot:80", 0, 40), {**stock}, 1_000_000.0)
    price = Rule(price=1.0)
    right_bill.goal_d([("a", *worse), ("b", *better)], price)
    out = capsys.readouterr().out
    # THEN the first is a miss, naming the stock target that would have held the rule
    assert (
        "(d) the recommendation no worse at the price than stock on the scored half: MISS on "
        "1 of 2 traces" in out
    ), out
    assert (
        "a: autopilot:70 costs $45.00 with its refusals at the price, stock:90 $44.00; stock:90 "
        "would have held it" in out
    ), out
    right_bill.goal_d([("b", *better)], price)
    assert out_line(capsys.readouterr().out) == (
        "(d) the recommendation no worse at the price than stock on the scored half: PASS"
    )


def out_line(out: str) -> str:
    (line,) = out.splitlines()
    return line
