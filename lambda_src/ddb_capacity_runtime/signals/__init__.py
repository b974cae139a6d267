"""Runs in: workers (the user's own processes).

The client hook of the fast path: [`watch`][] hooks a boto3 Session (every DynamoDB client
it makes from then on) or one DynamoDB client, sums per table, GSI and dimension the
capacity the process consumes and the throttles it meets, and a background thread reports
them to the signals function, which raises capacity within seconds instead of waiting for
CloudWatch's minutes. It never blocks, slows or fails the caller.

Which requests it counts, what it does to them, when it reports, what it costs and what it
cannot see: docs/guides/fast-path.md#how-the-hook-counts. This module is the public face;
the work is in `parse` (what a request touched, consumed and met), `ledger` (the sums, and
when a report is due), `sender` (the Lambda invocation) and `hook` (`watch`, the
`Watcher`, its thread).
"""

from __future__ import annotations

from ..core.surge import SIGNALS_ENV
from .hook import CONSUMED, MAX_INTERVAL, MIN_INTERVAL, MODES, THROTTLES, Watcher, watch
from .ledger import CHANGE, KEEPALIVE_SECONDS, MAX_TABLES, MIN_CHANGE

__all__ = [
    "CHANGE",
    "CONSUMED",
    "KEEPALIVE_SECONDS",
    "MAX_INTERVAL",
    "MAX_TABLES",
    "MIN_CHANGE",
    "MIN_INTERVAL",
    "MODES",
    "SIGNALS_ENV",
    "THROTTLES",
    "Watcher",
    "watch",
]
