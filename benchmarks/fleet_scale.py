"""The fleet-scale goals in one run: the sharded tick (``benchmarks.sharded_tick``) and the
fleet report (``benchmarks.fleet_report``), each in its own process, their goal lines
printed together at the end.

- every batch of a sharded tick over ``--tables`` tables with 2 GSIs each (default
  10,000), on moto with 20 ms added to every call, done within the 2-minute tick;
- the tick's GetMetricData calls at ⌈metric queries / 500⌉;
- the fleet report over ``--fleet-tables`` tables' 14-day histories (default 40: 1,000
  take about 25 minutes here) in N = 2 processes at most 1/N of the time in one, and its
  cost a month on the engine.

Usage:
    PYTHONPATH=.:lambda_src .venv/bin/python -m benchmarks.fleet_scale [--tables 10000]
        [--fleet-tables 40]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

#: The lines of each benchmark's output that state a goal, a count or a cost.
KEPT = ("PASS", "MISS", "all ", "cost a month", "tables  batches", "     1,000", "    10,000")


def run(module: str, *args: str) -> list[str]:
    """``python -m module args``; its output, printed as it comes, and returned."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([".", "lambda_src"])}
    done = subprocess.run(  # noqa: S603 (this repository's own benchmark modules)
        [sys.executable, "-m", module, *args],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    print(done.stdout, end="")
    return done.stdout.splitlines()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", type=int, default=10_000)
    parser.add_argument("--fleet-tables", type=int, default=40)
    args = parser.parse_args()
    above = str(min(1_000, args.tables - 1))  # sharded, whatever the size
    tick = run("benchmarks.sharded_tick", "--tables", str(args.tables), "--shard-above", above)
    fleet = run("benchmarks.fleet_report", "--tables", str(args.fleet_tables))
    print("\n== fleet-scale goals ==")
    print(f"sharded tick over {args.tables:,} tables:")
    for line in tick:
        if any(k in line for k in KEPT[:3]):
            print(f"  {line.strip()}")
    print(f"fleet report over {args.fleet_tables:,} tables:")
    for line in fleet:
        if any(k in line for k in KEPT):
            print(f"  {line.strip()}")


if __name__ == "__main__":
    main()
