"""The tests of the settle step of PROVISION_THEN_SETTLE: its plan, its construct, and its run
against live tables."""
