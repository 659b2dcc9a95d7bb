"""The functional ops of neural networks, as Tensor methods: convolution, pooling, dropout and
normalization, each composed of the primitive ops (chapter 10)."""
from __future__ import annotations


class NNOps:
    """Mixed into Tensor."""
