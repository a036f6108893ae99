"""Benchmarks: each measures against a baseline taken in the same run and prints ratios."""
