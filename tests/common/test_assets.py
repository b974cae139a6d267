"""Each function's Lambda asset: the run-time modules its handler imports and nothing else,
found from the package's import graph, staged without docstrings or comments (every line
where it was); small, and complete: each imports its handler in a fresh interpreter that
has only the asset, the standard library and boto3 (what Lambda's runtime gives it)."""

from __future__ import annotations

import ast
import json
import marshal
import shutil
import subprocess
import sys
import types
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import boto3
import pytest
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_lambda as lambda_

import ddb_capacity_runtime
from constructs_pkg import (
    Capacity,
    CapacityRequests,
    FastPath,
    PrewarmMethod,
    ProvisionedTable,
    ThrottleAwareScaler,
)
from constructs_pkg.common import _assets as assets_module
from constructs_pkg.common._assets import (
    bytecode_path,
    closure,
    handler_closure,
    import_graph,
    module_files,
    stripped_source,
    tabbed,
    write_bytecode,
)
from constructs_pkg.common._runtime import (
    COMPILED_MODULES,
    FUNCTION_PYTHON,
    StagedCode,
    bound_synthesizer,
    compiled_modules,
    staged_asset,
)
from tests.support.assets import SCALER, zipped_size

PACKAGE = Path(ddb_capacity_runtime.__file__).resolve().parent
#: The scaler asset's largest size, zipped as the CDK zips it. Not to be raised: the budget
#: protects the scaler's cold start (``benchmarks/handler_import.py``), and a module the
#: tick needs not (another function's code, say) goes rather than the budget rising.
SCALER_ZIPPED_LIMIT = 100_000


@pytest.fixture(scope="module")
def assets(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Every run-time function the constructs deploy, synthesized into one stack: its
    handler and its asset's folder in the cloud assembly."""
    outdir = tmp_path_factory.mktemp("assets")
    app = cdk.App(outdir=str(outdir))
    stack = cdk.Stack(app, "Assets")
    table = ProvisionedTable(
        stack,
        "Orders",
        partition_key=dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING),
        read=Capacity(min_capacity=5, max_capacity=100, high_water_mark=50),
        write=Capacity(min_capacity=5, max_capacity=100, high_water_mark=50),
        prewarm=PrewarmMethod.PROVISION_THEN_SETTLE,
        stream=dynamodb.StreamViewType.NEW_IMAGE,
    )
    scaler = ThrottleAwareScaler(stack, "Scaler", tables=[table], sharded=True)
    requests = CapacityRequests(stack, "Requests", tables=[table], fast_path=FastPath(stream=True))
    requests.connect(scaler)
    app.synth()
    template = json.loads((outdir / "Assets.template.json").read_text())
    found = {}
    for resource in template["Resources"].values():
        properties = resource["Properties"]
        if resource["Type"] == "AWS::Lambda::Function" and "S3Key" in properties["Code"]:
            key = properties["Code"]["S3Key"][: -len(".zip")]
            found[properties["Handler"]] = outdir / f"asset.{key}"
    return {h: p for h, p in found.items() if h.startswith(PACKAGE.name + ".")}


def settle_handlers(assets: dict[str, Path]) -> list[str]:
    return [h for h in assets if h.startswith("ddb_capacity_runtime.settle.")]


def test_every_run_time_function_is_synthesized(assets: dict[str, Path]) -> None:
    assert set(assets) - set(settle_handlers(assets)) == {
        SCALER,
        "ddb_capacity_runtime.scaler.handler.batch_handler",
        "ddb_capacity_runtime.requests.broker.broker_handler",
        "ddb_capacity_runtime.fast_path.signals_function.signals_handler",
        "ddb_capacity_runtime.fast_path.stream_reader.stream_handler",
    }
    assert settle_handlers(assets)


def test_the_scaler_asset_is_small(assets: dict[str, Path]) -> None:
    size = zipped_size(assets[SCALER])
    compiled = sum(p.stat().st_size for p in assets[SCALER].rglob("*.pyc"))
    assert size <= SCALER_ZIPPED_LIMIT, (
        f"the scaler's asset is {size:,} bytes zipped, with {compiled:,} bytes of bytecode "
        "(runtime.COMPILED_MODULES) unzipped"
    )


def test_each_asset_holds_its_handlers_modules_and_no_other(assets: dict[str, Path]) -> None:
    by_name = module_files([PACKAGE])
    for handler, folder in assets.items():
        files = {str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file()}
        closure = handler_closure(PACKAGE, handler)
        expected = {str(by_name[name].relative_to(PACKAGE.parent)) for name in closure}
        # the few modules shipped compiled too (the tests run on the functions' Python)
        expected |= {
            str(bytecode_path(by_name[name]).relative_to(PACKAGE.parent))
            for name in closure & COMPILED_MODULES
        }
        assert files == expected, handler
    # another function's code stays out: the settle step carries no scaler, no broker
    for handler in settle_handlers(assets):
        settle = {p.parent.name for p in assets[handler].rglob("*.py")}
        assert "scaler" not in settle and "requests" not in settle
    scaler = {p.parent.name for p in assets[SCALER].rglob("*.py")}
    assert "settle" not in scaler and "requests" not in scaler
    # the build-time schedule logic (and its cronsim) is in no function's asset
    assert (assets[SCALER] / PACKAGE.name / "scaler").is_dir()
    for handler, folder in assets.items():
        assert not (folder / PACKAGE.name / "schedule").exists(), handler


