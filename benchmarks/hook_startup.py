"""What the client hook's bootstrap costs a Python process at start-up, measured in one run.

A process that inherits the launcher's ``PYTHONPATH`` (a child of an instrumented program,
a tool it runs) imports the bootstrap's ``sitecustomize`` at start-up. Three ways to start
``python -c pass``, in turn, ``--runs`` times each:

- **without the hook**: no bootstrap on the path;
- **the hook's path, unset**: the bootstrap first on the path, ``CAPACITY_SIGNALS`` unset
  (the bootstrap reads the environment and imports nothing);
- **the hook set, no boto3**: the bootstrap and ``CAPACITY_SIGNALS`` set, in a program that
  never imports boto3 (the hook waits for boto3's import, and so installs nothing);

and two ways to start ``python -c "import boto3"``: without the hook, and with it set (boto3
and the hook imported, a Session hooked; no report is sent by a process that makes no
request).

Printed: each way's median, minimum and maximum, and the unset path's and the set path's
medians against the plain start. Goal: each within 20 ms of the plain start.

``--quick`` (for the test suite): 3 runs each.

Usage:
    .venv/bin/python -m benchmarks.hook_startup [--runs 21] [--quick]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence

from ddb_capacity_runtime.instrument import BOOTSTRAP

GOAL_MS = 20.0


def _env(path: bool, signals: bool) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAPACITY_")}
    env.pop("PYTHONPATH", None)
    if path:
        env["PYTHONPATH"] = str(BOOTSTRAP)
    if signals:
        env.update(CAPACITY_SIGNALS="capacity-signals", AWS_DEFAULT_REGION="us-east-1")
    return env


def _once(env: dict[str, str], program: str) -> float:
    began = time.perf_counter()
    subprocess.run(  # noqa: S603 (this interpreter, a fixed program)
        [sys.executable, "-c", program], env=env, check=True, capture_output=True
    )
    return (time.perf_counter() - began) * 1000


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=21)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    runs = 3 if args.quick else args.runs
    ways = {
        "without the hook": (_env(False, False), "pass"),
        "the hook's path, unset": (_env(True, False), "pass"),
        "the hook set, no boto3": (_env(True, True), "pass"),
        "import boto3, no hook": (_env(False, False), "import boto3"),
        "import boto3, hook set": (_env(True, True), "import boto3"),
    }
    times: dict[str, list[float]] = {name: [] for name in ways}
    for _ in range(runs):  # in turn, so a busier moment falls on every way alike
        for name, (env, program) in ways.items():
            times[name].append(_once(env, program))
    print(f"python -c PROGRAM, {runs} runs each, in turn (ms: median, min-max)")
    for name, values in times.items():
        print(
            f"  {name:<24} {statistics.median(values):7.1f}  ({min(values):.1f}-{max(values):.1f})"
        )
    plain = statistics.median(times["without the hook"])
    for name in ("the hook's path, unset", "the hook set, no boto3"):
        extra = statistics.median(times[name]) - plain
        verdict = "PASS" if extra <= GOAL_MS else "MISS"
        print(f"{name} costs {extra:+.1f} ms: {verdict} (goal <= {GOAL_MS:g} ms)")
    hooked = statistics.median(times["import boto3, hook set"])
    print(
        f"the hook adds {hooked - statistics.median(times['import boto3, no hook']):+.1f} ms "
        "to a program that imports boto3"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
