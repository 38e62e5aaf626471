"""Helpers shared by the distributions: broadcasting parameters, probabilities and logits,
lazily computed properties, and the float limits of a tensor's dtype."""

from __future__ import annotations

from functools import update_wrapper
from numbers import Number
from typing import Any

import numpy as np

from ..core.tensor import Tensor
from ..creation import as_tensor, tensor
from ..dtypes import get_default_dtype
from ..grad_mode import enable_grad
from ..nn import functional as F

__all__ = [
    "broadcast_all",
    "euler_constant",
    "clamp_probs",
    "lazy_property",
    "logits_to_probs",
    "probs_to_logits",
    "tril_matrix_to_vec",
    "vec_to_tril_matrix",
]

euler_constant = 0.57721566490153286060  # the Euler-Mascheroni constant, PyTorch's name


def finfo(t: Tensor) -> np.finfo:
    """The float limits (eps, tiny, max) of `t`'s dtype."""
    return np.finfo(np.dtype(str(t.dtype)))


def broadcast_all(*values: Any) -> tuple[Tensor, ...]:
    """Tensors and numbers broadcast to one shape; numbers take the tensors' dtype and device."""
    if not all(isinstance(v, (Tensor, Number)) or hasattr(v, "__torch_function__") for v in values):
        raise ValueError(
            "Input arguments must all be instances of numbers.Number, torch.Tensor or objects "
            "implementing __torch_function__."
        )
    if not all(isinstance(v, Tensor) for v in values):
        like = next((v for v in values if isinstance(v, Tensor)), None)
        if like is None:
            dtype, dev = get_default_dtype(), None
        else:
            dtype, dev = like.dtype, like.device
        values = tuple(
            v if isinstance(v, Tensor) else tensor(float(v), dtype=dtype, device=dev)
            for v in values
        )
    shape = np.broadcast_shapes(*(v.shape for v in values))
    return tuple(v if v.shape == shape else v.expand(shape) for v in values)


def logits_to_probs(logits: Tensor, is_binary: bool = False) -> Tensor:
    """Probabilities from logits: sigmoid for binary ones, else softmax over the last dim."""
    if is_binary:
        return logits.sigmoid()
    return F.softmax(logits, dim=-1)


def clamp_probs(probs: Tensor) -> Tensor:
    """Probabilities clamped to [eps, 1 - eps] of their dtype."""
    eps = float(finfo(probs).eps)
    return probs.clamp(min=eps, max=1 - eps)


def probs_to_logits(probs: Tensor, is_binary: bool = False) -> Tensor:
    """Logits from probabilities (log-odds for binary ones, else log of the clamped probs)."""
    ps_clamped = clamp_probs(probs)
    if is_binary:
        return ps_clamped.log() - (-ps_clamped).log1p()
    return ps_clamped.log()


class lazy_property:  # noqa: N801 - PyTorch's name
    """A property computed on first access and then stored on the instance. As in PyTorch it is
    computed with grad enabled, so a value first read under `no_grad` still keeps its graph."""

    def __init__(self, wrapped: Any) -> None:
        self.wrapped = wrapped
        # Copies the name and docstring onto any object; typeshed asks for a callable.
        update_wrapper(self, wrapped)  # type: ignore[arg-type]

    def __get__(self, instance: Any, obj_type: Any = None) -> Any:
        if instance is None:
            return self
        with enable_grad():
            value = self.wrapped(instance)
        setattr(instance, self.wrapped.__name__, value)
        return value


def tril_matrix_to_vec(mat: Tensor, diag: int = 0) -> Tensor:
    """The lower triangle (from diagonal `diag`) of the last two dims, as a vector, row by row."""
    n = mat.shape[-1]
    if diag < -n or diag >= n:
        raise ValueError(f"diag ({diag}) provided is outside [{-n}, {n - 1}].")
    rows, cols = np.tril_indices(n, k=diag)
    index = as_tensor(rows * n + cols, device=mat.device)
    return mat.reshape(mat.shape[:-2] + (n * n,)).index_select(-1, index)


def vec_to_tril_matrix(vec: Tensor, diag: int = 0) -> Tensor:
    """The inverse of `tril_matrix_to_vec`: a lower-triangular matrix from its entries."""
    size = vec.shape[-1]
    width = 1 + 2 * diag
    root = (-width + (width**2 + 8 * size + 4 * abs(diag) * (diag + 1)) ** 0.5) / 2
    n = int(round(root))
    if abs(root - n) > 1e-6:
        raise ValueError(
            f"The size of last dimension is {size} which cannot be expressed as the lower "
            "triangular part of a square D x D matrix."
        )
    rows, cols = np.tril_indices(n, k=diag)
    index = as_tensor(rows * n + cols, device=vec.device)
    flat = vec.new_zeros(vec.shape[:-1] + (n * n,))
    flat = flat.index_add(-1, index, vec)
    return flat.reshape(vec.shape[:-1] + (n, n))


def diag_embed(values: Tensor) -> Tensor:
    """Square matrices with `values` (last dim) on their diagonals."""
    n = values.shape[-1]
    eye = values.new_zeros((n, n))
    eye = eye + values.new_ones(n).diag()
    return values.unsqueeze(-1) * eye
