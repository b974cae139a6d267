"""Runs in: CDK app (synth time).

Per-function assets: each function's asset holds the run-time modules its handler
imports, found from the import graph of the installed package (the `import` statements
of each module, at module level or in a function, but not those under
``if TYPE_CHECKING:``), so it follows the code as modules move, split or join.

A module's closure includes its parent packages (importing ``a.b.c`` runs ``a/__init__.py``
and ``a/b/__init__.py``) and whatever they import in turn.

The files are staged without their docstrings and comments (`stripped_source`): a
docstring becomes ``""`` and a comment nothing, every line kept where it was, so a
traceback from the function names the same lines as the source in the repository."""

from __future__ import annotations

import ast
import atexit
import functools
import io
import shutil
import tempfile
import tokenize
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

__all__ = [
    "closure",
    "handler_closure",
    "import_graph",
    "module_files",
    "staged_modules",
    "stripped_source",
]


def module_files(roots: Sequence[Path]) -> dict[str, Path]:
    """Every module under the package folders ``roots``, by dotted name (a package by its
    own name, from its ``__init__.py``)."""
    out = {}
    for root in roots:
        for path in sorted(root.rglob("*.py")):
            parts = list(path.relative_to(root.parent).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join(parts)] = path
    return out


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import of ``tree``, at module level or in a function, except those under
    ``if TYPE_CHECKING:`` (their ``else:`` branch counts)."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.orelse:
                yield from _imports(child)
            continue
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        yield from _imports(node)


def _targets(
    node: ast.Import | ast.ImportFrom, here: list[str], modules: Mapping[str, Path]
) -> list[str]:
    """The dotted names ``node`` imports, relative imports resolved against the package
    ``here``: ``from X import name`` names ``X.name`` when that is a module, else ``X``."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if node.level:
        base = here[: len(here) - node.level + 1]
        source = ".".join(base + ([node.module] if node.module else []))
    else:
        source = node.module or ""
    return [
        f"{source}.{alias.name}" if f"{source}.{alias.name}" in modules else source
        for alias in node.names
    ]


def import_graph(roots: Sequence[Path]) -> dict[str, set[str]]:
    """Which modules under ``roots`` each module under ``roots`` imports (`module_files`)."""
    modules = module_files(roots)
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        here = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        for node in _imports(ast.parse(path.read_text(), str(path))):
            targets = _targets(node, here, modules)
            graph[name] |= {t for t in targets if t in modules and t != name}
    return graph


def _parents(name: str) -> Iterator[str]:
    """The packages importing ``name`` runs first: ``a``, ``a.b`` for ``a.b.c``."""
    parts = name.split(".")
    for end in range(1, len(parts)):
        yield ".".join(parts[:end])


def closure(graph: Mapping[str, set[str]], start: str) -> set[str]:
    """The modules importing ``start`` runs: ``start``, what it imports, their parent
    packages, and so on."""
    if start not in graph:
        raise KeyError(f"no module {start!r} in the import graph")
    found: set[str] = set()
    todo = [start]
    while todo:
        name = todo.pop()
        if name in found:
            continue
        found.add(name)
        todo.extend(graph[name])
        todo.extend(parent for parent in _parents(name) if parent in graph)
    return found


@functools.cache
def _package_graph(package: Path) -> Mapping[str, set[str]]:
    """`import_graph` of the package folder ``package``, read once a process: every
    function an app deploys stages its asset from the same package (as `staged_modules`
    stages each set of modules once)."""
    return import_graph([package])


def handler_closure(package: Path, handler: str) -> frozenset[str]:
    """The modules of ``package`` (a package folder) that the function ``handler``
    (``"package.module.function"``) runs."""
    module = handler.rsplit(".", 1)[0]
    return frozenset(closure(_package_graph(package), module))


@functools.cache
def staged_modules(package: Path, modules: frozenset[str]) -> Path:
    """A folder holding the files of ``modules`` (dotted names under the package folder
    ``package``) and nothing else, laid out as the package is; removed when the process
    ends."""
    files = module_files([package])
    root = Path(tempfile.mkdtemp(prefix="ddb-capacity-asset-"))
    atexit.register(shutil.rmtree, root, ignore_errors=True)
    for name in sorted(modules):
        source = files[name]
        target = root / source.relative_to(package.parent)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(stripped_source(source.read_text()))
    return root


#: (first line, first column, last line, end column) of a piece of source, lines from 1.
Span = tuple[int, int, int, int]


def _docstrings(tree: ast.Module) -> Iterator[Span]:
    """Where the docstrings of ``tree`` (the module's, each class's and function's) are."""
    for node in [tree, *ast.walk(tree)]:
        if not isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        first = node.body[0] if node.body else None
        if (
            isinstance(first, ast.Expr)
            and isinstance(first.value, ast.Constant)
            and isinstance(first.value.value, str)
        ):
            yield first.lineno, first.col_offset, first.end_lineno or 0, first.end_col_offset or 0


def _comments(source: str) -> Iterator[Span]:
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            yield (*token.start, *token.end)


def stripped_source(source: str) -> str:
    """``source`` with each docstring replaced by ``""`` and each comment removed, every
    other token on the line and column it had (a removed line is left empty)."""
    lines = source.splitlines(keepends=True)
    docstrings = set(_docstrings(ast.parse(source)))
    for span in sorted(docstrings | set(_comments(source)), reverse=True):
        first, column, last, end = span
        head = lines[first - 1][:column] + ('""' if span in docstrings else "")
        tail = lines[last - 1][end:]
        if first == last:
            lines[first - 1] = (head + tail).rstrip() + "\n"
        else:
            blank = ["\n"] * (last - first - 1)
            lines[first - 1 : last] = [head.rstrip() + "\n", *blank, tail.lstrip() or "\n"]
    return "".join(lines)
