"""Benchmarks of tinyfw against numpy and tinygrad (python -m bench.run)."""
