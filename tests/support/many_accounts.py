"""cfn-lint, run over a synthesized template."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any


def cfn_lint(templates: list[Path]) -> list[dict[str, Any]]:
    result = subprocess.run(
        [str(Path(sys.executable).parent / "cfn-lint"), "--format", "json", "--", *templates],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode & 1 == 0, result.stderr  # 1: cfn-lint itself failed
    return json.loads(result.stdout)  # type: ignore[no-any-return]
