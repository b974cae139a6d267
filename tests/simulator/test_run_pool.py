"""All of a command's runs in one pool of processes (`run_pool.run_all`): results in the
order of the runs whatever order they end in, each counted once as it ends, a failed run
raised; and ``tune`` choosing the same with one process and with two."""

from __future__ import annotations

import json
import time
from dataclasses import replace
from pathlib import Path

import pytest

from ddb_capacity_tools.simulator import ModelParams, Prices, read_csv, tune_runs
from ddb_capacity_tools.simulator.candidates import STREAM_SECONDS, spec_of, split_prewarm
from ddb_capacity_tools.simulator.ensemble import settings_of
from ddb_capacity_tools.simulator.run import run_policy
from ddb_capacity_tools.simulator.run_pool import Job, run_all
from ddb_capacity_tools.simulator.tune import tune
from tests.support.tune import trace_file


def _slow(value: int) -> int:
    time.sleep(0.3)
    return value


@pytest.mark.parametrize("processes", [1, 2])
def test_results_come_in_the_order_of_the_runs_each_counted_once(processes: int) -> None:
    jobs = [Job(_slow, (1,), "slow"), Job(abs, (-2,), "quick"), Job(_slow, (3,), "heavy", 10)]
    ended: list[str] = []
    assert run_all(jobs, processes, lambda job: ended.append(job.label)) == [1, 2, 3]
    assert sorted(ended) == ["heavy", "quick", "slow"]
    if processes == 1:
        assert ended == ["slow", "quick", "heavy"]  # one after another, in order


def test_a_failed_run_is_raised() -> None:
    jobs = [Job(abs, (-1,), "fine"), Job(int, ("x",), "bad")]
    with pytest.raises(ValueError, match="invalid literal"):
        run_all(jobs, 2)


def test_tune_chooses_the_same_with_one_process_and_with_two(tmp_path: Path) -> None:
    """Every kind of run tune makes (policies together, a stream candidate, a pre-warmed
    one, the hybrid and declared windows composed) gives the same figures when all the
    settings' runs share one pool."""
    trace = read_csv(trace_file(tmp_path))
    settings = settings_of("plausible", ModelParams(), trace)[:3]
    names = [
        "stock:70",
        "stock:90",
        "autopilot+stock:80",
        "autopilot+stock:80+stream",
        "autopilot+stock:90+prewarm",
        "hybrid:70",
        "windows:70",
        "on-demand",
    ]
    made = [
        json.dumps(tune(trace, settings, names, Prices(), workers=w).as_json(), sort_keys=True)
        for w in (1, 2)
    ]
    assert made[0] == made[1]


def test_each_setting_gets_the_runs_of_its_own_candidates(tmp_path: Path) -> None:
    """What `_runs` reads back from the one pool, setting by setting, is each candidate's
    own run under that setting: the policy alone, on a table whose stream is a signal, or on
    a pre-warmed table, as its name says."""
    trace = read_csv(trace_file(tmp_path))
    settings = settings_of("plausible", ModelParams(), trace)[1:3]
    names = ["stock:70", "autopilot+stock:80+stream", "autopilot+stock:90+prewarm", "oracle"]
    got = tune_runs._runs(trace, names, settings, Prices(), 2, 2, None)
    for p, results in zip(settings, got, strict=True):
        assert sorted(r.policy for r in results) == sorted(n for n in names for _ in trace.demand)
        for r in results:
            if split_prewarm(r.policy)[1]:
                alone = tune_runs._prewarmed(r.policy, trace, p, Prices(), 2, None)
            else:
                streaming = (
                    replace(p, stream_seconds=STREAM_SECONDS) if "+stream" in r.policy else p
                )
                alone = run_policy(spec_of(r.policy), trace, streaming, Prices(), None, 2)
            (same,) = [a for a in alone if a.key == r.key]
            assert same.as_json() | {"policy": r.policy} == r.as_json()
            assert same.recorded == r.recorded


def _mark(folder: str, n: int) -> int:
    time.sleep(0.3)
    Path(folder, str(n)).touch()
    return n


def test_a_failed_run_drops_the_runs_not_begun(tmp_path: Path) -> None:
    """After a failure (or an interrupt) the runs still queued are not run: with every
    setting's runs in one pool, they would be nearly the whole command's."""
    jobs = [Job(int, ("x",), "bad", 10)] + [Job(_mark, (str(tmp_path), n), "n") for n in range(12)]
    with pytest.raises(ValueError, match="invalid literal"):
        run_all(jobs, 2)
    time.sleep(0.5)  # any still under way ends meanwhile
    # those under way or already handed to a process (one more each) ran, not all 12
    assert len(list(tmp_path.iterdir())) <= 8
