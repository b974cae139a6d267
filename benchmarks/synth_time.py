"""How long the README's quick start takes to synthesize against a stock ``Table`` with the
same auto scaling, measured in one run.

Each app runs in a fresh Python process (``python -c``, ``app.synth()`` into a temporary
directory named by ``CDK_OUTDIR``), as ``cdk synth`` runs an app, ``--runs`` times each in
turn, after one untimed run of each that compiles their modules' bytecode into a temporary
cache (``PYTHONPYCACHEPREFIX``), so both are timed as an installed package runs (pip
compiles a wheel's modules when it installs it), even where ``PYTHONDONTWRITEBYTECODE`` is
set:

- **stock**: an ``aws_dynamodb.Table`` with the quick start's table and GSI, each dimension
  under ``auto_scale_*_capacity`` and ``scale_on_utilization`` at the same targets;
- **quick start**: the README's app (a ``ProvisionedTable`` and a ``ThrottleAwareScaler``);
- **table alone**: the quick start without its scaler (its table and GSI, the high-water
  mark and the same auto scaling), with the validation on: what an app of tables alone pays
  (not judged against the goal);
- **one function**: the stock app and one bare Lambda function of the CDK's own (inline
  code, run every minute by a rule, one alarm on its errors, a read grant on the table),
  with the validation on: what any function costs a synth, the floor under an app with a
  scaler (not judged).

Printed: each app's median, minimum and maximum wall time, the ratio of the medians, and
the ratios run by run (the machine's speed drifts less within a pair of runs than across
the whole call). Goal: the quick start within 1.3x the stock app's time, as a new app
synthesizes, with the CDK's built-in CloudFormation validation on (its default).

Then both again with that validation off (``CDK_VALIDATION=false``, as ``cdk synth
--no-validation``): this second pair shows what the library's constructs themselves add, in
seconds and as a ratio. Only the first pair is judged against the goal. Then the quick start
with ``gc.freeze()`` after its ``app.synth()``, with the validation on, each run right after
the quick start's: what that option (the Scaler guide's Synth time) saves, run by run. Last,
where each run's time goes, by the marks the app prints: the median seconds from the
process's start to ``cdk.App`` (start), building the constructs (construct), ``app.synth()``
(synth), and from its return to the process's end (exit: Python's and the jsii kernel's),
and what the validation adds to each.

``--quick`` (for the test suite): 1 run each with the validation off only (the goal is not
judged), no untimed run first, and the bytecode as this environment keeps it
(``__pycache__``, from whatever ran before, or none under ``PYTHONDONTWRITEBYTECODE``): its
figures show the benchmark runs, not the ratio.

Usage:
    .venv/bin/python -m benchmarks.synth_time [--runs 5] [--quick]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GOAL = 1.3

STOCK = """
import aws_cdk as cdk
from aws_cdk import aws_dynamodb as dynamodb

app = cdk.App()
stack = cdk.Stack(app, "Shop")
table = dynamodb.Table(
    stack, "Orders",
    partition_key=dynamodb.Attribute(name="orderId", type=dynamodb.AttributeType.STRING),
    billing_mode=dynamodb.BillingMode.PROVISIONED, read_capacity=4_000, write_capacity=10,
)
table.add_global_secondary_index(
    index_name="byCustomer",
    partition_key=dynamodb.Attribute(name="customerId", type=dynamodb.AttributeType.STRING),
    read_capacity=5, write_capacity=5,
)
for scaling, target in (
    (table.auto_scale_read_capacity(min_capacity=10, max_capacity=4_000), 70),
    (table.auto_scale_write_capacity(min_capacity=10, max_capacity=2_000), 60),
    (table.auto_scale_global_secondary_index_read_capacity(
        "byCustomer", min_capacity=5, max_capacity=1_000), 70),
    (table.auto_scale_global_secondary_index_write_capacity(
        "byCustomer", min_capacity=5, max_capacity=2_000), 70),
):
    scaling.scale_on_utilization(target_utilization_percent=target)
app.synth()
"""

ONE_FUNCTION = "one function"
"""The stock app with one bare Lambda function (`one_function`)."""

FUNCTION = r"""
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_lambda as lambda_

function = lambda_.Function(
    stack, "Function", runtime=lambda_.Runtime.PYTHON_3_11, handler="index.handler",
    code=lambda_.Code.from_inline("def handler(event, context):\n    return None\n"),
)
events.Rule(
    stack, "Tick", schedule=events.Schedule.rate(cdk.Duration.minutes(1)),
    targets=[targets.LambdaFunction(function)],
)
function.metric_errors().create_alarm(
    stack, "Errors", threshold=1, evaluation_periods=1,
    comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
)
table.grant_read_data(function)
"""


def around_synth(code: str, before: str = "", after: str = "") -> str:
    """``code`` with ``before`` just before its last ``app.synth()`` line and ``after`` just
    after it."""
    head, synth, tail = code.rpartition("\napp.synth()\n")
    if not synth:
        raise ValueError("the app calls no `app.synth()` on a line of its own")
    return f"{head}{before}{synth}{after}{tail}"


def one_function(stock: str) -> str:
    """The ``stock`` app with `FUNCTION` made before its ``app.synth()``."""
    return around_synth(stock, before=f"\n{FUNCTION}")


def quick_start() -> str:
    """The README's quick start, as it is printed there (its first ``python`` block)."""
    text = (ROOT / "README.md").read_text()
    return text.split("```python\n", 1)[1].split("```", 1)[0]


