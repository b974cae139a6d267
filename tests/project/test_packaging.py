"""How users get the library: the Lambda asset comes from the installed package whatever
folders the user's app has, and the built wheel works in a fresh virtual environment."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import constructs_pkg
import ddb_capacity_runtime
from constructs_pkg.common._assets import bytecode_path
from constructs_pkg.common._runtime import compiled_modules
from tests.support.shape import ROOT

SCALER = "ddb_capacity_runtime.scaler.handler.lambda_handler"

APP = textwrap.dedent("""
    import os
    import aws_cdk as cdk
    from aws_cdk import aws_dynamodb as dynamodb
    from constructs_pkg import Capacity, PrewarmMethod, ProvisionedTable, ThrottleAwareScaler

    app = cdk.App(outdir=os.environ["CDK_OUTDIR"])
    stack = cdk.Stack(app, "UserApp")
    table = ProvisionedTable(
        stack, "Orders",
        partition_key=dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING),
        read=Capacity(min_capacity=5, max_capacity=100, high_water_mark=50),
        write=Capacity(min_capacity=5, max_capacity=100, high_water_mark=50),
        prewarm=PrewarmMethod.PROVISION_THEN_SETTLE)
    ThrottleAwareScaler(stack, "Scaler", tables=[table])
    app.synth()
""")


def synth_in(folder: Path, python: str) -> dict[str, object]:
    """Run APP from ``folder`` (the current directory, first on sys.path) with ``python``;
    returns the template. The CDK's built-in validation is off: these tests are about where
    the library and its assets come from, and it took half of each synth."""
    (folder / "app.py").write_text(APP)
    outdir = folder / "cdk.out"
    env = {**os.environ, "CDK_OUTDIR": str(outdir), "CDK_VALIDATION": "false"}
    env.pop("PYTHONPATH", None)
    done = subprocess.run(
        [python, "app.py"],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    template: dict[str, object] = json.loads((outdir / "UserApp.template.json").read_text())
    return template


def asset_files(folder: Path, template: dict[str, object]) -> dict[str, set[str]]:
    """Each of the library's Lambda functions' handler and the files of its asset (not the
    CDK's own, as a custom-resource provider's framework functions)."""
    out = {}
    resources = template["Resources"]
    assert isinstance(resources, dict)
    for resource in resources.values():
        if resource["Type"] != "AWS::Lambda::Function" or not resource["Properties"][
            "Handler"
        ].startswith("ddb_capacity_runtime."):
            continue
        asset = folder / "cdk.out" / f"asset.{resource['Properties']['Code']['S3Key'][:-4]}"
        files = {str(p.relative_to(asset)) for p in asset.rglob("*") if p.is_file()}
        out[resource["Properties"]["Handler"]] = files
    return out


def test_a_users_own_lambda_src_folder_does_not_shadow_the_library(tmp_path: Path) -> None:
    # GIVEN an app folder with its own lambda_src/ and capacity_runtime/ (the old name)
    for name in ("lambda_src", "capacity_runtime", "lambda_src/capacity_runtime"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "__init__.py").write_text("")
        (tmp_path / name / "user_code.py").write_text("SECRET = 'the user\\'s own code'\n")
    (tmp_path / "capacity_runtime" / "handler.py").write_text("def lambda_handler(e, c): ...\n")
    # WHEN it synthesizes a scaler and a settled table
    template = synth_in(tmp_path, sys.executable)
    assets = asset_files(tmp_path, template)
    # THEN every function's asset is the library's run-time package, handler included
    # (each the modules its handler imports)
    assert SCALER in assets and any(h.startswith("ddb_capacity_runtime.settle.") for h in assets)
    package = Path(ddb_capacity_runtime.__file__).parent
    installed = {
        str(p.relative_to(package.parent))
        for p in package.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    }
    # (and, synthesized on the functions' Python, the bytecode of the modules shipped compiled)
    compiled = {str(bytecode_path(Path(m.replace(".", "/") + ".py"))) for m in compiled_modules()}
    for handler, files in assets.items():
        module = handler.rsplit(".", 1)[0].replace(".", "/") + ".py"
        assert module in files and "ddb_capacity_runtime/__init__.py" in files
        assert files <= installed | compiled
        assert not any(
            "user_code" in f or f.startswith(("lambda_src", "capacity_runtime/")) for f in files
        )


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel and the source distribution, built as ``make dist`` builds them (the wheel
    from the sdist)."""
    out = tmp_path_factory.mktemp("dist")
    built = subprocess.run(
        [sys.executable, "-m", "build", "--outdir", str(out), str(ROOT)],
        timeout=600,
        capture_output=True,
        text=True,
        check=False,
    )
    assert built.returncode == 0, built.stderr[-3000:]
    return out


