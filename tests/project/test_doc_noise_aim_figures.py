"""The figures the autopilot page gives for why the noise aim refuses more at a jump
("Aiming by the traffic's noise") are the simulator's: the built-in `spike` scenario under
the default model, `autopilot:70` with the noise aim off and on as
`benchmarks/noise_headroom.py` compares them. The aims are read from the rule itself
(`core.policy.noise_aim`, spied on), each with the half hour it was taken over, so a change
to the rule, the model or the scenario that moves a figure fails until the page says it."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

import pytest

from benchmarks.noise_headroom import variants
from ddb_capacity_runtime.core import policy
from ddb_capacity_runtime.core.policy import DimensionState, PolicyConfig
from ddb_capacity_tools.simulator import ModelParams, Prices, scenario
from ddb_capacity_tools.simulator.run import DimensionResult, run_policy
from ddb_capacity_tools.simulator.trace import Trace
from tests.support.shape import ROOT

WRITES = (None, "write")
READS = (None, "read")
QUIET_MINUTES = 60
"""The spike scenario's quiet hour: the writes jump at its end (13:00 UTC)."""


def said(page: str) -> str:
    """The page's text, its lines joined as one (figures may wrap)."""
    return " ".join((ROOT / page).read_text().split())


@dataclass(frozen=True)
class Aim:
    """One aim the rule gave the writes: at the tick ``now``, over the half hour from
    ``first`` to ``last`` (minute starts), whose `noise` is ``noise``."""

    now: datetime
    first: datetime
    last: datetime
    noise: float
    aim: float


@dataclass(frozen=True)
class Spike:
    trace: Trace
    off: DimensionResult
    on: DimensionResult
    aims: list[Aim]
    """The writes' aims in the run with the noise aim on, oldest first."""


@pytest.fixture(scope="module")
def spike() -> Spike:
    trace = scenario("spike")
    quiet = trace.demand[WRITES][:QUIET_MINUTES]
    # the writes' ticks are told from the reads' by their load: the reads never reach it
    assert max(trace.demand[READS]) < min(quiet)
    aims: list[Aim] = []
    rule = policy.noise_aim

    def spy(state: DimensionState, config: PolicyConfig, target: float) -> float:
        aim = rule(state, config, target)
        span = config.settle_minutes
        consumed, starts = state.consumed[-span:], state.minute_starts[-span:]
        if len(consumed) == span and max(consumed) >= min(quiet):
            aims.append(Aim(state.now, starts[0], starts[-1], policy.noise(consumed), aim))
        return aim

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(policy, "noise_aim", spy)
        off, on = (
            next(r for r in run_policy(spec, trace, ModelParams(), Prices()) if r.key == WRITES)
            for spec in variants(["autopilot:70"])
        )
    assert off.policy.endswith(" off") and on.policy.endswith(" on")
    return Spike(trace, off, on, aims)


def raised_at(provisioned: Sequence[int], minute: int) -> int:
    """The minute from which ``provisioned`` holds its value at ``minute``."""
    start = minute
    while start > 0 and provisioned[start - 1] == provisioned[minute]:
        start -= 1
    return start


def spread(values: Sequence[float], text: str) -> str:
    """The lowest and highest of ``values`` as ``low-high`` in ``text``'s format."""
    low, high = format(min(values), text), format(max(values), text)
    return low if low == high else f"{low}-{high}"


def test_the_noise_aims_jump_figures_are_the_simulators(spike: Spike) -> None:
    trace, off, on = spike.trace, spike.off, spike.on
    quiet = trace.demand[WRITES][:QUIET_MINUTES]
    jump = trace.time(QUIET_MINUTES)
    assert trace.demand[WRITES][QUIET_MINUTES] > 3 * max(quiet)  # the jump
    low, high = math.floor(min(quiet) / 1000) * 1000, math.ceil(max(quiet) / 1000) * 1000
    # the quiet hour's own half hours: every minute read is of the quiet hour
    within = [a for a in spike.aims if a.first >= trace.start and a.last < jump]
    assert len(within) >= 10
    # the capacity the jump meets, and the tick that set it (the hour's one raise)
    meets_on, meets_off = (
        on.recorded.provisioned[QUIET_MINUTES],
        off.recorded.provisioned[QUIET_MINUTES],
    )
    since = raised_at(on.recorded.provisioned, QUIET_MINUTES)
    assert 0 < since < QUIET_MINUTES
    assert len(set(on.recorded.provisioned[:since])) == 1  # the hour's one raise
    raised = [a for a in spike.aims if a.now < trace.time(since)][-1]
    assert raised.first < trace.start  # its half hour holds warm-up minutes
    assert raised.now >= trace.start
    # sized at that aim, by a minute the tick read
    assert any(policy.capacity_units(x / raised.aim) == meets_on for x in quiet[:since])
    assert meets_on < meets_off  # the claim's direction: less capacity meets the jump
    assert on.throttled_requests > off.throttled_requests  # and more is refused
    page = said("docs/guides/autopilot.md")
    for text in (
        f"the quiet hour's writes ({low:,}-{high:,} units/s) look smooth: each half hour of "
        f"it has a noise of {spread([a.noise for a in within], '.2f')}, an aim of "
        f"{spread([a.aim * 100 for a in within], '.0f')} %.",
        f"(a noise of {raised.noise:.2f}, an aim of {raised.aim * 100:.0f} %)",
        f"the capacity the jump meets is {meets_on:,} units instead of {meets_off:,}.",
    ):
        assert text in page
