"""`multi_head_attention_forward`: PyTorch's functional multi-head attention, with every option
of its signature (packed or separate projections, bias_k/bias_v, zero attention, static keys and
values, masks, dropout, averaged or per-head weights)."""

from __future__ import annotations

import math
from typing import Any

from .. import creation
from ..core.tensor import Tensor
from ..devices import array_module, launching
from ..ops.sampling import pad
from ..ops.shape import cat
from .functional import dropout, softmax


def as_additive_mask(mask: Tensor | None, name: str, dtype: Any) -> Tensor | None:
    """A float mask to add to attention scores: -inf where a boolean mask is True."""
    if mask is None:
        return None
    if not isinstance(mask, Tensor):
        raise TypeError(f"MultiheadAttention: {name} must be a Tensor, got {type(mask).__name__}")
    kind = mask.dtype.kind
    if kind == "b":
        xp = array_module(mask.device)
        with launching(mask.device, name):
            data = xp.where(mask._data, -math.inf, 0.0).astype(dtype)
        return Tensor._wrap(data, mask.device)
    if kind != "f":
        raise AssertionError(f"only bool and floating types of {name} are supported")
    return mask


def _project(x: Tensor, weight: Tensor, bias: Tensor | None) -> Tensor:
    out = x @ weight.transpose(0, 1)
    return out if bias is None else out + bias


def _given(weight: Tensor | None, name: str, separate: bool) -> Tensor:
    """`weight`, which the projection mode `separate` needs: PyTorch's error when it is None."""
    if weight is None:
        raise AssertionError(f"use_separate_proj_weight is {separate} but {name} is None")
    return weight


def multi_head_attention_forward(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    embed_dim_to_check: int,
    num_heads: int,
    in_proj_weight: Tensor | None,
    in_proj_bias: Tensor | None,
    bias_k: Tensor | None,
    bias_v: Tensor | None,
    add_zero_attn: bool,
    dropout_p: float,
    out_proj_weight: Tensor,
    out_proj_bias: Tensor | None,
    training: bool = True,
    key_padding_mask: Tensor | None = None,
    need_weights: bool = True,
    attn_mask: Tensor | None = None,
    use_separate_proj_weight: bool = False,
    q_proj_weight: Tensor | None = None,
    k_proj_weight: Tensor | None = None,
    v_proj_weight: Tensor | None = None,
    static_k: Tensor | None = None,
    static_v: Tensor | None = None,
    average_attn_weights: bool = True,
    is_causal: bool = False,
) -> tuple[Tensor, Tensor | None]:
    """Multi-head attention of (L, N, E) queries over (S, N, E) keys and values (or unbatched
    (L, E), (S, E)): the output and, with need_weights, the attention weights."""
    if query.dim() not in (2, 3):
        raise AssertionError(
            f"query should be unbatched 2D or batched 3D tensor but received {query.dim()}-D "
            "query tensor"
        )
    batched = query.dim() == 3
    if not batched:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    tgt_len, bsz, embed_dim = query.shape
    if embed_dim != embed_dim_to_check:
        raise AssertionError(
            f"was expecting embedding dimension of {embed_dim_to_check}, but got {embed_dim}"
        )
    if is_causal and attn_mask is None:
        raise RuntimeError(
            "Need attn_mask if specifying the is_causal hint. You may use the Transformer "
            "module method `generate_square_subsequent_mask` to create this mask."
        )
    dtype = query.dtype
    key_padding_mask = as_additive_mask(key_padding_mask, "key_padding_mask", dtype)
    attn_mask = as_additive_mask(attn_mask, "attn_mask", dtype)
    head_dim = embed_dim // num_heads
    if head_dim * num_heads != embed_dim:
        raise AssertionError(f"embed_dim {embed_dim} not divisible by num_heads {num_heads}")
    if use_separate_proj_weight:
        biases = (None,) * 3 if in_proj_bias is None else in_proj_bias.chunk(3)
        q = _project(query, _given(q_proj_weight, "q_proj_weight", True), biases[0])
        k = _project(key, _given(k_proj_weight, "k_proj_weight", True), biases[1])
        v = _project(value, _given(v_proj_weight, "v_proj_weight", True), biases[2])
    else:
        packed = _given(in_proj_weight, "in_proj_weight", False).chunk(3)
        biases = (None,) * 3 if in_proj_bias is None else in_proj_bias.chunk(3)
        q, k, v = (_project(x, w, b) for x, w, b in zip((query, key, value), packed, biases))
    if attn_mask is not None and attn_mask.dim() == 2:
        if tuple(attn_mask.shape) != (tgt_len, key.shape[0]):
            raise RuntimeError(
                f"The shape of the 2D attn_mask is {tuple(attn_mask.shape)}, but should be "
                f"{(tgt_len, key.shape[0])}."
            )
        attn_mask = attn_mask.unsqueeze(0)
    if bias_k is not None and bias_v is not None:
        k = cat([k, bias_k.repeat(1, bsz, 1)])
        v = cat([v, bias_v.repeat(1, bsz, 1)])
        attn_mask = None if attn_mask is None else pad(attn_mask, (0, 1))
        key_padding_mask = None if key_padding_mask is None else pad(key_padding_mask, (0, 1))
    q = q.reshape((tgt_len, bsz * num_heads, head_dim)).transpose(0, 1)
    k = (
        static_k
        if static_k is not None
        else (k.reshape((k.shape[0], bsz * num_heads, head_dim)).transpose(0, 1))
    )
    v = (
        static_v
        if static_v is not None
        else (v.reshape((v.shape[0], bsz * num_heads, head_dim)).transpose(0, 1))
    )
    if add_zero_attn:
        zeros = creation.zeros(bsz * num_heads, 1, head_dim, dtype=dtype, device=q.device)
        k, v = cat([k, zeros], 1), cat([v, zeros], 1)
        attn_mask = None if attn_mask is None else pad(attn_mask, (0, 1))
        key_padding_mask = None if key_padding_mask is None else pad(key_padding_mask, (0, 1))
    src_len = k.shape[1]
    if key_padding_mask is not None:
        padding = (
            key_padding_mask.reshape((bsz, 1, 1, src_len))
            .expand(bsz, num_heads, 1, src_len)
            .reshape((bsz * num_heads, 1, src_len))
        )
        attn_mask = padding if attn_mask is None else attn_mask + padding
    if not training:
        dropout_p = 0.0
    scores = (q * math.sqrt(1.0 / head_dim)) @ k.transpose(-2, -1)
    if attn_mask is not None:
        scores = scores + attn_mask
    weights = softmax(scores, dim=-1)
    if dropout_p > 0.0:
        weights = dropout(weights, p=dropout_p)
    out = (weights @ v).transpose(0, 1).reshape((tgt_len * bsz, embed_dim))
    out = _project(out, out_proj_weight, out_proj_bias).reshape((tgt_len, bsz, -1))
    if not batched:
        out = out.squeeze(1)
    if not need_weights:
        return out, None
    weights = weights.reshape((bsz, num_heads, tgt_len, src_len))
    if average_attn_weights:
        weights = weights.mean(dim=1)
    if not batched:
        weights = weights.squeeze(0)
    return out, weights
