"""The one-node layer_norm, scaled_dot_product_attention and packed multi-head self-attention:
values and float64 gradients against NumPy formulas (finite differences) and PyTorch, second
derivatives through their differentiable backward, and what each records."""

from __future__ import annotations

import math

import numpy as np
import pytest
from gradients import check_op, to_numpy

import autograd_async as aa
from autograd_async.autograd import gradcheck, gradgradcheck
from autograd_async.nn import functional as F  # noqa: N812
from autograd_async.ops.attention import self_attention_heads

from .torch_reference import against_torch

RNG = np.random.default_rng(3)


def _r(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape)


def _t(*shape: int, device: str = "cpu") -> aa.Tensor:
    return aa.tensor(_r(*shape), device=device, requires_grad=True)


# ------------------------------------------------------------------ layer norm
def _layer_norm_numpy(x, w, b, dims: int, eps: float = 1e-5):
    axes = tuple(range(x.ndim - dims, x.ndim))
    mean = x.mean(axis=axes, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=axes, keepdims=True)
    out = (x - mean) / np.sqrt(var + eps)
    out = out if w is None else out * w
    return out if b is None else out + b


@pytest.mark.parametrize("affine", ["both", "weight", "bias", "none"])
def test_layer_norm_against_finite_differences(device, affine) -> None:
    x, w, b = _r(3, 2, 4, 5), _r(4, 5), _r(4, 5)
    w = w if affine in ("both", "weight") else None
    b = b if affine in ("both", "bias") else None
    params = [a for a in (w, b) if a is not None]

    def ours(x, *p):
        given = iter(p)
        return F.layer_norm(
            x,
            (4, 5),
            next(given) if w is not None else None,
            next(given) if b is not None else None,
        )

    def numpy(x, *p):
        given = iter(p)
        return _layer_norm_numpy(
            x, next(given) if w is not None else None, next(given) if b is not None else None, 2
        )

    check_op(ours, numpy, x, *params, device=device)


@pytest.mark.parametrize("affine", ["weight", "bias"])
def test_layer_norm_with_one_parameter_matches_torch(torch, device, affine) -> None:
    tf = torch.nn.functional
    if affine == "weight":
        against_torch(
            torch,
            lambda x, w: F.layer_norm(x, (6,), w),
            lambda x, w: tf.layer_norm(x, (6,), w),
            _r(4, 6),
            _r(6),
            device=device,
        )
    else:
        against_torch(
            torch,
            lambda x, b: F.layer_norm(x, (6,), None, b),
            lambda x, b: tf.layer_norm(x, (6,), None, b),
            _r(4, 6),
            _r(6),
            device=device,
        )


def test_layer_norm_of_a_transposed_input_matches_torch(torch, device) -> None:
    against_torch(
        torch,
        lambda x, w, b: F.layer_norm(x.transpose(0, 1), (3,), w, b, 1e-3),
        lambda x, w, b: torch.nn.functional.layer_norm(x.transpose(0, 1), (3,), w, b, 1e-3),
        _r(5, 4, 3),
        _r(3),
        _r(3),
        device=device,
    )


def test_layer_norm_is_one_node_and_keeps_float32(device) -> None:
    x = aa.randn(6, 8, device=device, requires_grad=True)
    w = aa.ones(8, device=device, requires_grad=True)
    out = F.layer_norm(x, (8,), w, aa.zeros(8, device=device))
    assert out.grad_fn.name() == "NativeLayerNormBackward0"
    assert {fn.name() for fn, _ in out.grad_fn.next_functions if fn is not None} == {
        "AccumulateGrad"
    }
    out.sum().backward()
    assert out.dtype == x.grad.dtype == w.grad.dtype == aa.float32
    # each row of the output sums to zero whatever the cotangent: so does x's gradient
    np.testing.assert_allclose(to_numpy(x.grad), 0.0, atol=1e-5)


def test_layer_norm_second_derivatives(device) -> None:
    x, w, b = _t(2, 3, 4, device=device), _t(3, 4, device=device), _t(3, 4, device=device)
    fn = lambda x, w, b: F.layer_norm(x, (3, 4), w, b, eps=1e-3)  # noqa: E731
    assert gradcheck(fn, (x, w, b))
    assert gradgradcheck(fn, (x, w, b))
    assert gradgradcheck(lambda x: F.layer_norm(x, (4,)), (x,))


def test_layer_norm_graph_backward_twice_then_freed(device) -> None:
    x = _t(3, 4, device=device)
    out = F.layer_norm(x, (4,), _t(4, device=device))
    out.sum().backward(retain_graph=True)
    first = to_numpy(x.grad).copy()
    out.sum().backward()
    np.testing.assert_allclose(to_numpy(x.grad), 2 * first, rtol=1e-12, atol=1e-15)
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        out.sum().backward()


