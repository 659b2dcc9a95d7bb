"""TinyJit (chapter 09): a function of tensors run twice, then its kernels replayed. It sits
above Tensor (it takes and returns tensors); what the layers below need of a capture is in
tinyfw/engine/capture.py."""
from tinyfw.jit.jit import JitError, TinyJit, watch

__all__ = ["JitError", "TinyJit", "watch"]
