"""Runs in: CDK app (synth time).

Per-function assets: each function's asset holds the run-time modules its handler
imports, found from the import graph of the installed package (the `import` statements
of each module, at module level or in a function, but not those under
``if TYPE_CHECKING:``), so it follows the code as modules move, split or join.

A module's closure includes its parent packages (importing ``a.b.c`` runs ``a/__init__.py``
and ``a/b/__init__.py``) and whatever they import in turn.

The files are staged without their docstrings (a module's, a class's, a function's or an
attribute's), comments and functions' annotations (`stripped_source`): a docstring becomes
``""`` (a class's ``"_"``), a comment and an annotation nothing, every line kept where it
was, so a traceback from the function names the same lines as the source in the
repository; each level of indentation is a tab (`tabbed`). A few modules may also be
shipped compiled (`write_bytecode`), to save their compiling on a cold start."""

from __future__ import annotations

import ast
import atexit
import functools
import hashlib
import importlib.util
import io
import marshal
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import tokenize
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = [
    "bytecode_path",
    "cached_asset",
    "closure",
    "handler_closure",
    "import_graph",
    "module_files",
    "staged_modules",
    "stripped_source",
    "write_bytecode",
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
def staged_modules(
    package: Path, modules: frozenset[str], compiled: frozenset[str] = frozenset()
) -> Path:
    """A folder holding the files of ``modules`` (dotted names under the package folder
    ``package``) and nothing else, laid out as the package is; removed when the process
    ends. Those of ``compiled`` also get their bytecode (`write_bytecode`)."""
    files = module_files([package])
    root = Path(tempfile.mkdtemp(prefix="ddb-capacity-asset-"))
    atexit.register(shutil.rmtree, root, ignore_errors=True)
    for name in sorted(modules):
        source = files[name]
        target = root / source.relative_to(package.parent)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(stripped_source(source.read_text()))
        if name in compiled:
            write_bytecode(root, target)
    return root


CACHE_FORMAT = "7"
"""Bumped when what a staged folder holds changes for the same sources."""


def asset_key(package: Path, handler: str, compiled: bool) -> str:
    """What a staged asset depends on, as one hex digest: every module of ``package`` (its
    path and bytes), the ``handler``, whether modules are compiled, this Python's version
    and `CACHE_FORMAT`."""
    digest = hashlib.sha256()
    digest.update(f"{CACHE_FORMAT}|{handler}|{compiled}|{sys.version}|".encode())
    for path in sorted(package.rglob("*.py")):
        digest.update(str(path.relative_to(package)).encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()


def _cache_root() -> Path | None:
    """This user's asset cache, ``<temp>/ddb-capacity-assets-<uid>``, made private; None
    where it cannot be trusted (owned by another user, or open to others) or made."""
    uid = os.getuid() if hasattr(os, "getuid") else 0
    root = Path(tempfile.gettempdir()) / f"ddb-capacity-assets-{uid}"
    try:
        root.mkdir(mode=0o700, exist_ok=True)
        info = root.lstat()
    except OSError:
        return None
    private = not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != uid or not private:
        return None
    return root


def cached_asset(key: str, stage: Callable[[], Path]) -> Path:
    """The staged folder of ``key``: kept between processes in this user's cache, staged
    once (by ``stage``, into a folder of its own) for each content; ``stage``'s own folder
    where there is no cache to trust. A folder is moved into the cache whole (a rename),
    so a process never sees half of one."""
    root = _cache_root()
    if root is None:
        return stage()
    kept = root / key
    if kept.is_dir():
        return kept
    staged = stage()
    partial = root / f"{key}.{os.getpid()}.partial"
    try:
        shutil.copytree(staged, partial)
        partial.rename(kept)
    except OSError:  # another process kept it first, or the disk refused: ours serves
        shutil.rmtree(partial, ignore_errors=True)
        return kept if kept.is_dir() else staged
    _prune(root, keep=kept)
    return kept


MAX_KEPT = 48
"""The most staged folders the cache keeps (a few hundred KB each): the oldest go first."""


def _prune(root: Path, keep: Path) -> None:
    """Remove the oldest folders of ``root`` past `MAX_KEPT` (never ``keep``)."""
    try:
        folders = sorted(
            (p for p in root.iterdir() if p.is_dir() and p != keep),
            key=lambda p: p.stat().st_mtime,
        )
    except OSError:
        return
    for old in folders[: max(0, len(folders) + 1 - MAX_KEPT)]:
        shutil.rmtree(old, ignore_errors=True)


def bytecode_path(source: Path) -> Path:
    """Where the import system of a function looks for ``source``'s bytecode: beside it, in
    ``__pycache__/<name>.cpython-311.pyc`` on Python 3.11, whatever this process's own
    ``PYTHONPYCACHEPREFIX`` says (it moves this process's cache, not the function's)."""
    return source.parent / "__pycache__" / f"{source.stem}.{sys.implementation.cache_tag}.pyc"


def write_bytecode(root: Path, source: Path) -> Path:
    """The bytecode of ``source`` (a file under ``root``) for this Python, written where
    the import system looks for it (``__pycache__/<name>.cpython-311.pyc`` on Python
    3.11), so that importing the module does not compile it. Checked by hash: the import
    system uses it while the source's hash matches, else compiles the source (not by
    time: a file's time changes as the asset is copied, zipped and unzipped). The file's
    name in the bytecode is its path under ``root``, so the bytes depend on the source
    alone: the code is marshalled in format 0, which records no string as interned and
    no object twice (the current format does both as this process's history left them:
    a string another module's import interned, an object referenced elsewhere). Compiled
    without column positions where it can be (`marshalled`): a traceback names each line,
    without marking the expression on it. Only a Python of the same version reads it
    (another looks for its own cache tag)."""
    data = source.read_bytes()
    checked_hash = (0b11).to_bytes(4, "little")  # PEP 552: hash-based, checked
    target = bytecode_path(source)
    target.parent.mkdir(parents=True, exist_ok=True)
    header = importlib.util.MAGIC_NUMBER + checked_hash + importlib.util.source_hash(data)
    target.write_bytes(header + marshalled(data, str(source.relative_to(root))))
    return target


COMPILE = (
    "import marshal, sys\n"
    "code = compile(sys.stdin.buffer.read(), sys.argv[1], 'exec', dont_inherit=True, optimize=0)\n"
    "sys.stdout.buffer.write(marshal.dumps(code, 0))\n"
)
"""`marshalled`'s script: a module's code from standard input, marshalled to standard output."""


def marshalled(data: bytes, name: str) -> bytes:
    """The code of the module source ``data``, as the file ``name``, marshalled in format 0,
    compiled by this Python in a process of its own with ``-X no_debug_ranges``: without
    the column positions of each instruction (Python 3.11's carets under a traceback's
    line), about a quarter of its bytecode once zipped; the line numbers stay. (A process
    sets that mode when it starts, never after.) Where that process cannot be had for good
    (no ``sys.executable``, or an interpreter that refuses the option), compiled here, with
    its column positions: the bytecode is as valid, and the same for the same source
    (format 0, never optimized), only larger; warned once, with the reason
    (`_compiled_here`). Any other failure (the process killed, out of memory, a fork
    refused) fails the synth with its reason: compiling here on a passing failure would
    change the asset, and so the function's code, from one synth to the next."""
    if not sys.executable:
        reason = "sys.executable is empty: this Python cannot name its interpreter"
        return _compiled_here(data, name, reason)
    command = [sys.executable, "-I", "-X", "no_debug_ranges", "-c", COMPILE, name]
    try:
        done = subprocess.run(command, input=data, capture_output=True, check=True)  # noqa: S603
    except subprocess.CalledProcessError as exc:
        said = exc.stderr.decode(errors="replace").strip() if exc.stderr else ""
        reason = f"exit status {exc.returncode}: {said or 'no output'}"
        if "no_debug_ranges" in said:  # the interpreter refuses the option: for good
            return _compiled_here(data, name, reason)
        raise RuntimeError(
            f"compiling {name} in {sys.executable} failed ({reason[-1000:]})"
        ) from exc
    except OSError as exc:
        raise RuntimeError(f"compiling {name}: {sys.executable} could not run ({exc})") from exc
    return done.stdout


COMPILED_HERE: list[str] = []
"""The reason `marshalled` first compiled in this process (a warning once, not per module)."""


def _compiled_here(data: bytes, name: str, reason: str) -> bytes:
    """`marshalled` in this process, with column positions; the first time, a warning naming
    ``reason`` (why the compiling process failed)."""
    if not COMPILED_HERE:
        COMPILED_HERE.append(reason)
        warnings.warn(
            "the functions' bytecode is compiled with its column positions (larger: no "
            f"-X no_debug_ranges): {sys.executable or '(no interpreter)'} could not compile it "
            f"({reason[-1000:]})",
            stacklevel=3,
        )
    return marshal.dumps(compile(data, name, "exec", dont_inherit=True, optimize=0), 0)


Span = tuple[int, int, int, int]
"""(first line, first column, last line, end column) of a piece of source, lines from 1."""


CLASS_DOCSTRING = '"_"'
"""What a class's docstring becomes. Not empty: to a class whose docstring is empty,
``@dataclass`` gives one made from its signature (`inspect.signature`, some 0.2 ms a class
on a cold start)."""


def _docstrings(tree: ast.Module) -> Iterator[tuple[Span, str]]:
    """Where the docstrings of ``tree`` are, each with what it becomes: every statement
    that is a string alone, which runs as nothing. The module's, each function's and each
    class's becomes ``""`` (a class's `CLASS_DOCSTRING`); an attribute's, below its
    assignment, nothing at all."""
    classes = {id(node.body[0]) for node in ast.walk(tree) if isinstance(node, ast.ClassDef)}
    attributes = {
        id(statement)
        for node in ast.walk(tree)
        for block in (getattr(node, "body", None), getattr(node, "orelse", None))
        if isinstance(block, list)
        for before, statement in zip(block, block[1:], strict=False)
        if isinstance(before, ast.Assign | ast.AnnAssign)
    }
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Expr)
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
        ):
            span = node.lineno, node.col_offset, node.end_lineno or 0, node.end_col_offset or 0
            kept = "" if id(node) in attributes else '""'
            yield span, CLASS_DOCSTRING if id(node) in classes else kept


