"""`DistributedSampler`: each rank reads its own share of a dataset, as PyTorch's."""

from __future__ import annotations

import math
from collections.abc import Iterator, Sized

import numpy as np

from .sampler import Sampler

__all__ = ["DistributedSampler"]


def _default_rank_and_size() -> tuple[int, int]:
    from ...distributed.collectives import groups  # noqa: PLC0415 - layer 6, asked only here

    if not groups.is_initialized():
        raise RuntimeError("Requires distributed package to be available")
    return groups.get_rank(), groups.get_world_size()


class DistributedSampler(Sampler):
    """Indices `rank, rank + num_replicas, ...` of a (shuffled) order, padded or trimmed so every
    rank gets `num_samples` of them; `set_epoch` changes the shuffle each epoch."""

    def __init__(
        self,
        dataset: Sized,
        num_replicas: int | None = None,
        rank: int | None = None,
        shuffle: bool = True,
        seed: int = 0,
        drop_last: bool = False,
    ) -> None:
        if num_replicas is None or rank is None:
            default_rank, default_size = _default_rank_and_size()
            num_replicas = default_size if num_replicas is None else num_replicas
            rank = default_rank if rank is None else rank
        if rank >= num_replicas or rank < 0:
            raise ValueError(
                f"Invalid rank {rank}, rank should be in the interval [0, {num_replicas - 1}]"
            )
        self.dataset = dataset
        self.num_replicas = num_replicas
        self.rank = rank
        self.epoch = 0
        self.drop_last = drop_last
        if drop_last and len(dataset) % num_replicas != 0:
            self.num_samples = math.ceil((len(dataset) - num_replicas) / num_replicas)
        else:
            self.num_samples = math.ceil(len(dataset) / num_replicas)
        self.total_size = self.num_samples * num_replicas
        self.shuffle = shuffle
        self.seed = seed

    def __iter__(self) -> Iterator[int]:
        if self.shuffle:
            indices = (
                np.random.default_rng(self.seed + self.epoch)
                .permutation(len(self.dataset))
                .tolist()
            )
        else:
            indices = list(range(len(self.dataset)))
        if not self.drop_last:
            padding = self.total_size - len(indices)
            if padding <= len(indices):
                indices += indices[:padding]
            else:
                indices += (indices * math.ceil(padding / len(indices)))[:padding]
        else:
            indices = indices[: self.total_size]
        assert len(indices) == self.total_size
        mine = indices[self.rank : self.total_size : self.num_replicas]
        assert len(mine) == self.num_samples
        return iter(mine)

    def __len__(self) -> int:
        return self.num_samples

    def set_epoch(self, epoch: int) -> None:
        """Use a different shuffle in this epoch (the same on every rank)."""
        self.epoch = epoch
