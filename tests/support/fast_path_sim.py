"""The fast path's simulated surges, as the simulator and the warm run-time tests use them."""

from __future__ import annotations

from ddb_capacity_tools.simulator import ModelParams, Prices, parse
from ddb_capacity_tools.simulator.model import SimulatedTable
from ddb_capacity_tools.simulator.policies import ThrottleAware
from ddb_capacity_tools.simulator.run import build
from ddb_capacity_tools.simulator.scenarios import START
from ddb_capacity_tools.simulator.trace import Trace

WRITE = (None, "write")


def _surges(
    demand: list[float], **model: object
) -> tuple[dict[int, int], dict[int, int], SimulatedTable]:
    """``autopilot+stock:70`` with the fast path (S = 20) over writes at ``demand``: per
    minute, the surge's level and the floor it holds the scalable target at; the table."""
    trace = Trace("surges", START, {WRITE: demand})
    params = ModelParams(warmup_minutes=30, fast_path_seconds=20, **model).validate()  # type: ignore[arg-type]
    policy = build(parse("autopilot+stock:70"), trace, params, Prices(), None, 5)
    assert isinstance(policy, ThrottleAware) and policy.fast is not None
    assert policy.stock is not None
    sim = SimulatedTable(trace, params, policy.initial(trace, params))
    levels, floors = {}, {}
    for t in range(-30, trace.minutes):
        sim.begin_minute(t)
        policy.act(sim, t)
        sim.end_minute(t)
        levels[t] = policy.fast.floor(WRITE, t)
        floors[t] = policy.stock.surge.get(WRITE, 0)
    return levels, floors, sim
