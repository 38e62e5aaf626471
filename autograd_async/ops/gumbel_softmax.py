"""gumbel_softmax: a softmax of logits perturbed by Gumbel(0, 1) noise, optionally made one-hot
with the soft sample's gradient (the straight-through estimator)."""

from __future__ import annotations

import warnings

from .. import creation
from ..core.op import require_tensor
from ..core.tensor import Tensor


def gumbel_softmax(
    logits: Tensor, tau: float = 1, hard: bool = False, eps: float = 1e-10, dim: int = -1
) -> Tensor:
    """A sample from the Gumbel-softmax distribution over `dim` at temperature `tau`."""
    require_tensor("gumbel_softmax", logits, "logits")
    if eps != 1e-10:
        warnings.warn("`eps` parameter is deprecated and has no effect.", stacklevel=2)
    noise = creation.empty(tuple(logits.shape), dtype=logits.dtype, device=logits.device)
    gumbels = -noise.exponential_().log()
    y_soft = ((logits + gumbels) / tau).softmax(dim)
    if not hard:
        return y_soft
    index = y_soft.max(dim, keepdim=True)[1]
    y_hard = creation.zeros_like(logits).scatter_(dim, index, 1.0)
    return y_hard - y_soft.detach() + y_soft
