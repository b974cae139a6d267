"""Runs in: scaler Lambda, broker Lambda, CDK app (synth), workstation (simulator).

The settings contract of the scaler, shared by the construct and the Lambda: one table of
environment variables (`SETTINGS`), each declared once with its field, kind, default, range,
unit and what it does; the configuration read and written from it, validated
(`ScalerConfig`); and per-table limits from configuration overrides or table tags. The
construct's variable names and ranges, the simulator's (``ddb_capacity_tools``) and the
docs' settings table (``ddb_capacity_tools.settings_table``) are all taken from it."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, fields, replace
from datetime import UTC, date, datetime, timedelta
from typing import Any

from ..core.errors import ConfigError as ConfigError
from ..core.errors import OverrideError as OverrideError
from .modes import DEFAULT_TICK_MINUTES as DEFAULT_TICK_MINUTES
from .modes import DELIVERY_MINUTES as DELIVERY_MINUTES
from .modes import LATE_MINUTES as LATE_MINUTES
from .modes import MODES as MODES
from .modes import SCALE_DOWN_MINUTES as SCALE_DOWN_MINUTES
from .modes import Mode as Mode
from .modes import for_mode as for_mode
from .modes import late_minutes as late_minutes
from .modes import scale_down_ticks as scale_down_ticks
from .names import (
    DEFAULT_TABLE_QUOTA,
    DIMENSIONS,
    MAX_TABLE_QUOTA,
    TABLE_QUOTA_ENV,
    TAG_PREFIX,
)
from .policy import PolicyConfig
from .reservation import BLOCK_UNITS, MAX_RESERVED_UNITS, Reservation
from .setting_values import MAX_REPLICA_REGIONS as MAX_REPLICA_REGIONS
from .setting_values import Kind as Kind
from .setting_values import (
    PolicyField,
    check_owned,
    check_replicas,
    date_value,
    flag,
    listed,
    number,
    overrides,
    wholes,
)
from .table_limits import Limits, RefusedTag, conflicting_tags, limits_of

DEFAULT_SHARD_ABOVE_TABLES = 1_000
"""Above this many tables found, a tick with a batch queue is sharded: one invocation runs about
1,500 tables in a 2-minute tick at 20 ms an AWS call (2,500 took 90 s)."""
DEFAULT_TABLES_PER_BATCH = 125
"""Tables a batch of a sharded tick: 125 tables with 2 GSIs each (6 dimensions, 2 metrics a
dimension) are 1,500 metric queries, 3 full GetMetricData calls."""
MAX_TABLES_PER_BATCH = 500
"""The most: 500 names of 255 characters are 130 KB, within an SQS message's 256 KiB."""
MAX_LEGACY_STATE_DAYS = 30
"""0.4's state tags are read only until a date at most this many days ahead (an upgrade's window:
``read_legacy_state_until``); after it, and without it, they are removed unread."""


@dataclass(frozen=True)
class Setting:
    """One row of the settings contract between the construct and the Lambda: the
    environment variable ``name``, read into ``key`` (`ScalerConfig.from_env`) and
    written from a configuration by ``value_of`` (`ScalerConfig.to_env`). A number
    lies from ``lo`` to ``hi``; a ``default`` of None is the policy's for the mode and tick
    (`for_mode`)."""

    name: str
    key: str
    kind: Kind
    default: Any
    value_of: Callable[[ScalerConfig], Any]
    lo: float = 0
    hi: float = 0
    step: int = 1
    """a whole number is a multiple of this (reserved units: whole hundreds)"""

    @property
    def range(self) -> tuple[float, float]:
        """A number's lowest and highest value, both allowed."""
        return self.lo, self.hi

    def parse(self, env: Mapping[str, str]) -> Any:
        """This setting's value in ``env``, checked; raises `ConfigError`."""
        raw = env.get(self.name)
        if self.kind in (Kind.WHOLE, Kind.NUMBER):
            if raw is None or raw == "":
                return self.default
            whole = self.kind is Kind.WHOLE
            return number(self.name, raw, whole, self.lo, self.hi, self.step)
        if self.kind is Kind.FLAG:
            return flag(self.name, raw)
        if self.kind is Kind.WHOLES:
            return wholes(self.name, raw, self.lo, self.hi)
        if self.kind in (Kind.TEXT, Kind.OPTIONAL, Kind.NAMES):
            return self._text(raw)
        if self.kind is Kind.JSON:
            return overrides(self.name, raw or "{}")
        if self.kind is Kind.DATE:
            return date_value(self.name, raw)
        value = raw or self.default
        if self.kind is Kind.MODE and value not in MODES:
            raise ConfigError(f"{self.name}: got {value!r}; expected one of {', '.join(MODES)}")
        return Mode(value) if self.kind is Kind.MODE else value

    def _text(self, raw: str | None) -> str | None | tuple[str, ...]:
        """A TEXT (as given), OPTIONAL (empty: None) or NAMES (comma-separated) value."""
        if self.kind is Kind.TEXT:
            return self.default if raw is None else raw
        if self.kind is Kind.OPTIONAL:
            return (raw or "").strip() or None
        return listed(raw)

    def render(self, value: Any) -> str:
        """``value`` as this setting's variable holds it."""
        if self.kind is Kind.WHOLE:
            return str(int(value))
        if self.kind is Kind.NUMBER:
            return f"{value:g}"
        if self.kind is Kind.FLAG:
            return "true" if value else "false"
        if self.kind in (Kind.NAMES, Kind.WHOLES):
            return ",".join(map(str, value))
        if self.kind is Kind.JSON:
            return json.dumps(dict(value))
        if self.kind is Kind.DATE:
            return value.isoformat() if value else ""
        return str(value or "")


