"""The tests of the background workers: the token bucket, the resumable scan, the slow-start
writer and their throttles."""
