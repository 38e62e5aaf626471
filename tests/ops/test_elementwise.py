"""Arithmetic and elementwise ops: finite differences on broadcast shapes, PyTorch, dtype rules."""

from __future__ import annotations

import numpy as np
import pytest
from gradients import check_op, compare_torch, to_numpy
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import mutually_broadcastable_shapes

import autograd_async as aa

FEW = settings(max_examples=25, deadline=None)
pairs = mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3, max_side=4)


def _arrays(shapes: tuple, seed: int, positive: bool = False) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    out = [rng.standard_normal(s) for s in shapes]
    return [np.abs(a) + 0.5 for a in out] if positive else out


BINARY = {
    "add": (lambda a, b: a + b, np.add, False),
    "sub": (lambda a, b: a - b, np.subtract, False),
    "mul": (lambda a, b: a * b, np.multiply, False),
    "div": (lambda a, b: a / b, np.divide, True),
    "pow": (lambda a, b: a**b, np.power, True),
    "maximum": (aa.maximum, np.maximum, False),
    "minimum": (aa.minimum, np.minimum, False),
    "where": (lambda a, b: aa.where(a > b, a, b), lambda a, b: np.where(a > b, a, b), False),
}


@pytest.mark.parametrize("name", sorted(BINARY))
@FEW
@given(shapes=pairs, seed=st.integers(0, 2**16))
def test_binary_ops_broadcast(name: str, shapes, seed: int) -> None:
    ours, ref, positive = BINARY[name]
    arrays = _arrays(shapes.input_shapes, seed, positive)
    if name in KINKED:  # central differences across a tie measure neither side's slope
        a, b = arrays
        assume(np.all(np.abs(a - b) > 1e-4))
    check_op(ours, ref, *arrays, seed=seed)


KINKED = ("maximum", "minimum", "where")


UNARY = {
    "neg": (lambda a: -a, np.negative, False),
    "abs": (aa.abs, np.abs, False),
    "exp": (aa.exp, np.exp, False),
    "log": (aa.log, np.log, True),
    "sqrt": (aa.sqrt, np.sqrt, True),
    "sin": (aa.sin, np.sin, False),
    "cos": (aa.cos, np.cos, False),
    "tanh": (aa.tanh, np.tanh, False),
    "sigmoid": (aa.sigmoid, lambda a: 1 / (1 + np.exp(-a)), False),
    "relu": (aa.relu, lambda a: np.maximum(a, 0), False),
    "clamp": (lambda a: a.clamp(min=-0.5, max=0.7), lambda a: np.clip(a, -0.5, 0.7), False),
    "clamp_min": (lambda a: a.clamp(min=0.1), lambda a: np.maximum(a, 0.1), False),
    "pow_scalar": (lambda a: a**3, lambda a: a**3, False),
    "pow_half": (lambda a: a**0.5, np.sqrt, True),
    "rpow": (lambda a: 2.5**a, lambda a: 2.5**a, False),
    "rsub": (lambda a: 2 - a, lambda a: 2 - a, False),
    "rdiv": (lambda a: 3 / a, lambda a: 3 / a, True),
    "square": (aa.square, np.square, False),
    "reciprocal": (aa.reciprocal, np.reciprocal, True),
}


@pytest.mark.parametrize("name", sorted(UNARY))
@settings(max_examples=10, deadline=None)
@given(
    shapes=mutually_broadcastable_shapes(num_shapes=1, max_dims=3, max_side=4),
    seed=st.integers(0, 2**16),
)
def test_unary_ops(name: str, shapes, seed: int) -> None:
    ours, ref, positive = UNARY[name]
    check_op(ours, ref, *_arrays(shapes.input_shapes, seed, positive), seed=seed)


@pytest.mark.parametrize(
    ("sa", "sb", "node"),
    [
        ((3, 4), (4, 5), "MmBackward0"),
        ((3, 4), (4,), "MvBackward0"),
        ((4,), (4,), "DotBackward0"),
        ((4,), (4, 5), "MmBackward0"),
        ((2, 3, 4), (4, 5), "BmmBackward0"),
        ((2, 3, 4), (2, 4, 5), "BmmBackward0"),
        ((1, 3, 4), (2, 4, 5), "BmmBackward0"),
        ((4,), (2, 4, 5), "BmmBackward0"),
        ((2, 3, 4), (4,), "BmmBackward0"),
        ((2, 1, 3, 4), (5, 4, 2), "BmmBackward0"),
    ],
)
def test_matmul_shapes(sa: tuple, sb: tuple, node: str) -> None:
    a, b = _arrays((sa, sb), 1)
    check_op(lambda x, y: x @ y, np.matmul, a, b)
    out = aa.tensor(a, requires_grad=True) @ aa.tensor(b)
    assert out.grad_fn.name() == node


