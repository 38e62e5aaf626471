"""Datasets (PyTorch's `torch.utils.data`): map-style and iterable, tensors, subsets, splits."""

from __future__ import annotations

import bisect
import math
from collections.abc import Iterator, Sequence, Sized
from typing import Any

import numpy as np

from ...core.tensor import Tensor
from ...creation import Generator, default_generator


class Dataset:
    """A map-style dataset: `dataset[i]` is sample i; most define `__len__` too."""

    def __getitem__(self, index: int) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must implement __getitem__")

    def __add__(self, other: Dataset) -> ConcatDataset:
        return ConcatDataset([self, other])


class IterableDataset(Dataset):
    """A dataset read as a stream: `iter(dataset)` yields the samples."""

    def __iter__(self) -> Iterator[Any]:
        raise NotImplementedError(f"{type(self).__name__} must implement __iter__")

    def __add__(self, other: Dataset) -> Any:
        return ChainDataset([self, other])


class TensorDataset(Dataset):
    """Samples are the i-th rows of tensors that share their first dimension."""

    def __init__(self, *tensors: Tensor) -> None:
        for i, t in enumerate(tensors):
            if not isinstance(t, Tensor):
                raise TypeError(
                    f"TensorDataset takes tensors, but argument {i} is {type(t).__name__}"
                )
        if tensors and any(len(t) != len(tensors[0]) for t in tensors):
            sizes = [t.shape[0] if t.ndim else None for t in tensors]
            raise ValueError(f"Size mismatch between tensors: first dimensions {sizes}")
        self.tensors = tensors

    def __getitem__(self, index: int) -> tuple[Tensor, ...]:
        return tuple(t[index] for t in self.tensors)

    def __len__(self) -> int:
        return self.tensors[0].shape[0] if self.tensors else 0

    def batch(self, indices: Sequence[int]) -> list[Tensor]:
        """The collated batch of these samples at once: what `default_collate` would build."""
        rows = np.asarray(indices, dtype=np.int64)
        return [t[rows] for t in self.tensors]


class ConcatDataset(Dataset):
    """Several map-style datasets one after another."""

    def __init__(self, datasets: Sequence[Dataset]) -> None:
        self.datasets = list(datasets)
        if not self.datasets:
            raise ValueError("datasets should not be an empty iterable")
        for d in self.datasets:
            if isinstance(d, IterableDataset):
                raise TypeError("ConcatDataset does not support IterableDataset")
        self.cumulative_sizes = list(np.cumsum([_length(d) for d in self.datasets]))

    def __len__(self) -> int:
        return int(self.cumulative_sizes[-1])

    def __getitem__(self, index: int) -> Any:
        if index < 0:
            if -index > len(self):
                raise ValueError("absolute value of index should not exceed dataset length")
            index += len(self)
        which = bisect.bisect_right(self.cumulative_sizes, index)
        start = 0 if which == 0 else int(self.cumulative_sizes[which - 1])
        return self.datasets[which][index - start]


def _length(dataset: Dataset) -> int:
    """The length of a dataset that has one (map-style datasets need not define `__len__`)."""
    if not isinstance(dataset, Sized):
        raise TypeError(
            f"ConcatDataset needs sized datasets; {type(dataset).__name__} has no len()"
        )
    return len(dataset)


class ChainDataset(IterableDataset):
    """Several iterable datasets streamed one after another."""

    # Any datasets, as PyTorch's: one that is not iterable is refused when the chain reaches it.
    def __init__(self, datasets: Sequence[Dataset]) -> None:
        self.datasets = list(datasets)

    def __iter__(self) -> Iterator[Any]:
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise TypeError("ChainDataset only supports IterableDataset")
            yield from d


class StackDataset(Dataset):
    """Samples of several equally long datasets side by side: a tuple (positional datasets) or a
    dict (keyword datasets) holding each one's sample at the same index."""

    def __init__(self, *args: Dataset, **kwargs: Dataset) -> None:
        if args and kwargs:
            raise ValueError(
                "Supported either ``tuple``- (via ``args``) or``dict``- (via ``kwargs``) like "
                "input/output, but both types are given."
            )
        datasets: Sequence[Any] = args or list(kwargs.values())
        if not datasets:
            raise ValueError("At least one dataset should be passed")
        self._length = len(datasets[0])
        if any(len(d) != self._length for d in datasets):
            raise ValueError("Size mismatch between datasets")
        self.datasets: tuple[Dataset, ...] | dict[str, Dataset] = args or dict(kwargs)

    def __getitem__(self, index: int) -> Any:
        if isinstance(self.datasets, dict):
            return {key: d[index] for key, d in self.datasets.items()}
        return tuple(d[index] for d in self.datasets)

    def __len__(self) -> int:
        return self._length


class Subset(Dataset):
    """The samples of `dataset` at `indices`, in that order."""

    def __init__(self, dataset: Dataset, indices: Sequence[int]) -> None:
        self.dataset = dataset
        self.indices = indices

    def __getitem__(self, index: int) -> Any:
        if isinstance(index, list):
            return self.dataset[[self.indices[i] for i in index]]
        return self.dataset[self.indices[index]]

    def __len__(self) -> int:
        return len(self.indices)


def random_split(
    dataset: Dataset,
    lengths: Sequence[int | float],
    generator: Generator | None = None,
) -> list[Subset]:
    """Split into non-overlapping random subsets of the given lengths (or fractions of 1)."""
    total = len(dataset)  # type: ignore[arg-type]
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        counts = [int(math.floor(total * frac)) for frac in lengths]
        # Whatever the floors left over goes round-robin to the subsets, as PyTorch does.
        for i in range(total - sum(counts)):
            counts[i % len(counts)] += 1
        lengths = counts
    if sum(lengths) != total:
        raise ValueError("Sum of input lengths does not equal the length of the input dataset!")
    rng = (generator or default_generator).rng
    order = rng.permutation(total).tolist()
    subsets, start = [], 0
    for n in lengths:
        subsets.append(Subset(dataset, order[start : start + int(n)]))
        start += int(n)
    return subsets


__all__ = [
    "ChainDataset",
    "ConcatDataset",
    "Dataset",
    "IterableDataset",
    "Subset",
    "TensorDataset",
    "random_split",
]
