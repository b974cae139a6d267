"""Runs in: scaler Lambda, broker Lambda, settle Lambda, workers (the user's own jobs), CDK
app (synth), workstation (simulator).

The pure core: decisions and rules with no I/O.

Nothing under this package imports boto3, botocore or aws_cdk, so the constructs (at
synth time), the scaler Lambda (at run time) and the simulator (on a laptop) all run the
very same code. Import the modules themselves. Build-time schedule logic (cronsim) lives
in ``ddb_capacity_runtime.schedule``, in no function's asset.
"""

__all__: list[str] = []
