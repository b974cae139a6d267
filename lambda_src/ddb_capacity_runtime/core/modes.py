"""Runs in: scaler Lambda, broker Lambda, CDK app (synth), workstation (simulator).

The scaler's modes and the policy each runs (`for_mode`), with the tick's timing
constants: what the settings contract (`settings`) starts from and the simulator runs."""

from __future__ import annotations

import math
from dataclasses import replace
from enum import StrEnum

from .policy import PolicyConfig, autopilot_config

DEFAULT_TICK_MINUTES = 2
"""The one tick default of the Lambda, the construct and the simulator: CloudWatch delivers a minute
1-3 minutes late, so a 2-minute tick acts on throttling about as soon as it is visible."""
SCALE_DOWN_MINUTES = 15
"""Consumption must stay low this long before a decrease, whatever the tick."""
LATE_MINUTES = 2
"""Newest minutes of a window CloudWatch may not have delivered yet beyond the metric lag (it
delivers a minute 1-3 minutes late): a tick decides on the minutes before them."""
DELIVERY_MINUTES = 3
"""CloudWatch delivers a minute up to this many minutes late, whatever the metric lag."""


def late_minutes(lag_minutes: int) -> int:
    """The newest minutes of a window read with a metric lag of ``lag_minutes`` that may still
    be on their way (the lag's and LATE_MINUTES, DELIVERY_MINUTES at least): a minute among
    them without a datapoint is unknown, not idle, and not a sign that the data stopped."""
    return max(lag_minutes + LATE_MINUTES, DELIVERY_MINUTES)


class Mode(StrEnum):
    """The scaler's modes: ``autopilot`` (the default) and ``reactive``
    (`policy.autopilot_config`: no chasing a burst that is over, prompt decreases)."""

    REACTIVE = "reactive"
    AUTOPILOT = "autopilot"


MODES = tuple(m.value for m in Mode)
"""The modes' names, for messages."""


def scale_down_ticks(tick_minutes: int, mode: str = Mode.REACTIVE) -> int:
    """Ticks of low consumption before a decrease at ``tick_minutes``: SCALE_DOWN_MINUTES,
    or the autopilot's own span."""
    auto = mode == Mode.AUTOPILOT
    minutes = autopilot_config().scale_down_minutes if auto else SCALE_DOWN_MINUTES
    return math.ceil(minutes / tick_minutes)


def for_mode(
    mode: str, tick_minutes: int = DEFAULT_TICK_MINUTES, target_utilization: float = 0.7
) -> PolicyConfig:
    """The policy the scaler runs in ``mode`` at ``tick_minutes`` with every other setting at
    its default: what `ScalerConfig.from_env` starts from, and what the simulator
    runs for a mode. Raises ValueError for an unknown mode."""
    auto = Mode(mode) is Mode.AUTOPILOT
    policy = (
        autopilot_config(target_utilization)
        if auto
        else PolicyConfig(target_utilization=target_utilization)
    )
    return replace(policy, scale_down_minutes=tick_minutes * scale_down_ticks(tick_minutes, mode))
