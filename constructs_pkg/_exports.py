"""Runs in: CDK app (synth time).

A package's public names, each module imported on first use of one of its names (PEP 562):
the constructs load the CDK (seconds of jsii), so an app that uses the table and the scaler
does not pay for the rest, and a feature's private module imported by another feature does
not load its whole feature.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(
    package: str, names: Mapping[str, str], namespace: dict[str, Any]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package``, whose public ``names`` each come from
    a module (``.module`` of the package, or a dotted module elsewhere), imported on first use
    and kept in the package's ``namespace``."""

    def getattr_(name: str) -> Any:
        module = names.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module, package), name)
        namespace[name] = value
        return value

    def dir_() -> list[str]:
        return sorted(namespace.get("__all__", names))

    return getattr_, dir_
