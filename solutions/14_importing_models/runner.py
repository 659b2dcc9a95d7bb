# Solutions of chapter 14, generated from tinyfw/onnx/runner.py by `python -m tools.generate`.
# Edit tinyfw/onnx/runner.py rather than this copy. Grade these solutions with:
#   python -m pytest chapters/14_importing_models --impl=solutions
# generated text id: 29288482174baf3e (lets tools.generate tell your edits apart)
"""OnnxRunner: loads an ONNX model (path, bytes or ModelProto), checks at load time that tinyfw
can run every node and dtype, and runs the graph node by node on Tensors."""
from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import numpy as np
import onnx
from onnx import AttributeProto, TensorProto, helper, numpy_helper

from tinyfw.device import Device
from tinyfw.dtype import DType, dtypes
# the operator modules register their operators when imported
from tinyfw.onnx import (ops_attention, ops_image, ops_math, ops_more, ops_nn,  # noqa: F401
                         ops_shape)
from tinyfw.onnx.lowbit import CARRIED, carried_array, carried_results
from tinyfw.onnx.registry import OPS, Call, Known, NodeInfo, OpDef
from tinyfw.onnx.types import dtype_of
from tinyfw.tensor import Tensor

# Values at most this large that depend only on constants are folded when the graph runs (on
# the NUMPY device, without compiling a kernel): shapes and the arithmetic on them.
FOLD_LIMIT = 1 << 12


def supported_ops() -> list[str]:
    """The ONNX operators (default domain) tinyfw runs."""
    return sorted(OPS)


def _check_type(tp: onnx.TypeProto, where: str) -> None:
    kind = tp.WhichOneof("value")
    if kind is None:  # no type given: the run finds it
        return
    if kind != "tensor_type":
        raise NotImplementedError(f"{where}: tinyfw runs tensors only, not a {kind}")
    if tp.tensor_type.elem_type not in (TensorProto.UNDEFINED, *CARRIED):
        dtype_of(tp.tensor_type.elem_type, where)


def _attr_value(a: AttributeProto, opset: int, where: str) -> Any:
    if a.type == AttributeProto.GRAPH:
        return Graph(a.g, opset, f"{where} {a.name}")
    if a.type == AttributeProto.TENSOR:
        dtype_of(a.t.data_type, f"{where}: attribute {a.name}")
        return numpy_helper.to_array(a.t)
    if a.type in (AttributeProto.SPARSE_TENSOR, AttributeProto.GRAPHS, AttributeProto.TENSORS,
                  AttributeProto.TYPE_PROTO, AttributeProto.TYPE_PROTOS,
                  AttributeProto.SPARSE_TENSORS):
        raise NotImplementedError(f"{where}: attribute {a.name} of type "
                                  f"{AttributeProto.AttributeType.Name(a.type)} is not supported")
    value = helper.get_attribute_value(a)
    if isinstance(value, bytes):
        return value.decode()
    if isinstance(value, list) and value and isinstance(value[0], bytes):
        return [v.decode() for v in value]
    return value


class Graph:
    """A graph's nodes (checked), its initializers, inputs and outputs."""

    def __init__(self, graph: onnx.GraphProto, opset: int, where: str = "graph"):
        self.name = graph.name
        self.initializers: dict[str, np.ndarray] = {}
        self.carried: dict[str, int] = {}  # values of a narrow type: the type (lowbit.py)
        for init in graph.initializer:
            arr = numpy_helper.to_array(init)
            if init.data_type in CARRIED:
                self.carried[init.name] = init.data_type
                arr = carried_array(arr, init.data_type)
            else:
                dtype_of(init.data_type, f"initializer {init.name!r}")
            self.initializers[init.name] = arr
        if graph.sparse_initializer:
            raise NotImplementedError(f"{where}: sparse initializers are not supported")
        self.inputs: list[tuple[str, onnx.TypeProto]] = [
            (i.name, i.type) for i in graph.input if i.name not in self.initializers]
        self.outputs = [o.name for o in graph.output]
        for i in list(graph.input) + list(graph.output) + list(graph.value_info):
            _check_type(i.type, f"value {i.name!r}")
        for name, tp in self.inputs:
            if tp.WhichOneof("value") == "tensor_type" and tp.tensor_type.elem_type in CARRIED:
                self.carried[name] = tp.tensor_type.elem_type
        self.nodes: list[NodeInfo] = []
        for k, node in enumerate(graph.node):
            name = node.name or f"#{k}"
            where_node = f"node {name!r} ({node.op_type})"
            if node.domain not in ("", "ai.onnx"):
                raise NotImplementedError(f"{where_node}: operators of domain {node.domain!r} "
                                          "are not supported")
            if node.op_type not in OPS:
                raise NotImplementedError(f"{where_node}: tinyfw has no operator "
                                          f"{node.op_type}")
            attrs: dict[str, Any] = {}
            graphs: dict[str, Graph] = {}
            for a in node.attribute:
                value = _attr_value(a, opset, where_node)
                (graphs if isinstance(value, Graph) else attrs)[a.name] = value
            info = NodeInfo(node.op_type, name, list(node.input), list(node.output), attrs,
                            opset, graphs)
            check = OPS[node.op_type].check
            if check is not None and (why := check(info)) is not None:
                raise NotImplementedError(f"{where_node}: {why}")
            self.nodes.append(info)


