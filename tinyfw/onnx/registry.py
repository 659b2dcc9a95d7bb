"""The table of ONNX operators tinyfw runs, and what each operator's function is given.

Each operator is one function `fn(node, *inputs)`: `node` is a `Call` (its attributes, its opset,
the device, and `node.values(x)` to read a small input's values, such as Reshape's shape), and
inputs are Tensors (None for an optional input left out). It returns a Tensor or a tuple of them,
one per output. `@op("Name")` registers it; `check=` names a function that, given the node's
attributes at load time, returns why tinyfw cannot run it (or None)."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tinyfw.tensor import Tensor

OpFn = Callable[..., Any]
CheckFn = Callable[["NodeInfo"], "str | None"]


@dataclass
class NodeInfo:
    """A node as loaded: its operator, name, inputs and outputs (value names, "" for an omitted
    optional one), attributes as Python values, the opset of its domain, and subgraphs."""
    op: str
    name: str
    inputs: list[str]
    outputs: list[str]
    attrs: dict[str, Any]
    opset: int
    graphs: dict[str, Any] = field(default_factory=dict)  # attribute name -> runner.Graph

    def attr(self, name: str, default: Any = None) -> Any:
        return self.attrs.get(name, default)


@dataclass
class OpDef:
    fn: OpFn
    check: CheckFn | None
    fold: bool  # may run at load time on constant inputs (pure shape and value arithmetic)


OPS: dict[str, OpDef] = {}


def op(*names: str, check: CheckFn | None = None, fold: bool = True) -> Callable[[OpFn], OpFn]:
    """Registers fn as the operators `names`."""
    def register(fn: OpFn) -> OpFn:
        for name in names:
            OPS[name] = OpDef(fn, check, fold)
        return fn
    return register


class Known:
    """The values known without computing them (constants, shapes, folded arithmetic), by
    tensor; the tensors are kept alive with them (an id is never reused while listed)."""

    def __init__(self) -> None:
        self._values: dict[int, tuple[Tensor, np.ndarray]] = {}
        self._narrow: dict[int, tuple[Tensor, int]] = {}  # (tensors of a narrow type)

    def set_narrow(self, t: Tensor | None, elem_type: int) -> None:
        """Notes that t carries values of the narrow ONNX type elem_type (float8, int4...:
        tinyfw/onnx/lowbit.py)."""
        if t is not None:
            self._narrow[id(t)] = (t, elem_type)

    def narrow(self, t: Tensor | None) -> int | None:
        """The narrow ONNX type t carries, or None for an ordinary tensor."""
        entry = self._narrow.get(id(t)) if t is not None else None
        return entry[1] if entry is not None and entry[0] is t else None

    def add(self, t: Tensor, value: np.ndarray) -> Tensor:
        self._values[id(t)] = (t, value)
        return t

    def get(self, t: Tensor | None) -> np.ndarray | None:
        hit = self._values.get(id(t)) if t is not None else None
        return hit[1] if hit is not None else None

    def __contains__(self, t: Tensor | None) -> bool:
        return t is not None and id(t) in self._values


class Call:
    """What an operator's function sees of its node while it runs."""

    def __init__(self, info: NodeInfo, known: Known, device: str,
                 run_graph: Callable[..., list[Tensor | None]] | None = None,
                 carried: list[int | None] | None = None):
        self.info, self.known, self.device = info, known, device
        # each input's narrow ONNX type (float8, int4...: lowbit.py), None for an ordinary one
        self.carried = carried or [None] * len(info.inputs)
        self.opset, self.op, self.name = info.opset, info.op, info.name
        self.n_outputs = len(info.outputs)
        self.run_graph = run_graph

    def attr(self, name: str, default: Any = None) -> Any:
        return self.info.attrs.get(name, default)

    def wants(self, output: int) -> bool:
        """Whether the graph uses output number `output` (an optional one may be left out)."""
        return output < self.n_outputs and self.info.outputs[output] != ""

    def values(self, x: Tensor) -> np.ndarray:
        """x's values as numpy: known without running anything where x is a constant (an
        initializer, a Constant, a shape, or arithmetic on them, folded); else x is computed
        now (a value that decides a shape, such as NonZero's count, needs that)."""
        value = self.known.get(x)
        return value if value is not None else x.numpy()

    def const(self, value: Any, dtype: Any = None) -> Tensor:
        """A tensor of the given values, known (later nodes may fold it)."""
        arr = np.asarray(value, dtype=dtype)
        return self.known.add(Tensor(arr, device=self.device), arr)

    def ints(self, x: Tensor) -> list[int]:
        return [int(v) for v in self.values(x).reshape(-1)]

    def floats(self, x: Tensor) -> list[float]:
        return [float(v) for v in self.values(x).reshape(-1)]
