"""A progress bar for long loops, drawn on stderr, like tinygrad's helpers.tqdm (and tqdm's):

    for i in (t := trange(1000)):
        loss = train_step()
        t.set_description(f"loss {loss.item():.3f}")

It redraws one line (with a carriage return) at most every min_interval seconds, and ends it
with a newline when the loop is done."""
from __future__ import annotations

import sys
import time
from collections.abc import Iterable, Iterator
from typing import Generic, TextIO, TypeVar

T = TypeVar("T")


def format_time(seconds: float) -> str:
    """Seconds as mm:ss, or h:mm:ss from an hour on."""
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes:02d}:{secs:02d}"


class tqdm(Generic[T]):
    """Wraps an iterable (or counts update() calls) and shows how far along it is:
    `desc  42%|████████            | 42/100 [00:03<00:04, 13.20 it/s]`."""

    def __init__(self, iterable: Iterable[T] | None = None, desc: str = "",
                 total: int | None = None, unit: str = "it", width: int = 20,
                 disable: bool = False, min_interval: float = 0.1, file: TextIO | None = None):
        self.iterable, self.desc, self.unit, self.width = iterable, desc, unit, width
        if total is None and iterable is not None and hasattr(iterable, "__len__"):
            total = len(iterable)  # type: ignore[arg-type]
        self.total, self.n, self.disable, self.min_interval = total, 0, disable, min_interval
        self.file = file if file is not None else sys.stderr
        self.start = self.last_draw = time.perf_counter()
        self.closed, self._drawn = False, 0  # _drawn: the length of the line on screen
        self._draw()

    def __iter__(self) -> Iterator[T]:
        if self.iterable is None:
            raise TypeError("this progress bar wraps no iterable: call update() instead")
        try:
            for item in self.iterable:
                yield item
                self.update()
        finally:
            self.close()

    def __len__(self) -> int:
        return self.total or 0

    def __enter__(self) -> tqdm[T]:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def update(self, n: int = 1) -> None:
        """Count n more steps done; redraw if min_interval has passed (or at the end)."""
        self.n += n
        now = time.perf_counter()
        if now - self.last_draw >= self.min_interval or self.n == self.total:
            self._draw(now)

    def set_description(self, desc: str) -> None:
        """The text in front of the bar (a loss, an accuracy); shown at the next redraw."""
        self.desc = desc

    def close(self) -> None:
        """Draw the final state and end the line."""
        if self.closed:
            return
        self.closed = True
        self._draw()
        if not self.disable:
            self.file.write("\n")
            self.file.flush()

    def render(self, now: float | None = None) -> str:
        """The bar's line of text, as it would be drawn now."""
        elapsed = (now if now is not None else time.perf_counter()) - self.start
        rate = self.n / elapsed if elapsed > 0 else 0.0
        prefix = f"{self.desc}  " if self.desc else ""
        if not self.total:  # no end known: just count
            return (f"{prefix}{self.n} {self.unit} "
                    f"[{format_time(elapsed)}, {rate:.2f} {self.unit}/s]")
        frac = min(self.n / self.total, 1.0)
        filled = int(frac * self.width)
        bar = "█" * filled + " " * (self.width - filled)
        left = format_time((self.total - self.n) / rate) if rate > 0 else "?"
        return (f"{prefix}{frac:4.0%}|{bar}| {self.n}/{self.total} "
                f"[{format_time(elapsed)}<{left}, {rate:.2f} {self.unit}/s]")

    def _draw(self, now: float | None = None) -> None:
        if self.disable:
            return
        now = now if now is not None else time.perf_counter()
        self.last_draw = now
        line = self.render(now)
        # back to the line's start; spaces cover what a longer previous line left
        self.file.write("\r" + line.ljust(self._drawn))
        self.file.flush()
        self._drawn = len(line)


def trange(n: int, **kwargs: object) -> tqdm[int]:
    """tqdm(range(n)): a progress bar over 0 .. n - 1."""
    return tqdm(range(n), **kwargs)  # type: ignore[arg-type]
