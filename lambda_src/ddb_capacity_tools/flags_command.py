"""Runs in: workstation (the `ddb-capacity` command).

``ddb-capacity flags``: the feature flags a new app of the installed aws-cdk-lib gets (its
``recommended-feature-flags.json``, what ``cdk init`` writes), merged into an app's
``cdk.json``. A flag the app sets already keeps its value, and is named where it differs;
``--check`` writes nothing and fails while a flag is missing.

    ddb-capacity flags [--cdk-json PATH] [--check]
"""

from __future__ import annotations

import argparse
import functools
import importlib.util
import json
import tarfile
from pathlib import Path
from typing import Any, TextIO

from . import json_files
from .tool_errors import FlagsError as FlagsError
from .tool_errors import printable

__all__ = ["FlagsError", "add_parser", "merged", "recommended_flags", "run"]

FLAGS_FILE = "package/recommended-feature-flags.json"
"""Where aws-cdk-lib's bundle keeps the flags ``cdk init`` writes into a new app."""


def recommended_flags() -> tuple[str, dict[str, Any]]:
    """The installed aws-cdk-lib's version and its recommended flags, read from its bundle
    without importing it (no JavaScript kernel is started)."""
    version, flags = _bundled_flags()
    return version, dict(flags)


@functools.cache
def _bundled_flags() -> tuple[str, dict[str, Any]]:
    """`recommended_flags`, read once a process (the bundle is tens of MB compressed)."""
    spec = importlib.util.find_spec("aws_cdk")
    if spec is None or not spec.submodule_search_locations:
        raise FlagsError("aws-cdk-lib is not installed here: pip install aws-cdk-lib")
    bundles = sorted(Path(next(iter(spec.submodule_search_locations)), "_jsii").glob("*.tgz"))
    bundles = [b for b in bundles if b.name.startswith("aws-cdk-lib@")]
    if len(bundles) != 1:
        raise FlagsError(f"aws-cdk-lib's bundle: found {len(bundles)}; expected one")
    version = bundles[0].name.removeprefix("aws-cdk-lib@").removesuffix(".jsii.tgz")
    with tarfile.open(bundles[0]) as archive:
        member = archive.extractfile(FLAGS_FILE)
        if member is None:
            raise FlagsError(f"aws-cdk-lib {version} has no {FLAGS_FILE}")
        flags = json.loads(member.read())
    if not isinstance(flags, dict):
        raise FlagsError(f"aws-cdk-lib {version}'s {FLAGS_FILE} is not a JSON object")
    return version, flags


def merged(
    app: dict[str, Any], flags: dict[str, Any], where: str
) -> tuple[dict[str, Any], list[str], dict[str, Any]]:
    """``app`` (a cdk.json's object) with every flag of ``flags`` its ``context`` lacks;
    returns it, the flags added, and the app's own values that differ from ``flags``."""
    context = app.get("context", {})
    if not isinstance(context, dict):
        raise FlagsError(f"{where}: context: got {type(context).__name__}; expected a JSON object")
    added = [k for k in flags if k not in context]
    differ = {k: context[k] for k in flags if k in context and context[k] != flags[k]}
    return {**app, "context": {**context, **{k: flags[k] for k in added}}}, added, differ


def _read(path: Path) -> dict[str, Any]:
    """The app's ``cdk.json`` at ``path`` as a JSON object; ``{}`` when there is none."""
    if not path.exists():
        return {}
    name = printable(path)
    try:
        app = json_files.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise FlagsError(f"{name}: not JSON ({exc.msg}, line {exc.lineno})") from None
    except json_files.NestedJSONError as exc:
        raise FlagsError(f"{name}: {exc} (a cdk.json)") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise FlagsError(f"{name}: cannot be read ({exc}); expected a cdk.json") from None
    if not isinstance(app, dict):
        raise FlagsError(f"{name}: got a JSON {type(app).__name__}; expected a JSON object")
    return app


def _write(path: Path, app: dict[str, Any]) -> None:
    try:  # the user's own text as it is (no \u escapes), two spaces as `cdk init` indents
        path.write_text(json.dumps(app, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    except OSError as exc:
        raise FlagsError(f"{printable(path)}: cannot be written ({exc})") from None


def run(args: argparse.Namespace, out: TextIO) -> int:
    """Merge (or ``--check``) the recommended flags into ``args.cdk_json`` (a folder: its
    ``cdk.json``), naming each flag added (or missing) and each of the app's own values that
    differs: 0 when done (or, checking, when none is missing), 1 when checking finds some
    missing."""
    path = Path(args.cdk_json)
    if path.is_dir():
        path = path / "cdk.json"
    name = printable(path)
    version, flags = recommended_flags()
    app, added, differ = merged(_read(path), flags, name)
    if not args.check and (added or not path.exists()):
        _write(path, app)
    for key, value in differ.items():
        out.write(
            f"{key}: kept yours, {json.dumps(value)} (recommended: {json.dumps(flags[key])})\n"
        )
    said = "missing (recommended: {})" if args.check else "added, {}"
    for key in added:
        out.write(f"{key}: {said.format(json.dumps(flags[key]))}\n")
    if args.check:
        out.write(f"{name}: {len(added)} of aws-cdk-lib {version}'s {len(flags)} flags missing\n")
        return 1 if added else 0
    out.write(
        f"{name}: {len(added)} recommended feature flags of aws-cdk-lib {version} added, "
        f"{len(differ)} of yours kept\n"
    )
    return 0


def add_parser(sub: Any) -> None:
    """``flags`` and its options, on ``ddb-capacity``'s subcommands ``sub``."""
    fl = sub.add_parser(
        "flags",
        help="add aws-cdk-lib's recommended feature flags to your app's cdk.json",
        description="Merge the feature flags a new app of the installed aws-cdk-lib gets (what "
        "cdk init writes) into your app's cdk.json: a flag you set keeps its value.",
    )
    fl.add_argument(
        "--cdk-json",
        metavar="PATH",
        default="cdk.json",
        help="the app's cdk.json, or its folder (default: cdk.json in the current folder; "
        "made if missing)",
    )
    fl.add_argument(
        "--check",
        action="store_true",
        help="write nothing; exit 1 while a recommended flag is missing",
    )
