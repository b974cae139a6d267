"""Runs in: workstation.

How long a function's handler takes to import on a cold start, measured as Lambda runs it.

Each function's asset is staged as the constructs stage it (`runtime.staged_asset`: the
run-time modules its handler imports, docstrings and comments stripped, the few of
`runtime.COMPILED_MODULES` with their bytecode, in a temporary folder, never in the
repository), and each run is a fresh ``python -I -S -B`` whose path holds only that folder
and boto3's site-packages: no bytecode is written, and none of the asset's is read but its
own, as on Lambda, whose read-only ``/var/task`` keeps no cache, so every other module of
the asset is compiled on a cold start. boto3 and botocore are read from their bytecode, as
Lambda's runtime ships them (compiled once before the runs, where they were not). A run measures

- ``sdk``: importing the AWS SDK the handler makes its clients from first, alone: boto3
  (what ``python -c "import boto3"`` imports), or ``botocore.session`` for a handler that
  makes them from one botocore session (`SDK_OF`: the scaler's, which never imports boto3);
- ``handler``: then importing the handler's module and looking the handler up, what Lambda
  does before the first invocation;
- ``+ later``: then importing the asset's other modules, those the handler's functions
  import only when they need them (the import graph's function-level imports): the most a
  first invocation adds, when it takes every such path;
- ``sdk + handler``: the two first together, the cold import the scaler's asset budget
  protects (`GOAL_MS`, its median, on the wall clock).

Each is timed by the wall clock and by the process's CPU time (which a loaded machine
disturbs less). It prints, for each handler, the median, min and max over ``--runs`` runs
of each. With ``--baseline DIR`` it measures a second asset in turn with this one (A, B,
A, B, ...), so that the machine's load weighs on both alike, and prints the median of the
differences of the pairs. DIR is either another copy of the run-time package's folder
(e.g. ``lambda_src/ddb_capacity_runtime`` of a ``git worktree`` of another commit),
staged here as this one is, or an asset folder already staged (one holding the package,
such as a cloud assembly's ``cdk.out/asset.*`` made by another commit), used as it is.
``--quick``: one run each, for the tests (timings are not asserted: they depend on the
machine, and on its load: read the figures beside their baselines of the same run).

Usage:
    .venv/bin/python benchmarks/handler_import.py [HANDLER ...] [--runs 21]
        [--baseline DIR] [--quick]

HANDLER defaults to the scaler's (``ddb_capacity_runtime.scaler.handler.lambda_handler``).
"""

from __future__ import annotations

import sys

if __name__ == "__main__":  # run as a script: nothing is written, not even a cache
    sys.dont_write_bytecode = True

import argparse  # noqa: E402 (after the line above, so that no import writes bytecode)
import importlib.util  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
from collections.abc import Sequence  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from pathlib import Path  # noqa: E402

import boto3  # noqa: E402

import ddb_capacity_runtime  # noqa: E402
from constructs_pkg.common._runtime import staged_asset  # noqa: E402

SCALER = "ddb_capacity_runtime.scaler.handler.lambda_handler"
#: The installed run-time package, as the constructs find it (`runtime.RUNTIME_PACKAGE`).
PACKAGE = Path(ddb_capacity_runtime.__file__).resolve().parent
#: Where boto3 and botocore are: the one folder besides the asset on a run's path.
BOTO_SITE = Path(boto3.__file__).resolve().parents[1]
#: The SDK module a handler's clients come from, when its module says so: one botocore
#: session (`aws.clients.botocore_session`); any other handler imports boto3.
SDK_OF = {"botocore_session(": "botocore.session"}

#: The most the median of ``sdk + handler`` (wall clock) may be for the scaler's
#: handler: what its asset's size budget (``tests/common/test_assets.py``) protects.
GOAL_MS = 150

#: One run, in a fresh interpreter: argv is the asset folder, boto3's folder, the handler,
#: the SDK module. Prints each clock's readings (wall, CPU) before the SDK, after it, after
#: the handler and after the asset's other modules.
RUN = """
import sys, time
clocks = (time.perf_counter, time.process_time)
marks = [[clock() for clock in clocks]]
asset, boto_site, handler, sdk = sys.argv[1:]
sys.path[:0] = [asset, boto_site]
__import__(sdk)
marks.append([clock() for clock in clocks])
import importlib, json, pathlib
module, function = handler.rsplit(".", 1)
getattr(importlib.import_module(module), function)
marks.append([clock() for clock in clocks])
for path in sorted(pathlib.Path(asset).rglob("*.py")):
    parts = path.relative_to(asset).with_suffix("").parts
    importlib.import_module(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
marks.append([clock() for clock in clocks])
print(json.dumps(marks))
"""

#: Imports boto3 in a fresh interpreter that writes bytecode: its modules compiled into
#: their ``__pycache__``, as Lambda's runtime ships them.
COMPILE_BOTO3 = "import sys; sys.path[:0] = [sys.argv[1]]; import boto3"


@dataclass(frozen=True)
class Asset:
    """A handler's staged asset: ``label`` names the package copy it came from; ``sdk``
    the module its clients come from (`SDK_OF`)."""

    label: str
    handler: str
    folder: Path
    sdk: str = "boto3"


def staged(folder: Path, handler: str, label: str) -> Asset:
    """The asset of ``handler``: staged from ``folder`` when it is a run-time package
    folder, else ``folder`` itself (an asset already staged)."""
    if (folder / "__init__.py").is_file():
        folder = staged_asset(handler, folder.resolve())
    module = folder.resolve() / (handler.rsplit(".", 1)[0].replace(".", "/") + ".py")
    text = module.read_text() if module.is_file() else ""
    sdk = next((m for mark, m in SDK_OF.items() if mark in text), "boto3")
    return Asset(label, handler, folder.resolve(), sdk)


