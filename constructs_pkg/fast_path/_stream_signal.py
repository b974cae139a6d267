"""Runs in: CDK app (synth time).

The fast path's write signal from each served table's own DynamoDB stream
(``FastPath(stream=True)`` or ``FastPath(stream=StreamSignal(...))`` on
``CapacityRequests``): the stream reader function, one event source mapping per served
table's stream, its stream permissions, its alarms, and the checks that the stream exists
and that the reader is not a third reader of it.

A table the library makes (``ProvisionedTable``) gets its stream turned on, with
``NEW_AND_OLD_IMAGES``: the only view type whose records give the exact units of the
table and of every GSI (``ddb_capacity_runtime.core.stream.ACCURACY``); a stream costs
nothing by its view type, and Lambda's reads of it are not charged by DynamoDB. A table
it does not make must have a stream already, whose ARN is known to the app.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from aws_cdk import CfnElement, Duration, Names, Reference, Stack, Tokenization
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_pipes as pipes
from constructs import Construct, IConstruct

from ddb_capacity_runtime.core.errors import CapacityConfigError, shown
from ddb_capacity_runtime.core.validators import is_whole

from ..common._alarms import AlarmSet, AlarmSpec, says
from ..common._compliance import acknowledge
from ..common._function_options import FunctionConfig
from ..common._props import Checked, duration_prop, is_token
from ..common._runtime import runtime_function
from ..table._provisioned_table import ProvisionedTable
from ..table._table import TableCapacity

__all__ = ["MAX_STREAM_READERS", "StreamReader", "StreamSignal", "check_stream_signal"]

MAX_STREAM_READERS = 2
"""DynamoDB's readers per shard: "No more than two processes at most should be reading from the same
streams shard at the same time." """
VIEW_TYPE = dynamodb.StreamViewType.NEW_AND_OLD_IMAGES
"""The view type a table the library makes gets its stream with."""
STREAM_ACTIONS = ["dynamodb:DescribeStream", "dynamodb:GetRecords", "dynamodb:GetShardIterator"]
"""What the reader may do with the streams: read their records (Lambda's event source mapping reads
them in the function's name)."""
READER_TIMEOUT = Duration.seconds(30)
READER_MEMORY_MB = 256
LAG_ALARM_SECONDS = 30
"""The ``StreamLagAlarm`` fires when the records reach the reader this late."""
_NONE = Duration.seconds(0)
READER_LOG = "the stream reader function's log group"
"""Where the stream reader's alarms send their on-call engineer first."""
STREAM_COUNT_ALARMS = {
    "StreamFailed": (
        "The stream reader could not count a table's records, or one dimension's: the batch "
        "went by its own units alone (nothing is lowered)",
        f"the stream-failed events in {READER_LOG} (table, index, reason)",
        "as the reason says (AccessDenied, throttling, the state store missing)",
    ),
    "StreamRecordsMalformed": (
        "The stream reader met records that break its bounds (Lambda's event source mapping "
        "never sends one: something else invokes it)",
        f"the stream-refused and stream-records-malformed events in {READER_LOG}; CloudTrail "
        "Invoke of the function",
        "find what invokes the reader besides its event source mappings",
    ),
    "StreamRecordsNotServed": (
        "The stream reader got records of a table it does not serve (nothing was raised)",
        f"the stream-refused events in {READER_LOG} name the table; aws lambda "
        "list-event-source-mappings --function-name <reader function>",
        "remove the extra event source mapping, or serve the table",
    ),
}
"""The reader's EMF counts that alarm at any value (each its alarm's id and metric name):
what happened, where to look first, what to do first."""
STREAM_COUNTS = (
    *STREAM_COUNT_ALARMS,
    "StreamTtlDeletions",
    "StreamRecordsLate",
    "StreamUnitsReplayed",
    "StreamUnitsUnguarded",
)
"""Every EMF count the reader sends: those it alarms on, and those it does not."""
STREAM_ALARM_IDS = ("StreamReaderErrors", *STREAM_COUNT_ALARMS, "StreamLag")
"""The alarms the reader adds to its owner's, by stable id."""


