"""The pure core: decisions and rules with no I/O.

Nothing under this package imports boto3, botocore or aws_cdk, so the constructs (at
synth time), the scaler Lambda (at run time) and the simulator (on a laptop) all run the
very same code. Import the modules themselves; this file imports nothing, so that the
Lambda never loads what only synth time needs (``schedule`` uses cronsim).
"""
