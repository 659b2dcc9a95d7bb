"""torch.nn's recurrent layers (RNN, LSTM, GRU and their cells) over tinyfw's Tensor: one step
per time step, written with tinyfw's ops. Parameters are torch's, by torch's names
(weight_ih_l0, weight_hh_l0, bias_ih_l0, bias_hh_l0, ..._reverse), uniform in +-1/sqrt(hidden)."""
from __future__ import annotations

import math
from typing import Any

from tinyfw.tensor import Tensor
from tinyfw.torch.nn import functional as F
from tinyfw.torch.nn.module import Module, Parameter

_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}


def _cell_step(mode: str, x: Tensor, h: Tensor, c: Tensor | None, w_ih: Tensor, w_hh: Tensor,
               b_ih: Tensor | None, b_hh: Tensor | None) -> tuple[Tensor, Tensor | None]:
    """One time step: the new hidden state (and the LSTM's new cell state)."""
    gi = F.linear(x, w_ih, b_ih)
    gh = F.linear(h, w_hh, b_hh)
    if mode == "LSTM":
        assert c is not None
        i, f, g, o = gi.add(gh).chunk(4, dim=-1)
        c = f.sigmoid() * c + i.sigmoid() * g.tanh()
        return o.sigmoid() * c.tanh(), c
    if mode == "GRU":
        ir, iz, in_ = gi.chunk(3, dim=-1)
        hr, hz, hn = gh.chunk(3, dim=-1)
        r, z = (ir + hr).sigmoid(), (iz + hz).sigmoid()
        n = (in_ + r * hn).tanh()
        return (1 - z) * n + z * h, None
    pre = gi + gh
    return (pre.tanh() if mode == "RNN_TANH" else pre.relu()), None


class _RNNBase(Module):
    mode = "RNN_TANH"

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False,
                 proj_size: int = 0, device: Any = None, dtype: Any = None):
        super().__init__()
        if proj_size:
            raise NotImplementedError("LSTM(proj_size=...): tinyfw's LSTM has no projection")
        if not 0 <= dropout <= 1:
            raise ValueError("dropout should be a number in range [0, 1] representing the "
                             "probability of an element being zeroed")
        self.input_size, self.hidden_size, self.num_layers = input_size, hidden_size, num_layers
        self.bias, self.batch_first, self.dropout = bias, batch_first, float(dropout)
        self.bidirectional = bidirectional
        gates = _GATES[self.mode] * hidden_size
        bound = 1 / math.sqrt(hidden_size)
        directions = 2 if bidirectional else 1
        for layer in range(num_layers):
            for d in range(directions):
                suffix = f"_l{layer}" + ("_reverse" if d else "")
                size_in = input_size if layer == 0 else hidden_size * directions
                shapes: dict[str, tuple[int, ...]] = {"weight_ih": (gates, size_in),
                                                      "weight_hh": (gates, hidden_size)}
                if bias:
                    shapes.update({"bias_ih": (gates,), "bias_hh": (gates,)})
                for name, shape in shapes.items():
                    setattr(self, name + suffix, Parameter(
                        Tensor.uniform(*shape, low=-bound, high=bound)))
        if device is not None or dtype is not None:
            self.to(device=device, dtype=dtype) if device is not None and dtype is not None \
                else self.to(device if device is not None else dtype)

    def _weights(self, layer: int, reverse: bool) -> tuple[Any, ...]:
        suffix = f"_l{layer}" + ("_reverse" if reverse else "")
        return tuple(getattr(self, f"{n}{suffix}") if self.bias or n.startswith("weight")
                     else None for n in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"))

    def forward(self, input: Tensor, hx: Any = None) -> tuple[Tensor, Any]:  # noqa: A002
        batched = input.ndim == 3
        if input.ndim not in (2, 3):
            raise ValueError(f"{type(self).__name__}: Expected input to be 2D or 3D, got "
                             f"{input.ndim}D instead")
        x = input if batched else input.unsqueeze(1)
        if batched and self.batch_first:
            x = x.transpose(0, 1)  # (seq, batch, features)
        seq, batch = x.shape[0], x.shape[1]
        directions = 2 if self.bidirectional else 1
        lstm = self.mode == "LSTM"
        h0: Any
        c0: Any
        h0, c0 = (hx if lstm else (hx, None)) if hx is not None else (None, None)
        if h0 is not None and not batched:
            h0 = h0.unsqueeze(1)
            c0 = c0.unsqueeze(1) if c0 is not None else None
        zeros = Tensor.zeros(self.num_layers * directions, batch, self.hidden_size,
                             dtype=x.dtype, device=x.device)
        h0 = zeros if h0 is None else h0
        c0 = zeros if (c0 is None and lstm) else c0
        expected = (self.num_layers * directions, batch, self.hidden_size)
        for name, state in (("hidden", h0), ("cell", c0)):
            if state is not None and state.shape != expected:
                raise RuntimeError(f"Expected {name} size {expected}, got {tuple(state.shape)}")
        h_n: list[Any] = []
        c_n: list[Any] = []
        for layer in range(self.num_layers):
            outs = []
            for d in range(directions):
                k = layer * directions + d
                h, c = h0[k], (c0[k] if lstm else None)
                w = self._weights(layer, bool(d))
                steps: list[Tensor] = []
                for t in (reversed(range(seq)) if d else range(seq)):
                    h, c = _cell_step(self.mode, x[t], h, c, *w)
                    steps.append(h)
                if d:
                    steps.reverse()
                outs.append(Tensor.stack(*steps, dim=0))
                h_n.append(h)
                if lstm:
                    c_n.append(c)
            x = outs[0] if directions == 1 else Tensor.cat(*outs, dim=-1)
            if self.dropout and layer < self.num_layers - 1:
                x = F.dropout(x, self.dropout, self.training)
        out = x.transpose(0, 1) if batched and self.batch_first else x
        hn = Tensor.stack(*h_n, dim=0)
        cn = Tensor.stack(*c_n, dim=0) if lstm else None
        if not batched:
            out, hn = out.squeeze(1), hn.squeeze(1)
            cn = cn.squeeze(1) if cn is not None else None
        return out, ((hn, cn) if lstm else hn)

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if self.batch_first:
            s += ", batch_first=True"
        if self.bidirectional:
            s += ", bidirectional=True"
        return s


class RNN(_RNNBase):
    def __init__(self, *args: Any, nonlinearity: str = "tanh", **kwargs: Any):
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or "
                             "'relu'.")
        self.mode = "RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU"
        super().__init__(*args, **kwargs)


