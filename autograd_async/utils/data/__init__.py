"""Data loading (PyTorch's `torch.utils.data`): datasets, samplers, collation and `DataLoader`,
which also supports `async for` with batches prepared on a thread ahead of the caller."""

from .collate import default_collate, default_convert
from .dataloader import DataLoader
from .dataset import (
    ChainDataset,
    ConcatDataset,
    Dataset,
    IterableDataset,
    StackDataset,
    Subset,
    TensorDataset,
    random_split,
)
from .distributed import DistributedSampler
from .fetch import WorkerInfo, get_worker_info
from .prefetch import AsyncBatchIterator
from .sampler import (
    BatchSampler,
    RandomSampler,
    Sampler,
    SequentialSampler,
    SubsetRandomSampler,
    WeightedRandomSampler,
)

__all__ = [
    "AsyncBatchIterator",
    "BatchSampler",
    "ChainDataset",
    "ConcatDataset",
    "DataLoader",
    "Dataset",
    "DistributedSampler",
    "IterableDataset",
    "RandomSampler",
    "Sampler",
    "SequentialSampler",
    "StackDataset",
    "Subset",
    "SubsetRandomSampler",
    "TensorDataset",
    "WeightedRandomSampler",
    "WorkerInfo",
    "default_collate",
    "default_convert",
    "get_worker_info",
    "random_split",
]
