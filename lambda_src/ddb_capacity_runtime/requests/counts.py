"""Runs in: broker Lambda, CDK app (synth: the namespace, through `broker`).

The broker's Embedded Metric Format counts (``Refused``, ``HoldsDropped``).
"""

from __future__ import annotations

import time

from ..events import emf_record, emit_metrics

#: Where the broker's EMF counts go.
NAMESPACE = "DynamoDBCapacity"


def count(metric: str, value: int = 1) -> None:
    """One EMF record of the broker's namespace: ``metric`` is ``value``."""
    emit_metrics(emf_record(NAMESPACE, {metric: value}, time.time(), unit=None))
