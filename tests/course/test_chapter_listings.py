"""The side-by-side listings of chapter 06 ("Four languages, one kernel") are what the four
renderers print today for that kernel, byte for byte."""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from tinyfw import Tensor
from tinyfw.engine.program import linear_program
from tinyfw.renderer.cstyle import C
from tinyfw.renderer.opencl_c import OPENCL
from tinyfw.renderer.cuda_c import CUDA
from tinyfw.renderer.wgsl import WGSL

README = Path(__file__).resolve().parents[2] / "chapters" / "06_opencl" / "README.md"


def section(markdown: str, heading: str) -> str:
    start = markdown.index(f"## {heading}\n")
    end = markdown.find("\n## ", start + 1)
    return markdown[start:end if end != -1 else None]


def test_four_languages_one_kernel() -> None:
    x = Tensor(np.arange(6, dtype=np.float32).reshape(2, 3))
    w = Tensor([1.0, 2.0, 3.0])
    prog = linear_program((x * w).sum(1).schedule()[0])
    text = section(README.read_text(encoding="utf-8"), "Four languages, one kernel")
    listings = re.findall(r"```(?:c|cuda|wgsl)\n(.*?)```", text, flags=re.S)
    expected = [language.render(prog) for language in (C, OPENCL, CUDA, WGSL)]
    assert len(listings) == 4, f"expected 4 listings (c, c, cuda, wgsl), found {len(listings)}"
    for shown, source, name in zip(listings, expected, ["C", "OpenCL", "CUDA", "WGSL"]):
        assert shown == source, f"the {name} listing of chapter 06 is stale; it is now:\n{source}"
