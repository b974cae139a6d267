"""The stream signal's reader is never a third reader of a stream, counted over the whole
app: readers in another stack, reading the table's stream through a cross-stack reference,
count too, and a reader of another table's stream does not."""

from __future__ import annotations

import aws_cdk as cdk
import pytest
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_event_sources as sources

from constructs_pkg.fast_path._fast_path import FastPath
from constructs_pkg.fast_path._stream_signal import StreamSignal
from constructs_pkg.requests._capacity_requests import CapacityRequests
from tests.support.stream_signal_construct import with_stream


def consumer(stack: cdk.Stack, name: str, table: object) -> None:
    fn = lambda_.Function(
        stack,
        name,
        runtime=lambda_.Runtime.PYTHON_3_12,
        handler="index.handler",
        code=lambda_.Code.from_inline("def handler(e, c): pass"),
    )
    fn.add_event_source(
        sources.DynamoEventSource(table, starting_position=lambda_.StartingPosition.LATEST)  # type: ignore[arg-type]
    )


def two_stacks(readers_elsewhere: int, *, other_table: bool = False) -> cdk.App:
    """Stack Data holds the table and the library's reader; stack Consumers reads a stream
    of stack Data through cross-stack references: the table's, or another table's."""
    app = cdk.App()
    data = cdk.Stack(app, "Data")
    events = with_stream(data)
    other = with_stream(data, "Other") if other_table else events
    consumers = cdk.Stack(app, "Consumers")
    for n in range(readers_elsewhere):
        consumer(consumers, f"Consumer{n}", other)
    CapacityRequests(data, "Requests", tables=[events], fast_path=FastPath(stream=StreamSignal()))
    return app


def test_readers_in_another_stack_count() -> None:
    app = two_stacks(2)
    with pytest.raises(RuntimeError) as info:
        app.synth()
    message = str(info.value)
    assert "would be a third reader of the stream of table Data/Events" in message
    assert "Consumers/Consumer0/" in message and "Consumers/Consumer1/" in message


def test_one_reader_in_another_stack_is_allowed() -> None:
    two_stacks(1).synth()


def test_readers_of_another_tables_stream_do_not_count() -> None:
    two_stacks(2, other_table=True).synth()
