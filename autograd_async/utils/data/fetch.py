"""Turning indices into batches: the fetchers a DataLoader's iterators call, and the worker
identity a dataset can read (`get_worker_info`) when loading runs on worker threads."""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from .collate import default_collate


@dataclass(frozen=True)
class WorkerInfo:
    """Which loader worker thread is running: `id` of `num_workers`, with its seed and dataset."""

    id: int
    num_workers: int
    seed: int
    dataset: Any


_worker_info: contextvars.ContextVar[WorkerInfo | None] = contextvars.ContextVar(
    "autograd_async_loader_worker", default=None
)


def get_worker_info() -> WorkerInfo | None:
    """The current loader worker's info, or None outside a worker thread."""
    return _worker_info.get()


def enter_worker(info: WorkerInfo, init_fn: Callable[[int], None] | None) -> None:
    """Mark this thread as loader worker `info.id` and run the user's `worker_init_fn`."""
    _worker_info.set(info)
    if init_fn is not None:
        init_fn(info.id)


def with_worker_note(error: BaseException, batch: int) -> BaseException:
    """Name the worker thread and the batch in the error before it reaches the caller."""
    info = get_worker_info()
    where = f"DataLoader worker thread {info.id}" if info is not None else "the DataLoader"
    error.add_note(f"(raised in {where} while loading batch {batch})")
    return error


class MapFetcher:
    """Builds one batch of a map-style dataset from its indices."""

    def __init__(self, dataset: Any, auto_collation: bool, collate_fn: Callable) -> None:
        self.dataset = dataset
        self.auto_collation = auto_collation
        self.collate_fn = collate_fn
        # A TensorDataset can index every tensor once for the whole batch: the same batch as
        # collating one sample at a time, without a Python-level op per sample.
        self._whole_batch = (
            getattr(dataset, "batch", None) if collate_fn is default_collate else None
        )
        self._getitems = getattr(dataset, "__getitems__", None)

    def fetch(self, index: Any) -> Any:
        """The batch of these indices (or, without auto-collation, the one sample converted)."""
        if not self.auto_collation:
            return self.collate_fn(self.dataset[index])
        if self._whole_batch is not None:
            return self._whole_batch(index)
        if self._getitems is not None:
            return self.collate_fn(self._getitems(index))
        return self.collate_fn([self.dataset[i] for i in index])


class IterableFetcher:
    """Builds batches of an iterable dataset from its stream of samples."""

    def __init__(
        self,
        samples: Iterator[Any],
        auto_collation: bool,
        collate_fn: Callable,
        batch_size: int | None,
        drop_last: bool,
    ) -> None:
        self.samples = samples
        self.auto_collation = auto_collation
        self.collate_fn = collate_fn
        self.batch_size = batch_size
        self.drop_last = drop_last

    def next_batch(self) -> Any:
        """The next batch; StopIteration once the stream (or its last full batch) is done."""
        size = self.batch_size  # given exactly when batches are collated (an iterable dataset)
        if not self.auto_collation or size is None:
            return self.collate_fn(next(self.samples))
        batch = []
        for sample in self.samples:
            batch.append(sample)
            if len(batch) == size:
                break
        if not batch or (self.drop_last and len(batch) < size):
            raise StopIteration
        return self.collate_fn(batch)
