"""TinyJit (chapter 09): a function of tensors run twice, then its kernels replayed. It sits
above Tensor (it takes and returns tensors); what the layers below need of a capture is in
tinyfw/engine/capture.py. jit.py says which module of this folder holds what."""
from tinyfw.engine.capture import set_replayer
from tinyfw.jit.jit import JitError, TinyJit, watch

set_replayer(TinyJit)  # capture.replayed: a step Tensor's methods repeat, under a TinyJit

__all__ = ["JitError", "TinyJit", "watch"]