TABLE = "table alone"
"""The quick start without its scaler (`table_alone`)."""


def table_alone(code: str) -> str:
    """The quick start ``code`` without its scaler: neither imported nor made."""
    lines = code.splitlines(keepends=True)
    kept = [line for line in lines if "enable_throttle_aware_scaling(" not in line]
    alone = "".join(kept).replace(", ThrottleAwareScaler", "")
    if len(kept) != len(lines) - 1 or "ThrottleAwareScaler" in alone:
        raise ValueError("the quick start makes no scaler on one line of its own")
    return alone


PHASES = ("start", "construct", "synth", "exit")
"""The parts of a run: to ``cdk.App`` (Python, aws-cdk-lib and the app's imports), building the
constructs, ``app.synth()``, and from its return to the process's end."""

MARK = "synth-time-mark"


def marked(code: str) -> str:
    """``code`` printing the wall clock where it makes the ``cdk.App`` (its first) and before
    and after its last ``app.synth()``."""
    stamp = f"print({MARK!r}, __import__('time').time())"
    head, app, tail = code.partition("\napp = cdk.App(")
    body, synth, end = tail.rpartition("\napp.synth()")
    if not (app and synth):
        raise ValueError("the app makes no `app = cdk.App(` or calls no `app.synth()`")
    return f"{head}\n{stamp}{app}{body}\n{stamp}{synth}\n{stamp}{end}"


def phases(start: float, marks: list[float], end: float) -> dict[str, float]:
    """The seconds of each of `PHASES`, from a run's start and end and its three marks."""
    points = [start, *marks, end]
    return {name: b - a for name, a, b in zip(PHASES, points[:-1], points[1:], strict=True)}


FROZEN = "exit freeze"
"""The quick start with ``gc.freeze()`` after its ``app.synth()`` (`frozen`), with the
validation on: what the one-line option of the Scaler guide's Synth time saves."""


def frozen(code: str) -> str:
    """``code`` with ``gc.freeze()`` after its last ``app.synth()``: Python's last garbage
    collections then leave the objects alive at exit to the process's end."""
    return "import gc\n" + around_synth(code, after="gc.freeze()\n")


def timed(
    code: str, pycache: str | None, validation: bool = True
) -> tuple[float, dict[str, float]]:
    """Wall seconds of one fresh ``python -c code`` run from the repository's root, and of its
    `PHASES`; its bytecode cached in ``pycache`` (None: as this environment keeps it, or
    not); the CDK's built-in validation off unless ``validation``."""
    dropped = {"CDK_VALIDATION"} | ({"PYTHONDONTWRITEBYTECODE"} if pycache else set())
    env = {
        **{k: v for k, v in os.environ.items() if k not in dropped},
        **({} if validation else {"CDK_VALIDATION": "false"}),
        **({} if pycache is None else {"PYTHONPYCACHEPREFIX": pycache}),
        "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION": "20",
        "JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION": "1",
    }
    with tempfile.TemporaryDirectory() as outdir:  # where the CDK CLI has an app write
        start = time.time()
        done = subprocess.run(  # noqa: S603 (this interpreter, code of this file)
            [sys.executable, "-c", marked(code)],
            cwd=ROOT,
            env={**env, "CDK_OUTDIR": outdir},
            check=True,
            capture_output=True,
            text=True,
        )
        end = time.time()
    marks = [float(line.split()[1]) for line in done.stdout.splitlines() if line.startswith(MARK)]
    return end - start, phases(start, marks, end)


Times = dict[tuple[str, bool], list[float]]
"""Wall seconds of each run, by app and whether the CDK's validation was on."""
Parts = dict[tuple[str, bool], list[dict[str, float]]]
"""The seconds of each run's `PHASES`, as `Times`."""


def measure(runs: int, quick: bool) -> tuple[Times, Parts]:
    """``runs`` runs of each app in turn, each with the CDK's validation on and off, the
    `FROZEN` quick start with it on, right after the quick start (itself right after the
    stock app), then the `TABLE` and `ONE_FUNCTION` apps with it on (``quick``: validation
    off only, none of those three, the bytecode as this environment keeps it)."""
    apps = {"stock": STOCK, "quick start": quick_start()}
    apps[FROZEN] = frozen(apps["quick start"])
    apps[TABLE] = table_alone(apps["quick start"])
    apps[ONE_FUNCTION] = one_function(STOCK)
    order = [("stock", False), ("quick start", False)]
    if not quick:
        extra = [(TABLE, True), (ONE_FUNCTION, True)]
        order = [("stock", True), ("quick start", True), (FROZEN, True), *extra, *order]
    times: Times = {key: [] for key in order}
    parts: Parts = {key: [] for key in order}
    with tempfile.TemporaryDirectory() as folder:
        pycache = None if quick else folder
        if pycache is not None:
            for name in ("stock", "quick start"):
                timed(apps[name], pycache)  # compiles the bytecode, untimed
        for _ in range(runs):
            for name, on in order:
                seconds, split = timed(apps[name], pycache, on)
                times[name, on].append(seconds)
                parts[name, on].append(split)
    return times, parts


