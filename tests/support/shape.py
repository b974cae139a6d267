"""The code's shape as the tests and the session's summary read it: the modules of the
three packages, and those longer than the advisory caps."""

from __future__ import annotations

from pathlib import Path

from constructs_pkg.common._assets import module_files

ROOT = Path(__file__).resolve().parents[2]
RUNTIME = ROOT / "lambda_src" / "ddb_capacity_runtime"
#: The packages the distribution ships.
PACKAGES = (ROOT / "constructs_pkg", RUNTIME, ROOT / "lambda_src" / "ddb_capacity_tools")
#: The longest module of the run-time package and the tools, and of the constructs (aws-cdk's
#: construct modules are a few hundred lines: one feature each). Advisory: a module is split
#: by feature, not by length, so one over its cap is reported at the end of a run, never failed.
MAX_MODULE_LINES = 800
MAX_CONSTRUCT_MODULE_LINES = 700


def modules() -> dict[str, Path]:
    """Every module of the three packages by dotted name (a package by its own name)."""
    return module_files(PACKAGES)


def long_modules(
    limit: int = MAX_MODULE_LINES, construct_limit: int = MAX_CONSTRUCT_MODULE_LINES
) -> list[str]:
    """``path (N lines)`` of every module of the packages longer than its limit:
    ``construct_limit`` for the constructs, ``limit`` for the others."""
    out = []
    for path in modules().values():
        lines = len(path.read_text().splitlines())
        most = construct_limit if path.is_relative_to(PACKAGES[0]) else limit
        if lines > most:
            out.append(f"{path.relative_to(ROOT)} ({lines} lines)")
    return sorted(out)
