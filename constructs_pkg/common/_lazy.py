"""Runs in: CDK app (synth time).

Values rendered when the template is written: `lazy_string` and `lazy_list` call their
``render`` at synth, once the app is whole. A construct that grows (a scaler's tables, its
state store, its owned targets) writes its whole state once this way, instead of again at
each addition (which costs a call into jsii's kernel per value each time, and grows with the
square of the tables)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jsii
from aws_cdk import (
    IStableAnyProducer,
    IStableListProducer,
    IStableNumberProducer,
    IStableStringProducer,
    Lazy,
    Stack,
)
from constructs import IConstruct

__all__ = ["lazy_any", "lazy_json", "lazy_list", "lazy_number", "lazy_string"]


@jsii.implements(IStableStringProducer)
class _String:
    def __init__(self, render: Callable[[], str]) -> None:
        self._render = render

    def produce(self) -> str:
        return self._render()


@jsii.implements(IStableListProducer)
class _List:
    def __init__(self, render: Callable[[], list[str]]) -> None:
        self._render = render

    def produce(self) -> list[str]:
        return self._render()


@jsii.implements(IStableNumberProducer)
class _Number:
    def __init__(self, render: Callable[[], int | float]) -> None:
        self._render = render

    def produce(self) -> int | float:
        return self._render()


@jsii.implements(IStableAnyProducer)
class _Any:
    def __init__(self, render: Callable[[], Any]) -> None:
        self._render = render

    def produce(self) -> Any:
        return self._render()


def lazy_number(render: Callable[[], int | float]) -> float:
    """A number token whose value is ``render()`` when the template is written."""
    return Lazy.number(_Number(render))


def lazy_any(render: Callable[[], Any]) -> Any:
    """A token of any value (a list of structs, say), ``render()`` when the template is
    written."""
    return Lazy.any(_Any(render))


def lazy_string(render: Callable[[], str]) -> str:
    """A string token whose value is ``render()`` when the template is written."""
    return Lazy.string(_String(render))


def lazy_list(render: Callable[[], list[str]]) -> list[str]:
    """A list token whose value is ``render()`` when the template is written."""
    return Lazy.list(_List(render))


def lazy_json(scope: IConstruct, render: Callable[[], Any]) -> str:
    """A string token whose value is ``render()`` as JSON when the template is written, the
    tokens inside it joined as ``scope``'s stack writes them (`Stack.to_json_string`)."""
    return lazy_string(lambda: Stack.of(scope).to_json_string(render()))
