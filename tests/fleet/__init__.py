"""The tests of the fleet: the fleet advisor, its report, and the nightly tuning loop."""
