"""Tools that run on a workstation or in CI, without the CDK: the capacity simulator and
backtester (:mod:`.simulator`), the ``ddb-capacity`` command line (:mod:`.cli`) and the
cloud-assembly summary (:mod:`.summary`). They import the run-time core, never aws_cdk,
and are not part of any Lambda asset."""
