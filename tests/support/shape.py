"""The code's shape as the tests and the session's summary read it: the modules of the
three packages, and those longer than the advisory caps."""

from __future__ import annotations

import ast
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


def _private_attributes(tree: ast.AST) -> dict[ast.ClassDef | None, set[str]]:
    """The private attributes each class of a module defines: assigned on ``self``, or
    defined (a method, a class attribute) in its body."""
    out: dict[ast.ClassDef | None, set[str]] = {}
    for cls in ast.walk(tree):
        if not isinstance(cls, ast.ClassDef):
            continue
        names = out.setdefault(cls, set())
        for node in ast.walk(cls):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id == "self"
                and isinstance(node.ctx, ast.Store)
            ):
                names.add(node.attr)
        for node in cls.body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                names.add(node.name)
            targets = node.targets if isinstance(node, ast.Assign) else []
            if isinstance(node, ast.AnnAssign):
                targets = [node.target]
            names |= {t.id for t in targets if isinstance(t, ast.Name)}
    return out


def foreign_private_reads(package: Path, root: Path = ROOT) -> list[str]:
    """``path:line expression`` of each read of another object's private attribute
    (``x._name``, ``x`` not ``self`` nor ``cls``) in ``package``, but those of an object of
    the class that reads it (``other._key`` in a method of ``other``'s class) and those in
    the one module whose classes define that attribute (a module's own functions on its own
    class's state): what a module reads of state that another module's class keeps."""
    trees = {path: ast.parse(path.read_text(), str(path)) for path in sorted(package.rglob("*.py"))}
    defined = {path: _private_attributes(tree) for path, tree in trees.items()}
    definers: dict[str, set[Path]] = {}
    for path, classes in defined.items():
        for names in classes.values():
            for name in names:
                definers.setdefault(name, set()).add(path)
    found = []
    for path, tree in trees.items():
        found += _reads_in(path.relative_to(root), tree, defined[path], definers, path)
    return found


def _reads_in(
    path: Path,
    tree: ast.AST,
    classes: dict[ast.ClassDef | None, set[str]],
    definers: dict[str, set[Path]],
    module: Path,
) -> list[str]:
    """The foreign private reads of the module at ``module`` (shown as ``path``;
    `foreign_private_reads`)."""
    found: list[str] = []

    def visit(node: ast.AST, own: set[str]) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                visit(child, classes[child])
                continue
            if (
                isinstance(child, ast.Attribute)
                and child.attr.startswith("_")
                and not child.attr.startswith("__")
                and not (isinstance(child.value, ast.Name) and child.value.id in ("self", "cls"))
                and child.attr not in own
                and definers.get(child.attr) != {module}
            ):
                found.append(f"{path}:{child.lineno} {ast.unparse(child)}")
            visit(child, own)

    visit(tree, set())
    return found
