"""Runs in: scaler Lambda, broker Lambda, CDK app (synth), workstation (simulator).

How the settings contract's variables (`settings.SETTINGS`) are written (`Kind`) and read:
flags, numbers, lists, JSON objects and dates, each checked, each refusal naming the
variable, the value and what is allowed; and the settings that are a field of the policy
(`PolicyField`)."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date
from enum import StrEnum
from typing import Any, Protocol

from .errors import ConfigError
from .modes import Mode
from .names import DIMENSIONS
from .policy import PolicyConfig
from .validators import is_number, is_region, whole_text

_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
"""A date as the settings write it."""
FLAG_TRUE = ("true", "1")
FLAG_FALSE = ("false", "0")
"""What a flag's variable may hold (any case; empty: false)."""
MAX_REPLICA_REGIONS = 50
"""The most other Regions one global table's replica is read with."""


class Kind(StrEnum):
    """How a setting's variable is written."""

    WHOLE = "whole number"
    NUMBER = "number"
    FLAG = "flag"
    TEXT = "text"  # as given, empty included
    NAME = "name"  # empty: the default
    OPTIONAL = "optional"  # empty: None
    NAMES = "names"  # comma-separated
    WHOLES = "whole numbers"  # comma-separated, each from lo to hi; empty: none
    JSON = "json"
    MODE = "mode"
    DATE = "date"  # YYYY-MM-DD; empty: None


class Configured(Protocol):
    """A configuration with a policy (`settings.ScalerConfig`)."""

    @property
    def policy(self) -> PolicyConfig: ...


@dataclass(frozen=True)
class PolicyField:
    """A setting that is one field of the policy: the variable holds the field times
    ``scale`` (a fraction as a percentage: 0.2 is 20)."""

    name: str
    scale: float = 1

    def __call__(self, config: Configured) -> float:
        """The field of ``config`` as its variable holds it (20, not the
        20.000000000000004 of 0.2 * 100)."""
        return float(f"{getattr(config.policy, self.name) * self.scale:.12g}")

    def field_value(self, value: Any) -> Any:
        """The policy field's value for the variable's ``value``."""
        return value / self.scale if self.scale != 1 else value


def listed(raw: str | None) -> tuple[str, ...]:
    """The comma-separated items of a NAMES or WHOLES variable, each stripped; empty
    ones left out."""
    return tuple(t.strip() for t in (raw or "").split(",") if t.strip())


def overrides(name: str, raw: str) -> dict[str, Any]:
    """The overrides variable: a JSON object of table name to an object."""
    try:
        overrides = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"{name} must be a JSON object of table name to "
            f"{{min, max, target}}; got invalid JSON ({exc.msg})"
        ) from None
    if not isinstance(overrides, dict) or not all(isinstance(v, dict) for v in overrides.values()):
        raise ConfigError(
            f"{name} must be a JSON object of table name to {{min, max, target}}; got {raw[:200]!r}"
        )
    return overrides


def date_value(name: str, raw: str | None) -> date | None:
    """A date variable: YYYY-MM-DD, or empty (None)."""
    text = (raw or "").strip()
    if not text:
        return None
    try:
        if _DATE.fullmatch(text):
            return date.fromisoformat(text)
    except ValueError:
        pass  # a day or month that does not exist
    raise ConfigError(f"{name} must be a date as YYYY-MM-DD (or empty: none); got {raw!r}")


def check_owned(name: str, owned: Mapping[str, Any], mode_name: str, mode: Mode) -> None:
    """The owned targets variable ``name``: each table's ``read`` and ``write`` (and each
    index's) a target value from 20 to 90; only in the autopilot mode (its variable
    ``mode_name``), whose plans set them."""
    if owned and mode is not Mode.AUTOPILOT:
        raise ConfigError(f"{name} needs {mode_name} {Mode.AUTOPILOT}; got {mode}")
    for table, spec in owned.items():
        indexes = spec.get("indexes", {})
        scopes = [("", spec)] + (
            [(f" index {i}", v) for i, v in indexes.items()] if isinstance(indexes, dict) else []
        )
        for where, values in scopes:
            for dim in DIMENSIONS:
                value = values.get(dim) if isinstance(values, dict) else None
                if value is not None and not is_number(value, 20, 90):
                    raise ConfigError(
                        f"{name}: table {table}{where} {dim} must be a target value from 20 "
                        f"to 90; got {value!r}"
                    )
        if not isinstance(indexes, dict):
            raise ConfigError(
                f"{name}: table {table} indexes must be an object of index name to "
                f"{{read, write}}; got {indexes!r}"
            )


def check_replicas(name: str, replicas: Mapping[str, Any]) -> None:
    """The replicas variable ``name``: each global table's ``regions``, its other replicas'
    Regions (at most `MAX_REPLICA_REGIONS`, each a Region's name, none twice)."""
    for table, spec in replicas.items():
        regions = spec.get("regions")
        if not (
            isinstance(regions, list)
            and len(regions) <= MAX_REPLICA_REGIONS
            and all(is_region(r) for r in regions)
            and len(set(regions)) == len(regions)
        ):
            raise ConfigError(
                f"{name}: table {table} regions must be a list of up to {MAX_REPLICA_REGIONS} "
                f"distinct Region names (its other replicas'); got {str(regions)[:200]!r}"
            )


def flag(name: str, raw: str | None) -> bool:
    """A flag variable: true or false (any case; also 1 or 0; empty: false)."""
    text = (raw or "false").strip().lower()
    if text not in (*FLAG_TRUE, *FLAG_FALSE, ""):
        raise ConfigError(f"{name} must be true or false; got {raw!r}")
    return text in FLAG_TRUE


def wholes(name: str, raw: str | None, lo: float, hi: float) -> tuple[int, ...]:
    """A variable of comma-separated whole numbers, each from ``lo`` to ``hi``: the distinct
    numbers, in order."""
    texts = listed(raw)
    if not all(t.isascii() and t.isdigit() and lo <= int(t) <= hi for t in texts):
        raise ConfigError(
            f"{name} must be whole numbers from {lo:g} to {hi:g}, comma-separated; got {raw!r}"
        )
    return tuple(sorted({int(t) for t in texts}))


def number(name: str, raw: str, whole: bool, lo: float, hi: float, step: int) -> float:
    """A number variable (``whole``: a whole number in ASCII digits, as the construct writes
    one: no sign, ``_``, space or other script's digits, which ``int`` would take; a
    multiple of ``step``) from ``lo`` to ``hi``. No whole setting takes a negative value."""
    try:
        value = whole_text(raw, 0, math.inf) if whole else float(raw)
    except ValueError:
        value = None
    if value is None:
        kind = "whole number" if whole else "number"
        raise ConfigError(f"{name} must be a {kind} from {lo:g} to {hi:g}; got {raw!r}") from None
    if not lo <= value <= hi:
        raise ConfigError(f"{name} must be from {lo:g} to {hi:g}; got {raw!r}")
    if value % step:
        raise ConfigError(f"{name} must be a multiple of {step} from {lo:g} to {hi:g}; got {raw!r}")
    return value
