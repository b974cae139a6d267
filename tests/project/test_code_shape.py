"""The shape of the three packages (the constructs, the run-time package, the tools): no
import cycle, no long function, every module says where it runs, every package says what it
exports, and the run-time package calls AWS through its aws/ layer only."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from constructs_pkg.common import _assets as assets
from tests.support.shape import (
    PACKAGES,
    ROOT,
    RUNTIME,
    foreign_private_reads,
    long_modules,
    modules,
)

PACKAGE = RUNTIME.name
#: The longest function (``def`` line to its end): a gate, unlike the modules' advisory caps.
MAX_FUNCTION_LINES = 60
#: The module names used more than once: each package's ``__init__``, and each Lambda
#: function's entry point, its package's ``handler`` (the scaler's, the settle step's and the
#: global tables' replica schedules').
SHARED_MODULE_NAMES = {"__init__", "handler"}


def import_graph() -> dict[str, set[str]]:
    """Which of the packages' modules each of their modules imports (the graph the Lambda
    assets are built from): ``from X import name`` is an edge to ``X.name`` when that is a
    module, else to ``X``; imports under ``if TYPE_CHECKING:`` are not edges."""
    return assets.import_graph(PACKAGES)


def find_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import cycles of ``graph``: one per strongly connected component of more than
    one module, as a path through it."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return [_cycle_path(graph, set(c)) for c in components]


def _cycle_path(graph: dict[str, set[str]], component: set[str]) -> list[str]:
    """One cycle through the first module of ``component``, as module names."""
    start = min(component)
    paths = [[start]]
    seen = {start}
    while paths:
        path = paths.pop(0)
        for nxt in sorted(graph[path[-1]] & component):
            if nxt == start:
                return [*path, start]
            if nxt not in seen:
                seen.add(nxt)
                paths.append([*path, nxt])
    return sorted(component)  # pragma: no cover


def long_functions(limit: int = MAX_FUNCTION_LINES) -> list[str]:
    """``path:line name (N lines)`` of every function of the packages longer than ``limit``."""
    out = []
    for path in modules().values():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > limit:
                    where = path.relative_to(ROOT)
                    out.append(f"{where}:{node.lineno} {node.name} ({lines} lines)")
    return out


def test_no_import_cycles() -> None:
    cycles = find_cycles(import_graph())
    assert not cycles, "import cycles:\n" + "\n".join(" -> ".join(c) for c in cycles)


def test_the_import_contracts_hold() -> None:
    """pyproject.toml's import-linter contracts: the run-time package's layers (core, aws,
    the jobs, the entry points), the client hook apart from the functions' code, and no cycle at
    any depth; the tools package's layers and no cycle in it at any depth; neither package of
    lambda_src/ importing the constructs; the constructs' features each importing only those
    below it, and no cycle among their modules at any depth. TYPE_CHECKING imports included."""
    lint_imports = Path(sys.executable).with_name("lint-imports")
    done = subprocess.run(  # noqa: S603 (the venv's own lint-imports)
        [str(lint_imports), "--no-cache", "--no-logo"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "8 kept, 0 broken" in done.stdout, done.stdout


def test_the_cycle_finder_names_a_cycle() -> None:
    graph = {"p.a": {"p.b"}, "p.b": {"p.c"}, "p.c": {"p.a"}, "p.d": {"p.a"}}
    assert find_cycles(graph) == [["p.a", "p.b", "p.c", "p.a"]]
    assert find_cycles({"p.a": {"p.b"}, "p.b": set()}) == []


def test_the_graph_sees_function_level_imports_but_not_type_checking_ones() -> None:
    graph = import_graph()
    # handler imports the tick at module level; the tick never imports the handler
    assert f"{PACKAGE}.scaler.tick" in graph[f"{PACKAGE}.scaler.handler"]
    assert all(f"{PACKAGE}.scaler.handler" not in edges for edges in graph.values())


def test_no_function_over_the_limit() -> None:
    too_long = long_functions()
    assert not too_long, f"functions over {MAX_FUNCTION_LINES} lines:\n" + "\n".join(too_long)


def test_the_module_limit_tells_constructs_from_the_rest() -> None:
    # the scaler's construct and the tick's module are both between 300 and 1,000 lines
    scaler = "constructs_pkg/scaler/_scaler.py"
    tick = "lambda_src/ddb_capacity_runtime/scaler/tick.py"
    names = [line.split(" (")[0] for line in long_modules(limit=1_000, construct_limit=300)]
    assert scaler in names and tick not in names
    names = [line.split(" (")[0] for line in long_modules(limit=300, construct_limit=1_000)]
    assert tick in names and scaler not in names


def test_no_two_modules_share_a_name() -> None:
    """A module's name says which one is meant: no two modules of the packages share one,
    but the packages' ``__init__`` and the Lambda entry points' ``handler``."""
    by_name: dict[str, list[str]] = {}
    for path in modules().values():
        by_name.setdefault(path.stem, []).append(str(path.relative_to(ROOT)))
    shared = {n: p for n, p in by_name.items() if len(p) > 1 and n not in SHARED_MODULE_NAMES}
    assert shared == {}


@pytest.mark.parametrize("name", sorted(modules()))
def test_module_docstring_says_where_it_runs(name: str) -> None:
    path = modules()[name]
    docstring = ast.get_docstring(ast.parse(path.read_text())) or ""
    assert docstring.startswith("Runs in: "), f"{path}: docstring must open with 'Runs in: '"


@pytest.mark.parametrize("name", sorted(n for n, p in modules().items() if p.name == "__init__.py"))
def test_package_defines_all(name: str) -> None:
    path = modules()[name]
    tree = ast.parse(path.read_text())
    assigned = {
        t.id
        for node in tree.body
        if isinstance(node, ast.Assign | ast.AnnAssign)
        for t in (node.targets if isinstance(node, ast.Assign) else [node.target])
        if isinstance(t, ast.Name)
    }
    assert "__all__" in assigned, f"{path}: a package defines __all__"


#: The modules that call AWS: the aws/ layer.
AWS_LAYER = ("aws/",)
#: Names a boto3 client goes by in the run-time package.
CLIENT_NAMES = ("dynamodb", "aas", "autoscaling", "cloudwatch", "tagging", "lambda", "client")


def _operations() -> set[str]:
    """Every operation, as a client method, of the services the run-time package calls."""
    import botocore.session
    from botocore import xform_name

    session = botocore.session.get_session()
    services = ("dynamodb", "application-autoscaling", "cloudwatch", "resourcegroupstaggingapi")
    return {
        xform_name(name)
        for service in (*services, "lambda")
        for name in session.get_service_model(service).operation_names
    } | {"get_paginator", "get_waiter"}


def aws_calls_outside_the_layer() -> list[str]:
    """``client.operation(...)`` calls made outside :data:`AWS_LAYER`."""
    operations = _operations()
    found = []
    for path in sorted(RUNTIME.rglob("*.py")):
        where = path.relative_to(RUNTIME).as_posix()
        if where.startswith(AWS_LAYER):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            receiver = ast.unparse(node.func.value).lower()
            if node.func.attr in operations and any(n in receiver for n in CLIENT_NAMES):
                found.append(f"{where}:{node.lineno}: {ast.unparse(node.func)}")
    return found


def test_every_aws_call_goes_through_the_aws_layer() -> None:
    assert aws_calls_outside_the_layer() == []


def _metrics_made(path: Path) -> list[str]:
    """Where ``path`` makes an ``aws_cloudwatch.Metric`` itself: ``line function``."""
    tree = ast.parse(path.read_text(), str(path))
    found = []
    for function in ast.walk(tree):
        if not isinstance(function, ast.FunctionDef):
            continue
        for node in ast.walk(function):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "Metric"
            ):
                found.append(f"{path.name}:{node.lineno} {function.name}")
    return found


def test_every_construct_metric_comes_from_the_one_factory() -> None:
    """The constructs' alarms and ``metric_*`` methods take their metrics from
    ``alarms.metric`` (or aws-cdk-lib's own ``metric_*`` methods), never make one."""
    made = [m for p in sorted((ROOT / "constructs_pkg").rglob("*.py")) for m in _metrics_made(p)]
    assert [(m.split(":")[0], m.split(" ")[1]) for m in made] == [("_alarms.py", "metric")], made


def _token_questions(path: Path) -> list[str]:
    """Where ``path`` asks jsii's kernel ``Token.is_unresolved`` itself: ``file line``."""
    return [
        f"{path.name} {node.lineno}"
        for node in ast.walk(ast.parse(path.read_text(), str(path)))
        if isinstance(node, ast.Attribute) and node.attr == "is_unresolved"
    ]


def test_every_token_question_goes_through_is_token() -> None:
    """The constructs ask "is this a token?" through ``props.is_token``, which answers plain
    values without a round trip to jsii's kernel; only it asks ``Token.is_unresolved``."""
    asked = [
        q for p in sorted((ROOT / "constructs_pkg").rglob("*.py")) for q in _token_questions(p)
    ]
    assert [q.split(" ")[0] for q in asked] == ["_props.py"], asked


#: The most reads of another object's private attributes the constructs may keep, each
#: commented: a helper gets a description of what it works on, not the construct.
MAX_FOREIGN_PRIVATE_READS = 5


def test_helpers_do_not_read_other_objects_private_state() -> None:
    reads = foreign_private_reads(ROOT / "constructs_pkg")
    assert len(reads) <= MAX_FOREIGN_PRIVATE_READS, "\n".join(reads)
    uncommented = []
    for read in reads:
        where, line = read.split(" ")[0].rsplit(":", 1)
        lines = (ROOT / where).read_text().splitlines()[max(0, int(line) - 4) : int(line)]
        if not any("#" in text for text in lines):
            uncommented.append(read)
    assert uncommented == [], "a private read across objects says why:\n" + "\n".join(uncommented)


def test_the_private_read_finder_sees_a_helper_reaching_into_its_owner(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "owner.py").write_text(
        "class Owner:\n"
        "    def __init__(self):\n"
        "        self._where = 'here'\n"
        "    def same(self, other):\n"
        "        return other._where\n"
        "def friend(owner):\n"
        "    return owner._where\n"
    )
    (package / "helper.py").write_text("def helper(owner):\n    return owner._where\n")
    (package / "own.py").write_text("class Own:\n    def f(self):\n        return self._x\n")
    found = [r.split("/")[-1] for r in foreign_private_reads(package, tmp_path)]
    assert found == ["helper.py:2 owner._where"]
