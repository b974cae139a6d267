"""Runs in: CDK app (synth time).

The props of [`ThrottleAwareScaler`][constructs_pkg.scaler.ThrottleAwareScaler] checked,
each refusal naming the prop, the value received and what is allowed; ``where`` names the
scaler (its construct path)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import TYPE_CHECKING, Any

from aws_cdk import Duration

from ddb_capacity_runtime.core.errors import CapacityConfigError, shown
from ddb_capacity_runtime.core.settings import (
    DEFAULT_TICK_MINUTES,
    MAX_LEGACY_STATE_DAYS,
    MODES,
    SETTINGS_BY_KEY,
    OverrideError,
    ScalerConfig,
)
from ddb_capacity_runtime.core.validators import is_whole

from ..common._alarms import ALARM_WINDOW_SECONDS
from ..common._props import ReservedCapacity, bool_prop, duration_prop, known_at_synth
from ..table._capacity import DEFAULT_TABLE_QUOTA
from ._batches import CONCURRENCY_RANGE, DEFAULT_BATCH_CONCURRENCY

if TYPE_CHECKING:
    from aws_cdk import aws_dynamodb as dynamodb
    from aws_cdk import aws_sns as sns

    from ..common._alarms import AlarmOptions
    from ..common._function_options import FunctionOptions
    from ..global_tables._replica import Replica, ReplicaSource
    from ..table._table import TableCapacity

DEFAULT_TICK = Duration.minutes(DEFAULT_TICK_MINUTES)
"""Default tick: CloudWatch delivers a minute 1-3 minutes late; ticking every 2 minutes acts on
throttling about as soon as it is visible, at half the 5-minute delay of the 2019 Lambda article."""
DEFAULT_PINNED_FOR = Duration.minutes(30)
DEFAULT_THROTTLED_FOR = Duration.minutes(10)
DEFAULT_UPDATING_TICKS = 5
"""Ticks in a row that find a table UPDATING before it alarms: 10 minutes at the default tick,
longer than an UpdateTable of capacity takes ("several minutes")."""
DEFAULT_HOT_KEY_FOR = Duration.minutes(10)
"""How long a managed table's key-range throttles last before its hot-key alarm fires, by
default (one tick where the tick is longer)."""


ScalerTables = Sequence["dynamodb.ITable | TableCapacity | ReplicaSource | Replica"]
"""What a scaler's ``tables`` lists."""