def test_matmul_errors_name_both_shapes() -> None:
    with pytest.raises(RuntimeError, match=r"shapes cannot be multiplied \(3x4 and 5x6\)"):
        aa.randn(3, 4) @ aa.randn(5, 6)
    with pytest.raises(RuntimeError, match=r"\(3 and 4x5\)"):
        aa.matmul(aa.randn(3), aa.randn(4, 5))
    with pytest.raises(RuntimeError, match="at least 1D, but they are 0D and 2D"):
        aa.matmul(aa.tensor(1.0), aa.randn(2, 2))
    with pytest.raises(RuntimeError, match=r"batch dimensions of shapes \(2, 3, 4\) and \(3, 4"):
        aa.randn(2, 3, 4) @ aa.randn(3, 4, 5)


def test_matmul_backward_is_two_products_and_keeps_float32() -> None:
    x = aa.randn(8, 5, requires_grad=True)
    w = aa.randn(5, 3, requires_grad=True)
    (x @ w).sum().backward()
    assert x.grad.dtype == aa.float32 and w.grad.dtype == aa.float32
    np.testing.assert_allclose(to_numpy(x.grad), np.ones((8, 3)) @ to_numpy(w).T, rtol=1e-5)


def test_torch_arithmetic_and_elementwise(torch) -> None:
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((3, 4)), rng.standard_normal((4,))
    pos = np.abs(a) + 1.5
    compare_torch(
        torch,
        lambda x, y: (x * y - y / (x.abs() + 1)) ** 2,
        lambda x, y: (x * y - y / (x.abs() + 1)) ** 2,
        a,
        b,
    )
    compare_torch(torch, lambda x, y: x**y, lambda x, y: x**y, pos, b)
    compare_torch(torch, lambda x: 2**x + 3 - x, lambda x: 2**x + 3 - x, a)
    compare_torch(
        torch,
        lambda x: x.sigmoid() * x.tanh() + x.relu().exp(),
        lambda x: x.sigmoid() * x.tanh() + x.relu().exp(),
        a,
    )
    compare_torch(
        torch, lambda x: x.log().sqrt().sin().cos(), lambda x: x.log().sqrt().sin().cos(), pos
    )
    compare_torch(torch, lambda x: x.clamp(-0.3, 0.4), lambda x: x.clamp(-0.3, 0.4), a)
    compare_torch(
        torch,
        lambda x, y: aa.maximum(x, y) + aa.minimum(x, y) * 2,
        lambda x, y: torch.maximum(x, y) + torch.minimum(x, y) * 2,
        a,
        b,
    )
    compare_torch(
        torch, lambda x, y: aa.where(x > 0, x, y), lambda x, y: torch.where(x > 0, x, y), a, b
    )
    compare_torch(torch, lambda x, y: x @ y, lambda x, y: x @ y, a, b)
    compare_torch(torch, lambda x, y: x.T @ x @ y, lambda x, y: x.T @ x @ y, a, b)


def test_ties_share_gradient_like_torch(torch) -> None:
    a = np.array([1.0, 2.0, 3.0])
    compare_torch(torch, aa.maximum, torch.maximum, a, np.array([1.0, 0.0, 3.0]))
    compare_torch(torch, lambda x: x.clamp(min=2.0, max=3.0), lambda x: x.clamp(2.0, 3.0), a)


def test_second_derivatives_match_torch(torch) -> None:
    rng = np.random.default_rng(4)
    for fn in (lambda x: (x.tanh() * x.sigmoid()).sum(), lambda x: (x**3 / (x.exp() + 1)).sum()):
        data = rng.standard_normal(5)
        x = aa.tensor(data, requires_grad=True)
        (g,) = aa.autograd.grad(fn(x), x, create_graph=True)
        (gg,) = aa.autograd.grad(g.sum(), x)
        tx = torch.tensor(data, requires_grad=True)
        (tg,) = torch.autograd.grad(fn(tx), tx, create_graph=True)
        (tgg,) = torch.autograd.grad(tg.sum(), tx)
        np.testing.assert_allclose(to_numpy(g), tg.detach().numpy(), rtol=1e-10)
        np.testing.assert_allclose(to_numpy(gg), tgg.numpy(), rtol=1e-8)