SETTINGS: tuple[Setting, ...] = (
    Setting(
        "SCALER_TAG_KEY",
        "tag_key",
        Kind.OPTIONAL,
        None,
        lambda c: c.tag_key,
    ),
    Setting(
        "SCALER_TAG_VALUE",
        "tag_value",
        Kind.TEXT,
        "true",
        lambda c: c.tag_value,
    ),
    Setting(
        "SCALER_DRY_RUN",
        "dry_run",
        Kind.FLAG,
        False,
        lambda c: c.dry_run,
    ),
    Setting(
        "SCALER_TICK_MINUTES",
        "tick_minutes",
        Kind.WHOLE,
        DEFAULT_TICK_MINUTES,
        lambda c: c.tick_minutes,
        1,
        60,
    ),
    Setting(
        "SCALER_MODE",
        "mode",
        Kind.MODE,
        Mode.AUTOPILOT,
        lambda c: c.mode,
    ),
    Setting(
        "SCALER_SCALE_DOWN_TICKS",
        "scale_down_ticks",
        Kind.WHOLE,
        None,
        lambda c: c.policy.scale_down_minutes // c.tick_minutes,
        1,
        24,
    ),
    Setting(
        "SCALER_METRICS_NAMESPACE",
        "namespace",
        Kind.NAME,
        "DynamoDBCapacity",
        lambda c: c.namespace,
    ),
    Setting(
        "SCALER_TABLES",
        "tables",
        Kind.NAMES,
        (),
        lambda c: c.tables,
    ),
    Setting(
        "SCALER_OVERRIDES",
        "overrides",
        Kind.JSON,
        {},
        lambda c: c.overrides,
    ),
    Setting(
        "SCALER_OWNED_TARGETS",
        "owned_targets",
        Kind.JSON,
        {},
        lambda c: c.owned_targets,
    ),
    Setting(
        "SCALER_REPLICAS",
        "replicas",
        Kind.JSON,
        {},
        lambda c: c.replicas,
    ),
    Setting(
        "SCALER_TUNED_TARGETS",
        "tuned_targets",
        Kind.FLAG,
        False,
        lambda c: c.tuned_targets,
    ),
    Setting(
        "SCALER_TUNED_ALLOWED",
        "tuned_allowed",
        Kind.WHOLES,
        (),
        lambda c: c.tuned_allowed,
        20,
        90,
    ),
    Setting(
        TABLE_QUOTA_ENV,
        "table_quota",
        Kind.WHOLE,
        DEFAULT_TABLE_QUOTA,
        lambda c: c.table_quota,
        1,
        MAX_TABLE_QUOTA,
    ),
    Setting(
        "SCALER_DEFAULT_MIN",
        "default_min",
        Kind.WHOLE,
        5,
        lambda c: c.default_min,
        1,
        MAX_TABLE_QUOTA,
    ),
    Setting(
        "SCALER_DEFAULT_MAX",
        "default_max",
        Kind.WHOLE,
        1_000,
        lambda c: c.default_max,
        1,
        MAX_TABLE_QUOTA,
    ),
    Setting(
        "SCALER_TARGET_PERCENT",
        "target",
        Kind.NUMBER,
        None,
        PolicyField("target_utilization", 100),
        20,
        90,
    ),
    Setting(
        "SCALER_BUFFER_PERCENT",
        "buffer",
        Kind.NUMBER,
        None,
        PolicyField("buffer", 100),
        0,
        70,
    ),
    Setting(
        "SCALER_HYSTERESIS_MINUTES",
        "hysteresis_minutes",
        Kind.WHOLE,
        None,
        lambda c: c.policy.hysteresis.total_seconds() // 60,
        0,
        1440,
    ),
    Setting(
        "SCALER_MIN_STEP_PERCENT",
        "min_step_percent",
        Kind.NUMBER,
        None,
        PolicyField("min_step_fraction", 100),
        0,
        1000,
    ),
    Setting(
        "SCALER_MIN_STEP_UNITS",
        "min_step_units",
        Kind.WHOLE,
        None,
        PolicyField("min_step_units"),
        1,
        MAX_TABLE_QUOTA,
    ),
    Setting(
        "SCALER_UNITS_PER_THROTTLED_REQUEST",
        "units_per_throttled_request",
        Kind.NUMBER,
        None,
        PolicyField("units_per_throttled_request"),
        0.5,
        400,
    ),
    Setting(
        "SCALER_MIN_SAVING_PERCENT",
        "min_saving_percent",
        Kind.NUMBER,
        None,
        PolicyField("min_saving_fraction", 100),
        0,
        100,
    ),
    Setting(
        "SCALER_RESERVE_DECREASES",
        "reserve_decreases",
        Kind.WHOLE,
        None,
        PolicyField("reserve_decreases"),
        0,
        27,
    ),
    Setting(
        "SCALER_LARGE_SAVING_PERCENT",
        "large_saving_percent",
        Kind.NUMBER,
        None,
        PolicyField("large_saving_fraction", 100),
        0,
        100,
    ),
    Setting(
        "SCALER_WINDOW_MINUTES",
        "window_minutes",
        Kind.WHOLE,
        5,
        lambda c: c.window_minutes,
        1,
        60,
    ),
    Setting(
        "SCALER_METRIC_LAG_MINUTES",
        "metric_lag_minutes",
        Kind.WHOLE,
        2,
        lambda c: c.metric_lag_minutes,
        0,
        10,
    ),
    Setting(
        "SCALER_SHARD_ABOVE_TABLES",
        "shard_above_tables",
        Kind.WHOLE,
        DEFAULT_SHARD_ABOVE_TABLES,
        lambda c: c.shard_above_tables,
        1,
        1_000_000,
    ),
    Setting(
        "SCALER_TABLES_PER_BATCH",
        "tables_per_batch",
        Kind.WHOLE,
        DEFAULT_TABLES_PER_BATCH,
        lambda c: c.tables_per_batch,
        1,
        MAX_TABLES_PER_BATCH,
    ),
    Setting(
        "SCALER_RESERVED_READ_UNITS",
        "reserved_read_units",
        Kind.WHOLE,
        0,
        lambda c: c.reserved_read_units,
        0,
        MAX_RESERVED_UNITS,
        BLOCK_UNITS,
    ),
    Setting(
        "SCALER_RESERVED_WRITE_UNITS",
        "reserved_write_units",
        Kind.WHOLE,
        0,
        lambda c: c.reserved_write_units,
        0,
        MAX_RESERVED_UNITS,
        BLOCK_UNITS,
    ),
    Setting(
        "SCALER_READ_LEGACY_STATE_UNTIL",
        "read_legacy_state_until",
        Kind.DATE,
        None,
        lambda c: c.read_legacy_state_until,
    ),
)
"""The settings contract, one row a variable, in the order the construct writes them."""
SETTINGS_BY_KEY = {s.key: s for s in SETTINGS}
CONSTRUCT_SETTINGS = (
    "tag_key",
    "tag_value",
    "dry_run",
    "tick_minutes",
    "mode",
    "scale_down_ticks",
    "namespace",
    "table_quota",
)
"""What ThrottleAwareScaler writes from its own arguments (the others keep their defaults; it writes
the tables and overrides itself, as CloudFormation joins them)."""
SHARDING_SETTINGS = ("shard_above_tables", "tables_per_batch")
"""What it writes besides with ``sharded=True``."""
TUNED_SETTINGS = ("tuned_targets", "tuned_allowed")
"""What it writes besides when a ``NightlyTuning`` tunes its owned target values."""
LEGACY_SETTINGS = ("read_legacy_state_until",)
"""What it writes besides with ``read_legacy_state_until``."""
RESERVED_SETTINGS = ("reserved_read_units", "reserved_write_units")
"""What it writes besides with ``reserved``."""