@dataclass(frozen=True, kw_only=True)
class ScalerProps:
    """`ThrottleAwareScaler`'s props, each with its default: the keyword arguments of
    `ThrottleAwareScaler`, which takes them as they are (and checks them)."""

    tables: ScalerTables = ()
    """Tables to manage explicitly (``ProvisionedTable`` or any ``ITable``), as a list.
    Default: none."""

    tag_key: str | None = None
    """Also manage every table carrying the tag ``tag_key=tag_value``. Default: no tag
    discovery. Permissions for discovered tables are scoped by the tag (ABAC)."""

    tag_value: str = "true"
    """The value of that tag. Default: ``"true"``."""

    overrides: Mapping[str, Mapping[str, Any]] | None = None
    """Per-table ``{"min", "max", "target", "read": {...}, "write": {...}}``, keyed by table
    name (or a table's ``table_name``), each checked at synth as the Lambda checks it. For
    tables without ranges of their own: a ``ProvisionedTable``'s (a ``TableCapacity``'s, a
    global table replica's) are its ``Capacity``, which its scalable targets hold and a tick
    reads there, so an override naming one is refused."""

    tick: Duration = DEFAULT_TICK
    """How often it runs. Default: 2 minutes (docs: Scaler, why)."""

    dry_run: bool = False
    """Decide and log, change nothing. Default: False."""

    mode: str = "autopilot"
    """``"autopilot"`` (default) or ``"reactive"``. The autopilot sizes raises by the newest
    minutes only (no chasing a burst that is over), decreases promptly after a burst, and
    forecasts recurring load once an hour per table, planned per 5 minutes and kept in the
    state store, raising the minimum ahead of a known peak and holding it until the peak is
    over (docs: Autopilot). ``"reactive"`` is 0.3's policy."""

    alarm_topic: sns.ITopic | None = None
    """Where the alarms go. Default: None, each alarm opens an OpsItem in OpsCenter (no
    topic or key deployed); pass a topic (an `AlarmTopic`'s, say) to be notified."""

    topic: sns.ITopic | None = None
    """The earlier name of ``alarm_topic`` (a warning at synth)."""

    pinned_at_max_for: Duration = DEFAULT_PINNED_FOR
    """Alarm when a table sits at its max this long. Default 30 min."""

    throttled_for: Duration = DEFAULT_THROTTLED_FOR
    """Alarm when a managed table is throttled this long. Default 10 min."""

    updating_for_ticks: int = DEFAULT_UPDATING_TICKS
    """Alarm when a managed table is found UPDATING (and so skipped), or its raises are left
    for the next tick (``retry-next-tick``), by this many ticks in a row: a whole number
    from 1 to a day's ticks. Default 5."""

    hot_key_for: Duration | None = None
    """Alarm when a managed table's requests are throttled by a hot key (key-range throttles,
    which capacity cannot fix and the scaler never raises for) in every tick for this long:
    from one tick to a day. Default 10 minutes, or one tick where the tick is longer. One
    alarm per managed table; its description points to CloudWatch Contributor Insights in
    its throttled-keys mode, which names the keys (docs: Hot keys)."""

    own_target: bool = False
    """The autopilot also owns target tracking's target value of each ``ProvisionedTable`` it
    manages (table and GSIs): while a plan's floor is in force it sets the dimension's
    target-tracking policy to the plan's aim (up to 90 %, as high as the forecast's error
    allows), and back to the ``Capacity``'s ``target_utilization_percent`` after, so target
    tracking scales in as far as the forecast allows. Autopilot mode only. CloudFormation
    keeps the configured value, so drift detection reports the policy while a plan is in
    force (docs: Autopilot, "Owning the target value"). Default False."""

    sharded: bool = False
    """Deploy the batch path of a sharded tick: an SQS queue (child ``BatchQueue``) and a batch
    function (child ``BatchFunction``) with its alarms. A tick that finds more than
    ``shard_above_tables`` tables then sends them in batches to the queue, and the batch
    function ticks each batch on its own, before the next tick (docs: Fleet scale). Default
    False: one invocation ticks every table (about 1,500 within a 2-minute tick); above
    ``shard_above_tables`` it logs ``shard-advised``."""

    shard_above_tables: int | None = None
    """With ``sharded``, the table count above which a tick is sharded, from 1 to 1,000,000.
    Default 1,000."""

    tables_per_batch: int | None = None
    """With ``sharded``, tables in a batch, from 1 to 500. Default 125 (with 2 GSIs each, 1,500
    metric queries: 3 full GetMetricData calls)."""

    batch_concurrency: int | None = None
    """With ``sharded``, batches ticked at once (the event source's maximum concurrency, and
    the batch function's reserved concurrency, which must leave the account 100 unreserved),
    from 2 to 1,000. Default 10."""

    read_legacy_state_until: date | None = None
    """An upgrade from 0.4 only: the last UTC day (a ``datetime.date``, from today to 30 days
    ahead) on which the scaler reads 0.4's state tags (``ddb-capacity:base-min:*``, the
    minimum it held raised) on a table it sees for the first time, and moves them into the
    state store; a remembered minimum is never moved below the dimension's configured one
    (its ``overrides`` min, a ``ProvisionedTable``'s range, else the target's minimum now).
    Default: never read: such tags are removed unread and counted as ignored (docs: Scaler,
    "Upgrading from 0.4")."""

    table_quota: int = DEFAULT_TABLE_QUOTA
    """The account's per-table capacity quota, in capacity units: the largest capacity the
    scaler reads, remembers or sets for one dimension (a minimum, a maximum, an override),
    from 1 to 1,000,000. Default: 40,000 (DynamoDB's default quota). Each tick also reads
    the account's quota (DescribeLimits) and uses it where it is larger; a smaller one never
    lowers this. The overrides and ranges checked at synth are bounded by this value, so
    raise it to declare capacities above 40,000."""

    reserved: ReservedCapacity | None = None
    """The Region's reserved capacity (`ReservedCapacity`): the scaler then never lowers the
    provisioned total of the tables it manages (per dimension, tables and GSIs) below the
    reserved units: a decrease that would is cut back to the reservation, or not made;
    raises are never limited. A table whose capacity is not known that tick counts 0, so
    fewer decreases happen, never more. A sharded tick's batch keeps its own tables' total
    at or above the whole reservation. It does not see reserved units used by tables it does
    not manage (docs: Scaler, "Reserved capacity"). Default: None (no reservation)."""

    alarm_options: Mapping[str, AlarmOptions] | None = None
    """Per alarm id (``"Errors"``, ``"DeadLetters"``, ``"NotRunning"``, ``"BatchErrors"``,
    ``"BatchesLate"``, ``"BadTargets"``, ``"RefusedTags"``, ``"IgnoredTags"``,
    ``"HoldsDropped"`` (while it keeps its own state store, or one whose owner does not
    alarm on it), ``"TargetNotOwned"`` (with ``own_target``), ``"PinnedAtMax"``,
    ``"Updating"``, ``"PlansNotKept"`` (in autopilot, not a dry run),
    ``"SustainedThrottling"`` and ``"HotKey"``, the last two for every managed table), an
    ``AlarmOptions``: off, another threshold or evaluation periods, more actions. Default:
    every alarm as documented (docs: Alarms). The alarms made are `alarms`."""

    function_options: Mapping[str, FunctionOptions] | None = None
    """``{"Scaler": FunctionOptions(...)}``: the memory, timeout (1 to 15 minutes), log
    retention and architecture of the scaler's function (and of a sharded tick's batch
    function), merged over the defaults. Default: 256 MB, 3 minutes, one year, ARM_64."""


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
