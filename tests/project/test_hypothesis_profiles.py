"""The property tests' profiles (tests/support/hypothesis_profiles.py): the gate runs the same
examples on every run, ``make explore`` random ones at scale, and no test opts out."""

from __future__ import annotations

import ast

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support import hypothesis_profiles
from tests.support.hypothesis_profiles import (
    EXPLORE,
    EXPLORE_SCALE,
    GATE,
    PROFILE_VARIABLE,
    examples,
)
from tests.support.shape import ROOT

TESTS = ROOT / "tests"


def settings_calls() -> list[tuple[str, ast.Call]]:
    """Every ``settings(...)`` call in the test modules, with where it is."""
    calls = []
    for path in sorted(TESTS.rglob("*.py")):
        if path.name == "hypothesis_profiles.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "settings":
                calls.append((f"{path.relative_to(TESTS)}:{node.lineno}", node))
    return calls


def test_every_test_that_sets_its_own_settings_keeps_the_profile() -> None:
    # GIVEN every settings(...) a test module makes
    calls = settings_calls()
    assert len(calls) > 20  # the property tests are found
    # THEN none fixes the example database or the randomness itself, and every example
    # count goes through examples() (so make explore scales it)
    wrong = []
    for where, call in calls:
        for keyword in call.keywords:
            value = keyword.value
            if keyword.arg == "database" or (
                keyword.arg == "derandomize" and isinstance(value, ast.Constant)
            ):
                wrong.append(f"{where}: {keyword.arg}")
            if keyword.arg == "max_examples" and isinstance(value, ast.Constant):
                wrong.append(f"{where}: max_examples={value.value!r} (use examples())")
    assert wrong == []


def test_the_gate_is_derandomized_with_no_database_and_no_deadline() -> None:
    gate = settings.get_profile(GATE)
    assert (gate.derandomize, gate.database, gate.deadline) == (True, None, None)
    explore = settings.get_profile(EXPLORE)
    assert not explore.derandomize
    assert explore.max_examples == gate.max_examples * EXPLORE_SCALE


def test_the_profile_is_the_gates_unless_the_environment_asks_to_explore(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(PROFILE_VARIABLE, raising=False)
    assert (hypothesis_profiles.profile_name(), examples(30)) == (GATE, 30)
    monkeypatch.setenv(PROFILE_VARIABLE, EXPLORE)
    assert (hypothesis_profiles.profile_name(), examples(30)) == (EXPLORE, 30 * EXPLORE_SCALE)
    monkeypatch.setenv(PROFILE_VARIABLE, "fast")
    with pytest.raises(ValueError, match="HYPOTHESIS_PROFILE must be gate or explore; got 'fast'"):
        hypothesis_profiles.profile_name()


def _derandomized() -> bool:
    """Whether the profile loaded (tests/conftest.py loads it) derandomizes: the gate's does."""
    loaded = settings.default
    assert loaded is not None
    return loaded.derandomize


@pytest.mark.skipif(not _derandomized(), reason="the gate's profile only (make explore randomizes)")
def test_a_test_with_its_own_settings_sees_the_same_examples_on_every_run() -> None:
    # GIVEN a property with its own @settings, as the test modules write them
    seen: list[int] = []

    @settings(max_examples=examples(25))
    @given(st.integers(0, 10**9))
    def prop(n: int) -> None:
        seen.append(n)

    # WHEN it runs twice
    prop()
    first = list(seen)
    seen.clear()
    prop()
    # THEN both runs drew the same examples
    assert len(first) > 10 and seen == first