# ------------------------------------------------------------ scaled dot product
def _attention_numpy(q, k, v, mask=None, scale=None):
    scale = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
    scores = q @ np.swapaxes(k, -1, -2) * scale
    if mask is not None:
        scores = scores + mask
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return (e / e.sum(axis=-1, keepdims=True)) @ v


def test_attention_against_finite_differences(device) -> None:
    check_op(
        F.scaled_dot_product_attention,
        _attention_numpy,
        _r(2, 3, 4, 5),
        _r(2, 3, 6, 5),
        _r(2, 3, 6, 7),
        device=device,
    )
    check_op(
        lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m, scale=0.3),
        lambda q, k, v, m: _attention_numpy(q, k, v, m, 0.3),
        _r(3, 4, 5),
        _r(3, 6, 5),
        _r(3, 6, 2),
        _r(4, 6),
        device=device,
    )


def test_attention_broadcasts_batch_dims_like_torch(torch, device) -> None:
    tf = torch.nn.functional
    against_torch(
        torch,
        lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, m),
        lambda q, k, v, m: tf.scaled_dot_product_attention(q, k, v, m),
        _r(2, 3, 4, 5),
        _r(3, 6, 5),
        _r(1, 3, 6, 2),
        _r(2, 1, 4, 6),
        device=device,
    )


def test_causal_attention_with_more_keys_matches_torch(torch, device) -> None:
    tf = torch.nn.functional
    against_torch(
        torch,
        lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
        lambda q, k, v: tf.scaled_dot_product_attention(q, k, v, is_causal=True),
        _r(2, 3, 4),
        _r(2, 5, 4),
        _r(2, 5, 3),
        device=device,
    )


def test_attention_is_one_node_with_a_differentiable_backward(device) -> None:
    q, k, v, m = (
        _t(2, 3, 2, device=device),
        _t(2, 4, 2, device=device),
        _t(2, 4, 3, device=device),
        _t(3, 4, device=device),
    )
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=m)
    assert out.grad_fn.name() == "ScaledDotProductAttentionBackward0"
    fn = lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m)  # noqa: E731
    assert gradcheck(fn, (q, k, v, m))
    assert gradgradcheck(fn, (q, k, v, m))


# ------------------------------------------------- packed multi-head self-attention
def _heads_numpy(qkv, heads, batch_first, mask=None):
    a, b, width = qkv.shape
    size = width // 3
    parts = qkv.reshape(a, b, 3, heads, size // heads)
    order = (0, 2, 1, 3) if batch_first else (1, 2, 0, 3)
    q, k, v = (parts[:, :, i].transpose(order) for i in range(3))
    if mask is not None and mask.ndim == 3:
        mask = mask.reshape((q.shape[0], heads) + mask.shape[1:])
    out = _attention_numpy(q, k, v, mask)
    back = (0, 2, 1, 3) if batch_first else (2, 0, 1, 3)
    return out.transpose(back).reshape(a, b, size)


@pytest.mark.parametrize("batch_first", [True, False])
@pytest.mark.parametrize("mask_shape", [None, "shared", "per_head"])
def test_packed_heads_against_finite_differences(device, batch_first, mask_shape) -> None:
    a, b, heads = (3, 4, 2) if batch_first else (4, 3, 2)
    batch, length = (a, b) if batch_first else (b, a)
    mask = {
        None: None,
        "shared": _r(length, length),
        "per_head": _r(batch * heads, length, length),
    }[mask_shape]
    if mask is not None:
        mask = np.where(RNG.random(mask.shape) < 0.2, -np.inf, mask)
        mask[..., 0] = 0.0  # every query sees at least one key
    check_op(
        lambda x: self_attention_heads(x, heads, batch_first, mask),
        lambda x: _heads_numpy(x, heads, batch_first, mask),
        _r(a, b, 3 * 6),
        device=device,
    )


def test_packed_heads_second_derivatives(device) -> None:
    qkv = _t(3, 3, 12, device=device)
    mask = np.triu(np.full((3, 3), -np.inf), 1)
    for batch_first in (True, False):
        fn = lambda x: self_attention_heads(x, 2, batch_first, mask)  # noqa: B023, E731
        assert gradcheck(fn, (qkv,))
        assert gradgradcheck(fn, (qkv,))


def test_packed_heads_reject_a_width_that_does_not_split() -> None:
    with pytest.raises(RuntimeError, match="packed width 10 is not 3 \\* heads \\(2\\)"):
        self_attention_heads(aa.randn(2, 3, 10), 2, True)