@dataclass(frozen=True)
class StreamSignal:
    """The table's own DynamoDB stream as the fast path's write signal, with no client in
    the application: ``FastPath(stream=StreamSignal(...))``, or ``stream=True`` for these
    defaults. Each served table's stream gets an event source mapping to the stream
    reader, which starts at the newest records (``LATEST``): the signal is about now.

    :param batching_window: how long Lambda gathers a shard's records before it invokes
        the reader (0 to 10 seconds): the signal's delay, and what the reader costs
        (about one invocation per shard per window while the table is written).
        Default: 1 second.
    :param max_record_age: records older than this are dropped (60 seconds to 1 hour):
        a late record is worthless as a signal. Default: 60 seconds (Lambda's least).
    :param retry_attempts: how often a failed invocation is retried (0 to 10). The reader
        counts its own failures and never fails an invocation for them; a retry follows
        only a timeout or a broken configuration. Default: 2.
    :param batch_size: the most records an invocation takes (1 to 10,000). Default: 1,000.
    :param other_stream_readers: readers of the served tables' streams outside this app
        (another app's function, a pipe, a replication tool), for the check that the
        reader is at most the second reader of each stream; count the most any one table
        has. Default: 0.
    """

    batching_window: Duration = field(default_factory=lambda: Duration.seconds(1))
    max_record_age: Duration = field(default_factory=lambda: Duration.seconds(60))
    retry_attempts: int = 2
    batch_size: int = 1_000
    other_stream_readers: int = 0


def check_stream_signal(where: str, stream: object) -> StreamSignal | None:
    """``FastPath.stream`` checked (``where`` names the construct): a StreamSignal (True:
    the defaults), or None (False)."""
    if stream is False or stream is None:
        return None
    if stream is True:
        return StreamSignal()
    owner = "fast_path.stream"
    if not isinstance(stream, StreamSignal):
        raise CapacityConfigError(
            f"{where}: {owner} must be True, False or a StreamSignal; got {shown(stream)}"
        )
    window = duration_prop(where, f"{owner}.batching_window", stream.batching_window, _NONE)
    age = duration_prop(where, f"{owner}.max_record_age", stream.max_record_age, _NONE)
    assert window is not None and age is not None
    if is_token(window):
        try:
            window.to_seconds()
        except RuntimeError:  # the event source converts a token from seconds alone
            raise CapacityConfigError(
                f"{where}: {owner}.batching_window: a token's amount must be given in seconds "
                "(Duration.seconds(...)), which the stream's event source can take as it is"
            ) from None
    elif window.to_seconds() > 10:
        raise CapacityConfigError(
            f"{where}: {owner}.batching_window must be whole seconds from 0 to 10; got "
            f"{window.to_human_string()}"
        )
    unknown = is_token(age)
    if unknown or not 60 <= age.to_seconds() <= 3600:
        got = "a token (the CDK checks its range at synth)" if unknown else None
        raise CapacityConfigError(
            f"{where}: {owner}.max_record_age must be whole seconds from 60 seconds to 1 "
            f"hour (a late record is worthless as a signal); got {got or age.to_human_string()}"
        )
    checks = (
        ("retry_attempts", stream.retry_attempts, 0, 10),
        ("batch_size", stream.batch_size, 1, 10_000),
        ("other_stream_readers", stream.other_stream_readers, 0, MAX_STREAM_READERS - 1),
    )
    for name, value, low, high in checks:
        if not is_whole(value, low, high):
            raise CapacityConfigError(
                f"{where}: {owner}.{name} must be a whole number from {low} to {high}; got "
                f"{shown(value)}"
            )
    return stream


def stream_arn_of(where: str, table: dynamodb.ITable, owner: TableCapacity | None) -> str:
    """The ARN of ``table``'s stream: turned on (``NEW_AND_OLD_IMAGES``) where the library
    made the table and it has none; refused, naming the table, where it is not known."""
    if table.table_stream_arn is not None:
        return table.table_stream_arn
    if isinstance(owner, ProvisionedTable) and isinstance(table, dynamodb.Table):
        cfn = table.node.default_child
        assert isinstance(cfn, dynamodb.CfnTable)
        cfn.stream_specification = dynamodb.CfnTable.StreamSpecificationProperty(
            stream_view_type=VIEW_TYPE.value
        )
        return cfn.attr_stream_arn
    name = table.table_name if not is_token(table.table_name) else "(named at deploy)"
    raise CapacityConfigError(
        f"{where}: fast_path.stream reads each table's DynamoDB stream, and table "
        f"{(owner or table).node.path} ({name}) has none that this app knows: turn its "
        f"stream on (stream=StreamViewType.NEW_AND_OLD_IMAGES), or, for a table imported, "
        f"give its stream ARN (Table.from_table_attributes(..., table_stream_arn=...))"
    )


