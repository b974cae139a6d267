"""Every deployment its own fault domain in CloudWatch: the counts the library's functions
send that are not per table carry the dimension ``StateStore`` (the name of the emitting
function's state store), and every alarm and ``metric()`` of a construct on the namespace
``DynamoDBCapacity`` watches its own deployment's series (or a table's), never the
account's: two apps in one account and Region no longer raise each other's alarms."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import aws_cdk as cdk
from aws_cdk import aws_iam as iam
from aws_cdk.assertions import Template

import ddb_capacity_runtime
from constructs_pkg import CapacityRequests, FastPath, ProvisionedTable, ThrottleAwareScaler
from constructs_pkg.requests._capacity_requests import REQUEST_METRICS
from constructs_pkg.scaler._scaler import SCALER_METRICS
from tests.support.stream_signal_construct import provisioned

NAMESPACE = "DynamoDBCapacity"
RUNTIME = Path(ddb_capacity_runtime.__file__).parent


def _watched(alarm: dict[str, Any]) -> list[tuple[str, list[dict[str, Any]]]]:
    """The (metric name, dimensions) of each metric of namespace ``DynamoDBCapacity`` an
    alarm's properties watch (a plain alarm's, or its metric queries')."""
    stats = [q["MetricStat"]["Metric"] for q in alarm.get("Metrics", []) if "MetricStat" in q]
    found = [alarm, *stats]
    return [
        (m["MetricName"], m.get("Dimensions", [])) for m in found if m.get("Namespace") == NAMESPACE
    ]


def _alarms_under(template: Template, prefix: str) -> list[tuple[str, list[dict[str, Any]]]]:
    """What the alarms whose logical ids start with ``prefix`` watch in the namespace."""
    return [
        watched
        for logical, alarm in template.find_resources("AWS::CloudWatch::Alarm").items()
        if logical.startswith(prefix)
        for watched in _watched(alarm["Properties"])
    ]


def _store_ref(template: Template, prefix: str) -> dict[str, str]:
    (store,) = [t for t in template.find_resources("AWS::DynamoDB::Table") if t.startswith(prefix)]
    return {"Ref": store}


def test_two_capacity_requests_alarm_each_on_its_own_hold_stores_series() -> None:
    # GIVEN two apps' CapacityRequests in one account and Region (one stack here), each
    # with a fast path and its stream signal
    stack = cdk.Stack(cdk.App(), "Apps")
    first = CapacityRequests(
        stack, "Billing", tables=[provisioned(stack, "Invoices")], fast_path=FastPath(stream=True)
    )
    second = CapacityRequests(
        stack, "Search", tables=[provisioned(stack, "Documents")], fast_path=FastPath(stream=True)
    )
    template = Template.from_stack(stack)
    seen: dict[str, dict[str, Any]] = {}
    for requests, prefix in ((first, "Billing"), (second, "Search")):
        store = _store_ref(template, f"{prefix}HoldStore")
        watched = _alarms_under(template, prefix)
        # THEN every alarm of each on the library's counts watches its own hold store's
        # series: one dimension, StateStore, the name of its own hold store
        names = {name for name, _ in watched}
        assert {
            "HoldsDropped",
            "HoldsBusy",
            "SurgesFailed",
            "HookFailures",
            "StreamFailed",
        } <= names
        assert names <= set(REQUEST_METRICS)
        # but HookFailures, which watches its own signals function's series too (a hook
        # granted through its role alone counts for the signals function it reports to)
        assert requests.signals is not None
        function = stack.resolve(requests.signals.function_name)
        signals = [{"Name": "SignalsFunction", "Value": function}]
        assert ("HookFailures", signals) in watched
        for name, dimensions in watched:
            if dimensions == signals and name == "HookFailures":
                continue
            assert dimensions == [{"Name": "StateStore", "Value": store}], name
        # AND so does each metric() it offers (a user's own alarm, a dashboard)
        for name in REQUEST_METRICS:
            metric = requests.metric(name)
            assert stack.resolve(metric.dimensions) == {"StateStore": store}, name
        seen[prefix] = store
    # AND the two deployments' series differ: one's Refused is not the other's
    assert seen["Billing"] != seen["Search"]
    assert stack.resolve(first.metric_refused().dimensions) != stack.resolve(
        second.metric_refused().dimensions
    )


def test_two_scalers_alarm_each_on_its_own_state_store_and_a_connected_one_on_the_requests() -> (
    None
):
    # GIVEN two scalers in one account and Region, the second connected to a
    # CapacityRequests (it keeps its state in the requests' hold store)
    stack = cdk.Stack(cdk.App(), "Apps")
    own = ThrottleAwareScaler(stack, "Alone", tables=[provisioned(stack, "Orders")])
    connected = ThrottleAwareScaler(stack, "Joined", tables=[provisioned(stack, "Carts")])
    requests = CapacityRequests(stack, "Requests", tables=[provisioned(stack, "Items")])
    requests.connect(connected)
    template = Template.from_stack(stack)
    own_store = _store_ref(template, "AloneStateStore")
    hold_store = _store_ref(template, "RequestsHoldStore")
    for scaler, prefix, store in ((own, "Alone", own_store), (connected, "Joined", hold_store)):
        watched = _alarms_under(template, prefix)
        # THEN each alarm of each scaler on the tick's counts watches a table's series or its
        # own deployment's: the worst-table twins of the store it keeps its state in
        worst = [(n, d) for n, d in watched if not any(x["Name"] == "TableName" for x in d)]
        assert {"BadTargets", "RefusedTags", "IgnoredTags", "CapacityAtMax", "Updating"} <= {
            n for n, _ in worst
        }
        for name, dimensions in worst:
            assert dimensions == [{"Name": "StateStore", "Value": store}], name
        # AND each metric() of the tick's own record is that deployment's too
        for name, scope in SCALER_METRICS.items():
            if scope != "table":
                dimensions = stack.resolve(scaler.metric(name).dimensions)
                assert dimensions == {"StateStore": store}, name
    # AND the connected scaler's HoldsDropped and the requests' are one series, which the
    # requests' alarm watches (the scaler gives up its own alarm on it)
    assert stack.resolve(connected.metric("HoldsDropped").dimensions) == stack.resolve(
        requests.metric_holds_dropped().dimensions
    )
    assert "HoldsDropped" in own.alarms and "HoldsDropped" not in connected.alarms


