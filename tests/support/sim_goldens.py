"""The simulator's golden runs (`tests/simulator/test_sim_equivalence.py`): a few policies
over a seeded 3-day noisy trace (and a table with a GSI), under the model before warm
throughput and under the default one, each written as readable JSON in
``tests/simulator/goldens/``:

- ``trace.json``: the trace's demand, one line a minute (``minute_fields`` names the columns).
- ``<policy>-tick<N>[-gsi][-spread]-<warm>.json``, one a run: ``run`` (how it was run);
  ``results``, per dimension, every result field and the recorded series as the minutes in
  which something happened (``minute_fields`` names the columns): demand other than the
  trace's, served other than the minute's demand, a throttle, a capacity other than the
  minute before's (every dimension's first minute is listed); ``null`` is what a quiet
  minute has there, so a minute not listed has the trace's demand, all of it served, no
  throttle and the capacity of the minute before. And ``decisions``: every decision the
  run-time core's ``plan_table`` made, one line for each stretch of consecutive calls in
  which a dimension's decision stayed the same (``decision_fields`` names the columns:
  ``calls``, the first and last ``plan_table`` call counting from 0, and ``minutes``, their
  ticks' trace minutes, negative in the warm-up; then the dimension, the change and the
  decision). Every call decides the same dimensions in the same order (the order of the
  first call's lines); ``calls`` is how many calls there were.

Every float is written as ``repr`` writes it, so a golden holds each value exactly. Write
them again, from the code as it is, with::

    .venv/bin/python -m tests.support.sim_goldens --write

(or ``make goldens``); without ``--write`` it says which runs differ from their goldens.
"""

from __future__ import annotations

import argparse
import dataclasses
import difflib
import enum
import inspect
import json
import math
import random
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from functools import partial
from typing import Any, NamedTuple

from ddb_capacity_runtime.core.plan import Change
from ddb_capacity_runtime.core.policy import Decision
from ddb_capacity_runtime.core.series import MINUTE
from ddb_capacity_tools.simulator import ModelParams, Prices, parse, policies, run_policy
from ddb_capacity_tools.simulator.run import DimensionResult
from ddb_capacity_tools.simulator.scenarios import START
from ddb_capacity_tools.simulator.trace import Trace
from tests.support.shape import ROOT

GOLDENS = ROOT / "tests" / "simulator" / "goldens"
#: The command that writes the goldens again.
WRITE_COMMAND = ".venv/bin/python -m tests.support.sim_goldens --write"
#: The recorded series, in a listed minute's columns (after the minute); any other a
#: record holds follows them, by name.
SERIES = ("demand", "served", "throttled", "provisioned", "throttle_events")
#: The differing lines a failure shows at most.
DIFF_LINES = 60


class Case(NamedTuple):
    """One golden run: a policy, its tick (minutes), whether the table has a GSI, whether
    the model draws its delays (1-3 minutes, `ModelParams.delay_spread_minutes`), and the
    model's ``warm_update_seconds`` (None: the model before warm throughput)."""

    policy: str
    tick: int
    gsi: bool
    spread: bool
    warm: int | None

    @property
    def name(self) -> str:
        """The golden's file name, without ``.json``."""
        flags = ("-gsi" if self.gsi else "") + ("-spread" if self.spread else "")
        warm = "no-warm" if self.warm is None else f"warm{self.warm}s"
        return f"{self.policy.replace(':', '')}-tick{self.tick}{flags}-{warm}"


_RUNS = (
    ("stock:70", 2, False, False),
    ("autopilot+stock:70", 2, False, False),
    ("throttle-aware+stock:70", 1, True, False),
    ("autopilot", 5, True, True),
    ("oracle", 2, True, False),
)
#: Every run under the model before warm throughput, then under the default model.
CASES = tuple(
    Case(*run, warm) for warm in (None, ModelParams().warm_update_seconds) for run in _RUNS
)