def phase_lines(parts: Parts) -> list[str]:
    """Each app's median seconds in each of `PHASES`, and what the CDK's validation adds to
    each (when both were run)."""
    medians = {
        key: {name: statistics.median(run[name] for run in runs) for name in PHASES}
        for key, runs in parts.items()
    }
    lines = [f"{'median s of':<12} {'CDK validation':<15} " + " ".join(f"{n:>9}" for n in PHASES)]
    for (name, on), split in medians.items():
        lines.append(
            f"{name:<12} {'on' if on else 'off':<15} "
            + " ".join(f"{split[n]:>9.2f}" for n in PHASES)
        )
    for app in ("stock", "quick start"):
        if (app, True) in medians and (app, False) in medians:
            added = {n: medians[app, True][n] - medians[app, False][n] for n in PHASES}
            lines.append(
                f"the validation adds to the {app}: "
                + ", ".join(f"{added[n]:+.2f} s {n}" for n in PHASES)
            )
    return lines


def report(times: Times, parts: Parts | None = None) -> tuple[list[str], bool | None]:
    """The comparison's lines (with ``parts``, each phase's too), and whether the goal is met
    (None: not judged, the runs with the CDK's validation on missing)."""
    lines = [f"{'app':<12} {'CDK validation':<15} {'median s':>9} {'min s':>7} {'max s':>7}"]
    for (name, on), seconds in times.items():
        lines.append(
            f"{name:<12} {'on' if on else 'off':<15} "
            f"{statistics.median(seconds):>9.2f} {min(seconds):>7.2f} {max(seconds):>7.2f}"
        )
    medians = {key: statistics.median(seconds) for key, seconds in times.items()}
    met = None
    if ("quick start", True) in times:
        ratio = medians["quick start", True] / medians["stock", True]
        met = ratio <= GOAL
        paired = [
            q / s for q, s in zip(times["quick start", True], times["stock", True], strict=True)
        ]
        lines.append(
            f"quick start / stock: {ratio:.3f}x (goal: at most {GOAL}x): "
            f"{'met' if met else f'missed by {ratio - GOAL:.3f}'}; run by run (each quick start "
            f"against the stock run just before it): median {statistics.median(paired):.3f}x, "
            f"{min(paired):.3f}x to {max(paired):.3f}x"
        )
    else:
        lines.append(f"quick start / stock: not judged (goal: at most {GOAL}x, validation on)")
    own = medians["quick start", False] - medians["stock", False]
    bare = medians["quick start", False] / medians["stock", False]
    line = (
        f"with the CDK's validation off: {bare:.3f}x; the constructs add {own:.2f} s to the "
        f"stock app's {medians['stock', False]:.2f} s"
    )
    if met is not None:
        line += (
            f", the validation {medians['quick start', True] - medians['quick start', False]:.2f}"
            f" s to the quick start and "
            f"{medians['stock', True] - medians['stock', False]:.2f} s to the stock app"
        )
    lines.append(line)
    for name, what in (
        (TABLE, "the quick start without its scaler"),
        (ONE_FUNCTION, "the stock app and one bare Lambda function"),
    ):
        if (name, True) in times:
            lines.append(
                f"{name} / stock: {medians[name, True] / medians['stock', True]:.3f}x, "
                f"{medians[name, True] - medians['stock', True]:+.2f} s ({what}, validation on)"
            )
    if (FROZEN, True) in times:
        saved = [
            q - f for q, f in zip(times["quick start", True], times[FROZEN, True], strict=True)
        ]
        lines.append(
            f"gc.freeze() after app.synth() saves the quick start {statistics.median(saved):.2f} s"
            f" (median, run by run): {medians[FROZEN, True]:.2f} s, "
            f"{medians[FROZEN, True] / medians['stock', True]:.3f}x the stock app"
        )
    return [*lines, *(phase_lines(parts) if parts else [])], met


def main(argv: list[str] | None = None) -> int:
    """Run, print the comparison; 0 when the goal is met (or not judged, ``--quick``)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    runs = 1 if args.quick else args.runs
    times, parts = measure(runs, args.quick)
    compiled = (
        "validation off only, bytecode as this environment keeps it (--quick)"
        if args.quick
        else "bytecode compiled first (as installed)"
    )
    print(f"synth wall time, {runs} run(s) each, a fresh Python process a run, {compiled}")
    lines, met = report(times, parts)
    print("\n".join(lines))
    return 1 if met is False else 0


if __name__ == "__main__":
    raise SystemExit(main())
