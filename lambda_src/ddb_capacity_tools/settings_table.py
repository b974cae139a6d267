"""Runs in: workstation (`python -m ddb_capacity_tools.settings_table`; `make settings-table`).

The docs' table of the scaler's settings, made from the settings contract
(`ddb_capacity_runtime.core.settings.SETTINGS`, its words from `core.setting_words.WORDS`):
one row a variable, with its default, what it allows, its unit and what it does.
``python -m ddb_capacity_tools.settings_table`` writes it into the page between its markers
(`PAGE`); with ``--check`` it writes nothing and fails when the page's table is not the one
the contract makes.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from ddb_capacity_runtime.core.setting_values import FLAG_FALSE, FLAG_TRUE
from ddb_capacity_runtime.core.setting_words import WORDS
from ddb_capacity_runtime.core.settings import (
    DEFAULT_TICK_MINUTES,
    MODES,
    ORDERS,
    SETTINGS,
    SETTINGS_BY_KEY,
    Kind,
    ScalerConfig,
    Setting,
    for_mode,
)

PAGE = Path("docs/guides/scaler-runtime.md")
"""The page holding the table, from the repository's root."""
BEGIN = "<!-- settings table: python -m ddb_capacity_tools.settings_table -->"
END = "<!-- end of settings table -->"
"""The markers the table is written between (each a line of its own)."""
HEADER = "| variable | default | allowed | unit | what it does |\n|---|---|---|---|---|"


def number(value: float) -> str:
    """A number as the table prints it: 1,000,000, 0.5."""
    return f"{int(value):,}" if float(value).is_integer() else f"{value:g}"


def default_text(setting: Setting) -> str:
    """``setting``'s default: its own, or, where the mode's policy gives it, each mode's at
    the default tick."""
    if setting.default is None and setting.kind in (Kind.WHOLE, Kind.NUMBER):
        shown = {
            mode: setting.render(setting.value_of(ScalerConfig(policy=for_mode(mode))))
            for mode in MODES
        }
        if len(set(shown.values())) == 1:
            return number(float(shown[MODES[0]]))
        return ", ".join(f"{mode} {number(float(v))}" for mode, v in shown.items())
    if setting.kind in (Kind.WHOLE, Kind.NUMBER):
        return number(setting.default)
    written = setting.render(setting.default)
    return f"`{written}`" if written else "none"


def allowed_text(setting: Setting) -> str:
    """What ``setting``'s variable may hold, with the settings it is checked against."""
    span = f"from {number(setting.lo)} to {number(setting.hi)}"
    words = {
        Kind.WHOLE: f"a whole number {span}",
        Kind.NUMBER: f"a number {span}",
        Kind.FLAG: ", ".join(f"`{t}`" for t in (*FLAG_TRUE, *FLAG_FALSE)),
        Kind.NAMES: "comma-separated names",
        Kind.WHOLES: f"comma-separated whole numbers {span}",
        Kind.MODE: ", ".join(f"`{m}`" for m in MODES),
        Kind.NAME: "a name (empty: the default)",
        Kind.DATE: "a date as YYYY-MM-DD (empty: none)",
    }
    text = WORDS[setting.key].allowed or words.get(setting.kind, "")
    if setting.step != 1:
        text = f"a multiple of {number(setting.step)} {span}"
    for order in ORDERS:
        if order.low == setting.key:
            rule = "below" if order.strict else "not above"
            text += f"; {rule} `{SETTINGS_BY_KEY[order.high].name}`"
        if order.high == setting.key:
            rule = "above" if order.strict else "not below"
            text += f"; {rule} `{SETTINGS_BY_KEY[order.low].name}`"
    return text


def settings_table() -> str:
    """The docs' table of every setting, in the contract's order."""
    rows = [
        f"| `{s.name}` | {default_text(s)} | {allowed_text(s)} | {WORDS[s.key].unit} "
        f"| {WORDS[s.key].doc} |"
        for s in SETTINGS
    ]
    note = (
        "Defaults given per mode are the mode's policy (`core.settings.for_mode`) at the "
        f"default tick of {DEFAULT_TICK_MINUTES} minutes."
    )
    return "\n".join([HEADER, *rows, "", note])


def with_table(page: str) -> str:
    """``page`` with the text between its markers replaced by `settings_table`. Raises
    ValueError when it does not hold each marker once, on a line of its own."""
    lines = page.split("\n")
    if lines.count(BEGIN) != 1 or lines.count(END) != 1 or lines.index(BEGIN) > lines.index(END):
        raise ValueError(f"the page must hold {BEGIN!r} and then {END!r}, each once on a line")
    start, end = lines.index(BEGIN), lines.index(END)
    return "\n".join([*lines[: start + 1], settings_table(), *lines[end:]])


def main(argv: Sequence[str] | None = None) -> int:
    """Write the table into the page, or (``--check``) say whether it is there as made."""
    parser = argparse.ArgumentParser(prog="python -m ddb_capacity_tools.settings_table")
    parser.add_argument("--page", type=Path, default=PAGE, help=f"default {PAGE}")
    parser.add_argument(
        "--check", action="store_true", help="write nothing; fail if the page's table differs"
    )
    args = parser.parse_args(argv)
    page = args.page.read_text()
    made = with_table(page)
    if args.check:
        if made != page:
            print(f"{args.page}: the settings table is not the contract's; run {parser.prog}")
            return 1
        return 0
    args.page.write_text(made)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
