"""Runs in: workstation, CDK app (synth).

Tools that run on a workstation or in CI, without the CDK: the capacity simulator and
backtester ([`simulator`][]), the ``ddb-capacity`` command line (`cli`) and the
cloud-assembly summary (`summary`); and the schedule logic ([`schedule`][]), which
the constructs also import at synth time, so this package loads in a CDK app too. They
import the run-time core, never aws_cdk, and are not part of any Lambda asset."""

import os as _os

__all__: list[str] = []
"""The subpackage and modules are imported by name; the package itself exports nothing."""

if _os.environ.get("DDB_CAPACITY_COMPILED_ACTIVE"):  # a worker of a compiled run: the same build
    from . import compiled as _compiled

    _compiled.activate_inherited()
