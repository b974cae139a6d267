"""Runs in: broker Lambda, CDK app (synth: the namespace, through `broker`).

The broker's Embedded Metric Format counts (``Refused``, ``HoldsDropped``, and
``RaisesWithinWarm``: the dimensions a request or a surge raised within their warm
throughput, so the raise landed at once).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from typing import Any

from ..core.names import METRICS_NAMESPACE
from ..events import emf_record, emit_metrics

NAMESPACE = METRICS_NAMESPACE
"""Where the broker's EMF counts go."""


def count(metric: str, value: int = 1) -> None:
    """One EMF record of the broker's namespace: ``metric`` is ``value``."""
    emit_metrics(emf_record(NAMESPACE, {metric: value}, time.time(), unit=None))


def count_within_warm(changes: Iterable[Mapping[str, Any]]) -> None:
    """``RaisesWithinWarm``: the dimensions among ``changes`` (result rows) raised within
    their warm throughput, each once (its scalable target's row and the table's row are
    one raise); nothing is sent when there is none."""
    warm = {(c.get("index"), c.get("dimension")) for c in changes if c.get("within_warm")}
    if warm:
        count("RaisesWithinWarm", len(warm))
