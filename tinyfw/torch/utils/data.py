"""torch.utils.data over tinyfw: datasets indexed by position, and a DataLoader that draws
batches (shuffled by a seeded generator when asked) and collates them as torch's
default_collate does: tensors and numpy arrays stacked, numbers made a tensor, tuples, lists
and dicts collated field by field. It loads in the calling process (num_workers is accepted
and ignored)."""
from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from tinyfw.dtype import dtypes
from tinyfw.tensor import Tensor


class Dataset:
    """Items by index: subclass it and define __getitem__ and __len__."""

    def __getitem__(self, index: int) -> Any:
        raise NotImplementedError("a Dataset subclass must define __getitem__")

    def __add__(self, other: Dataset) -> ConcatDataset:
        return ConcatDataset([self, other])


class IterableDataset(Dataset):
    def __iter__(self) -> Iterator[Any]:
        raise NotImplementedError("an IterableDataset subclass must define __iter__")


class TensorDataset(Dataset):
    """Item i is (t[i] for each tensor): tensors of one first dimension."""

    def __init__(self, *tensors: Tensor):
        if any(t.shape[0] != tensors[0].shape[0] for t in tensors):
            raise AssertionError("Size mismatch between tensors")
        self.tensors = tensors

    def __getitem__(self, index: int) -> tuple[Tensor, ...]:
        return tuple(t[index] for t in self.tensors)

    def __len__(self) -> int:
        return self.tensors[0].shape[0]


class ConcatDataset(Dataset):
    def __init__(self, datasets: Sequence[Dataset]):
        self.datasets = list(datasets)
        self.ends = list(np.cumsum([len(d) for d in self.datasets]))  # type: ignore[arg-type]

    def __len__(self) -> int:
        return int(self.ends[-1]) if self.ends else 0

    def __getitem__(self, index: int) -> Any:
        if index < 0:
            index += len(self)
        which = int(np.searchsorted(self.ends, index, side="right"))
        start = int(self.ends[which - 1]) if which else 0
        return self.datasets[which][index - start]


class Subset(Dataset):
    def __init__(self, dataset: Dataset, indices: Sequence[int]):
        self.dataset, self.indices = dataset, list(indices)

    def __getitem__(self, index: int) -> Any:
        return self.dataset[self.indices[index]]

    def __len__(self) -> int:
        return len(self.indices)


def _permutation(n: int, generator: Any) -> list[int]:
    if generator is not None:
        return list(generator.permutation(n))
    return [int(i) for i in np.random.default_rng().permutation(n)]


def random_split(dataset: Dataset, lengths: Sequence[int | float],
                 generator: Any = None) -> list[Subset]:
    """Disjoint random subsets of the given lengths (or fractions of the dataset, the
    remainder given out one by one as torch does)."""
    n = len(dataset)  # type: ignore[arg-type]
    sizes = list(lengths)
    if math.isclose(sum(sizes), 1) and sum(sizes) <= 1:
        counts = [int(math.floor(n * f)) for f in sizes]
        for i in range(n - sum(counts)):
            counts[i % len(counts)] += 1
        sizes = counts  # type: ignore[assignment]
    if sum(sizes) != n:
        raise ValueError("Sum of input lengths does not equal the length of the input dataset!")
    order = _permutation(n, generator)
    out, start = [], 0
    for size in sizes:
        out.append(Subset(dataset, order[start:start + int(size)]))
        start += int(size)
    return out