#: Run in a fresh interpreter with no site-packages (``-I -S``), so neither the repository
#: nor an editable install can supply a module the asset misses: imports the handler, then
#: every module of the asset, and prints where each run-time module came from.
IMPORT_SCRIPT = """
import importlib, json, sys
asset, boto_site, handler = sys.argv[1:]
sys.path[:0] = [asset, boto_site]
module, function = handler.rsplit(".", 1)
assert callable(getattr(importlib.import_module(module), function))
for path in sorted(__import__("pathlib").Path(asset).rglob("*.py")):
    parts = path.relative_to(asset).with_suffix("").parts
    importlib.import_module(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
print(json.dumps({
    name: getattr(m, "__file__", None)
    for name, m in sys.modules.items() if name.split(".")[0] == "ddb_capacity_runtime"
}))
"""


def test_each_asset_imports_its_handler_with_only_the_asset(assets: dict[str, Path]) -> None:
    boto_site = str(Path(boto3.__file__).resolve().parents[1])
    for handler, folder in assets.items():
        done = subprocess.run(
            [
                sys.executable,
                "-I",
                "-S",
                "-B",
                "-c",
                IMPORT_SCRIPT,
                str(folder),
                boto_site,
                handler,
            ],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, f"{handler}:\n{done.stderr[-3000:]}"
        loaded = json.loads(done.stdout)
        assert loaded and all(str(f).startswith(str(folder)) for f in loaded.values()), handler


#: Imports ``argv[2]`` from the asset ``argv[1]`` in a fresh interpreter (run with ``-v``,
#: which reports each module read from bytecode), and prints the module's ``MARK``.
IMPORT_ONE = """
import importlib, sys
sys.path[:0] = [sys.argv[1], sys.argv[3]]
print(getattr(importlib.import_module(sys.argv[2]), "MARK", None))
"""


def import_verbosely(folder: Path, module: str) -> subprocess.CompletedProcess[str]:
    boto_site = str(Path(boto3.__file__).resolve().parents[1])
    return subprocess.run(
        [sys.executable, "-I", "-S", "-B", "-v", "-c", IMPORT_ONE, str(folder), module, boto_site],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )


def test_the_scaler_asset_ships_its_tick_compiled(assets: dict[str, Path], tmp_path: Path) -> None:
    # GIVEN the scaler's asset, synthesized by the functions' Python (as the tests run)
    assert sys.version_info[:2] == FUNCTION_PYTHON
    folder = assets[SCALER]
    tick = "ddb_capacity_runtime.scaler.tick"
    source = folder / "ddb_capacity_runtime" / "scaler" / "tick.py"
    cached = bytecode_path(source)
    assert tick in COMPILED_MODULES and cached.is_file()
    # WHEN a fresh interpreter imports the tick from it, writing no bytecode (as on Lambda)
    done = import_verbosely(folder, tick)
    # THEN it reads the tick's bytecode instead of compiling its source
    assert f"code object from '{cached}'" in done.stderr
    # and the bytecode depends on the source alone: made again elsewhere, the same bytes
    copy = tmp_path / "asset"
    shutil.copytree(folder, copy, ignore=shutil.ignore_patterns("__pycache__"))
    again = write_bytecode(copy, copy / source.relative_to(folder))
    assert again.read_bytes() == cached.read_bytes()


def test_shipped_bytecode_keeps_the_lines_and_leaves_out_the_columns(
    assets: dict[str, Path],
) -> None:
    # GIVEN the scaler's tick as shipped compiled
    source = assets[SCALER] / "ddb_capacity_runtime" / "scaler" / "tick.py"
    code = marshal.loads(bytecode_path(source).read_bytes()[16:])  # past the PEP 552 header
    # WHEN its instructions' positions are read, in every function
    positions = []
    found = [code]
    while found:
        here = found.pop()
        positions += list(here.co_positions())
        found += [c for c in here.co_consts if isinstance(c, types.CodeType)]
    # THEN each names its line, none its columns (carets a traceback does without)
    assert any(line is not None for line, *_ in positions)
    assert all(column is None and end is None for *_, column, end in positions)


WRITE_AFTER = """
import sys
from pathlib import Path
from constructs_pkg.common._assets import write_bytecode
{before}
root = Path(sys.argv[1])
print(write_bytecode(root, root / sys.argv[2]))
"""


def test_shipped_bytecode_is_the_same_whatever_the_process_interned_before(
    assets: dict[str, Path], tmp_path: Path
) -> None:
    # GIVEN the scaler's tick, as staged in its asset, copied twice
    folder = assets[SCALER]
    tick = Path("ddb_capacity_runtime") / "scaler" / "tick.py"
    copies = [tmp_path / "a", tmp_path / "b"]
    for copy in copies:
        shutil.copytree(folder, copy, ignore=shutil.ignore_patterns("__pycache__"))
    # WHEN it is compiled in a fresh interpreter, and in one that interned every one-character
    # string first (as importing other modules' bytecode may: a string's interned mark is
    # process-wide)
    interned = "[sys.intern(chr(c)) for c in range(256)]"
    written = []
    for copy, before in zip(copies, ("", interned), strict=True):
        done = subprocess.run(  # noqa: S603 (this interpreter, fixed code)
            [sys.executable, "-c", WRITE_AFTER.format(before=before), str(copy), str(tick)],
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        )
        written.append(Path(done.stdout.strip()).read_bytes())
    # THEN the bytes are the same: the asset's hash never moves with the synthesizing process
    assert written[0] == written[1]


def test_shipped_bytecode_gives_way_to_a_changed_source(tmp_path: Path) -> None:
    # GIVEN a module compiled into its __pycache__, then its source changed (as when a
    # function's code is edited in place)
    source = tmp_path / "pkg" / "mod.py"
    source.parent.mkdir()
    (source.parent / "__init__.py").write_text("")
    source.write_text("MARK = 'compiled'\n")
    cached = write_bytecode(tmp_path, source)
    assert cached == bytecode_path(source)
    source.write_text("MARK = 'edited'\n")
    # WHEN a fresh interpreter imports it
    done = import_verbosely(tmp_path, "pkg.mod")
    # THEN it runs the source, not the stale bytecode
    assert done.stdout.strip() == "edited"
    assert f"code object from '{cached}'" not in done.stderr


def test_only_the_functions_python_ships_bytecode() -> None:
    # another Python's bytecode would be of no use to the functions: source alone
    assert compiled_modules(FUNCTION_PYTHON) == COMPILED_MODULES
    major, minor = FUNCTION_PYTHON
    assert compiled_modules((major, minor + 1)) == frozenset()
    assert compiled_modules((major, minor - 1)) == frozenset()


def test_the_scalers_handler_imports_no_request_code() -> None:
    """The scaler ends expired holds (`aws.hold_table`, imported when a tick meets one) but
    never makes a request nor releases a hold: its handler imports no module of
    ``requests``. That package, imported,
    gives `request_capacity` and `CapacityHold` on first use, and ``ending`` imports the
    broker's client when it releases one."""
    # GIVEN a fresh interpreter
    script = (
        "import sys, json\n"
        "import ddb_capacity_runtime.scaler.handler\n"
        "scaler = sorted(sys.modules)\n"
        "from ddb_capacity_runtime import requests\n"
        "before = sorted(sys.modules)\n"
        "requests.request_capacity, requests.CapacityHold\n"
        "try:\n"
        "    requests.no_such_name\n"
        "except AttributeError as exc:\n"
        "    error = str(exc)\n"
        "print(json.dumps([scaler, before, sorted(sys.modules), error]))\n"
    )
    # WHEN it imports the scaler's handler, then the requests package, then asks it for a
    # request's names
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True
    )
    scaler, before, after, error = json.loads(done.stdout)
    # THEN the handler's import left the code that ends holds and every request module out
    assert f"{PACKAGE.name}.aws.hold_table" not in scaler
    assert not [name for name in scaler if name.startswith(f"{PACKAGE.name}.requests")]
    # AND the package's import left the request's modules out, and asking brings them
    request = {f"{PACKAGE.name}.requests.{name}" for name in ("request", "validate", "client")} | {
        f"{PACKAGE.name}.aws.invoke"
    }
    assert f"{PACKAGE.name}.requests.ending" in before
    assert not request & set(before) and request <= set(after)
    assert error == "module 'ddb_capacity_runtime.requests' has no attribute 'no_such_name'"


