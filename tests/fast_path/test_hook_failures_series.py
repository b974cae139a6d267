"""A client hook's ``HookFailures`` always belong to a deployment that alarms on them: the hold
store's (``StateStore``, a function ``grant_signals`` or ``instrument`` told it), else the
signals function's it reports to (``SignalsFunction``: a function granted through its role
alone). The table is a moto server's; the signals function a local stand-in that refuses the
invocations (ResourceNotFound), as Lambda does for a wrong name."""

from __future__ import annotations

import importlib.util
import json
import sys
from collections.abc import Callable
from typing import Any

import boto3
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ddb_capacity_runtime.fast_path.failures import function_name
from ddb_capacity_runtime.fast_path.hook import watch
from ddb_capacity_runtime.instrument import BOOTSTRAP
from ddb_capacity_tools.local_aws import REGION
from tests.support.signals_hook import FakeLambda, item
from tests.support.signals_hook import table as table  # noqa: F401 (fixture)

ARN = f"arn:aws:lambda:{REGION}:123456789012:function:orders-signals:live"
"""The signals function, as a user's own code names it: its ARN, with an alias."""


def records(out: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.splitlines() if line.startswith('{"_aws"')]


@pytest.mark.parametrize(
    ("store", "series"),
    [
        (None, ("SignalsFunction", "orders-signals")),
        ("orders-holds", ("StateStore", "orders-holds")),
    ],
    ids=["granted-through-its-role", "granted-by-the-construct"],
)
def test_a_hook_s_failures_belong_to_the_deployment_it_reports_to(
    moto_endpoint: str,
    table: str,  # noqa: F811 (fixture)
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    store: str | None,
    series: tuple[str, str],
) -> None:
    # GIVEN a Lambda function's hook whose reports the signals function refuses, told the
    # hold store of its deployment (granted by the construct) or not (granted through its
    # role alone: no CAPACITY_METRICS_STORE, no CAPACITY_HOLDS_TABLE)
    fake = FakeLambda(404)
    monkeypatch.setenv("AWS_ENDPOINT_URL_LAMBDA", fake.url)
    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_NAME", "orders-worker")
    monkeypatch.delenv("CAPACITY_HOLDS_TABLE", raising=False)
    if store is None:
        monkeypatch.delenv("CAPACITY_METRICS_STORE", raising=False)
    else:
        monkeypatch.setenv("CAPACITY_METRICS_STORE", store)
    session = boto3.Session(
        aws_access_key_id="test", aws_secret_access_key="test", region_name=REGION
    )  # noqa: S106
    capsys.readouterr()
    # WHEN it reports the function's traffic
    try:
        with watch(session, function=ARN, interval=60) as watcher:
            client = session.client("dynamodb", endpoint_url=moto_endpoint)
            client.put_item(TableName=table, Item=item("a"))
    finally:
        fake.close()
    # THEN its failed send is counted for that deployment: the hold store, or the signals
    # function it reports to (its name, not the ARN and alias it was given), one dimension
    assert watcher.failed_sends == 1
    (record,) = records(capsys.readouterr().out)
    (group,) = record["_aws"]["CloudWatchMetrics"]
    assert (group["Namespace"], group["Dimensions"]) == ("DynamoDBCapacity", [[series[0]]])
    assert record[series[0]] == series[1]
    assert record["HookFailures"] == 1


@pytest.mark.parametrize(
    ("given", "name"),
    [
        ("orders-signals", "orders-signals"),
        ("orders-signals:live", "orders-signals"),
        ("123456789012:function:orders-signals", "orders-signals"),
        (ARN, "orders-signals"),
        (f"arn:aws:lambda:{REGION}:123456789012:function:orders-signals", "orders-signals"),
        ("function", "function"),
        ("", None),
        ("no spaces", None),
        ("arn:aws:lambda:us-east-1:123456789012:function:", None),
        (7, None),
    ],
)
def test_the_signals_function_s_name_is_read_from_whatever_names_it(
    given: object, name: str | None
) -> None:
    assert function_name(given) == name


@pytest.fixture(scope="module")
def start_up_rule() -> Callable[[str], str | None]:
    """The start-up hook's own reading of the signals function's name (``sitecustomize``,
    the standard library alone), its module loaded under another name with nothing to
    install (``CAPACITY_SIGNALS`` unset, not a Lambda function) and no next
    ``sitecustomize`` to run."""
    spec = importlib.util.spec_from_file_location("start_up_hook", BOOTSTRAP / "sitecustomize.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    with pytest.MonkeyPatch.context() as patch:
        for name in ("CAPACITY_SIGNALS", "AWS_LAMBDA_FUNCTION_NAME"):
            patch.delenv(name, raising=False)
        patch.setattr(sys, "path", [str(BOOTSTRAP)])
        spec.loader.exec_module(module)
    rule: Callable[[str], str | None] = module.function_name
    return rule


NAMES = [
    "orders-signals",
    "orders-signals:live",
    " orders-signals ",
    "123456789012:function:orders-signals",
    ARN,
    f"arn:aws:lambda:{REGION}:123456789012:function:orders-signals",
    "function",
    "function:orders-signals",
    "a" * 64,
    "a" * 65,
    "",
    "no spaces",
    "caf\u00e9",
    "arn:aws:lambda:us-east-1:123456789012:function:",
    "arn:aws:lambda:us-east-1:123456789012:layer:orders-signals",
    "123456789012:function:",
    ":function:orders-signals",
]


@pytest.mark.parametrize("given", NAMES)
def test_the_start_up_hook_reads_a_name_as_the_library_does(
    start_up_rule: Callable[[str], str | None], given: str
) -> None:
    """The start-up hook counts a hook it could not install under the name the library
    would count it under (`function_name`): one rule, written twice because the start-up
    hook must run before the library is importable."""
    assert start_up_rule(given) == function_name(given)


@given(
    st.lists(
        st.sampled_from(["arn", "aws", "lambda", "function", "orders-signals", "", " x", "é"])
        | st.text(max_size=70),
        max_size=8,
    ).map(":".join)
)
def test_the_start_up_hook_reads_any_value_as_the_library_does(
    start_up_rule: Callable[[str], str | None], value: str
) -> None:
    assert start_up_rule(value) == function_name(value)