def _noisy(seed: int, days: int) -> dict[str, list[float]]:
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
    """The seeded 3-day noisy trace: the table's, and with ``gsi`` the GSI ``by-user``'s."""
    table = _noisy(1, 3)
    demand: dict[tuple[str | None, str], list[float]] = {
        (None, "read"): table["read"],
        (None, "write"): table["write"],
    }
    if gsi:
        index = _noisy(2, 3)
        demand |= {("by-user", "read"): index["read"], ("by-user", "write"): index["write"]}
    return Trace("noisy-3-days", START, demand)


class Run(NamedTuple):
    """What one run made: its results, and each ``plan_table`` call's time and decisions."""

    results: list[DimensionResult]
    calls: list[tuple[datetime, list[tuple[Change, Decision]]]]


@contextmanager
def _recording(calls: list[tuple[datetime, list[tuple[Change, Decision]]]]) -> Iterator[None]:
    """The simulator's policies call the core's ``plan_table`` (their import of it, not an
    export) through one that keeps each call's time and decisions in ``calls``."""
    plan_table: Callable[..., list[tuple[Change, Decision]]] = vars(policies)["plan_table"]
    signature = inspect.signature(plan_table)

    def recording(*args: Any, **kwargs: Any) -> list[tuple[Change, Decision]]:
        planned = plan_table(*args, **kwargs)
        calls.append((signature.bind(*args, **kwargs).arguments["now"], planned))
        return planned

    vars(policies)["plan_table"] = recording
    try:
        yield
    finally:
        vars(policies)["plan_table"] = plan_table


def run(case: Case) -> Run:
    """One golden run, as the simulator makes it."""
    params = (
        ModelParams(delay_spread_minutes=2, update_spread_minutes=2)
        if case.spread
        else ModelParams()
    )
    params = dataclasses.replace(params, warm_update_seconds=case.warm).validate()
    calls: list[tuple[datetime, list[tuple[Change, Decision]]]] = []
    with _recording(calls):
        results = run_policy(parse(case.policy), trace(case.gsi), params, Prices(), tick=case.tick)
    return Run(results, calls)


def _plain(value: Any, where: str) -> Any:
    """``value`` as JSON holds it: an enum by its value, a tuple as a list."""
    if isinstance(value, enum.Enum):
        return _plain(value.value, where)
    if isinstance(value, tuple):
        return [_plain(v, where) for v in value]
    if value is None or isinstance(value, bool | int | float | str):
        return value
    raise TypeError(
        f"{where}: got {value!r} ({type(value).__name__}); a golden holds None, "
        "bool, int, float, str, an enum or a tuple of them"
    )


def _line(value: Any) -> str:
    """One JSON line; ``repr``'s floats (NaN and infinities as Python's json writes them)."""
    return json.dumps(value, ensure_ascii=False)


def _block(name: str, rows: Sequence[str], indent: str) -> list[str]:
    """``"name": [`` then each row on its own line, then ``]``."""
    if not rows:
        return [f'{indent}"{name}": []']
    inner = indent + "  "
    return [
        f'{indent}"{name}": [',
        *(f"{inner}{r}," for r in rows[:-1]),
        f"{inner}{rows[-1]}",
        f"{indent}]",
    ]


UNSET_EMPTY = ("key_range", "on_demand", "max_on_demand")
"""The recorded series a run sets only where it has them (empty: not set, not in a golden)."""


def _series(result: DimensionResult, demand: Sequence[float]) -> dict[str, list[Any]]:
    """``result``'s recorded series, in ``SERIES``'s order then the others by name, each as
    long as the trace."""
    recorded = {k: v for k, v in vars(result.recorded).items() if k not in UNSET_EMPTY or v}
    names = [n for n in SERIES if n in recorded] + sorted(set(recorded) - set(SERIES))
    for name in names:
        if len(recorded[name]) != len(demand) or None in recorded[name]:
            raise ValueError(
                f"{result.key} {name}: got {len(recorded[name])} minutes (None in "
                f"them: {None in recorded[name]}); a golden wants a value for each "
                f"of the trace's {len(demand)}"
            )
    return {name: list(recorded[name]) for name in names}


