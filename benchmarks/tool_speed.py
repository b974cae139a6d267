"""The command-line tools' speed, measured in one run, each in CPU seconds and in units: a
unit is the CPU time of a fixed pure-Python loop of 10^7 additions (`unit_seconds`), timed
beside each measurement, so the figures compare across machines and loads.

- **tune** on 14 days of noisy diurnal traffic (20,160 minutes), the default candidates, the
  plausible ensemble, one worker (one process), as ``ddb-capacity tune --workers 1`` runs
  it. Goal: at most 20 units.
- **simulate**: the default policy set (`DEFAULT_POLICIES`) over 30 days of the same traffic,
  in one process. Goal: at most 2 units.
- **reserve** over ``--tables`` generated tables of 14 days (`reserve_plan.generated_fleet`),
  each table's policy chosen by tune on its whole history (as ``ddb-capacity reserve``
  without ``--policy``), in one process; the CPU time a table, times 1,000 tables, shared by
  2 cores, is the estimate. Goal: 1,000 tables in at most 30 minutes on 2 cores.

The traffic is `simulate_noisy_30_days.noisy_diurnal` (seeded): the diurnal swing times
lognormal noise and bursts. Each tool is called in this process (its CPU time is this
process's: `time.process_time`), not as a subprocess.

``--quick`` (a smoke run for the test suite, seconds): one day, the stock targets and
on-demand as tune's candidates, 2 tables; its figures are not the goals' workloads.
``--only`` measures some of the three (``--only simulate``: seconds; tune: about 300 units;
reserve: minutes a table). ``--by-policy`` adds where simulate's time goes: each policy of
the set simulated alone, in CPU seconds and units (each with its own unit timed beside it).

Run as a program, it measures the compiled modules where a build matches the source
(`ddb_capacity_tools.compiled`, as the ``ddb-capacity`` command runs them), else the plain
ones; the output says which. ``--plain`` measures the same again with the plain modules, in
a process of its own run first, and prints both side by side (``DDB_CAPACITY_COMPILED=0``
measures the plain modules alone).

``--baseline DIR`` measures the same again with the tools of another checkout (DIR: a folder
holding ``lambda_src/ddb_capacity_tools``, e.g. a ``git worktree`` of an earlier commit), in a
process of its own run first, and prints both side by side: each figure's units then and now
and how many times faster now is. The earlier tools must take the same calls (`tune`,
`simulate`, `reserve.plan_tables`).

Usage:
    .venv/bin/python -m benchmarks.tool_speed [--tables 20] [--seed 1] [--quick]
        [--only tune|simulate|reserve ...] [--by-policy] [--plain | --baseline DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from types import ModuleType

compiled: ModuleType | None
try:
    from ddb_capacity_tools import compiled
except ImportError:  # a checkout's tools from before the compiled modules (--baseline DIR)
    compiled = None

if __name__ == "__main__" and compiled is not None:  # run as a program, as the command runs
    compiled.activate()

import ddb_capacity_tools  # noqa: E402 (after the compiled modules are chosen)
from benchmarks.reserve_plan import generated_fleet  # noqa: E402
from benchmarks.simulate_noisy_30_days import noisy_diurnal  # noqa: E402
from ddb_capacity_tools import reserve  # noqa: E402
from ddb_capacity_tools.simulator import ModelParams, Prices, parse  # noqa: E402
from ddb_capacity_tools.simulator.candidates import CANDIDATES, STOCK  # noqa: E402
from ddb_capacity_tools.simulator.ensemble import settings_of  # noqa: E402
from ddb_capacity_tools.simulator.run import DEFAULT_POLICIES, simulate  # noqa: E402
from ddb_capacity_tools.simulator.text import counted, fixed_width  # noqa: E402
from ddb_capacity_tools.simulator.tune import tune  # noqa: E402

LOOP_ADDITIONS = 10**7
TUNE_GOAL_UNITS = 20.0
SIMULATE_GOAL_UNITS = 2.0
RESERVE_GOAL_MINUTES = 30.0
FLEET_TABLES, FLEET_CORES = 1_000, 2


def unit_seconds() -> float:
    """CPU seconds of the fixed loop: 10^7 additions in pure Python."""
    began = time.process_time()
    total = 0
    for n in range(LOOP_ADDITIONS):
        total += n
    assert total == LOOP_ADDITIONS * (LOOP_ADDITIONS - 1) // 2
    return time.process_time() - began


@dataclass(frozen=True)
class Measured:
    name: str
    cpu: float
    unit: float
    goal: str
    verdict: str


def measure(work: Callable[[], object]) -> tuple[float, float]:
    """(CPU seconds of ``work()``, the unit's seconds timed just before it)."""
    unit = unit_seconds()
    began = time.process_time()
    work()
    return time.process_time() - began, unit


def tune_speed(days: int, seed: int, quick: bool) -> Measured:
    trace = noisy_diurnal(seed, days)
    settings = settings_of("plausible", ModelParams(), trace)
    candidates = ["on-demand"] if quick else list(CANDIDATES)
    cpu, unit = measure(lambda: tune(trace, settings, candidates, Prices(), workers=1))
    units = cpu / unit
    return Measured(
        f"tune, {trace.minutes:,} minutes, {'stock and on-demand' if quick else 'default'} "
        f"candidates, {len(settings)} settings, 1 worker",
        cpu,
        unit,
        f"<= {TUNE_GOAL_UNITS:.0f} units",
        _verdict(units <= TUNE_GOAL_UNITS, quick),
    )


def simulate_speed(days: int, seed: int, quick: bool) -> Measured:
    trace = noisy_diurnal(seed, days)
    specs = [parse(p) for p in DEFAULT_POLICIES]
    cpu, unit = measure(
        lambda: simulate(trace, specs, ModelParams(), Prices(), progress=None, workers=1)
    )
    return Measured(
        f"simulate, {trace.minutes:,} minutes, the default set ({len(specs)} policies)",
        cpu,
        unit,
        f"<= {SIMULATE_GOAL_UNITS:.0f} units",
        _verdict(cpu / unit <= SIMULATE_GOAL_UNITS, quick),
    )


def simulate_by_policy(days: int, seed: int) -> list[Measured]:
    """Each policy of the default set simulated alone over ``days`` of the traffic, as
    `simulate_speed` runs the set: where the set's time goes (no goal each)."""
    trace = noisy_diurnal(seed, days)
    rows = []
    for policy in DEFAULT_POLICIES:
        specs = [parse(policy)]
        cpu, unit = measure(
            partial(simulate, trace, specs, ModelParams(), Prices(), progress=None, workers=1)
        )
        rows.append(Measured(f"simulate {policy}, {trace.minutes:,} minutes", cpu, unit, "", ""))
    return rows


def reserve_speed(tables: int, days: int, quick: bool) -> tuple[Measured, float]:
    """The measurement, and the estimate for `FLEET_TABLES` on `FLEET_CORES` in minutes."""
    fleet = generated_fleet(tables, days)
    setup = reserve.Setup(candidates=STOCK) if quick else reserve.Setup()
    split = fleet[0].minutes  # no --score-from: planned on the whole history
    cpu, unit = measure(lambda: reserve.plan_tables(fleet, split, setup, 1, None))
    minutes = cpu / tables * FLEET_TABLES / FLEET_CORES / 60
    goal = f"{FLEET_TABLES:,} tables <= {RESERVE_GOAL_MINUTES:.0f} min on {FLEET_CORES} cores"
    return (
        Measured(
            f"reserve, {counted(tables, 'table')} x {fleet[0].minutes:,} minutes, tune per table",
            cpu,
            unit,
            goal,
            f"{_verdict(minutes <= RESERVE_GOAL_MINUTES, quick)} ({minutes:,.0f} min)",
        ),
        minutes,
    )


def _verdict(met: bool, quick: bool) -> str:
    if quick:
        return "(quick: not the goal's workload)"
    return "PASS" if met else "MISS"


def table(rows: Sequence[Measured], before: Sequence[Measured] | None = None) -> str:
    """The measurements as a fixed-width table; with ``before`` (the same measurements of the
    baseline, in the same order), each one's units then and how many times faster now is."""
    head = ("measurement", "CPU s", "units", "unit s")
    if before is None:
        plain: list[tuple[str, ...]] = [(*head, "goal", "verdict")]
        plain += [(*_figures(r), r.goal, r.verdict) for r in rows]
        return "\n".join(fixed_width(plain, left=1))
    cells: list[tuple[str, ...]] = [
        (*head, "CPU s before", "units before", "x faster", "goal", "verdict")
    ]
    for now, then in zip(rows, before, strict=True):
        if now.name != then.name:
            raise SystemExit(
                f"the baseline measured {then.name!r} where this measured {now.name!r}"
            )
        faster = (then.cpu / then.unit) / (now.cpu / now.unit) if now.cpu > 0 else float("inf")
        cells.append(
            (
                *_figures(now),
                f"{then.cpu:,.2f}",
                f"{then.cpu / then.unit:,.1f}",
                f"{faster:,.1f}",
                now.goal,
                now.verdict,
            )
        )
    return "\n".join(fixed_width(cells, left=1))


def _figures(r: Measured) -> tuple[str, str, str, str]:
    return r.name, f"{r.cpu:,.2f}", f"{r.cpu / r.unit:,.1f}", f"{r.unit:.3f}"


def baseline(
    folder: Path, argv: Sequence[str], environ: dict[str, str] | None = None
) -> list[Measured]:
    """The measurements ``argv`` names, made in a process of their own with the tools of the
    checkout ``folder`` (its ``lambda_src`` first on the path) and this benchmark, with
    ``environ`` added to its environment."""
    tools = folder / "lambda_src"
    if not (tools / "ddb_capacity_tools").is_dir():
        raise SystemExit(
            f"--baseline: got {str(folder)!r}; expected a checkout's folder, one holding "
            "lambda_src/ddb_capacity_tools (e.g. a git worktree of an earlier commit)"
        )
    here = Path(__file__).resolve().parent.parent
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tools), str(here)]), **(environ or {})}
    done = subprocess.run(  # noqa: S603 (this interpreter, this benchmark's own module)
        [sys.executable, "-m", "benchmarks.tool_speed", *argv, "--emit-json"],
        env=env,
        cwd=here,
        stdout=subprocess.PIPE,
        check=True,
        text=True,
    )
    emitted = json.loads(done.stdout)
    used = Path(emitted["tools"]).resolve()
    if not used.is_relative_to(tools.resolve()):
        raise SystemExit(f"--baseline: the baseline ran the tools of {used}, not of {tools}")
    return [Measured(**row) for row in emitted["rows"]]


