"""The overview's figures (docs/overview.md, which the README links) for the spike with the table's stream as a signal are what
``ddb-capacity simulate`` prints for it today: each is computed here from one run and must
appear in the README as written, so a change of the model that moves them fails until the
README says the new figures."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest

from benchmarks.stock_rivals import cheapest_within
from ddb_capacity_tools.cli import main
from ddb_capacity_tools.simulator.candidates import STOCK
from tests.support.shape import ROOT

POLICIES = [*STOCK, "autopilot+stock:80", "on-demand"]


def spike_with_stream() -> dict[str, Any]:
    """The README's second demo run, with every stock target and on-demand beside it, and
    the plausible ensemble."""
    argv = ["simulate", "--scenario", "spike", "--stream-seconds", "2"]
    argv += [a for p in POLICIES for a in ("--policy", p)]
    argv += ["--ensemble", "plausible", "--json", "--quiet", "--workers", "1"]
    out, err = io.StringIO(), io.StringIO()
    assert main(argv, out, err) == 0, err.getvalue()
    doc: dict[str, Any] = json.loads(out.getvalue())
    return doc


def totals(rows: list[dict[str, Any]], pick: str = "") -> dict[str, tuple[float, float]]:
    """Each policy's refused units and dollars, its dimensions summed (``pick``: the
    ensemble's statistic)."""
    out: dict[str, tuple[float, float]] = {}
    for row in rows:
        refused, cost = row["throttled_requests"], row["cost_usd"]
        if pick:
            refused, cost = refused[pick], cost[pick]
        before = out.get(row["policy"], (0.0, 0.0))
        out[row["policy"]] = (before[0] + refused, before[1] + cost)
    return out


def test_the_readmes_spike_figures_are_the_simulators() -> None:
    doc = spike_with_stream()
    one = totals(doc["policies"])
    median = totals(doc["ensemble"]["policies"], "median")
    readme = " ".join((ROOT / "docs" / "overview.md").read_text().split())
    base = one["stock:70"][1]
    refused, cost = one["autopilot+stock:80"]
    assert refused == 0
    said = [f"`autopilot+stock:80` refuses nothing at {cost / base:.2f}x stock:70's cost"]
    # the cheapest stock target that refuses nothing
    cheapest, found = cheapest_within(one, 0)
    assert found
    said.append(f"refuses nothing, {cheapest}, costs {one[cheapest][1] / base:.2f}x")
    od_refused, od_cost = one["on-demand"]
    said.append(f"on-demand refuses {od_refused / 1e6:.1f} M units")
    said.append(f"at {od_cost / base:.2f}x. The default model lands an UpdateTable in a minute")
    assert len(doc["ensemble"]["settings"]) == 8
    m_refused, m_cost = median["autopilot+stock:80"]
    s_refused, s_cost = median["stock:70"]
    said.append(
        f"its median refuses {m_refused / 1e6:.1f} M units to stock:70's "
        f"{s_refused / 1e6:.1f} M, at {m_cost / s_cost:.2f}x"
    )
    worst = totals(doc["ensemble"]["policies"], "max")
    said.append(
        f"and its worst {worst['autopilot+stock:80'][0] / 1e6:.1f} M to stock:70's "
        f"{worst['stock:70'][0] / 1e6:.1f} M"
    )
    missing = [s for s in said if s not in readme]
    assert missing == [], missing


def test_the_readmes_spike_figures_without_a_signal_are_the_simulators() -> None:
    """The first demo run (no stream): the library's policies do no better than stock."""
    argv = ["simulate", "--scenario", "spike", "--json", "--quiet", "--workers", "1"]
    argv += [
        a for p in ("stock:70", "autopilot+stock:70", "autopilot+stock:80") for a in ("--policy", p)
    ]
    out, err = io.StringIO(), io.StringIO()
    assert main(argv, out, err) == 0, err.getvalue()
    one = totals(json.loads(out.getvalue())["policies"])
    stock, same, more = (
        one[p][0] for p in ("stock:70", "autopilot+stock:70", "autopilot+stock:80")
    )
    readme = " ".join((ROOT / "docs" / "overview.md").read_text().split())
    said = "`autopilot+stock:70` refuses what stock:70 refuses ({:.1f} M units) and"
    if same == stock:
        assert said.format(stock / 1e6) in readme
    else:
        assert "refuses what stock:70 refuses" not in readme, (same, stock)
    assert more > stock
    assert f"`autopilot+stock:80` more ({more / 1e6:.1f} M)" in readme


@pytest.mark.parametrize("minutes", [3, 5])
def test_the_readmes_spike_figures_with_a_slower_update_are_the_simulators(minutes: int) -> None:
    """The spike with the stream as a signal, an UpdateTable taking ``minutes``: what the
    README says the headline becomes when an update takes as long as AWS says it may."""
    argv = ["simulate", "--scenario", "spike", "--stream-seconds", "2"]
    argv += ["--update-minutes", str(minutes), "--json", "--quiet", "--workers", "1"]
    argv += [a for p in ("stock:50", "stock:70", "autopilot+stock:80") for a in ("--policy", p)]
    out, err = io.StringIO(), io.StringIO()
    assert main(argv, out, err) == 0, err.getvalue()
    one = totals(json.loads(out.getvalue())["policies"])
    ours, stock50 = one["autopilot+stock:80"][0], one["stock:50"][0]
    readme = " ".join((ROOT / "docs" / "overview.md").read_text().split())
    said = f"{ours / 1e6:.2f} M units to stock:50's {stock50 / 1e6:.2f} M"
    assert said in readme, said
    assert f"at {one['autopilot+stock:80'][1] / one['stock:70'][1]:.2f}x stock:70's cost" in readme
