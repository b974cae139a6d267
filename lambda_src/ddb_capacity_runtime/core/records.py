"""Runs in: scaler Lambda, broker Lambda, workers (the user's own jobs, in direct mode), CDK
app (synth), workstation (simulator).

`direct_init`: a frozen dataclass's ``__init__`` without the cost of
``object.__setattr__`` per field, for the records a tick makes by the thousand. Pure.
"""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

__all__ = ["direct_init"]

T = TypeVar("T")


def direct_init(cls: type[T]) -> type[T]:
    """Give the frozen dataclass ``cls`` an ``__init__`` that takes the same arguments, in
    the same order with the same defaults, as the generated one, and sets each field
    straight into the instance's ``__dict__``. A field with a ``default_factory`` gets a
    new value when its argument is left out or None. Apply it above ``@dataclass``."""
    params, lines, names = [], [], {}
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        if not f.init:
            raise TypeError(f"{cls.__name__}.{f.name}: direct_init takes init fields only")
        if f.default is not dataclasses.MISSING:
            names[f"_default_{f.name}"] = f.default
            params.append(f"{f.name}=_default_{f.name}")
            lines.append(f"    d[{f.name!r}] = {f.name}")
        elif f.default_factory is not dataclasses.MISSING:
            names[f"_factory_{f.name}"] = f.default_factory
            params.append(f"{f.name}=None")
            lines.append(
                f"    d[{f.name!r}] = _factory_{f.name}() if {f.name} is None else {f.name}"
            )
        else:
            params.append(f.name)
            lines.append(f"    d[{f.name!r}] = {f.name}")
    source = "\n".join(
        [f"def __init__(self, {', '.join(params)}):", "    d = self.__dict__", *lines]
    )
    namespace: dict[str, Any] = dict(names)
    exec(source, namespace)  # noqa: S102 (source made above from the class's own fields)
    init = namespace["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__doc__ = f"The fields of {cls.__name__}, in order, set directly."
    setattr(cls, "__init__", init)  # noqa: B010 (a method made at run time)
    return cls
