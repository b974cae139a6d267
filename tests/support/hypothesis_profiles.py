"""The two ways the property tests run (hypothesis settings profiles, registered and loaded
by tests/conftest.py before any test module is imported):

- ``gate`` (the default, ``make test``): derandomized (each test's examples come from a
  hash of the test, the same on every run and every machine), no example database, no
  deadline and no timing health check, so a run's outcome never depends on luck or load;
- ``explore`` (``make explore``, ``HYPOTHESIS_PROFILE=explore``): random examples, each
  test's count times :data:`EXPLORE_SCALE` (``HYPOTHESIS_EXPLORE_SCALE`` sets it), with
  hypothesis' example database (``.hypothesis/``), so a failure found is replayed first by
  the next explore run.

A test that sets its own ``@settings`` inherits everything but what it names: it names
its example count through :func:`examples` (scaled by the profile) and never
``derandomize`` or ``database`` (tests/project/test_hypothesis_profiles.py checks it).
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

__all__ = ["EXPLORE_SCALE", "GATE", "EXPLORE", "PROFILE_VARIABLE", "examples", "load_profile"]

GATE = "gate"
EXPLORE = "explore"
#: The environment variable that picks the profile (unset: the gate's).
PROFILE_VARIABLE = "HYPOTHESIS_PROFILE"
#: How many times each test's examples ``explore`` runs (``HYPOTHESIS_EXPLORE_SCALE``).
EXPLORE_SCALE = int(os.environ.get("HYPOTHESIS_EXPLORE_SCALE", "20"))
#: Examples of a test that names no count: hypothesis' own default.
DEFAULT_EXAMPLES = 100

settings.register_profile(
    GATE,
    derandomize=True,
    database=None,
    deadline=None,
    max_examples=DEFAULT_EXAMPLES,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    EXPLORE,
    derandomize=False,
    deadline=None,
    max_examples=DEFAULT_EXAMPLES * EXPLORE_SCALE,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)


def profile_name() -> str:
    """The profile the environment asks for; raises ValueError naming the variable for
    one that is not known."""
    name = os.environ.get(PROFILE_VARIABLE) or GATE
    if name not in (GATE, EXPLORE):
        raise ValueError(f"{PROFILE_VARIABLE} must be {GATE} or {EXPLORE}; got {name!r}")
    return name


def load_profile() -> str:
    """Load the profile the environment asks for; returns its name."""
    name = profile_name()
    settings.load_profile(name)
    return name


def examples(count: int) -> int:
    """A test's example count under the loaded profile: ``count`` in the gate, scaled up
    when exploring."""
    return count * EXPLORE_SCALE if profile_name() == EXPLORE else count
