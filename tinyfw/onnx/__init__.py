"""Running ONNX models with tinyfw: `OnnxRunner(model)(inputs)` walks the graph in order and
maps each node onto Tensor ops (tinyfw/onnx/ops_*.py, one function per operator). The `onnx`
package (the `onnx` extra) only parses the protobuf; nothing is computed with numpy at run time
except the folding of small constant values (shapes and the arithmetic on them)."""
from tinyfw.onnx.runner import OnnxRunner, supported_ops

__all__ = ["OnnxRunner", "supported_ops"]
