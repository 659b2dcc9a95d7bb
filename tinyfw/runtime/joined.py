"""Several kernels' sources as one program, for the compilers whose cost is mostly per program
(PoCL's clBuildProgram, NVRTC): the prelude and the helpers once, each kernel renamed
k<i>_<name> (two kernels of a schedule may share a name)."""
from __future__ import annotations


def joined_source(kernels: list[tuple[str, str]], prelude: str, helpers: str,
                  header: str) -> tuple[str, list[str]] | None:
    """One program's source for kernels (name, source each), each written as the prelude, the
    helpers or not, then the kernel, whose first line starts with header.format(name); and the
    kernels' names in it. None if a source is not of that shape."""
    bodies, names = [], []
    uses_helpers = False
    for i, (name, source) in enumerate(kernels):
        first = header.format(name)
        if not source.startswith(prelude) or source.count(first) != 1:
            return None
        body = source.removeprefix(prelude)
        uses_helpers = uses_helpers or body.startswith(helpers)
        names.append(f"k{i}_{name}")
        bodies.append(body.removeprefix(helpers).replace(first, header.format(names[-1])))
    return prelude + (helpers if uses_helpers else "") + "".join(bodies), names
