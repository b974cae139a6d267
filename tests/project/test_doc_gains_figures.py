"""The figures the simulator page gives for the slow start pre-warmed at its peak and the
flash crowd not pre-warmed, with the flash crowd's floor, are `benchmarks/policy_gains.py`'s:
each is measured here as the benchmark measures it and must appear in the page as written, so
a change to the decision code, the model or a scenario that moves one fails until the page
says the new figure."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from benchmarks.policy_gains import (
    FLASH_GOAL,
    JUDGED,
    SLOW_GOAL,
    flash_rows,
    one_update_floor,
    slow_start_rows,
)
from benchmarks.surges import HOOK, STREAM
from ddb_capacity_tools.simulator import ModelParams, scenario
from ddb_capacity_tools.simulator.ensemble import settings_of
from tests.support.shape import ROOT

PAGE = "docs/guides/simulator.md"


def said() -> str:
    """The page's text, its lines joined as one (figures may wrap)."""
    return " ".join((ROOT / PAGE).read_text().split())


def test_the_slow_starts_figure_is_the_benchmarks() -> None:
    rows = slow_start_rows(workers=1)
    base = rows["stock:70"][0]
    hook = rows[f"{JUDGED} +hook"][0] / base
    assert base > 0 and rows[f"{JUDGED} +stream"][0] == rows[f"{JUDGED} +both"][0] == 0
    row = (
        f"| `autopilot+stock:70` with the hook, against `stock:70` | {hook:.3f}x (with the "
        f"stream, or both: 0) | at most {SLOW_GOAL:g}x: missed by +{hook - SLOW_GOAL:.3f} |"
    )
    assert row in said()


def test_the_flash_crowds_figures_and_floor_are_the_benchmarks() -> None:
    rows, floor, floors = flash_rows(workers=1)
    base = rows["stock:70"][0]
    both = rows[f"{JUDGED} +both"][0] / base
    # a lower bound: under what the policy itself refused
    assert 0 < floor < rows[f"{JUDGED} +both"][0] and len(floors) == 8
    page = said()
    assert f"| {both:.3f}x | at most {FLASH_GOAL:g}x: missed by +{both - FLASH_GOAL:.3f} |" in page
    assert f"| the floor of the signals' lag (a lower bound) | {floor / base:.3f}x |" in page
    trace = scenario("flash-crowd")
    model: dict[str, Any] = {**HOOK, **STREAM}
    settings = settings_of("plausible", replace(ModelParams(), **model), trace)
    tighter = one_update_floor(trace, settings) / base
    assert floor / base <= tighter < both  # tighter, and still a lower bound
    row = f"| that floor with one update of the table at a time (a lower bound) | {tighter:.3f}x |"
    assert row in page
    assert f"raises it only to {tighter:.3f}x, still under the goal" in page
    assert (
        f"At {floor / base:.3f}x it is under the goal by {FLASH_GOAL - floor / base:.3f}x" in page
    )
