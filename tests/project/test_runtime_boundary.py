"""The run-time package (the whole Lambda asset) imports only the standard library, boto3
and botocore, but its build-time ``schedule`` subpackage (in no function's asset), which
also imports cronsim; its pure core imports neither boto3 nor aws_cdk; the tools never load
the CDK."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import ddb_capacity_runtime

PACKAGE = Path(ddb_capacity_runtime.__file__).resolve().parent
STDLIB = set(sys.stdlib_module_names)


def _imports(path: Path) -> list[str]:
    """Modules ``path`` imports at run time (imports only type checkers see are left out)."""
    tree = ast.parse(path.read_text())
    typing_only = {
        id(inner)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING"
        for inner in ast.walk(node)
    }
    names = []
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.append(node.module)
    return names


def test_runtime_imports_only_stdlib_and_boto3() -> None:
    allowed = STDLIB | {"boto3", "botocore"}
    offenders = []
    files = sorted(PACKAGE.rglob("*.py"))
    assert len(files) > 20
    for path in files:
        # the start-up hook is a top-level module (sitecustomize): it names the package
        ok = allowed | {"ddb_capacity_runtime"} if path.parent.name == "bootstrap" else allowed
        if path.parent == PACKAGE / "schedule":  # build time only: tests/common/test_assets.py
            ok = allowed | {"cronsim"}
        offenders += [
            f"{path.relative_to(PACKAGE)}: {n}" for n in _imports(path) if n.split(".")[0] not in ok
        ]
    assert offenders == []


def test_core_imports_neither_boto3_nor_the_cdk() -> None:
    allowed = STDLIB
    offenders = [
        f"{path.name}: {n}"
        for path in sorted((PACKAGE / "core").rglob("*.py"))
        for n in _imports(path)
        if n.split(".")[0] not in allowed
    ]
    assert offenders == []


POISON = """
import sys

for name in ("boto3", "botocore", "aws_cdk", "constructs", "jsii", "cdk_nag"):
    sys.modules[name] = None  # 'import name' now raises ImportError
"""


def _run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )


def test_the_pure_core_imports_with_boto3_and_the_cdk_poisoned() -> None:
    # GIVEN boto3, botocore and the CDK made unimportable
    core = [p.stem for p in sorted((PACKAGE / "core").glob("*.py")) if p.stem != "__init__"]
    code = (
        POISON
        + "".join(f"import ddb_capacity_runtime.core.{m}\n" for m in core)
        + "print(sorted(m for m in sys.modules if m.startswith('ddb_capacity_runtime.core.')))"
    )
    # WHEN every core module is imported THEN it works
    done = _run(code)
    assert done.returncode == 0, done.stderr
    assert len(eval(done.stdout)) == len(core) >= 8  # noqa: S307 (our own printed list)


def test_poisoning_is_real() -> None:
    # The same poison makes a boto3 user fail, so the test above could fail.
    done = _run(POISON + "import ddb_capacity_runtime.aws.actuator\n")
    assert done.returncode != 0
    assert "'botocore' is not a package" in done.stderr


LAMBDA_ENTRY_POINTS = (
    "ddb_capacity_runtime.scaler.handler",
    "ddb_capacity_runtime.requests.restorer",
    "ddb_capacity_runtime.requests.broker",
    "ddb_capacity_runtime.fast_path.surge_raise",
    "ddb_capacity_runtime.settle.handler",
)


def test_lambda_entry_points_load_neither_cronsim_nor_the_cdk() -> None:
    # The Lambda runtime has boto3 but no cronsim, aws_cdk or tools.
    code = (
        "import sys\n"
        + "".join(f"import {m}\n" for m in LAMBDA_ENTRY_POINTS)
        + "print(sorted({m.split('.')[0] for m in sys.modules}))"
    )
    done = _run(code)
    assert done.returncode == 0, done.stderr
    loaded = set(eval(done.stdout))  # noqa: S307 (our own printed list)
    assert not loaded & {
        "cronsim",
        "aws_cdk",
        "jsii",
        "constructs",
        "constructs_pkg",
        "ddb_capacity_tools",
        "cdk_nag",
    }


def test_the_cli_and_simulator_start_without_the_cdk() -> None:
    code = (
        "import sys\nimport ddb_capacity_tools.cli, ddb_capacity_tools.simulator\n"
        "print(sorted({m.split('.')[0] for m in sys.modules}))"
    )
    done = _run(code)
    assert done.returncode == 0, done.stderr
    loaded = set(eval(done.stdout))  # noqa: S307 (our own printed list)
    assert "ddb_capacity_runtime" in loaded
    assert not loaded & {"aws_cdk", "jsii", "constructs", "constructs_pkg", "cdk_nag"}
