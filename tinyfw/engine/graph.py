"""Which of a TinyJit's captured launches run as one device graph (tinyfw/runtime/graph.py).

After a capture the jit cache is a list of launches. `graph_steps` cuts it into steps: each run
of two or more kernels in a row on one device that has a graph class, every buffer they use on
that device, becomes one DeviceGraph (with the copies between two buffers of that device among
them, where the graph class can copy); a copy between devices, a lone kernel, a kernel reading
another device's memory, or a device without graphs (NUMPY) stays a launch of its own.
JIT_GRAPH=0 keeps every launch on its own, so that bench/graph.py can show what graphs buy.
"""
from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any, Protocol

from tinyfw.device import Buffer, Device
from tinyfw.engine import realize
from tinyfw.engine.schedule import ScheduleItem
from tinyfw.runtime.graph import DeviceGraph, GraphKernel, NotSupportedError


class Captured(Protocol):
    """A captured launch (tinyfw.engine.capture.Launch)."""
    item: ScheduleItem
    out: Buffer
    inputs: list[Buffer]


def graphs_enabled() -> bool:
    """Whether TinyJit builds device graphs (JIT_GRAPH, default 1)."""
    return os.getenv("JIT_GRAPH", "1") not in ("", "0")


def graph_steps(launches: list[Any], variable: set[Buffer]) -> list[Any]:
    """The launches with each run of kernels that one device can graph replaced by its graph;
    `variable` holds the buffers a replay may swap for others (inputs, outputs)."""
    steps: list[Any] = []
    for run in _runs(launches):
        graph = _graph_of(run, variable) if len(run) >= 2 else None
        steps.extend(run if graph is None else [graph])
    return steps


def _device_of(launch: Captured) -> str | None:
    """The device that could graph this launch, or None (a copy, a kernel reading or writing
    another device's memory, a device without a graph class)."""
    device = launch.item.device
    graph = Device[device].graph  # (Runtime.graph: None where the device has none)
    if graph is None or any(b.device != device for b in [launch.out, *launch.inputs]):
        return None
    if launch.item.ast is None and not graph.copies:
        return None
    if launch.item.ast is not None and \
            not graph.accepts(realize.program_of(launch.item).runner):
        return None
    return device


def _runs(launches: list[Captured]) -> Iterator[list[Captured]]:
    """The launches in runs of one graphable device (and single launches between them)."""
    run: list[Captured] = []
    for launch in launches:
        device = _device_of(launch)
        if run and (device is None or device != _device_of(run[0])):
            yield run
            run = []
        run.append(launch)
        if device is None:
            yield run
            run = []
    if run:
        yield run


def _graph_of(run: list[Captured], variable: set[Buffer]) -> DeviceGraph | None:
    """The device's graph of these kernels, or None where it cannot make one."""
    device = Device[run[0].item.device]
    kernels = [GraphKernel(None if launch.item.ast is None else
                           realize.program_of(launch.item).runner, launch.item,
                           [launch.out, *launch.inputs]) for launch in run]
    try:
        graph: DeviceGraph = device.graph(device, kernels, variable)
    except NotSupportedError:
        return None
    return graph
