"""``props.is_token``: the constructs' one question "is this an unresolved CDK token?". It
answers plain values itself (a round trip to jsii's kernel each would cost the constructs'
synth time) and must answer exactly as ``Token.is_unresolved`` does, tokens of every kind
included."""

from __future__ import annotations

import math
from types import SimpleNamespace
from typing import Any

import aws_cdk as cdk
import jsii
import pytest
from aws_cdk import Aws, Duration, Lazy, Token
from hypothesis import given
from hypothesis import strategies as st

from constructs_pkg.common import _props as props
from constructs_pkg.common._props import is_token


@jsii.implements(cdk.IStableStringProducer)
class _Text:
    def produce(self) -> str:
        return "x"


@jsii.implements(cdk.IStableNumberProducer)
class _Number:
    def produce(self) -> float:
        return 1


@jsii.implements(cdk.IStableListProducer)
class _List:
    def produce(self) -> list[str]:
        return ["a"]


@jsii.implements(cdk.IStableAnyProducer)
class _Any:
    def produce(self) -> object:
        return 1


def _tokens() -> list[Any]:
    """Tokens of every kind a construct may be given, from an environment-agnostic stack."""
    stack = cdk.Stack(cdk.App(), "Tokens")
    text = Lazy.string(_Text())
    number = Lazy.number(_Number())
    return [
        text,
        f"arn:{Aws.PARTITION}:dynamodb:{Aws.REGION}:{Aws.ACCOUNT_ID}:table/{text}",
        number,
        Token.as_number(text),
        stack.account,
        stack.region,
        Duration.seconds(number).to_seconds(),
        Lazy.list(_List()),
        Lazy.any(_Any()),
    ]


def test_every_kind_of_token_is_one_and_their_plain_neighbours_are_not() -> None:
    tokens = _tokens()
    assert [is_token(t) for t in tokens] == [True] * len(tokens)
    assert [bool(Token.is_unresolved(t)) for t in tokens] == [True] * len(tokens)
    plain = [None, True, 0, -5, 2**53 - 1, 0.5, -1e300, math.inf, math.nan, "", "orders"]
    plain += ["${Token[not one", "#{Token[", "{Token[x]}", 2**60, 1.5e200]
    assert [is_token(v) for v in plain] == [False] * len(plain)
    element = Lazy.list(_List())[0]  # "#{Token[...]}": a token only inside its list
    assert is_token(element) == bool(Token.is_unresolved(element))


@given(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(min_value=-(2**63), max_value=2**63),
        st.floats(allow_nan=False, allow_infinity=False),
        st.text(max_size=40),
        st.text(alphabet="${}#[]Token.0123456789ABC", max_size=30),
        st.from_regex(r"\A[a-z]{0,5}\$\{Token\[[A-Za-z0-9.]{1,12}\]\}[a-z]{0,5}\Z"),
    )
)
def test_plain_values_are_answered_as_the_kernel_answers(value: object) -> None:
    assert is_token(value) == bool(Token.is_unresolved(value))


@pytest.mark.parametrize(
    "value", [None, False, 7, 4_000, 70.0, -2.5, "orders", "a{b}[c]", b"orders", bytearray(2)]
)
def test_a_plain_value_never_reaches_the_kernel(
    value: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    def kernel(_: object) -> bool:
        raise AssertionError(f"{value!r} was sent to jsii's kernel")

    monkeypatch.setattr(props, "Token", SimpleNamespace(is_unresolved=kernel))
    assert is_token(value) is False


def test_a_value_that_may_be_a_token_is_asked_of_the_kernel(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    asked: list[object] = []

    def kernel(value: object) -> bool:
        asked.append(value)
        return True

    monkeypatch.setattr(props, "Token", SimpleNamespace(is_unresolved=kernel))
    maybe = ["${Token[TOKEN.1]}", 2**53, -1.8881545897087626e289, ["#{Token[TOKEN.2]}"]]
    assert [is_token(v) for v in maybe] == [True] * len(maybe)
    assert asked == maybe


def test_a_duration_of_a_token_is_one() -> None:
    """``Token.is_unresolved`` does not look inside a Duration: ``is_token`` does, so a
    construct that checks a Duration's range lets a token through (or refuses it by name)."""
    number = Lazy.number(_Number())
    assert not Token.is_unresolved(Duration.seconds(number))
    assert is_token(Duration.seconds(number)) and is_token(Duration.minutes(number))
    assert is_token(Duration.hours(Token.as_number(Aws.ACCOUNT_ID)))
    assert not is_token(Duration.minutes(5)) and not is_token(Duration.seconds(0))


def test_a_durations_seconds_are_asked_of_the_kernel_once(monkeypatch: pytest.MonkeyPatch) -> None:
    # GIVEN jsii's kernel, its calls to a Duration's toSeconds counted
    from jsii._kernel.providers.process import ProcessProvider

    asked: list[str] = []
    invoke = ProcessProvider.invoke

    def counted(self: Any, request: Any) -> Any:
        if getattr(request, "method", "") == "toSeconds":
            asked.append(request.method)
        return invoke(self, request)

    monkeypatch.setattr(ProcessProvider, "invoke", counted)
    five, parameter = Duration.minutes(5), cdk.CfnParameter(cdk.Stack(), "P", type="Number")
    token = Duration.seconds(parameter.value_as_number)
    # WHEN the constructs ask each one's seconds three times
    seen = [props.duration_seconds(d) for d in (five, token) for _ in range(3)]
    # THEN each is asked of the kernel once, a token's amount answered as unknown every time
    assert seen == [300.0] * 3 + [None] * 3
    assert len(asked) == 2
    # AND another Duration of the same amount is asked of it on its own
    assert props.duration_seconds(Duration.minutes(5)) == 300.0 and len(asked) == 3
