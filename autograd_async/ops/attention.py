"""`scaled_dot_product_attention`: softmax(q k^T * scale + mask) v, from differentiable ops."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..creation import default_generator
from ..tensor import Tensor
from .dual import xp_of
from .elementwise import where
from .nn_ops import NativeDropoutBackward0, softmax


def _check_shapes(query: Tensor, key: Tensor, value: Tensor) -> None:
    op = "scaled_dot_product_attention"
    for name, t in (("query", query), ("key", key), ("value", value)):
        if not isinstance(t, Tensor) or t.ndim < 2:
            raise RuntimeError(f"{op}: expected {name} of at least 2 dims (..., L, E), got "
                               f"{list(t.shape) if isinstance(t, Tensor) else type(t).__name__}")
    if query.shape[-1] != key.shape[-1]:
        raise RuntimeError(
            f"{op}: expected query and key with the same embedding size (last dim), but got "
            f"query {list(query.shape)} and key {list(key.shape)}"
        )
    if key.shape[-2] != value.shape[-2]:
        raise RuntimeError(
            f"{op}: expected key and value with the same sequence length (dim -2), but got key "
            f"{list(key.shape)} and value {list(value.shape)}"
        )
    if not query.dtype == key.dtype == value.dtype:
        raise RuntimeError(
            f"{op}: expected query, key and value of one dtype, but got {query.dtype}, "
            f"{key.dtype} and {value.dtype}"
        )


def scaled_dot_product_attention(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    attn_mask: Tensor | None = None,
    dropout_p: float = 0.0,
    is_causal: bool = False,
    scale: float | None = None,
    enable_gqa: bool = False,
) -> Tensor:
    """Attention of (..., L, E) queries over (..., S, E) keys and (..., S, Ev) values.

    A bool `attn_mask` marks with True the pairs that take part; a float one is added to the
    scores. `is_causal` masks every key after its query.
    """
    _check_shapes(query, key, value)
    if enable_gqa:
        raise NotImplementedError("scaled_dot_product_attention: enable_gqa is not supported")
    if is_causal and attn_mask is not None:
        raise RuntimeError(
            "_scaled_dot_product_attention: Explicit attn_mask should not be set when "
            "is_causal=True"
        )
    if not 0 <= dropout_p <= 1:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {dropout_p}")
    factor = 1 / math.sqrt(query.shape[-1]) if scale is None else scale
    scores = (query @ key.transpose(-2, -1)) * factor
    length, source = query.shape[-2], key.shape[-2]
    xp = xp_of(query._data)
    if is_causal:
        keep = xp.tril(xp.ones((length, source), dtype=bool))
        scores = where(Tensor._wrap(keep, query.device), scores, -math.inf)
    elif attn_mask is not None:
        if attn_mask.dtype == np.bool_:
            scores = where(attn_mask, scores, -math.inf)
        else:
            scores = scores + attn_mask
    weights = softmax(scores, -1)
    if dropout_p == 1:
        weights = weights * 0
    elif dropout_p > 0:
        weights = NativeDropoutBackward0.apply(weights, p=dropout_p, generator=default_generator)
    return weights @ value


FUNCTIONS: dict[str, Any] = {}  # torch has this as a function, not a Tensor method
