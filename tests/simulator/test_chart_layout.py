"""The simulator's PNG chart reads right: its title, each panel's title and the policies'
names clear of one another and inside the picture, with the demo's seven policies on the
spike (a panel titled with what the policy is, and a dimension left out, named in the
title's second line)."""

from __future__ import annotations

from itertools import combinations
from typing import Any

import pytest

from ddb_capacity_tools.simulator import chart
from ddb_capacity_tools.simulator.policies import parse
from ddb_capacity_tools.simulator.run import simulate
from ddb_capacity_tools.simulator.scenarios import scenario

DEMO = (
    "stock:70",
    "stock:60",
    "throttle-aware+stock:70",
    "autopilot+stock:70",
    "scheduled",
    "oracle",
    "bound",
)


@pytest.fixture(scope="module")
def drawn() -> Any:
    plt = chart._pyplot("chart.png")
    trace = scenario("spike", 7)
    results = simulate(trace, [parse(p) for p in DEMO], progress=None)
    fig = chart.figure(plt, results, trace)
    fig.canvas.draw()
    yield fig
    plt.close(fig)


def boxes(fig: Any) -> dict[str, Any]:
    """The figure's title, each panel's title, the strip's policy names and the times under
    it, by their text, as drawn."""
    renderer = fig.canvas.get_renderer()
    texts = [fig._suptitle, *(ax.title for ax in fig.axes)]
    texts += [*fig.axes[-1].get_yticklabels(), *fig.axes[-1].get_xticklabels()]
    return {t.get_text(): t.get_window_extent(renderer) for t in texts if t.get_text()}


def test_no_title_or_name_overlaps_another_or_leaves_the_picture(drawn: Any) -> None:
    found = boxes(drawn)
    times = [t for t in found if t.startswith("05 ")]
    assert len(times) >= 4  # the strip's time axis, labelled
    assert len(found) == 1 + len(DEMO) + 1 + len(DEMO) + len(times)  # titles, names, times
    assert "not drawn: read" in drawn._suptitle.get_text()
    picture = drawn.bbox
    for text, box in found.items():
        assert picture.x0 <= box.x0 and box.x1 <= picture.x1, text
        assert picture.y0 <= box.y0 and box.y1 <= picture.y1, text
    for (a, box_a), (b, box_b) in combinations(found.items(), 2):
        assert not box_a.overlaps(box_b), (a, b)


def test_a_long_panel_title_is_two_lines_the_policy_above_its_figures(drawn: Any) -> None:
    titles = {ax.title.get_text().split(" ")[0]: ax.title.get_text() for ax in drawn.axes}
    assert titles["stock:70"].startswith("stock:70 - write: ") and "\n" not in titles["stock:70"]
    assert titles["oracle"].startswith("oracle (the best plan, knowing the future)\nwrite: ")


def test_every_ensemble_whisker_is_inside_its_panel() -> None:
    # GIVEN the plausible ensemble of stock:70 and autopilot+stock:70 on the flash crowd,
    # whose highest throttled whiskers (tens of millions) are far over a round decade
    from ddb_capacity_tools.simulator.ensemble import run_ensemble, settings_of
    from ddb_capacity_tools.simulator.params import ModelParams

    trace = scenario("flash-crowd", 1)
    specs = [parse("stock:70"), parse("autopilot+stock:70")]
    settings = settings_of("plausible", ModelParams(), trace)
    results = run_ensemble(trace, specs, settings, workers=1)
    plt = chart._pyplot("chart.png")
    # WHEN its chart is drawn
    fig = chart.ensemble_figure(results, trace, "plausible", plt)
    fig.canvas.draw()
    tops = [ax.get_ylim()[1] for ax in fig.axes]
    plt.close(fig)
    # THEN each panel's axis reaches over its highest whisker, with room to see its cap: a
    # tenth over the costs, and on the throttled units' log axis twice (a whisker 5 % under
    # the top sat on the frame); the panels: the costs' row, then the throttled units' row
    keys = list(dict.fromkeys(r.key for r in results))
    highest = [
        max(getattr(r, measure).max for r in results if r.key == key)
        for measure in ("cost_usd", "throttled_requests")
        for key in keys
    ]
    assert max(highest) > 1e7
    assert len(tops) == len(highest)
    room = [1.1] * len(keys) + [2.0] * len(keys)
    assert all(top >= whisker * r for top, whisker, r in zip(tops, highest, room, strict=True)), (
        tops,
        highest,
    )
