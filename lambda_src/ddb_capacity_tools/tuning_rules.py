"""Runs in: CDK app (``NightlyTuning``, synth time), nightly tuning Lambda.

The nightly tuning loop's settings contract and its pure decisions. The construct writes
the function's environment with `TuningSettings.to_env`, the function reads it back with
`TuningSettings.from_env`. `Bounds` is what the user allows (the target values, the
largest step a night); `step` is the one rule that moves a dimension's target value
toward a recommendation within them; `read_recommendation` reads one table's result of
the fleet report (untrusted input) as a target value, billing advice, or why there is
none. Loads nothing heavier than the standard library (and the report's own row rules).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ddb_capacity_runtime.core.ownership import HIGHEST, LOWEST
from ddb_capacity_runtime.core.validators import is_whole

from .fleet_settings import SettingsError

__all__ = [
    "FRESH_MINUTES",
    "HIGHEST",
    "LOWEST",
    "NAMESPACE",
    "Bounds",
    "Recommendation",
    "SettingsError",
    "TuningSettings",
    "read_recommendation",
    "step",
]

FRESH_MINUTES = 120
"""A run is applied up to this many minutes after its report ran."""
NAMESPACE = "DynamoDBCapacity/NightlyTuning"
"""The loop's EMF namespace."""
PREFIX = "NIGHTLY_TUNING_"
TUNED_KINDS = ("stock", "autopilot")
"""The policies whose target value the loop applies; on-demand, the hybrid and declared windows
switch the billing mode, which the loop never does: they are advice only."""
ADVICE_KINDS = ("on-demand", "hybrid", "windows")


@dataclass(frozen=True)
class Bounds:
    """The target values the loop may set (whole percentages, 20 to 90) and the most
    percentage points it moves one dimension a night (1 to 70)."""

    allowed: tuple[int, ...]
    max_step: int

    @classmethod
    def checked(cls, where: str, allowed: object, max_step: object) -> Bounds:
        """The bounds, or a `SettingsError` naming ``where``, the field, the value
        received and what is allowed."""
        values = list(allowed) if isinstance(allowed, Sequence | set | frozenset) else None
        if (
            isinstance(allowed, str)
            or not values
            or not all(is_whole(v, LOWEST, HIGHEST) for v in values)
        ):
            raise SettingsError(
                f"{where}: allowed_targets: got {str(allowed)[:120]!r}; expected one or more "
                f"whole percentages from {LOWEST} to {HIGHEST} (a set, a list or a range)"
            )
        if not is_whole(max_step, 1, HIGHEST - LOWEST):
            raise SettingsError(
                f"{where}: max_step: got {max_step!r}; expected a whole number of percentage "
                f"points from 1 to {HIGHEST - LOWEST}"
            )
        return cls(tuple(sorted(set(values))), max_step)


def step(current: float, wanted: int, bounds: Bounds) -> int | None:
    """The target value a dimension aiming at ``current`` moves to tonight for a
    recommendation of ``wanted``: the allowed value within ``max_step`` of ``current``
    nearest to ``wanted`` (of two as near, the one nearer ``current``); None when that is
    ``current`` itself or no allowed value is within the step."""
    reachable = [a for a in bounds.allowed if abs(a - current) <= bounds.max_step]
    if not reachable:
        return None
    best = min(reachable, key=lambda a: (abs(a - wanted), abs(a - current)))
    return None if abs(best - current) < 0.5 else best


@dataclass(frozen=True)
class Recommendation:
    """One table's recommendation: a ``target`` to apply, or none and ``why`` not;
    ``advice`` True for a billing mode (advice only, with its dollars); ``malformed``
    True when the result could not be read (counted: unknown data changes nothing)."""

    policy: str | None
    target: int | None
    why: str
    usd_per_month: float | None = None
    usd_per_month_current: float | None = None
    advice: bool = False
    malformed: bool = False