class LSTM(_RNNBase):
    mode = "LSTM"


class GRU(_RNNBase):
    mode = "GRU"


class _CellBase(Module):
    mode = "RNN_TANH"

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True,
                 device: Any = None, dtype: Any = None):
        super().__init__()
        self.input_size, self.hidden_size, self.bias = input_size, hidden_size, bias
        gates = _GATES[self.mode] * hidden_size
        bound = 1 / math.sqrt(hidden_size)
        shapes: dict[str, tuple[int, ...]] = {"weight_ih": (gates, input_size),
                                              "weight_hh": (gates, hidden_size)}
        if bias:
            shapes.update({"bias_ih": (gates,), "bias_hh": (gates,)})
        for name, shape in shapes.items():
            setattr(self, name, Parameter(Tensor.uniform(*shape, low=-bound, high=bound)))
        if not bias:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)

    def forward(self, input: Tensor, hx: Any = None) -> Any:  # noqa: A002
        batched = input.ndim == 2
        x = input if batched else input.unsqueeze(0)
        zeros = Tensor.zeros(x.shape[0], self.hidden_size, dtype=x.dtype, device=x.device)
        lstm = self.mode == "LSTM"
        if hx is None:
            h, c = zeros, (zeros if lstm else None)
        else:
            h, c = hx if lstm else (hx, None)
            if not batched:
                h, c = h.unsqueeze(0), (c.unsqueeze(0) if c is not None else None)
        h, c = _cell_step(self.mode, x, h, c, self.weight_ih, self.weight_hh, self.bias_ih,
                          self.bias_hh)
        if not batched:
            h, c = h.squeeze(0), (c.squeeze(0) if c is not None else None)
        return (h, c) if lstm else h


class RNNCell(_CellBase):
    def __init__(self, input_size: int, hidden_size: int, bias: bool = True,
                 nonlinearity: str = "tanh", device: Any = None, dtype: Any = None):
        self.mode = "RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU"
        super().__init__(input_size, hidden_size, bias, device, dtype)


class LSTMCell(_CellBase):
    mode = "LSTM"


class GRUCell(_CellBase):
    mode = "GRU"
