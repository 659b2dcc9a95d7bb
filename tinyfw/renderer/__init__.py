"""Linear programs become source: C, OpenCL C, CUDA C and WGSL."""
