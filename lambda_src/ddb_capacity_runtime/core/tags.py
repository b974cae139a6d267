"""Runs in: scaler Lambda, broker Lambda, workers (the user's own jobs, in direct mode).

The library's table tags, parsed in one place.

Tags are untrusted input: anyone allowed to tag a table can write them. Every value is
checked against bounds here, and a tag that fails is ignored (and reported), never obeyed
and never the cause of an exception:

- limits: ``ddb-capacity:min``, ``:max``, ``:target`` and per dimension ``:read-min``,
  ``:write-max`` and so on; capacities are whole numbers from 1 to the table quota, targets
  percentages from 20 to 90, written in ASCII digits (``0``-``9``: ``str.isdigit`` and
  ``int`` also take other scripts' digits, such as ``١٢``, and superscripts). A min or max
  within bounds is still refused, dimension by dimension, where it would lower a limit
  below what the dimension consumes (`settings.ScalerConfig.refuse_lowering_tags`), or put
  its min above its max (`table_limits.conflicting_tags`);
- 0.4's state tags, read once when a tick first sees the table and moved into the state
  store (`ddb_capacity_runtime.aws.store`), then removed: the memory of a raised
  minimum, ``ddb-capacity:base-min:<table|index/NAME>:<read|write>`` = ``<base>:<set>``,
  both from 1 to the table quota (a plain ``<base>`` is read with no ``set``), and the
  autopilot's plan, ``ddb-capacity:forecast:<table|index/NAME>:<read|write>`` (checked by
  `floorplan.parse_plan`, only removed: plans are made anew each hour);
- tags the constructs write at deploy time, which the scaler knows and does not read
  (`CONSTRUCT_TAGS`): ``ddb-capacity:prewarm`` on a table with a high-water mark, and
  ``ddb-capacity:table``, which belongs on scalable targets (it lets the library's roles move
  them); on a table they are skipped, never counted as ignored;
- other keys under the prefix that the library does not know are ignored (all run-time
  state lives in the state store, `ddb_capacity_runtime.aws.store`, not in tags).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from .floorplan import MAX_RESERVE, PLAN_STEPS, FloorPlan, parse_plan
from .names import BASE_MIN_TAG, DEFAULT_TABLE_QUOTA, FORECAST_TAG, TAG_PREFIX, TARGET_TAG
from .validators import is_number, is_whole

LIMIT_NAMES = frozenset(
    f"{prefix}{name}" for prefix in ("", "read-", "write-") for name in ("min", "max", "target")
)
PREWARM_TAG = f"{TAG_PREFIX}prewarm"
"""Set by the constructs on a table with a high-water mark; its value is the PrewarmMethod."""
CONSTRUCT_TAGS = frozenset({PREWARM_TAG, TARGET_TAG})
"""Every tag key the constructs write (tests/test_scaler_construct.py checks a synthesized template
against it): known to the library, not read by the scaler."""
SHOWN = 200
"""How much of a bad value a message shows."""
_SCOPE = re.compile(r"(table|index/(?P<index>[A-Za-z0-9_.\-]{3,255})):(?P<dim>read|write)")


@dataclass(frozen=True)
class BaseMin:
    """The scaler's memory of one raised minimum: the base it replaced, the one it set."""

    base: int
    set_to: int | None = None


@dataclass(frozen=True)
class IgnoredTag:
    """A tag (or stored item) ignored: its key, its value and why."""

    key: str
    value: str
    reason: str


@dataclass(frozen=True)
class TableTags:
    """What a table's tags say, every value within bounds."""

    limits: dict[str, float] = field(default_factory=dict)  # "min", "read-max", "target", ...
    base_mins: dict[tuple[str | None, str], BaseMin] = field(default_factory=dict)
    plans: dict[tuple[str | None, str], FloorPlan] = field(default_factory=dict)
    ignored: list[IgnoredTag] = field(default_factory=list)


_WHOLE = re.compile(r"[ \t]*[0-9]{1,9}[ \t]*")
"""A whole number in ASCII digits, and a decimal one; ASCII white space around is allowed."""
_DECIMAL = re.compile(r"[ \t]*[0-9]{1,9}(?:\.[0-9]{1,9})?[ \t]*")