def _type_checking(tree: ast.Module) -> Iterator[tuple[Span, str]]:
    """Where the bodies of ``tree``'s ``if TYPE_CHECKING:`` blocks are (imports for the
    type checker alone, never run), each becoming ``pass``."""
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            first, last = node.body[0], node.body[-1]
            span = first.lineno, first.col_offset, last.end_lineno or 0, last.end_col_offset or 0
            yield span, "pass"


def _column(line: str, offset: int) -> int:
    """The column in ``line`` of the UTF-8 byte ``offset`` (as `ast` counts columns)."""
    return len(line.encode()[:offset].decode(errors="ignore"))


def _annotations(tree: ast.Module, lines: Sequence[str]) -> Iterator[Span]:
    """Where the annotations of the parameters and returns of ``tree``'s functions are
    (``: int`` of ``x: int``, `` -> int`` of ``) -> int``), those on one line. Under
    ``from __future__ import annotations`` they are strings nothing at run time reads, but
    compiling parses each and turns it back into a string."""
    for node in ast.walk(tree):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        a = node.args
        for arg in [*a.posonlyargs, *a.args, a.vararg, *a.kwonlyargs, a.kwarg]:
            note = arg.annotation if arg is not None else None
            if arg is None or note is None or arg.lineno != note.end_lineno:
                continue
            line = lines[arg.lineno - 1]
            start = _column(line, arg.col_offset) + len(arg.arg)
            yield arg.lineno, start, arg.lineno, _column(line, note.end_col_offset or 0)
        returns = node.returns
        if returns is None or returns.lineno != returns.end_lineno:
            continue
        line = lines[returns.lineno - 1]
        before = line[: _column(line, returns.col_offset)].rstrip()
        if before.endswith("->") and before[:-2].rstrip().endswith(")"):
            start = len(before[:-2].rstrip())
            yield returns.lineno, start, returns.lineno, _column(line, returns.end_col_offset or 0)
        yield from _local_annotations(node.body, lines)


