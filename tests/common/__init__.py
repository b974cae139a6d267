"""The tests of what every feature shares: the constructs' surface, errors, tokens, alarms and
assets, and the run-time core's validation of untrusted input."""
