"""The settings contract of the scaler, shared by the construct and the Lambda:
environment variables, validated, and per-table limits from configuration overrides or
table tags."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from .names import DIMENSIONS, TABLE_QUOTA, TAG_PREFIX
from .policy import PolicyConfig, autopilot_config

#: The one tick default of the Lambda, the construct and the simulator: CloudWatch delivers
#: a minute 1-3 minutes late, so a 2-minute tick acts on throttling about as soon as it is
#: visible.
DEFAULT_TICK_MINUTES = 2
#: Consumption must stay low this long before a decrease, whatever the tick.
SCALE_DOWN_MINUTES = 15
#: Newest minutes of a window CloudWatch may not have delivered yet beyond the metric lag
#: (it delivers a minute 1-3 minutes late): a tick decides on the minutes before them.
LATE_MINUTES = 2


#: The scaler's modes: ``autopilot`` (the default) and ``reactive``
#: (:func:`.policy.autopilot_config`: no chasing a burst that is over, prompt decreases).
MODES = ("reactive", "autopilot")


def scale_down_ticks(tick_minutes: int, mode: str = "reactive") -> int:
    """Ticks of low consumption before a decrease at ``tick_minutes``: SCALE_DOWN_MINUTES,
    or the autopilot's own span."""
    minutes = autopilot_config().scale_down_minutes if mode == "autopilot" else SCALE_DOWN_MINUTES
    return math.ceil(minutes / tick_minutes)


class ConfigError(ValueError):
    """The scaler's environment is not usable; the message says what to change."""


class OverrideError(ValueError):
    """One table's overrides are not usable; that table is skipped, the others go on."""


@dataclass(frozen=True)
class Limits:
    """Bounds and target for one dimension of one table."""

    min_capacity: int
    max_capacity: int
    target_utilization: float


@dataclass(frozen=True)
class RefusedTag:
    """A min or max tag refused for one dimension: it would lower that limit below what the
    dimension needs (its consumption at its target utilization), or the need is unknown."""

    key: str  # the tag's key, ``ddb-capacity:write-max``
    value: int  # the limit the tag asks for
    limit: str  # "min" or "max"