def _env(key: str) -> str:
    return SETTINGS_BY_KEY[key].name


@dataclass(frozen=True)
class Order:
    """Two settings whose values are checked together: ``low``'s must not be above
    ``high``'s (``strict``: must be below it)."""

    low: str
    high: str
    strict: bool = False

    @property
    def phrase(self) -> str:
        """How a refusal says the rule."""
        return "must be below" if self.strict else "must not be above"

    @property
    def fixed(self) -> bool:
        """Whether both settings have a default of their own (checked as soon as read; the
        others once the mode's policy has filled in the values not given)."""
        return all(SETTINGS_BY_KEY[k].default is not None for k in (self.low, self.high))

    def check(self, values: Mapping[str, Any]) -> None:
        """Refuse ``values[low]`` above ``values[high]`` (or equal, when ``strict``)."""
        lo, hi = values[self.low], values[self.high]
        if lo > hi or (self.strict and lo == hi):
            raise ConfigError(f"{_env(self.low)} ({lo:g}) {self.phrase} {_env(self.high)} ({hi:g})")


ORDERS = (
    Order("default_min", "default_max"),
    Order("default_max", "table_quota"),
    Order("buffer", "target", strict=True),
    Order("min_step_units", "table_quota"),
)
"""The settings checked against one another, in the order checked."""


