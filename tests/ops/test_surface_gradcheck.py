"""`gradcheck` over every differentiable op of the promised surface, in one table, on every device.

Each row is `(fn, inputs)`: `fn(*tensors)` on float64 tensors that require grad, made from the
arrays in `inputs` on the device under test; index and mask arguments are built inside `fn` on
its inputs' device. Inputs keep away from kinks (|x| = 0, 1, 3, 6 and ties) where finite
differences would disagree with any one-sided derivative.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import autograd_async as aa
from autograd_async.autograd import gradcheck
from autograd_async.nn import functional as F  # noqa: N812

RNG = np.random.default_rng(11)


def _n(*shape: int) -> np.ndarray:
    """Standard normal values."""
    return RNG.standard_normal(shape)


def _u(low: float, high: float, *shape: int) -> np.ndarray:
    """Uniform values in (low, high)."""
    return RNG.uniform(low, high, shape)


def _away(*shape: int) -> np.ndarray:
    """Values in +-(0.1, 0.9) and +-(1.2, 2.8): no activation or rounding kink within reach."""
    magnitude = np.where(
        RNG.random(shape) < 0.5, RNG.uniform(0.1, 0.9, shape), RNG.uniform(1.2, 2.8, shape)
    )
    return magnitude * np.where(RNG.random(shape) < 0.5, -1.0, 1.0)


def _probs(*shape: int) -> np.ndarray:
    return RNG.uniform(0.1, 0.9, shape)


def _like(t: aa.Tensor, data) -> aa.Tensor:
    """A constant (index, mask, target) on `t`'s device."""
    return aa.tensor(data, device=t.device)


def _seeded_dropout_attention(q, k, v):
    # The same mask on every call, so that finite differences see one function.
    aa.manual_seed(3)
    return F.scaled_dot_product_attention(q, k, v, dropout_p=0.3)


MASK = [[True, False, True], [False, True, True]]

