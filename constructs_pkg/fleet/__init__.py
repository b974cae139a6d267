"""Runs in: CDK app (synth time).

The fleet: the nightly fleet report in the account (`FleetAdvisor`), and the nightly loop
that moves the scaler's owned target values toward it (`NightlyTuning`).
"""

from typing import TYPE_CHECKING

from .._exports import lazy_exports

_LAZY = {
    "NightlyTuningProps": "._tuning",
    "FleetAdvisorProps": "._advisor",
    "FleetAdvisor": "._advisor",
    "NightlyTuning": "._tuning",
}

if TYPE_CHECKING:
    from ._advisor import FleetAdvisor, FleetAdvisorProps
    from ._tuning import NightlyTuning, NightlyTuningProps

__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())

__all__ = ["FleetAdvisor", "FleetAdvisorProps", "NightlyTuning", "NightlyTuningProps"]
