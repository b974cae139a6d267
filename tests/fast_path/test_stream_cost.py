"""The stream signal's documented cost and accuracy are the code's: the docs' tables are
computed here from ``monthly_stream_cost`` and ``core.stream.ACCURACY``, and the cost's
assumptions match the construct's."""

from __future__ import annotations

import re

import pytest

from constructs_pkg.fast_path._stream_signal import READER_MEMORY_MB
from ddb_capacity_runtime.core.stream import ACCURACY
from ddb_capacity_tools.simulator.prices import Prices
from ddb_capacity_tools.simulator.stream_cost import MEMORY_MB, monthly_stream_cost
from tests.support.shape import ROOT

PAGE = ROOT / "docs" / "guides" / "instrument.md"


def rows(heading: str) -> list[list[str]]:
    """The rows of the first table after ``heading`` on the page."""
    text = PAGE.read_text().split(heading, 1)[1]
    table = re.search(r"(\|.*\|\n)+", text)
    assert table is not None
    lines = [line for line in table.group().splitlines()[2:] if line]
    return [[cell.strip() for cell in line.strip("|").split("|")] for line in lines]


def test_the_documented_costs_are_computed() -> None:
    expected = []
    for writes in (100, 1_000, 10_000):
        one, two = monthly_stream_cost(writes), monthly_stream_cost(writes, dimensions=2)
        expected.append(
            [
                f"{writes:,}",
                str(one.shards),
                f"{one.invocations / 1e6:.1f} M",
                f"{one.lambda_requests + one.lambda_compute:.2f}",
                f"{one.store:.2f}",
                f"{one.total:.2f}",
                f"{two.store - one.store:.2f}",
            ]
        )
    assert rows("### What the stream signal costs") == expected


def test_the_documented_accuracy_is_the_codes() -> None:
    documented = {k.strip("`"): v for k, v in rows("Accuracy of the estimate")}
    assert documented == ACCURACY


def test_the_cost_assumes_the_readers_memory() -> None:
    assert MEMORY_MB == READER_MEMORY_MB


def test_a_longer_window_divides_the_invocations_and_a_full_batch_adds_them() -> None:
    one, two = monthly_stream_cost(1_000), monthly_stream_cost(1_000, batching_window=2)
    assert two.invocations == pytest.approx(one.invocations / 2)
    # 5,000 writes/s on 8 shards is 625 a shard: batches of 100 fill 6.25 times a second
    full = monthly_stream_cost(5_000, batch_size=100)
    assert full.invocations == pytest.approx(8 * 6.25 * 730 * 3600)
    # a quiet table: no invocation at all
    assert monthly_stream_cost(0).total == 0
    # and the prices are the one price table's
    dear = monthly_stream_cost(100, prices=Prices(lambda_request_million=0.40))
    assert dear.lambda_requests == pytest.approx(2 * monthly_stream_cost(100).lambda_requests)
