"""CapacityRequests with ``FastPath(stream=...)`` in the template: the stream reader, an
event source mapping per served table's stream, the stream turned on for the tables the
library makes, the refusals (no stream, a third reader, bad props), its IAM scoped to the
stream ARNs, its alarms, cdk-nag's five packs and cfn-lint."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_event_sources as sources
from aws_cdk.assertions import Match, Template

from constructs_pkg import (
    AlarmOptions,
    CapacityConfigError,
    CapacityRequests,
    FastPath,
    FunctionOptions,
    StreamSignal,
    acknowledge,
    apply_nag_packs,
)
from tests.support.capacity_requests_construct import PK, by_sid, policy
from tests.support.shape import ROOT
from tests.support.stream_signal_construct import provisioned, with_stream

HANDLER = "ddb_capacity_runtime.fast_path.stream_reader.stream_handler"
SIGNALS = "ddb_capacity_runtime.fast_path.signals_function.signals_handler"
DESCRIPTION = "Permissions of DynamoDB capacity stream reader (fast path)"


def function(template: Template, handler: str) -> dict[str, Any]:
    (found,) = template.find_resources(
        "AWS::Lambda::Function", {"Properties": {"Handler": handler}}
    ).values()
    return dict(found["Properties"])


def stream_of(stack: cdk.Stack, table: dynamodb.Table) -> Any:
    return stack.resolve(
        table.table_stream_arn or table.node.default_child.attr_stream_arn  # type: ignore[union-attr]
    )


def test_each_served_table_stream_is_mapped_to_the_reader(stack: cdk.Stack) -> None:
    # GIVEN a table the library makes and a table of the app with a stream of its own
    orders, events = provisioned(stack), with_stream(stack)
    requests = CapacityRequests(
        stack, "Requests", tables=[orders, events], fast_path=FastPath(stream=True)
    )
    template = Template.from_stack(stack)
    # THEN one mapping per stream: the newest records, a 1 s window, 60 s of age, 2 retries
    reader = requests.stream_reader
    assert reader is not None
    for table in (orders.table, events):
        template.has_resource_properties(
            "AWS::Lambda::EventSourceMapping",
            {
                "EventSourceArn": stream_of(stack, table),
                "FunctionName": stack.resolve(reader.function.function_name),
                "StartingPosition": "LATEST",
                "MaximumBatchingWindowInSeconds": 1,
                "MaximumRecordAgeInSeconds": 60,
                "MaximumRetryAttempts": 2,
                "BatchSize": 1000,
                "BisectBatchOnFunctionError": False,
                "ParallelizationFactor": 1,
            },
        )
    template.resource_count_is("AWS::Lambda::EventSourceMapping", 2)
    # and the reader reads the signals function's settings: the same tables and bounds
    env = function(template, HANDLER)["Environment"]["Variables"]
    assert env == function(template, SIGNALS)["Environment"]["Variables"]
    # its platform lines are left out of its log (it runs about once a second per shard)
    assert function(template, HANDLER)["LoggingConfig"]["SystemLogLevel"] == "WARN"
    # the mapping waits for the policy that lets the role read the stream
    mappings = template.find_resources("AWS::Lambda::EventSourceMapping")
    policy_id = stack.get_logical_id(reader.policy.node.default_child)  # type: ignore[arg-type]
    assert all(policy_id in m.get("DependsOn", []) for m in mappings.values())


def test_a_table_the_library_makes_gets_its_stream_with_both_images(stack: cdk.Stack) -> None:
    orders = provisioned(stack)
    kept = provisioned(stack, "Kept", stream=dynamodb.StreamViewType.KEYS_ONLY)
    CapacityRequests(stack, "Requests", tables=[orders, kept], fast_path=FastPath(stream=True))
    template = Template.from_stack(stack)
    views = sorted(
        t["Properties"]["StreamSpecification"]["StreamViewType"]
        for t in template.find_resources("AWS::DynamoDB::Table").values()
        if "StreamSpecification" in t["Properties"]
    )
    # the one without a stream gets NEW_AND_OLD_IMAGES; the one with a stream keeps its own
    assert views == ["KEYS_ONLY", "NEW_AND_OLD_IMAGES"]


def test_without_the_stream_option_no_table_gets_a_stream(stack: cdk.Stack) -> None:
    requests = CapacityRequests(
        stack, "Requests", tables=[provisioned(stack)], fast_path=FastPath()
    )
    assert requests.stream_reader is None
    template = Template.from_stack(stack)
    template.resource_count_is("AWS::Lambda::EventSourceMapping", 0)
    template.has_resource_properties(
        "AWS::DynamoDB::Table",
        {"StreamSpecification": Match.absent(), "KeySchema": Match.any_value()},
    )


def test_an_imported_table_reads_the_stream_arn_it_was_given(stack: cdk.Stack) -> None:
    arn = "arn:aws:dynamodb:us-east-1:123456789012:table/legacy/stream/2026-01-01T00:00:00.000"
    legacy = dynamodb.Table.from_table_attributes(
        stack, "Legacy", table_name="legacy", table_stream_arn=arn
    )
    CapacityRequests(stack, "Requests", tables=[legacy], fast_path=FastPath(stream=True))
    template = Template.from_stack(stack)
    template.has_resource_properties("AWS::Lambda::EventSourceMapping", {"EventSourceArn": arn})
    statements = by_sid(policy(template, DESCRIPTION))
    assert statements["ReadStreams"]["Resource"] == arn


@pytest.mark.parametrize("kind", ["adopted", "imported"])
def test_a_table_with_no_stream_known_is_refused_by_name(stack: cdk.Stack, kind: str) -> None:
    if kind == "adopted":
        table: dynamodb.ITable = dynamodb.Table(
            stack, "Plain", partition_key=PK, billing_mode=dynamodb.BillingMode.PROVISIONED
        )
        named = "Test/Plain (${Token["
    else:
        table = dynamodb.Table.from_table_name(stack, "Plain", "plain-table")
        named = "Test/Plain (plain-table)"
    with pytest.raises(CapacityConfigError) as info:
        CapacityRequests(stack, "Requests", tables=[table], fast_path=FastPath(stream=True))
    message = str(info.value)
    assert message.startswith(
        "CapacityRequests Test/Requests: fast_path.stream reads each table's DynamoDB stream, "
        "and table Test/Plain ("
    )
    assert named.split(" (")[0] in message
    assert "has none that this app knows: turn its stream on" in message
    assert "table_stream_arn=" in message
    if kind == "imported":
        assert "Test/Plain (plain-table) has none" in message


def test_the_reader_reads_only_the_served_streams(stack: cdk.Stack) -> None:
    orders, events = provisioned(stack), with_stream(stack)
    CapacityRequests(stack, "Requests", tables=[orders, events], fast_path=FastPath(stream=True))
    template = Template.from_stack(stack)
    statements = by_sid(policy(template, DESCRIPTION))
    read = statements["ReadStreams"]
    assert sorted(read["Action"]) == [
        "dynamodb:DescribeStream",
        "dynamodb:GetRecords",
        "dynamodb:GetShardIterator",
    ]
    arns = [stream_of(stack, orders.table), stream_of(stack, events)]
    assert sorted(map(json.dumps, read["Resource"])) == sorted(map(json.dumps, arns))
    # ListStreams has no resource-level permission, and is the one action on "*" of streams
    assert statements["ListStreams"] == {
        "Action": "dynamodb:ListStreams",
        "Effect": "Allow",
        "Resource": "*",
        "Sid": "ListStreams",
    }
    stream_actions = {
        a
        for s in statements.values()
        for a in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])
        if a.startswith("dynamodb:") and ("Stream" in a or a.endswith(("Records", "Iterator")))
    }
    assert stream_actions == {
        "dynamodb:DescribeStream",
        "dynamodb:GetRecords",
        "dynamodb:GetShardIterator",
        "dynamodb:ListStreams",
    }
    # the state store: items of its own tables only, as the signals function
    store = statements["SurgeStore"]
    assert store["Action"] == ["dynamodb:GetItem", "dynamodb:UpdateItem"]
    assert "dynamodb:LeadingKeys" in store["Condition"]["ForAllValues:StringEquals"]


def _consumer(stack: cdk.Stack, id: str) -> lambda_.Function:
    """A function of the app, to read a stream."""
    return lambda_.Function(
        stack,
        id,
        runtime=lambda_.Runtime.PYTHON_3_12,
        handler="index.handler",
        code=lambda_.Code.from_inline("def handler(e, c): pass"),
    )


def _readers_app(other_functions: int, other_stream_readers: int = 0) -> tuple[cdk.App, cdk.Stack]:
    app = cdk.App()
    stack = cdk.Stack(app, "Test")
    events = with_stream(stack)
    for n in range(other_functions):
        fn = _consumer(stack, f"Consumer{n}")
        fn.add_event_source(
            sources.DynamoEventSource(events, starting_position=lambda_.StartingPosition.LATEST)
        )
    CapacityRequests(
        stack,
        "Requests",
        tables=[events],
        fast_path=FastPath(stream=StreamSignal(other_stream_readers=other_stream_readers)),
    )
    return app, stack


def test_a_third_reader_of_a_stream_is_refused_at_synth() -> None:
    # GIVEN two functions of the app reading the table's stream already
    app, _ = _readers_app(2)
    # THEN the reader would be the third: refused, naming the table and the readers
    with pytest.raises(RuntimeError) as info:
        app.synth()
    message = str(info.value)
    assert (
        "CapacityRequests Test/Requests: fast_path.stream would be a third reader of the "
        "stream of table Test/Events: its readers are "
    ) in message
    for reader in ("Test/Consumer0/DynamoDBEventSource:TestEvents", "Test/Consumer1/"):
        assert reader in message
    assert re.search(r"Test/Requests/StreamReader/Reads\w+", message)
    assert "DynamoDB allows 2 readers per shard" in message


@pytest.mark.parametrize("written", ["attr_stream_arn", "Fn.get_att"])
def test_l1_mappings_count_however_they_name_the_stream(written: str) -> None:
    # GIVEN two L1 event source mappings on the table's stream, its ARN written as the L1
    # attribute or as Fn.get_att of the table's logical id (not the L2's reference)
    app = cdk.App()
    stack = cdk.Stack(app, "Test")
    events = with_stream(stack)
    cfn = events.node.default_child
    assert isinstance(cfn, dynamodb.CfnTable)
    arn = (
        cfn.attr_stream_arn
        if written == "attr_stream_arn"
        else cdk.Fn.get_att(cfn.logical_id, "StreamArn").to_string()
    )
    for n in range(2):
        fn = _consumer(stack, f"Consumer{n}")
        lambda_.CfnEventSourceMapping(
            stack,
            f"Mapping{n}",
            function_name=fn.function_name,
            event_source_arn=arn,
            starting_position="LATEST",
        )
    CapacityRequests(stack, "Requests", tables=[events], fast_path=FastPath(stream=StreamSignal()))
    # THEN the library's reader would be the third: refused, naming both mappings
    with pytest.raises(RuntimeError) as info:
        app.synth()
    message = str(info.value)
    assert "would be a third reader of the stream of table Test/Events" in message
    assert "Test/Mapping0" in message and "Test/Mapping1" in message


def test_readers_outside_the_app_count_too() -> None:
    app, _ = _readers_app(1, other_stream_readers=1)
    with pytest.raises(RuntimeError, match=r"and 1 outside the app \(other_stream_readers\)"):
        app.synth()


def test_a_second_reader_is_allowed() -> None:
    app, _ = _readers_app(1)
    app.synth()


def test_a_batching_window_known_at_deploy_is_taken(stack: cdk.Stack) -> None:
    """A window given as a token (a parameter's value, say) is checked by CloudFormation at
    deploy, not refused at synth."""
    seconds = cdk.CfnParameter(stack, "Seconds", type="Number").value_as_number
    stream = StreamSignal(batching_window=cdk.Duration.seconds(seconds))
    CapacityRequests(
        stack, "Requests", tables=[provisioned(stack)], fast_path=FastPath(stream=stream)
    )
    [mapping] = (
        Template.from_stack(stack).find_resources("AWS::Lambda::EventSourceMapping").values()
    )
    assert mapping["Properties"]["MaximumBatchingWindowInSeconds"] == {"Ref": "Seconds"}


@pytest.mark.parametrize(
    ("stream", "message"),
    [
        ("yes", "fast_path.stream must be True, False or a StreamSignal; got 'yes'"),
        (
            StreamSignal(batching_window=cdk.Duration.seconds(11)),
            "fast_path.stream.batching_window must be whole seconds from 0 to 10; got 11 seconds",
        ),
        (
            StreamSignal(max_record_age=cdk.Duration.seconds(30)),
            "fast_path.stream.max_record_age must be whole seconds from 60 seconds to 1 hour "
            "(a late record is worthless as a signal); got 30 seconds",
        ),
        (
            StreamSignal(max_record_age=cdk.Duration.hours(2)),
            "fast_path.stream.max_record_age must be whole seconds from 60 seconds to 1 hour "
            "(a late record is worthless as a signal); got 2 hours",
        ),
        (
            StreamSignal(max_record_age=cdk.Duration.seconds(cdk.Token.as_number(cdk.Aws.REGION))),
            "fast_path.stream.max_record_age must be whole seconds from 60 seconds to 1 hour "
            "(a late record is worthless as a signal); got a token (the CDK checks its range at "
            "synth)",
        ),
        (
            StreamSignal(batching_window=cdk.Duration.minutes(cdk.Token.as_number(cdk.Aws.REGION))),
            "fast_path.stream.batching_window: a token's amount must be given in seconds "
            "(Duration.seconds(...)), which the stream's event source can take as it is",
        ),
        (
            StreamSignal(retry_attempts=11),
            "fast_path.stream.retry_attempts must be a whole number from 0 to 10; got 11",
        ),
        (
            StreamSignal(batch_size=0),
            "fast_path.stream.batch_size must be a whole number from 1 to 10000; got 0",
        ),
        (
            StreamSignal(other_stream_readers=2),
            "fast_path.stream.other_stream_readers must be a whole number from 0 to 1; got 2",
        ),
        (
            StreamSignal(batch_size=True),
            "fast_path.stream.batch_size must be a whole number from 1 to 10000; got True",
        ),
    ],
)
def test_bad_stream_signal(stack: cdk.Stack, stream: Any, message: str) -> None:
    with pytest.raises(CapacityConfigError) as info:
        CapacityRequests(
            stack, "Requests", tables=[provisioned(stack)], fast_path=FastPath(stream=stream)
        )
    assert str(info.value) == f"CapacityRequests Test/Requests: {message}"


def test_a_batching_window_that_is_not_a_duration_is_refused(stack: cdk.Stack) -> None:
    with pytest.raises(CapacityConfigError, match=r"fast_path.stream.batching_window: got 5"):
        CapacityRequests(
            stack,
            "Requests",
            tables=[provisioned(stack)],
            fast_path=FastPath(stream=StreamSignal(batching_window=5)),  # type: ignore[arg-type]
        )


def test_every_alarm_of_the_reader_has_a_runbook_entry(stack: cdk.Stack) -> None:
    requests = CapacityRequests(
        stack, "Requests", tables=[provisioned(stack)], fast_path=FastPath(stream=True)
    )
    assert requests.stream_reader is not None
    ids = {alarm.node.id for key, alarm in requests.alarms.items() if key.startswith("Stream")}
    assert ids == {
        "StreamReaderErrorsAlarm",
        "StreamFailedAlarm",
        "StreamRecordsMalformedAlarm",
        "StreamRecordsNotServedAlarm",
        "StreamLagAlarm",
    }
    headings = re.findall(r"^### .*$", (ROOT / "docs/operations/alarms.md").read_text(), re.M)
    assert {i for i in ids if not any(f"`{i}`" in h for h in headings)} == set()
    permissions = (ROOT / "docs" / "operations" / "permissions.md").read_text()
    assert "| ReadStreams |" in permissions and "| ListStreams |" in permissions


def test_the_five_nag_packs_and_cfn_lint_pass_with_the_stream_signal(tmp_path: Path) -> None:
    # GIVEN an app under the five packs with the stream signal on a table it makes
    app = cdk.App(outdir=str(tmp_path))
    apply_nag_packs(app)
    stack = cdk.Stack(app, "Streamed")
    table = provisioned(stack)
    for pack in ("HIPAA.Security", "NIST.800.53.R5"):
        acknowledge(table.table, f"{pack}-DynamoDBInBackupPlan", "A test table of this test only.")
    CapacityRequests(stack, "Requests", tables=[table], fast_path=FastPath(stream=True))
    # THEN it synthesizes with no unacknowledged finding, and cfn-lint finds no error
    app.synth()
    report = json.loads((tmp_path / "validation-report.json").read_text())
    assert len(report["pluginReports"]) == 5
    result = subprocess.run(
        [str(Path(sys.executable).parent / "cfn-lint"), str(tmp_path / "Streamed.template.json")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode & 2 == 0, result.stdout


def test_the_reader_takes_function_options_within_its_record_age(stack: cdk.Stack) -> None:
    # GIVEN the stream signal with the reader's memory and timeout changed
    CapacityRequests(
        stack,
        "Requests",
        tables=[provisioned(stack)],
        fast_path=FastPath(stream=True),
        function_options={
            "StreamReader": FunctionOptions(memory_size=512, timeout=cdk.Duration.seconds(20))
        },
    )
    # THEN the reader runs with them
    reader = function(Template.from_stack(stack), HANDLER)
    assert (reader["MemorySize"], reader["Timeout"]) == (512, 20)


def test_a_reader_timeout_past_a_minute_is_refused(stack: cdk.Stack) -> None:
    with pytest.raises(CapacityConfigError, match=r"function_options\['StreamReader'\].*timeout"):
        CapacityRequests(
            stack,
            "Requests",
            tables=[provisioned(stack)],
            fast_path=FastPath(stream=True),
            function_options={"StreamReader": FunctionOptions(timeout=cdk.Duration.minutes(2))},
        )


def test_the_reader_alarms_take_alarm_options(stack: cdk.Stack) -> None:
    # GIVEN the lag alarm re-thresholded and the not-served alarm turned off
    requests = CapacityRequests(
        stack,
        "Requests",
        tables=[provisioned(stack)],
        fast_path=FastPath(stream=True),
        alarm_options={
            "StreamLag": AlarmOptions(threshold=60_000),
            "StreamRecordsNotServed": AlarmOptions(enabled=False),
        },
    )
    # THEN the lag alarm has the new threshold and the other is not made
    assert "StreamRecordsNotServed" not in requests.alarms
    lag = requests.alarms["StreamLag"].node.default_child
    assert stack.resolve(lag.threshold) == 60_000  # type: ignore[union-attr]
