"""`torch.ctc_loss` and `torch.embedding_bag`: ATen's forms of nn.functional's functions.

ctc_loss takes an integer reduction (0 none, 1 mean, 2 sum; called without one it does not
reduce, as the schema's default reaches Python as 0). embedding_bag takes `weight` first, an
integer mode (0 sum, 1 mean, 2 max) and returns ATen's four tensors: the bags, the bag of each
index (`offset2bag`, empty for a float32/float16 sum without padding), each bag's size (zeros
for sum) and, for max, the row each maximum came from (for mean, the sizes again; for sum,
zeros), as PyTorch's CPU kernel gives them. Both call the one implementation nn.functional uses.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..core.tensor import Tensor
from ..creation import tensor
from .ctc import ctc_loss as _ctc_loss
from .embedding_bag import embedding_bag as _embedding_bag
from .torch_nn_forms import reduction_name

_BAG_MODES = ("sum", "mean", "max")


def ctc_loss(
    log_probs: Tensor,
    targets: Tensor,
    input_lengths: Any,
    target_lengths: Any,
    blank: int = 0,
    reduction: int = 0,
    zero_infinity: bool = False,
) -> Tensor:
    """The CTC loss, ATen's form: reduction 0 (none), 1 (mean over target lengths) or 2."""
    return _ctc_loss(
        log_probs,
        targets,
        input_lengths,
        target_lengths,
        blank=blank,
        reduction=reduction_name(reduction),
        zero_infinity=zero_infinity,
    )


def embedding_bag(
    weight: Tensor,
    indices: Tensor,
    offsets: Tensor,
    scale_grad_by_freq: bool = False,
    mode: int = 0,
    sparse: bool = False,
    per_sample_weights: Tensor | None = None,
    include_last_offset: bool = False,
    padding_idx: int | None = None,
) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """(output, offset2bag, bag_size, max_indices) of bags of rows of `weight`."""
    if not isinstance(offsets, Tensor):
        raise TypeError(
            "embedding_bag(): argument 'offsets' (position 3) must be Tensor, not "
            f"{type(offsets).__name__}"
        )
    if not isinstance(mode, int) or not 0 <= mode <= 2:
        raise RuntimeError(f"Unknown mode for embedding_bag: {mode}")
    padding = None if padding_idx is None or padding_idx < 0 else padding_idx
    name = _BAG_MODES[mode]
    output = _embedding_bag(
        indices,
        weight,
        offsets,
        scale_grad_by_freq=scale_grad_by_freq,
        mode=name,
        sparse=sparse,
        per_sample_weights=per_sample_weights,
        include_last_offset=include_last_offset,
        padding_idx=padding,
    )
    flat = np.asarray(indices.detach().cpu().__array__()).reshape(-1).astype(np.int64)
    starts = np.asarray(offsets.detach().cpu().__array__()).reshape(-1).astype(np.int64)
    if include_last_offset:
        starts = starts[:-1]
    bags = output.shape[0]
    bag_of = np.searchsorted(starts, np.arange(flat.size), side="right") - 1
    kept = flat != padding if padding is not None else np.ones(flat.size, bool)
    sizes = np.bincount(bag_of[kept], minlength=bags)[:bags].astype(np.int64)
    if name == "sum":
        # PyTorch's kernel has a fast path for float32/float16 sums that skips offset2bag.
        fast = padding is None and str(weight.dtype) in ("float32", "float16")
        offset2bag = np.zeros(0, np.int64) if fast else bag_of
        sizes = np.zeros(bags, np.int64)
        max_indices = np.zeros(bags, np.int64)
    elif name == "mean":
        offset2bag, max_indices = bag_of, sizes
    else:
        offset2bag = bag_of
        max_indices = _argmax_rows(weight, flat, bag_of, kept, bags)
    return output, _like(offset2bag, weight), _like(sizes, weight), _like(max_indices, weight)


def _argmax_rows(
    weight: Tensor, flat: np.ndarray, bag_of: np.ndarray, kept: np.ndarray, bags: int
) -> np.ndarray:
    """For each bag and feature, the index whose row holds the maximum (0 for an empty bag)."""
    rows = np.asarray(weight.detach().cpu().__array__())
    out = np.zeros((bags, rows.shape[1]), np.int64)
    for bag in range(bags):
        members = flat[(bag_of == bag) & kept]
        if members.size:
            out[bag] = members[np.argmax(rows[members], axis=0)]
    return out


def _like(values: np.ndarray, like: Tensor) -> Tensor:
    return tensor(np.ascontiguousarray(values, dtype=np.int64), device=like.device)


FUNCTIONS = {"ctc_loss": ctc_loss, "embedding_bag": embedding_bag}
NOT_METHODS = tuple(FUNCTIONS)
