"""The test suite's own shape: no test module imports another (what several features' tests
share lives in tests/support/, or in a conftest.py if it is a fixture), so a test module can
move to its feature's folder without breaking another's imports; and the modules the xdist
scheduler names (tests/conftest.py) are where it looks for them."""

from __future__ import annotations

import ast

from tests.conftest import ASSEMBLY_MODULES, LONGEST_FIRST
from tests.support.shape import ROOT

TESTS = ROOT / "tests"


def _is_test_module(dotted: str) -> bool:
    return any(part.startswith("test_") for part in dotted.split("."))


def imported_test_modules(source: str) -> list[str]:
    """The test modules (``test_*``) that ``source`` imports, at module level or inside a
    function: ``import tests.test_x``, ``from tests.test_x import y``, ``from tests import
    test_x`` and their relative forms."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names if _is_test_module(alias.name)]
        elif isinstance(node, ast.ImportFrom):
            module = "." * node.level + (node.module or "")
            if _is_test_module(module):
                found.append(module)
            else:
                found += [
                    f"{module}.{alias.name}"
                    for alias in node.names
                    if alias.name.startswith("test_")
                ]
    return found


def test_no_test_module_imports_another() -> None:
    offenders = [
        f"{path.relative_to(ROOT)} imports {module}"
        for path in sorted(TESTS.rglob("test_*.py"))
        for module in imported_test_modules(path.read_text())
    ]
    assert offenders == []


def test_the_finder_sees_every_form_of_import_of_a_test_module() -> None:
    source = (
        "import tests.test_a\n"
        "from tests.test_b import x\n"
        "from tests import test_c, support\n"
        "from .test_d import y\n"
        "from tests.scaler.test_e import z\n"
        "from tests.support.surge_server import world\n"
        "def f():\n"
        "    from tests.test_f import w\n"
    )
    assert imported_test_modules(source) == [
        "tests.test_a",
        "tests.test_b",
        "tests.test_c",
        ".test_d",
        "tests.scaler.test_e",
        "tests.test_f",
    ]


def test_the_modules_the_scheduler_names_exist() -> None:
    # the units handed out first are test modules by path (or the assembly's unit), and each
    # module of the assembly's unit is one test module, by name
    assert [u for u in LONGEST_FIRST if u != "cli_assembly" and not (ROOT / u).is_file()] == []
    assert {name: len(list(TESTS.rglob(name))) for name in ASSEMBLY_MODULES} == dict.fromkeys(
        ASSEMBLY_MODULES, 1
    )