CASES = {
    # ------------------------------------------------------------ creation
    "tril": (lambda x: x.tril(-1), [_n(3, 4)]),
    "triu": (lambda x: aa.triu(x, 1), [_n(3, 4)]),
    "diag_vector": (lambda x: aa.diag(x, 1), [_n(3)]),
    "diag_matrix": (lambda x: x.diag(-1), [_n(3, 4)]),
    # ---------------------------------------------------- shape and views
    "narrow": (lambda x: x.narrow(1, 1, 2), [_n(2, 4)]),
    "select": (lambda x: x.select(0, -1), [_n(3, 2)]),
    "view_as": (lambda x, y: x.view_as(y) * y, [_n(2, 3), _n(6)]),
    "reshape_as": (lambda x, y: x.reshape_as(y) * y, [_n(2, 3), _n(3, 2)]),
    "expand_as": (lambda x, y: x.expand_as(y) * y, [_n(3, 1), _n(3, 2)]),
    "repeat": (lambda x: x.repeat(2, 1, 2), [_n(2, 3)]),
    "repeat_interleave": (lambda x: x.repeat_interleave(_like(x, [2, 0, 1]), dim=1), [_n(2, 3)]),
    "flip": (lambda x: x.flip(0, 1), [_n(2, 3)]),
    "roll": (lambda x: x.roll((1, -1), (0, 1)), [_n(2, 3)]),
    "movedim": (lambda x: x.movedim(0, -1), [_n(2, 3, 2)]),
    "swapaxes": (lambda x: x.swapaxes(0, 2), [_n(2, 3, 2)]),
    "unflatten": (lambda x: x.unflatten(1, (2, 2)), [_n(2, 4)]),
    "t": (lambda x: x.t(), [_n(2, 3)]),
    "mT": (lambda x: x.mT, [_n(2, 2, 3)]),
    "split_sizes": (
        lambda x: aa.cat([p * (i + 1) for i, p in enumerate(x.split([1, 2, 1], 1))], 1),
        [_n(2, 4)],
    ),
    "diagonal": (lambda x: x.diagonal(1, 0, 2), [_n(3, 2, 4)]),
    # ------------------------------------------------------------ indexing
    "gather": (lambda x: x.gather(1, _like(x, [[0, 0, 2], [1, 2, 2]])), [_n(2, 3)]),
    "scatter": (lambda x, s: x.scatter(1, _like(x, [[2, 0], [1, 0]]), s), [_n(2, 3), _n(2, 2)]),
    "scatter_add": (lambda x, s: x.scatter_add(0, _like(x, [[1, 1, 0]]), s), [_n(2, 3), _n(1, 3)]),
    "scatter_inplace": (
        lambda x, s: (x * 1).scatter_(1, _like(x, [[2], [0]]), s),
        [_n(2, 3), _n(2, 1)],
    ),
    "scatter_add_inplace": (
        lambda x, s: (x * 1).scatter_add_(1, _like(x, [[2, 2], [0, 1]]), s),
        [_n(2, 3), _n(2, 2)],
    ),
    "index_select": (lambda x: x.index_select(0, _like(x, [2, 0, 2])), [_n(3, 2)]),
    "index_add": (
        lambda x, s: x.index_add(0, _like(x, [1, 1]), s, alpha=0.5),
        [_n(3, 2), _n(2, 2)],
    ),
    "index_copy": (lambda x, s: x.index_copy(1, _like(x, [2, 0]), s), [_n(2, 3), _n(2, 2)]),
    "masked_fill": (lambda x: x.masked_fill(_like(x, MASK), 2.0), [_n(2, 3)]),
    "masked_fill_tensor": (lambda x, v: x.masked_fill(_like(x, MASK), v), [_n(2, 3), _n()]),
    "masked_fill_inplace": (lambda x: (x * 1).masked_fill_(_like(x, MASK), -1.0), [_n(2, 3)]),
    "masked_select": (lambda x: x.masked_select(_like(x, MASK)), [_n(2, 3)]),
    "where": (lambda c, x, y: aa.where(c > 0, x, y), [_n(2, 3), _n(2, 3), _n(3)]),
    "where_scalar": (lambda x: aa.where(x > 0, x, 0.5), [_away(2, 3)]),
    "take_along_dim": (lambda x: aa.take_along_dim(x, _like(x, [[2], [0]]), 1), [_n(2, 3)]),
    "topk": (lambda x: x.topk(2, dim=0, largest=False).values, [_n(3, 2)]),
    "sort": (lambda x: x.sort(1, descending=True).values, [_n(2, 3)]),
    "kthvalue": (lambda x: x.kthvalue(2, 1).values, [_n(2, 3)]),
    "max_dim": (lambda x: x.max(1).values, [_n(2, 3)]),
    "min_dim": (lambda x: aa.min(x, 0, keepdim=True)[0], [_n(2, 3)]),
    # ---------------------------------------------------------------- math
    "bmm": (aa.bmm, [_n(2, 2, 3), _n(2, 3, 2)]),
    "baddbmm": (
        lambda a, b, c: aa.baddbmm(a, b, c, beta=0.5, alpha=2.0),
        [_n(2, 2, 2), _n(2, 2, 3), _n(2, 3, 2)],
    ),
    "addmm": (lambda a, b, c: aa.addmm(a, b, c, beta=-1.0), [_n(2), _n(2, 3), _n(3, 2)]),
    "einsum": (lambda a, b: aa.einsum("bij,bjk->bik", a, b), [_n(2, 2, 3), _n(2, 3, 2)]),
    "outer": (aa.outer, [_n(3), _n(2)]),
    "dot": (aa.dot, [_n(3), _n(3)]),
    "mv": (aa.mv, [_n(2, 3), _n(3)]),
    "prod_zeros": (lambda x: x.prod(1), [np.array([[0.5, 0.0, 2.0], [0.0, 0.0, 1.5]])]),
    "prod_all": (aa.prod, [np.array([[0.5, 0.0, 2.0], [1.1, -0.7, 1.5]])]),
    "cumsum": (lambda x: x.cumsum(0), [_n(3, 2)]),
    "cumprod_zeros": (lambda x: aa.cumprod(x, 1), [np.array([[0.5, 0.0, 2.0, 0.0]])]),
    "norm": (lambda x: x.norm(3, dim=1), [_n(2, 3)]),
    "norm_fro": (aa.norm, [_n(2, 3)]),
    "vector_norm": (lambda x: aa.linalg.vector_norm(x, 1.5, dim=0, keepdim=True), [_n(2, 3)]),
    "matrix_norm": (lambda x: aa.linalg.matrix_norm(x, "fro"), [_n(2, 2, 3)]),
    "linalg_norm": (lambda x: aa.linalg.norm(x, math.inf, dim=1), [_n(2, 3)]),
    "linalg_norm_matrix": (lambda x: aa.linalg.norm(x, 1), [_n(2, 3)]),
    "logsumexp": (lambda x: aa.logsumexp(x, (0, 1)), [_n(2, 3)]),
    "var": (lambda x: x.var(1, correction=0), [_n(2, 3)]),
    "std": (lambda x: aa.std(x, 0, correction=2, keepdim=True), [_n(4, 2)]),
    "var_mean": (lambda x: aa.var_mean(x, 1), [_n(2, 3)]),
    "std_mean": (lambda x: aa.std_mean(x, correction=0), [_n(2, 3)]),
    "amax": (lambda x: x.amax(0), [_n(3, 2)]),
    "amin": (lambda x: aa.amin(x, (0, 1), keepdim=True), [_n(3, 2)]),
    "clamp_tensors": (aa.clamp, [_n(2, 3), _n(3) - 0.5, _n(2, 1) + 0.5]),
    "clamp_numbers": (lambda x: x.clamp(-0.3, 0.4), [_away(2, 3)]),
    "log1p": (aa.log1p, [_u(0.1, 2.0, 2, 3)]),
    "expm1": (aa.expm1, [_n(2, 3)]),
    "floor": (aa.floor, [_away(2, 3)]),
    "ceil": (aa.ceil, [_away(2, 3)]),
    "round": (aa.round, [_away(2, 3)]),
    "trunc": (aa.trunc, [_away(2, 3)]),
    "frac": (aa.frac, [_away(2, 3)]),
    "sign": (aa.sign, [_away(2, 3)]),
    "tan": (aa.tan, [_u(-1.2, 1.2, 2, 3)]),
    "atan": (aa.atan, [_n(2, 3)]),
    "atan2": (aa.atan2, [_n(2, 3), _n(3)]),
    "asin": (aa.asin, [_u(-0.9, 0.9, 2, 3)]),
    "acos": (aa.acos, [_u(-0.9, 0.9, 2, 3)]),
    "sinh": (aa.sinh, [_n(2, 3)]),
    "cosh": (aa.cosh, [_n(2, 3)]),
    "asinh": (aa.asinh, [_n(2, 3)]),
    "erf": (aa.erf, [_n(2, 3)]),
    "erfinv": (aa.erfinv, [_u(-0.9, 0.9, 2, 3)]),
    "rsqrt": (aa.rsqrt, [_u(0.2, 3.0, 2, 3)]),
    "reciprocal": (aa.reciprocal, [_u(0.2, 3.0, 2, 3)]),
    "remainder": (aa.remainder, [_u(0.1, 0.9, 2, 3) + 2.0, _u(1.1, 1.9, 3)]),
    "fmod": (aa.fmod, [_u(0.1, 0.9, 2, 3) - 2.0, _u(1.1, 1.9, 3)]),
    "lerp": (aa.lerp, [_n(2, 3), _n(2, 3), _n(3)]),
    "hypot": (aa.hypot, [_n(2, 3), _n(2, 1)]),
    "maximum": (aa.maximum, [_n(2, 3), _n(3)]),
    "minimum": (aa.minimum, [_n(2, 3), _n(2, 1)]),
    "square": (aa.square, [_n(2, 3)]),
    # ------------------------------------------------------- nn.functional
    "conv1d": (
        lambda x, w, b: F.conv1d(x, w, b, stride=2, padding=1, dilation=2),
        [_n(1, 2, 6), _n(2, 2, 2), _n(2)],
    ),
    "conv2d_same_groups": (
        lambda x, w: F.conv2d(x, w, padding="same", groups=2),
        [_n(1, 2, 3, 3), _n(2, 1, 3, 2)],
    ),
    "conv3d": (
        lambda x, w: F.conv3d(x, w, stride=(1, 2, 1), padding=1),
        [_n(1, 1, 2, 3, 2), _n(1, 1, 2, 2, 2)],
    ),
    "conv_transpose1d": (
        lambda x, w, b: F.conv_transpose1d(x, w, b, stride=2, output_padding=1),
        [_n(1, 2, 3), _n(2, 1, 2), _n(1)],
    ),
    "conv_transpose2d": (
        lambda x, w: F.conv_transpose2d(x, w, stride=2, padding=1, dilation=2),
        [_n(1, 2, 2, 3), _n(2, 1, 2, 2)],
    ),
    "max_pool1d": (lambda x: F.max_pool1d(x, 2, 1, padding=1), [_n(1, 2, 5)]),
    "max_pool2d": (lambda x: F.max_pool2d(x, 2, return_indices=True)[0], [_n(1, 2, 4, 4)]),
    "avg_pool1d": (
        lambda x: F.avg_pool1d(x, 3, 2, padding=1, count_include_pad=False),
        [_n(1, 2, 5)],
    ),
    "avg_pool2d": (lambda x: F.avg_pool2d(x, 2, ceil_mode=True), [_n(1, 2, 3, 5)]),
    "adaptive_avg_pool1d": (lambda x: F.adaptive_avg_pool1d(x, 3), [_n(1, 2, 5)]),
    "adaptive_avg_pool2d": (lambda x: F.adaptive_avg_pool2d(x, (2, 3)), [_n(1, 2, 3, 5)]),
    "adaptive_max_pool2d": (lambda x: F.adaptive_max_pool2d(x, 2), [_n(1, 2, 3, 5)]),
    "pad_constant": (lambda x: F.pad(x, (1, 2, -1, 1), value=0.5), [_n(1, 2, 3, 3)]),
    "pad_reflect": (lambda x: F.pad(x, (2, 1), mode="reflect"), [_n(1, 2, 4)]),
    "pad_replicate": (lambda x: F.pad(x, (1, 1, 2, 0), mode="replicate"), [_n(1, 2, 3, 3)]),
    "pad_circular": (lambda x: F.pad(x, (1, 2), mode="circular"), [_n(1, 2, 4)]),
    "unfold": (lambda x: F.unfold(x, 2, padding=1, stride=2), [_n(1, 2, 3, 3)]),
    "fold": (lambda x: F.fold(x, (3, 3), 2), [_n(1, 4, 4)]),
    "interpolate_nearest": (lambda x: F.interpolate(x, scale_factor=1.5), [_n(1, 2, 2, 3)]),
    "interpolate_bilinear": (
        lambda x: F.interpolate(x, size=(3, 4), mode="bilinear", align_corners=True),
        [_n(1, 2, 2, 3)],
    ),
    "batch_norm": (
        lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True),
        [_n(3, 2, 2), _n(2), _n(2)],
    ),
    "batch_norm_eval": (
        lambda x: F.batch_norm(x, _like(x, [0.1, -0.2]), _like(x, [1.5, 0.5])),
        [_n(3, 2)],
    ),
    "group_norm": (lambda x, w, b: F.group_norm(x, 2, w, b), [_n(2, 4, 2), _n(4), _n(4)]),
    "layer_norm": (lambda x, w, b: F.layer_norm(x, (3,), w, b), [_n(2, 3), _n(3), _n(3)]),
    "instance_norm": (lambda x: F.instance_norm(x), [_n(2, 2, 3)]),
    "embedding": (
        lambda w: F.embedding(_like(w, [[0, 2], [2, 1]]), w),  # padding_idx: no grad
        [_n(3, 2)],
    ),
    "normalize": (lambda x: F.normalize(x, p=1.5, dim=0), [_n(2, 3)]),
    "cosine_similarity": (lambda a, b: F.cosine_similarity(a, b, dim=0), [_n(3, 2), _n(3, 2)]),
    "pairwise_distance": (lambda a, b: F.pairwise_distance(a, b, p=3.0), [_n(2, 3), _n(2, 3)]),
    "sdpa_float_mask": (
        lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m),
        [_n(1, 2, 2), _n(1, 3, 2), _n(1, 3, 2), _n(2, 3)],
    ),
    "sdpa_bool_mask": (
        lambda q, k, v: F.scaled_dot_product_attention(
            q, k, v, attn_mask=_like(q, [[True, False, True], [True, True, False]])
        ),
        [_n(1, 2, 2), _n(1, 3, 2), _n(1, 3, 2)],
    ),
    "sdpa_causal_scale": (
        lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=0.7),
        [_n(1, 3, 2), _n(1, 3, 2), _n(1, 3, 2)],
    ),
    "sdpa_dropout": (_seeded_dropout_attention, [_n(1, 3, 2), _n(1, 3, 2), _n(1, 3, 2)]),
    # ------------------------------------------------------------- losses
    "nll_loss": (
        lambda x: F.nll_loss(x, _like(x, [0, 2, 1]), weight=_like(x, [0.5, 1.0, 2.0])),
        [_n(3, 3)],
    ),
    "cross_entropy_weight_smoothing": (
        lambda x: F.cross_entropy(
            x, _like(x, [0, 2, -100]), weight=_like(x, [0.5, 1.0, 2.0]), label_smoothing=0.2
        ),
        [_n(3, 3)],
    ),
    "cross_entropy_probs": (
        lambda x, p: F.cross_entropy(x, p.softmax(1), reduction="sum"),
        [_n(2, 3), _n(2, 3)],
    ),
    "cross_entropy_nd_none": (
        lambda x: F.cross_entropy(x, _like(x, [[0, 2], [1, 1]]), reduction="none"),
        [_n(2, 3, 2)],
    ),
    "binary_cross_entropy": (
        lambda x, t: F.binary_cross_entropy(x, t, _like(x, [0.5, 2.0, 1.0])),
        [_probs(2, 3), _probs(2, 3)],
    ),
    "bce_with_logits": (
        lambda x, t: F.binary_cross_entropy_with_logits(x, t, pos_weight=_like(x, [0.5, 2.0, 1.0])),
        [_n(2, 3), _probs(2, 3)],
    ),
    "l1_loss": (lambda x, t: F.l1_loss(x, t, reduction="sum"), [_away(2, 3), _away(2, 3) * 0]),
    "smooth_l1_loss": (lambda x, t: F.smooth_l1_loss(x, t, beta=0.5), [_away(2, 3), _n(2, 3) * 0]),
    "huber_loss": (lambda x, t: F.huber_loss(x, t, delta=0.5), [_away(2, 3), _n(2, 3) * 0]),
    "kl_div": (lambda x, t: F.kl_div(x, t, reduction="batchmean"), [_n(2, 3), _probs(2, 3)]),
    "kl_div_log_target": (
        lambda x, t: F.kl_div(x, t, reduction="sum", log_target=True),
        [_n(2, 3), _n(2, 3)],
    ),
    "margin_ranking_loss": (
        lambda a, b: F.margin_ranking_loss(a, b, _like(a, [1.0, -1.0, 1.0]), margin=0.1),
        [_u(1.0, 2.0, 3) * [1, -1, -1], _u(-0.5, 0.5, 3)],
    ),
    "cosine_embedding_loss": (
        lambda a, b: F.cosine_embedding_loss(a, b, _like(a, [1.0, -1.0])),
        [_n(2, 3), _n(2, 3)],
    ),
    # -------------------------------------------------------- activations
    "silu": (F.silu, [_n(2, 3)]),
    "leaky_relu": (lambda x: F.leaky_relu(x, 0.2), [_away(2, 3)]),
    "elu": (lambda x: F.elu(x, 0.7), [_away(2, 3)]),
    "selu": (F.selu, [_away(2, 3)]),
    "celu": (lambda x: F.celu(x, 0.5), [_away(2, 3)]),
    "softplus": (lambda x: F.softplus(x, beta=2.0, threshold=3.0), [_away(2, 3)]),
    "mish": (F.mish, [_n(2, 3)]),
    "hardtanh": (lambda x: F.hardtanh(x, -2.0, 2.0), [_away(2, 3)]),
    "relu6": (F.relu6, [_away(2, 3) * 3]),
    "hardsigmoid": (F.hardsigmoid, [_away(2, 3) * 2]),
    "hardswish": (F.hardswish, [_away(2, 3) * 2]),
    "logsigmoid": (F.logsigmoid, [_n(2, 3)]),
    "softsign": (F.softsign, [_away(2, 3)]),
    "tanhshrink": (F.tanhshrink, [_n(2, 3)]),
    "glu": (lambda x: F.glu(x, 0), [_n(4, 3)]),
    "gelu_tanh": (lambda x: F.gelu(x, approximate="tanh"), [_n(2, 3)]),
    "prelu": (F.prelu, [_away(2, 3, 2), _u(0.1, 0.5, 3)]),
}


@pytest.mark.parametrize("name", list(CASES))
def test_gradcheck(device: str, name: str) -> None:
    fn, arrays = CASES[name]
    inputs = tuple(
        aa.tensor(a, dtype=aa.float64, device=device, requires_grad=True) for a in arrays
    )
    assert gradcheck(fn, inputs)
