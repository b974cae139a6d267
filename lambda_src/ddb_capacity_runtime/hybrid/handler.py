"""Runs in: on-demand switch Lambda.

The switch function's entry point, invoked by EventBridge Scheduler: ``{"Action": "start",
"Table", "Window", "DurationSeconds", "MaxReadRequestUnits", "MaxWriteRequestUnits"}`` at a
window's start, ``{"Action": "end", "Table"}`` at its end, ``{"Action": "check", "Tables":
[...]}`` every few minutes, and ``{"Action": "learned", "Tables": [{...}]}`` at :55 and :00
of every hour for the tables whose windows are learned (`learning.learnings`). Each table is
its own fault domain: every refusal and failure is logged, counted (``SwitchRefused``,
``SwitchFailed``, per table and for the deployment) and fails the invocation once every
table was tried, so the alarm fires.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any

from ..aws.error_codes import describe_error
from ..core.errors import SwitchError, shown
from ..core.names import METRICS_NAMESPACE, STORE_ENV, metrics_store
from ..core.validators import is_whole
from ..events import count_in_lambda, log_event
from .held import HOLD_STORES_ENV, hold_stores
from .learning import DEFERRED, MOST_UNITS, SKIPPED, Learning, learnings
from .switcher import Switcher, Window

Step = tuple[str, Callable[[], str]]
COUNTED = {SKIPPED: "SwitchSkipped", DEFERRED: "LearningDeferred"}
"""The outcomes of a learned table's run that are counted though they are not failures."""


def _window(event: Mapping[str, Any]) -> Window:
    """A start event's window, checked (it comes through EventBridge: untrusted)."""
    name, seconds = event.get("Window"), event.get("DurationSeconds")
    reads, writes = event.get("MaxReadRequestUnits"), event.get("MaxWriteRequestUnits")
    if not (isinstance(name, str) and name and is_whole(seconds, 60, 86_400)):
        raise SwitchError(f"start event: Window {shown(name)}, DurationSeconds {shown(seconds)}")
    if not (is_whole(reads, 1, MOST_UNITS) and is_whole(writes, 1, MOST_UNITS)):
        raise SwitchError(f"start event: maximums {shown(reads)}, {shown(writes)}")
    return Window(name, seconds, reads, writes)


def _tables(event: Mapping[str, Any]) -> list[str]:
    tables = event.get("Tables") if event.get("Action") == "check" else [event.get("Table")]
    if not isinstance(tables, list) or not all(isinstance(t, str) and t for t in tables):
        raise SwitchError(f"event: tables {shown(tables)}")
    return tables


def _steps(action: str, event: Mapping[str, Any], switcher: Switcher) -> list[Step]:
    """Each table of ``event`` with what ``action`` does to it."""
    if action == "learned":
        return [_learned_step(i, lrn, switcher) for i, lrn in enumerate(learnings(event))]
    if action == "start":
        window = _window(event)
        return [(t, partial(switcher.start, t, window)) for t in _tables(event)]
    return [(t, partial(getattr(switcher, action), t)) for t in _tables(event)]


def _learned_step(i: int, learning: Learning | SwitchError, switcher: Switcher) -> Step:
    """A learned table's run; an entry that is not one fails alone (named by its place)."""
    if isinstance(learning, SwitchError):
        refusal = learning

        def refused() -> str:
            raise refusal

        return (f"learned entry {i}", refused)
    return (learning.table, partial(switcher.learned, learning))


def run(event: Mapping[str, Any], switcher: Switcher) -> dict[str, str]:
    """Carry out ``event`` on each of its tables; raise at the end when one failed."""
    action = event.get("Action") if isinstance(event, Mapping) else None
    if action not in ("start", "end", "check", "learned"):
        raise SwitchError(f"event: Action {shown(action)}; expected start, end, check or learned")
    outcomes: dict[str, str] = {}
    failed: list[str] = []
    for table, step in _steps(str(action), event, switcher):
        try:
            outcomes[table] = step()
            if outcomes[table] in COUNTED:  # not failures: counted, not alarmed
                metric = COUNTED[outcomes[table]]
                count_in_lambda(METRICS_NAMESPACE, metric, store=metrics_store(), table=table)
        except Exception as exc:
            metric = exc.metric if isinstance(exc, SwitchError) else "SwitchFailed"
            outcomes[table] = f"{metric}: {describe_error(exc)}"
            failed.append(table)
            log_event(
                "switch-failed",
                level=logging.ERROR,
                table=table,
                action=action,
                error=outcomes[table],
            )
            count_in_lambda(METRICS_NAMESPACE, metric, store=metrics_store(), table=table)
    if failed:
        raise SwitchError(f"{action}: failed for {', '.join(failed)}: {outcomes}")
    return outcomes


def lambda_handler(event: Mapping[str, Any], context: object) -> dict[str, str]:
    import boto3

    switcher = Switcher(
        boto3.client("dynamodb"),
        boto3.client("application-autoscaling"),
        os.environ[STORE_ENV],
        time.time,
        hold_stores(os.environ.get(HOLD_STORES_ENV)),
        boto3.client("cloudwatch"),
        _seconds_left(context),
    )
    return run(event, switcher)


def _seconds_left(context: object) -> Callable[[], float] | None:
    """The invocation's seconds left, from Lambda's context (None without one)."""
    left = getattr(context, "get_remaining_time_in_millis", None)
    if not callable(left):
        return None
    return lambda: float(left()) / 1000
