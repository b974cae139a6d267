"""The fast path's report contract (``core.surge``): what a process writes
(``Report.as_json``) the signals function reads back as it was (``parse_report``), through
JSON; and every field that breaks a rule is refused whole with a ``SurgeReportError`` that names
the field and the value received."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ddb_capacity_runtime.core.surge import SurgeReportError
from ddb_capacity_runtime.core.surge_report import (
    CAUSES,
    CLOCK_SKEW_SECONDS,
    FRESH_SECONDS,
    MAX_DIMENSIONS,
    MAX_PROCESS_CHARS,
    MAX_REQUESTS_PER_SECOND,
    MAX_TABLE_CHARS,
    MAX_UNITS_PER_SECOND,
    MAX_WINDOW_SECONDS,
    MIN_WINDOW_SECONDS,
    PROCESS_ID,
    REPORT_VERSION,
    DimensionReport,
    Report,
    parse_report,
)
from tests.support.hypothesis_profiles import examples

NOW = 1_800_000_000.0


def thousandths(low: float, high: float) -> st.SearchStrategy[float]:
    """Numbers of at most 3 decimals (what ``as_json`` keeps) from ``low`` to ``high``."""
    return st.integers(math.ceil(low * 1000), math.floor(high * 1000)).map(lambda n: n / 1000)


names = st.text(min_size=1, max_size=MAX_TABLE_CHARS)


@st.composite
def reports(draw: st.DrawFn) -> Report:
    seconds = draw(thousandths(MIN_WINDOW_SECONDS, MAX_WINDOW_SECONDS))
    most = int(MAX_REQUESTS_PER_SECOND * seconds)
    scopes = draw(st.lists(st.none() | names, min_size=1, max_size=21, unique=True))
    keys = [(i, d) for i in scopes for d in ("read", "write")]
    chosen = draw(st.lists(st.sampled_from(keys), min_size=1, max_size=MAX_DIMENSIONS, unique=True))
    dims = tuple(
        DimensionReport(
            index,
            dimension,
            draw(thousandths(0, MAX_UNITS_PER_SECOND * seconds)),
            draw(st.integers(0, most)),
            {c: draw(st.integers(0, most)) for c in CAUSES},
            draw(st.integers(0, most)),
        )
        for index, dimension in chosen
    )
    return Report(
        draw(names),
        draw(st.from_regex(PROCESS_ID, fullmatch=True)),
        seconds,
        draw(thousandths(NOW - FRESH_SECONDS - CLOCK_SKEW_SECONDS, NOW + CLOCK_SKEW_SECONDS)),
        dims,
    )


@settings(max_examples=examples(150), deadline=None)
@given(reports())
def test_a_report_reads_back_as_it_was_written(report: Report) -> None:
    assert parse_report(json.loads(json.dumps(report.as_json())), NOW) == report


def test_as_json_rounds_to_thousandths_and_leaves_out_causes_never_met() -> None:
    dim = DimensionReport("by-g", "read", 1.23456, 3, {"provisioned": 0, "key_range": 2})
    raw = Report("orders", "host-1-ab", 5.00049, NOW + 0.0004, (dim,)).as_json()
    assert raw == {
        "v": REPORT_VERSION,
        "table": "orders",
        "process": "host-1-ab",
        "seconds": 5.0,
        "sent": NOW,
        "dims": [
            {"index": "by-g", "dimension": "read", "units": 1.235, "requests": 3,
             "throttles": {"key_range": 2}},
        ],
    }  # fmt: skip
    parsed = parse_report(raw, NOW)
    assert parsed.dims[0].throttles == {c: 2 if c == "key_range" else 0 for c in CAUSES}
    assert parsed.dims[0].failed == 0
    assert parsed.dims[0].sort_key == "index/by-g:read"


def test_failed_requests_are_written_only_when_some_failed_and_read_back() -> None:
    # GIVEN a dimension with 2 requests never served, and one with none
    failed = DimensionReport(None, "write", 4.0, 4, {"unknown": 3}, failed=2)
    served = DimensionReport("by-g", "write", 4.0, 4, {})
    raw = Report("orders", "host-1-ab", 5.0, NOW, (failed, served)).as_json()
    # THEN only the first carries the field, and both read back as they were
    assert raw["dims"][0]["failed"] == 2 and raw["dims"][0]["throttles"] == {"unknown": 3}
    assert "failed" not in raw["dims"][1]
    parsed = parse_report(json.loads(json.dumps(raw)), NOW)
    assert [d.failed for d in parsed.dims] == [2, 0]
    assert parsed.dims[0].throttles["unknown"] == 3


def good() -> dict[str, Any]:
    return {
        "v": REPORT_VERSION,
        "table": "orders",
        "process": "host-1-ab",
        "seconds": 10.0,
        "sent": NOW,
        "dims": [
            {"index": None, "dimension": "write", "units": 5.0, "requests": 5,
             "throttles": {"provisioned": 1}},
            {"index": "by-g", "dimension": "write", "units": 5.0, "requests": 5},
        ],
    }  # fmt: skip


def put(raw: dict[str, Any], path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    """``raw`` with the field at ``path`` set to ``value`` (removed if ``value`` is
    :data:`MISSING`)."""
    target: Any = raw
    for step in path[:-1]:
        target = target[step]
    if value is MISSING:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return raw


MISSING = object()
NAN, INF = float("nan"), float("inf")
#: Bad numbers for any field that takes one.
BAD_NUMBERS = [NAN, INF, -INF, -1, True, False, "5", None, [5]]
#: Every bad field: its path in the report, the value, and how the message names the field.
BAD: list[tuple[tuple[Any, ...], Any, str]] = [
    (("v",), 2, "v"),
    (("v",), "1", "v"),
    (("v",), None, "v"),
    (("v",), MISSING, "v"),
    (("table",), "", "table"),
    (("table",), "t" * (MAX_TABLE_CHARS + 1), "table"),
    (("table",), 5, "table"),
    (("table",), MISSING, "table"),
    (("process",), "p" * (MAX_PROCESS_CHARS + 1), "process"),
    (("process",), "", "process"),
    (("process",), ["p"], "process"),
    (("process",), "p q", "process"),
    (("process",), "p\u00e9", "process"),
    *((("seconds",), bad, "seconds") for bad in BAD_NUMBERS),
    (("seconds",), MIN_WINDOW_SECONDS - 0.001, "seconds"),
    (("seconds",), MAX_WINDOW_SECONDS + 0.001, "seconds"),
    *((("sent",), bad, "sent") for bad in BAD_NUMBERS),
    (("sent",), NOW + CLOCK_SKEW_SECONDS + 1, "sent"),  # from the future
    (("sent",), NOW - FRESH_SECONDS - CLOCK_SKEW_SECONDS - 1, "sent"),  # too old
    (("dims",), [], "dims"),
    (("dims",), {"index": None}, "dims"),
    (("dims",), None, "dims"),
    (("dims", 1), "write", "dims[1]"),
    (("dims", 1, "index"), "", "dims[1].index"),
    (("dims", 1, "index"), "i" * (MAX_TABLE_CHARS + 1), "dims[1].index"),
    (("dims", 1, "index"), 3, "dims[1].index"),
    (("dims", 0, "dimension"), "reads", "dims[0].dimension"),
    (("dims", 0, "dimension"), None, "dims[0].dimension"),
    *((("dims", 0, "units"), bad, "dims[0].units") for bad in BAD_NUMBERS),
    (("dims", 0, "units"), MAX_UNITS_PER_SECOND * 10 + 1, "dims[0].units"),
    *((("dims", 1, "requests"), bad, "dims[1].requests") for bad in [-1, 1.5, True, "5", NAN]),
    (("dims", 1, "requests"), int(MAX_REQUESTS_PER_SECOND * 10) + 1, "dims[1].requests"),
    (("dims", 0, "throttles"), {"hot": 1}, "dims[0].throttles"),
    (("dims", 0, "throttles"), {"key-range": 1}, "dims[0].throttles"),
    (("dims", 0, "throttles"), [1], "dims[0].throttles"),
    *(
        (("dims", 0, "throttles", "key_range"), bad, "dims[0].throttles.key_range")
        for bad in [-1, 2.5, True, None, "1", NAN]
    ),
    *(
        (("dims", 0, "throttles", "unknown"), bad, "dims[0].throttles.unknown")
        for bad in [-1, 2.5, True, None, "1", NAN]
    ),
    *((("dims", 0, "failed"), bad, "dims[0].failed") for bad in [-1, 2.5, True, None, "1", NAN]),
    (("dims", 0, "failed"), int(MAX_REQUESTS_PER_SECOND * 10) + 1, "dims[0].failed"),
]


#: Each bad field's test id: its position and the field (the same in every process, which a
#: value such as ``object()`` or a time is not).
BAD_IDS = [f"{n}-{field}" for n, (_, _, field) in enumerate(BAD)]


@pytest.mark.parametrize(("path", "value", "field"), BAD, ids=BAD_IDS)
def test_every_bad_field_is_refused_naming_it_and_its_value(
    path: tuple[Any, ...], value: Any, field: str
) -> None:
    raw = put(good(), path, value)
    with pytest.raises(SurgeReportError) as caught:
        parse_report(raw, NOW)
    message = str(caught.value)
    shown = "None" if value is MISSING else repr(value)[:40]
    assert message.startswith(f"{field}: got "), message
    assert shown in message and "expected" in message, message


@pytest.mark.parametrize("version", [True, 1.0])
def test_a_version_that_only_equals_1_is_refused(version: object) -> None:
    with pytest.raises(SurgeReportError, match=f"^v: got {version!r}"):
        parse_report(put(good(), ("v",), version), NOW)


def test_a_report_that_is_not_an_object_is_refused() -> None:
    for raw in (None, [good()], "{}", 1):
        with pytest.raises(SurgeReportError, match=r"^report: got .*; expected a JSON object"):
            parse_report(raw, NOW)


def test_a_dimension_twice_is_refused() -> None:
    raw = good()
    raw["dims"].append(dict(raw["dims"][1], units=1.0))
    with pytest.raises(SurgeReportError) as caught:
        parse_report(raw, NOW)
    assert str(caught.value).startswith("dims[2]: ") and "index/by-g:write appears twice" in str(
        caught.value
    )


def test_more_dimensions_than_a_table_has_are_refused() -> None:
    raw = good()
    raw["dims"] = [
        {"index": f"index-{i:02d}", "dimension": d, "units": 1.0, "requests": 1}
        for i in range(MAX_DIMENSIONS)
        for d in ("read", "write")
    ][: MAX_DIMENSIONS + 1]
    with pytest.raises(
        SurgeReportError, match=rf"^dims: got .*; expected a list of 1 to {MAX_DIMENSIONS}"
    ):
        parse_report(raw, NOW)
    raw["dims"] = raw["dims"][:MAX_DIMENSIONS]
    assert len(parse_report(raw, NOW).dims) == MAX_DIMENSIONS


def test_a_long_value_is_shown_cut_short() -> None:
    with pytest.raises(SurgeReportError) as caught:
        parse_report(put(good(), ("table",), "t" * 1000), NOW)
    message = str(caught.value)
    assert "(1,002 characters)" in message and len(message) < 200


def test_the_bounds_themselves_are_accepted() -> None:
    raw = good()
    raw.update(seconds=MAX_WINDOW_SECONDS, sent=NOW - FRESH_SECONDS - CLOCK_SKEW_SECONDS)
    raw["table"], raw["process"] = "t" * MAX_TABLE_CHARS, "p" * MAX_PROCESS_CHARS
    raw["dims"][0].update(
        units=MAX_UNITS_PER_SECOND * MAX_WINDOW_SECONDS,
        requests=int(MAX_REQUESTS_PER_SECOND * MAX_WINDOW_SECONDS),
        failed=int(MAX_REQUESTS_PER_SECOND * MAX_WINDOW_SECONDS),
    )
    assert parse_report(raw, NOW).seconds == MAX_WINDOW_SECONDS
    raw.update(seconds=MIN_WINDOW_SECONDS, sent=NOW + CLOCK_SKEW_SECONDS)
    raw["dims"][0].update(units=0, requests=0, throttles={}, failed=0)
    assert parse_report(raw, NOW).sent == NOW + CLOCK_SKEW_SECONDS
