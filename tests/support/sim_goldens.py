"""The simulator's goldens: its results and the run-time core's decisions for a few
policies over a seeded 3-day noisy trace (and a table with a GSI), under the model before
warm throughput and under the default one, as readable JSON files in
``tests/simulator/goldens/`` (`tests/simulator/test_sim_equivalence.py` compares each run
with its file).

A file holds every result field (its ``repr``), each recorded series exactly (floats as
JSON writes them, which reads back to the same float) but compactly: ``demand`` as its
minutes that differ from the trace, ``served`` as those that differ from the demand,
``throttled`` and ``throttle_events`` as their minutes that are not 0, ``provisioned`` as
runs of one level (``value x N``); and every decision `plan_table` made, one call a line (each change with
every field of its decision), runs of the same line counted. A change of any value changes the file.

Write them again, after a deliberate change of results or decisions (say why in the
CHANGELOG)::

    make goldens        # .venv/bin/python -m tests.support.sim_goldens --write
"""

from __future__ import annotations

import argparse
import dataclasses
import difflib
import json
import math
import random
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ddb_capacity_runtime.core.plan import Change
from ddb_capacity_runtime.core.policy import Decision
from ddb_capacity_tools.simulator import ModelParams, Prices, parse, policies, run_policy
from ddb_capacity_tools.simulator.scenarios import START
from ddb_capacity_tools.simulator.trace import Trace
from tests.support.shape import ROOT

GOLDENS = ROOT / "tests" / "simulator" / "goldens"
"""Where the goldens are, one file a case."""

#: (policy, tick, GSI trace, model spread): the runs pinned, each under both models.
CASES: tuple[tuple[str, int, bool, bool], ...] = (
    ("stock:70", 2, False, False),
    ("autopilot+stock:70", 2, False, False),
    ("throttle-aware+stock:70", 1, True, False),
    ("autopilot", 5, True, True),
    ("oracle", 2, True, False),
)
#: The series a run records, each held by the goldens.
SERIES = {"demand", "served", "throttled", "throttle_events", "provisioned"}
#: The models: before warm throughput (a raise within it lands as any other), and the default.
MODELS: dict[str, int | None] = {"before-warm": None, "warm": ModelParams().warm_update_seconds}


def noisy(seed: int, days: int) -> dict[str, list[float]]:
    """A daily swing peaking at 20:00 UTC, times lognormal noise, with short bursts."""
    rng = random.Random(seed)  # noqa: S311 (a reproducible trace, not a secret)
    minutes = days * 1440
    burst = [1.0] * minutes
    for _ in range(4 * days):
        start, level = rng.randrange(minutes), rng.uniform(2.0, 4.0)
        for m in range(start, min(minutes, start + rng.randint(2, 10))):
            burst[m] = max(burst[m], level)
    reads, writes = [], []
    for m in range(minutes):
        s = ((1 + math.cos(2 * math.pi * ((m % 1440) / 60 - 20) / 24)) / 2) ** 4
        reads.append(min(40_000.0, (1_500 + 18_000 * s) * rng.lognormvariate(0, 0.25) * burst[m]))
        writes.append(min(40_000.0, (300 + 4_500 * s) * rng.lognormvariate(0, 0.25) * burst[m]))
    return {"read": reads, "write": writes}


def trace(gsi: bool) -> Trace:
    """The 3-day trace of the table (and of its GSI ``by-user``)."""
    table = noisy(1, 3)
    demand: dict[tuple[str | None, str], list[float]] = {
        (None, "read"): table["read"],
        (None, "write"): table["write"],
    }
    if gsi:
        index = noisy(2, 3)
        demand |= {("by-user", "read"): index["read"], ("by-user", "write"): index["write"]}
    return Trace("noisy-3-days", START, demand)


def name(case: tuple[str, int, bool, bool], model: str) -> str:
    """A case's file name: ``autopilot+stock-70_tick-2_gsi_spread_warm.json``."""
    policy, tick, gsi, spread = case
    parts = [policy.replace(":", "-"), f"tick-{tick}"]
    parts += ["gsi"] * gsi + ["spread"] * spread + [model]
    return "_".join(parts) + ".json"


def _sparse(values: Sequence[float], base: Sequence[float] | None = None) -> dict[str, Any]:
    """The minutes of ``values`` that differ from ``base`` (None: from 0), by minute."""
    return {str(m): v for m, v in enumerate(values) if v != (base[m] if base is not None else 0)}


