"""Reading the text in an image with PP-OCRv4 on tinyfw.onnx: the detector and recognizer ONNX
files inside the rapidocr-onnxruntime package (found on disk, the package never imported) run
as tinyfw programs. Prints each line of text found, with its box and confidence.

    .venv/bin/python examples/ocr.py image.png
    .venv/bin/python examples/ocr.py                     # an image of text drawn with Pillow
    .venv/bin/python examples/ocr.py image.png --device CL

What happens:

  1. the detector (a DB text detector) gives, for each pixel, the probability that it is text;
     the pixels above 0.3 that touch make regions, and each region's box, grown a little (DB's
     "unclip"), is a line of text;
  2. each line, cut out and scaled to 48 pixels high, goes through the recognizer, which gives,
     for each slice of the line, the probability of each of 6,625 characters (Chinese, Latin,
     digits, signs; 0 is "no character");
  3. the likeliest character of each slice, repeats and blanks dropped (CTC's greedy decoding),
     is the text.
"""
from __future__ import annotations

import argparse
import importlib.util
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from tinyfw import Tensor
from tinyfw.onnx import OnnxRunner


def model_dir() -> Path:
    spec = importlib.util.find_spec("rapidocr_onnxruntime")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("rapidocr-onnxruntime is not installed (data-packages.txt)")
    return Path(list(spec.submodule_search_locations)[0]) / "models"


class Reader:
    """PP-OCRv4's text detector and recognizer on a tinyfw device."""

    def __init__(self, device: str | None = None):
        models = model_dir()
        self.detector = OnnxRunner(models / "ch_PP-OCRv4_det_infer.onnx", device=device)
        self.recognizer = OnnxRunner(models / "ch_PP-OCRv4_rec_infer.onnx", device=device)
        chars = next(p.value for p in self.recognizer.model.metadata_props
                     if p.key == "character").split("\n")
        self.alphabet = ["<blank>"] + chars + [" "]

    def detector_input(self, image: np.ndarray) -> np.ndarray:
        """An RGB uint8 image as the detector takes it: (1, 3, H', W'), scaled to -1..1."""
        h, w = image.shape[:2]
        # sides rounded to multiples of 32 (the detector halves the image five times), the
        # longer side at most 960 pixels
        scale = min(960 / max(h, w), 1.0)
        nh, nw = max(32, round(h * scale / 32) * 32), max(32, round(w * scale / 32) * 32)
        resized = np.asarray(Image.fromarray(image).resize((nw, nh), Image.BILINEAR))
        return np.ascontiguousarray(
            ((resized.astype(np.float32) / 255 - 0.5) / 0.5).transpose(2, 0, 1)[None])

    def detect(self, image: np.ndarray) -> np.ndarray:
        """The probability that each pixel is text (H, W), for an RGB uint8 image."""
        h, w = image.shape[:2]
        x = self.detector_input(image)
        out = self.detector({"x": Tensor(x, device=self.detector.device)})
        prob = next(iter(out.values())).numpy()[0, 0]
        return np.asarray(Image.fromarray(prob).resize((w, h), Image.BILINEAR))

    def boxes(self, prob: np.ndarray, threshold: float = 0.3, unclip: float = 1.6
              ) -> list[tuple[int, int, int, int]]:
        """The boxes (x0, y0, x1, y1) of the regions of text pixels, each grown by DB's unclip
        distance (area * unclip / perimeter)."""
        mask = prob > threshold
        seen = np.zeros_like(mask)
        found = []
        h, w = mask.shape
        for y, x in zip(*np.nonzero(mask)):
            if seen[y, x]:
                continue
            stack, ys, xs = [(y, x)], [], []
            seen[y, x] = True
            while stack:
                cy, cx = stack.pop()
                ys.append(cy)
                xs.append(cx)
                for ny, nx in ((cy + 1, cx), (cy - 1, cx), (cy, cx + 1), (cy, cx - 1)):
                    if 0 <= ny < h and 0 <= nx < w and mask[ny, nx] and not seen[ny, nx]:
                        seen[ny, nx] = True
                        stack.append((ny, nx))
            if len(ys) < 10 or prob[ys, xs].mean() < 0.5:
                continue
            y0, y1, x0, x1 = min(ys), max(ys) + 1, min(xs), max(xs) + 1
            grow = (y1 - y0) * (x1 - x0) * unclip / (2 * ((y1 - y0) + (x1 - x0)))
            g = int(round(grow))
            found.append((max(x0 - g, 0), max(y0 - g, 0), min(x1 + g, w), min(y1 + g, h)))
        return sorted(found, key=lambda b: (b[1], b[0]))

    def recognizer_input(self, line: np.ndarray) -> np.ndarray:
        """One line's image (RGB uint8) as the recognizer takes it: 48 pixels high, -1..1."""
        h, w = line.shape[:2]
        nw = max(8, int(np.ceil(48 * w / h / 8)) * 8)
        resized = np.asarray(Image.fromarray(line).resize((nw, 48), Image.BILINEAR))
        return np.ascontiguousarray(
            ((resized.astype(np.float32) / 255 - 0.5) / 0.5).transpose(2, 0, 1)[None])

    def recognize(self, line: np.ndarray) -> tuple[str, float]:
        """The text of one line's image (RGB uint8) and its mean confidence."""
        x = self.recognizer_input(line)
        out = self.recognizer({"x": Tensor(x, device=self.recognizer.device)})
        probs = next(iter(out.values())).numpy()[0]  # (slices, characters)
        best, conf = probs.argmax(-1), probs.max(-1)
        text, scores, last = [], [], 0
        for i, c in enumerate(best):
            if c != 0 and c != last:
                text.append(self.alphabet[c])
                scores.append(conf[i])
            last = c
        return "".join(text), float(np.mean(scores)) if scores else 0.0

    def read(self, image: np.ndarray) -> list[tuple[tuple[int, int, int, int], str, float]]:
        """Each line of text in an RGB uint8 image: its box, its text, its confidence."""
        out = []
        for box in self.boxes(self.detect(image)):
            x0, y0, x1, y1 = box
            text, score = self.recognize(image[y0:y1, x0:x1])
            if text:
                out.append((box, text, score))
        return out


def draw_text(text: str, size: int = 32) -> np.ndarray:
    """An RGB image of black text on white, drawn with Pillow's own font (no system fonts)."""
    font = ImageFont.load_default(size=size)
    left, top, right, bottom = font.getbbox(text)
    image = Image.new("RGB", (right - left + 2 * size, bottom - top + 2 * size), "white")
    ImageDraw.Draw(image).text((size - left, size - top), text, fill="black", font=font)
    return np.asarray(image)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("image", nargs="?", help="an image file (default: drawn text)")
    parser.add_argument("--device", default=None, help="a tinyfw device (default: CPU)")
    args = parser.parse_args()
    image = np.asarray(Image.open(args.image).convert("RGB")) if args.image else \
        draw_text("tinyfw reads ONNX 2026")
    for (x0, y0, x1, y1), text, score in Reader(args.device).read(image):
        print(f"({x0:4d},{y0:4d})-({x1:4d},{y1:4d})  {score:.3f}  {text}")


if __name__ == "__main__":
    main()