def default_collate(batch: list[Any]) -> Any:
    """A list of samples as one batch, as torch's default_collate."""
    first = batch[0]
    if isinstance(first, Tensor):
        return Tensor.stack(*batch)
    if isinstance(first, np.ndarray):
        return Tensor(np.stack(batch))
    if isinstance(first, np.generic):
        return Tensor(np.array(batch))
    if isinstance(first, bool):
        return Tensor(batch, dtype=dtypes.bool)
    if isinstance(first, int):
        return Tensor(batch, dtype=dtypes.int64)
    if isinstance(first, float):
        return Tensor(batch, dtype=dtypes.float64)
    if isinstance(first, (str, bytes)):
        return batch
    if isinstance(first, Mapping):
        return {k: default_collate([b[k] for b in batch]) for k in first}
    if isinstance(first, tuple) and hasattr(first, "_fields"):
        return type(first)(*(default_collate(list(f)) for f in zip(*batch)))
    if isinstance(first, (tuple, list)):
        if any(len(b) != len(first) for b in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        return [default_collate(list(f)) for f in zip(*batch)]
    raise TypeError(f"default_collate: batch must contain tensors, numpy arrays, numbers, "
                    f"dicts or lists; found {type(first)}")


class Sampler:
    def __init__(self, data_source: Any = None):
        self.data_source = data_source

    def __iter__(self) -> Iterator[int]:
        raise NotImplementedError


class SequentialSampler(Sampler):
    def __iter__(self) -> Iterator[int]:
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


class RandomSampler(Sampler):
    def __init__(self, data_source: Any, replacement: bool = False,
                 num_samples: int | None = None, generator: Any = None):
        super().__init__(data_source)
        if replacement or num_samples is not None:
            raise NotImplementedError("RandomSampler: tinyfw draws permutations only")
        self.generator = generator

    def __iter__(self) -> Iterator[int]:
        return iter(_permutation(len(self.data_source), self.generator))

    def __len__(self) -> int:
        return len(self.data_source)


class DataLoader:
    """Batches of a dataset: batch_size items at a time (the last one smaller unless
    drop_last), in order or, with shuffle, in a new random order each epoch (drawn from
    generator when one is given: torch.Generator().manual_seed(n))."""

    def __init__(self, dataset: Dataset, batch_size: int | None = 1, shuffle: bool | None = None,
                 sampler: Any = None, batch_sampler: Any = None, num_workers: int = 0,
                 collate_fn: Callable[[list[Any]], Any] | None = None, pin_memory: bool = False,
                 drop_last: bool = False, timeout: float = 0, worker_init_fn: Any = None,
                 generator: Any = None, **kwargs: Any):
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        self.dataset, self.batch_size, self.drop_last = dataset, batch_size, drop_last
        self.collate_fn = collate_fn or default_collate
        self.generator, self.batch_sampler = generator, batch_sampler
        self.sampler = sampler if sampler is not None else (
            RandomSampler(dataset, generator=generator) if shuffle else SequentialSampler(dataset))

    def _batches(self) -> Iterator[list[int]]:
        if self.batch_sampler is not None:
            yield from self.batch_sampler
            return
        if self.batch_size is None:
            for i in self.sampler:
                yield [i]
            return
        batch: list[int] = []
        for i in self.sampler:
            batch.append(i)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __iter__(self) -> Iterator[Any]:
        for indices in self._batches():
            if isinstance(self.dataset, TensorDataset) and self.collate_fn is default_collate \
                    and self.batch_size is not None:  # one gather per tensor, not per item
                picked = Tensor(np.array(indices, dtype=np.int64))
                yield [t[picked] for t in self.dataset.tensors]
            elif self.batch_size is None and self.batch_sampler is None:
                yield self.dataset[indices[0]]
            else:
                yield self.collate_fn([self.dataset[i] for i in indices])

    def __len__(self) -> int:
        if self.batch_sampler is not None:
            return len(self.batch_sampler)
        n = len(self.sampler)
        if self.batch_size is None:
            return n
        return n // self.batch_size if self.drop_last else math.ceil(n / self.batch_size)


__all__ = ["Dataset", "IterableDataset", "TensorDataset", "ConcatDataset", "Subset",
           "random_split", "default_collate", "DataLoader", "Sampler", "SequentialSampler",
           "RandomSampler"]
