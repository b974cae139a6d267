"""A Standard-Infrequent Access table in ``advise``'s reservation: reserved capacity covers
the Standard class only, so none of its units are reservable and its bill is that class's;
what DescribeTable says of a table's class is read as untrusted input (moto keeps no table
class: the answers are given as AWS gives them)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from ddb_capacity_tools import advise as advise_module
from ddb_capacity_tools.advise import Failure
from ddb_capacity_tools.fleet_current import Current
from ddb_capacity_tools.page.fleet_page import _reservation as reservation_html
from ddb_capacity_tools.reserve import Setup as ReserveSetup
from ddb_capacity_tools.reserve import plan_fleet, summary
from ddb_capacity_tools.reserve_sizing import fleet_bill
from ddb_capacity_tools.simulator.backtest import history
from ddb_capacity_tools.simulator.prices import Prices
from ddb_capacity_tools.simulator.table_class import STANDARD, STANDARD_IA
from tests.support.advise import busy, reserving
from tests.support.advise import region as region  # noqa: F401 (fixture)


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ({}, STANDARD),
        ({"TableClassSummary": {"TableClass": "STANDARD"}}, STANDARD),
        ({"TableClassSummary": {"TableClass": STANDARD_IA}}, STANDARD_IA),
        ({"TableClassSummary": {"TableClass": "GLACIER"}}, None),
        ({"TableClassSummary": {}}, None),
        ({"TableClassSummary": "STANDARD"}, None),
        ("not an answer", None),
    ],
)
def test_a_table_class_is_read_as_untrusted_input(answer: Any, expected: str | None) -> None:
    assert advise_module.table_class(answer) == expected
    assert (advise_module.class_note(expected) == "") is (expected == STANDARD)


def test_a_standard_ia_tables_units_are_never_reservable(region: dict[str, Any]) -> None:
    # GIVEN a table's day of history, advised as a Standard table and as a Standard-IA one
    busy(region, "Archive", 40)
    # (billed by the minute: by each hour's highest level, three busy hours a day are
    # cheaper on-demand, and nothing would be reservable in either class)
    setup = reserving(region["end"], billing="per-minute")
    plain = advise_module.advise_one(region["cloudwatch"], region["ddb"], "Archive", None, setup)
    assert not isinstance(plain, Failure) and "Standard-Infrequent Access" not in plain.notes
    trace = history(region["cloudwatch"], region["ddb"], "Archive", None, 1, region["end"])
    size = advise_module.Size(0.0, table_class=STANDARD_IA)
    advice = advise_module.advise_trace(trace, "Archive", None, setup, lambda _: Current({}), size)
    # THEN its notes say why; none of its units are reservable, and its bill is that
    # class's: 25 % more a unit-hour than the same units in the Standard class
    assert not isinstance(advice, Failure)
    assert advise_module.class_note(STANDARD_IA) in advice.notes
    assert plain.hours is not None and advice.hours is not None
    alone, archive = plain.hours.listed.plan, advice.hours.listed.plan
    assert sum(alone.read) > 0 and sum(alone.write) > 0
    assert sum(archive.read) == sum(archive.write) == 0
    prices = Prices()
    assert fleet_bill(archive, {}, None, prices) == pytest.approx(
        fleet_bill(alone, {}, None, prices) * prices.ia_throughput_factor
    )
    # AND the fleet's plan reserves for the Standard table only, and says which is which
    fleet = [plain.hours, replace(advice.hours, name="IA")]
    plan = plan_fleet(fleet, ["1y"], ReserveSetup())
    alone_plan = plan_fleet([plain.hours], ["1y"], ReserveSetup())
    assert plan.units == alone_plan.units
    units = summary(plan)["median_hourly_units"]
    assert units["IA"] == {"read": 0.0, "write": 0.0, "infrequent_access": True}
    assert reservation_html(summary(plan)).count(">Standard-IA<") == 2