def _runs(values: Sequence[Any]) -> list[str]:
    """``values`` as runs, one a line: ``value`` (a number's ``repr``, a text as it is), or
    ``value x N`` for N in a row."""
    runs: list[list[Any]] = []
    for v in values:
        if runs and runs[-1][0] == v and type(runs[-1][0]) is type(v):
            runs[-1][1] += 1
        else:
            runs.append([v, 1])
    shown = [(v if isinstance(v, str) else repr(v), n) for v, n in runs]
    return [v if n == 1 else f"{v} x {n}" for v, n in shown]


def _change(change: Change, decision: Decision) -> str:
    """One change and its decision, every field, in a line: ``old > new via: capacity action
    throttles_seen free_decrease | reason``."""
    fields = {f.name: getattr(decision, f.name) for f in dataclasses.fields(decision)}
    reason = fields.pop("reason")
    shown = " ".join(repr(getattr(v, "value", v)) for v in fields.values())
    return f"{change.old!r} > {change.new!r} {change.via.value}: {shown} | {reason}"


@contextmanager
def _decisions() -> Iterator[list[str]]:
    """Every call of the simulator's `plan_table` in the block, as a line (`_change`)."""
    made: list[str] = []
    # the simulator's policies' plan_table (their import of it, not an export)
    plan_table: Callable[..., list[tuple[Change, Decision]]] = vars(policies)["plan_table"]

    def recording(*args: Any, **kwargs: Any) -> list[tuple[Change, Decision]]:
        planned = plan_table(*args, **kwargs)
        made.append(" ; ".join(_change(c, d) for c, d in planned) or "(none)")
        return planned

    setattr(policies, "plan_table", recording)  # noqa: B010 (not an attribute it exports)
    try:
        yield made
    finally:
        setattr(policies, "plan_table", plan_table)  # noqa: B010


def record(case: tuple[str, int, bool, bool], warm: int | None) -> dict[str, Any]:
    """One run of ``case`` under the model of ``warm``, as its golden holds it."""
    policy, tick, gsi, spread = case
    params = (
        ModelParams(delay_spread_minutes=2, update_spread_minutes=2) if spread else ModelParams()
    )
    params = dataclasses.replace(params, warm_update_seconds=warm)
    given = trace(gsi)
    results = []
    with _decisions() as decisions:
        for r in run_policy(parse(policy), given, params.validate(), Prices(), tick=tick):
            fields = {k: repr(v) for k, v in vars(r).items() if k != "recorded"}
            series = vars(r.recorded)
            if set(series) != SERIES:  # a new series is pinned too: add it here
                raise ValueError(f"recorded series {sorted(series)}; the goldens hold {SERIES}")
            demand = series["demand"]
            results.append(
                {
                    "fields": fields,
                    "demand_off_trace": _sparse(demand, given.demand[r.key]),
                    "served_off_demand": _sparse(series["served"], demand),
                    "throttled": _sparse(series["throttled"]),
                    "throttle_events": _sparse(series["throttle_events"]),
                    "provisioned": _runs(series["provisioned"]),
                }
            )
    return {
        "case": {"policy": policy, "tick": tick, "gsi": gsi, "spread": spread, "warm": warm},
        "results": results,
        "decisions": _runs(decisions),
    }


def text(golden: dict[str, Any]) -> str:
    """A golden as its file holds it: one value a line where that makes a diff readable."""
    return json.dumps(golden, indent=1, sort_keys=True) + "\n"


def difference(expected: str, got: str, most: int = 80) -> str:
    """The first ``most`` lines of the unified diff of a golden file and a run's."""
    lines = difflib.unified_diff(
        expected.splitlines(), got.splitlines(), "golden", "this run", lineterm="", n=2
    )
    shown = [line for _, line in zip(range(most), lines, strict=False)]
    return "\n".join(shown)


def write(cases: Sequence[tuple[str, int, bool, bool]] = CASES) -> list[Path]:
    """Write every case's golden again; returns the files written."""
    GOLDENS.mkdir(parents=True, exist_ok=True)
    written = []
    for case in cases:
        for model, warm in MODELS.items():
            path = GOLDENS / name(case, model)
            path.write_text(text(record(case, warm)))
            written.append(path)
    return written


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", action="store_true", help="write every golden again")
    args = parser.parse_args(argv)
    if not args.write:
        parser.error("say --write to write the goldens again")
    for path in write():
        print(path.relative_to(ROOT))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
