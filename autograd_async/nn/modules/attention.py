"""`MultiheadAttention`: PyTorch's multi-head attention layer, parameters and masks included.

Inputs are (L, N, E) (or (N, L, E) with `batch_first=True`, or (L, E) unbatched). Masks follow
PyTorch: a boolean mask is True where attention is not allowed, a float mask is added to the
scores; `key_padding_mask` (N, S) marks padded keys; `attn_mask` is (L, S) or (N * heads, L, S).

Self-attention whose weights are not returned (as `TransformerEncoderLayer` calls it) records three
nodes: the in-projection, the heads' attention as one node on the packed projection
(`ops.attention.self_attention_heads`), and the out-projection.
"""

from __future__ import annotations

import math
from typing import Any

from ... import creation
from ...core.tensor import Tensor
from ...dtypes import default_float
from ...ops import cat
from ...ops.attention import self_attention_heads
from .. import functional as F  # noqa: N812 - PyTorch's alias
from .. import init
from ..functional_attention import as_additive_mask
from ..parameter import Parameter
from .input_checks import expect_tensor
from .linear import Linear
from .module import Module


def generate_square_subsequent_mask(size: int, device: Any = None, dtype: Any = None) -> Tensor:
    """The causal mask: 0 on and below the diagonal, -inf above (PyTorch's Transformer helper)."""
    rows = creation.arange(size, device=device)
    allowed = rows.unsqueeze(1) >= rows.unsqueeze(0)
    return as_additive_mask(~allowed, "mask", dtype or default_float())  # type: ignore[return-value]