#: What a run measures: (name, first mark, last mark, clock index); the marks are RUN's:
#: 0 before the SDK, 1 after it, 2 after the handler, 3 after the asset's other modules.
MEASURES = (
    ("sdk wall", 0, 1, 0),
    ("sdk cpu", 0, 1, 1),
    ("handler wall", 1, 2, 0),
    ("handler cpu", 1, 2, 1),
    ("+ later wall", 1, 3, 0),
    ("+ later cpu", 1, 3, 1),
    ("sdk + handler wall", 0, 2, 0),
    ("sdk + handler cpu", 0, 2, 1),
)
#: The measure `GOAL_MS` is for.
GOAL_MEASURE = "sdk + handler wall"


def compile_boto3() -> str | None:
    """Compile boto3's modules where their bytecode is not written yet (one import, in an
    interpreter that writes it); None when it is there now, else why not."""
    done = subprocess.run(  # noqa: S603 (this Python, on a script of this file)
        [sys.executable, "-I", "-S", "-c", COMPILE_BOTO3, str(BOTO_SITE)],
        capture_output=True,
        text=True,
        check=False,
    )
    source = BOTO_SITE / "botocore" / "client.py"
    if done.returncode == 0 and Path(importlib.util.cache_from_source(str(source))).is_file():
        return None
    return done.stderr.strip()[-300:] or f"no bytecode beside {source} (a read-only folder?)"


def run_once(asset: Asset) -> list[float]:
    """One cold import of ``asset``'s SDK and handler: each of `MEASURES`, in seconds."""
    done = subprocess.run(  # noqa: S603 (this Python, on a script of this file)
        [
            sys.executable,
            "-I",
            "-S",
            "-B",
            "-c",
            RUN,
            str(asset.folder),
            str(BOTO_SITE),
            asset.handler,
            asset.sdk,
        ],
        cwd=asset.folder,
        capture_output=True,
        text=True,
        check=True,
    )
    marks = json.loads(done.stdout)
    return [float(marks[end][clock] - marks[start][clock]) for _, start, end, clock in MEASURES]


def spread(seconds: Sequence[float]) -> str:
    """``median (min-max)`` of ``seconds``, in ms."""
    ms = [s * 1000 for s in seconds]
    return f"{statistics.median(ms):6.1f} ({min(ms):.1f}-{max(ms):.1f})"


def report(handler: str, runs: dict[str, list[list[float]]]) -> list[str]:
    """Lines for one handler's runs, by asset label (the current package first): each
    measure's median (min-max) in ms, with a baseline the median of the differences
    between the runs made one after the other, and for the scaler's handler whether each
    median of `GOAL_MEASURE` is within `GOAL_MS`."""
    lines = [f"{handler} ({len(next(iter(runs.values())))} runs, ms: median (min-max))"]
    for i, (name, *_) in enumerate(MEASURES):
        row = [f"{label} {spread([t[i] for t in times])}" for label, times in runs.items()]
        if len(runs) == 2:
            new, old = runs.values()
            diff = statistics.median(n[i] - o[i] for n, o in zip(new, old, strict=True))
            row.append(f"difference {diff * 1000:+.1f}")
        lines.append(f"  {name:21} " + "; ".join(row))
    if handler != SCALER:  # the goal is the scaler's
        return lines
    i = [name for name, *_ in MEASURES].index(GOAL_MEASURE)
    medians = [statistics.median(t[i] for t in times) * 1000 for times in runs.values()]
    verdicts = [
        f"{label} {median:.1f} ms ({'within' if median <= GOAL_MS else 'over'})"
        for label, median in zip(runs, medians, strict=True)
    ]
    lines.append(f"  goal: {GOAL_MEASURE}, median, at most {GOAL_MS} ms: " + "; ".join(verdicts))
    return lines


def measure(handler: str, runs: int, baseline: Path | None) -> list[str]:
    """``runs`` cold imports of ``handler``'s asset (and the baseline's, in turn)."""
    assets = [staged(PACKAGE, handler, "current")]
    if baseline is not None:
        assets.append(staged(baseline, handler, "baseline"))
    times: dict[str, list[list[float]]] = {a.label: [] for a in assets}
    for _ in range(runs):
        for asset in assets:
            times[asset.label].append(run_once(asset))
    return report(handler, times)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[1])
    parser.add_argument(
        "handlers",
        nargs="*",
        default=[SCALER],
        metavar="HANDLER",
        help=f"a function's handler, dotted (default: {SCALER})",
    )
    parser.add_argument("--runs", type=int, default=21, help="runs per asset (default 21)")
    parser.add_argument(
        "--baseline",
        type=Path,
        help="a copy of the run-time package's folder, or a staged asset folder, measured "
        "in turn with this one",
    )
    parser.add_argument("--quick", action="store_true", help="one run each (for the tests)")
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error(f"--runs: got {args.runs}; expected 1 or more")
    if args.baseline is not None and not any(
        (args.baseline / name / "__init__.py").is_file() for name in ("", PACKAGE.name)
    ):
        parser.error(
            f"--baseline: got {str(args.baseline)!r}; expected a copy of the run-time "
            f"package's folder, or an asset folder holding {PACKAGE.name}/"
        )
    unwritten = compile_boto3()
    if unwritten is not None:
        print(f"boto3's bytecode not written ({unwritten}): its import is timed compiling it")
    for handler in args.handlers:
        print("\n".join(measure(handler, 1 if args.quick else args.runs, args.baseline)))


if __name__ == "__main__":
    main()
