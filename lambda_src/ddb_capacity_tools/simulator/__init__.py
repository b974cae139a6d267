"""Runs in: workstation (the `ddb-capacity` command).

The capacity simulator: replay a traffic trace through scaling policies, the scaler
Lambda's own among them, and compare throttles, unit-hours, dollars and decreases.

Loads no CDK; the command line is ``ddb-capacity`` (`ddb_capacity_tools.cli`).
"""

from .model import serve
from .params import ModelError, ModelParams
from .policies import PolicyError, parse
from .prices import PriceError, Prices
from .run import DEFAULT_POLICIES, DimensionResult, run_policy, simulate
from .scenarios import SCENARIOS, ScenarioError, scenario
from .schedules import ScheduleFileError
from .trace import Trace, TraceError, read_csv

__all__ = [
    "DEFAULT_POLICIES",
    "SCENARIOS",
    "DimensionResult",
    "ModelError",
    "ModelParams",
    "PolicyError",
    "PriceError",
    "Prices",
    "ScenarioError",
    "ScheduleFileError",
    "Trace",
    "TraceError",
    "parse",
    "read_csv",
    "run_policy",
    "scenario",
    "serve",
    "simulate",
]
