"""Runs in: workers and Lambda functions started through the launcher.

Imported by Python at start-up when ``ddb-capacity-instrument`` (or the Lambda exec
wrapper) put this folder first on ``PYTHONPATH``: installs the fast path's client hook
(`ddb_capacity_runtime.instrument.install`) as soon as the process has imported boto3, so a
process that never imports it pays nothing for the hook (the hook watches boto3 Sessions
only); then runs the next ``sitecustomize`` on the path, if any, and leaves it as the
``sitecustomize`` module the application sees.
Without ``CAPACITY_SIGNALS`` it imports nothing (a process that inherits the path but not
the hook's settings starts as fast as without it) and says so in one line (in a Lambda
function, also counted: ``HookFailures``, with the standard library alone). Nothing here
ever stops the application from starting."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import re
import sys
from collections.abc import Sequence
from importlib.machinery import ModuleSpec
from types import ModuleType

NAMESPACE = "DynamoDBCapacity"
"""`ddb_capacity_runtime.core.names.METRICS_NAMESPACE`, and the count there a hook that
failed to install adds to (`ddb_capacity_runtime.fast_path.hook.HOOK_FAILURES`): named
here, as nothing of the library may be importable."""
FAILURES = "HookFailures"
SIGNALS_ENV = "CAPACITY_SIGNALS"
"""The signals function's variable (`ddb_capacity_runtime.core.surge_report.SIGNALS_ENV`), read
here before anything is imported."""
STORE_ENVS = ("CAPACITY_METRICS_STORE", "CAPACITY_HOLDS_TABLE")
STORE_DIMENSION = "StateStore"
"""The variables `ddb_capacity_runtime.core.names.metrics_store` reads, first set first, and
the dimension their value is (`ddb_capacity_runtime.events.STORE_DIMENSION`)."""
SIGNALS_DIMENSION = "SignalsFunction"
"""The dimension of the count without a store: the name of the signals function
``CAPACITY_SIGNALS`` names (`ddb_capacity_runtime.fast_path.failures.series`)."""
FUNCTION_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
"""A Lambda function's name (`ddb_capacity_runtime.fast_path.failures.FUNCTION_NAME`)."""


def function_name(function: str) -> str | None:
    """The name of the Lambda function ``function`` names (its name, its name and a
    qualifier, a partial or full ARN); None for anything else: the rule of
    `ddb_capacity_runtime.fast_path.failures.function_name`, in the standard library alone
    (tests/test_hook_failures_series.py holds the two to one answer)."""
    parts = function.strip().split(":")
    if parts[0] == "arn" and len(parts) >= 7 and parts[5] == "function":
        name = parts[6]  # arn:aws:lambda:REGION:ACCOUNT:function:NAME[:QUALIFIER]
    elif len(parts) >= 3 and parts[1] == "function":
        name = parts[2]  # ACCOUNT:function:NAME[:QUALIFIER]
    else:
        name = parts[0]  # NAME[:QUALIFIER]
    return name if FUNCTION_NAME.fullmatch(name) else None


def _when_boto3_is_imported() -> None:
    if not os.environ.get(SIGNALS_ENV, "").strip():
        print(
            f"ddb-capacity-instrument: hook not installed: {SIGNALS_ENV}: not set; expected "
            "the signals function's name or ARN",
            file=sys.stderr,
        )
        _count_failure()  # in a Lambda function only, where the wrapper expects it set
        return
    sys.meta_path.insert(0, _AfterBoto3())


class _AfterBoto3:
    """A finder first on ``sys.meta_path`` that finds nothing itself: when boto3 is first
    imported, it has the module's loader install the hook once the module has run, and
    leaves the path."""

    def find_spec(
        self, name: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if name != "boto3":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        loader = spec.loader if spec is not None else None
        run = getattr(loader, "exec_module", None)
        if run is None:  # no module, or a loader this cannot follow: said, and counted
            print("ddb-capacity-instrument: hook not installed: boto3: not found", file=sys.stderr)
            _count_failure()
            return spec

        def exec_module(module: ModuleType) -> None:
            run(module)
            _install()

        loader.exec_module = exec_module  # type: ignore[method-assign,union-attr]
        return spec


def _install() -> None:
    try:
        from ddb_capacity_runtime.instrument import install

        install()
    except Exception as exc:  # noqa: BLE001 (the application starts whatever happens)
        print(f"ddb-capacity-instrument: hook not installed: {exc}", file=sys.stderr)
        _count_failure()


def _count_failure() -> None:
    """In a Lambda function, one ``HookFailures`` count as an EMF line, written with the
    standard library alone (the library's own modules may be what failed to import): the
    record `ddb_capacity_runtime.events.count_in_lambda` writes for it."""
    if not os.environ.get("AWS_LAMBDA_FUNCTION_NAME"):
        return
    import json
    import time

    store = next((v for v in (os.environ.get(n, "").strip() for n in STORE_ENVS) if v), None)
    name = STORE_DIMENSION
    if store is None:  # the signals function's name; none: no dimension, as the library's
        store = function_name(os.environ.get(SIGNALS_ENV, ""))
        name = SIGNALS_DIMENSION
    dimensions = [[name]] if store else [[]]
    metrics = [{"Namespace": NAMESPACE, "Dimensions": dimensions, "Metrics": [{"Name": FAILURES}]}]
    record = {"_aws": {"Timestamp": int(time.time() * 1000), "CloudWatchMetrics": metrics}}
    print(json.dumps({**record, **({name: store} if store else {}), FAILURES: 1}), flush=True)


def _next_sitecustomize() -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    path = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", path)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules["sitecustomize"] = module  # `import sitecustomize` finds the application's
    spec.loader.exec_module(module)


_when_boto3_is_imported()
_next_sitecustomize()