def test_a_function_granted_the_signals_function_is_told_its_deployments_store() -> None:
    # GIVEN a function of the app granted the fast path's signals function, and a role
    stack = cdk.Stack(cdk.App(), "App")
    table: ProvisionedTable = provisioned(stack, "Orders")
    requests = CapacityRequests(stack, "Requests", tables=[table], fast_path=FastPath())
    worker = cdk.aws_lambda.Function(
        stack,
        "Worker",
        runtime=cdk.aws_lambda.Runtime.PYTHON_3_12,
        handler="index.handler",
        code=cdk.aws_lambda.Code.from_inline("def handler(e, c): pass"),
    )
    requests.grant_signals(worker)
    requests.grant_request(iam.Role(stack, "Jobs", assumed_by=iam.AccountRootPrincipal()))
    # THEN its hook's HookFailures go to the series the requests' alarm watches: it knows
    # the hold store's name, as CAPACITY_METRICS_STORE (not CAPACITY_HOLDS_TABLE, which
    # would send its requests to the store directly)
    template = Template.from_stack(stack)
    (found,) = template.find_resources(
        "AWS::Lambda::Function", {"Properties": {"Handler": "index.handler"}}
    ).values()
    variables = found["Properties"]["Environment"]["Variables"]
    assert variables["CAPACITY_METRICS_STORE"] == stack.resolve(requests.hold_store.table_name)
    assert "CAPACITY_HOLDS_TABLE" not in variables
    hook = requests.metric("HookFailures")
    assert stack.resolve(hook.dimensions) == {"StateStore": variables["CAPACITY_METRICS_STORE"]}


def _calls(name: str) -> list[tuple[Path, ast.Call]]:
    """Every call of the function ``name`` in the run-time's source."""
    return [
        (path, node)
        for path in sorted(RUNTIME.rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == name
    ]


def _strings(path: Path) -> dict[str, str]:
    """The module-level names of ``path`` bound to a string, and the string defaults of its
    functions' parameters named ``metric`` (``refused_report``'s)."""
    tree = ast.parse(path.read_text())
    found = {
        t.id: n.value.value
        for n in tree.body
        if isinstance(n, ast.Assign) and isinstance(n.value, ast.Constant)
        for t in n.targets
        if isinstance(t, ast.Name) and isinstance(n.value.value, str)
    }
    for f in ast.walk(tree):
        if isinstance(f, ast.FunctionDef):
            named = f.args.args[len(f.args.args) - len(f.args.defaults) :]
            for arg, default in zip(named, f.args.defaults, strict=True):
                if arg.arg == "metric" and isinstance(default, ast.Constant):
                    found["metric"] = str(default.value)
    return found


def _emitted_names() -> set[str]:
    """The names the run-time's functions count with ``count`` and ``count_in_lambda``
    (each a string, a module constant, or ``refused_report``'s metric), the counts that are
    not per table. The tick's records go through `emf_record` alone; the settle step's
    (per table, and for its function: no deployment's) through ``count_in_lambda(...,
    table=...)``."""
    names: set[str] = set()
    everywhere = {k: v for p in RUNTIME.rglob("*.py") for k, v in _strings(p).items()}
    for function, position in (("count", 0), ("count_in_lambda", 1), ("refused_report", 3)):
        for path, call in _calls(function):
            if len(call.args) <= position or any(k.arg == "table" for k in call.keywords):
                continue  # (a count per table too: the settle step's SettleLeft)
            arg = call.args[position]
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                names.add(arg.value)
            elif isinstance(arg, ast.Name):  # a constant of the module, or one it imports
                names.add(_strings(path).get(arg.id) or everywhere[arg.id])
    return names


def test_every_count_the_functions_send_is_one_a_construct_offers_for_its_deployment() -> None:
    # GIVEN the counts the broker, the signals function, the stream reader, the state store
    # and the hook send (none per table)
    emitted = _emitted_names()
    assert {"Refused", "TimedOut", "HoldsDropped", "HoldsBusy", "HookFailures"} <= emitted
    assert "ReportsRefused" in emitted
    assert {"CombinerFull", "ReportsNotServed", "StreamTtlDeletions"} <= emitted
    # THEN each is one CapacityRequests offers (metric()), for its own deployment
    # (StateStore): none is left for the account's series
    assert emitted - set(REQUEST_METRICS) == set()


def test_every_record_of_the_runtime_names_the_store_of_its_deployment() -> None:
    # GIVEN every EMF record the run-time's functions write (emf_record, count_in_lambda)
    calls = _calls("emf_record") + _calls("count_in_lambda")
    assert len(calls) >= 8
    # THEN each names a store (its StateStore dimension), never None: no count of the
    # library's functions is the account's
    for path, call in calls:
        store = {k.arg: k.value for k in call.keywords}.get("store")
        assert store is not None, f"{path.name}:{call.lineno} names no store"
        assert not (isinstance(store, ast.Constant) and store.value is None), (
            f"{path.name}:{call.lineno} sends a count for no deployment"
        )
