"""Samplers: the order in which a DataLoader reads a map-style dataset, and its batches."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sized
from typing import Any

import numpy as np

from ...creation import Generator, default_generator


class Sampler:
    """Yields dataset indices (or, for a batch sampler, lists of them)."""

    def __iter__(self) -> Iterator[Any]:
        raise NotImplementedError


class SequentialSampler(Sampler):
    """0, 1, ..., len(data_source) - 1."""

    def __init__(self, data_source: Sized) -> None:
        self.data_source = data_source

    def __iter__(self) -> Iterator[int]:
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


def _new_rng(generator: Generator | None) -> Any:
    """The generator's NumPy RNG; without one, a fresh RNG seeded from the default generator,
    so `aa.manual_seed` makes shuffling reproducible and each epoch still differs."""
    if generator is not None:
        return generator.rng
    seed = int(default_generator.rng.integers(0, 2**63 - 1))
    return Generator(seed).rng


class RandomSampler(Sampler):
    """A random permutation each epoch, or `num_samples` draws with replacement."""

    def __init__(
        self,
        data_source: Sized,
        replacement: bool = False,
        num_samples: int | None = None,
        generator: Generator | None = None,
    ) -> None:
        if not isinstance(replacement, bool):
            raise TypeError(
                f"replacement should be a boolean value, but got replacement={replacement}"
            )
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        if not isinstance(self.num_samples, int) or self.num_samples <= 0:
            raise ValueError(
                f"num_samples should be a positive integer value, but got "
                f"num_samples={self.num_samples}"
            )

    @property
    def num_samples(self) -> int:
        """How many indices an epoch yields (the dataset's length unless given)."""
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self) -> Iterator[int]:
        n = len(self.data_source)
        rng = _new_rng(self.generator)
        if self.replacement:
            yield from rng.integers(0, n, size=self.num_samples).tolist()
            return
        for _ in range(self.num_samples // n):
            yield from rng.permutation(n).tolist()
        yield from rng.permutation(n)[: self.num_samples % n].tolist()

    def __len__(self) -> int:
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given indices in a random order each epoch."""

    def __init__(self, indices: list[int], generator: Generator | None = None) -> None:
        self.indices = indices
        self.generator = generator

    def __iter__(self) -> Iterator[int]:
        for i in _new_rng(self.generator).permutation(len(self.indices)).tolist():
            yield self.indices[i]

    def __len__(self) -> int:
        return len(self.indices)


class WeightedRandomSampler(Sampler):
    """`num_samples` indices drawn with probabilities proportional to `weights`."""

    def __init__(
        self,
        weights: Any,
        num_samples: int,
        replacement: bool = True,
        generator: Generator | None = None,
    ) -> None:
        if isinstance(num_samples, bool) or not isinstance(num_samples, int) or num_samples <= 0:
            raise ValueError(
                f"num_samples should be a positive integer value, but got num_samples={num_samples}"
            )
        if not isinstance(replacement, bool):
            raise ValueError(
                f"replacement should be a boolean value, but got replacement={replacement}"
            )
        values = np.asarray(weights.numpy() if hasattr(weights, "numpy") else weights, np.float64)
        if values.ndim != 1:
            raise ValueError(
                f"weights should be a 1d sequence but given weights have shape {values.shape}"
            )
        if (values < 0).any() or not np.isfinite(values).all() or values.sum() <= 0:
            raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
        if not replacement and num_samples > int(np.count_nonzero(values)):
            raise RuntimeError(
                "cannot sample n_sample > prob_dist.size(-1) samples without replacement"
            )
        self.weights = values
        self.num_samples = num_samples
        self.replacement = replacement
        self.generator = generator

    def __iter__(self) -> Iterator[int]:
        rng = _new_rng(self.generator)
        chosen = rng.choice(
            len(self.weights),
            size=self.num_samples,
            replace=self.replacement,
            p=self.weights / self.weights.sum(),
        )
        yield from chosen.tolist()

    def __len__(self) -> int:
        return self.num_samples


class BatchSampler(Sampler):
    """Groups another sampler's indices into lists of `batch_size` (the last may be short)."""

    # Indices of whatever kind the dataset takes (an iterable dataset's sampler yields None).
    def __init__(self, sampler: Iterable[Any], batch_size: int, drop_last: bool) -> None:
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size <= 0:
            raise ValueError(
                f"batch_size should be a positive integer value, but got batch_size={batch_size}"
            )
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got drop_last={drop_last}")
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self) -> Iterator[list[Any]]:
        batch: list[Any] = []
        for index in self.sampler:
            batch.append(index)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self) -> int:
        n = len(self.sampler)  # type: ignore[arg-type]
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)


__all__ = [
    "BatchSampler",
    "RandomSampler",
    "Sampler",
    "SequentialSampler",
    "SubsetRandomSampler",
]
