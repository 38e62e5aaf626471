"""`scaled_dot_product_attention`: softmax(q k^T * scale + mask) v, as one node.

The node keeps the softmax weights from forward, so backward is four batched matrix products
and one pass over the weights, with no nodes for the transposes, the scaling, the mask or the
softmax in between. `self_attention_heads` is the same node for multi-head self-attention on the
packed (.., 3 * E) output of one in-projection: it splits heads with strides instead of recorded
views, and writes the gradients of q, k and v back into one packed array. With
`create_graph=True` both build their backward from differentiable ops (the weights recomputed
in the graph), so higher derivatives still work. Dropout on the weights uses the composed ops.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..core.op import Op, broadcast_error
from ..core.tensor import Tensor
from ..creation import default_generator
from ..devices import launching
from . import dual
from .dual import as_array, sum_dims, sum_to, swap_last, xp_of
from .elementwise import where
from .nn_ops import NativeDropoutBackward0, softmax


def _key_sums(a: Any) -> Any:
    """Sums over the last axis, kept as a length-1 axis.

    Rows of a few keys are what attention has, and a reduction ufunc runs one tiny loop per row
    (50 us for 2048 rows of 8); as a matrix-vector product BLAS sums them all at once (9 us).
    """
    if isinstance(a, Tensor):
        return sum_dims(a, -1, True)
    size = a.shape[-1]
    ones = xp_of(a).ones((size, 1), dtype=a.dtype)
    return (a.reshape((-1, size)) @ ones).reshape(a.shape[:-1] + (1,))


def _key_max(a: Any) -> Any:
    """The max over the last axis of a contiguous array, kept as a length-1 axis.

    Up to 32 keys NumPy reduces a transposed copy across rows instead (18 us against 100 us for
    2048 rows of 8), as `nn_ops` does for a short class axis.
    """
    size = a.shape[-1]
    if size <= 32 and xp_of(a) is np and a.ndim > 1:
        across = np.maximum.reduce(np.ascontiguousarray(a.reshape((-1, size)).T), axis=0)
        return across.reshape(a.shape[:-1] + (1,))
    return a.max(axis=-1, keepdims=True)


def _softmax_rows(scores: Any) -> Any:
    """Softmax over the last axis of a fresh array, in place (rows of -inf give nan)."""
    xp = xp_of(scores)
    scores -= _key_max(scores)
    xp.exp(scores, out=scores)
    scores /= _key_sums(scores)
    return scores


def attention_arrays(q: Any, k: Any, v: Any, mask: Any, scale: float) -> tuple[Any, Any]:
    """The attention output and its softmax weights, from arrays (mask additive, or None)."""
    scores = q @ k.swapaxes(-1, -2)
    scores *= scale
    if mask is not None:
        if np.broadcast_shapes(scores.shape, mask.shape) == scores.shape:
            scores += mask
        else:  # the mask carries batch dims q and k do not: the result takes them
            scores = scores + mask
    weights = _softmax_rows(scores)
    return weights @ v, weights


def attention_weights(q: Any, k: Any, mask: Any, scale: float) -> Any:
    """The softmax weights from differentiable ops, for a backward that builds a graph."""
    scores = q @ swap_last(k) * scale
    if mask is not None:
        scores = scores + mask
    return softmax(scores, scores.ndim - 1)


def _product(a: Any, b: Any, out: Any) -> Any:
    """a @ b, written into `out` (a strided view) when given."""
    if out is None:
        return a @ b
    if xp_of(a) is np:
        return np.matmul(a, b, out=out)  # NumPy writes a strided `out` without a second copy
    out[...] = a @ b
    return out


def attention_vjp(
    g: Any,
    q: Any,
    k: Any,
    v: Any,
    weights: Any,
    scale: float,
    want_mask: bool = False,
    into: tuple[Any, Any, Any] | None = None,
) -> tuple[Any, Any, Any, Any]:
    """Gradients of q, k, v (and of an additive mask, when wanted) from the output's gradient.

    Arrays or Tensors alike; each gradient is summed back over the batch dims it was broadcast
    along, and the mask's is left unsummed for the caller to fit to the mask's shape. `into`:
    three arrays of q's, k's and v's shapes that receive the gradients (arrays only).
    """
    if isinstance(g, Tensor):
        g_weights = g @ swap_last(v)
        g_v = swap_last(weights) @ g
        # softmax's rule: w * (dw - sum(dw * w)) along the keys
        g_scores = (g_weights - _key_sums(g_weights * weights)) * weights
        g_mask = g_scores if want_mask else None
        g_scores = g_scores * scale
        g_q, g_k = g_scores @ k, swap_last(g_scores) @ q
        return sum_to(g_q, q.shape), sum_to(g_k, k.shape), sum_to(g_v, v.shape), g_mask
    g_q, g_k, g_v = into if into is not None else (None, None, None)
    g_v = _product(weights.swapaxes(-1, -2), g, g_v)
    g_scores = g @ v.swapaxes(-1, -2)  # a fresh array: the softmax rule works in place
    g_scores -= _key_sums(g_scores * weights)
    g_scores *= weights
    g_mask = g_scores.copy() if want_mask else None
    g_scores *= scale
    g_q = _product(g_scores, k, g_q)
    g_k = _product(g_scores.swapaxes(-1, -2), q, g_k)
    return sum_to(g_q, q.shape), sum_to(g_k, k.shape), sum_to(g_v, v.shape), g_mask


class ScaledDotProductAttentionBackward0(Op):
    """softmax(q k^T * scale + mask) v; the mask is additive and optional (input 3)."""

    __slots__ = ("_scale", "_weights")
    op_name = "scaled_dot_product_attention"
    saved_inputs = (0, 1, 2, 3)
    saved_slots = ("_weights",)

    def forward(self, q: Any, k: Any, v: Any, mask: Any = None, *, scale: float) -> Any:
        self._scale = scale
        out, self._weights = attention_arrays(q, k, v, mask, scale)
        return as_array(out)

    def backward(self, g: Any) -> tuple:
        q, k, v, mask = self.saved(g)
        if isinstance(g, Tensor):
            if mask is not None and not isinstance(mask, Tensor):  # a constant array
                mask = Tensor._wrap(mask, g.device)
            weights = attention_weights(q, k, mask, self._scale)
        else:
            self.check_released()
            weights = self._weights
        need = self.needs_input_grad
        g_q, g_k, g_v, g_mask = attention_vjp(g, q, k, v, weights, self._scale, need[3])
        if g_mask is not None:
            g_mask = sum_to(g_mask, mask.shape)
        return (
            g_q if need[0] else None,
            g_k if need[1] else None,
            g_v if need[2] else None,
            g_mask,
        )


def _head_order(batch_first: bool) -> tuple[int, int, int, int]:
    """Axes taking a (A, B, heads, head_dim) block to (batch, heads, length, head_dim)."""
    return (0, 2, 1, 3) if batch_first else (1, 2, 0, 3)


class NativeSelfAttentionBackward0(Op):
    """Multi-head self-attention on a packed (A, B, 3 * E) projection: q, k, v side by side.

    (A, B) is (N, L) with `batch_first`, else (L, N); the output is (A, B, E), the heads' outputs
    side by side, as an out-projection reads them. The mask is an additive constant array of
    shape (L, S) or (N, heads, L, S).
    """

    __slots__ = ("_heads", "_batch_first", "_scale", "_mask", "_weights")
    op_name = "multi_head_self_attention"
    saved_inputs = (0,)
    saved_slots = ("_weights",)

    def _split(self, qkv: Any) -> tuple[Any, Any, Any]:
        """q, k, v of (batch, heads, length, head_dim): strided views, or recorded ones."""
        a, b, width = qkv.shape
        heads = self._heads
        parts = qkv.reshape((a, b, 3, heads, width // (3 * heads)))
        order = _head_order(self._batch_first)
        return tuple(dual.permute(parts[:, :, i], order) for i in range(3))

    def _merge(self, x: Any) -> Any:
        """(batch, heads, length, head_dim) back to (A, B, heads, head_dim)."""
        return dual.permute(x, (2, 0, 1, 3) if not self._batch_first else (0, 2, 1, 3))

    def forward(self, qkv: Any, *, heads: int, batch_first: bool, mask: Any, scale: float) -> Any:
        self._heads, self._batch_first, self._mask, self._scale = heads, batch_first, mask, scale
        out, self._weights = attention_arrays(*self._split(qkv), mask, scale)
        a, b, width = qkv.shape
        return as_array(self._merge(out).reshape((a, b, width // 3)))

    def backward(self, g: Any) -> Any:
        (qkv,) = self.saved(g)
        q, k, v = self._split(qkv)
        if isinstance(g, Tensor):
            mask = None if self._mask is None else Tensor._wrap(self._mask, g.device)
            weights = attention_weights(q, k, mask, self._scale)
        else:
            self.check_released()
            weights = self._weights
        a, b, width = g.shape
        heads = self._heads
        g_out = dual.permute(
            g.reshape((a, b, heads, width // heads)), _head_order(self._batch_first)
        )
        if isinstance(g, Tensor):
            grads = attention_vjp(g_out, q, k, v, weights, self._scale)[:3]
            packed = dual.concat([dual.unsqueeze(self._merge(x), 2) for x in grads], 2)
            return packed.reshape(qkv.shape)
        packed = xp_of(g).empty(qkv.shape, dtype=qkv.dtype)
        attention_vjp(g_out, q, k, v, weights, self._scale, into=self._split(packed))
        return packed


def self_attention_heads(
    qkv: Tensor, heads: int, batch_first: bool, mask: Any = None, scale: float | None = None
) -> Tensor:
    """Attention of each head over its own slices of a packed (A, B, 3 * E) q, k, v projection.

    `mask`: an additive constant array of shape (L, S) or (N * heads, L, S), or None.
    """
    a, b, width = qkv.shape
    if width % (3 * heads):
        raise RuntimeError(
            f"self_attention_heads: the packed width {width} is not 3 * heads ({heads}) * a "
            "head size"
        )
    batch = a if batch_first else b
    if mask is not None and mask.ndim == 3:
        mask = mask.reshape((batch, heads) + mask.shape[1:])
    factor = 1 / math.sqrt(width // (3 * heads)) if scale is None else scale
    return NativeSelfAttentionBackward0.apply(
        qkv, heads=heads, batch_first=batch_first, mask=mask, scale=factor
    )


def _check_shapes(query: Tensor, key: Tensor, value: Tensor) -> None:
    op = "scaled_dot_product_attention"
    for name, t in (("query", query), ("key", key), ("value", value)):
        if not isinstance(t, Tensor) or t.ndim < 2:
            raise RuntimeError(
                f"{op}: expected {name} of at least 2 dims (..., L, E), got "
                f"{list(t.shape) if isinstance(t, Tensor) else type(t).__name__}"
            )
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


def _additive_mask(query: Tensor, key: Tensor, attn_mask: Tensor | None, is_causal: bool) -> Any:
    """The mask as the fused node takes it: a float Tensor as is, a bool or causal one as an
    additive constant array (0 where attention is allowed, -inf elsewhere), or None."""
    xp = xp_of(query._data)
    if attn_mask is not None and not is_causal and attn_mask.dtype != np.bool_:
        return attn_mask
    with launching(query.device, "scaled_dot_product_attention"):
        if is_causal:
            keep = xp.tril(xp.ones((query.shape[-2], key.shape[-2]), dtype=bool))
        elif attn_mask is not None:
            keep = attn_mask._data
        else:
            return None
        return xp.where(keep, 0.0, -math.inf).astype(query.dtype)


def _composed(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    attn_mask: Tensor | None,
    dropout_p: float,
    is_causal: bool,
    factor: float,
) -> Tensor:
    """Attention from differentiable ops: the path for dropout and unusual masks."""
    scores = (query @ key.transpose(-2, -1)) * factor
    length, source = query.shape[-2], key.shape[-2]
    xp = xp_of(query._data)
    if is_causal:
        with launching(query.device, "scaled_dot_product_attention"):
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


def _check_mask_shape(query: Tensor, key: Tensor, attn_mask: Tensor) -> None:
    """PyTorch's error for a mask that does not broadcast to the (..., L, S) scores."""
    scores = np.broadcast_shapes(query.shape[:-2], key.shape[:-2]) + (
        query.shape[-2],
        key.shape[-2],
    )
    try:
        np.broadcast_shapes(scores, tuple(attn_mask.shape))
    except ValueError:
        shaped = np.broadcast_to(np.empty((), np.bool_), scores)  # the scores' shape, no memory
        raise broadcast_error("scaled_dot_product_attention", [shaped, attn_mask]) from None


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
    if not 0 <= dropout_p <= 1:  # a RuntimeError here, unlike F.dropout's ValueError
        raise RuntimeError(f"dropout probability has to be between 0 and 1, but got {dropout_p}")
    if attn_mask is not None:
        _check_mask_shape(query, key, attn_mask)
    factor = 1 / math.sqrt(query.shape[-1]) if scale is None else scale
    fusable = (
        dropout_p == 0
        and query.dtype.kind == "f"
        and (
            attn_mask is None
            or (attn_mask.device is query.device and attn_mask.dtype in (np.bool_, query.dtype))
        )
    )
    if not fusable:
        return _composed(query, key, value, attn_mask, dropout_p, is_causal, factor)
    mask = _additive_mask(query, key, attn_mask, is_causal)
    return ScaledDotProductAttentionBackward0.apply(query, key, value, mask, scale=factor)


FUNCTIONS: dict[str, Any] = {}  # torch has this as a function, not a Tensor method