def _quiet(name: str, series: dict[str, list[Any]], demand: Sequence[float], m: int) -> Any:
    """What a quiet minute ``m`` has in series ``name``: the trace's demand, all of it
    served, the capacity of the minute before (none for the first), nothing else."""
    if name == "demand":
        return demand[m]
    if name == "served":
        return series["demand"][m] if "demand" in series else None
    if name == "provisioned":
        return series[name][m - 1] if m else None
    return 0.0


def _minutes(series: dict[str, list[Any]], demand: Sequence[float]) -> list[str]:
    """The minutes in which something happened, one line each: the minute, then each
    series' value where it is not a quiet minute's, else null."""
    rows = []
    for m in range(len(demand)):
        row = [
            None if repr(values[m]) == repr(_quiet(name, series, demand, m)) else values[m]
            for name, values in series.items()
        ]
        if any(v is not None for v in row):
            rows.append(_line([m, *row]))
    return rows


def _result_lines(result: DimensionResult, demand: Sequence[float]) -> list[str]:
    """One dimension's result fields, one a line, and its listed minutes (declared
    windows' hours only where there are some: no golden's policy declares them)."""
    fields = {
        k: v
        for k, v in vars(result).items()
        if k != "recorded" and (k not in ("hours", "score_from") or v)
    }
    series = _series(result, demand)
    lines = ["    {", '      "fields": {']
    items = [f"        {_line(k)}: {_line(_plain(v, k))}" for k, v in fields.items()]
    lines += [*(f"{i}," for i in items[:-1]), items[-1], "      },"]
    lines.append(f'      "minute_fields": {_line(["minute", *series])},')
    return [*lines, *_block("minutes", _minutes(series, demand), "      "), "    }"]


def _decision_fields() -> tuple[str, ...]:
    """A decision line's columns: its calls and their minutes (first and last), its
    dimension, the Change's, the Decision's (its reason last)."""
    own = [f.name for f in dataclasses.fields(Decision) if f.name != "reason"]
    return ("calls", "minutes", "index", "dimension", "old", "new", "via", *own, "reason")


def _check_order(made: Run) -> None:
    """Every ``plan_table`` call decides the first call's dimensions, in its order."""
    orders = [[(c.dimension.index, c.dimension.dimension) for c, _ in p] for _, p in made.calls]
    for call, order in enumerate(orders):
        if order != orders[0]:
            raise ValueError(
                f"plan_table call {call}: decided {order}; a golden wants every call to decide "
                f"the first call's dimensions, in its order: {orders[0]}"
            )


def _decisions(made: Run, start: datetime) -> list[str]:
    """The decisions, one line for each stretch of consecutive calls in which a dimension's
    decision stayed the same: the first and last call, their minutes, the decision."""
    _check_order(made)
    Stretch = tuple[list[int], list[Any], tuple[str | None, str], str]
    stretches: list[Stretch] = []  # calls, their minutes, dimension, decision
    last: dict[tuple[str | None, str], Stretch] = {}
    for call, (now, planned) in enumerate(made.calls):
        minutes = (now - start) / MINUTE
        minute = int(minutes) if minutes.is_integer() else minutes
        for change, decision in planned:
            key = (change.dimension.index, change.dimension.dimension)
            own = {f.name: getattr(decision, f.name) for f in dataclasses.fields(Decision)}
            reason = own.pop("reason")
            made_ = (change.old, change.new, change.via, *own.values(), reason)
            text = _line(_plain(made_, f"plan_table call {call}, {key}"))[1:-1]
            stretch = last.get(key)
            if stretch is not None and stretch[0][1] == call - 1 and stretch[3] == text:
                stretch[0][1], stretch[1][1] = call, minute
            else:
                last[key] = ([call, call], [minute, minute], key, text)
                stretches.append(last[key])
    return [
        f"[{_line(calls)}, {_line(minutes)}, {_line(list(key))[1:-1]}, {text}]"
        for calls, minutes, key, text in stretches
    ]


