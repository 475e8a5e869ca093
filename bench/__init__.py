"""Benchmarks of scholarflow: each prints a table; none is part of the product or its tests.

bench/README.md says what each measures, its current figures and how to rerun it.
"""