def read_recommendation(doc: object, table: str) -> Recommendation:
    """A table's result (``runs/<run>/tables/<table>.json``, untrusted) read as the
    fleet report reads it (`fleet.rows_of`: its figures checked, a result not shaped as
    ``advise`` writes it is a failed row), then its policy parsed."""
    from .fleet import rows_of
    from .simulator.candidates import suffixes
    from .simulator.policies import PolicyError, parse

    if not isinstance(doc, Mapping) or doc.get("table") != table:
        return Recommendation(None, None, "the result is not this table's", malformed=True)
    (row,) = rows_of([doc])
    if row.status != "advised":
        # a table the advisor could not advise is its failure (it counts it); a result
        # the report refuses is unreadable here
        broken = doc.get("status") != "failed"
        return Recommendation(None, None, f"not advised: {row.reason}", malformed=broken)
    money: dict[str, Any] = {
        "usd_per_month": row.usd_per_month_recommended,
        "usd_per_month_current": row.usd_per_month_current,
    }
    policy, features = suffixes(str(row.recommended))
    try:
        spec = parse(policy, option="recommended")
    except PolicyError as exc:
        return Recommendation(row.recommended, None, str(exc)[:300], malformed=True, **money)
    if features:  # simulated with a feature the loop never deploys: its target alone is not it
        why = (
            f"{row.recommended} was simulated with {' and '.join(sorted(features))} (a "
            "pre-warmed table, the table's stream as a signal), which the loop never sets "
            "up: its target value alone is not what was simulated, so none is applied"
        )
        return Recommendation(str(row.recommended), None, why, **money)
    if spec.kind in ADVICE_KINDS:
        why = f"{spec.text} switches the billing mode: advice only, never applied"
        return Recommendation(spec.text, None, why, advice=True, **money)
    if spec.kind not in TUNED_KINDS or spec.value is None:
        why = f"{spec.text} names no target value to apply"
        return Recommendation(spec.text, None, why, **money)
    return Recommendation(spec.text, spec.value, row.reason, **money)


@dataclass(frozen=True)
class TuningSettings:
    """``bucket``: the advisor's report bucket; ``store``: the scaler's state store;
    ``owned``: the scaler's owned target values (``SCALER_OWNED_TARGETS``: the tables
    and dimensions the loop may tune, and their configured target values);
    ``allowed`` and ``max_step``: the `Bounds`; ``dry_run``: compute and log, change
    nothing; ``report_delay_minutes``: the advisor's (a run older than that plus
    `FRESH_MINUTES` is not applied)."""

    bucket: str
    store: str
    owned: Mapping[str, Any]
    bounds: Bounds
    dry_run: bool = False
    report_delay_minutes: int = 180

    def to_env(self) -> dict[str, str]:
        return {
            f"{PREFIX}BUCKET": self.bucket,
            f"{PREFIX}STORE": self.store,
            f"{PREFIX}OWNED": json.dumps(self.owned),
            f"{PREFIX}ALLOWED": ",".join(str(a) for a in self.bounds.allowed),
            f"{PREFIX}MAX_STEP": str(self.bounds.max_step),
            f"{PREFIX}DRY_RUN": "true" if self.dry_run else "false",
            f"{PREFIX}REPORT_DELAY_MINUTES": str(self.report_delay_minutes),
        }

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> TuningSettings:
        def get(name: str) -> str:
            if f"{PREFIX}{name}" not in env:
                raise SettingsError(f"{PREFIX}{name} is not set")
            return env[f"{PREFIX}{name}"]

        allowed = [a.strip() for a in get("ALLOWED").split(",")]
        numbers = {"MAX_STEP": get("MAX_STEP"), "REPORT_DELAY_MINUTES": get("REPORT_DELAY_MINUTES")}
        for name, text in [*numbers.items(), *(("ALLOWED", a) for a in allowed)]:
            if not (text.isascii() and text.isdigit() and len(text) < 6):
                raise SettingsError(f"{PREFIX}{name}: got {text!r}; expected a whole number")
        try:
            owned = json.loads(get("OWNED"))
        except ValueError:
            owned = None
        if not isinstance(owned, dict):
            raise SettingsError(f"{PREFIX}OWNED: expected a JSON object of table name to targets")
        if get("DRY_RUN") not in ("true", "false"):
            raise SettingsError(f"{PREFIX}DRY_RUN: got {get('DRY_RUN')!r}; expected true or false")
        return cls(
            get("BUCKET"),
            get("STORE"),
            owned,
            Bounds.checked(PREFIX + "ALLOWED", [int(a) for a in allowed], int(numbers["MAX_STEP"])),
            get("DRY_RUN") == "true",
            int(numbers["REPORT_DELAY_MINUTES"]),
        )
