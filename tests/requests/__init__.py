"""The tests of capacity requests: the broker, holds and their ending, leases and the races on
them."""
