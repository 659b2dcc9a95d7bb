"""`python -m tinyfw.onnx model.onnx`: prints the graph's inputs and outputs, runs it on
random inputs (or `--input name=file.npy`), and times it. `DEBUG=2` shows its kernels."""
from __future__ import annotations

import argparse
import time

import numpy as np

from tinyfw import Tensor, TinyJit
from tinyfw.onnx.runner import OnnxRunner


def _random_input(dtype_np: np.dtype, shape: tuple[int, ...], rng: np.random.Generator
                  ) -> np.ndarray:
    if dtype_np.kind == "f":
        return rng.standard_normal(shape).astype(dtype_np)
    if dtype_np.kind == "b":
        return rng.integers(0, 2, shape).astype(dtype_np)
    return rng.integers(0, 10, shape).astype(dtype_np)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tinyfw.onnx", description=__doc__)
    parser.add_argument("model", help="an .onnx file")
    parser.add_argument("--input", action="append", default=[], metavar="NAME=FILE.npy",
                        help="an input's values from a .npy file (others are random)")
    parser.add_argument("--dim", action="append", default=[], metavar="NAME=SIZE",
                        help="the size of a named dynamic dimension (default 1)")
    parser.add_argument("--device", default=None, help="a tinyfw device (default: the default)")
    parser.add_argument("--runs", type=int, default=3, help="timed runs after the first")
    parser.add_argument("--jit", action="store_true", help="run the graph through TinyJit")
    args = parser.parse_args(argv)

    runner = OnnxRunner(args.model, device=args.device)
    dims = {k: int(v) for k, v in (d.split("=", 1) for d in args.dim)}
    files = {k: v for k, v in (i.split("=", 1) for i in args.input)}
    rng = np.random.default_rng(0)
    feeds: dict[str, np.ndarray] = {}
    print(f"{args.model}: opset {runner.opset}, {len(runner.graph.nodes)} nodes, "
          f"device {runner.device}")
    for name in runner.inputs:
        dtype, shape = runner.input_spec(name)
        print(f"  input  {name}: {dtype.name} {list(shape)}")
        if name in files:
            feeds[name] = np.load(files[name])
        else:
            concrete = tuple(d if isinstance(d, int) and d > 0 else
                             dims.get(str(d), 1) for d in shape)
            feeds[name] = _random_input(dtype.np, concrete, rng)

    def run(**tensors: Tensor) -> dict[str, Tensor]:
        return {k: v.realize() for k, v in runner(tensors).items()}

    fn = TinyJit(run) if args.jit else run
    times = []
    for _ in range(1 + max(args.runs, 0)):
        tensors = {k: Tensor(v, device=runner.device) for k, v in feeds.items()}
        start = time.perf_counter()
        out = fn(**tensors)
        for t in out.values():
            t.numpy()
        times.append(time.perf_counter() - start)
    for name, t in out.items():
        arr = t.numpy()
        summary = f"mean {arr.mean():.6g}" if arr.size and arr.dtype.kind in "fiu" else ""
        print(f"  output {name}: {t.dtype.name} {list(t.shape)} {summary}")
    print(f"first run {times[0] * 1000:.1f} ms (with compiling)" +
          (f", then {np.median(times[1:]) * 1000:.2f} ms (median of {len(times) - 1})"
           if len(times) > 1 else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
