"""Runs in: scaler Lambda, CDK app (synth time: the construct checks its overrides).

One table's limits, per dimension (`Limits`): the configuration's override for the table
wins over the table's ``ddb-capacity:*`` tags, which win over the scaler's defaults
(`limits_of`); the shape of an override (`check_override`), and every bound checked, each
refusal an `OverrideError` naming the table, the dimension, the source and the value.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .errors import OverrideError
from .names import DIMENSIONS, TABLE_QUOTA_ENV, TAG_PREFIX
from .records import direct_init


@direct_init
@dataclass(frozen=True)
class Limits:
    """Bounds and target for one dimension of one table (a tick makes one per planned
    dimension: `records.direct_init`)."""

    min_capacity: int
    max_capacity: int
    target_utilization: float


def limits_of(
    table: str,
    raw: Any,
    tag_limits: Mapping[str, float],
    defaults: tuple[int, int, float],
    quota: int,
) -> dict[str, Limits]:
    """Per-dimension limits of ``table``: ``raw`` (its override in the configuration) wins
    over ``tag_limits`` (its ``ddb-capacity:*`` tags, already checked by `tags.parse_tags`),
    which win over ``defaults`` (min, max, target in percent); each capacity a whole number
    from 1 to ``quota``. Raises `OverrideError`."""
    default_min, default_max, default_target = defaults
    from_tags: dict[str, Any] = dict(tag_limits)
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
        mn, mn_from = _pick(sources, "min", default_min)
        mx, mx_from = _pick(sources, "max", default_max)
        tg, tg_from = _pick(sources, "target", default_target)
        mn = _whole(table, dim, mn_from, mn, quota)
        mx = _whole(table, dim, mx_from, mx, quota)
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


OVERRIDE_KEYS = ("min", "max", "target")


def check_override(table: str, override: object) -> None:
    """The shape of one table's override, as the construct writes it and the Lambda reads
    it: ``min``, ``max``, ``target``, and ``read`` / ``write`` objects of the same three.
    Raises `OverrideError` naming the table and the key (values are checked by
    `ScalerConfig.limits`)."""
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


def _whole(table: str, dim: str, source: str, value: Any, quota: int) -> int:
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = float("nan")
    if not number.is_integer() or not 1 <= number <= quota:
        raise OverrideError(
            f"table {table} {dim}: {source} must be a whole number of capacity "
            f"units from 1 to {quota} (the table quota, {TABLE_QUOTA_ENV}); got {value!r}"
        )
    return int(number)