class MultiheadAttention(Module):
    """Attention over `num_heads` heads of size embed_dim / num_heads, then an output projection."""

    bias_k: Parameter | None
    bias_v: Parameter | None

    def __init__(
        self,
        embed_dim: int,
        num_heads: int,
        dropout: float = 0.0,
        bias: bool = True,
        add_bias_kv: bool = False,
        add_zero_attn: bool = False,
        kdim: int | None = None,
        vdim: int | None = None,
        batch_first: bool = False,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(
                f"embed_dim and num_heads must be greater than 0, got embed_dim={embed_dim} and "
                f"num_heads={num_heads} instead"
            )
        self.embed_dim = embed_dim
        self.kdim = kdim if kdim is not None else embed_dim
        self.vdim = vdim if vdim is not None else embed_dim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.num_heads = num_heads
        self.dropout = dropout
        self.batch_first = batch_first
        self.head_dim = embed_dim // num_heads
        if self.head_dim * num_heads != embed_dim:
            raise AssertionError("embed_dim must be divisible by num_heads")
        make = {"dtype": dtype, "device": device}
        if self._qkv_same_embed_dim:
            self.in_proj_weight = Parameter(creation.empty(3 * embed_dim, embed_dim, **make))
            self.register_parameter("q_proj_weight", None)
            self.register_parameter("k_proj_weight", None)
            self.register_parameter("v_proj_weight", None)
        else:
            self.q_proj_weight = Parameter(creation.empty(embed_dim, embed_dim, **make))
            self.k_proj_weight = Parameter(creation.empty(embed_dim, self.kdim, **make))
            self.v_proj_weight = Parameter(creation.empty(embed_dim, self.vdim, **make))
            self.register_parameter("in_proj_weight", None)
        if bias:
            self.in_proj_bias = Parameter(creation.empty(3 * embed_dim, **make))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = Linear(embed_dim, embed_dim, bias=bias, **make)
        if add_bias_kv:
            self.bias_k = Parameter(creation.empty(1, 1, embed_dim, **make))
            self.bias_v = Parameter(creation.empty(1, 1, embed_dim, **make))
        else:
            self.bias_k = self.bias_v = None
        self.add_zero_attn = add_zero_attn
        self._reset_parameters()

    def _reset_parameters(self) -> None:
        if self._qkv_same_embed_dim:
            init.xavier_uniform_(self.in_proj_weight)
        else:
            init.xavier_uniform_(self.q_proj_weight)
            init.xavier_uniform_(self.k_proj_weight)
            init.xavier_uniform_(self.v_proj_weight)
        if self.in_proj_bias is not None:
            init.constant_(self.in_proj_bias, 0.0)
            init.constant_(self.out_proj.bias, 0.0)
        if self.bias_k is not None and self.bias_v is not None:  # made together
            init.xavier_normal_(self.bias_k)
            init.xavier_normal_(self.bias_v)

    def _check_inputs(self, query: Any, key: Any, value: Any) -> bool:
        for name, x, width in (
            ("query", query, self.embed_dim),
            ("key", key, self.kdim),
            ("value", value, self.vdim),
        ):
            expect_tensor(self, x, name)
            if x.ndim not in (2, 3) or x.shape[-1] != width:
                raise RuntimeError(
                    f"MultiheadAttention(embed_dim={self.embed_dim}, num_heads={self.num_heads}):"
                    f" expected {name} of shape (L, {width}) or "
                    f"{'(N, L' if self.batch_first else '(L, N'}, {width}), got "
                    f"{tuple(x.shape)}"
                )
        if not query.ndim == key.ndim == value.ndim:
            raise RuntimeError(
                "MultiheadAttention: query, key and value must all be batched (3D) or all "
                f"unbatched (2D), got {query.ndim}D, {key.ndim}D and {value.ndim}D"
            )
        return query.ndim == 3

    def _project(self, query: Tensor, key: Tensor, value: Tensor) -> tuple[Tensor, ...]:
        bias = self.in_proj_bias
        b_q, b_k, b_v = (None, None, None) if bias is None else bias.chunk(3)
        if self._qkv_same_embed_dim:
            w_q, w_k, w_v = self.in_proj_weight.chunk(3)
        else:
            w_q, w_k, w_v = self.q_proj_weight, self.k_proj_weight, self.v_proj_weight
        return F.linear(query, w_q, b_q), F.linear(key, w_k, b_k), F.linear(value, w_v, b_v)

    def forward(
        self,
        query: Tensor,
        key: Tensor,
        value: Tensor,
        key_padding_mask: Tensor | None = None,
        need_weights: bool = True,
        attn_mask: Tensor | None = None,
        average_attn_weights: bool = True,
        is_causal: bool = False,
    ) -> tuple[Tensor, Tensor | None]:
        """(attention output, attention weights averaged over heads or per head, or None)."""
        batched = self._check_inputs(query, key, value)
        if is_causal and attn_mask is None:
            raise RuntimeError(
                "Need attn_mask if specifying the is_causal hint. You may use "
                "generate_square_subsequent_mask to create this mask."
            )
        if self._takes_fused_path(query, key, value, need_weights):
            return self._fused_self_attention(query, batched, key_padding_mask, attn_mask), None
        if not batched:
            query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
            if key_padding_mask is not None:
                key_padding_mask = key_padding_mask.unsqueeze(0)
        elif self.batch_first:
            query, key, value = (x.transpose(0, 1) for x in (query, key, value))
        tgt_len, batch, embed = query.shape
        heads, head_dim = self.num_heads, self.head_dim
        dtype = query.dtype
        attn_mask = as_additive_mask(attn_mask, "attn_mask", dtype)
        key_padding_mask = as_additive_mask(key_padding_mask, "key_padding_mask", dtype)
        q, k, v = self._project(query, key, value)
        if self.bias_k is not None and self.bias_v is not None:  # made together
            k = cat([k, self.bias_k.expand(1, batch, embed)])
            v = cat([v, self.bias_v.expand(1, batch, embed)])
            attn_mask = None if attn_mask is None else F.pad(attn_mask, (0, 1))
            if key_padding_mask is not None:
                key_padding_mask = F.pad(key_padding_mask, (0, 1))
        # (L, N, E) -> (N * heads, L, head_dim)
        q = q.reshape((tgt_len, batch * heads, head_dim)).transpose(0, 1)
        k = k.reshape((k.shape[0], batch * heads, head_dim)).transpose(0, 1)
        v = v.reshape((v.shape[0], batch * heads, head_dim)).transpose(0, 1)
        if self.add_zero_attn:
            zeros = creation.zeros(batch * heads, 1, head_dim, dtype=dtype, device=q.device)
            k, v = cat([k, zeros], 1), cat([v, zeros], 1)
            attn_mask = None if attn_mask is None else F.pad(attn_mask, (0, 1))
            if key_padding_mask is not None:
                key_padding_mask = F.pad(key_padding_mask, (0, 1))
        src_len = k.shape[1]
        mask = self._merged_mask(attn_mask, key_padding_mask, batch, tgt_len, src_len)
        scores = (q * (1.0 / math.sqrt(head_dim))) @ k.transpose(1, 2)
        if mask is not None:
            scores = scores + mask
        weights = scores.softmax(dim=-1)
        if self.dropout > 0.0 and self.training:
            weights = F.dropout(weights, p=self.dropout)
        out = (weights @ v).transpose(0, 1).reshape((tgt_len * batch, embed))
        out = self.out_proj(out).reshape((tgt_len, batch, embed))
        if self.batch_first and batched:
            out = out.transpose(0, 1)
        if not batched:
            out = out.squeeze(1)
        if not need_weights:
            return out, None
        weights = weights.reshape((batch, heads, tgt_len, src_len))
        if average_attn_weights:
            weights = weights.mean(dim=1)
        if not batched:
            weights = weights.squeeze(0)
        return out, weights

    def _takes_fused_path(
        self, query: Tensor, key: Tensor, value: Tensor, need_weights: bool
    ) -> bool:
        """Self-attention without weights to return, dropout, or extra keys: one packed node."""
        return (
            query is key
            and key is value
            and not need_weights
            and self._qkv_same_embed_dim
            and self.bias_k is None
            and not self.add_zero_attn
            and not (self.dropout > 0.0 and self.training)
            and query.dtype.kind == "f"
        )

    def _fused_self_attention(
        self,
        x: Tensor,
        batched: bool,
        key_padding_mask: Tensor | None,
        attn_mask: Tensor | None,
    ) -> Tensor:
        """One in-projection, the heads' attention as one node, then the out-projection.

        The input keeps its layout (no transposes for batch_first): the node reads the heads
        from the packed projection with strides.
        """
        if not batched:
            x = x.unsqueeze(1)
            if key_padding_mask is not None:
                key_padding_mask = key_padding_mask.unsqueeze(0)
        batch_first = self.batch_first and batched
        length, batch = (x.shape[1], x.shape[0]) if batch_first else x.shape[:2]
        dtype = x.dtype
        mask = self._merged_mask(
            as_additive_mask(attn_mask, "attn_mask", dtype),
            as_additive_mask(key_padding_mask, "key_padding_mask", dtype),
            batch,
            length,
            length,
        )
        packed = F.linear(x, self.in_proj_weight, self.in_proj_bias)
        if mask is not None and (mask.requires_grad or mask.device is not x.device):
            # a mask to differentiate (or on another device, which the ops report): recorded views
            return self._heads_composed(packed, mask, batch_first, batched)
        heads = self_attention_heads(
            packed, self.num_heads, batch_first, None if mask is None else mask._data
        )
        out = self.out_proj(heads)
        return out if batched else out.squeeze(1)

    def _heads_composed(
        self, packed: Tensor, mask: Tensor, batch_first: bool, batched: bool
    ) -> Tensor:
        """The heads' attention from recorded views and scaled_dot_product_attention."""
        a, b, _ = packed.shape
        heads, head_dim = self.num_heads, self.head_dim
        order = (0, 2, 1, 3) if batch_first else (1, 2, 0, 3)
        q, k, v = (
            part.reshape((a, b, heads, head_dim)).permute(*order) for part in packed.chunk(3, -1)
        )
        if mask.ndim == 3:
            mask = mask.reshape((q.shape[0], heads) + tuple(mask.shape[1:]))
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        back = (0, 2, 1, 3) if batch_first else (2, 0, 1, 3)
        out = self.out_proj(out.permute(*back).reshape((a, b, self.embed_dim)))
        return out if batched else out.squeeze(1)

    def _merged_mask(
        self,
        attn_mask: Tensor | None,
        key_padding_mask: Tensor | None,
        batch: int,
        tgt_len: int,
        src_len: int,
    ) -> Tensor | None:
        """One additive mask of shape (N * heads, L, S), or (L, S) that broadcasts."""
        heads = self.num_heads
        if attn_mask is not None:
            allowed = ((tgt_len, src_len), (batch * heads, tgt_len, src_len))
            if tuple(attn_mask.shape) not in allowed:
                raise RuntimeError(
                    f"The shape of the attn_mask is {tuple(attn_mask.shape)}, but should be "
                    f"{allowed[0]} or {allowed[1]}."
                )
        if key_padding_mask is None:
            return attn_mask
        if tuple(key_padding_mask.shape) != (batch, src_len):
            raise RuntimeError(
                f"expecting key_padding_mask shape of {(batch, src_len)}, but got "
                f"{tuple(key_padding_mask.shape)}"
            )
        padding = (
            key_padding_mask.reshape((batch, 1, 1, src_len))
            .expand(batch, heads, 1, src_len)
            .reshape((batch * heads, 1, src_len))
        )
        return padding if attn_mask is None else attn_mask + padding

    def extra_repr(self) -> str:
        """PyTorch prints no settings for this layer, only its out_proj child."""
        return ""


__all__ = ["MultiheadAttention", "generate_square_subsequent_mask"]