class OnnxRunner:
    """`OnnxRunner(model, device=None)`, model a path, bytes or onnx.ModelProto;
    `runner({"input": array_or_tensor})` returns {output name: Tensor}. Operators or dtypes that
    tinyfw cannot run are refused here, when the model is loaded (NotImplementedError)."""

    def __init__(self, model: str | os.PathLike | bytes | onnx.ModelProto,
                 device: str | None = None):
        if isinstance(model, (str, os.PathLike)):
            model = onnx.load(os.fspath(model))  # external data files beside it are loaded too
        elif isinstance(model, (bytes, bytearray)):
            model = onnx.load_from_string(bytes(model))
        if not isinstance(model, onnx.ModelProto):
            raise TypeError(f"OnnxRunner takes a path, bytes or an onnx.ModelProto, not "
                            f"{type(model).__name__}")
        self.model = model
        self.device = Device.canonicalize(device) if device is not None else Device.DEFAULT
        opsets = {o.domain: o.version for o in model.opset_import}
        self.opset = opsets.get("", opsets.get("ai.onnx", 1))
        for domain in opsets:
            if domain not in ("", "ai.onnx", "ai.onnx.ml") and any(
                    n.domain == domain for n in model.graph.node):
                raise NotImplementedError(f"operator domain {domain!r} is not supported")
        if model.functions:
            raise NotImplementedError("model-local functions are not supported")
        self.graph = Graph(model.graph, self.opset)
        self._check_inferred_types()
        self.weights = {name: self._place(arr) for name, arr in self.graph.initializers.items()}
        self.inputs = {name: tp for name, tp in self.graph.inputs}
        self.outputs = list(self.graph.outputs)
        # the outputs of the last call of a narrow type (float8, int4...: lowbit.py), by name:
        # their tensors are its carrier (float32, int8, uint8), holding the narrow values
        self.carried_outputs: dict[str, int] = {}

    def _check_inferred_types(self) -> None:
        """The dtypes of the values between nodes, as ONNX's shape inference finds them."""
        try:
            inferred = onnx.shape_inference.infer_shapes(self.model)
        except Exception:  # inference is a help, not a requirement: the run checks the rest
            return
        for vi in inferred.graph.value_info:
            _check_type(vi.type, f"value {vi.name!r}")

    def _place(self, arr: np.ndarray) -> Tensor:
        t = Tensor(np.ascontiguousarray(arr), device=self.device)
        return t.realize() if arr.size > 0 else t

    def input_spec(self, name: str) -> tuple[DType, tuple[int | str | None, ...]]:
        """An input's dtype and shape as the model declares them (a name or None for a dim
        given at call time)."""
        tt = self.inputs[name].tensor_type
        dims = tuple(d.dim_value if d.HasField("dim_value") else (d.dim_param or None)
                     for d in tt.shape.dim)
        if tt.elem_type in CARRIED:  # a narrow type: its carrier
            return CARRIED[tt.elem_type], dims
        return dtype_of(tt.elem_type, f"input {name!r}"), dims

    def _input(self, name: str, value: Any) -> Tensor:
        dtype, dims = self.input_spec(name)
        if not isinstance(value, Tensor):
            arr = np.asarray(value)
            if name in self.graph.carried:
                arr = carried_array(arr, self.graph.carried[name])
            if arr.dtype == np.float64 and dtype != dtypes.float64 and not isinstance(
                    value, np.ndarray):
                arr = arr.astype(dtype.np)  # a Python list or number takes the input's dtype
            value = Tensor(arr, device=self.device)
        if value.dtype != dtype:
            raise TypeError(f"input {name!r} must be {dtype.name}, got {value.dtype.name}")
        if self.inputs[name].tensor_type.HasField("shape"):
            if len(dims) != value.ndim or any(isinstance(d, int) and d > 0 and d != s
                                              for d, s in zip(dims, value.shape)):
                raise ValueError(f"input {name!r} must have shape {dims}, got {value.shape}")
        return value.to(self.device) if value.device != self.device else value

    def __call__(self, inputs: Mapping[str, Any] | None = None, **kwargs: Any) -> dict[str, Tensor]:
        given = {**(inputs or {}), **kwargs}
        missing = [n for n in self.inputs if n not in given]
        unknown = [n for n in given if n not in self.inputs]
        if missing or unknown:
            raise ValueError(f"the model's inputs are {list(self.inputs)}: "
                             f"{'missing ' + str(missing) if missing else ''}"
                             f"{' unknown ' + str(unknown) if unknown else ''}")
        env: dict[str, Tensor | None] = {"": None}
        known = Known()
        for name, t in self.weights.items():
            env[name] = t
            if t.numel() <= FOLD_LIMIT:
                known.add(t, self.graph.initializers[name])
        for name, value in given.items():
            env[name] = self._input(name, value)
        for name, elem_type in self.graph.carried.items():
            known.set_narrow(env[name], elem_type)
        self._run(self.graph, env, known)
        self.carried_outputs = {name: found for name in self.outputs
                                if (found := known.narrow(env.get(name))) is not None}
        return {name: _tensor(env[name], name) for name in self.outputs}

    def _run(self, graph: Graph, env: dict[str, Tensor | None], known: Known) -> None:
        """Runs graph's nodes in their order: each node's inputs are read from env by name
        (RuntimeError if one is not there yet), `self._node` computes its outputs, and each
        output with a name ("" is an output left out) is put in env under it."""
        # >>> exercise 14.walk #walking-the-graph
        for node in graph.nodes:
            args = []
            for name in node.inputs:
                if name not in env:
                    raise RuntimeError(f"node {node.name!r} ({node.op}): input {name!r} is "
                                       "not computed before it (the graph is not in order)")
                args.append(env[name])
            results = self._node(node, args, known, env)
            for out, value in zip(node.outputs, results):
                if out:
                    env[out] = value
        # <<< exercise

    def _node(self, node: NodeInfo, args: list[Tensor | None], known: Known,
              env: dict[str, Tensor | None]) -> list[Tensor | None]:
        opdef = OPS[node.op]
        # values of a narrow type (float8, int4...) go only where lowbit.py lets them
        carried = [known.narrow(a) for a in args]
        try:
            narrow_outs = carried_results(node.op, node.attrs, carried, len(node.outputs))
        except NotImplementedError as e:
            raise NotImplementedError(f"node {node.name!r} ({node.op}): {e}") from e
        # a small node of constants is folded: run on the NUMPY device, its values kept known
        fold = folds(opdef, node, args, known)
        if fold:
            args = [None if a is None else _on_numpy(known, a) for a in args]
        call = Call(node, known, "NUMPY" if fold else self.device,
                    lambda g, values: self._subgraph(g, values, env, known), carried)
        try:
            out = opdef.fn(call, *args)
        except NotImplementedError as e:
            raise NotImplementedError(f"node {node.name!r} ({node.op}): {e}") from e
        outs = list(out) if isinstance(out, (tuple, list)) else [out]
        for i, name in enumerate(node.outputs):
            if name and (i >= len(outs) or outs[i] is None):
                raise NotImplementedError(f"node {node.name!r} ({node.op}): output {i} "
                                          f"({name!r}) is not computed by tinyfw")
        outs = place_folded(outs, known, self.device) if fold else outs
        for i, (t, narrow) in enumerate(zip(outs, narrow_outs)):
            if t is not None and known.narrow(t) != narrow:  # (an input passed on as it is,
                outs[i] = t = t.detach()  # a float8 cast to float32: the same carrier)
            if narrow is not None:
                known.set_narrow(t, narrow)
        return outs

    def _subgraph(self, graph: Graph, values: list[Tensor], env: dict[str, Tensor | None],
                  known: Known) -> list[Tensor | None]:
        """Runs a subgraph (If's branches, Loop's body) with the outer values in scope."""
        inner = dict(env)
        for name, arr in graph.initializers.items():
            inner[name] = known.add(self._place(arr), arr)
            if name in graph.carried:
                known.set_narrow(inner[name], graph.carried[name])
        for (name, _), value in zip(graph.inputs, values):
            inner[name] = value
        self._run(graph, inner, known)
        return [inner[name] for name in graph.outputs]


