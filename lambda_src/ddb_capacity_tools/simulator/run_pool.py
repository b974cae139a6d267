"""Runs in: workstation (`ddb-capacity tune`, `advise`, `reserve`).

Many runs in one pool of processes (`run_all`): every run of every setting is handed out
at once, the longest first, so that no process waits for the others at the end of each
setting; the results come back in the order of the runs, whatever order they end in.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Job:
    """One run: ``work(*args)``, named ``label`` for progress; ``weight`` says how long it
    takes against the others (the heavier ones are handed out first)."""

    work: Callable[..., Any]
    args: tuple[Any, ...]
    label: str
    weight: int = 1


def run_all(
    jobs: Sequence[Job], processes: int, ended: Callable[[Job], None] | None = None
) -> list[Any]:
    """Each job's result, in the order of ``jobs``: run here one after another with
    ``processes`` 1, else in that many processes, the heaviest first. ``ended(job)`` is
    called as each ends (in the order they end); a failed job raises here, once the jobs
    under way have ended (those not begun are dropped)."""
    if processes <= 1 or len(jobs) <= 1:
        out = []
        for job in jobs:
            out.append(job.work(*job.args))
            if ended is not None:
                ended(job)
        return out
    order = sorted(range(len(jobs)), key=lambda i: -jobs[i].weight)  # stable: ties keep order
    with ProcessPoolExecutor(min(processes, len(jobs))) as pool:
        futures = {pool.submit(jobs[i].work, *jobs[i].args): i for i in order}
        try:
            for future in as_completed(futures):
                future.result()  # a failed run raises here
                if ended is not None:
                    ended(jobs[futures[future]])
        except BaseException:  # a failed run, or an interrupt: the runs not begun are dropped
            pool.shutdown(wait=False, cancel_futures=True)
            raise
        done = {i: f.result() for f, i in futures.items()}
    return [done[i] for i in range(len(jobs))]
