"""records.direct_init: the same record as the dataclass's own __init__ makes, faster."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from ddb_capacity_runtime.core.records import direct_init


@dataclasses.dataclass(frozen=True)
class Plain:
    a: int
    b: str = "b"
    c: list[int] = dataclasses.field(default_factory=list)


@direct_init
@dataclasses.dataclass(frozen=True)
class Direct:
    a: int
    b: str = "b"
    c: list[int] = dataclasses.field(default_factory=list)


@pytest.mark.parametrize(
    ("args", "kwargs"), [((1,), {}), ((1, "x"), {}), ((1,), {"c": [2]}), ((), {"a": 3, "b": "y"})]
)
def test_it_makes_the_record_the_generated_init_makes(
    args: tuple[Any, ...], kwargs: dict[str, Any]
) -> None:
    plain, direct = Plain(*args, **kwargs), Direct(*args, **kwargs)
    assert dataclasses.asdict(plain) == dataclasses.asdict(direct)
    assert repr(direct) == repr(plain).replace("Plain", "Direct")
    assert hash((direct.a, direct.b)) == hash((plain.a, plain.b))


def test_a_factory_default_is_new_for_each_record_and_the_record_stays_frozen() -> None:
    first, second = Direct(1), Direct(1)
    assert first.c == [] and first.c is not second.c
    with pytest.raises(dataclasses.FrozenInstanceError):
        first.a = 2  # type: ignore[misc]


def test_a_missing_or_unknown_argument_is_refused_as_by_the_generated_init() -> None:
    with pytest.raises(TypeError):
        Direct()  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        Direct(1, d=2)  # type: ignore[call-arg]


def test_a_field_outside_init_is_refused() -> None:
    with pytest.raises(TypeError, match="init fields only"):

        @direct_init
        @dataclasses.dataclass(frozen=True)
        class Odd:
            a: int
            b: int = dataclasses.field(default=0, init=False)
