"""The one error of tinyfw/jit/: each of its modules raises it, and says in it what to do."""


class JitError(RuntimeError):
    """A function TinyJit cannot replay faithfully, or a call unlike the captured one."""