#: Imports the scaler's handler from the asset folder argv[1], printing the classes whose
#: signature was taken on the way.
SIGNATURES = """
import inspect, sys
sys.path.insert(0, sys.argv[1])
taken, real = [], inspect.signature
inspect.signature = lambda o, *a, **k: taken.append(o.__qualname__) or real(o, *a, **k)
import ddb_capacity_runtime.scaler.handler
print(taken)
"""


def test_the_scalers_cold_import_builds_no_docstring_from_a_signature() -> None:
    """`@dataclass` builds a docstring from the signature of a class that has none (some
    0.2 ms a class on a cold start): every class the scaler's handler imports has one,
    kept in the asset as `CLASS_DOCSTRING`."""
    # GIVEN the scaler's asset, as staged
    folder = staged_asset(SCALER, PACKAGE)
    # WHEN a fresh interpreter imports its handler from it
    done = subprocess.run(  # noqa: S603 (this Python, on the script above)
        [sys.executable, "-I", "-B", "-c", SIGNATURES, str(folder)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    # THEN no class's signature was taken
    assert done.stdout.strip() == "[]"


def test_the_handler_import_benchmark_runs_in_its_quick_mode(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from benchmarks import handler_import

    # GIVEN the benchmark, measuring the scaler's handler against a baseline (here the
    # same package, staged the same way)
    handler_import.main(["--quick", "--baseline", str(PACKAGE)])
    # THEN it prints each measure of both, the SDK's import alone among them, their
    # difference, and each one's verdict on the goal (the times themselves depend on the
    # machine)
    out = capsys.readouterr().out
    assert out.startswith(f"{SCALER} (1 runs, ms: median (min-max))")
    lines = out.splitlines()
    for measure in ("sdk", "handler", "+ later", "sdk + handler"):
        for clock in ("wall", "cpu"):
            (line,) = [x for x in lines if x.startswith(f"  {measure} {clock} ")]
            assert "current" in line and "baseline" in line and "difference " in line
    assert out.count("difference ") == len(handler_import.MEASURES) == 8
    goal = "  goal: sdk + handler wall, median, at most 150 ms: current "
    assert lines[-1].startswith(goal) and "; baseline " in lines[-1]
    # AND the SDK it times is the one each handler's clients come from: one botocore
    # session for the scaler's (which never imports boto3), boto3 for the others
    assert handler_import.staged(PACKAGE, SCALER, "current").sdk == "botocore.session"
    broker = "ddb_capacity_runtime.requests.broker.broker_handler"
    assert handler_import.staged(PACKAGE, broker, "current").sdk == "boto3"
    with pytest.raises(SystemExit):
        handler_import.main(["--quick", "--baseline", str(PACKAGE / "core" / "policy.py")])
    assert "--baseline: got" in capsys.readouterr().err


# ------------------------------------------------------------------ the import graph


def write_package(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root / "pkg"


def test_the_closure_follows_function_level_imports_and_parent_packages(tmp_path: Path) -> None:
    # GIVEN a package whose handler imports a module inside a function, whose
    # subpackage's __init__ imports a sibling, and which names a module only for typing
    package = write_package(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/handler.py": (
                "from typing import TYPE_CHECKING\n"
                "from .sub.leaf import X\n"
                "if TYPE_CHECKING:\n"
                "    from .typing_only import T\n"
                "def handle():\n"
                "    from . import lazy\n"
            ),
            "pkg/sub/__init__.py": "from . import sibling\n",
            "pkg/sub/leaf.py": "X = 1\n",
            "pkg/sub/sibling.py": "import pkg.core.deep\n",
            "pkg/core/__init__.py": "",
            "pkg/core/deep.py": "",
            "pkg/lazy.py": "",
            "pkg/typing_only.py": "",
            "pkg/unused.py": "",
        },
    )
    # THEN the handler's closure is what importing and running it needs, and no more
    assert handler_closure(package, "pkg.handler.handle") == {
        "pkg",
        "pkg.handler",
        "pkg.sub",
        "pkg.sub.leaf",
        "pkg.sub.sibling",
        "pkg.core",
        "pkg.core.deep",
        "pkg.lazy",
    }
    with pytest.raises(KeyError, match="no module 'pkg.gone' in the import graph"):
        closure(import_graph([package]), "pkg.gone")


def test_the_packages_import_graph_is_read_once_a_process(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every function of an app stages its asset from the one run-time package: its import
    graph is read once, not once a function (synthesizing an app with many functions spent
    most of its time parsing the same modules again)."""
    first = handler_closure(PACKAGE, SCALER)

    def read_again(roots: Any) -> Any:
        raise AssertionError(f"the import graph of {roots} read again")

    monkeypatch.setattr(assets_module, "import_graph", read_again)
    assert handler_closure(PACKAGE, SCALER) == first
    batch = handler_closure(PACKAGE, "ddb_capacity_runtime.scaler.handler.batch_handler")
    assert "ddb_capacity_runtime.scaler.handler" in batch


# ------------------------------------------------------------------ stripped sources


def is_string(statement: ast.stmt) -> bool:
    """Whether ``statement`` is a string alone (a docstring)."""
    value = statement.value if isinstance(statement, ast.Expr) else None
    return isinstance(value, ast.Constant) and isinstance(value.value, str)


def without_docstrings(tree: ast.Module) -> str:
    """``tree`` dumped with its docstrings (every statement that is a string alone) emptied,
    an attribute's (below an assignment) left out, the body of each ``if TYPE_CHECKING:`` a
    ``pass``, without its functions' annotations, and with the line each node starts on (a
    docstring's end moves, and with it the end of a body it closes; an annotation's
    removal moves what follows it on its line)."""
    for node in ast.walk(tree):
        for name in ("body", "orelse"):
            block = getattr(node, name, None)
            if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                kept = [block[0]] + [
                    s
                    for before, s in zip(block, block[1:], strict=False)
                    if not (is_string(s) and isinstance(before, ast.Assign | ast.AnnAssign))
                ]
                setattr(node, name, kept)
        if isinstance(node, ast.If) and ast.unparse(node.test).endswith("TYPE_CHECKING"):
            node.body = [ast.copy_location(ast.Pass(), node.body[0])]
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            unannotated(node)
    for node in ast.walk(tree):
        if isinstance(node, ast.Expr) and is_string(node):
            node.value = ast.Constant("")
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            node.returns = None
        if isinstance(node, ast.arg):
            node.annotation = None
    for node in ast.walk(tree):
        if hasattr(node, "end_lineno"):
            for position in ("end_lineno", "end_col_offset", "col_offset"):
                setattr(node, position, None)
    return ast.dump(tree, include_attributes=True)


def unannotated(node: ast.AST) -> None:
    """Each ``x: T = v`` of the function ``node`` whose annotation is on the variable's line
    (not in a class, nor in a function within) made ``x = v``."""
    for name, block in ast.iter_fields(node):
        if not isinstance(block, list) or name == "decorator_list":
            continue
        for i, s in enumerate(block):
            if isinstance(s, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            if isinstance(s, ast.AnnAssign) and s.value is not None and s.simple:
                if s.target.lineno == s.annotation.end_lineno:
                    block[i] = ast.copy_location(ast.Assign([s.target], s.value), s)
            if isinstance(s, ast.stmt | ast.excepthandler | ast.match_case):
                unannotated(s)


@pytest.mark.parametrize("path", sorted(PACKAGE.rglob("*.py")), ids=lambda p: p.stem)
def test_a_stripped_module_keeps_every_statement_on_its_line(path: Path) -> None:
    source = path.read_text()
    stripped = stripped_source(source)
    assert stripped.count("\n") == source.count("\n")
    assert without_docstrings(ast.parse(stripped)) == without_docstrings(ast.parse(source))
    assert not any(line.lstrip().startswith("#") for line in stripped.splitlines())


def test_stripping_drops_attribute_docstrings() -> None:
    """The string below an assignment documents the attribute (the reference shows it); the
    asset needs it no more than a function's docstring, and nothing reads it: it goes."""
    source = (
        "LIMIT = 3\n"
        '"""How many, at most,\n'
        'in a minute."""\n'
        "class C:\n"
        "    size: int = 1\n"
        '    """Its size."""\n'
        "    def __init__(self) -> None:\n"
        "        self.name = 'n'\n"
        '        """Its name."""\n'
    )
    assert stripped_source(source) == (
        "LIMIT = 3\n"
        "\n"
        "\n"
        "class C:\n"
        "\tsize: int = 1\n"
        "\n"
        "\tdef __init__(self):\n"  # (a function's annotations on one line go too)
        "\t\tself.name = 'n'\n"
        "\n"
    )


def test_stripping_leaves_a_pass_for_what_only_the_type_checker_reads() -> None:
    # GIVEN imports under ``if TYPE_CHECKING:`` (with a comment, and an else branch)
    source = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from decimal import Decimal  # the type\n"
        "    from fractions import (\n"
        "        Fraction,\n"
        "    )\n"
        "else:\n"
        "    Decimal = int\n"
        "X: Decimal = 1\n"
    )
    # WHEN it is stripped
    stripped = stripped_source(source)
    # THEN the block's body is a pass, every other line where it was, and it runs as it did
    assert stripped.splitlines() == [
        "from typing import TYPE_CHECKING",
        "if TYPE_CHECKING:",
        "\tpass",
        "",
        "",
        "",
        "else:",
        "\tDecimal = int",
        "X: Decimal = 1",
    ]
    namespace: dict[str, Any] = {}
    exec(compile(stripped, "stripped", "exec"), namespace)  # noqa: S102 (the source above)
    assert namespace["X"] == 1 and namespace["Decimal"] is int


def test_stripping_keeps_strings_that_are_not_docstrings() -> None:
    source = (
        '"""Module doc."""\n'
        "from __future__ import annotations\n"
        "X = '# not a comment'  # a comment\n"
        "def f():\n"
        '    """Doc,\n'
        '    two lines."""\n'
        "    # alone\n"
        '    return """a\n'
        '    b"""\n'
    )
    assert stripped_source(source) == (
        '""\n'
        "from __future__ import annotations\n"
        "X = '# not a comment'\n"
        "def f():\n"
        '\t""\n'
        "\n"
        "\n"
        '\treturn """a\n'
        '    b"""\n'  # (inside the string: its own spaces)
    )


def test_stripping_drops_the_annotations_of_functions_on_one_line() -> None:
    """Under ``from __future__ import annotations`` nothing at run time reads them, but a
    cold start parses each and turns it back into a string."""
    # GIVEN functions annotated on one line (non-ASCII text before an annotation, a
    # comment after one), on several lines, and a dataclass, whose fields' annotations
    # make its fields
    source = (
        "from __future__ import annotations\n"
        "from dataclasses import dataclass, fields\n"
        "def f(a: int, /, b: dict[str, int] = {}, *args: 'X', c: int = 1, **kw: int) -> int:\n"
        "    return a\n"
        'def g(s: str = "é—x", t: int | None = None) -> str: return s  # s\n'
        "def h(\n"
        "    a: dict[\n"
        "        str, int\n"
        "    ],\n"
        ") -> dict[\n"
        "    str, int\n"
        "]:\n"
        "    return a\n"
        "@dataclass\n"
        "class P:\n"
        "    x: int\n"
        "def k(n: int) -> list[int]:\n"
        "    found: list[int] = []\n"
        "    for i in range(n):\n"
        "        total: int\n"
        "        total = i\n"
        "        found.append(total)\n"
        "    @dataclass\n"
        "    class Q:\n"
        "        y: int = 0\n"
        "    return [*found, *(f.name for f in fields(Q))]  # type: ignore\n"
    )
    # WHEN it is stripped
    stripped = stripped_source(source)
    # THEN the annotations on one line are gone, those over several lines stay, every
    # statement is on its line, and the code does what it did
    lines = stripped.splitlines()
    assert lines[2] == "def f(a, /, b = {}, *args, c = 1, **kw):"
    assert lines[4] == 'def g(s = "é—x", t = None): return s'
    assert lines[5:12] == [line.replace("    ", "\t") for line in source.splitlines()[5:12]]
    assert lines[15] == "\tx: int"
    # (a local variable's annotation goes where it has a value; a class's field keeps its)
    assert lines[16:20] == ["def k(n):", "\tfound = []", "\tfor i in range(n):", "\t\ttotal: int"]
    assert lines[24] == "\t\ty: int = 0"
    namespace: dict[str, Any] = {}
    exec(compile(stripped, "stripped", "exec"), namespace)  # noqa: S102 (the source above)
    assert namespace["f"](1, c=2) == 1 and namespace["g"]() == "é—x"
    assert namespace["f"].__annotations__ == {} and namespace["h"]({}) == {}
    assert [f.name for f in namespace["fields"](namespace["P"])] == ["x"]
    assert namespace["k"](2) == [0, 1, "y"]


def test_stripped_blocks_are_indented_by_tabs_and_strings_keep_their_spaces() -> None:
    """A tab a level: one byte where four spaces took more, zipped."""
    # GIVEN nested blocks, lines continued in brackets and after a backslash, and a string
    # and an f-string spanning lines whose lines begin with spaces
    source = (
        "def f(x):\n"
        "    if x:\n"
        "        y = [\n"
        "            1,\n"
        "              2,\n"
        "        ]\n"
        '        s = """a\n'
        "        b\n"
        '    c"""\n'
        '        t = f"""{x}\n'
        '            {y}"""\n'
        "        return s + t + str(y[1] + \\\n"
        "             x)\n"
        "    return ''\n"
    )
    # WHEN it is stripped
    stripped = stripped_source(source)
    # THEN each four spaces beginning a line are a tab, but within the strings, and the
    # code does what it did
    lines, before = stripped.splitlines(), source.splitlines()
    assert lines[:6] == ["def f(x):", "\tif x:", "\t\ty = [", "\t\t\t1,", "\t\t\t  2,", "\t\t]"]
    assert lines[6] == '\t\ts = """a' and lines[7:9] == before[7:9]
    assert lines[9] == '\t\tt = f"""{x}' and lines[10] == before[10]
    assert lines[12] == "\t\t\t x)"
    done: dict[str, Any] = {}
    exec(compile(stripped, "stripped", "exec"), done)  # noqa: S102 (the source above)
    original: dict[str, Any] = {}
    exec(compile(source, "source", "exec"), original)  # noqa: S102 (the source above)
    assert done["f"](3) == original["f"](3) and done["f"](0) == original["f"](0) == ""


def test_a_source_indented_otherwise_keeps_its_indentation() -> None:
    """Tabs beside a block indented by two spaces could make its blocks ambiguous."""
    source = "def f():\n  if True:\n      return [\n          1]\n"
    assert tabbed(source) == source
    assert tabbed("def f():\n\treturn 1\n") == "def f():\n\treturn 1\n"


def test_a_stripped_dataclass_keeps_a_docstring_and_needs_no_signature() -> None:
    """An empty docstring would make ``@dataclass`` build one from ``inspect.signature``,
    a cost every cold start paid for each of the scaler's dataclasses."""
    # GIVEN a module with a documented dataclass and a documented function
    source = (
        "from dataclasses import dataclass\n"
        "@dataclass(frozen=True)\n"
        "class Point:\n"
        '    """A point, documented at length."""\n'
        "    x: int\n"
        "def f():\n"
        '    """Doc."""\n'
    )
    # WHEN it is stripped and run
    stripped = stripped_source(source)
    namespace: dict[str, Any] = {}
    exec(compile(stripped, "stripped", "exec"), namespace)  # noqa: S102 (the source above)
    # THEN the class's docstring is the placeholder, not one made from its signature, and
    # a function's is empty
    assert namespace["Point"].__doc__ == "_"
    assert namespace["f"].__doc__ == ""
    assert namespace["Point"](1) == namespace["Point"](x=1)


def test_bytecode_goes_beside_its_source_wherever_this_process_keeps_its_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a synth whose own bytecode cache is elsewhere (PYTHONPYCACHEPREFIX)
    elsewhere = tmp_path / "elsewhere"
    monkeypatch.setattr(sys, "pycache_prefix", str(elsewhere))
    source = tmp_path / "pkg" / "mod.py"
    source.parent.mkdir()
    (source.parent / "__init__.py").write_text("")
    source.write_text("MARK = 'compiled'\n")
    # WHEN a module is compiled for an asset
    cached = write_bytecode(tmp_path, source)
    # THEN its bytecode is where the function's import system looks: beside the source
    assert cached == source.parent / "__pycache__" / f"mod.{sys.implementation.cache_tag}.pyc"
    assert cached.is_file() and not elsewhere.exists()
    done = import_verbosely(tmp_path, "pkg.mod")
    assert f"code object from '{cached}'" in done.stderr


def _asset_app(
    tmp_path: Path, code: Any, synthesizer: Any
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The template and asset manifest of a stack holding a function and a layer on the
    folder ``code`` makes code of (``code(folder)``), asset metadata on, as the CLI runs
    an app; the stack's synthesizer made by ``synthesizer()`` (None: the CDK's default)."""
    folder = tmp_path / "src"
    folder.mkdir(parents=True)
    (folder / "handler.py").write_text("def handler(event, context):\n    return event\n")
    out = tmp_path / f"out-{code.__name__}"
    app = cdk.App(outdir=str(out), context={"aws:cdk:enable-asset-metadata": True})
    stack = cdk.Stack(app, "Assets", synthesizer=synthesizer and synthesizer())
    lambda_.Function(
        stack,
        "Function",
        runtime=lambda_.Runtime.PYTHON_3_11,
        handler="handler.handler",
        code=code(folder),
    )
    lambda_.LayerVersion(stack, "Layer", code=code(folder))
    app.synth()
    manifest = out / "Assets.assets.json"  # none with the legacy synthesizer
    return (
        json.loads((out / "Assets.template.json").read_text()),
        json.loads(manifest.read_text()) if manifest.exists() else {},
    )


class _OlderSynthesizer(cdk.StackSynthesizer):
    """A synthesizer written in Python before the CDK's file assets had a deploy time and a
    display name: its ``add_file_asset`` takes only the arguments it knew."""

    def add_file_asset(  # type: ignore[override]
        self,
        *,
        source_hash: str,
        file_name: str | None = None,
        packaging: cdk.FileAssetPackaging | None = None,
        executable: list[str] | None = None,
    ) -> cdk.FileAssetLocation:
        return cdk.FileAssetLocation(
            bucket_name="older-assets",
            object_key=f"{source_hash}.zip",
            http_url=f"https://older-assets.s3.amazonaws.com/{source_hash}.zip",
            s3_object_url=f"s3://older-assets/{source_hash}.zip",
        )

    def add_docker_image_asset(self, **_: Any) -> cdk.DockerImageAssetLocation:
        raise NotImplementedError

    def synthesize(self, session: cdk.ISynthesisSession) -> None:
        self._synthesize_template(session)
        self._emit_artifact(session)


@pytest.mark.parametrize(
    "synthesizer",
    [
        None,
        lambda: cdk.DefaultStackSynthesizer(
            qualifier="custom1", file_assets_bucket_name="custom-assets"
        ),
        cdk.LegacyStackSynthesizer,
        _OlderSynthesizer,
    ],
    ids=["default", "made-in-python", "legacy", "written-in-python"],
)
def test_staged_code_synthesizes_as_the_cdks_asset_code(tmp_path: Path, synthesizer: Any) -> None:
    """The library's functions and layer take their code through `StagedCode`, which
    leaves out the asset's imported bucket: the template (the S3 location, the asset
    metadata SAM reads) and the asset manifest are those of ``Code.from_asset``, whatever
    the stack's synthesizer (one made in Python reaches Python unbound)."""

    def from_asset(folder: Path) -> lambda_.Code:
        return lambda_.Code.from_asset(str(folder))

    def staged(folder: Path) -> lambda_.Code:
        return StagedCode(folder)

    ours = _asset_app(tmp_path / "ours", staged, synthesizer)
    cdks = _asset_app(tmp_path / "cdks", from_asset, synthesizer)
    assert ours == cdks
    template = ours[0]["Resources"]
    layer = next(r for r in template.values() if r["Type"] == "AWS::Lambda::LayerVersion")
    assert layer["Metadata"]["aws:asset:property"] == "Content"
    if ours[1]:  # the legacy synthesizer writes no asset manifest
        assert len(ours[1]["files"]) == 2  # the folder, staged once, and the template


