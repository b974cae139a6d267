"""The one layer that talks to AWS. Every function takes its boto3 clients as arguments."""
