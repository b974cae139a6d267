"""Pruning against the reference path: per trace, ``tune`` with every candidate run under
every setting of the ``plausible`` ensemble (``--no-prune``) and with pruning (the default:
`simulator.tune_prune`), the default candidates, one worker each; the recommendation of
each, whether they agree, the candidates pruned and the CPU seconds of each path.

The traces: the 7 real traces of ``../shared/traces/`` (read in place, never copied; their
licence is in the README there), cut to their first ``--days`` days, and the noisy diurnal
traffic of the speed benchmark (`simulate_noisy_30_days.noisy_diurnal`, seeds 1 to
``--seeds``). Traces run in ``--workers`` processes, a trace each.

Usage:
    .venv/bin/python -m benchmarks.tune_prune [--days 14] [--seeds 2] [--workers 2]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from benchmarks.simulate_noisy_30_days import noisy_diurnal
from ddb_capacity_tools.simulator import ModelParams, Prices, read_csv
from ddb_capacity_tools.simulator.ensemble import settings_of
from ddb_capacity_tools.simulator.text import fixed_width
from ddb_capacity_tools.simulator.trace import Trace, cut
from ddb_capacity_tools.simulator.tune import tune

SHARED = Path(__file__).resolve().parents[2] / "shared" / "traces"


def traces(folder: Path, days: int, seeds: int) -> list[Trace]:
    """The real traces of ``folder`` (none when it is missing) cut to ``days`` days, then the
    noisy diurnal traffic of seeds 1 to ``seeds``."""
    real = [read_csv(p) for p in sorted(folder.glob("*.csv"))] if folder.is_dir() else []
    out = [cut(t, min(t.minutes, days * 1440)) for t in real]
    return out + [noisy_diurnal(seed, days) for seed in range(1, seeds + 1)]


def compare(trace: Trace) -> tuple[str, ...]:
    """One row: the trace, each path's recommendation, agreement, what was pruned, CPU s."""
    settings = settings_of("plausible", ModelParams(), trace)
    began = time.process_time()
    reference = tune(trace, settings, prices=Prices(), workers=1, prune=False)
    middle = time.process_time()
    pruned = tune(trace, settings, prices=Prices(), workers=1, prune=True)
    end = time.process_time()
    cut = sorted(c.policy for c in pruned.candidates if c.pruned_by is not None)
    same = reference.recommended.policy == pruned.recommended.policy
    return (
        trace.name,
        reference.recommended.policy,
        pruned.recommended.policy,
        "yes" if same else "NO",
        f"{len(cut)}: {', '.join(cut)}" if cut else "0",
        f"{middle - began:,.1f}",
        f"{end - middle:,.1f}",
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--days", type=int, default=14, help="days of each trace (default 14)")
    parser.add_argument("--seeds", type=int, default=2, help="noisy diurnal seeds (default 2)")
    parser.add_argument("--workers", type=int, default=2, help="processes (default 2)")
    parser.add_argument("--traces", type=Path, default=SHARED)
    args = parser.parse_args(argv)
    found = traces(args.traces, args.days, args.seeds)
    if not args.traces.is_dir():
        print(f"{args.traces} is missing: the noisy diurnal traces only\n")
    with ProcessPoolExecutor(args.workers) as pool:
        rows = list(pool.map(compare, found))
    header = ("trace", "reference", "pruned", "same", "pruned", "ref CPU s", "pruned CPU s")
    print("\n".join(fixed_width([header, *rows], left=5)))
    agree = sum(r[3] == "yes" for r in rows)
    print(f"\nthe same recommendation on {agree} of {len(rows)} traces")
    return 0 if agree == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