def test_only_a_synthesizer_made_in_python_takes_the_cdks_asset_code() -> None:
    """`StagedCode` calls the stack's own synthesizer where Python is handed it bound (the
    default, made by the CDK, in a stack or a nested stack), and leaves a synthesizer made
    in Python to ``Code.from_asset``."""
    app = cdk.App()
    default = cdk.Stack(app, "Default")
    nested = cdk.NestedStack(default, "Nested")
    made = cdk.Stack(app, "Made", synthesizer=cdk.DefaultStackSynthesizer(qualifier="x1"))
    assert bound_synthesizer(default) is not None
    assert bound_synthesizer(nested) is not None
    assert bound_synthesizer(made) is None


@pytest.mark.parametrize("interpreter", ["failing", "empty"])
def test_bytecode_is_compiled_here_where_its_own_process_fails_warned_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, interpreter: str
) -> None:
    # GIVEN an interpreter that fails to compile (saying why on its standard error), or none
    # named at all (an embedded Python's empty sys.executable)
    failing = tmp_path / "python"
    failing.write_text("#!/bin/sh\necho 'Unknown option: -X no_debug_ranges' >&2\nexit 2\n")
    failing.chmod(0o755)
    monkeypatch.setattr(sys, "executable", str(failing) if interpreter == "failing" else "")
    monkeypatch.setattr(assets_module, "COMPILED_HERE", [], raising=False)
    sources = []
    for name in ("one", "two"):
        source = tmp_path / "pkg" / f"{name}.py"
        source.parent.mkdir(exist_ok=True)
        source.write_text(f"MARK = {name!r}\n")
        sources.append(source)
    (tmp_path / "pkg" / "__init__.py").write_text("")
    # WHEN the bytecode of two modules is written, and of the first again
    with pytest.warns(UserWarning) as warned:
        first = write_bytecode(tmp_path, sources[0]).read_bytes()
        write_bytecode(tmp_path, sources[1])
        again = write_bytecode(tmp_path, sources[0]).read_bytes()
    # THEN synth goes on: one warning, naming why the interpreter failed
    (warning,) = warned
    reason = "Unknown option: -X no_debug_ranges" if interpreter == "failing" else "is empty"
    assert reason in str(warning.message), warning.message
    # AND the bytecode is the same for the same source (the asset's hash stays), and is what
    # a fresh interpreter imports
    assert first == again
    monkeypatch.undo()
    done = import_verbosely(tmp_path, "pkg.one")
    assert done.stdout.strip() == "one"
    assert f"code object from '{bytecode_path(sources[0])}'" in done.stderr


