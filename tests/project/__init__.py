"""The tests of the project as a whole: the code's shape, the docs and the README, packaging,
the examples, checkov and the release workflow."""
