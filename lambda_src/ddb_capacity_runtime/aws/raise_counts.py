"""Runs in: broker Lambda, signals Lambda, stream reader Lambda, workers (the user's own jobs,
in direct mode).

The counts of a raise to holds, a request's or a surge's: ``RaisesWithinWarm`` (the
dimensions raised within their warm throughput, so the raise landed at once), and
`malformed_dropped`, which every write that leaves a dimension's malformed holds out calls.
Apart from `counts` so that the functions that only end holds (the scaler's tick) do not
carry them.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any

from ..core.holds import HeldDimension
from ..core.names import metrics_store
from ..events import count_in_lambda, log_event
from .counts import NAMESPACE, count, malformed_ids


def count_within_warm(changes: Iterable[Mapping[str, Any]]) -> None:
    """``RaisesWithinWarm``: the dimensions among ``changes`` (result rows) raised within
    their warm throughput, each once (its scalable target's row and the table's row are
    one raise); nothing is sent when there is none."""
    warm = {(c.get("index"), c.get("dimension")) for c in changes if c.get("within_warm")}
    if warm:
        count("RaisesWithinWarm", len(warm))


def malformed_dropped(state: HeldDimension | None, by: str) -> None:
    """Tell the malformed holds of ``state`` (read under its lease) that the write ``by``
    makes next leaves out (a hold outside the hold store's bounds is never a level, and
    goes): logged (``holds-dropped``, a warning) and, in a Lambda function, counted as
    ``HoldsDropped``, which ``CapacityRequests`` alarms on whichever of the library's
    functions sends it. In a process of the user's (direct mode) the log alone: an EMF
    line there is no metric, and would mix with the program's own output."""
    if state is None or not state.malformed:
        return
    log_event(
        "holds-dropped",
        level=logging.WARNING,
        table=state.table,
        index=state.index,
        dimension=state.dimension,
        malformed=malformed_ids(state),
        count=len(state.malformed),
        by=by,
    )
    count_in_lambda(NAMESPACE, "HoldsDropped", store=metrics_store())