class StreamReader(Construct):
    """The stream reader function and its event source mappings, one per served table's
    stream (made by ``CapacityRequests`` with ``FastPath(stream=...)``).

    :param signal: the mappings' settings.
    :param tables: each served table, with the ``TableCapacity`` that manages it (None).
    :param environment: the function's environment (the signals function's).
    :param config: the function's settings (``function_options["StreamReader"]`` over
        its defaults).
    :param alarms: the owner's alarms, where the reader's own are added by stable id
        (``StreamReaderErrors``, ``StreamFailed``, ``StreamRecordsMalformed``,
        ``StreamRecordsNotServed``, ``StreamLag``).
    :param count: the owner's EMF count of a name (``CapacityRequests.metric``: its
        deployment's series), which the reader's count alarms watch.
    """

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        signal: StreamSignal,
        tables: Sequence[tuple[dynamodb.ITable, TableCapacity | None]],
        environment: Mapping[str, str],
        config: FunctionConfig,
        alarms: AlarmSet,
        where: str,
        count: Callable[[str], cloudwatch.Metric],
    ) -> None:
        super().__init__(scope, id)
        self._count = count
        self._where = where
        self._signal = signal
        self.streams = [
            ((owner or table).node.path, stream_arn_of(where, table, owner))
            for table, owner in tables
        ]
        """Each served table's construct path and its stream's ARN."""
        self.function, self.policy = runtime_function(
            self,
            "Function",
            handler="ddb_capacity_runtime.fast_path.stream_reader.stream_handler",
            description="DynamoDB capacity stream reader (fast path)",
            config=config,
            environment=dict(environment),
        )
        self._quiet_platform_lines()
        self.mappings = [
            self._map(path, arn, (owner or table))
            for (path, arn), (table, owner) in zip(self.streams, tables, strict=True)
        ]
        self._grant_streams()
        self._render_alarms(alarms)
        # at synth, once the whole app is built: the reader is never a third reader
        self.node.add_validation(Checked(self.readers))

    def _quiet_platform_lines(self) -> None:
        """Lambda's own start and report lines left out (``SystemLogLevel`` WARN): the
        reader runs about once a second per shard, and they would be most of its log."""
        cfn = self.function.node.default_child
        assert isinstance(cfn, lambda_.CfnFunction)
        cfn.add_property_override("LoggingConfig.SystemLogLevel", "WARN")

    def _map(self, path: str, arn: str, table: IConstruct) -> lambda_.EventSourceMapping:
        """The event source mapping of one table's stream: the newest records, a short
        batching window, a short record age and few retries."""
        signal = self._signal
        mapping = lambda_.EventSourceMapping(
            self,
            f"Reads{Names.unique_id(table)}",
            target=self.function,
            event_source_arn=arn,
            starting_position=lambda_.StartingPosition.LATEST,
            batch_size=signal.batch_size,
            max_batching_window=signal.batching_window,
            max_record_age=signal.max_record_age,
            retry_attempts=signal.retry_attempts,
            bisect_batch_on_error=False,
            parallelization_factor=1,
        )
        # Lambda checks at creation that the role may read the stream: the policy first
        mapping.node.add_dependency(self.policy)
        acknowledge(
            mapping,
            "Serverless-LambdaEventSourceMappingDestination",
            "The records are a signal about now: a batch dropped after its retries is "
            "worthless a minute later, and nothing replays it (replaying would count its "
            "writes twice). The reader's failures are counted and alarmed "
            "(StreamReaderErrorsAlarm, StreamFailedAlarm, StreamLagAlarm).",
        )
        return mapping

    def _grant_streams(self) -> None:
        """Reading the served tables' streams, and listing streams (Lambda checks it)."""
        self.policy.add_statements(
            iam.PolicyStatement(
                sid="ReadStreams",
                actions=list(STREAM_ACTIONS),
                resources=[arn for _, arn in self.streams],
            ),
            iam.PolicyStatement(
                sid="ListStreams", actions=["dynamodb:ListStreams"], resources=["*"]
            ),
        )

    def _render_alarms(self, alarms: AlarmSet) -> None:
        """The reader failed, could not count a table's records, met records that break
        the bounds or of a table not served, or reads its records late."""
        alarms.add(
            "StreamReaderErrors",
            AlarmSpec(
                self.function.metric_errors(period=Duration.minutes(5)),
                says("The capacity stream reader (fast path) failed"),
                look=f"the error in {READER_LOG}; its Duration against its timeout",
                do="fix what the error names (redeploy the stack for a configuration error)",
            ),
        )
        for alarm_id, (what, look, do) in STREAM_COUNT_ALARMS.items():
            alarms.add(alarm_id, AlarmSpec(self._count(alarm_id), says(what), look=look, do=do))
        alarms.add(
            "StreamLag",
            AlarmSpec(
                self.function.metric(
                    "IteratorAge", statistic="Maximum", period=Duration.minutes(1)
                ),
                lambda periods: (
                    f"The stream reader's records arrive {LAG_ALARM_SECONDS} seconds or "
                    f"more after their writes, {periods} minutes running: the stream signal "
                    "is late"
                ),
                look=(
                    "the stream reader's Duration, Errors and Throttles metrics, and the "
                    "account's concurrency"
                ),
                do="give the account's functions room, or a larger batching_window",
                threshold=LAG_ALARM_SECONDS * 1000,
                evaluation_periods=3,
            ),
        )

    def readers(self) -> list[str]:
        """Why the app is refused: each served table's stream whose readers (the event
        source mappings and pipes of the app, and ``other_stream_readers``) are more than
        DynamoDB allows."""
        errors = []
        found = _app_readers(self)
        others = self._signal.other_stream_readers
        for path, arn in self.streams:
            mine = found.get(_key(self, arn), [])
            if len(mine) + others > MAX_STREAM_READERS:
                outside = f", and {others} outside the app (other_stream_readers)" if others else ""
                errors.append(
                    f"{self._where}: fast_path.stream would be a third reader of the stream of "
                    f"table {path}: its readers are {', '.join(sorted(mine))}{outside}; "
                    f"DynamoDB allows {MAX_STREAM_READERS} readers per shard: remove a reader, "
                    f"or leave this table out of the stream signal"
                )
        return errors


