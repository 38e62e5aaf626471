"""Products built from matmul, bmm, mv and outer: inner, vdot, dist, addmv, addr, addbmm and
chain_matmul; each records the nodes of the products it is made of."""

from __future__ import annotations

import warnings
from typing import Any

from ..core.op import require_tensor
from ..core.tensor import Tensor
from .arithmetic import dot
from .complex_parts import conj
from .linalg import _need_dims, _need_tensor, _scaled_sum, bmm, mv, outer
from .numeric import tensordot


def inner(input: Tensor, other: Tensor) -> Tensor:
    """Sum over the last dims of both (a product when either is a scalar tensor)."""
    require_tensor("inner", input)
    require_tensor("inner", other, "other", 2)
    if input.ndim == 0 or other.ndim == 0:
        return input * other
    if input.shape[-1] != other.shape[-1]:
        raise RuntimeError(
            "inner() the last dimension must match on both input tensors but got shapes "
            f"{list(input.shape)} and {list(other.shape)}"
        )
    return tensordot(input, other, dims=([-1], [-1]))


def vdot(input: Tensor, other: Tensor) -> Tensor:
    """Dot product of two 1-D tensors, the first conjugated."""
    require_tensor("vdot", input)
    require_tensor("vdot", other, "other", 2)
    return dot(conj(input) if input.dtype.kind == "c" else input, other)


def dist(input: Tensor, other: Tensor, p: Any = 2) -> Tensor:
    """The p-norm of input - other (broadcast)."""
    require_tensor("dist", input)
    require_tensor("dist", other, "other", 2)
    return (input - other).norm(p)


def addmv(input: Tensor, mat: Tensor, vec: Tensor, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
    """beta * input + alpha * (mat @ vec), input broadcast to the product's shape."""
    _need_tensor("addmv", input=input, mat=mat, vec=vec)
    if mat.ndim != 2 or vec.ndim != 1 or input.ndim > 1:
        raise RuntimeError(
            f"vector + matrix @ vector expected, got {input.ndim}, {mat.ndim}, {vec.ndim}"
        )
    return _scaled_sum("addmv", input, mv(mat, vec), beta, alpha)


def addr(input: Tensor, vec1: Tensor, vec2: Tensor, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
    """beta * input + alpha * outer(vec1, vec2), input broadcast to the product's shape."""
    _need_tensor("addr", input=input, vec1=vec1, vec2=vec2)
    if vec1.ndim != 1:
        raise RuntimeError(f"addr: Expected 1-D argument vec1, but got {vec1.ndim}-D")
    if vec2.ndim != 1:
        raise RuntimeError(f"addr: Expected 1-D argument vec2, but got {vec2.ndim}-D")
    return _scaled_sum("addr", input, outer(vec1, vec2), beta, alpha)


def addbmm(
    input: Tensor, batch1: Tensor, batch2: Tensor, *, beta: Any = 1, alpha: Any = 1
) -> Tensor:
    """beta * input + alpha * (the sum over the batch of batch1[i] @ batch2[i])."""
    _need_tensor("addbmm", input=input, batch1=batch1, batch2=batch2)
    _need_dims("addbmm", 3, batch1=batch1, batch2=batch2)
    return _scaled_sum("addbmm", input, bmm(batch1, batch2).sum(0), beta, alpha)


def chain_matmul(*matrices: Tensor) -> Tensor:
    """The product of 2-D matrices, left to right (deprecated in PyTorch for linalg.multi_dot)."""
    warnings.warn(
        "torch.chain_matmul is deprecated and will be removed in a future PyTorch release. Use "
        "torch.linalg.multi_dot instead, which accepts a list of two or more tensors rather "
        "than multiple parameters.",
        UserWarning,
        stacklevel=2,
    )
    if len(matrices) == 1 and isinstance(matrices[0], list | tuple):
        matrices = tuple(matrices[0])
    if not matrices:
        raise RuntimeError("chain_matmul(): Expected one or more matrices")
    for i, m in enumerate(matrices):
        require_tensor("chain_matmul", m, "matrices", i + 1)
        if m.ndim != 2:
            raise RuntimeError(f"Tensor dimension is {m.ndim}, expected 2 instead.")
    result = matrices[0]
    for m in matrices[1:]:
        result = result @ m
    return result if len(matrices) > 1 else result.clone()


FUNCTIONS: dict[str, Any] = {
    "inner": inner,
    "vdot": vdot,
    "dist": dist,
    "addmv": addmv,
    "addr": addr,
    "addbmm": addbmm,
    "chain_matmul": chain_matmul,
}
NOT_METHODS = ("chain_matmul",)
