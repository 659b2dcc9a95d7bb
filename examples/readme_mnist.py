"""The example program of tinygrad's README, with three changes: the import (tinyfw instead of
tinygrad), the line the README says to replace (`x, y` are a batch of real MNIST digits instead of
random numbers, a new batch each step), and 1000 steps instead of 10, printing every 100th. It
trains the two-layer net, then prints its accuracy on the 10000 test images. (The program itself,
unchanged but for the import, runs in tests/site/test_examples.py.)

    .venv/bin/python examples/readme_mnist.py            # 1000 steps of batch 64, ~1 min on CPU
    STEPS=200 DEVICE=CL .venv/bin/python examples/readme_mnist.py
"""
import os

import numpy as np

from tinyfw import Tensor, nn

STEPS = int(os.getenv("STEPS", "1000"))
X_train, Y_train, X_test, Y_test = nn.datasets.mnist()
X_train, X_test = (X_train.float() / 255).realize(), (X_test.float() / 255).realize()
rng = np.random.default_rng(0)


def mnist_batch(size: int = 64) -> tuple[Tensor, Tensor]:
    """A random batch of training images and their labels."""
    rows = Tensor(rng.integers(0, len(Y_train), size))
    return X_train[rows], Y_train[rows]


# --- from here on, tinygrad's README (the three changes are marked) ---
class LinearNet:
  def __init__(self):
    self.l1 = Tensor.kaiming_uniform(784, 128)
    self.l2 = Tensor.kaiming_uniform(128, 10)
  def __call__(self, x:Tensor) -> Tensor:
    return x.flatten(1).dot(self.l1).relu().dot(self.l2)

model = LinearNet()
optim = nn.optim.Adam([model.l1, model.l2], lr=0.001)

with Tensor.train():
  for i in range(STEPS):  # changed: range(10)
    x, y = mnist_batch()  # changed: the README's "replace with real mnist dataloader"
    optim.zero_grad()
    loss = model(x).sparse_categorical_crossentropy(y).backward()
    optim.step()
    if i % 100 == 0:  # changed: every step
      print(i, loss.item())
# --- end of the README's program ---

accuracy = (model(X_test).argmax(axis=1) == Y_test).float().mean().item()
print(f"test accuracy {accuracy:.4f} after {STEPS} steps")
