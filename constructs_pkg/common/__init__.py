"""Runs in: CDK app (synth time).

What every feature's constructs share: alarm options and the one alarm sink, function
options, the functions' assets and runtime, IAM statements, props checks, and the
compliance packs' acknowledgements.
"""

from typing import TYPE_CHECKING

from .._exports import lazy_exports

_LAZY = {
    "AlarmOptions": "._alarms",
    "AlarmTopic": "._alarm_sink",
    "acknowledge": "._compliance",
    "apply_nag_packs": "._compliance",
    "skip_checkov": "._compliance",
    "FunctionOptions": "._function_options",
}

if TYPE_CHECKING:
    from ._alarm_sink import AlarmTopic
    from ._alarms import AlarmOptions
    from ._compliance import acknowledge, apply_nag_packs, skip_checkov
    from ._function_options import FunctionOptions

__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())

__all__ = [
    "AlarmOptions",
    "AlarmTopic",
    "FunctionOptions",
    "acknowledge",
    "apply_nag_packs",
    "skip_checkov",
]
