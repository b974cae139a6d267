"""``CapacityRequests.instrument(function)``: the fast path's hook in a Python Lambda function
without a change to its code: the hook's layer (the run-time package and the exec wrapper),
the wrapper set, the function granted and told where to report; the layer's wrapper starts
a runtime with the hook; refusals by name; the five cdk-nag packs."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import aws_cdk as cdk
import pytest
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_lambda as lambda_
from aws_cdk.assertions import Template

from constructs_pkg import CapacityConfigError, CapacityRequests, FastPath, apply_nag_packs
from constructs_pkg.common._runtime import HOOK_WRAPPER, staged_hook_layer
from tests.support.capacity_requests_construct import tables
from tests.support.instrument_construct import _app_function


def test_a_function_is_instrumented_without_a_change_to_its_code(stack: cdk.Stack) -> None:
    shipments, _ = tables(stack)
    named = dynamodb.Table.from_table_name(stack, "Named", "shipments")
    requests = CapacityRequests(stack, "Requests", tables=[named], fast_path=FastPath())
    function = _app_function(stack)
    grant = requests.instrument(function, tables=["shipments"], mode="throttles")
    other = _app_function(stack, name="Other", module="other")
    requests.instrument(other)
    assert grant.success and requests.signals is not None
    template = Template.from_stack(stack)
    # one layer for the stack, on both functions
    (layer_id,) = template.find_resources("AWS::Lambda::LayerVersion")
    functions = {
        r["Properties"]["Handler"]: r["Properties"]
        for r in template.find_resources("AWS::Lambda::Function").values()
    }
    assert functions["index.handler"]["Layers"] == [{"Ref": layer_id}]
    assert functions["other.handler"]["Layers"] == [{"Ref": layer_id}]
    signals = stack.resolve(requests.signals.function_name)
    # and told the hold store, whose deployment its hook's HookFailures belong to (the
    # series the requests' alarm watches), not as CAPACITY_HOLDS_TABLE: its requests still
    # go through the broker
    store = stack.resolve(requests.hold_store.table_name)
    assert functions["index.handler"]["Environment"]["Variables"] == {
        "AWS_LAMBDA_EXEC_WRAPPER": HOOK_WRAPPER,
        "CAPACITY_SIGNALS": signals,
        "CAPACITY_METRICS_STORE": store,
        "CAPACITY_SIGNALS_MODE": "throttles",
        "CAPACITY_SIGNALS_TABLES": "shipments",
    }
    assert functions["other.handler"]["Environment"]["Variables"] == {
        "AWS_LAMBDA_EXEC_WRAPPER": HOOK_WRAPPER,
        "CAPACITY_SIGNALS": signals,
        "CAPACITY_METRICS_STORE": store,
        "CAPACITY_SIGNALS_MODE": "consumed",
    }


def test_the_layer_holds_the_package_and_an_executable_wrapper(tmp_path: Path) -> None:
    layer = staged_hook_layer()
    wrapper = layer / Path(HOOK_WRAPPER).name
    assert wrapper.stat().st_mode & stat.S_IXUSR
    assert (layer / "python" / "ddb_capacity_runtime" / "bootstrap" / "sitecustomize.py").is_file()
    assert not list(layer.rglob("__pycache__"))
    # the wrapper starts a runtime (here python) with the hook installed from the layer
    env = {
        **os.environ,
        "PYTHONPATH": str(layer / "python"),
        "CAPACITY_SIGNALS": "capacity-signals",
        "AWS_DEFAULT_REGION": "us-east-1",
    }
    done = subprocess.run(  # noqa: S603 (the layer's own wrapper)
        [
            str(wrapper),
            sys.executable,
            "-c",
            "import boto3; from ddb_capacity_runtime import instrument; print(bool(instrument._installed), instrument.__file__)",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    installed, where = done.stdout.split()
    assert installed == "True" and where.startswith(str(layer))


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (
            lambda r, f, s: r.instrument(_app_function(s, lambda_.Runtime.NODEJS_20_X)),
            "instrument: function Test/App runs nodejs20.x; the hook is for Python functions on python3.11",
        ),
        (
            lambda r, f, s: r.instrument(f, mode="all"),
            "instrument: mode must be one of consumed, throttles; got 'all'",
        ),
        (
            lambda r, f, s: r.instrument(f, tables="shipments"),
            "instrument: tables must be a list of table names; got 'shipments'",
        ),
        (
            lambda r, f, s: r.instrument(f, tables=["x"]),
            "instrument: tables must name 1 or more tables (3 to 255 of a-z A-Z 0-9 _ . -); got 'x'",
        ),
        (
            lambda r, f, s: r.instrument("App"),
            "instrument needs a lambda_.Function (its layers and environment are set); got 'App'",
        ),
    ],
)
def test_bad_instrument_calls_are_refused_by_name(stack: cdk.Stack, call, message: str) -> None:  # type: ignore[no-untyped-def]
    shipments, _ = tables(stack)
    requests = CapacityRequests(stack, "Requests", tables=[shipments], fast_path=FastPath())
    function = _app_function(stack) if "nodejs" not in message else None
    with pytest.raises(CapacityConfigError, match=None) as raised:
        call(requests, function, stack)
    assert message in str(raised.value)


def test_without_the_fast_path_instrument_is_refused(stack: cdk.Stack) -> None:
    shipments, _ = tables(stack)
    requests = CapacityRequests(stack, "Requests", tables=[shipments])
    with pytest.raises(CapacityConfigError, match="Requests: instrument needs the fast path"):
        requests.instrument(_app_function(stack))


def test_the_five_nag_packs_pass_with_an_instrumented_function(tmp_path: Path) -> None:
    app = cdk.App(outdir=str(tmp_path))
    stack = cdk.Stack(
        app, "Instrumented", env=cdk.Environment(account="123456789012", region="us-east-1")
    )
    shipments, _ = tables(stack)
    requests = CapacityRequests(stack, "Requests", tables=[shipments], fast_path=FastPath())
    requests.instrument(_app_function(stack, lambda_.Runtime.PYTHON_3_13))
    apply_nag_packs(app)
    with pytest.raises(RuntimeError, match="ValidationFailed"):
        app.synth()  # the user's own function, role and tables have findings of their own
    report = json.loads((tmp_path / "validation-report.json").read_text())
    paths = {
        construct["constructPath"]
        for plugin in report["pluginReports"]
        for violation in plugin["violations"]
        for construct in violation["violatingConstructs"]
    }
    # THEN the report names findings (the user's: their function, its role, their tables) ...
    assert paths and all(
        p.startswith(("Instrumented/App/", "Instrumented/Plain/", "Instrumented/Shipments/"))
        for p in paths
    ), paths
    # ... and none on what the library added: the layer, its permission, the grant's policy
    assert stack.node.try_find_child("DdbCapacityHookLayer") is not None
    assert not [p for p in paths if "HookLayer" in p or p.startswith("Instrumented/Requests/")]


def test_a_function_with_its_own_exec_wrapper_is_refused(stack: cdk.Stack) -> None:
    shipments, _ = tables(stack)
    requests = CapacityRequests(stack, "Requests", tables=[shipments], fast_path=FastPath())
    function = _app_function(stack)
    function.add_environment("AWS_LAMBDA_EXEC_WRAPPER", "/opt/mine")
    # WHEN it is instrumented THEN it is refused, naming the function and its wrapper
    with pytest.raises(CapacityConfigError) as raised:
        requests.instrument(function)
    assert str(raised.value) == (
        "CapacityRequests Test/Requests: instrument: function Test/App has its own "
        "AWS_LAMBDA_EXEC_WRAPPER ('/opt/mine'), which the hook's wrapper would replace (a "
        "function runs one wrapper): call grant_signals and watch from its code instead"
    )
    # AND the function is left as it was
    (props,) = (
        Template.from_stack(stack)
        .find_resources("AWS::Lambda::Function", {"Properties": {"Handler": "index.handler"}})
        .values()
    )
    assert props["Properties"]["Environment"]["Variables"] == {
        "AWS_LAMBDA_EXEC_WRAPPER": "/opt/mine"
    }
    assert "Layers" not in props["Properties"]


def test_a_function_is_instrumented_once(stack: cdk.Stack) -> None:
    shipments, plain = tables(stack)
    requests = CapacityRequests(stack, "Requests", tables=[shipments], fast_path=FastPath())
    others = CapacityRequests(stack, "Others", tables=[plain], fast_path=FastPath())
    function = _app_function(stack)
    requests.instrument(function)
    # WHEN it is instrumented again, by the same or by other capacity requests
    for again in (requests, others):
        with pytest.raises(CapacityConfigError) as raised:
            again.instrument(function, mode="throttles")
        # THEN it is refused by name
        assert str(raised.value) == (
            f"{again._where}: instrument: function Test/App is instrumented already; "
            "instrument a function once (one call gives it its tables and mode)"
        )
    (props,) = (
        Template.from_stack(stack)
        .find_resources("AWS::Lambda::Function", {"Properties": {"Handler": "index.handler"}})
        .values()
    )
    assert len(props["Properties"]["Layers"]) == 1
    assert props["Properties"]["Environment"]["Variables"]["CAPACITY_SIGNALS_MODE"] == "consumed"


def test_a_wrapper_set_after_instrument_fails_synthesis(stack: cdk.Stack) -> None:
    shipments, _ = tables(stack)
    requests = CapacityRequests(stack, "Requests", tables=[shipments], fast_path=FastPath())
    function = _app_function(stack)
    requests.instrument(function)
    function.add_environment("AWS_LAMBDA_EXEC_WRAPPER", "/opt/mine")
    assert function.node.validate() == [
        "CapacityRequests Test/Requests: instrument: function Test/App's "
        "AWS_LAMBDA_EXEC_WRAPPER was set to '/opt/mine' after instrument, which replaces "
        "the hook's wrapper (a function runs one wrapper): the hook would never be "
        "installed; keep one of the two"
    ]


def test_instrument_takes_only_tables_the_requests_serve(stack: cdk.Stack) -> None:
    shipments, plain = tables(stack)
    named = dynamodb.Table.from_table_name(stack, "Named", "orders")
    requests = CapacityRequests(stack, "Requests", tables=[shipments, named], fast_path=FastPath())
    # WHEN a function is instrumented on a table the requests do not serve
    for i, wrong in enumerate(("NotServed", plain.table_name)):
        with pytest.raises(CapacityConfigError) as raised:
            requests.instrument(_app_function(stack, name=f"F{i}"), tables=["orders", wrong])
        # THEN it is refused by name (the signals function would refuse its reports)
        assert str(raised.value) == (
            "CapacityRequests Test/Requests: instrument: tables must name tables these "
            f"requests serve; got {wrong!r}: they serve Test/Shipments (give its table_name), "
            "'orders'"
        )
    # AND a served table, by its name or its table_name, is taken
    requests.instrument(_app_function(stack), tables=["orders", shipments.table.table_name])