@dataclass(frozen=True)
class ScalerConfig:
    """Everything a tick needs to know besides AWS itself. Defaults are the README's."""

    tables: tuple[str, ...] = ()
    tag_key: str | None = "autoscaling_manager_enabled"
    tag_value: str = "true"
    overrides: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    default_min: int = 5
    default_max: int = 1_000
    window_minutes: int = 5
    metric_lag_minutes: int = 2
    tick_minutes: int = DEFAULT_TICK_MINUTES
    dry_run: bool = False
    namespace: str = "DynamoDBCapacity"
    policy: PolicyConfig = field(default_factory=PolicyConfig)

    @property
    def history_minutes(self) -> int:
        """Minutes of metrics a tick reads: its window, or the scale-down span if longer,
        plus LATE_MINUTES for the newest minutes CloudWatch has not delivered yet."""
        return (
            max(self.window_minutes, self.policy.scale_down_minutes, self.policy.settle_minutes)
            + LATE_MINUTES
        )

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> ScalerConfig:
        """Read ``SCALER_*`` variables; raise :class:`ConfigError` naming the bad one."""

        def number(
            name: str, default: float, lo: float, hi: float, kind: Callable[[str], float] = int
        ) -> Any:
            raw = env.get(name)
            if raw is None or raw == "":
                return default
            try:
                value = kind(raw)
            except ValueError:
                what = "whole number" if kind is int else "number"
                raise ConfigError(
                    f"{name} must be a {what} from {lo:g} to {hi:g}; got {raw!r}"
                ) from None
            if not lo <= value <= hi:
                raise ConfigError(f"{name} must be from {lo:g} to {hi:g}; got {raw!r}")
            return value

        def flag(name: str) -> bool:
            raw = env.get(name, "false").strip().lower()
            if raw not in ("true", "false", "1", "0", ""):
                raise ConfigError(f"{name} must be true or false; got {env[name]!r}")
            return raw in ("true", "1")

        tables = tuple(t.strip() for t in env.get("SCALER_TABLES", "").split(",") if t.strip())
        tag_key = env.get("SCALER_TAG_KEY", "autoscaling_manager_enabled").strip() or None
        if not tables and tag_key is None:
            raise ConfigError(
                "no tables to manage: set SCALER_TABLES (comma-separated names) "
                "or SCALER_TAG_KEY (tag discovery)"
            )
        raw_overrides = env.get("SCALER_OVERRIDES", "") or "{}"
        try:
            overrides = json.loads(raw_overrides)
        except json.JSONDecodeError as exc:
            raise ConfigError(
                f"SCALER_OVERRIDES must be a JSON object of table name to "
                f"{{min, max, target}}; got invalid JSON ({exc.msg})"
            ) from None
        if not isinstance(overrides, dict) or not all(
            isinstance(v, dict) for v in overrides.values()
        ):
            raise ConfigError(
                "SCALER_OVERRIDES must be a JSON object of table name to "
                f"{{min, max, target}}; got {raw_overrides[:200]!r}"
            )
        default_min = number("SCALER_DEFAULT_MIN", 5, 1, TABLE_QUOTA)
        default_max = number("SCALER_DEFAULT_MAX", 1_000, 1, TABLE_QUOTA)
        if default_min > default_max:
            raise ConfigError(
                f"SCALER_DEFAULT_MIN ({default_min}) must not be above "
                f"SCALER_DEFAULT_MAX ({default_max})"
            )
        target = number("SCALER_TARGET_PERCENT", 70, 20, 90, float) / 100
        buffer = number("SCALER_BUFFER_PERCENT", 20, 0, 70, float) / 100
        if target - buffer <= 0:
            raise ConfigError(
                f"SCALER_BUFFER_PERCENT ({buffer * 100:g}) must be below "
                f"SCALER_TARGET_PERCENT ({target * 100:g})"
            )
        tick = number("SCALER_TICK_MINUTES", DEFAULT_TICK_MINUTES, 1, 60)
        mode = env.get("SCALER_MODE", "autopilot") or "autopilot"
        if mode not in MODES:
            raise ConfigError(f"SCALER_MODE: got {mode!r}; expected one of {', '.join(MODES)}")
        auto = mode == "autopilot"
        hysteresis = autopilot_config().hysteresis if auto else timedelta(minutes=30)
        policy = PolicyConfig(
            autopilot=auto,
            settle_minutes=autopilot_config().settle_minutes if auto else 0,
            target_utilization=target,
            buffer=buffer,
            scale_down_minutes=tick
            * number("SCALER_SCALE_DOWN_TICKS", scale_down_ticks(tick, mode), 1, 24),
            hysteresis=timedelta(
                minutes=number(
                    "SCALER_HYSTERESIS_MINUTES", int(hysteresis.total_seconds() // 60), 0, 1440
                )
            ),
            min_step_fraction=number("SCALER_MIN_STEP_PERCENT", 20, 0, 1000, float) / 100,
            min_step_units=number("SCALER_MIN_STEP_UNITS", 1, 1, TABLE_QUOTA),
            units_per_throttled_request=number(
                "SCALER_UNITS_PER_THROTTLED_REQUEST", 1.0, 0.5, 400, float
            ),
            min_saving_fraction=number("SCALER_MIN_SAVING_PERCENT", 20, 0, 100, float) / 100,
            reserve_decreases=number("SCALER_RESERVE_DECREASES", 2, 0, 27),
            large_saving_fraction=number("SCALER_LARGE_SAVING_PERCENT", 50, 0, 100, float) / 100,
        )
        return cls(
            tables=tables,
            tag_key=tag_key,
            tag_value=env.get("SCALER_TAG_VALUE", "true"),
            overrides=overrides,
            default_min=default_min,
            default_max=default_max,
            window_minutes=number("SCALER_WINDOW_MINUTES", 5, 1, 60),
            metric_lag_minutes=number("SCALER_METRIC_LAG_MINUTES", 2, 0, 10),
            tick_minutes=tick,
            dry_run=flag("SCALER_DRY_RUN"),
            namespace=env.get("SCALER_METRICS_NAMESPACE", "DynamoDBCapacity") or "DynamoDBCapacity",
            policy=policy,
        )

    def limits(self, table: str, tag_limits: Mapping[str, float]) -> dict[str, Limits]:
        """Per-dimension limits of ``table``: configuration overrides win over the table's
        ``ddb-capacity:*`` tags (already checked by :func:`.tags.parse_tags`), which win over
        the defaults. Raises :class:`OverrideError`."""
        from_tags: dict[str, Any] = dict(tag_limits)
        raw = self.overrides.get(table, {})
        check_override(table, raw)
        configured = dict(raw)
        out = {}
        for dim in DIMENSIONS:
            nested = configured.get(dim, {})

            tag = f"tag {TAG_PREFIX}"
            sources = (
                (f"override {dim}.", nested, ""),
                ("override ", configured, ""),
                (tag, from_tags, f"{dim}-"),
                (tag, from_tags, ""),
            )
            mn, mn_from = _pick(sources, "min", self.default_min)
            mx, mx_from = _pick(sources, "max", self.default_max)
            tg, tg_from = _pick(sources, "target", self.policy.target_utilization * 100)
            mn = _whole(table, dim, mn_from, mn)
            mx = _whole(table, dim, mx_from, mx)
            try:
                target = float(tg)
            except (TypeError, ValueError):
                raise OverrideError(
                    f"table {table} {dim}: {tg_from} must be a percentage from 20 to 90; got {tg!r}"
                ) from None
            if not 20 <= target <= 90:
                raise OverrideError(
                    f"table {table} {dim}: {tg_from} must be a percentage from 20 to 90; got {tg!r}"
                )
            if mn > mx:
                raise OverrideError(f"table {table} {dim}: min ({mn}) must not be above max ({mx})")
            out[dim] = Limits(mn, mx, target / 100)
        return out

    def refuse_lowering_tags(
        self, table: str, tag_limits: Mapping[str, float], dimension: str, need: int | None
    ) -> tuple[Limits, list[RefusedTag]]:
        """The ``dimension``'s limits without the min and max tags that would lower a limit
        below ``need`` (the capacity its consumption takes at its target utilization; None:
        not known, and then no tag may lower a limit), and those tags. A tag lowers a limit
        when the limit is lower with it than without it (an override, or a per-dimension
        tag, that wins over it leaves it nothing to lower). Tags are untrusted input: one
        that would cut a dimension below its load is not obeyed."""
        kept = dict(tag_limits)
        refused: list[RefusedTag] = []
        while True:
            limits = self.limits(table, kept)[dimension]
            found = None
            for name in (f"{dimension}-max", "max", f"{dimension}-min", "min"):
                if name not in kept:
                    continue
                limit = name.rpartition("-")[2]
                try:
                    other = self.limits(table, {k: v for k, v in kept.items() if k != name})
                except OverrideError:
                    continue  # without it min > max: the tag is what keeps them sound
                value = getattr(limits, f"{limit}_capacity")
                without = getattr(other[dimension], f"{limit}_capacity")
                if value < without and (need is None or value < need):
                    found = RefusedTag(f"{TAG_PREFIX}{name}", value, limit)
                    break
            if found is None:
                return limits, refused
            refused.append(found)
            del kept[found.key[len(TAG_PREFIX) :]]


OVERRIDE_KEYS = ("min", "max", "target")


def check_override(table: str, override: object) -> None:
    """The shape of one table's override, as the construct writes it and the Lambda reads
    it: ``min``, ``max``, ``target``, and ``read`` / ``write`` objects of the same three.
    Raises :class:`OverrideError` naming the table and the key (values are checked by
    :meth:`ScalerConfig.limits`)."""
    allowed = ", ".join((*OVERRIDE_KEYS, *DIMENSIONS))
    if not isinstance(override, Mapping):
        raise OverrideError(
            f"table {table}: override must be an object of {allowed}; got {override!r}"
        )
    for key, value in override.items():
        if key in DIMENSIONS:
            if not isinstance(value, Mapping):
                raise OverrideError(
                    f"table {table}: override {key!r} must be an object; got {value!r}"
                )
            unknown = sorted(str(k) for k in value if k not in OVERRIDE_KEYS)
            if unknown:
                raise OverrideError(
                    f"table {table}: override {key}: unknown key(s) {', '.join(unknown)}; "
                    f"allowed: {', '.join(OVERRIDE_KEYS)}"
                )
        elif key not in OVERRIDE_KEYS:
            raise OverrideError(f"table {table}: override: unknown key {key!r}; allowed: {allowed}")


def _pick(
    sources: tuple[tuple[str, Mapping[str, Any], str], ...], name: str, default: Any
) -> tuple[Any, str]:
    """The first source that sets ``name`` (with its label for messages), else the default."""
    for label, source, prefix in sources:
        if prefix + name in source:
            return source[prefix + name], f"{label}{prefix}{name}"
    return default, f"default {name}"


def _whole(table: str, dim: str, source: str, value: Any) -> int:
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = float("nan")
    if not number.is_integer() or not 1 <= number <= TABLE_QUOTA:
        raise OverrideError(
            f"table {table} {dim}: {source} must be a whole number of capacity "
            f"units from 1 to {TABLE_QUOTA}; got {value!r}"
        )
    return int(number)