def test_twine_accepts_the_distributions(dist: Path) -> None:
    """What ``make dist`` builds passes ``twine check --strict``: the metadata PyPI needs,
    and a README that renders as the project's description."""
    files = sorted(str(p) for p in dist.iterdir())
    assert sorted(Path(f).suffix for f in files) == [".gz", ".whl"]
    twine = Path(sys.executable).parent / "twine"
    checked = subprocess.run(
        [str(twine), "check", "--strict", *files],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert checked.stdout.count("PASSED") == 2


def test_the_wheel_works_in_a_fresh_virtual_environment(dist: Path, tmp_path: Path) -> None:
    # GIVEN the wheel, built from the repository's source distribution
    (wheel,) = dist.glob("*.whl")
    # AND a fresh virtual environment outside the repository, with the wheel installed (by
    # this environment's pip, so the new one needs none of its own; without compiling every
    # module of its dependencies up front, which took most of the test's time: the modules
    # the app imports are compiled as it imports them)
    venv = tmp_path / "venv"
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120
    )
    python = str(venv / "bin" / "python")
    installed = subprocess.run(
        [sys.executable, "-m", "pip", "--python", python, "install", "-q", "--no-compile"]
        + [str(wheel)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if installed.returncode != 0:
        pytest.fail(f"pip install of the wheel failed:\n{installed.stderr[-3000:]}")
    app = tmp_path / "app"
    app.mkdir()
    # WHEN a small app is synthesized there
    template = synth_in(app, python)
    # THEN the library came from the virtual environment, with its typing marker and licence
    where = subprocess.run(
        [
            python,
            "-c",
            "import constructs_pkg, ddb_capacity_runtime as r, importlib.metadata "
            "as m; print(r.__file__); print(constructs_pkg.__version__); "
            "print(m.metadata('cdk-dynamodb-capacity')['License-Expression'])",
        ],
        cwd=app,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout.split()
    assert where[0].startswith(str(venv)) and where[1] == constructs_pkg.__version__
    assert where[2] == "Apache-2.0"
    site = Path(where[0]).parents[1]
    assert (site / "ddb_capacity_runtime" / "py.typed").exists()
    assert (site / "constructs_pkg" / "py.typed").exists()
    assert (site / "ddb_capacity_runtime" / "bootstrap" / "sitecustomize.py").exists()
    # AND the functions' asset is the run-time package
    assets = asset_files(app, template)
    assert "ddb_capacity_runtime/scaler/handler.py" in assets[SCALER]
    # AND the command line runs from there
    helped = subprocess.run(
        [str(venv / "bin" / "ddb-capacity"), "--help"],
        cwd=app,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert helped.returncode == 0, helped.stderr
    assert "simulate" in helped.stdout and "request" in helped.stdout
    # AND so does the launcher, its start-up hook found in the installed package
    launched = subprocess.run(
        [
            str(venv / "bin" / "ddb-capacity-instrument"),
            "--function",
            "capacity-signals",
            "--",
            str(venv / "bin" / "python"),
            "-c",
            "import sys, boto3; from ddb_capacity_runtime import instrument; "
            "print(bool(instrument._installed), 'sitecustomize' in sys.modules)",
        ],
        cwd=app,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, "AWS_DEFAULT_REGION": "us-east-1"},
    )
    assert launched.returncode == 0, launched.stderr
    assert launched.stdout.split() == ["True", "True"]
