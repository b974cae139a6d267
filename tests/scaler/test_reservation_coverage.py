"""The reservation floor counts only the units reserved capacity covers: single-Region
provisioned units of Standard-class tables and their GSIs. A global table's writes and a
Standard-IA table's units are neither counted as headroom nor held; a table whose class
cannot be read is not covered either, and with a reservation it is a counted failure. On
a moto server; the table class and ``Replicas``, which moto does not answer, set on
DescribeTable's answer as AWS gives them."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest

from ddb_capacity_runtime.core.reservation import not_covered
from tests.support.described import described
from tests.support.moto_world import World, idle

IA = {"TableClassSummary": {"TableClass": "STANDARD_INFREQUENT_ACCESS"}}


@pytest.fixture
def world(aws_client: Any) -> Iterator[World]:
    made = World(aws_client)
    # the other Region of a global table's replica read here as if there (this Region's
    # CloudWatch): its writes are decided on both, as a replica scaler's are
    made.clients = replace(made.clients, cloudwatch_of=lambda region: made.cw)
    yield made
    made.close()


@pytest.mark.parametrize(
    ("answer", "replica", "expected"),
    [
        ({}, False, (set(), False)),  # no TableClassSummary: Standard
        ({"TableClassSummary": {"TableClass": "STANDARD"}}, False, (set(), False)),
        ({}, True, ({"write"}, False)),
        ({"Replicas": [{"RegionName": "eu-west-1"}]}, False, ({"write"}, False)),
        ({"Replicas": "forged"}, False, ({"write"}, False)),
        ({"Replicas": []}, False, (set(), False)),
        (IA, False, ({"read", "write"}, False)),
        ({"TableClassSummary": {"TableClass": "GOLD"}}, False, ({"read", "write"}, True)),
        ({"TableClassSummary": "STANDARD"}, False, ({"read", "write"}, True)),
    ],
)
def test_what_reserved_capacity_does_not_cover(
    answer: dict[str, Any], replica: bool, expected: tuple[set[str], bool]
) -> None:
    assert not_covered({"TableName": "T", **answer}, replica) == expected


def test_a_global_tables_writes_are_not_headroom_for_a_plain_table(world: World) -> None:
    # GIVEN a replica scaler with 1,000 write units reserved, an idle global table at 2,000
    # write units (named in the scaler's replicas) and an idle plain table at 1,000
    replicated = idle(world, "global", 100, 2000)
    plain = idle(world, "plain", 100, 1000)
    replicas = json.dumps({replicated: {"regions": ["eu-west-1"]}})
    # WHEN one tick runs
    summary, lines = world.tick(SCALER_RESERVED_WRITE_UNITS="1000", SCALER_REPLICAS=replicas)
    # THEN the plain table keeps the reservation's 1,000 (the replicated writes, which no
    # reservation covers, were not counted), and the global table's writes fall, not held
    assert world.throughput(plain)[1] == 1000
    assert world.throughput(replicated)[1] < 2000
    held = [line["table"] for line in lines if line.get("event") == "held-by-reservation"]
    assert held == [plain]
    assert summary["failures"] == []


def test_a_standard_ia_table_is_neither_counted_nor_held(world: World) -> None:
    # GIVEN 1,000 write units reserved, an idle Standard-IA table at 2,000 and an idle
    # Standard one at 1,000
    infrequent = idle(world, "ia", 100, 2000)
    standard = idle(world, "std", 100, 1000)
    # WHEN one tick runs, DescribeTable saying the first's class
    with described(world.ddb, {infrequent: IA}):
        summary, _ = world.tick(SCALER_RESERVED_WRITE_UNITS="1000")
    # THEN the Standard table keeps the reservation, and the Standard-IA one falls
    assert world.throughput(standard)[1] == 1000
    assert world.throughput(infrequent)[1] < 2000
    assert summary["failures"] == []


def test_a_global_table_told_by_its_replicas_alone_is_not_counted(world: World) -> None:
    # GIVEN a table whose DescribeTable lists replicas (a global table the scaler is not
    # told of), at 2,000 writes, beside a plain one at 1,000; 1,000 reserved
    replicated = idle(world, "listed", 100, 2000)
    plain = idle(world, "plain", 100, 1000)
    listed = {"Replicas": [{"RegionName": "us-east-1"}, {"RegionName": "eu-west-1"}]}
    with described(world.ddb, {replicated: listed}):
        world.tick(SCALER_RESERVED_WRITE_UNITS="1000")
    # THEN the plain table keeps the reservation
    assert world.throughput(plain)[1] == 1000


def test_a_table_of_a_class_not_known_is_not_covered_and_fails_counted(world: World) -> None:
    # GIVEN 1,000 write units reserved, an idle table at 2,000 whose DescribeTable names a
    # class that is none of DynamoDB's, and an idle Standard one at 1,000
    odd = idle(world, "odd", 100, 2000)
    standard = idle(world, "std", 100, 1000)
    with described(world.ddb, {odd: {"TableClassSummary": {"TableClass": "GOLD"}}}):
        summary, lines = world.tick(SCALER_RESERVED_WRITE_UNITS="1000")
    # THEN its units are no headroom: the Standard table keeps the reservation
    assert world.throughput(standard)[1] == 1000
    # AND it is a failure of that table, counted in its record
    (failure,) = summary["failures"]
    assert failure["table"] == odd and "table class" in failure["reason"]
    record = next(line for line in lines if "_aws" in line and line.get("TableName") == odd)
    assert record["Failures"] == 1


def test_without_a_reservation_a_class_not_known_is_no_failure(world: World) -> None:
    odd = idle(world, "odd", 100, 200)
    with described(world.ddb, {odd: {"TableClassSummary": {"TableClass": "GOLD"}}}):
        summary, _ = world.tick()
    assert summary["failures"] == []
