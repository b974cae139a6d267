"""Runs in: every Lambda function this library deploys, workers (the user's own jobs), CDK
app (synth), workstation (simulator, ``ddb-capacity``).

What runs inside AWS Lambda and in users' workers: boto3 and the standard library only.

- `core`: the pure core (policy, forecast, quota ledger, settings contract);
- `aws`: the layer that talks to AWS (with the state store's own module);
- `scaler`: the throttle-aware scaler Lambda;
- [`requests`][]: capacity requests, the broker Lambda and its restores;
- `settle`: the settle custom resource of PROVISION_THEN_SETTLE;
- `workers`: the rate-limited scan and slow-start writer users run in their workers;
- [`events`][]: the one log channel, and the one builder of EMF records.

This package never imports aws_cdk; it is the whole of every Lambda asset this library
deploys. Inside it, imports are relative.
"""

__version__ = "0.5.0"

__all__ = ["__version__"]