def _default(key: str) -> Any:
    return SETTINGS_BY_KEY[key].default


@dataclass(frozen=True)
class ScalerConfig:
    """Everything a tick needs to know besides AWS itself. Every default is one row of
    `SETTINGS` or of `for_mode`."""

    tables: tuple[str, ...] = ()
    tag_key: str | None = None
    tag_value: str = _default("tag_value")
    overrides: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    owned_targets: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    """per table, the target values (percent) whose target-tracking policies the autopilot owns:
    ``{"read": T, "write": T, "indexes": {name: {"read": T, "write": T}}}``"""
    replicas: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    """per global table managed here (this Region's replica), ``{"regions": [...]}``: its
    other replicas' Regions, whose write metrics its write dimensions are decided on too"""
    tuned_targets: bool = _default("tuned_targets")
    """an owned dimension aims at the target value the nightly tuning loop keeps for it in the state
    store (``tuned``), where there is one, in place of its configured one"""
    tuned_allowed: tuple[int, ...] = ()
    """the target values (percent) the nightly tuning loop may set: a tuned one outside them is
    refused (the configured one is aimed at); empty: any from 20 to 90"""
    default_min: int = _default("default_min")
    default_max: int = _default("default_max")
    window_minutes: int = _default("window_minutes")
    metric_lag_minutes: int = _default("metric_lag_minutes")
    tick_minutes: int = _default("tick_minutes")
    dry_run: bool = _default("dry_run")
    namespace: str = _default("namespace")
    shard_above_tables: int = _default("shard_above_tables")
    """with a batch queue, a tick that finds more tables than this is sharded into batches"""
    tables_per_batch: int = _default("tables_per_batch")
    """the tables of one batch of a sharded tick"""
    read_legacy_state_until: date | None = None
    """the last UTC day on which 0.4's state tags are read (an upgrade's window, at most
    MAX_LEGACY_STATE_DAYS ahead); None: never read, removed unread"""
    table_quota: int = _default("table_quota")
    """the largest capacity of a table's dimension (the account's table quota): every capacity the
    scaler reads or sets is bounded by it"""
    quotas: tuple[int, int] | None = None
    """the account's per-table read and write quotas, where a tick read them: each dimension is
    raised to its own at most (`quota`); None: ``table_quota`` for both"""
    reserved_read_units: int = _default("reserved_read_units")
    reserved_write_units: int = _default("reserved_write_units")
    """the Region's reserved capacity (whole hundreds; 0: none): the tick never lowers the total
    of a dimension over the tables it decides below it (`reservation`)"""
    policy: PolicyConfig = field(default_factory=lambda: for_mode(_default("mode")))

    @property
    def reservation(self) -> Reservation:
        """The reserved units, read and write."""
        return Reservation(self.reserved_read_units, self.reserved_write_units)

    @property
    def mode(self) -> Mode:
        """The mode the policy runs in."""
        return Mode.AUTOPILOT if self.policy.autopilot else Mode.REACTIVE

    @property
    def history_minutes(self) -> int:
        """Minutes of metrics a tick reads besides the metric lag's: its window, or the
        scale-down span if longer, plus the newest minutes CloudWatch may not have delivered
        yet beyond the lag (`late_minutes`)."""
        lag, policy = self.metric_lag_minutes, self.policy
        span = max(self.window_minutes, policy.scale_down_minutes, policy.settle_minutes)
        return span + late_minutes(lag) - lag

    @property
    def arriving_minutes(self) -> int:
        """The newest minutes of a tick's window whose datapoints may still be on their way
        (`late_minutes`: the metric lag's and LATE_MINUTES, 3 at least): a dimension's minute
        among them without a datapoint of its own is unknown, not idle
        (`ddb_capacity_runtime.aws.metrics.fetch`)."""
        return late_minutes(self.metric_lag_minutes)

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> ScalerConfig:
        """Read the ``SCALER_*`` variables of `SETTINGS`; raise `ConfigError`
        naming the bad one."""
        values = {s.key: s.parse(env) for s in SETTINGS}
        if not values["tables"] and values["tag_key"] is None:
            raise ConfigError(
                f"no tables to manage: set {_env('tables')} (comma-separated names) "
                f"or {_env('tag_key')} (tag discovery)"
            )
        for order in ORDERS:
            if order.fixed:
                order.check(values)
        tick, mode = values["tick_minutes"], values["mode"]
        check_owned(_env("owned_targets"), values["owned_targets"], _env("mode"), mode)
        check_replicas(_env("replicas"), values["replicas"])
        defaults = cls(tick_minutes=tick, policy=for_mode(mode, tick))
        for setting in SETTINGS:
            if values[setting.key] is None and setting.default is None:
                value = setting.value_of(defaults)
                values[setting.key] = int(value) if setting.kind is Kind.WHOLE else value
        for order in ORDERS:
            if not order.fixed:
                order.check(values)
        policy = replace(
            for_mode(mode, tick),
            scale_down_minutes=tick * values["scale_down_ticks"],
            hysteresis=timedelta(minutes=values["hysteresis_minutes"]),
            **{
                s.value_of.name: s.value_of.field_value(values[s.key])
                for s in SETTINGS
                if isinstance(s.value_of, PolicyField)
            },
        )
        own = {f.name for f in fields(cls)}
        return cls(policy=policy, **{k: v for k, v in values.items() if k in own})

    def to_env(self, keys: Iterable[str] | None = None) -> dict[str, str]:
        """The ``SCALER_*`` variables that `from_env` reads back as this configuration:
        those of ``keys`` (`Setting.key`), in `SETTINGS`' order, or all of them.
        Raises KeyError for an unknown key."""
        wanted = None if keys is None else {SETTINGS_BY_KEY[k].key for k in keys}
        return {
            s.name: s.render(s.value_of(self))
            for s in SETTINGS
            if wanted is None or s.key in wanted
        }

    def limits(
        self, table: str, tag_limits: Mapping[str, float], dimensions: Iterable[str] = DIMENSIONS
    ) -> dict[str, Limits]:
        """Per-dimension limits of ``table`` (`table_limits.limits_of`): configuration
        overrides win over the table's ``ddb-capacity:*`` tags, which win over the
        defaults. Raises `OverrideError`."""
        defaults = (self.default_min, self.default_max, self.policy.target_utilization * 100)
        raw = self.overrides.get(table, {})
        return limits_of(table, raw, tag_limits, defaults, self.table_quota, tuple(dimensions))

    def conflicting_tags(
        self, table: str, tag_limits: Mapping[str, float], dimension: str
    ) -> tuple[dict[str, float], list[RefusedTag]]:
        """The tag limits ``dimension`` obeys, without the min and max tags that would put
        its min above its max (`table_limits.conflicting_tags`), and those tags. Raises
        `OverrideError` for the configuration's own errors only."""
        defaults = (self.default_min, self.default_max, self.policy.target_utilization * 100)
        raw = self.overrides.get(table, {})
        return conflicting_tags(table, raw, tag_limits, defaults, self.table_quota, dimension)

    def legacy_state_refused(self, now: datetime) -> str | None:
        """Why 0.4's state tags are not read on ``now``'s UTC day (removed unread); None:
        they are, within the window ``read_legacy_state_until`` opens."""
        until, today = self.read_legacy_state_until, now.astimezone(UTC).date()
        name = _env("read_legacy_state_until")
        if until is None:
            return f"0.4's state tags are read only during an upgrade's window ({name} unset)"
        if today > until:
            return f"the window for reading 0.4's state tags ended ({name} {until})"
        if until > today + timedelta(days=MAX_LEGACY_STATE_DAYS):
            return (
                f"{name} ({until}) is more than {MAX_LEGACY_STATE_DAYS} days ahead: 0.4's "
                "state tags are read only during an upgrade's window"
            )
        return None

    def configured_min(self, table: str, dimension: str) -> int | None:
        """The minimum the deployment itself states for ``table``'s ``dimension``: its
        overrides' (a ``TableCapacity``'s configured range, or the scaler's ``overrides``);
        None when they state none (a table's tags are never a source of it). Raises
        `OverrideError`."""
        raw = self.overrides.get(table, {})
        nested = raw.get(dimension, {})
        if "min" not in raw and not (isinstance(nested, Mapping) and "min" in nested):
            return None
        return self.limits(table, {})[dimension].min_capacity

    def quota(self, dimension: str) -> int:
        """The most capacity ``dimension`` (``read`` or ``write``) of a table may be given."""
        return self.table_quota if self.quotas is None else self.quotas[dimension == "write"]

    def replica_regions(self, table: str) -> tuple[str, ...]:
        """The Regions of ``table``'s other replicas (none: not a global table's replica)."""
        return tuple(self.replicas.get(table, {}).get("regions", ()))

    def owned_target(self, table: str, index: str | None, dimension: str) -> float | None:
        """The target value (a fraction) the autopilot owns for the dimension's
        target-tracking policy (`owned_targets`); None when it owns none."""
        spec = self.owned_targets.get(table)
        if spec is None:
            return None
        if index is not None:
            spec = spec.get("indexes", {}).get(index, {})
        value = spec.get(dimension)
        return None if value is None else float(value) / 100

    def refuse_lowering_tags(
        self, table: str, tag_limits: Mapping[str, float], dimension: str, need: int | None
    ) -> tuple[Limits, list[RefusedTag]]:
        """The ``dimension``'s limits without the min and max tags that would lower a limit
        below ``need`` (the capacity its consumption takes at its target utilization; None:
        not known, and then no tag may lower a limit), and those tags. A tag lowers a limit
        when the limit is lower with it than without it (an override, or a per-dimension
        tag, that wins over it leaves it nothing to lower). Tags are untrusted input: one
        that would cut a dimension below its load is not obeyed (nor, before them, those that
        would put its min above its max: `conflicting_tags`, reported where the table is
        described; a tag that one refused here hid, and that conflicts, goes with it)."""
        kept = dict(tag_limits)
        refused: list[RefusedTag] = []
        while True:
            kept, _ = self.conflicting_tags(table, kept, dimension)
            limits = self.limits(table, kept, (dimension,))[dimension]
            found = None
            for name in (f"{dimension}-max", "max", f"{dimension}-min", "min"):
                if name not in kept:
                    continue
                limit = name.rpartition("-")[2]
                # without it, a tag it hid that would put the min above the max goes too
                rest = {k: v for k, v in kept.items() if k != name}
                rest, _ = self.conflicting_tags(table, rest, dimension)
                other = self.limits(table, rest, (dimension,))
                value = getattr(limits, f"{limit}_capacity")
                without = getattr(other[dimension], f"{limit}_capacity")
                if value < without and (need is None or value < need):
                    found = RefusedTag(f"{TAG_PREFIX}{name}", value, limit)
                    break
            if found is None:
                return limits, refused
            refused.append(found)
            del kept[found.key[len(TAG_PREFIX) :]]
