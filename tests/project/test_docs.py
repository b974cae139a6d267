"""The documentation site: it builds with ``mkdocs build --strict``, its examples are run as
written, and its reference pages (permissions, alarms) name everything the constructs make."""

from __future__ import annotations

import ast
import html
import json
import os
import re
import subprocess
import sys
import textwrap
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from ddb_capacity_tools.local_aws import create_store_table
from tests.support.docs import run_block
from tests.support.shape import ROOT

DOCS = ROOT / "docs"


def page(name: str) -> str:
    return (DOCS / name).read_text()


def python_block(name: str, marker: str) -> str:
    """The one python block of the page ``name`` that contains ``marker`` (an example file
    the page shows is not one: its own tests run it)."""
    found = re.findall(r"(<!-- example: \S+ -->\n)?```python\n(.*?)```", page(name), re.S)
    blocks: list[str] = [b for example, b in found if not example and marker in b]
    assert len(blocks) == 1, f"{name}: {len(blocks)} python blocks contain {marker!r}"
    return blocks[0]


def template(tmp_path: Path, stack: str) -> dict[str, Any]:
    return json.loads((tmp_path / "cdk.out" / f"{stack}.template.json").read_text())  # type: ignore[no-any-return]


# ---------------------------------------------------------------- the site builds


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    config = str(ROOT / "mkdocs.yml")
    result = subprocess.run(  # from outside the clone: no path of the config is the cwd's
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", config, "--site-dir", str(out)],
        cwd=out.parent,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return out


def text_of(page_html: str) -> str:
    """The text of a built page: tags removed (highlighted code keeps its spacing)."""
    return html.unescape(re.sub(r"<[^>]+>", "", page_html))


def test_mkdocs_build_strict_passes(site: Path) -> None:
    assert (site / "index.html").exists()


def test_the_reference_is_generated_from_the_docstrings(site: Path) -> None:
    expected = {
        "constructs/tables": [
            "constructs_pkg.table.ProvisionedTable",
            "constructs_pkg.table.TableCapacity",
            "constructs_pkg.table.Capacity",
            "constructs_pkg.table.ProvisionedTableProps",
        ],
        "constructs/scaler": [
            "constructs_pkg.scaler.ThrottleAwareScaler",
            "constructs_pkg.scaler.ScalerProps",
        ],
        "constructs/requests": [
            "constructs_pkg.requests.CapacityRequests",
            "constructs_pkg.fast_path.FastPath",
        ],
        "runtime": [
            "ddb_capacity_runtime.requests.request_capacity",
            "ddb_capacity_runtime.workers.scan.RateLimitedScan",
            "ddb_capacity_runtime.workers.writer.SlowStartWriter",
            "ddb_capacity_runtime.schedule.entries.ScheduleEntry",
        ],
        "tools": [
            "ddb_capacity_tools.simulator.simulate",
        ],
    }
    for name, ids in expected.items():
        html = (site / "reference" / f"{name}.html").read_text()
        missing = [i for i in ids if f'id="{i}"' not in html]
        assert missing == [], name


def example_lines(spec: str) -> list[str]:
    """The lines an ``<!-- example: SPEC -->`` block shows: a file of the repository
    (``examples/x.py``), a section of it between ``--8<-- [start:NAME]`` and ``--8<--
    [end:NAME]`` (``examples/x.py:NAME``), or its lines A to B (``examples/x.py:A:B``)."""
    path, *where = spec.split(":")
    lines = (ROOT / path).read_text().splitlines()
    if not where:
        return lines
    if len(where) == 2:
        return lines[int(where[0]) - 1 : int(where[1])]
    (name,) = where
    start = next(i for i, x in enumerate(lines) if f"--8<-- [start:{name}]" in x)
    end = next(i for i, x in enumerate(lines) if f"--8<-- [end:{name}]" in x)
    return lines[start + 1 : end]


def test_every_example_a_page_shows_is_its_file_as_it_is() -> None:
    """A page shows an example as code written out (read on GitHub too, where an include
    would show as text), each block marked with the file it is: the block is the file (or
    its section), so a change of one without the other fails here."""
    shown = 0
    pages = sorted((DOCS / "guides").glob("*.md")) + sorted(
        (DOCS / "reference" / "constructs").glob("*.md")
    )
    for guide in pages:
        text = guide.read_text()
        assert "--8<--" not in text, f"{guide.name}: an include, shown as text on GitHub"
        for spec, block in re.findall(
            r"<!-- example: (\S+) -->\n```python\n(.*?)\n```", text, re.S
        ):
            assert block.splitlines() == example_lines(spec), f"{guide.name}: {spec}"
            try:  # whole statements: a range of lines that moved cuts one in two
                ast.parse(textwrap.dedent(block))
            except SyntaxError as exc:
                pytest.fail(f"{guide.name}: {spec} is not whole Python: {exc}")
            shown += 1
    assert shown == 15  # 9 in the guides, one on each construct family's page


def test_examples_are_included_from_their_files(site: Path) -> None:
    """The pages show the example files the test suite synthesizes."""
    shown = {
        "guides/scaler": ("throttle_aware.py", "class ThrottleAwareStack"),
        "guides/schedules": ("bulk_load.py", "class BulkLoadStack"),
        "guides/capacity-requests": ("partner_import.py", "class PartnerImportStack"),
        "guides/high-water-marks": ("settled_catalog.py", "class SettledCatalogStack"),
        "guides/tables": ("orders_launch.py", "class OrdersLaunchStack"),
        "guides/global-tables": ("global_orders.py", "class GlobalOrdersStack"),
        "guides/many-accounts": ("many_accounts.py", "class ScalerPipelineStack"),
    }
    for where, (example, line) in shown.items():
        assert line in (ROOT / "examples" / example).read_text()
        # shown as code (a code block), not read as Markdown prose
        blocks = re.findall(r"<pre\b.*?</pre>", (site / f"{where}.html").read_text(), re.S)
        assert any(line in text_of(block) for block in blocks), where
    prime_time = text_of((site / "guides" / "schedules.html").read_text())
    assert "class PrimeTimeStack" in prime_time and "STEPS = [" in prime_time


def test_a_page_showing_an_example_says_how_to_run_it() -> None:
    """An example that imports its neighbours relatively fails when run as a file (``python
    examples/bulk_load.py``): each page that shows one says to run it as a module."""
    silent = []
    for guide in sorted((DOCS / "guides").glob("*.md")):
        shown = set(re.findall(r"<!-- example: examples/(\w+)\.py", guide.read_text()))
        for name in sorted(shown):
            code = (ROOT / "examples" / f"{name}.py").read_text()
            relative = re.search(r"^\s*from \.", code, re.M) is not None
            if relative and f"python -m examples.{name}" not in guide.read_text():
                silent.append(f"{guide.name}: examples/{name}.py")
    assert silent == []


def test_the_docs_speak_of_the_product_only(site: Path) -> None:
    """No word about how the project is made (issues, sessions, agents, numbered seeds); the
    simulator's random seeds (--seed, --model-seed) are part of the product."""
    found = []
    for built in site.rglob("*.html"):
        text = re.sub(r"boto3[\s.]+Session", "boto3's", text_of(built.read_text()))  # the API's
        pattern = r"(?i)\b(issues?|sessions?|agents?)\b|\bseed\s*#?\d"
        for match in re.finditer(pattern, text):
            where = text[match.start() - 40 : match.end() + 20]
            found.append(f"{built.relative_to(site)}: {where!r}")
    assert found == []


# A Sphinx role left in a docstring (``:func:`watch```), as mkdocstrings shows it: the
# role's name, then what it names. The docstrings speak Markdown: cross-references
# ``[`watch`][]`` and code spans.
ROLE = re.compile(
    r":(?:py:)?(?:mod|class|func|meth|attr|data|exc|obj|const|ref|term|doc):(?=[`\w.~])"
)


def test_the_site_shows_no_raw_sphinx_roles(site: Path) -> None:
    found = []
    for built in site.rglob("*.html"):
        for match in ROLE.finditer(text_of(built.read_text())):
            found.append(f"{built.relative_to(site)}: {match.group(0)}")
    assert found == []


def code_lines_matching(pattern: re.Pattern[str]) -> list[str]:
    """Every line of the three packages' code in which ``pattern`` finds something, as
    ``path:number: line``."""
    found = []
    for root in ("constructs_pkg", "lambda_src"):
        for path in sorted((ROOT / root).rglob("*.py")):
            for number, line in enumerate(path.read_text().splitlines(), 1):
                if pattern.search(line):
                    found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    return found


def test_the_code_writes_no_sphinx_roles() -> None:
    """One docstring style, the one the reference renders: no Sphinx role in the code of the
    three packages (docstrings or comments)."""
    assert code_lines_matching(ROLE) == []


# A Sphinx attribute comment (``#: text`` above ``NAME = ...``), which the reference does not
# read: it reads a string placed directly below the attribute.
ATTRIBUTE_COMMENT = re.compile(r"^\s*#:")


def test_the_code_documents_attributes_with_docstrings_below_them() -> None:
    """An attribute's text is a docstring below it, so the reference shows it; a ``#:``
    comment above it never reaches the site."""
    assert code_lines_matching(ATTRIBUTE_COMMENT) == []


def test_the_reference_shows_what_attributes_are(site: Path) -> None:
    """Module constants, an attribute declared on a construct's class and a dataclass field
    each show the text of their docstring under their heading."""
    shown = {
        "constructs/tables": {
            "constructs_pkg.table.DEFAULT_TARGET_UTILIZATION": "stock default target",
            "constructs_pkg.table.DEFAULT_SCALABLE_TARGET_QUOTA": "default quota",
        },
        "constructs/scaler": {
            "constructs_pkg.scaler.ThrottleAwareScaler.batches": "None unless sharded",
        },
        "runtime": {
            "ddb_capacity_runtime.fast_path.hook.KEEPALIVE_SECONDS": "A busy table",
            "ddb_capacity_runtime.workers.writer.WriteResult.throttled": "of every cause",
        },
        "tools": {"ddb_capacity_tools.simulator.tune_code.PEAK_HEADROOM": "times the trace's peak"},
    }
    for name, attributes in shown.items():
        built = (site / "reference" / f"{name}.html").read_text()
        for attribute, words in attributes.items():
            start = built.find(f'id="{attribute}"')
            assert start >= 0, f"{attribute} has no entry on the {name} page"
            end = built.find("doc-heading", start + len(attribute) + 30)
            assert words in " ".join(text_of(built[start:end]).split()), attribute


def test_the_reference_renders_no_quote_blocks(site: Path) -> None:
    """A docstring line that starts with ``>`` (``>= min_capacity``) renders as a quote."""
    for name in ("constructs", "runtime", "tools"):
        built = (site / "reference" / f"{name}.html").read_text()
        assert "<blockquote" not in built, name


def built_pages(site: Path) -> dict[str, str]:
    """Every built page by its path in the site (``guides/scaler.html``)."""
    return {str(p.relative_to(site)): p.read_text() for p in site.rglob("*.html")}


def test_no_page_shows_a_code_fence_as_text(site: Path) -> None:
    """A fence Markdown reads as text (indented 4 spaces outside a list: an indented code
    block) shows its backticks on the page instead of a highlighted block: none does."""
    shown = [name for name, built in built_pages(site).items() if "```" in text_of(built)]
    assert shown == []


def anchors_of(page_html: str) -> set[str]:
    return set(re.findall(r'\b(?:id|name)="([^"]+)"', page_html))


def test_every_internal_link_resolves(site: Path) -> None:
    """Every link of the site to one of its own pages or anchors names one that exists, as
    a file: the site opened from disk follows it too."""
    pages = built_pages(site)
    anchors = {path: anchors_of(body) for path, body in pages.items()}
    broken = []
    for path, body in pages.items():
        for href in re.findall(r'<a\b[^>]*\bhref="([^"]*)"', body):
            href = html.unescape(href)
            if re.match(r"[a-z][a-z0-9+.-]*:", href):  # https:, mailto:
                continue
            target, _, fragment = href.partition("#")
            target = target.split("?")[0]
            if target:
                # 404.html links from the site's root (it is served at any depth)
                base = site if target.startswith("/") else (site / path).parent
                resolved = base / target.lstrip("/")
                # a link to a folder works on a server, and from disk (file://) shows a
                # directory listing: every link names its page
                if not resolved.resolve().is_file():
                    broken.append(f"{path}: {href}")
                    continue
                key = str(resolved.resolve().relative_to(site.resolve()))
            else:
                key = path
            if fragment and key in anchors and fragment not in anchors[key]:
                broken.append(f"{path}: {href}")
    assert broken == []


def test_the_site_loads_nothing_from_other_hosts(site: Path) -> None:
    """No font, style sheet or script from another host (the theme's web fonts are off):
    the site renders the same offline, and tells no other host who reads it."""
    fetched = re.compile(
        r"<(?:link|script|img|iframe)\b[^>]*\b(?:href|src)=\"(?:https?:)?//[^\"]+\""
        r"|url\(\s*['\"]?(?:https?:)?//|@import\s+['\"]?(?:url\()?\s*['\"]?(?:https?:)?//"
    )
    found = []
    for built in [*site.rglob("*.html"), *site.rglob("*.css")]:
        found += [f"{built.relative_to(site)}: {m}" for m in fetched.findall(built.read_text())]
    assert found == []


def test_no_table_has_an_empty_header(site: Path) -> None:
    empty = []
    for path, body in built_pages(site).items():
        for head in re.findall(r"<thead>(.*?)</thead>", body, re.S):
            if not text_of(head).strip():
                empty.append(path)
    assert empty == []


def test_every_export_of_the_constructs_is_in_the_reference(site: Path) -> None:
    """Every public name of ``constructs_pkg`` (its ``__all__``) has an entry on the
    constructs pages (one per family, and the index), where it is defined or as the
    package's own."""
    import constructs_pkg

    pages = [site / "reference" / "constructs.html"]
    pages += sorted((site / "reference" / "constructs").glob("*.html"))
    built = "".join(p.read_text() for p in pages)
    ids = set(re.findall(r'id="(constructs_pkg[\w.]*)"', built))
    names = [n for n in constructs_pkg.__all__ if not n.startswith("_")]
    assert {"ScheduleEntry", "cron"} <= set(names)
    missing = [n for n in names if not any(i.rsplit(".", 1)[-1] == n for i in ids)]
    assert missing == []


def test_each_family_page_shows_its_features_public_names_and_the_index_links_them(
    site: Path,
) -> None:
    """A family's page has an entry for each name of its features' ``__all__`` and for no
    other name of theirs (no helper, no underscored module); each name the constructs page
    lists beside a family's link has its entry on that page."""
    import importlib

    pages = sorted((site / "reference" / "constructs").glob("*.html"))
    assert len(pages) == 6
    for family in pages:
        ids = set(re.findall(r'id="constructs_pkg\.(\w+)\.(\w+)"', family.read_text()))
        for feature in {f for f, _ in ids}:
            public = set(importlib.import_module(f"constructs_pkg.{feature}").__all__)
            shown = {n for f, n in ids if f == feature}
            assert (feature, sorted(shown - public), sorted(public - shown)) == (feature, [], [])
    index = (DOCS / "reference" / "constructs.md").read_text()
    linked = re.findall(
        r"^- \[[^]]+\]\((constructs/[\w-]+)\.md\):(.*?)(?=^- |^$)", index, re.M | re.S
    )
    assert sorted(f"{link}.html" for link, _ in linked) == [f"constructs/{p.name}" for p in pages]
    for link, listed in linked:
        text = (site / "reference" / f"{link}.html").read_text()
        names = re.findall(r"`(\w+)`", listed)
        assert names and [n for n in names if not re.search(rf'id="[\w.]+\.{n}"', text)] == []


def documented_runtime_imports() -> set[str]:
    """What the guides and the README tell users to import from the run-time package, as
    full names (``ddb_capacity_runtime.fast_path.hook.watch``)."""
    texts = [p.read_text() for p in DOCS.rglob("*.md")] + [(ROOT / "README.md").read_text()]
    names = set()
    for text in texts:
        for block in re.findall(r"```python\n(.*?)```", text, re.S):
            for module, grouped, listed in re.findall(
                r"^from (ddb_capacity_runtime[\w.]*) import (?:\(([^)]*)\)|(.+))$", block, re.M
            ):
                imported = (grouped or listed).split(",")
                names |= {f"{module}.{n.strip()}" for n in imported if n.strip()}
    return names


def test_every_documented_runtime_export_is_in_the_reference(site: Path) -> None:
    built = (site / "reference" / "runtime.html").read_text()
    names = documented_runtime_imports()
    assert "ddb_capacity_runtime.fast_path.hook.watch" in names
    assert "ddb_capacity_runtime.requests.request_capacity" in names
    missing = sorted(n for n in names if f'id="{n}"' not in built)
    assert missing == []


def test_searching_hook_watch_finds_its_reference(site: Path) -> None:
    """The search index splits words as the search box does (the configured separator):
    every word of ``hook.watch`` is in the reference entry of ``watch``."""
    index = json.loads((site / "search" / "search_index.json").read_text())
    separator = re.compile(index["config"]["separator"])
    words = {w.lower() for w in separator.split("hook.watch") if w}
    assert words == {"hook", "watch"}
    (entry,) = [
        d
        for d in index["docs"]
        if d["location"] == "reference/runtime.html#ddb_capacity_runtime.fast_path.hook.watch"
    ]
    indexed = {w.lower() for w in separator.split(text_of(entry["title"] + " " + entry["text"]))}
    assert words <= indexed


def doc_references() -> list[tuple[str, str]]:
    """Every page section the tools and the run-time name in their strings (what the
    command line prints, and their docstrings): ``docs/<page>.md#<anchor>``, and README
    sections as ``README, '<heading>'``."""
    import ast

    refs = []
    for root in ("lambda_src/ddb_capacity_tools", "lambda_src/ddb_capacity_runtime"):
        for path in sorted((ROOT / root).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Constant) and isinstance(node.value, str):
                    refs += re.findall(r"docs/([\w/-]+)\.md#([\w-]+)", node.value)
                    refs += [
                        ("README", s)
                        for s in re.findall(r"README(?:\.md)?,\s*['\"]([^'\"]+)['\"]", node.value)
                    ]
    return refs


def test_every_section_the_tools_point_to_exists(site: Path) -> None:
    refs = doc_references()
    assert ("guides/simulator", "bounds-oracle-and-bound") in refs  # simulate's footer
    readme = (ROOT / "README.md").read_text()
    missing = []
    for page_, anchor in refs:
        if page_ == "README":
            if not re.search(rf"^#+ {re.escape(anchor)}\s*$", readme, re.M):
                missing.append(f"README: {anchor}")
        elif f'id="{anchor}"' not in (site / f"{page_}.html").read_text():
            missing.append(f"{page_}#{anchor}")
    assert missing == []


def test_the_home_page_install_block_fits_at_1280_px(site: Path, tmp_path: Path) -> None:
    """In a 1280 px wide browser, the Home page's install block shows whole, without
    scrolling sideways (the architecture sketches below it may scroll)."""
    from tests.support import browser

    probe = site / "probe-overflow.html"
    script = (
        "<script>window.addEventListener('load', () => {"
        "for (const c of document.querySelectorAll('.md-content pre > code')) {"
        "if (!c.textContent.includes('pip install')) continue;"
        "console.log((c.scrollWidth > c.clientWidth ? 'OVERFLOW ' : 'FITS ')"
        " + c.textContent.split('\\n')[0]); }});</script>"
    )
    probe.write_text((site / "index.html").read_text().replace("</body>", script + "</body>"))
    try:
        loaded = browser.load(probe, tmp_path, window=(1280, 900))
    finally:
        probe.unlink()
    # a console line: "message", source: file (line)
    verdicts = [
        line.split('"')[1] for line in loaded.console if line.startswith(('"FITS', '"OVERF'))
    ]
    assert any("pip install ." in v for v in verdicts), loaded.console
    assert [v for v in verdicts if v.startswith("OVERFLOW")] == []


def test_every_page_is_in_the_nav() -> None:
    config = (ROOT / "mkdocs.yml").read_text()
    pages = {str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md") if "hooks" not in p.parts}
    missing = {p for p in pages if f": {p}\n" not in config}
    assert missing == set()


# ---------------------------------------------------------------- the guides' examples


def test_tables_example_synthesizes_under_the_nag_packs(tmp_path: Path) -> None:
    block = python_block("guides/tables.md", "apply_nag_packs(app)")
    run_block(block, tmp_path)
    tables = [
        r
        for r in template(tmp_path, "Shop")["Resources"].values()
        if r["Type"] == "AWS::DynamoDB::Table"
    ]
    assert len(tables) == 1
    assert tables[0]["Properties"]["WarmThroughput"] == {"ReadUnitsPerSecond": 4000}
    # the packs ran (their report exists only then) and found nothing unacknowledged
    report = json.loads((tmp_path / "cdk.out" / "validation-report.json").read_text())
    assert report["pluginReports"]
    assert {r["conclusion"] for r in report["pluginReports"]} == {"success"}


@pytest.fixture(scope="module")
def ledger(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], str]:
    """The schedules page's example, run once: the scheduled actions of its stack by name,
    and what it printed."""
    folder = tmp_path_factory.mktemp("ledger")
    printed = run_block(python_block("guides/schedules.md", "add_capacity_window"), folder)
    actions = {
        a["ScheduledActionName"]: a
        for r in template(folder, "Ledger")["Resources"].values()
        if r["Type"] == "AWS::ApplicationAutoScaling::ScalableTarget"
        for a in r["Properties"].get("ScheduledActions", [])
    }
    return actions, printed


def test_schedule_example_synthesizes(ledger: tuple[dict[str, Any], str]) -> None:
    actions, printed = ledger
    assert sorted(actions) == [
        "holiday-raise",
        "holiday-restore",
        "nightly-load-raise",
        "nightly-load-restore",
    ]
    assert len(printed.strip().splitlines()) == 3  # the preview it prints


def test_the_seasonal_ceiling_is_a_bounded_window(ledger: tuple[dict[str, Any], str]) -> None:
    """The holiday entries fire once a year each: raised on December 1, restored on
    December 25 to the configured range; never on any other day."""
    from ddb_capacity_runtime.schedule.expressions import parse, zone

    actions, _ = ledger
    start, end = datetime(2027, 1, 1, tzinfo=UTC), datetime(2029, 1, 1, tzinfo=UTC)
    days = {}
    for name in ("holiday-raise", "holiday-restore"):
        action = actions[name]
        tz = zone(action["Timezone"], name)
        fired = list(parse(action["Schedule"], name).occurrences(tz, start, end))
        days[name] = {(d.month, d.day) for d in fired}
        assert len(fired) == 2, f"{name} fires {len(fired)} times in two years"
    assert days == {"holiday-raise": {(12, 1)}, "holiday-restore": {(12, 25)}}
    raise_, restore = actions["holiday-raise"], actions["holiday-restore"]
    assert raise_["ScalableTargetAction"] == {"MinCapacity": 500, "MaxCapacity": 6000}
    assert restore["ScalableTargetAction"] == {"MinCapacity": 20, "MaxCapacity": 2000}


def test_scaler_example_synthesizes(tmp_path: Path) -> None:
    block = python_block("guides/scaler.md", "ThrottleAwareScaler(")
    run_block(block, tmp_path)
    functions = [
        r
        for r in template(tmp_path, "Feed")["Resources"].values()
        if r["Type"] == "AWS::Lambda::Function"
    ]
    assert [f["Properties"]["Handler"] for f in functions] == [
        "ddb_capacity_runtime.scaler.handler.lambda_handler"
    ]


def test_nightly_tuning_example_synthesizes(tmp_path: Path) -> None:
    run_block(python_block("guides/nightly-tuning.md", "NightlyTuning("), tmp_path)
    handlers = {
        r["Properties"]["Handler"]
        for r in template(tmp_path, "Shop")["Resources"].values()
        if r["Type"] == "AWS::Lambda::Function"
    }
    assert "ddb_capacity_tools.tuning_lambda.tuning_handler" in handlers, handlers


def test_simulator_example_runs(tmp_path: Path) -> None:
    block = python_block("guides/simulator.md", "simulate(")
    lines = run_block(block, tmp_path).strip().splitlines()
    assert len(lines) == 4  # two policies x read and write
    assert lines[0].startswith("stock:70 (None, 'read')")


def test_capacity_requests_construct_example_synthesizes(tmp_path: Path) -> None:
    block = python_block("guides/capacity-requests.md", "CapacityRequests(")
    run_block(block, tmp_path)
    resources = template(tmp_path, "Imports")["Resources"]
    handlers = [
        r["Properties"]["Handler"]
        for r in resources.values()
        if r["Type"] == "AWS::Lambda::Function"
    ]
    assert sorted(handlers) == ["ddb_capacity_runtime.requests.broker.broker_handler"]
    descriptions = sorted(
        r["Properties"]["Description"]
        for r in resources.values()
        if r["Type"] == "AWS::IAM::ManagedPolicy"
    )
    assert descriptions == ["Permissions of DynamoDB capacity request broker"]
    # the restorer: a rule that asks the broker to restore
    (rule,) = [r for r in resources.values() if r["Type"] == "AWS::Events::Rule"]
    assert json.loads(rule["Properties"]["Targets"][0]["Input"]) == {"action": "restore"}
    # the worker's grant: invoking the broker, in its default policy
    (inline,) = [r for r in resources.values() if r["Type"] == "AWS::IAM::Policy"]
    (statement,) = inline["Properties"]["PolicyDocument"]["Statement"]
    assert statement["Action"] == "lambda:InvokeFunction"


def test_fast_path_example_synthesizes(tmp_path: Path) -> None:
    block = python_block("guides/fast-path.md", "FastPath(")
    run_block(block, tmp_path)
    resources = template(tmp_path, "Orders")["Resources"]
    handlers = sorted(
        r["Properties"]["Handler"]
        for r in resources.values()
        if r["Type"] == "AWS::Lambda::Function"
    )
    assert handlers == [
        "ddb_capacity_runtime.fast_path.signals_function.signals_handler",
        "ddb_capacity_runtime.requests.broker.broker_handler",
    ]
    # the worker's grant: invoking the signals function, and nothing else
    (inline,) = [r for r in resources.values() if r["Type"] == "AWS::IAM::Policy"]
    (statement,) = inline["Properties"]["PolicyDocument"]["Statement"]
    assert statement["Action"] == "lambda:InvokeFunction"
    (signals,) = [
        k
        for k, r in resources.items()
        if r["Type"] == "AWS::Lambda::Function"
        and r["Properties"]["Handler"].endswith("signals_handler")
    ]
    resource = statement["Resource"]
    arns = resource if isinstance(resource, list) else [resource]
    assert {a["Fn::GetAtt"][0] for a in arns} == {signals}


def test_capacity_request_example_runs_against_moto(
    tmp_path: Path, aws_env: dict[str, str], aws_client: Any
) -> None:
    block = python_block("guides/capacity-requests.md", "request_capacity(")
    ddb = aws_client("dynamodb")
    pages = ddb.get_paginator("list_tables").paginate()
    if "Shipments" not in [n for p in pages for n in p["TableNames"]]:
        ddb.create_table(
            TableName="Shipments",
            BillingMode="PROVISIONED",
            AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
            KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
            ProvisionedThroughput={"ReadCapacityUnits": 10, "WriteCapacityUnits": 10},
        )
    store = f"holds-{tmp_path.name}"
    create_store_table(ddb, store)
    script = tmp_path / "worker.py"
    # run_import is the user's own work; here it checks the capacity it was promised.
    script.write_text(
        "import boto3\n"
        "def run_import():\n"
        "    table = boto3.client('dynamodb').describe_table(TableName='Shipments')['Table']\n"
        "    print(table['ProvisionedThroughput']['WriteCapacityUnits'])\n" + block
    )
    env = {**os.environ, **aws_env, "PYTHONPATH": str(ROOT), "CAPACITY_HOLDS_TABLE": store}
    result = subprocess.run(
        [sys.executable, str(script)],
        env=env,
        check=True,
        timeout=120,
        capture_output=True,
        text=True,
    )
    assert result.stdout.splitlines() == ["{'write': 2000}", "2000"]
    table = ddb.describe_table(TableName="Shipments")["Table"]
    assert table["ProvisionedThroughput"]["WriteCapacityUnits"] == 10  # released on exit


def test_the_workers_local_try_runs_against_moto(tmp_path: Path, aws_env: dict[str, str]) -> None:
    """The background-work page's "try them locally": its shell block points boto3 at a
    local moto server through the variables the test suite sets, and its python block
    writes and scans a table there."""
    shell = re.findall(r"```sh\n(.*?)```", page("guides/background-work.md"), re.S)
    [setup] = [b for b in shell if "moto_server" in b]
    exported = set(re.findall(r"\b(AWS_[A-Z_]+)=", setup))
    assert {"AWS_ENDPOINT_URL", "AWS_DEFAULT_REGION", "AWS_ACCESS_KEY_ID"} <= exported
    assert exported <= set(aws_env)
    script = tmp_path / "try_workers.py"
    script.write_text(python_block("guides/background-work.md", 'scan_id="try"'))
    env = {**os.environ, **aws_env, "PYTHONPATH": f"{ROOT / 'lambda_src'}{os.pathsep}{ROOT}"}
    result = subprocess.run(
        [sys.executable, str(script)],
        env=env,
        check=True,
        timeout=120,
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert result.stdout.splitlines() == ["written 500, failed 0", "scanned 500 items"]


def test_adoption_example_synthesizes(tmp_path: Path) -> None:
    block = python_block("guides/adoption.md", "TableCapacity(")
    run_block(block, tmp_path)
    resources = template(tmp_path, "Legacy")["Resources"]
    types = [r["Type"] for r in resources.values()]
    assert types.count("AWS::ApplicationAutoScaling::ScalableTarget") == 4
    tables = sorted(k for k, r in resources.items() if r["Type"] == "AWS::DynamoDB::Table")
    # the table, under its own logical ID, and the scaler's state store
    assert len(tables) == 2
    assert tables[0].startswith("Orders") and tables[1].startswith("ScalerStateStore")


# ---------------------------------------------------------------- operations pages


def example_stacks() -> list[Any]:
    """The example app's stacks."""
    import aws_cdk as cdk

    from examples.__main__ import build_app

    app = build_app()
    return [s for s in app.node.children if isinstance(s, cdk.Stack)]


def test_the_permissions_page_lists_every_statement() -> None:
    """Every Sid the library writes, in the example app and in the least-privilege test's
    app, is in the Permissions page; a numbered or per-table Sid as its pattern."""
    import aws_cdk as cdk

    from tests.support.least_privilege import synthesize

    text = page("operations/permissions.md")
    listed = set(re.findall(r"^\| ([A-Za-z*]+) \|", text, re.M))
    templates = [cdk.assertions.Template.from_stack(s).to_json() for s in example_stacks()]
    templates.append({"Resources": dict(synthesize().resources)})
    sids = set()
    for template_ in templates:
        for resource in template_["Resources"].values():
            props = resource.get("Properties", {})
            document = props.get("PolicyDocument") or props.get("KeyPolicy")
            for statement in (document or {}).get("Statement", []):
                if "Sid" in statement:
                    sid = re.sub(
                        r"^AllowEventRule\w+$", "AllowEventRule*Schedule*", statement["Sid"]
                    )
                    sids.add(re.sub(r"^Settle[A-Za-z0-9]+$", "Settle*Table*", sid))
    assert {"MoveMinimumsOfTaggedTargets", "Settle*Table*"} <= sids
    missing = sids - listed - {"AlarmsOfThisAccount"}
    assert missing == set()
    assert "AlarmsOfThisAccount" in text


def test_the_permissions_summary_lists_every_wildcard_resource() -> None:
    """Every statement whose resource is ``*`` or a pattern, in the example app and in the
    least-privilege test's app (a global table's role included), is named by its Sid in the
    Permissions page's summary of wildcards, with its actions."""
    import aws_cdk as cdk

    from tests.support.least_privilege import global_template, synthesize

    text = page("operations/permissions.md")
    summary = text.split("## Every wildcard resource", 1)[1].split("\n## ", 1)[0]
    templates = [cdk.assertions.Template.from_stack(s).to_json() for s in example_stacks()]
    templates += [{"Resources": dict(t().resources)} for t in (synthesize, global_template)]
    wild: dict[str, set[str]] = {}
    for template_ in templates:
        for resource in template_["Resources"].values():
            if not resource["Type"].startswith("AWS::IAM::"):
                continue
            props = resource.get("Properties", {})
            documents = [props.get("PolicyDocument") or {}]
            documents += [p["PolicyDocument"] for p in props.get("Policies", [])]
            for statement in (s for d in documents for s in d.get("Statement", [])):
                resources = statement.get("Resource", [])
                if "Sid" in statement and "*" in json.dumps(resources):
                    actions = statement["Action"]
                    names = actions if isinstance(actions, list) else [actions]
                    wild.setdefault(statement["Sid"], set()).update(a.split(":")[1] for a in names)
    assert {"AutoScalingChecksAlarms", "ReadTableQuota", "TagTargets"} <= wild.keys()
    assert {sid for sid in wild if sid not in summary} == set()
    assert {a for actions in wild.values() for a in actions if a not in summary} == set()


def test_the_alarm_runbook_has_an_entry_per_alarm() -> None:
    """Every alarm the constructs create in the example app (a scaler, capacity requests
    with a restorer) has a heading in the runbook; per-dimension throttle alarms as one, and
    per-table hot-key alarms as one."""
    from aws_cdk import aws_cloudwatch as cloudwatch

    headings = re.findall(r"^### .*$", page("operations/alarms.md"), re.M)
    ids = set()
    for stack in example_stacks():
        for construct in stack.node.find_all():
            if isinstance(construct, cloudwatch.Alarm):
                per = [p for p in ("Throttled", "HotKey") if construct.node.id.startswith(p)]
                ids.add(per[0] if per else construct.node.id)
    assert {
        "ErrorsAlarm",
        "BrokerErrorsAlarm",
        "RestorerRunsDroppedAlarm",
        "Throttled",
        "HotKey",
    } <= ids
    missing = {i for i in ids if not any(f"`{i}" in h for h in headings)}
    assert missing == set()


# ---------------------------------------------------------------- the pages follow the code


def module_map() -> tuple[set[str], set[str]]:
    """The Home page's module map, as paths from the repository root: the files it has a
    line for (two spaces per level), and the modules a folder line lists in its
    description, when that is a plain list of names (``simulator/  model, policies, ...``)."""
    block = re.search(r"```\n(constructs_pkg/ .*?)```", page("index.md"), re.S)
    assert block is not None, "index.md: no module map"
    files: set[str] = set()
    listed: set[str] = set()
    folders: list[str] = []
    for line in block.group(1).splitlines():
        depth = (len(line) - len(line.lstrip(" "))) // 2
        name, _, description = line.strip().partition(" ")
        folders = folders[:depth]
        if name.endswith("/"):
            folders.append(name)
            if re.fullmatch(r"[a-z_]+(, [a-z_]+)*", description.strip()):
                listed |= {f"{''.join(folders)}{w}.py" for w in description.strip().split(", ")}
        else:
            files.add("".join(folders) + name)
    return files, listed


def test_the_module_map_names_every_module() -> None:
    """Every module of the constructs, the run-time package and the tools is in the module
    map of the Home page (packages' ``__init__.py`` aside), and every file it names exists."""
    files, listed = module_map()
    modules = [
        str(path.relative_to(ROOT))
        for root in (
            "constructs_pkg",
            "lambda_src/ddb_capacity_runtime",
            "lambda_src/ddb_capacity_tools",
        )
        for path in sorted((ROOT / root).rglob("*.py"))
        if path.name != "__init__.py"
    ]
    assert [m for m in modules if m not in files | listed] == []
    assert sorted(f for f in files | listed if not (ROOT / f).exists()) == []


def test_the_configuration_table_lists_every_setting() -> None:
    """The scaler's configuration table names every variable of the settings contract, and
    no other ``SCALER_*`` variable (nor another table quota variable)."""
    from ddb_capacity_runtime.core.settings import SETTINGS

    text = page("guides/scaler-runtime.md")
    table = text[text.index("## Configuration") : text.index("## Logs and metrics")]
    listed = set(re.findall(r"`((?:SCALER|CAPACITY_TABLE)_[A-Z_]+)`", table))
    assert listed == {s.name for s in SETTINGS}


def _duration(seconds: float) -> str:
    """``seconds`` as the guides say it: "a minute", "5 minutes", "30 seconds"."""
    if seconds == 60:
        return "a minute"
    if seconds % 60 == 0:
        return f"{seconds // 60:.0f} minutes"
    return f"{seconds:.0f} seconds"


def test_the_guides_state_the_waits_the_custom_resources_keep() -> None:
    from ddb_capacity_runtime.global_tables import handler as replica
    from ddb_capacity_runtime.settle import settle_plan

    def said(page: str) -> str:
        return " ".join((ROOT / "docs" / "guides" / page).read_text().split())

    global_tables, marks = said("global-tables.md"), said("high-water-marks.md")
    # the replica schedules: how often and how long a denial is asked again, the time kept
    poll, wait = _duration(replica.PERMISSION_POLL_S), _duration(replica.PERMISSION_WAIT_S)
    assert f"asks again every {poll} for up to {wait}" in global_tables
    cleanup = _duration(replica.CLEANUP_MS / 1000)
    assert f"never into its last {cleanup}" in global_tables
    assert f"less than {cleanup} left" in global_tables
    # the settle step: how long a denial is waited out, and the table's wait for ACTIVE
    assert f"in the first {_duration(settle_plan.PERMISSION_WAIT_S)} of the step" in marks
    assert f"not ACTIVE {_duration(settle_plan.SETTLE_WAIT_S)} after" in marks


def test_the_fleet_guide_states_how_many_tables_a_run_list_holds() -> None:
    import json
    import re

    from ddb_capacity_tools.fleet_lambda import MAX_LIST

    text = " ".join((ROOT / "docs" / "guides" / "fleet-report.md").read_text().split())
    found = re.search(r"each read up to (\d+) MB: some ([\d,]+) tables of the longest names", text)
    assert found is not None
    megabytes, tables = int(found[1]), int(found[2].replace(",", ""))
    assert megabytes * 1_000_000 == MAX_LIST
    # as the lister writes them: JSON strings of DynamoDB's longest names, comma-separated
    longest = len(json.dumps("x" * 255)) + 2
    assert tables <= MAX_LIST // longest < tables * 1.1