def _local_annotations(body: Sequence[Any], lines: Sequence[str]) -> Iterator[Span]:
    """Where the annotations of a function's local variables given a value are (``: int``
    of ``x: int = 1``), those on the variable's line: compiling parses them, nothing
    evaluates or keeps them. Not in a class's body (a dataclass's fields are its
    annotations), nor of a variable without a value (the annotation makes it local); a
    function within is walked on its own (`_annotations`)."""
    for statement in body:
        if isinstance(statement, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        if isinstance(statement, ast.AnnAssign) and statement.value is not None:
            target, note = statement.target, statement.annotation
            if isinstance(target, ast.Name) and target.lineno == note.end_lineno:
                line = lines[target.lineno - 1]
                start = _column(line, target.end_col_offset or 0)
                yield target.lineno, start, target.lineno, _column(line, note.end_col_offset or 0)
        for block in ("body", "orelse", "finalbody", "handlers", "cases"):
            yield from _local_annotations(getattr(statement, block, None) or [], lines)


def _comments(source: str) -> Iterator[Span]:
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            yield (*token.start, *token.end)


def _in_strings(source: str) -> set[int]:
    """The lines of ``source`` (from 1) that begin inside a string spanning lines (an
    f-string too, which Python 3.12 reads as several tokens): their leading whitespace is
    the string's."""
    inside: set[int] = set()
    starts: list[int] = []
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        kind = tokenize.tok_name[token.type]
        if kind == "FSTRING_START":
            starts.append(token.start[0])
            continue
        if kind == "FSTRING_END":
            first = starts.pop()
        elif token.type == tokenize.STRING:
            first = token.start[0]
        else:
            continue
        inside.update(range(first + 1, token.end[0] + 1))
    return inside


INDENT = "    "
"""One level of indentation in the sources (as ``ruff format`` writes them)."""


def tabbed(source: str) -> str:
    """``source`` with every four spaces that begin a line a tab (some 1.7 KB less of the
    scaler's asset zipped, of 100 KB): Python reads a block
    indented by tabs alone as it reads one indented by fours of spaces, and a traceback
    shows a line without its indentation. A line inside a string spanning lines keeps its
    own; a source with a statement indented otherwise than by fours of spaces is returned
    as it is (tabs beside its spaces could make its blocks ambiguous)."""
    tokens = tokenize.generate_tokens(io.StringIO(source).readline)
    levels = {t.string for t in tokens if t.type == tokenize.INDENT}
    if any(level != INDENT * (len(level) // 4) for level in levels):
        return source
    inside = _in_strings(source)
    lines = source.splitlines(keepends=True)
    for number, line in enumerate(lines, 1):
        text = line.lstrip(" ")
        spaces = len(line) - len(text)
        if spaces >= len(INDENT) and number not in inside:
            lines[number - 1] = "\t" * (spaces // 4) + " " * (spaces % 4) + text
    return "".join(lines)


def _within(span: Span, block: Span) -> bool:
    """Whether ``span`` lies within ``block``."""
    return block[:2] <= span[:2] and span[2:] <= block[2:]


def stripped_source(source: str) -> str:
    """``source`` with each docstring replaced by ``""`` (a class's by `CLASS_DOCSTRING`, an
    attribute's by nothing), each comment removed, each function's annotations on one line
    (`_annotations`) and the body of each ``if TYPE_CHECKING:`` (`_type_checking`) a
    ``pass``, every statement on the line it had (a removed line is left empty), indented
    by tabs (`tabbed`)."""
    lines = source.splitlines(keepends=True)
    tree = ast.parse(source)
    unread = dict(_type_checking(tree))
    replaced = dict(_docstrings(tree)) | unread
    spans = replaced.keys() | set(_comments(source)) | set(_annotations(tree, lines))
    for span in sorted(spans, reverse=True):
        if span not in unread and any(_within(span, block) for block in unread):
            continue
        first, column, last, end = span
        head = lines[first - 1][:column] + replaced.get(span, "")
        tail = lines[last - 1][end:]
        if first == last:
            lines[first - 1] = (head + tail).rstrip() + "\n"
        else:
            blank = ["\n"] * (last - first - 1)
            lines[first - 1 : last] = [head.rstrip() + "\n", *blank, tail.lstrip() or "\n"]
    return tabbed("".join(lines))
