"""Tune's pruning (`simulator.tune_prune`) against the reference path (every candidate under
every setting), on random small traces."""

from __future__ import annotations

import random
from datetime import UTC, datetime

from hypothesis import given, settings
from hypothesis import strategies as st

from ddb_capacity_tools.simulator import ModelParams, Prices, Trace, parse
from ddb_capacity_tools.simulator.candidates import STOCK, Candidate, Rule
from ddb_capacity_tools.simulator.ensemble import Spread, settings_of
from ddb_capacity_tools.simulator.run import hybrid_base
from ddb_capacity_tools.simulator.tune import tune
from ddb_capacity_tools.simulator.tune_prune import PRUNE_MARGIN, pruned
from tests.support.hypothesis_profiles import examples

START = datetime(2026, 1, 5, tzinfo=UTC)
LIBRARY = ("autopilot:50", "autopilot:80", "autopilot+stock:90", "autopilot+stock:70+owned")
"""Library candidates, two of one family, and the hybrid's autopilot among them."""


def traffic(seed: int, minutes: int, swing: float, burst: float) -> Trace:
    """Reads on a daily wave of ``swing`` around 400/s with lognormal noise and, in one hour
    of each day, ``burst`` times more; writes a quarter of the reads."""
    rng = random.Random(seed)
    reads = []
    for m in range(minutes):
        wave = 1 + swing * ((m % 1440) / 720 - 1)
        extra = burst if (m % 1440) // 60 == seed % 24 else 1.0
        reads.append(400 * wave * extra * rng.lognormvariate(0, 0.2))
    return Trace("random", START, {(None, "read"): reads, (None, "write"): [r / 4 for r in reads]})


def _placed(policy: str, refused: float, cost: float) -> Candidate:
    return Candidate(policy, Spread.of([refused]), Spread.of([cost]))


@settings(max_examples=examples(6), deadline=None)
@given(
    seed=st.integers(0, 10_000),
    swing=st.floats(0.0, 0.9),
    burst=st.sampled_from([1.0, 3.0, 8.0]),
)
def test_pruning_keeps_the_recommendation_and_every_figure_of_the_candidates_it_runs(
    seed: int, swing: float, burst: float
) -> None:
    trace = traffic(seed, 480, swing, burst)
    ensemble = settings_of("plausible", ModelParams(), trace)
    names = [*LIBRARY, "hybrid:90", "on-demand"]  # the hybrid on autopilot+stock:90
    reference = tune(trace, ensemble, names, Prices(), workers=1, prune=False)
    faster = tune(trace, ensemble, names, Prices(), workers=1, prune=True)
    assert faster.recommended.policy == reference.recommended.policy
    assert faster.code == reference.code
    by = {c.policy: c for c in reference.candidates}
    for c in faster.candidates:
        if c.pruned_by is None:  # run under every setting: the reference's figures
            assert c == by[c.policy]
        else:  # one run's figures, never recommended
            assert c.cost_usd.min == c.cost_usd.max and not c.frontier
            assert c.pruned_by in STOCK or c.pruned_by in by
    # nothing is lost: every candidate the reference shows is shown
    assert {c.policy for c in faster.candidates} >= {
        c.policy for c in reference.candidates if c.pruned_by is None
    }


def test_a_candidate_beaten_on_both_counts_by_a_stock_setting_is_pruned_not_its_hybrid() -> None:
    worse = 1 + PRUNE_MARGIN + 0.01
    early = [
        _placed("stock:70", 1_000, 10.0),
        _placed("autopilot+stock:70", 1_000 * worse + 1, 10.0 * worse),
        _placed("autopilot:60", 1_000 * worse + 1, 10.0),  # as cheap: kept
        _placed("on-demand", 0, 1.0),  # no rival: it is not billed as provisioned units are
    ]
    parts = [(early, 0.0), (early, 0.0)]
    rule = Rule(price=1.0)  # no limit: beaten on both counts only
    # the hybrid composed from it (its base) may cost less than both: it stays, and may be
    # recommended
    assert hybrid_base(parse("hybrid:70")).text == "autopilot+stock:70"
    names = ["hybrid:70", "autopilot+stock:70"]
    assert pruned(names, parts, rule) == {"autopilot+stock:70": "stock:70"}
    # within the margin on one count: kept
    near = [*early[:1], _placed("autopilot:70", 1_000 * worse + 1, 10.0 * (1 + PRUNE_MARGIN))]
    assert pruned(["autopilot:70"], [(near, 0.0), (near, 0.0)], rule) == {}


def test_out_of_reach_is_judged_on_both_parts_and_never_leaves_a_family_without_its_fallback() -> (
    None
):
    rule = Rule(floor=0.0)
    requested = 1_000.0
    first = [
        _placed("stock:30", 100, 30.0),
        _placed("autopilot:50", 500, 20.0),  # over 2 x the limit of 100, a sibling refuses less
        _placed("autopilot:60", 300, 15.0),  # the family's least refusing: kept
        _placed("autopilot+stock:70+owned", 900, 12.0),  # alone in its family
    ]
    later_over = [*first[:1], _placed("autopilot:50", 500, 20.0), *first[2:]]
    got = pruned([c.policy for c in first], [(first, requested), (later_over, requested)], rule)
    assert got == {"autopilot:50": "stock:30", "autopilot+stock:70+owned": "stock:30"}
    later_within = [*first[:1], _placed("autopilot:50", 150, 20.0), *first[2:]]
    got = pruned([c.policy for c in first], [(first, requested), (later_within, requested)], rule)
    assert "autopilot:50" not in got
