"""torch.nn over tinyfw: Module, Parameter, the containers, layers, activations and losses
(tinyfw.torch.nn.layers), functional, init and utils."""
from tinyfw.torch.nn import functional, init, utils
from tinyfw.torch.nn.layers import *  # noqa: F403
from tinyfw.torch.nn.layers import __all__ as _layers
from tinyfw.torch.nn.module import Module, Parameter
from tinyfw.torch.nn.recurrent import GRU, LSTM, GRUCell, LSTMCell, RNN, RNNCell
from tinyfw.torch.nn.transformer import (MultiheadAttention, TransformerEncoder,
                                         TransformerEncoderLayer)

__all__ = ["Module", "Parameter", "functional", "init", "utils", "LSTM", "GRU", "RNN",
           "LSTMCell", "GRUCell", "RNNCell", "MultiheadAttention", "TransformerEncoderLayer",
           "TransformerEncoder", *_layers]
