"""The shape of the tools package: no long function, every module says where it runs,
every package says what it exports."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

TOOLS = Path(__file__).resolve().parent.parent / "lambda_src" / "ddb_capacity_tools"
MAX_FUNCTION_LINES = 60
MODULES = sorted(str(p.relative_to(TOOLS)) for p in TOOLS.rglob("*.py"))
#: Left out of the length check: schedule.py, whose parse (62 lines) is still to be split.
LONG_LEFT_OUT = {"schedule.py"}


def _tree(name: str) -> ast.Module:
    return ast.parse((TOOLS / name).read_text(), name)


@pytest.mark.parametrize("name", [m for m in MODULES if m not in LONG_LEFT_OUT])
def test_no_function_is_longer_than_60_lines(name: str) -> None:
    long = [
        f"{node.name} ({node.end_lineno - node.lineno + 1} lines)"
        for node in ast.walk(_tree(name))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.end_lineno is not None
        and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES
    ]
    assert not long, f"{name}: {', '.join(long)}"


@pytest.mark.parametrize("name", MODULES)
def test_module_docstring_says_where_it_runs(name: str) -> None:
    docstring = ast.get_docstring(_tree(name)) or ""
    assert docstring.startswith("Runs in: "), f"{name}: docstring must open with 'Runs in: '"


@pytest.mark.parametrize("name", [m for m in MODULES if m.endswith("__init__.py")])
def test_package_defines_all(name: str) -> None:
    assigned = {
        t.id
        for node in _tree(name).body
        if isinstance(node, ast.Assign | ast.AnnAssign)
        for t in (node.targets if isinstance(node, ast.Assign) else [node.target])
        if isinstance(t, ast.Name)
    }
    assert "__all__" in assigned, f"{name}: a package defines __all__"