def whole_units(raw: object, quota: int = DEFAULT_TABLE_QUOTA) -> int | None:
    """``raw`` as a whole number of capacity units from 1 to ``quota``, else None."""
    if is_whole(raw, 1, quota):
        return raw
    if not isinstance(raw, str) or not _WHOLE.fullmatch(raw):
        return None
    value = int(raw)
    return value if 1 <= value <= quota else None


def percent(raw: object) -> float | None:
    """``raw`` as a target utilization percentage from 20 to 90, else None. A string must
    be a decimal number in ASCII digits (``float`` would also take ``7_0``, ``inf`` and
    other scripts' digits)."""
    if isinstance(raw, str):
        if not _DECIMAL.fullmatch(raw):
            return None
        raw = float(raw)
    return float(raw) if is_number(raw, 20, 90) else None


def parse_base_min(raw: str, quota: int = DEFAULT_TABLE_QUOTA) -> BaseMin | None:
    base, sep, set_to = raw.partition(":")
    parsed = whole_units(base, quota)
    if parsed is None:
        return None
    if not sep:
        return BaseMin(parsed)
    set_units = whole_units(set_to, quota)
    return None if set_units is None else BaseMin(parsed, set_units)


def parse_tags(tags: Mapping[str, str], quota: int = DEFAULT_TABLE_QUOTA) -> TableTags:
    """Every library tag of a table, checked; see the module docstring."""
    out = TableTags()
    for key, value in tags.items():
        if not isinstance(key, str) or not key.startswith(TAG_PREFIX) or key in CONSTRUCT_TAGS:
            continue  # the constructs' own: known, and nothing for the scaler to obey
        text = value if isinstance(value, str) else repr(value)
        if key.startswith(BASE_MIN_TAG):
            match = _SCOPE.fullmatch(key[len(BASE_MIN_TAG) :])
            memory = parse_base_min(text, quota) if match else None
            if match is None or memory is None:
                out.ignored.append(
                    IgnoredTag(
                        key,
                        text[:SHOWN],
                        f"expected <base>:<set>, each a whole number of units from 1 to {quota}",
                    )
                )
                continue
            out.base_mins[(match.group("index"), match.group("dim"))] = memory
            continue
        if key.startswith(FORECAST_TAG):
            match = _SCOPE.fullmatch(key[len(FORECAST_TAG) :])
            # parse_plan's isdigit takes other scripts' digits (and int() then raises on
            # superscripts): a plan is ASCII, as the scaler writes it
            plan = parse_plan(text, quota) if match and text.isascii() else None
            if match is None or plan is None:
                out.ignored.append(
                    IgnoredTag(
                        key,
                        text[:SHOWN],
                        f"expected <start minute>:<aim %>:<reserve>:<least fall>:<floor>/..., "
                        f"an aim from 20 to 90, a reserve from 0 to {MAX_RESERVE}, a least "
                        f"fall from 0 to {quota} units, and 1 to {PLAN_STEPS} floors, each a "
                        f"whole number of units from 1 to {quota}",
                    )
                )
                continue
            out.plans[(match.group("index"), match.group("dim"))] = plan
            continue
        name = key[len(TAG_PREFIX) :]
        if name not in LIMIT_NAMES:
            out.ignored.append(IgnoredTag(key, text[:SHOWN], "not a tag this library reads"))
            continue
        number: float | None
        if name.endswith("target"):
            number = percent(text)
            allowed = "a percentage from 20 to 90"
        else:
            units = whole_units(text, quota)
            number = None if units is None else float(units)
            allowed = f"a whole number of capacity units from 1 to {quota}"
        if number is None:
            out.ignored.append(IgnoredTag(key, text[:SHOWN], f"expected {allowed}"))
            continue
        out.limits[name] = number
    return out


__all__ = [
    "CONSTRUCT_TAGS",
    "PREWARM_TAG",
    "BaseMin",
    "IgnoredTag",
    "TableTags",
    "parse_tags",
    "whole_units",
]
