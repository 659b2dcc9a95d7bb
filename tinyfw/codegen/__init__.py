"""A scheduled kernel becomes loops: the kernel's axes and the linear program lowered from them."""
