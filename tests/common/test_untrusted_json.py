"""Every untrusted JSON is bounded in depth and size before anything uses it: the shared
helper (:mod:`ddb_capacity_runtime.core.untrusted`) and each entry point that takes a
message or an event from outside (the signals function, the broker; the batch function's
``parse_batch`` and the fleet worker are covered in their own test files)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ddb_capacity_runtime.core.errors import shown
from ddb_capacity_runtime.core.untrusted import MAX_DEPTH, UntrustedJSONError, parse_json
from ddb_capacity_runtime.core.untrusted_values import check_json, json_chars
from ddb_capacity_runtime.fast_path.surge_raise import take_report
from ddb_capacity_runtime.fast_path.surge_settings import MAX_REPORT_CHARS, SurgeSettings
from ddb_capacity_runtime.requests.broker import MAX_EVENT_CHARS, BrokerConfig, serve
from tests.support.hypothesis_profiles import examples
from tests.support.untrusted_json import emf_total


def nested(levels: int, leaf: object = 1) -> Any:
    """``leaf`` inside ``levels`` lists, built without recursion."""
    value = leaf
    for _ in range(levels):
        value = [value]
    return value


# ------------------------------------------------------------------ the helper


def test_a_text_nested_too_deep_is_refused_before_it_is_decoded() -> None:
    text = "[" * 100_000 + "]" * 100_000
    with pytest.raises(
        UntrustedJSONError,
        match=f"message: nested 100,000 levels deep; expected at most {MAX_DEPTH}",
    ):
        parse_json(text, "message", max_chars=1_000_000)


def test_brackets_inside_strings_nest_nothing() -> None:
    text = json.dumps({"a": '[[[[[[[[[[[[[[[[[[[["[[[[', "b": [[1]]})
    assert parse_json(text, "message", max_chars=1_000, max_depth=3)["b"] == [[1]]


def test_a_text_too_long_or_not_json_is_refused_naming_it() -> None:
    with pytest.raises(
        UntrustedJSONError, match="message: got 2,001 characters; expected at most 2,000"
    ):
        parse_json("x" * 2_001, "message", max_chars=2_000)
    with pytest.raises(UntrustedJSONError, match="message: not JSON"):
        parse_json("{", "message", max_chars=2_000)
    with pytest.raises(UntrustedJSONError, match="message: got a bytes; expected a JSON text"):
        parse_json(b"{}", "message", max_chars=2_000)


def test_a_decoded_value_nested_too_deep_or_too_large_is_refused() -> None:
    with pytest.raises(UntrustedJSONError, match=f"event: nested more than {MAX_DEPTH} levels"):
        check_json({"a": nested(992)}, "event", max_chars=10_000)
    with pytest.raises(UntrustedJSONError, match="event: larger than 1,000 characters"):
        check_json({"a": "x" * 1_000}, "event", max_chars=1_000)
    with pytest.raises(UntrustedJSONError, match="event: larger than 1,000 characters"):
        check_json(list(range(1_000)), "event", max_chars=1_000)
    check_json({"a": nested(MAX_DEPTH - 1)}, "event", max_chars=1_000)  # within: no error


def test_shown_never_fails_on_a_value_nested_deeper_than_repr_goes() -> None:
    assert shown(nested(100_000)) == "<list nested too deep to show>"


def test_shown_never_fails_on_an_object_whose_attributes_raise() -> None:
    """Asking whether a value is a construct (its ``node.path``) never replaces the error
    being reported: an object whose attribute lookup raises is shown by its repr."""

    class Hostile:
        def __getattr__(self, name: str) -> object:
            raise KeyError(name)

        def __repr__(self) -> str:
            return "<hostile>"

    assert shown(Hostile()) == "<hostile>"


# ------------------------------------------------------------------ the entry points


SCOPES = BrokerConfig({"Orders": frozenset()})


@pytest.mark.parametrize(
    "event",
    [
        {"v": 1, "table": nested(992), "process": "p1"},  # repr recursed past its limit
        {"v": 1, "table": "Orders", "dims": nested(40)},
        {"v": 1, "table": "Orders", "process": "p" * MAX_REPORT_CHARS},
    ],
)
def test_the_signals_function_refuses_a_deep_or_large_report_and_counts_it(
    event: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a report nested deeper, or larger, than any report the hook sends
    # WHEN the signals function takes it (no AWS call is made before it is refused)
    answer = take_report(event, SCOPES, SurgeSettings())
    # THEN it is refused, counted, and the invocation does not fail
    assert answer["ok"] is False and answer["status"] == "refused"
    assert "report: " in answer["reason"]
    assert emf_total(capsys.readouterr().out, "ReportsRefused") == 1


@pytest.mark.parametrize(
    "event",
    [
        {"action": "request", "table": nested(992)},
        {"action": "request", "table": "Orders", "read": "1" * MAX_EVENT_CHARS},
    ],
)
def test_the_broker_refuses_a_deep_or_large_event_and_counts_it(
    event: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    answer = serve(event, SCOPES)
    assert answer["ok"] is False and answer["error"] == "refused"
    assert answer["message"].startswith("event: ")
    assert emf_total(capsys.readouterr().out, "Refused") == 1


def test_each_bound_takes_what_is_at_it_and_refuses_one_past_it() -> None:
    # a text of exactly max_chars is read; one character more is refused
    text = json.dumps(["x" * 10])
    assert parse_json(text, "message", max_chars=len(text)) == ["x" * 10]
    with pytest.raises(UntrustedJSONError, match="message: got"):
        parse_json(text, "message", max_chars=len(text) - 1)
    # a value nested exactly max_depth levels is taken; one level more is refused
    check_json(nested(3), "event", max_chars=1_000, max_depth=3)
    with pytest.raises(UntrustedJSONError, match="event: nested more than 3 levels"):
        check_json(nested(4), "event", max_chars=1_000, max_depth=3)
    # a value whose measure is exactly max_chars is taken; one character less refuses it
    value = {"key": ["text", 12345, None, True, 1.5]}
    check_json(value, "event", max_chars=json_chars(value))
    with pytest.raises(UntrustedJSONError, match="event: larger than"):
        check_json(value, "event", max_chars=json_chars(value) - 1)


JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**60), max_value=10**60)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E, exclude_characters='"\\')),
    lambda children: (
        st.lists(children, max_size=5)
        | st.dictionaries(
            st.text(
                st.characters(min_codepoint=0x20, max_codepoint=0x7E, exclude_characters='"\\'),
                max_size=40,
            ),
            children,
            max_size=5,
        )
    ),
    max_leaves=20,
)


@settings(max_examples=examples(300), deadline=None)
@given(JSON_VALUES)
def test_the_measure_of_a_value_is_never_below_its_compact_json_text(value: Any) -> None:
    # what a sender sizes a message by, and the size bound a reader applies, both count at
    # least every character of the text: its keys, each digit of a long integer
    assert json_chars(value) >= len(json.dumps(value, separators=(",", ":")))
