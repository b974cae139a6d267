"""Each construct's props are declared once, with their defaults: the keyword arguments a
construct takes are its props type's fields, in order, each defaulting to that field's
default (the signature takes it from there), so a default cannot be written twice."""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any

import pytest

from constructs_pkg.fleet import FleetAdvisor, FleetAdvisorProps, NightlyTuning, NightlyTuningProps
from constructs_pkg.global_tables import GlobalTableCapacity, GlobalTableCapacityProps
from constructs_pkg.requests import CapacityRequests, CapacityRequestsProps
from constructs_pkg.scaler import ScalerProps, ThrottleAwareScaler
from constructs_pkg.table import (
    ProvisionedTable,
    ProvisionedTableProps,
    TableCapacity,
    TableCapacityProps,
)

DECLARED = [
    (ThrottleAwareScaler, ScalerProps),
    (ProvisionedTable, ProvisionedTableProps),
    (TableCapacity, TableCapacityProps),
    (GlobalTableCapacity, GlobalTableCapacityProps),
    (CapacityRequests, CapacityRequestsProps),
    (FleetAdvisor, FleetAdvisorProps),
    (NightlyTuning, NightlyTuningProps),
]


def undeclared(construct: type[Any], props: type) -> list[str]:
    """Where ``construct``'s keyword arguments (its ``**`` pass-through aside) and the
    fields of ``props`` part: a name, an order or a default not the field's own."""
    parameters = inspect.signature(construct.__init__).parameters.values()
    keywords = [p for p in parameters if p.kind is inspect.Parameter.KEYWORD_ONLY]
    fields = dataclasses.fields(props)
    if [p.name for p in keywords] != [f.name for f in fields]:
        return [f"names: {[p.name for p in keywords]} != {[f.name for f in fields]}"]
    out = []
    for parameter, field in zip(keywords, fields, strict=True):
        required = field.default is dataclasses.MISSING
        if required and parameter.default is not inspect.Parameter.empty:
            out.append(f"{field.name}: a default where the props have none")
        if not required and parameter.default is not field.default:
            out.append(f"{field.name}: {parameter.default!r} is not the props' default")
    return out


@pytest.mark.parametrize(("construct", "props"), DECLARED, ids=lambda c: c.__name__)
def test_the_keyword_arguments_are_the_props_fields(construct: type[Any], props: type) -> None:
    assert undeclared(construct, props) == []


@pytest.mark.parametrize(("construct", "props"), DECLARED, ids=lambda c: c.__name__)
def test_every_prop_says_what_it_does(construct: type[Any], props: type) -> None:
    """Each field has its docstring (the reference shows it under the field)."""
    source = inspect.getsource(props)
    for field in dataclasses.fields(props):
        after = source.split(f"\n    {field.name}: ", 1)[1].split("\n", 2)
        assert after[1].lstrip().startswith('"""'), f"{props.__name__}.{field.name}"


def test_a_default_written_again_in_the_signature_is_found() -> None:
    @dataclasses.dataclass(frozen=True, kw_only=True)
    class Props:
        name: str
        size: int = 5

    class Declared:
        def __init__(self, *, name: str, size: int = Props.size) -> None: ...

    class Again:
        def __init__(self, *, name: str, size: int = 6) -> None: ...

    class Reordered:
        def __init__(self, *, size: int = Props.size, name: str) -> None: ...

    assert undeclared(Declared, Props) == []
    assert undeclared(Again, Props) == ["size: 6 is not the props' default"]
    assert undeclared(Reordered, Props)[0].startswith("names:")
