"""Runs in: CDK app (synth time).

The props of [`ThrottleAwareScaler`][constructs_pkg.scaler.ThrottleAwareScaler] checked,
each refusal naming the prop, the value received and what is allowed; ``where`` names the
scaler (its construct path)."""

from __future__ import annotations

import math
from datetime import UTC, date, datetime, timedelta
from typing import Any

from aws_cdk import Duration

from ddb_capacity_runtime.core.errors import CapacityConfigError, shown
from ddb_capacity_runtime.core.settings import (
    MAX_LEGACY_STATE_DAYS,
    MODES,
    SETTINGS_BY_KEY,
    OverrideError,
    ScalerConfig,
)
from ddb_capacity_runtime.core.validators import is_whole

from ..common._alarms import ALARM_WINDOW_SECONDS
from ..common._props import ReservedCapacity, bool_prop, duration_prop, known_at_synth
from ._batches import CONCURRENCY_RANGE, DEFAULT_BATCH_CONCURRENCY

DEFAULT_HOT_KEY_FOR = Duration.minutes(10)
"""How long a managed table's key-range throttles last before its hot-key alarm fires, by
default (one tick where the tick is longer)."""


def tick_minutes(where: str, tick: Duration, mode: str, updating_for_ticks: int) -> int:
    """``tick``, ``mode`` and ``updating_for_ticks`` checked; returns the tick in whole
    minutes."""
    known_duration(where, "tick", tick)
    duration_prop(where, "tick", tick, Duration.seconds(0))  # the range is said below
    seconds = tick.to_seconds()
    low, high = (int(m) for m in SETTINGS_BY_KEY["tick_minutes"].range)
    if seconds % 60 or not low * 60 <= seconds <= high * 60:
        raise CapacityConfigError(
            f"{where}: tick must be whole minutes from {low} to {high}; "
            f"got {tick.to_human_string()}"
        )
    if mode not in MODES:
        raise CapacityConfigError(f"{where}: mode must be one of {', '.join(MODES)}; got {mode!r}")
    most = int(ALARM_WINDOW_SECONDS // seconds)
    if not is_whole(updating_for_ticks, 1, most):
        raise CapacityConfigError(
            f"{where}: updating_for_ticks must be a whole number of ticks from 1 to {most} "
            f"(a day at a tick of {tick.to_human_string()}); "
            f"got {shown(updating_for_ticks)}"
        )
    return int(seconds // 60)


def known_duration(where: str, name: str, value: object) -> None:
    """A scaler's Duration prop known when the app is built (`known_at_synth`)."""
    why = "the tick's schedule and the alarms' periods and windows are made from it"
    known_at_synth(where, name, value, why, "a Duration such as Duration.minutes(5)")


def checked_tag_key(where: str, tag_key: object) -> str | None:
    """``tag_key`` checked: None (no tag discovery) or a tag key of 1 to 128 characters,
    known when the app is built (the policy's condition keys are made from it)."""
    allowed = "a tag key of 1 to 128 characters"
    known_at_synth(where, "tag_key", tag_key, "the policy's condition keys name it", allowed)
    if tag_key is not None and not (isinstance(tag_key, str) and 1 <= len(tag_key) <= 128):
        raise CapacityConfigError(f"{where}: tag_key must be {allowed}; got {tag_key!r}")
    return tag_key


def checked_tag_value(where: str, tag_value: object) -> str:
    """``tag_value`` checked: a tag value of 0 to 256 characters (text: the policy's
    condition compares it with the tables' tags as text)."""
    if not (isinstance(tag_value, str) and len(tag_value) <= 256):
        raise CapacityConfigError(
            f"{where}: tag_value must be a tag value, a string of 0 to 256 characters; "
            f"got {shown(tag_value)}"
        )
    return tag_value


def checked_reserved(where: str, reserved: object) -> ReservedCapacity | None:
    """``reserved`` checked: None or a `ReservedCapacity` (which checks its units)."""
    if reserved is not None and not isinstance(reserved, ReservedCapacity):
        raise CapacityConfigError(
            f"{where}: reserved: got {shown(reserved)}; expected "
            "ReservedCapacity(read_units=..., write_units=...) or None"
        )
    return reserved


def checked_legacy_until(where: str, until: object) -> date | None:
    """``read_legacy_state_until`` checked: None, or a date from today (UTC) to
    MAX_LEGACY_STATE_DAYS ahead (an upgrade's window, never an open door)."""
    if until is None:
        return None
    today = datetime.now(UTC).date()
    last = today + timedelta(days=MAX_LEGACY_STATE_DAYS)
    if isinstance(until, datetime) or not isinstance(until, date) or not today <= until <= last:
        raise CapacityConfigError(
            f"{where}: read_legacy_state_until must be a datetime.date from today "
            f"({today}) to {MAX_LEGACY_STATE_DAYS} days ahead ({last}): 0.4's state tags "
            f"are read during an upgrade only; got {shown(until)}"
        )
    return until


def checked_sharding(
    where: str, sharded: object, above: object, per_batch: object, concurrency: object
) -> tuple[int, int, int]:
    """The sharding props checked (the Lambda checks the first two again); returns
    ``shard_above_tables``, ``tables_per_batch`` and ``batch_concurrency`` with their
    defaults."""
    bool_prop(where, "sharded", sharded)
    shard, batch = (SETTINGS_BY_KEY[k] for k in ("shard_above_tables", "tables_per_batch"))
    checks = (
        (shard.key, above, int(shard.lo), int(shard.hi), shard.default),
        (batch.key, per_batch, int(batch.lo), int(batch.hi), batch.default),
        ("batch_concurrency", concurrency, *CONCURRENCY_RANGE, DEFAULT_BATCH_CONCURRENCY),
    )
    out = []
    for name, value, low, high, default in checks:
        if value is not None and not sharded:
            raise CapacityConfigError(
                f"{where}: {name} applies to a sharded tick only; got {shown(value)} "
                "without sharded=True"
            )
        if value is not None and not is_whole(value, low, high):
            raise CapacityConfigError(
                f"{where}: {name} must be a whole number from {low:,} to {high:,}; "
                f"got {shown(value)}"
            )
        out.append(default if value is None else value)
    return out[0], out[1], out[2]


def checked_own_target(where: str, own_target: object, mode: str) -> bool:
    """``own_target`` checked: a bool, True in the autopilot mode only."""
    owned = bool_prop(where, "own_target", own_target)
    if owned and mode != "autopilot":
        raise CapacityConfigError(
            f"{where}: own_target needs mode='autopilot' (its plans set the target "
            f"value); got mode={mode!r}"
        )
    return owned


def hot_key_ticks(where: str, hot_key_for: Duration | None, tick: Duration) -> int:
    """``hot_key_for`` checked (from one ``tick`` to a day); returns it in ticks (rounded
    up). None: `DEFAULT_HOT_KEY_FOR`, or one tick where the tick is longer."""
    if hot_key_for is None:
        longer = tick.to_seconds() > DEFAULT_HOT_KEY_FOR.to_seconds()
        hot_key_for = tick if longer else DEFAULT_HOT_KEY_FOR
    known_duration(where, "hot_key_for", hot_key_for)
    duration_prop(where, "hot_key_for", hot_key_for, Duration.seconds(0))  # range: below
    seconds = hot_key_for.to_seconds()
    if not tick.to_seconds() <= seconds <= ALARM_WINDOW_SECONDS:
        raise CapacityConfigError(
            f"{where}: hot_key_for must be a Duration from one tick "
            f"({tick.to_human_string()}) to 1 day; got {hot_key_for.to_human_string()}"
        )
    return math.ceil(seconds / tick.to_seconds())


def checked_override(where: str, name: str, override: Any, table_quota: int) -> dict[str, Any]:
    """One table's ``overrides`` entry checked as the Lambda will check it (one definition:
    ScalerConfig), against the scaler's defaults; ``name`` is the table as the messages
    name it (a name known at deploy time only: the table's path, `ScalerOverrides`)."""
    try:
        config = ScalerConfig(overrides={name: override}, table_quota=table_quota)
        config.limits(name, {})
    except OverrideError as exc:
        raise CapacityConfigError(f"{where}: {exc}") from None
    return dict(override)
