"""Norm-based comparisons: `normalize`, `cosine_similarity`, `pairwise_distance`.

Built from differentiable ops. A norm is taken as sum(|x| ** p) ** (1 / p) with the sum clamped
at eps ** p first, which equals clamping the norm at eps and keeps the gradient finite (zero)
for all-zero vectors, as PyTorch's is.
"""

from __future__ import annotations

from typing import Any

from ..core.op import require_tensor, torch_type_name
from ..core.tensor import Tensor
from .linalg import vector_norm
from .promotion import result_type


def _powered_sum(x: Tensor, p: float, dim: Any, keepdim: bool) -> Tensor:
    """sum(|x| ** p) over `dim` (x * x for p = 2, which needs no abs)."""
    powered = x * x if p == 2 else x.abs() ** p
    return powered.sum(dim=dim, keepdim=keepdim)


def _norm(x: Tensor, p: float, dim: Any, keepdim: bool, floor: float = 0.0) -> Tensor:
    """The p-norm along `dim`, at least `floor` (with a gradient of 0 below it)."""
    total = _powered_sum(x, p, dim, keepdim)
    if floor > 0:
        total = total.clamp_min(floor**p)
    return total.sqrt() if p == 2 else total ** (1.0 / p)


def normalize(
    input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12, out: Any = None
) -> Tensor:
    """input / max(||input||_p, eps) along `dim`."""
    require_tensor("normalize", input)
    if out is not None:
        raise NotImplementedError("normalize: the out= argument is not supported")
    # PyTorch's own composition: any p (0 counts nonzeros), integer inputs refused by the norm
    return input / vector_norm(input, p, dim, True).clamp_min(eps)


def _check_broadcast(name: str, a: Tensor, b: Tensor) -> None:
    """Two tensors (PyTorch's TypeError otherwise) of shapes that broadcast (its error else)."""
    require_tensor(name, a, "x1", 1)
    require_tensor(name, b, "x2", 2)
    for i, (m, n) in enumerate(zip(a.shape[::-1], b.shape[::-1])):
        if m != n and m != 1 and n != 1:
            dim = max(a.ndim, b.ndim) - 1 - i
            raise RuntimeError(
                f"The size of tensor a ({m}) must match the size of tensor b ({n}) at "
                f"non-singleton dimension {dim}"
            )


def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """sum(x1 * x2) / (max(||x1||, eps) * max(||x2||, eps)) along `dim` (broadcasting)."""
    _check_broadcast("cosine_similarity", x1, x2)
    common = result_type(x1, x2)
    if common.kind not in "fc":
        raise RuntimeError(
            "expected common dtype to be floating point, yet common dtype is "
            f"{torch_type_name(common)}"
        )
    a = x1 / _norm(x1, 2, dim, True, eps)
    b = x2 / _norm(x2, 2, dim, True, eps)
    return (a * b).sum(dim=dim)


def pairwise_distance(
    x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False
) -> Tensor:
    """||x1 - x2 + eps||_p along the last dim (broadcasting)."""
    _check_broadcast("pairwise_distance", x1, x2)
    if p <= 0:
        raise ValueError(f"pairwise_distance: p must be positive, but got {p}")
    return _norm(x1 - x2 + eps, p, -1, keepdim)


FUNCTIONS: dict[str, Any] = {}  # torch has these as functions, not Tensor methods
