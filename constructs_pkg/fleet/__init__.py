"""Runs in: CDK app (synth time).

The fleet: the nightly fleet report in the account (`FleetAdvisor`), and the nightly loop
that moves the scaler's owned target values toward it (`NightlyTuning`).
"""

from typing import TYPE_CHECKING

from .._exports import lazy_exports

_LAZY = {
    "FleetAdvisor": "._advisor",
    "NightlyTuning": "._tuning",
}

if TYPE_CHECKING:
    from ._advisor import FleetAdvisor
    from ._tuning import NightlyTuning

__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())

__all__ = ["FleetAdvisor", "NightlyTuning"]