@pytest.mark.parametrize(
    ("make", "dtype"),
    [
        (lambda: aa.ones(2, dtype=aa.float32) * 2.5, aa.float32),
        (lambda: aa.ones(2, dtype=aa.int64) * 2.5, aa.float32),
        (lambda: aa.ones(2, dtype=aa.int64) + 2, aa.int64),
        (lambda: aa.ones(2, dtype=aa.int32) + 2, aa.int32),
        (lambda: aa.ones(2, dtype=aa.int64) / 2, aa.float32),
        (lambda: aa.ones(2, dtype=aa.bool_) + 1, aa.int64),
        (lambda: aa.ones(2, dtype=aa.int64) + aa.ones(2, dtype=aa.float32), aa.float32),
        (lambda: aa.ones(2, dtype=aa.int64) + aa.tensor(1.5, dtype=aa.float64), aa.float64),
        (lambda: aa.ones(2, dtype=aa.float32) + aa.tensor(1.5, dtype=aa.float64), aa.float32),
        (lambda: aa.ones(2, dtype=aa.float32) + aa.ones(2, dtype=aa.float64), aa.float64),
        (lambda: aa.ones(2, dtype=aa.int64) + aa.ones(2, dtype=aa.float16), aa.float16),
        (lambda: 2 ** aa.ones(2, dtype=aa.int64), aa.int64),
        (lambda: 2.0 ** aa.ones(2, dtype=aa.int64), aa.float32),
        (lambda: aa.ones(2, dtype=aa.int64).exp(), aa.float32),
        (lambda: aa.ones(2, dtype=aa.float32) * np.float64(2.0), aa.float32),
    ],
)
def test_type_promotion_follows_pytorch(make, dtype) -> None:
    assert make().dtype == dtype


def test_float32_gradients_stay_float32() -> None:
    x = aa.randn(3, 4, requires_grad=True)
    y = ((x * 2.0 + 1) / 3.0) ** 2
    (g,) = aa.autograd.grad((y.exp() * x.sigmoid()).sum(), x)
    assert g.dtype == aa.float32


def test_mixed_dtype_gradient_is_cast_back() -> None:
    x = aa.randn(3, requires_grad=True)
    w = aa.randn(3, dtype=aa.float64, requires_grad=True)
    (x * w).sum().backward()
    assert x.grad.dtype == aa.float32 and w.grad.dtype == aa.float64


def test_operand_errors() -> None:
    with pytest.raises(TypeError):
        aa.ones(2) + "a"
    with pytest.raises(TypeError, match="add\\(\\): expected a Tensor or a number"):
        aa.add(aa.ones(2), [1, 2])
    with pytest.raises(RuntimeError, match="Negation, the `-` operator, on a bool tensor"):
        -aa.ones(2, dtype=aa.bool_)
    with pytest.raises(RuntimeError, match="At least one of 'min' or 'max' must not be None"):
        aa.ones(2).clamp()
    with pytest.raises(RuntimeError, match="where expected condition to be a boolean tensor"):
        aa.where(aa.ones(2), aa.ones(2), aa.ones(2))
    with pytest.raises(RuntimeError, match="Integers to negative integer powers"):
        aa.ones(2, dtype=aa.int64) ** -1


def test_ndarray_on_the_left_defers_to_tensor() -> None:
    out = np.float32(2.0) * aa.ones(2)
    assert isinstance(out, aa.Tensor) and out.dtype == aa.float32


def test_no_graph_without_grad() -> None:
    x = aa.randn(3, requires_grad=True)
    with aa.no_grad():
        y = x * 2
    assert y.grad_fn is None and not y.requires_grad
    assert (aa.randn(3) * 2).grad_fn is None


def test_casts_and_where_method() -> None:
    x = aa.tensor([1.5, -2.0], requires_grad=True)
    assert x.double().dtype == aa.float64 and x.half().dtype == aa.float16
    assert x.long().tolist() == [1, -2] and x.int().dtype == aa.int32
    assert x.bool().dtype == aa.bool_ and x.float() is x
    (x.double() * 2).sum().backward()
    assert x.grad.dtype == aa.float32 and x.grad.tolist() == [2.0, 2.0]
    assert x.where(x > 0, 0.0).tolist() == [1.5, 0.0]
    assert not hasattr(aa.Tensor, "cat")
