"""`default_collate`: a list of samples into one batch, the way PyTorch's does it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ...core.tensor import Tensor, float64
from ...creation import as_tensor, tensor
from ...ops import stack


def default_collate(batch: list[Any]) -> Any:
    """Stack tensors, arrays and numbers along a new first dimension; recurse into containers.

    Python floats become float64, ints int64 and bools bool tensors (as in PyTorch); strings
    stay a list; mappings, named tuples and sequences are collated field by field.
    """
    if not batch:
        raise ValueError("default_collate got an empty batch")
    elem = batch[0]
    if isinstance(elem, Tensor):
        return stack(batch, 0)
    if isinstance(elem, np.ndarray):
        if elem.dtype.kind in "OSUV":
            raise TypeError(
                f"default_collate: batch must contain tensors, NumPy arrays, numbers, dicts or "
                f"lists; found an array of dtype {elem.dtype}"
            )
        return stack([as_tensor(b) for b in batch], 0)
    if isinstance(elem, np.generic):
        return as_tensor(np.asarray(batch))
    if isinstance(elem, float):
        return tensor(batch, dtype=float64)
    if isinstance(elem, int):  # bool included: a bool tensor
        return tensor(batch)
    if isinstance(elem, str | bytes):
        return batch
    if isinstance(elem, Mapping):
        return {key: default_collate([sample[key] for sample in batch]) for key in elem}
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):
        return type(elem)(*(default_collate(list(field)) for field in zip(*batch)))
    if isinstance(elem, Sequence):
        size = len(elem)
        if any(len(sample) != size for sample in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        return [default_collate(list(field)) for field in zip(*batch)]
    raise TypeError(
        "default_collate: batch must contain tensors, NumPy arrays, numbers, dicts or lists; "
        f"found {type(elem).__name__}"
    )


def default_convert(data: Any) -> Any:
    """What a loader without batching returns: NumPy arrays as tensors, containers recursed."""
    if isinstance(data, np.ndarray) and data.dtype.kind not in "OSUV":
        return as_tensor(data)
    if isinstance(data, Mapping):
        return {key: default_convert(value) for key, value in data.items()}
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, list | tuple):
        return [default_convert(d) for d in data]
    return data


__all__ = ["default_collate", "default_convert"]