PARTS = ("tune", "simulate", "reserve")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tables", type=int, default=20, help="tables reserve plans (default 20)")
    parser.add_argument("--seed", type=int, default=1, help="the traffic's seed")
    parser.add_argument("--quick", action="store_true", help="a smoke run: one day, few runs")
    parser.add_argument(
        "--only", nargs="+", choices=PARTS, default=PARTS, help="the measurements to make"
    )
    parser.add_argument("--by-policy", action="store_true", help="also each simulate policy alone")
    parser.add_argument(
        "--baseline",
        type=Path,
        metavar="DIR",
        help="also measure the tools of this checkout, first, and print both side by side",
    )
    parser.add_argument(
        "--plain",
        action="store_true",
        help="also measure the plain modules, first, and print both side by side",
    )
    parser.add_argument("--emit-json", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.tables < 1:
        parser.error(f"--tables: got {args.tables}; expected a whole number of 1 or more")
    if args.plain and args.baseline is not None:
        parser.error("--plain and --baseline: give one (each names what is measured before)")
    before, given = None, list(sys.argv[1:] if argv is None else argv)
    if args.baseline is not None:
        at = given.index("--baseline")
        before = baseline(args.baseline, given[:at] + given[at + 2 :])
    if args.plain:
        here = Path(__file__).resolve().parent.parent
        plain = [a for a in given if a != "--plain"]
        if compiled is None:
            parser.error("--plain: these tools have no compiled modules")
        before = baseline(here, plain, {compiled.ENV: "0"})
    quick = args.quick
    days = 1 if quick else 14
    rows = []
    if "tune" in args.only:
        rows.append(tune_speed(days, args.seed, quick))
    if "simulate" in args.only:
        rows.append(simulate_speed(1 if quick else 30, args.seed, quick))
    if args.by_policy:
        rows += simulate_by_policy(1 if quick else 30, args.seed)
    tables = 2 if quick else args.tables
    reserved = reserve_speed(tables, days, quick) if "reserve" in args.only else None
    if reserved is not None:
        rows.append(reserved[0])
    if args.emit_json:
        print(json.dumps({"tools": ddb_capacity_tools.__file__, "rows": [vars(r) for r in rows]}))
        return 0
    modules = (
        "the compiled modules"
        if compiled is not None and compiled.active()
        else "the plain modules (no compiled build for this source, or DDB_CAPACITY_COMPILED=0)"
    )
    if args.plain:
        print(f"before: the plain modules; now: {modules}")
    elif before is not None:
        print(
            f"before: the tools of {args.baseline}; now: {Path(ddb_capacity_tools.__file__).parent}"
            f", {modules}"
        )
    else:
        print(f"measured: {modules}")
    print(f"a unit: the CPU time of {LOOP_ADDITIONS:,} additions in a pure-Python loop\n")
    print(table(rows, before))
    if reserved is not None:
        planned, minutes = reserved
        print(
            f"\nreserve: {planned.cpu / tables:,.2f} CPU s a table; {FLEET_TABLES:,} tables on "
            f"{FLEET_CORES} cores: about {minutes:,.0f} minutes (estimate: CPU time a table x "
            f"{FLEET_TABLES:,} / {FLEET_CORES})"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
