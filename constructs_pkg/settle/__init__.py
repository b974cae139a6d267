"""Runs in: CDK app (synth time).

Pre-warming by `PrewarmMethod.PROVISION_THEN_SETTLE`: the custom resource that provisions a
table at its high-water mark, waits for it to be ACTIVE, then settles it to its minimum
(the run-time's `ddb_capacity_runtime.settle`). Made by the table constructs; nothing here
is used directly.
"""

__all__: list[str] = []