def test_a_passing_failure_of_the_compiling_process_fails_the_synth_with_its_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN an interpreter whose compiling process is killed (out of memory, say): a failure
    # that may pass, after which compiling here would change the asset from one synth to
    # the next
    killed = tmp_path / "python"
    killed.write_text("#!/bin/sh\necho 'MemoryError' >&2\nkill -9 $$\n")
    killed.chmod(0o755)
    monkeypatch.setattr(sys, "executable", str(killed))
    monkeypatch.setattr(assets_module, "COMPILED_HERE", [], raising=False)
    source = tmp_path / "pkg" / "mod.py"
    source.parent.mkdir()
    source.write_text("MARK = 1\n")
    # WHEN its bytecode is written, THEN the synth fails naming the reason, and warns nothing
    with pytest.raises(RuntimeError, match=r"exit status -9: MemoryError"):
        write_bytecode(tmp_path, source)
    assert assets_module.COMPILED_HERE == []


def test_bytecode_compiled_here_is_never_optimized(tmp_path: Path) -> None:
    # GIVEN a module with an assert, compiled here (no interpreter named) by a synth run
    # with -O (python -O, or PYTHONOPTIMIZE)
    script = (
        "import sys, warnings\n"
        "warnings.simplefilter('ignore')\n"
        "from constructs_pkg.common._assets import marshalled\n"
        "sys.executable = ''\n"
        "sys.stdout.buffer.write(marshalled(b'def f():\\n    assert False\\n', 'm.py'))\n"
    )
    done = subprocess.run(  # noqa: S603 (this interpreter, a script of this test)
        [sys.executable, "-O", "-c", script], capture_output=True, check=True
    )
    # THEN its bytecode keeps the assert, as a Lambda that loads it unoptimized expects
    expected = compile(
        b"def f():\n    assert False\n", "m.py", "exec", dont_inherit=True, optimize=0
    )
    assert done.stdout == marshal.dumps(expected, 0)
