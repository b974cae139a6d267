"""Runs in: CDK app (synth time).

`Served`: what the fast path (and the alarms of the `CapacityRequests` it belongs to) is
made of, handed over by the ``CapacityRequests``, instead of the construct itself.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from constructs import Construct

from ..common._alarms import AlarmSet
from ..common._function_options import FunctionConfig
from ..table._table import TableCapacity


@dataclass(frozen=True)
class Served:
    """What a `CapacityRequests` hands its fast path and its alarms. ``indexes`` is the
    construct's own list, so an index it serves later (``allow_index``) is seen."""

    scope: Construct
    """The ``CapacityRequests``: the fast path's resources and the alarms are made in it
    (their construct ids, and so the template, are its own)."""
    where: str
    """``CapacityRequests <path>``, as its errors name it."""
    indexes: Sequence[tuple[dynamodb.ITable, TableCapacity | None, Sequence[str]]]
    """Each table served, the ``TableCapacity`` it was given as (None: a plain table), and
    the GSIs allowed on it beyond that table's own."""
    hold_store: dynamodb.ITable
    functions: Mapping[str, FunctionConfig]
    """Each function's settings (``Broker``, ``Restorer``, ``Signals``, ``StreamReader``)."""
    alarms: AlarmSet
    metric: Callable[..., cloudwatch.Metric]
    """Its functions' EMF count by name (`CapacityRequests.metric`)."""
    acknowledge: Callable[[iam.ManagedPolicy, str], Any]
    """The acknowledgements of a function's policy that reads ``reads`` with ``*``."""

    @property
    def tables(self) -> list[dynamodb.ITable]:
        """The tables it serves, in the order given."""
        return [table for table, _, _ in self.indexes]