def _key(scope: IConstruct, value: object) -> str:
    """A stream ARN, for comparing across the app: an attribute of a resource (a table's
    ``StreamArn``), however it is written (the L2 table's ``table_stream_arn``, the L1's
    ``attr_stream_arn``, ``Fn.get_att``), by the stack and logical id of the resource it
    names (the same whichever stack reads it: a cross-stack reference becomes an import in
    the reader's stack); anything else as its stack resolves it."""
    found = Tokenization.reverse(value) if is_token(value) else None
    if isinstance(found, Reference) and isinstance(found.target, CfnElement):
        target = found.target
        return (
            f"{target.stack.node.path}/{target.stack.get_logical_id(target)}#{found.display_name}"
        )
    stack = Stack.of(scope)
    resolved = stack.resolve(value)
    attribute = (
        resolved.get("Fn::GetAtt") if isinstance(resolved, dict) and len(resolved) == 1 else None
    )
    if isinstance(attribute, list) and len(attribute) == 2:
        return f"{stack.node.path}/{attribute[0]}#{attribute[1]}"
    return json.dumps(resolved, sort_keys=True)


def _app_readers(scope: IConstruct) -> dict[str, list[str]]:
    """Every reader of a stream in the app: its event source mappings and its pipes, by
    the stream ARN they read (resolved), each named by its construct path."""
    out: dict[str, list[str]] = {}
    for c in scope.node.root.node.find_all():
        if isinstance(c, lambda_.CfnEventSourceMapping):
            source: object = c.event_source_arn
        elif isinstance(c, pipes.CfnPipe):
            source = c.source
        else:
            continue
        if source is None:
            continue
        owner = c.node.scope if c.node.id == "Resource" and c.node.scope is not None else c
        out.setdefault(_key(c, source), []).append(owner.node.path)
    return out
