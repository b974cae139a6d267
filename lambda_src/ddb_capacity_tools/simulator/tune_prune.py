"""Runs in: workstation (`ddb-capacity tune`, `reserve`).

Pruning: which candidates run under the whole ensemble. Every candidate runs once under the
ensemble's first setting (the command line's model with its fastest CloudWatch and
UpdateTable); a library candidate (one that runs the scaler) that a rival beats there by
`PRUNE_MARGIN` on both counts, refusing more and costing more, on the earlier part (where each
family is fitted) and on the later part (where the choice is made), is not run under the other
settings (`dominated`). It stays in the output with that one run's figures, marked with the
rival that beat it (`Candidate.pruned_by`), and is never recommended.

The rival must be sure to be among those chosen from whatever the other settings show, and
provisioned as the pruned one is: stock target tracking (every target is), or a library
candidate alone in its family (`family`: a family of several is fitted down to one, which may
not be the rival). It is no more complex than the pruned one (stock is the simplest there is),
so the rule's preference for a simpler candidate within the noise is kept. Stock target
tracking, on-demand, the hybrid and declared windows are never pruned (the last two may be
recommended where the autopilot they are composed from is not: its run is kept for them).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

from .candidates import (
    REFUSAL_FLOOR,
    SCALER_KINDS,
    STOCK,
    Candidate,
    Rule,
    best_stock,
    compared_only,
    complexity,
    family,
    spec_of,
)
from .policies import COMPOSED

PRUNE_MARGIN = 0.10
"""How much worse on both counts, in the first setting, a candidate must
be than a rival on each part for it to be pruned: more than 1.1 x the rival's dollars, and more
than 1.1 x its refused units plus `REFUSAL_FLOOR` of the units requested (a difference within
the floor is the simulator's noise). Checked against the unpruned path by
``benchmarks/tune_prune.py`` (docs: Tune, 'Pruning')."""


REACH_FACTOR = 2.0
"""A library candidate refusing more than this times the limit rule's limit in the first
setting, on both parts, is out of reach (`out_of_reach`): the first setting is the ensemble's
quickest (CloudWatch and UpdateTable at their fastest, the whole burst bucket), in which every
policy refuses least."""


def prunable(c: Candidate) -> bool:
    """Whether ``c`` may be pruned: a priced candidate that runs the library's scaler (not
    the hybrid nor declared windows: composed with on-demand, they can cost less than the
    autopilot they are composed from, and are not counted on the earlier part)."""
    kind = spec_of(c.policy).kind
    return kind in SCALER_KINDS and kind not in COMPOSED and c.once_usd is not None


def beats(better: Candidate, worse: Candidate, requested: float) -> bool:
    """Whether ``better`` beats ``worse`` on both counts by `PRUNE_MARGIN` (medians)."""
    margin = 1 + PRUNE_MARGIN
    return (
        worse.cost > better.cost * margin
        and worse.refused > better.refused * margin + REFUSAL_FLOOR * requested
    )


def sure(c: Candidate, families: Mapping[str, int]) -> bool:
    """Whether ``c`` reaches the choice whatever the other settings show: a candidate that
    may be recommended, of stock target tracking, or a library candidate alone in its family
    (``families``: the candidates of each). Not on-demand: its cost does not move with the
    price of provisioned units as the pruned one's does (``reserve`` chooses again at the
    reserved rate)."""
    if compared_only(c):
        return False
    return c.policy in STOCK or (
        spec_of(c.policy).kind != "on-demand" and families[family(c.policy)] == 1
    )


def dominated(parts: Sequence[tuple[Sequence[Candidate], float]]) -> dict[str, str]:
    """Per candidate to prune, the cheapest rival (`sure`) that beats it (`beats`) in each
    of ``parts`` (each: the first setting's candidates counted over a part, and the units
    requested over it; the first part's candidates name the rivals), no more complex."""
    first = parts[0][0]
    families = Counter(family(c.policy) for c in first)
    rivals = [c for c in first if sure(c, families)]
    by_part = [{c.policy: c for c in placed} for placed, _ in parts]
    out = {}
    for c in first:
        if not prunable(c):
            continue
        level = complexity(c.policy)
        by = [
            o
            for o in rivals
            if o.policy != c.policy
            and complexity(o.policy) <= level
            and all(
                beats(mine[o.policy], mine[c.policy], requested)
                for mine, (_, requested) in zip(by_part, parts, strict=True)
            )
        ]
        if by:
            out[c.policy] = min(by, key=lambda o: (o.cost, o.refused)).policy
    return out


def out_of_reach(parts: Sequence[tuple[Sequence[Candidate], float]], rule: Rule) -> dict[str, str]:
    """Under the limit rule (none under a price), per candidate to prune, the best stock
    setting of the first part: each candidate that refuses more than `REACH_FACTOR` x the
    rule's limit in each of ``parts`` (as `dominated` takes them; the limit each part's own)
    unless it is its family's fallback: of a family of several, none refusing less on the
    first part (fitting falls back on the one refusing least when none is within)."""
    if rule.price is not None:
        return {}
    over = set.intersection(
        *(
            {
                c.policy
                for c in placed
                if c.refused > REACH_FACTOR * rule.limit(best_stock(placed), requested)
            }
            for placed, requested in parts
        )
    )
    first = parts[0][0]
    best = best_stock(first).policy
    out = {}
    for c in first:
        kin = [o for o in first if family(o.policy) == family(c.policy) and o is not c]
        fallback = kin and all(o.refused >= c.refused for o in kin)
        if c.policy in over and prunable(c) and not fallback:
            out[c.policy] = best
    return out


def pruned(
    names: Sequence[str], parts: Sequence[tuple[Sequence[Candidate], float]], rule: Rule
) -> dict[str, str]:
    """Per name of ``names`` to prune, what beat it (`dominated`, over ``parts``) or the
    best stock setting, whose refusals set a limit it is out of reach of (`out_of_reach`).
    The hybrid and declared windows are not pruned with the autopilot they are composed from:
    each may be recommended where it is not (`prunable`)."""
    out = out_of_reach(parts, rule) | dominated(parts)
    return {name: by for name, by in out.items() if name in names}
