"""The README's usage example is real: it is run as written and synthesizes."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_starts_with_the_two_commands() -> None:
    first = README.read_text().splitlines()[:6]
    assert any(line.strip().startswith("make demo") for line in first)
    assert any(line.strip().startswith("make test") for line in first)


def test_readme_usage_example_synthesizes(tmp_path: Path) -> None:
    # GIVEN the first python block of the README, as a file
    match = re.search(r"```python\n(.*?)```", README.read_text(), re.S)
    assert match, "the README has no python example"
    script = tmp_path / "app.py"
    script.write_text(match.group(1))
    # WHEN run as a user would run it, with the CLI's output directory
    env = {**os.environ, "CDK_OUTDIR": str(tmp_path / "cdk.out")}
    subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env, check=True,
                   timeout=300)
    # THEN it synthesized the table with its GSI under the nag packs
    template = json.loads((tmp_path / "cdk.out" / "Shop.template.json").read_text())
    tables = [r for r in template["Resources"].values() if r["Type"] == "AWS::DynamoDB::Table"]
    assert len(tables) == 1
    assert tables[0]["Properties"]["WarmThroughput"] == {"ReadUnitsPerSecond": 4000}
    assert tables[0]["Properties"]["GlobalSecondaryIndexes"][0]["IndexName"] == "byCustomer"
