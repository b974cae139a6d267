"""The type check's reach into aws-cdk-lib: pyproject.toml has mypy follow the library's
modules the code uses, every interfaces module (the ``I...Ref`` protocols the library's
interfaces derive from), and each module a class of those derives from; the rest stands as
Any (it is most of mypy's time). A module the code names, or a base class, left out would
turn a checked type into Any unnoticed: none is."""

from __future__ import annotations

import ast
import keyword
import re
import tomllib
from collections.abc import Iterable
from pathlib import Path

import aws_cdk

from tests.support.shape import ROOT

SOURCES = ("constructs_pkg", "lambda_src", "tests", "examples", "benchmarks")
LIBRARY = Path(aws_cdk.__file__).parent


def module_file(dotted: str) -> Path | None:
    """The file of ``dotted`` (``aws_cdk.x.y``) in the installed aws-cdk-lib, if a module."""
    path = LIBRARY.joinpath(*dotted.split(".")[1:])
    for candidate in (path / "__init__.py", path.with_suffix(".py")):
        if candidate.exists():
            return candidate
    return None


def _chain(node: ast.expr) -> list[str]:
    """``a.b.c`` as ``["a", "b", "c"]``; [] for anything else."""
    names: list[str] = []
    while isinstance(node, ast.Attribute):
        names.insert(0, node.attr)
        node = node.value
    return [node.id, *names] if isinstance(node, ast.Name) else []


def used_modules(tree: ast.AST) -> set[str]:
    """The aws-cdk-lib modules a module's code names: imported (``import aws_cdk.x``,
    ``from aws_cdk import x``, ``from aws_cdk.x import y``, anywhere), or reached as an
    attribute of an imported one (``cdk.x.y.Z`` after ``import aws_cdk as cdk``), in code or
    in a quoted annotation."""
    found: set[str] = set()
    bound: dict[str, str] = {}  # a name the module binds to an aws-cdk-lib module
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "aws_cdk":
                    found.add(alias.name)
                    bound[alias.asname or alias.name.split(".")[0]] = (
                        alias.name if alias.asname else "aws_cdk"
                    )
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("aws_cdk"):
            module = node.module or ""
            found.add(module)
            for a in node.names:
                if module_file(f"{module}.{a.name}"):
                    found.add(f"{module}.{a.name}")
                    bound[a.asname or a.name] = f"{module}.{a.name}"
    quoted = [
        ast.parse(n.value, mode="eval")
        for n in ast.walk(tree)
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and _is_dotted(n.value, bound)
    ]
    for part in (tree, *quoted):
        for node in ast.walk(part):
            names = _chain(node) if isinstance(node, ast.Attribute) else []
            if names and names[0] in bound:
                dotted = bound[names[0]]
                for name in names[1:]:
                    if not module_file(f"{dotted}.{name}"):
                        break
                    dotted = f"{dotted}.{name}"
                    found.add(dotted)
    return found


def _is_dotted(text: str, bound: dict[str, str]) -> bool:
    """Whether ``text`` reads as a dotted name from one of ``bound`` (a quoted annotation
    such as ``"cdk.x.Y"``)."""
    parts = text.split(".")
    return (
        len(parts) > 1
        and parts[0] in bound
        and all(p.isidentifier() and not keyword.iskeyword(p) for p in parts)
    )


def sources() -> Iterable[Path]:
    for folder in SOURCES:
        yield from (ROOT / folder).rglob("*.py")


def followed() -> tuple[set[str], set[str]]:
    """The module patterns pyproject.toml has mypy skip, and the ones it follows."""
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


def is_followed(module: str, kept: set[str]) -> bool:
    return module in kept or any(k.endswith(".*") and module.startswith(k[:-1]) for k in kept)


IMPORT = re.compile(r"^\s*import (aws_cdk[\w.]*) as (\w+)$", re.MULTILINE)
"""jsii's generated import of another module of the library, under an alias."""
CLASS = re.compile(r"^class \w+\((.*?)\):$", re.MULTILINE | re.DOTALL)
"""A class and what is in its parentheses: its bases and keywords."""


def base_modules(module: str) -> set[str]:
    """The aws-cdk-lib modules the classes of ``module`` derive from (jsii's generated code
    names them ``alias.Class``, ``alias`` an ``import aws_cdk.x as alias``). Read with
    regular expressions: parsing the library's largest modules would take seconds each."""
    path = module_file(module)
    assert path is not None, module
    text = path.read_text()
    aliases = {alias: name for name, alias in IMPORT.findall(text)}
    return {
        aliases[alias]
        for bases in CLASS.findall(text)
        for alias in re.findall(r"\b(\w+)\.\w+", bases)
        if alias in aliases
    }


def test_every_aws_cdk_module_the_code_uses_is_type_checked() -> None:
    skipped, kept = followed()
    assert "aws_cdk.*" in skipped  # the rule this test keeps honest
    used = set().union(*(used_modules(ast.parse(p.read_text())) for p in sources()))
    assert used  # the walk finds the library where it is used
    assert sorted(m for m in used if not is_followed(m, kept)) == []


def test_every_class_a_followed_module_derives_from_is_type_checked() -> None:
    _, kept = followed()
    explicit = {k for k in kept if not k.endswith(".*")}
    interfaces = {
        f"aws_cdk.interfaces.{d.name}"
        for d in (LIBRARY / "interfaces").iterdir()
        if (d / "__init__.py").exists()
    }
    assert "aws_cdk.interfaces.*" in kept and interfaces
    missing = {
        (base, module)
        for module in sorted(explicit | interfaces)
        for base in base_modules(module)
        if not is_followed(base, kept)
    }
    assert sorted(missing) == []


def test_the_walk_finds_each_way_of_naming_a_module() -> None:
    code = (
        "import aws_cdk as cdk\n"
        "import aws_cdk.aws_sqs\n"
        "from aws_cdk import aws_sns as sns, Duration, interfaces\n"
        "from aws_cdk.assertions import Template\n"
        "def f() -> 'cdk.aws_ec2.IVpc':\n"
        "    from aws_cdk import aws_logs\n"
        "cdk.aws_kms.Key\n"
        "cdk.interfaces.aws_iam.IRoleRef\n"
        "interfaces.aws_s3.IBucketRef\n"
    )
    assert used_modules(ast.parse(code)) == {
        "aws_cdk",
        "aws_cdk.aws_sqs",
        "aws_cdk.aws_sns",
        "aws_cdk.interfaces",
        "aws_cdk.assertions",
        "aws_cdk.aws_ec2",
        "aws_cdk.aws_logs",
        "aws_cdk.aws_kms",
        "aws_cdk.interfaces.aws_iam",
        "aws_cdk.interfaces.aws_s3",
    }


def test_the_base_classes_of_the_topic_come_from_three_modules() -> None:
    # sns's ITopic derives from core's IResource, codestarnotifications' target and the
    # interfaces' ITopicRef: each a module the check must follow
    assert {
        "aws_cdk",
        "aws_cdk.aws_codestarnotifications",
        "aws_cdk.interfaces.aws_sns",
    } <= base_modules("aws_cdk.aws_sns")
