"""Seeing inside: what DEBUG=1..5 prints while tensors are realized."""
from __future__ import annotations

from typing import Any

from tinyfw.codegen.lower import Kernel, flops_and_bytes
from tinyfw.device import Device
from tinyfw.engine.settings import debug_level
from tinyfw.renderer.cstyle import describe


def print_schedule(items: list[Any]) -> None:
    """DEBUG>=1: how many kernels (and copies) a realize runs, and their names."""
    kernels = [i for i in items if i.ast is not None]
    copies = len(items) - len(kernels)
    names = ", ".join(i.name for i in kernels)
    more = f" and {copies} cop{'y' if copies == 1 else 'ies'}" if copies else ""
    print(f"schedule: {len(kernels)} kernel{'s' if len(kernels) != 1 else ''}{more}: {names}")


def print_kernel_run(number: int, item: Any, seconds: float, input_bytes: int) -> None:
    """DEBUG>=2: one line per kernel: device, name, time, GFLOP/s and GB/s, and on the CPU the
    share of this machine's peak of each (tinyfw/runtime/peak.py)."""
    if item.ast is None:
        print(f"*** {item.device:<6} {number:4d} {item.name:<24} tm {seconds * 1e6:9.1f}us")
        return
    flops, moved = flops_and_bytes(Kernel.from_ast(item.ast, item.name), input_bytes)
    gflops = flops / max(seconds, 1e-9) / 1e9
    gbs = moved / max(seconds, 1e-9) / 1e9
    share = ""
    if Device[item.device].renderer.targets_host:  # (other devices' limits are not probed)
        share = peak_share(gflops, gbs, moved)
    print(f"*** {item.device:<6} {number:4d} {item.name:<24} tm {seconds * 1e6:9.1f}us "
          f"{gflops:8.2f} GFLOP/s {gbs:8.2f} GB/s" + share)


def peak_share(gflops: float, gbs: float, moved: int) -> str:
    """A CPU kernel's rates as shares of the machine's peak: FLOP/s, and GB/s of the memory
    level its bytes fit in (L3 if they fit in the L3, else DRAM), that level named."""
    from tinyfw.runtime.peak import cpu_peak
    peak = cpu_peak()
    bandwidth, level = peak.bandwidth(moved)
    return f"  of peak: {gflops / peak.gflops:4.0%} FLOP/s {gbs / bandwidth:4.0%} GB/s {level}"


def print_pass(name: str, seconds: float, note: str = "") -> None:
    """DEBUG>=3: one line per pass of tinyfw/engine/program.py as it runs, with its time."""
    print(f"pass {name:<16} tm {seconds * 1e6:9.1f}us" + (f"  {note}" if note else ""))


def print_kernel_details(compiled: Any) -> None:
    """DEBUG>=3 the kernel's loops and steps; >=4 its source; >=5 its AST (of a CompiledKernel
    of tinyfw/engine/program.py: what its passes made, nothing made again)."""
    level = debug_level()
    kernel = compiled.kernel
    if level >= 3:
        loops = " ".join(f"{a.kind.name.lower()}:{a.size}" for a in kernel.axes)
        inputs = len(compiled.program.params) - 1
        opts = ", ".join(map(repr, compiled.opts)) or "none"
        print(f"kernel {kernel.name}: loops {loops}; inputs {inputs}; optimizations {opts}")
        for i, step in enumerate(compiled.program.steps):
            print(f"  {i:3d} {describe(step)}")
    if level >= 4:
        print(compiled.source if compiled.source is not None else
              f"(the {compiled.device} device interprets the kernel's AST; it has no source)")
    if level >= 5:
        print_ast(kernel.ast)


def arg_text(arg: Any) -> str:
    """A node's argument, short: a ShapeTracker as shape and strides (offset, mask if set)."""
    views = getattr(arg, "views", None)
    if views is None:
        return str(arg)
    return " | ".join(f"shape {v.shape} strides {v.strides}"
                      + (f" offset {v.offset}" if v.offset else "")
                      + (f" mask {v.mask}" if v.mask is not None else "") for v in views)


def print_ast(ast: Any) -> None:
    """A kernel's AST, one node per line, sources first; a node names its sources by number."""
    numbers: dict[Any, int] = {}
    for node in ast.toposort():
        numbers[node] = len(numbers)
        srcs = ", ".join(f"%{numbers[s]}" for s in node.src)
        arg = "" if node.arg is None else f" {arg_text(node.arg)}"
        print(f"  %{numbers[node]:<3} {node.op.name:<8} {node.dtype.name:<8} "
              f"{str(node.shape):<14} ({srcs}){arg}")
