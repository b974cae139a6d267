"""The scaler's settings contract is one table (settings.SETTINGS): the construct writes
its variables with ScalerConfig.to_env, the Lambda reads them with ScalerConfig.from_env,
and the simulator and both sides take a mode's policy from settings.for_mode."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime
from pathlib import Path

import aws_cdk as cdk
import pytest
from aws_cdk import aws_dynamodb as dynamodb
from hypothesis import given, settings
from hypothesis import strategies as st

from constructs_pkg import ThrottleAwareScaler
from ddb_capacity_runtime.core.settings import (
    CONSTRUCT_SETTINGS,
    MODES,
    SETTINGS,
    SETTINGS_BY_KEY,
    ConfigError,
    Kind,
    Mode,
    ScalerConfig,
    Setting,
    for_mode,
)
from ddb_capacity_tools import settings_table
from tests.support.hypothesis_profiles import examples
from tests.support.shape import ROOT


def _value(setting: Setting) -> st.SearchStrategy[str]:
    """Any value ``setting`` accepts, as its variable holds it."""
    if setting.kind is Kind.WHOLE:
        step = setting.step
        return st.integers(int(setting.lo) // step, int(setting.hi) // step).map(
            lambda n: str(n * step)
        )
    if setting.kind is Kind.NUMBER:
        numbers = st.floats(setting.lo, setting.hi, allow_nan=False)
        return numbers.map(lambda x: f"{x:g}").filter(
            lambda text: setting.lo <= float(text) <= setting.hi
        )
    if setting.kind is Kind.FLAG:
        return st.sampled_from(["true", "false"])
    if setting.kind is Kind.WHOLES:
        wholes = st.lists(st.integers(int(setting.lo), int(setting.hi)), max_size=4)
        return wholes.map(lambda values: ",".join(map(str, values)))
    if setting.kind is Kind.MODE:
        return st.sampled_from(MODES)
    if setting.kind is Kind.NAMES:
        return st.lists(st.from_regex(r"[A-Za-z0-9_.-]{3,20}", fullmatch=True), max_size=3).map(
            ",".join
        )
    if setting.kind is Kind.JSON:
        return st.just('{"Orders": {"min": 5, "read": {"max": 90}}}')
    if setting.kind is Kind.DATE:
        return st.dates().map(lambda d: d.isoformat())
    return st.from_regex(r"[A-Za-z0-9_:-]{1,30}", fullmatch=True)


@st.composite
def environments(draw: st.DrawFn) -> dict[str, str]:
    env = {s.name: draw(_value(s)) for s in SETTINGS if draw(st.booleans())}
    env.setdefault("SCALER_TABLES", "Orders")
    return env


@settings(max_examples=examples(200), deadline=None)
@given(environments())
def test_what_to_env_writes_from_env_reads_back(env: dict[str, str]) -> None:
    try:
        config = ScalerConfig.from_env(env)
    except ConfigError:
        return  # a pair of values that contradict each other (checked below)
    assert ScalerConfig.from_env(config.to_env()) == config
    # each setting's variable alone carries its value
    for setting in SETTINGS:
        (written,) = config.to_env([setting.key]).items()
        assert written[0] == setting.name


def test_contradicting_values_are_refused_with_both_names() -> None:
    with pytest.raises(ConfigError, match="SCALER_DEFAULT_MIN \\(9\\) must not be above"):
        ScalerConfig.from_env(
            {"SCALER_TABLES": "t", "SCALER_DEFAULT_MIN": "9", "SCALER_DEFAULT_MAX": "8"}
        )


@pytest.mark.parametrize("raw", ["50,x", "50,95", "19", "50.5", "50;60"])
def test_allowed_tuned_targets_that_are_not_whole_percentages_are_refused(raw: str) -> None:
    with pytest.raises(
        ConfigError,
        match=f"SCALER_TUNED_ALLOWED must be whole numbers from 20 to 90, comma-separated; "
        f"got '{raw}'",
    ):
        ScalerConfig.from_env({"SCALER_TABLES": "t", "SCALER_TUNED_ALLOWED": raw})
    config = ScalerConfig.from_env({"SCALER_TABLES": "t", "SCALER_TUNED_ALLOWED": " 60,50,60 "})
    assert config.tuned_allowed == (50, 60)


@pytest.mark.parametrize("raw", ["20261201", "2026-13-01", "2026-02-30", "tomorrow", "2026-1-1"])
def test_a_date_that_is_not_one_is_refused_naming_the_variable(raw: str) -> None:
    with pytest.raises(
        ConfigError,
        match=f"SCALER_READ_LEGACY_STATE_UNTIL must be a date as YYYY-MM-DD \\(or empty: "
        f"none\\); got '{raw}'",
    ):
        ScalerConfig.from_env({"SCALER_TABLES": "t", "SCALER_READ_LEGACY_STATE_UNTIL": raw})


NOW = datetime(2026, 11, 20, 23, 59, tzinfo=UTC)


@pytest.mark.parametrize(
    ("until", "refused"),
    [
        (None, "read only during an upgrade's window"),
        (date(2026, 11, 19), "the window for reading 0.4's state tags ended"),
        (date(2026, 11, 20), None),
        (date(2026, 12, 20), None),  # 30 days
        (date(2026, 12, 21), "more than 30 days ahead"),
    ],
)
def test_0_4_state_tags_are_read_only_within_an_upgrades_window(
    until: date | None, refused: str | None
) -> None:
    said = ScalerConfig(read_legacy_state_until=until).legacy_state_refused(NOW)
    assert said == refused if refused is None else refused in (said or "")


def test_the_configured_minimum_comes_from_the_overrides_alone() -> None:
    config = ScalerConfig(overrides={"a": {"min": 40, "read": {"min": 300}}, "b": {"max": 9}})
    assert config.configured_min("a", "read") == 300
    assert config.configured_min("a", "write") == 40
    assert config.configured_min("b", "read") is None  # the default min is not stated
    assert config.configured_min("c", "read") is None


def test_an_unknown_key_is_refused() -> None:
    with pytest.raises(KeyError):
        ScalerConfig().to_env(["tick"])


@pytest.mark.parametrize("mode", list(Mode))
@pytest.mark.parametrize("tick", [1, 2, 3, 5, 15, 60])
def test_a_modes_policy_is_the_lambdas_default(mode: Mode, tick: int) -> None:
    env = {"SCALER_TABLES": "t", "SCALER_MODE": mode, "SCALER_TICK_MINUTES": str(tick)}
    assert ScalerConfig.from_env(env).policy == for_mode(mode, tick)
    assert ScalerConfig.from_env(env).mode is mode


def test_an_unknown_mode_is_refused() -> None:
    with pytest.raises(ValueError, match="fast"):
        for_mode("fast")
    with pytest.raises(ConfigError, match="SCALER_MODE: got 'fast'; expected one of"):
        ScalerConfig.from_env({"SCALER_TABLES": "t", "SCALER_MODE": "fast"})


def test_no_setting_is_read_outside_the_table() -> None:
    # GIVEN every SCALER_ variable named in the run-time package and the constructs
    named = {
        f"{path.relative_to(ROOT)}: {name}"
        for folder in ("lambda_src/ddb_capacity_runtime", "constructs_pkg")
        for path in (ROOT / folder).rglob("*.py")
        if path.name != "settings.py"
        for name in re.findall(r"[\"']SCALER_[A-Z_]+[\"']", path.read_text())
    }
    # THEN none is spelt out: they come from SETTINGS
    assert named == set()
    assert len(SETTINGS_BY_KEY) == len(SETTINGS)


def test_the_construct_writes_what_the_lambda_reads() -> None:
    # GIVEN a scaler with every argument the settings come from away from its default
    app = cdk.App()
    stack = cdk.Stack(app, "Contract")
    table = dynamodb.Table(
        stack,
        "Orders",
        table_name="Orders",
        partition_key=dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING),
        billing_mode=dynamodb.BillingMode.PROVISIONED,
    )
    ThrottleAwareScaler(
        stack,
        "Scaler",
        tables=[table],
        tag_key="team",
        tag_value="orders",
        tick=cdk.Duration.minutes(5),
        dry_run=True,
        mode="reactive",
        overrides={"Orders": {"min": 7}},
    )
    template = app.synth().get_stack_by_name("Contract").template
    (function,) = [
        r
        for r in template["Resources"].values()
        if r["Type"] == "AWS::Lambda::Function"
        and "SCALER_MODE" in r["Properties"]["Environment"]["Variables"]
    ]
    variables = function["Properties"]["Environment"]["Variables"]
    # WHEN the Lambda reads them (the table's name resolved as CloudFormation would)
    env = {k: v for k, v in variables.items() if isinstance(v, str)}
    env["SCALER_TABLES"] = "Orders"
    config = ScalerConfig.from_env(env)
    # THEN it runs as the construct was told
    assert (config.tag_key, config.tag_value, config.dry_run) == ("team", "orders", True)
    assert config.tick_minutes == 5 and config.mode is Mode.REACTIVE
    assert config.policy == for_mode(Mode.REACTIVE, 5)
    assert config.limits("Orders", {})["read"].min_capacity == 7
    # and the construct wrote its own settings through the contract, in its order
    own = [SETTINGS_BY_KEY[k].name for k in CONSTRUCT_SETTINGS]
    assert [k for k in variables if k in own] == own


def test_the_docs_settings_table_is_the_one_the_contract_makes(tmp_path: Path) -> None:
    # GIVEN the page as committed
    page = ROOT / settings_table.PAGE
    # THEN its table is the contract's, as `make settings-table` writes it
    assert settings_table.main(["--check", "--page", str(page)]) == 0, (
        "run `make settings-table` and commit docs/guides/scaler-runtime.md"
    )
    # and a row that says anything else is caught, and written back as the contract says
    stale = tmp_path / "page.md"
    stale.write_text(page.read_text().replace("| 40,000 |", "| 80,000 |"))
    assert settings_table.main(["--check", "--page", str(stale)]) == 1
    assert settings_table.main(["--page", str(stale)]) == 0
    assert stale.read_text() == page.read_text()


def test_the_docs_table_has_one_row_a_setting_with_its_range() -> None:
    # GIVEN the rows of the page's settings table
    text = (ROOT / settings_table.PAGE).read_text()
    table = text.split(settings_table.BEGIN)[1].split(settings_table.END)[0]
    rows = [r.split(" | ") for r in table.splitlines() if r.startswith("| `")]
    # THEN each setting has one row, in the contract's order
    assert [r[0] for r in rows] == [f"| `{s.name}`" for s in SETTINGS]
    for row, setting in zip(rows, SETTINGS, strict=True):
        # with the range the Lambda checks, and a unit for every number
        if setting.kind in (Kind.WHOLE, Kind.NUMBER, Kind.WHOLES):
            assert f"from {settings_table.number(setting.lo)} to " in row[2], row
            assert f" to {settings_table.number(setting.hi)}" in row[2], row
            assert row[3], f"{setting.name} has no unit"
        assert row[4].strip(" |"), f"{setting.name} says nothing of what it does"


def test_a_page_without_the_markers_is_refused(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(f"# Settings\n\n{settings_table.END}\n{settings_table.BEGIN}\n")
    with pytest.raises(ValueError, match="must hold"):
        settings_table.main(["--check", "--page", str(page)])


def test_every_setting_has_its_words_and_no_other() -> None:
    """The docs' words of the settings (`core.setting_words`, kept out of the functions'
    assets) name each setting of the contract once, and no other."""
    from ddb_capacity_runtime.core.setting_words import WORDS

    assert sorted(WORDS) == sorted(s.key for s in SETTINGS)
    assert all(words.doc for words in WORDS.values())
