"""Turning the lazy graph into work: schedule it into kernels, compile and run them, capture
them."""