def folds(opdef: OpDef, node: NodeInfo, args: list[Tensor | None], known: Known) -> bool:
    """Whether a node is folded: its operator may fold (`opdef.fold`), it has no subgraph,
    each input it is given (None is one left out) has known values, and together they hold at
    most FOLD_LIMIT elements."""
    # >>> exercise 14.fold #shapes-folded-to-constants
    return opdef.fold and not node.graphs and all(a is None or a in known for a in args) \
        and sum(a.numel() for a in args if a is not None) <= FOLD_LIMIT
    # <<< exercise


def place_folded(outs: list[Tensor | None], known: Known, device: str) -> list[Tensor | None]:
    """A folded node's outputs (computed on the NUMPY device) put on the model's device: for
    each, a Tensor of its values (known ones, or computed now), itself known when it holds at
    most FOLD_LIMIT elements; None stays None."""
    # >>> exercise 14.fold #shapes-folded-to-constants
    placed: list[Tensor | None] = []
    for t in outs:
        if t is None:
            placed.append(None)
            continue
        value = known.get(t)
        arr = value if value is not None else t.numpy()
        p = Tensor(arr, device=device)
        placed.append(known.add(p, arr) if arr.size <= FOLD_LIMIT else p)
    return placed
    # <<< exercise


def _on_numpy(known: Known, t: Tensor) -> Tensor:
    """A known value as a tensor on the NUMPY device (where folding computes), known too."""
    value = known.get(t)
    assert value is not None
    return known.add(Tensor(value, device="NUMPY"), value)


def _tensor(t: Tensor | None, name: str) -> Tensor:
    if t is None:
        raise RuntimeError(f"output {name!r} was not computed")
    return t
