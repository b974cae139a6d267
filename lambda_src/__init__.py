"""Run-time code of cdk-dynamodb-capacity: boto3 and the standard library only."""
