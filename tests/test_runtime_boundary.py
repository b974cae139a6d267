"""Run-time code (the Lambda asset) imports only the standard library, boto3 and botocore."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import lambda_src

ALLOWED = set(sys.stdlib_module_names) | {"boto3", "botocore"}


def test_lambda_src_imports_only_stdlib_and_boto3() -> None:
    offenders = []
    files = sorted(Path(lambda_src.__file__).parent.rglob("*.py"))
    assert len(files) > 5
    for path in files:
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            offenders += [f"{path.name}: {n}" for n in names if n.split(".")[0] not in ALLOWED]
    assert offenders == []
