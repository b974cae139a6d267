"""The fixture of the simulator's tests alone: `pair`, a small ensemble for the tests of
advise's, reserve's and tune's plumbing; the shared fixtures are tests/conftest.py's."""

from __future__ import annotations

import pytest

from ddb_capacity_tools.simulator import ensemble

PAIR = "pair"
"""An ensemble of two of the plausible ensemble's settings (its first two), for the tests of
advise's and tune's plumbing (which table fails, where a table is read, the report's files,
the output's form), whatever the ensemble: each table runs every policy under 2 settings
instead of 8."""


@pytest.fixture
def pair(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """`PAIR` named beside the plausible ensemble, in each of the ensemble's tables, for this
    test; the options that choose it."""
    for table in (
        ensemble.ENSEMBLES,
        ensemble.HOT_KEY_SPREAD,
        ensemble.FAST_PATH_SPREAD,
        ensemble.WARM_SPREAD,
        ensemble.STREAM_SPREAD,
    ):
        monkeypatch.setitem(table, PAIR, table["plausible"][:2])
    return ["--ensemble", PAIR]
