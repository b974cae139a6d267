"""What starting the command line and importing the constructs take, measured in one run.

Three commands, in turn, ``--runs`` times each, each in a fresh process of this Python:

- ``ddb-capacity --help`` (the console script beside this Python);
- ``import constructs_pkg`` (its names load their modules on first use);
- ``from constructs_pkg import ThrottleAwareScaler`` (one construct: the CDK loaded).

Printed: each one's median, minimum and maximum wall-clock seconds.

Usage:
    .venv/bin/python -m benchmarks.cli_startup [--runs 5]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

CLI = Path(sys.executable).parent / "ddb-capacity"
COMMANDS = {
    "ddb-capacity --help": [str(CLI), "--help"],
    "import constructs_pkg": [sys.executable, "-c", "import constructs_pkg"],
    "one construct imported": [
        sys.executable,
        "-c",
        "from constructs_pkg import ThrottleAwareScaler",
    ],
}


def timed(command: list[str]) -> float:
    """Seconds one run of ``command`` takes; it must succeed."""
    t0 = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)  # noqa: S603 (fixed)
    return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    seconds: dict[str, list[float]] = {name: [] for name in COMMANDS}
    for _ in range(args.runs):
        for name, command in COMMANDS.items():
            seconds[name].append(timed(command))
    print(f"{args.runs} runs each, in turn (s: median, min-max)")
    for name, runs in seconds.items():
        print(f"  {name:<24} {statistics.median(runs):5.2f}  ({min(runs):.2f}-{max(runs):.2f})")


if __name__ == "__main__":
    main()
