"""Runs in: scaler Lambda, broker Lambda, settle Lambda, workers (the
user's own jobs), workstation (``ddb-capacity``, simulator backtests, examples).

The one layer that talks to AWS. Every function takes its boto3 clients as arguments."""

__all__: list[str] = []
