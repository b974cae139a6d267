"""What a number is (``ddb_capacity_runtime.core.validators``), checked against rules
written out here, and the one place that says it: no other module of the packages tells a
bool from a number on its own."""

from __future__ import annotations

import ast
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ddb_capacity_runtime.core.validators import is_number, is_whole
from tests.support.shape import ROOT, modules

ANYTHING = st.one_of(
    st.booleans(),
    st.integers(),
    st.integers(min_value=10**300, max_value=10**400),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=5),
    st.none(),
    st.lists(st.integers(), max_size=2),
)


@given(ANYTHING, st.integers(-100, 100), st.integers(0, 200))
def test_a_whole_number_is_an_int_that_is_no_bool_within_its_bounds(
    value: object, low: int, span: int
) -> None:
    high = low + span
    expected = type(value) is int and low <= value <= high
    assert is_whole(value, low, high) is expected


@given(ANYTHING, st.floats(-1e6, 1e6), st.floats(0, 1e6))
def test_a_number_is_a_finite_int_or_float_that_is_no_bool_within_its_bounds(
    value: object, low: float, span: float
) -> None:
    high = low + span
    if type(value) is int:
        expected = abs(value) < 2**1024 and low <= value <= high
    elif type(value) is float:
        expected = math.isfinite(value) and low <= value <= high
    else:
        expected = False
    assert is_number(value, low, high) is expected


@pytest.mark.parametrize(
    ("value", "whole", "number"),
    [
        (True, False, False),
        (False, False, False),
        (0, True, True),
        (2.0, False, True),
        (math.nan, False, False),
        (math.inf, False, False),
        (10**400, True, False),
        ("3", False, False),
        (None, False, False),
    ],
)
def test_unbounded(value: object, whole: bool, number: bool) -> None:
    assert is_whole(value) is whole
    assert is_number(value) is number


def _checks_bool_beside_a_number(node: ast.BoolOp) -> bool:
    """``node`` tells a bool from an int or a float itself: ``isinstance(x, bool)`` and
    ``isinstance(x, int ...)`` (or ``float``) of the same name in one ``and``/``or``."""
    kinds: dict[str, set[str]] = {}
    for call in ast.walk(node):
        if not (
            isinstance(call, ast.Call)
            and isinstance(call.func, ast.Name)
            and call.func.id == "isinstance"
            and len(call.args) == 2
            and isinstance(call.args[0], ast.Name)
        ):
            continue
        names = {n.id for n in ast.walk(call.args[1]) if isinstance(n, ast.Name)}
        kinds.setdefault(call.args[0].id, set()).update(names)
    return any("bool" in k and k & {"int", "float"} for k in kinds.values())


def bool_checks_outside_validators() -> list[str]:
    out = []
    for name, path in modules().items():
        if name.endswith("core.validators"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.BoolOp) and _checks_bool_beside_a_number(node):
                out.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    return out


def test_only_the_validators_tell_a_bool_from_a_number() -> None:
    assert bool_checks_outside_validators() == []


def test_the_finder_sees_a_bool_told_from_an_int() -> None:
    tree = ast.parse("ok = isinstance(v, bool) or not isinstance(v, int) or v < 1")
    (node,) = [n for n in ast.walk(tree) if isinstance(n, ast.BoolOp)]
    assert _checks_bool_beside_a_number(node)
    tree = ast.parse("ok = isinstance(v, str) or isinstance(w, bool)")
    (node,) = [n for n in ast.walk(tree) if isinstance(n, ast.BoolOp)]
    assert not _checks_bool_beside_a_number(node)
