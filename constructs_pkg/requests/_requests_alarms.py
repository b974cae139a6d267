"""Runs in: CDK app (synth time).

The alarms of [`CapacityRequests`][] on its own functions: its broker's failures (its
scheduled restores' among them) and its restorer's runs lost, a request timed out, holds
dropped. They are made in the scope of the
``CapacityRequests`` (`Served.alarms`: their construct ids, and so the template, are the
construct's own); ``HoldsBusy`` and the fast path's are `fast_path._signals_alarms`'.
"""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_events as events
from aws_cdk import aws_lambda as lambda_

from ..common._scheduled_function import failed_runs
from ..fast_path._served import Served
from ..fast_path._signals_alarms import busy_alarm, count_alarm, errors_alarm


def broker_alarms(served: Served, broker: lambda_.Function) -> None:
    """The broker failed; a request timed out; holds were dropped without lowering their
    table."""
    errors_alarm(
        served,
        broker,
        "BrokerErrors",
        "The capacity request broker failed (an error, not a refused request)",
        "the error in the broker function's log group; holds-restored events with a "
        "non-empty failed",
        "fix what the error names (AccessDenied on RegisterScalableTarget: tag the table's "
        "scalable targets ddb-capacity:table=<table name>); a hold not lowered stays, and "
        "the next restore tries again",
    )
    count_alarm(
        served,
        "TimedOut",
        "TimedOut",
        "A capacity request timed out: its table was not ACTIVE with the capacity asked "
        "for before the request's timeout (its hold was withdrawn, and the work it was for "
        "started without it or not at all)",
        "the request-refused warnings of kind timeout in the broker function's log group "
        "(table, reason: still busy, or the raise still in flight); describe-table "
        "(TableStatus) at that time",
        "find what kept the table busy (another update, a GSI backfill); give the request "
        "a longer timeout, or ask before the work is due",
    )
    count_alarm(
        served,
        "HoldsDropped",
        "HoldsDropped",
        "Capacity holds were dropped without lowering their table (it left the broker's "
        "tables, was deleted, went on-demand or lost its index; or a hold was outside the "
        "hold store's bounds), or a dimension's stored base was replaced, or a lease no "
        "writer could have set was taken over",
        "the holds-dropped warnings (table, dimensions, base, malformed), base-replaced and "
        "lease-taken-over in the log group of the function that dropped them (the broker's, "
        "the scaler's, the signals function's)",
        "for a table that left tables and still exists, set its minimum back to the base "
        "(register-scalable-target --min-capacity); for a malformed hold or a lease, find "
        "what else writes the hold store",
    )


def restorer_alarms(
    served: Served, broker: lambda_.Function, rule: events.Rule, every: Duration
) -> None:
    """The restorer's runs (``rule`` invoking ``broker``) were dropped or expired unrun
    (`failed_runs`; a run that fails is the broker's ``Errors``); a held table stayed not
    ACTIVE (`busy_alarm`)."""
    for alarm_id, spec in failed_runs(broker, rule, every, "capacity hold restore"):
        served.alarms.add(f"Restorer{alarm_id}", spec)
    busy_alarm(served, every)
