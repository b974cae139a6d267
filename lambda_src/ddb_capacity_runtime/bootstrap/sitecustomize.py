"""Runs in: workers and Lambda functions started through the launcher.

Imported by Python at start-up when ``ddb-capacity-instrument`` (or the Lambda exec
wrapper) put this folder first on ``PYTHONPATH``: installs the fast path's client hook
(`ddb_capacity_runtime.instrument.install`), then runs the next ``sitecustomize``
on the path, if any. Nothing here ever stops the application from starting."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import sys


def _install() -> None:
    try:
        from ddb_capacity_runtime.instrument import install

        install()
    except Exception as exc:  # noqa: BLE001 (the application starts whatever happens)
        print(f"ddb-capacity-instrument: hook not installed: {exc}", file=sys.stderr)


def _next_sitecustomize() -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    path = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", path)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)


_install()
_next_sitecustomize()
