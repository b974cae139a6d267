"""Each function's Lambda asset: the run-time modules its handler imports and nothing else,
found from the package's import graph, staged without docstrings or comments (every line
where it was); small, and complete: each imports its handler in a fresh interpreter that
has only the asset, the standard library and boto3 (what Lambda's runtime gives it)."""

from __future__ import annotations

import ast
import io
import json
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import boto3
import pytest
from aws_cdk import aws_dynamodb as dynamodb

import ddb_capacity_runtime
from constructs_pkg import (
    Capacity,
    CapacityRequests,
    FastPath,
    PrewarmMethod,
    ProvisionedTable,
    ThrottleAwareScaler,
)
from constructs_pkg import assets as assets_module
from constructs_pkg.assets import (
    closure,
    handler_closure,
    import_graph,
    module_files,
    stripped_source,
)

PACKAGE = Path(ddb_capacity_runtime.__file__).resolve().parent
SCALER = "ddb_capacity_runtime.scaler.handler.lambda_handler"
#: The scaler asset's largest size, zipped as the CDK zips it.
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


def zipped_size(folder: Path) -> int:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                archive.write(path, path.relative_to(folder))
    return len(buffer.getvalue())


def settle_handlers(assets: dict[str, Path]) -> list[str]:
    return [h for h in assets if h.startswith("ddb_capacity_runtime.settle.")]


def test_every_run_time_function_is_synthesized(assets: dict[str, Path]) -> None:
    assert set(assets) - set(settle_handlers(assets)) == {
        SCALER,
        "ddb_capacity_runtime.scaler.handler.batch_handler",
        "ddb_capacity_runtime.requests.broker.broker_handler",
        "ddb_capacity_runtime.requests.restorer.restorer_handler",
        "ddb_capacity_runtime.requests.surge.signals_handler",
        "ddb_capacity_runtime.stream_reader.stream_handler",
    }
    assert settle_handlers(assets)


def test_the_scaler_asset_is_small(assets: dict[str, Path]) -> None:
    size = zipped_size(assets[SCALER])
    assert size <= SCALER_ZIPPED_LIMIT, f"the scaler's asset is {size:,} bytes zipped"


def test_each_asset_holds_its_handlers_modules_and_no_other(assets: dict[str, Path]) -> None:
    by_name = module_files([PACKAGE])
    for handler, folder in assets.items():
        files = {str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file()}
        expected = {
            str(by_name[name].relative_to(PACKAGE.parent))
            for name in handler_closure(PACKAGE, handler)
        }
        assert files == expected, handler
    # another function's code stays out: the settle step carries no scaler, no broker
    for handler in settle_handlers(assets):
        settle = {p.parent.name for p in assets[handler].rglob("*.py")}
        assert "scaler" not in settle and "requests" not in settle
    assert "settle" not in {p.parent.name for p in assets[SCALER].rglob("*.py")}


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


def without_docstrings(tree: ast.Module) -> str:
    """``tree`` dumped with its docstrings emptied and where each node starts (a docstring's
    end moves, and with it the end of a body it closes)."""
    for node in [tree, *ast.walk(tree)]:
        body: Any = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
            value = body[0].value
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                value.value = ""
    for node in ast.walk(tree):
        if hasattr(node, "end_lineno"):
            node.end_lineno = node.end_col_offset = None
    return ast.dump(tree, include_attributes=True)


@pytest.mark.parametrize("path", sorted(PACKAGE.rglob("*.py")), ids=lambda p: p.stem)
def test_a_stripped_module_keeps_every_statement_on_its_line(path: Path) -> None:
    source = path.read_text()
    stripped = stripped_source(source)
    assert stripped.count("\n") == source.count("\n")
    assert without_docstrings(ast.parse(stripped)) == without_docstrings(ast.parse(source))
    assert not any(line.lstrip().startswith("#") for line in stripped.splitlines())


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
        '    ""\n'
        "\n"
        "\n"
        '    return """a\n'
        '    b"""\n'
    )
