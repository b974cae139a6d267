"""``ddb-capacity tune``: the frontier under an ensemble, a recommendation and its code."""

from __future__ import annotations

import ast
import json
import math
from datetime import UTC, datetime, timedelta
from pathlib import Path

from tests.test_cli import run


def trace_file(tmp_path: Path) -> Path:
    """Three days: reads on a daily sine, writes at 50/s with a 3,000/s hour each night."""
    start = datetime(2026, 1, 5, tzinfo=UTC)
    rows = ["timestamp,read,write"]
    for m in range(3 * 1440):
        minute = m % 1440
        write = 3_000 if 120 <= minute < 180 else 50
        read = 500 + 400 * math.sin(2 * math.pi * minute / 1440)
        rows.append(f"{(start + timedelta(minutes=m)).isoformat()},{read:.1f},{write:.1f}")
    path = tmp_path / "trace.csv"
    path.write_text("\n".join(rows) + "\n")
    return path


def test_tune_places_candidates_on_a_frontier_and_prints_code(tmp_path: Path) -> None:
    path = trace_file(tmp_path)
    args = ["tune", "--trace", str(path), "--quiet", "--workers", "2"]
    for c in ("stock:60", "stock:70", "autopilot:70", "autopilot+stock:70", "on-demand"):
        args += ["--candidate", c]
    code, out, err = run(*args, "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["ensemble"] == "plausible"
    by = {c["policy"]: c for c in doc["candidates"]}
    assert set(by) == {"stock:60", "stock:70", "autopilot:70", "autopilot+stock:70", "on-demand"}
    median = {
        p: (c["throttled_requests"]["median"], c["cost_usd"]["median"]) for p, c in by.items()
    }

    def beaten(p: str) -> bool:
        t, c = median[p]
        return any(
            t2 <= t and c2 <= c and (t2, c2) != (t, c) for q, (t2, c2) in median.items() if q != p
        )

    for p, c in by.items():
        assert c["frontier"] == (not beaten(p)), p
    assert by["on-demand"]["frontier"] and median["on-demand"][0] == 0
    # the nightly hour is learned: the autopilot refuses far less than stock, alone and on it
    assert median["autopilot:70"][0] < 0.5 * median["stock:70"][0]
    assert median["autopilot+stock:70"][0] < 0.5 * median["stock:70"][0]
    recommended = doc["recommended"]
    assert by[recommended]["frontier"]
    affordable = [p for p in by if by[p]["frontier"] and median[p][1] <= median["stock:70"][1]]
    if affordable:
        assert median[recommended][0] == min(median[p][0] for p in affordable)
    ast.parse(doc["code"])  # code to paste, as written
    # the text output: the same table and the same code
    code, out, _ = run(*args)
    assert code == 0 and "<- recommended" in out and doc["code"].strip() in out


def test_tune_refuses_a_candidate_it_cannot_deploy(tmp_path: Path) -> None:
    code, _, err = run("tune", "--trace", str(trace_file(tmp_path)), "--candidate", "oracle")
    assert code == 2
    assert "--candidate: got 'oracle'; expected stock:T, autopilot, autopilot:T, " in err


def test_every_candidates_code_parses_and_names_what_it_deploys() -> None:
    from ddb_capacity_tools.simulator import ModelParams, Trace, parse
    from ddb_capacity_tools.simulator.tune import CANDIDATES, code_for

    trace = Trace(
        "t", datetime(2026, 1, 5, tzinfo=UTC), {(None, "read"): [10.0], (None, "write"): [5.0]}
    )
    for name in CANDIDATES:
        code = code_for(parse(name), trace, ModelParams())
        ast.parse(code)
        spec = parse(name)
        assert ("ThrottleAwareScaler" in code) == (spec.kind == "autopilot"), name
        assert ("ProvisionedTable" in code) == (spec.kind == "stock" or spec.with_stock), name
        if spec.value:
            assert f"{spec.value}" in code, name
