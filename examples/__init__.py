"""Example CDK apps. Each module defines one stack a user can copy; ``python -m examples``
synthesizes them all in one app under the five cdk-nag packs (what ``cdk.json`` runs).
``many_accounts`` is an app of its own (``python -m examples.many_accounts``): its pipeline
stack and stages need explicit accounts and Regions."""
