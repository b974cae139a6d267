"""The type check's reach into aws-cdk-lib: pyproject.toml has mypy follow the library's
modules the code uses and stand the rest as Any (they are most of its time). A module the
code imports and the list leaves out would be Any unnoticed: none is."""

from __future__ import annotations

import ast
import tomllib
from collections.abc import Iterable
from pathlib import Path

import aws_cdk

ROOT = Path(__file__).resolve().parent.parent
SOURCES = ("constructs_pkg", "lambda_src", "tests", "examples", "benchmarks")
LIBRARY = Path(aws_cdk.__file__).parent


def is_module(dotted: str) -> bool:
    """Whether ``dotted`` (``aws_cdk.x.y``) is a module of the installed aws-cdk-lib."""
    path = LIBRARY.joinpath(*dotted.split(".")[1:])
    return (path / "__init__.py").exists() or path.with_suffix(".py").exists()


def used_modules(tree: ast.AST) -> set[str]:
    """The aws-cdk-lib modules a module's code names: imported (``import aws_cdk.x``,
    ``from aws_cdk import x``, ``from aws_cdk.x import y``) or reached as an attribute of the
    library's root (``cdk.x.Y`` after ``import aws_cdk as cdk``)."""
    found: set[str] = set()
    roots = {"aws_cdk"}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "aws_cdk":
                    found.add(alias.name)
                    if alias.name == "aws_cdk":
                        roots.add(alias.asname or alias.name)
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("aws_cdk"):
            module = node.module or ""
            found.add(module)
            found.update(
                f"{module}.{a.name}" for a in node.names if is_module(f"{module}.{a.name}")
            )
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in roots
            and is_module(f"aws_cdk.{node.attr}")
        ):
            found.add(f"aws_cdk.{node.attr}")
    return found


def sources() -> Iterable[Path]:
    for folder in SOURCES:
        yield from (ROOT / folder).rglob("*.py")


def followed() -> tuple[set[str], set[str]]:
    """The module patterns pyproject.toml has mypy skip, and the modules it follows."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    skipped: set[str] = set()
    kept: set[str] = set()
    for override in config["tool"]["mypy"].get("overrides", []):
        modules = override["module"]
        modules = [modules] if isinstance(modules, str) else modules
        target = {"skip": skipped, "normal": kept}.get(override.get("follow_imports", ""))
        if target is not None:
            target.update(modules)
    return skipped, kept


def test_every_aws_cdk_module_the_code_uses_is_type_checked() -> None:
    skipped, kept = followed()
    assert "aws_cdk.*" in skipped  # the rule this test keeps honest
    used = set().union(*(used_modules(ast.parse(p.read_text())) for p in sources()))
    assert used  # the walk finds the library where it is used
    assert sorted(used - kept) == []


def test_the_walk_finds_each_way_of_naming_a_module() -> None:
    code = (
        "import aws_cdk as cdk\n"
        "import aws_cdk.aws_sqs\n"
        "from aws_cdk import aws_sns as sns, Duration\n"
        "from aws_cdk.assertions import Template\n"
        "cdk.aws_kms.Key\n"
    )
    assert used_modules(ast.parse(code)) == {
        "aws_cdk",
        "aws_cdk.aws_sqs",
        "aws_cdk.aws_sns",
        "aws_cdk.assertions",
        "aws_cdk.aws_kms",
    }