def golden(case: Case, made: Run | None = None) -> str:
    """The golden text of ``case``'s run (``made``, else run now)."""
    made = made or run(case)
    demand = trace(case.gsi).demand
    results = [_result_lines(r, demand[r.key]) for r in made.results]
    lines = ["{", f'  "run": {_line(case._asdict())},', '  "results": [']
    for i, result in enumerate(results):
        lines += result[:-1] + [result[-1] + ("," if i < len(results) - 1 else "")]
    lines += ["  ],", f'  "calls": {len(made.calls)},']
    lines.append(f'  "decision_fields": {_line(_decision_fields())},')
    return "\n".join([*lines, *_block("decisions", _decisions(made, START), "  "), "}", ""])


def trace_golden() -> str:
    """The golden text of the trace: its demand, one line a minute."""
    whole = trace(gsi=True)
    keys = list(whole.demand)
    rows = [_line([m, *(whole.demand[k][m] for k in keys)]) for m in range(whole.minutes)]
    head = {"name": whole.name, "start": whole.start.isoformat()}
    columns = ["minute", *(f"{k[0] or 'table'} {k[1]}" for k in keys)]
    lines = ["{", *(f"  {_line(k)}: {_line(v)}," for k, v in head.items())]
    lines.append(f'  "minute_fields": {_line(columns)},')
    return "\n".join([*lines, *_block("minutes", rows, "  "), "}", ""])


def _where(lines: Sequence[str], at: int) -> str:
    """The part of a golden that line ``at`` is in: a dimension's result, or the decisions."""
    for line in reversed(lines[: at + 1]):
        if line.startswith('        "key": '):
            return "result " + line.removeprefix('        "key": ').rstrip(",")
        if line.startswith('  "') and line.endswith("["):
            return line.strip().removesuffix(": [")
    return "head"


def difference(name: str, expected: str, got: str, limit: int = DIFF_LINES) -> str:
    """'' when ``got`` is ``expected``; else which lines of golden ``name`` differ, the first
    of them as a unified diff (``limit`` lines at most), each hunk naming where it is."""
    if got == expected:
        return ""
    old, new = expected.splitlines(), got.splitlines()
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    groups = list(matcher.get_grouped_opcodes(2))
    changed = sum(max(i2 - i1, j2 - j1) for g in groups for t, i1, i2, j1, j2 in g if t != "equal")
    out = []
    for group in groups:
        i, j = group[0][1], group[0][3]
        out.append(f"@@ golden line {i + 1}, run line {j + 1}: {_where(old, group[0][2] - 1)} @@")
        for tag, i1, i2, j1, j2 in group:
            out += [(" " if tag == "equal" else "-") + line for line in old[i1:i2]]
            out += ["+" + line for line in new[j1:j2]] if tag != "equal" else []
    shown = out[:limit] + (
        [f"... ({len(out) - limit} more diff lines)"] if len(out) > limit else []
    )
    return "\n".join(
        [
            f"{GOLDENS.relative_to(ROOT)}/{name}.json: the run differs from its golden in "
            f"{changed} line(s) (- golden, + this run):",
            *shown,
            f"If the change is meant, write the goldens again: {WRITE_COMMAND}",
        ]
    )


def _goldens() -> Iterator[tuple[str, Callable[[], str]]]:
    """Each golden's name and what makes its text."""
    yield "trace", trace_golden
    for case in CASES:
        yield case.name, partial(golden, case)


def main(argv: Sequence[str] | None = None) -> int:
    """Write every golden again (``--write``), or say which differ from their runs."""
    parser = argparse.ArgumentParser(
        prog="python -m tests.support.sim_goldens",
        description=__doc__.split("\n\n")[0] if __doc__ else None,
    )
    parser.add_argument("--write", action="store_true", help="write the goldens again")
    args = parser.parse_args(argv)
    GOLDENS.mkdir(parents=True, exist_ok=True)
    differ = 0
    for name, make in _goldens():
        path = GOLDENS / f"{name}.json"
        text = make()
        if args.write:
            path.write_text(text)
            print(f"wrote {path.relative_to(ROOT)} ({len(text):,} bytes)")
            continue
        found = difference(name, path.read_text() if path.exists() else "", text)
        differ += bool(found)
        print(found or f"{path.relative_to(ROOT)}: unchanged")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
