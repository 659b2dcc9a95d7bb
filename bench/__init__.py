"""Benchmarks: tinyfw against numpy and tinygrad (python -m bench.run), and tinyfw's devices side
by side (python -m bench.devices)."""
