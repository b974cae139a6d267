"""What runs inside AWS Lambda and in users' workers.

This package never imports aws_cdk. Inside its modules, imports are relative so the
package works both as ``lambda_src.capacity_runtime`` (installed or in the repo) and as
``capacity_runtime`` (the root of the Lambda asset).
"""
