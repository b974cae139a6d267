"""Runs in: scaler Lambda, broker Lambda, signals Lambda, CDK app (synth time: the
construct checks its overrides).

One table's limits, per dimension (`Limits`): the configuration's override for the table
wins over the table's ``ddb-capacity:*`` tags, which win over the scaler's defaults
(`limits_of`); the shape of an override (`check_override`), and every bound checked, each
refusal an `OverrideError` naming the table, the dimension, the source and the value. Tags
are untrusted input, never the cause of an exception: a min or max tag that would put a
dimension's min above its max is refused for that dimension (`conflicting_tags`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
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


def within_quota(limits: Limits, quota: int, provisioned: int) -> Limits:
    """``limits`` with the max cut to ``quota`` (the dimension's own per-table quota), never
    below the min nor the capacity provisioned now: a quota read only stops raises past it,
    it never lowers a capacity."""
    top = max(quota, provisioned, limits.min_capacity)
    if limits.max_capacity <= top:
        return limits
    return Limits(limits.min_capacity, top, limits.target_utilization)


@dataclass(frozen=True)
class RefusedTag:
    """A min or max tag refused for one dimension: it would lower that limit below what the
    dimension needs (its consumption at its target utilization), or the need is unknown
    (`settings.ScalerConfig.refuse_lowering_tags`); or it would put the dimension's min
    above its max (`conflicting_tags`)."""

    key: str  # the tag's key, ``ddb-capacity:write-max``
    value: int  # the limit the tag asks for
    limit: str  # "min" or "max"


def limits_of(
    table: str,
    raw: Any,
    tag_limits: Mapping[str, float],
    defaults: tuple[int, int, float],
    quota: int,
    dimensions: Sequence[str] = DIMENSIONS,
) -> dict[str, Limits]:
    """Per-dimension limits of ``table`` (those of ``dimensions``): ``raw`` (its override in
    the configuration) wins over ``tag_limits`` (its ``ddb-capacity:*`` tags, already
    checked by `tags.parse_tags`), which win over ``defaults`` (min, max, target in
    percent); each capacity a whole number from 1 to ``quota``. Raises `OverrideError`."""
    default_min, default_max, default_target = defaults
    from_tags: dict[str, Any] = dict(tag_limits)
    check_override(table, raw)
    configured = dict(raw)
    out = {}
    for dim in dimensions:
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


def conflicting_tags(
    table: str,
    raw: Any,
    tag_limits: Mapping[str, float],
    defaults: tuple[int, int, float],
    quota: int,
    dimension: str,
) -> tuple[dict[str, float], list[RefusedTag]]:
    """The tag limits that ``dimension`` of ``table`` obeys (the arguments are `limits_of`'s),
    and the min and max tags it refuses: those that put its min above its max once merged
    with the configuration's override ``raw`` and the ``defaults`` (a ``min`` of 1500 under a
    default max of 1000, a ``max`` of 3 over a default min of 5; both refused when a min tag
    and a max tag contradict each other). The dimension then has the limits it would have
    without them. A tag the override wins over is not in play, and never refused. Raises
    `OverrideError` only for the configuration's own errors (without any tag)."""
    limits_of(table, raw, {}, defaults, quota, (dimension,))
    nested = raw.get(dimension, {})
    kept = dict(tag_limits)
    refused: list[RefusedTag] = []
    while True:
        try:
            limits_of(table, raw, kept, defaults, quota, (dimension,))
            return kept, refused
        except OverrideError:
            names = [
                (name, limit)
                for limit in ("min", "max")
                if limit not in raw and limit not in nested
                for name in [_tag_of(kept, dimension, limit)]
                if name is not None
            ]
            if not names:  # not a tag's doing (tags.parse_tags checked each value)
                raise
        for name, limit in names:
            refused.append(RefusedTag(f"{TAG_PREFIX}{name}", int(kept.pop(name)), limit))


def _tag_of(tag_limits: Mapping[str, float], dimension: str, limit: str) -> str | None:
    """The tag that sets ``dimension``'s ``limit`` (its own, else the table's), if any."""
    return next((n for n in (f"{dimension}-{limit}", limit) if n in tag_limits), None)


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
    """``value`` as a whole number of units from 1 to ``quota``: a number, or its text (a
    tag's); a bool (JSON's ``true``, which ``float`` reads as 1) is refused."""
    try:
        number = float("nan") if isinstance(value, bool) else float(value)
    except (TypeError, ValueError):
        number = float("nan")
    if not number.is_integer() or not 1 <= number <= quota:
        raise OverrideError(
            f"table {table} {dim}: {source} must be a whole number of capacity "
            f"units from 1 to {quota} (the table quota, {TABLE_QUOTA_ENV}); got {value!r}"
        )
    return int(number)
