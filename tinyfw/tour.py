"""A short tour of tinyfw: a tensor, the lazy graph it records, its gradient, the device."""
from __future__ import annotations

from collections import Counter

from tinyfw import Device, Tensor


def main() -> None:
    """Print a short walk through what tinyfw does, computed for real."""
    print(f"tinyfw tour · default device: {Device.DEFAULT} (kernels compiled from generated C)\n")
    Tensor.manual_seed(0)
    x = Tensor([[1.0, -2.0, 3.0], [-4.0, 5.0, -6.0]])
    w = Tensor.randn(3, 2, requires_grad=True)
    print("x =", x.numpy().tolist())
    print("w = Tensor.randn(3, 2, requires_grad=True)\n")

    loss = (x @ w).relu().sum()
    ops = Counter(node.op.name for node in loss.uop.toposort())
    print("loss = (x @ w).relu().sum()  records a lazy graph; nothing is computed yet:")
    print(f"  {sum(ops.values())} nodes: " + ", ".join(f"{n}×{c}" for n, c in sorted(ops.items())))
    kernels = loss.schedule()
    print(f"loss.item() computes it: {loss.item():.4f}, in {len(kernels)} kernel(s): "
          + ", ".join(k.name for k in kernels) + "\n")

    loss.backward()
    assert w.grad is not None
    print("loss.backward() fills w.grad through the same kind of graph:")
    for row in w.grad.numpy().round(4).tolist():
        print("  ", row)
    print("\nNext: `python -m chapters` shows your progress; the site teaches each layer.")


if __name__ == "__main__":
    main()
