"""Math ops against PyTorch on every device: values and gradients in float64, gradcheck, errors.

One table per kind of op (unary, binary, reductions and scans, products, norms); each row runs
forward and backward here on the device under test and in PyTorch on the same arrays.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from gradients import to_numpy, versus_torch

import autograd_async as aa
from autograd_async.autograd import gradcheck, gradgradcheck


def _x(*shape: int, seed: int = 0, low: float | None = None, high: float | None = None):
    rng = np.random.default_rng(seed)
    if low is not None:
        return rng.uniform(low, high, shape)
    return rng.standard_normal(shape)


def _inputs(device: str, *arrays) -> tuple:
    return tuple(aa.tensor(a, device=device, requires_grad=True) for a in arrays)


# ------------------------------------------------------------------- unary
# name -> (input domain (low, high) or None for standard normal, check second derivatives)
UNARY = {
    "log1p": ((0.1, 3.0), True),
    "expm1": (None, True),
    "tan": ((-1.2, 1.2), True),
    "atan": (None, True),
    "asin": ((-0.9, 0.9), True),
    "acos": ((-0.9, 0.9), True),
    "sinh": (None, True),
    "cosh": (None, True),
    "asinh": (None, True),
    "erf": (None, True),
    "erfinv": ((-0.9, 0.9), True),
    "rsqrt": ((0.2, 3.0), True),
    "reciprocal": ((0.2, 3.0), True),
    "square": (None, True),
    "floor": (None, False),
    "ceil": (None, False),
    "trunc": (None, False),
    "frac": (None, False),
    "sign": (None, False),
    "round": (None, False),
}


def _unary_input(name: str, seed: int = 0):
    domain, _ = UNARY[name]
    if domain is None:
        return _x(3, 4, seed=seed) * 2
    return _x(3, 4, seed=seed, low=domain[0], high=domain[1])


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_matches_torch(torch, device: str, name: str) -> None:
    versus_torch(torch, device, getattr(aa, name), getattr(torch, name), _unary_input(name))
    # the method form too
    x = aa.tensor(_unary_input(name), device=device)
    np.testing.assert_allclose(to_numpy(getattr(x, name)()), to_numpy(getattr(aa, name)(x)))


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_gradcheck(device: str, name: str) -> None:
    (x,) = _inputs(device, _unary_input(name, seed=1))
    assert gradcheck(getattr(aa, name), (x,))
    if UNARY[name][1]:
        assert gradgradcheck(getattr(aa, name), (x,))


def test_round_decimals_and_integers(torch, device: str) -> None:
    data = np.array([0.125, 2.5, -1.005, 3.14159, 1234.5678])
    versus_torch(
        torch, device, lambda t: aa.round(t, decimals=2), lambda t: torch.round(t, decimals=2), data
    )
    versus_torch(
        torch, device, lambda t: t.round(decimals=-2), lambda t: t.round(decimals=-2), data
    )
    ints = aa.tensor([1, -2, 3], device=device)
    for name in ("floor", "ceil", "round", "trunc"):
        out = getattr(aa, name)(ints)
        assert out.dtype == np.int64 and to_numpy(out).tolist() == [1, -2, 3], name
    assert aa.sign(ints).dtype == np.int64 and to_numpy(aa.sign(ints)).tolist() == [1, -1, 1]


def test_rounding_ops_record_a_zero_gradient(device: str) -> None:
    x = aa.tensor([0.4, 1.6, -2.5], device=device, requires_grad=True)
    for name in ("floor", "ceil", "round", "trunc", "sign"):
        out = getattr(aa, name)(x)
        assert out.requires_grad, name
        (g,) = aa.autograd.grad(out.sum(), [x])
        assert not to_numpy(g).any()
    (g,) = aa.autograd.grad(aa.frac(x).sum(), [x])
    assert to_numpy(g).tolist() == [1.0, 1.0, 1.0]


def test_unary_integer_inputs_give_float32(device: str) -> None:
    x = aa.tensor([1, 2, 3], device=device)
    for name in ("log1p", "expm1", "tan", "atan", "sinh", "rsqrt", "erfinv"):
        assert getattr(aa, name)(x).dtype == np.float32, name


@pytest.mark.parametrize("name", sorted(set(UNARY) - {"erf", "reciprocal", "square"}))
def test_unary_bad_input_names_the_op(name: str) -> None:
    with pytest.raises(
        TypeError,
        match=rf"{name}\(\): argument 'input' must be Tensor, not "
        "list",
    ):
        getattr(aa, name)([0.5])
    with pytest.raises(RuntimeError, match=f"{name}: complex tensors are not supported"):
        getattr(aa, name)(aa.tensor([0.5 + 1j]))


def test_unary_errors_name_the_op() -> None:
    with pytest.raises(TypeError, match=r"log1p\(\): argument 'input' must be Tensor, not list"):
        aa.log1p([1.0])
    with pytest.raises(RuntimeError, match="\"frac_cpu\" not implemented for 'int64'"):
        aa.frac(aa.tensor([1, 2]))
    with pytest.raises(TypeError, match=r"round\(\): decimals must be an int"):
        aa.round(aa.tensor([1.0]), decimals=1.5)


def test_special_functions_without_scipy_agree_with_scipy() -> None:
    special = pytest.importorskip("scipy.special")
    from autograd_async.ops.special import _FALLBACKS

    x = np.concatenate([np.linspace(-0.999, 0.999, 41), [0.0, -1e-8, 0.5]])
    np.testing.assert_allclose(_FALLBACKS["erfinv"](x), special.erfinv(x), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(_FALLBACKS["erf"](x * 3), special.erf(x * 3), rtol=1e-14)
    edges = _FALLBACKS["erfinv"](np.array([1.0, -1.0, 2.0], dtype=np.float32))
    assert edges.dtype == np.float32
    assert edges[0] == np.inf and edges[1] == -np.inf and np.isnan(edges[2])


def test_erfinv_edges() -> None:
    out = to_numpy(aa.erfinv(aa.tensor([-1.0, 0.0, 1.0, 2.0], dtype=aa.float64)))
    assert out[0] == -math.inf and out[1] == 0 and out[2] == math.inf and math.isnan(out[3])


# ------------------------------------------------------------------ binary
BINARY = {
    "atan2": (aa.atan2, "atan2", None),
    "hypot": (aa.hypot, "hypot", None),
    "remainder": (aa.remainder, "remainder", None),
    "fmod": (aa.fmod, "fmod", None),
    "maximum": (aa.maximum, "maximum", None),
    "minimum": (aa.minimum, "minimum", None),
    "xlogy": (aa.xlogy, "xlogy", (0.2, 3.0)),
    "mod_operator": (lambda a, b: a % b, None, None),
}


@pytest.mark.parametrize("name", sorted(BINARY))
@pytest.mark.parametrize("shapes", [((3, 4), (3, 4)), ((2, 3, 4), (4,)), ((3, 1), (1, 5))])
def test_binary_matches_torch(torch, device: str, name: str, shapes) -> None:
    ours, theirs, domain = BINARY[name]
    theirs = getattr(torch, theirs) if theirs else (lambda a, b: a % b)
    a = _x(*shapes[0], seed=2) * 3
    b = _x(*shapes[1], seed=3, low=domain[0], high=domain[1]) if domain else _x(*shapes[1], seed=3)
    versus_torch(torch, device, ours, theirs, a, b)


@pytest.mark.parametrize("name", sorted(n for n in BINARY if n != "mod_operator"))
def test_binary_gradcheck(device: str, name: str) -> None:
    ours, _, domain = BINARY[name]
    b = _x(3, seed=5, low=domain[0], high=domain[1]) if domain else _x(3, seed=5)
    assert gradcheck(ours, _inputs(device, _x(2, 3, seed=4) * 3, b))


def test_binary_with_scalars(torch, device: str) -> None:
    a = _x(3, 4) * 3
    for name in ("remainder", "fmod", "xlogy"):
        versus_torch(
            torch,
            device,
            lambda t, n=name: getattr(aa, n)(t, 1.5),
            lambda t, n=name: getattr(torch, n)(t, 1.5),
            a,
        )
    # 5.0 % t: PyTorch has no derivative for a scalar dividend; ours is -floor(5 / t)
    t = aa.tensor(a, device=device, requires_grad=True)
    out = 5.0 % t
    np.testing.assert_allclose(to_numpy(out), (5.0 % torch.tensor(a)).numpy())
    (g,) = aa.autograd.grad(out.sum(), [t])
    np.testing.assert_allclose(to_numpy(g), -np.floor(5.0 / a))


def test_maximum_ties_share_the_gradient(torch, device: str) -> None:
    a = np.array([1.0, 2.0, 3.0])
    versus_torch(torch, device, aa.maximum, torch.maximum, a, a.copy())
    versus_torch(torch, device, aa.minimum, torch.minimum, a, np.array([0.0, 2.0, 4.0]))


@pytest.mark.parametrize("weight", ["scalar", "tensor"])
def test_lerp(torch, device: str, weight: str) -> None:
    start, end = _x(3, 4, seed=6), _x(3, 4, seed=7)
    if weight == "scalar":
        versus_torch(
            torch,
            device,
            lambda s, e: aa.lerp(s, e, 0.3),
            lambda s, e: torch.lerp(s, e, 0.3),
            start,
            end,
        )
        assert gradcheck(lambda s, e: s.lerp(e, 0.3), _inputs(device, start, end))
    else:
        w = _x(4, seed=8)
        versus_torch(torch, device, aa.lerp, torch.lerp, start, end, w)
        assert gradcheck(aa.lerp, _inputs(device, start, end, w))


def test_binary_errors() -> None:
    with pytest.raises(
        RuntimeError, match="lerp: expected dtype float32 for `end` but got dtype float64"
    ):
        aa.lerp(aa.zeros(2), aa.zeros(2, dtype=aa.float64), 0.5)
    with pytest.raises(
        TypeError,
        match=r"atan2\(\): argument 'other' \(position 2\) must be "
        "Tensor, not float",
    ):
        aa.atan2(aa.zeros(2), 1.5)
    with pytest.raises(TypeError, match=r"fmod\(\): expected a Tensor or a number, got str"):
        aa.fmod(aa.zeros(2), "x")
    with pytest.raises(TypeError, match=r"remainder\(\): expected at least one Tensor"):
        aa.remainder(1.0, 2.0)


def test_xlogy_is_zero_where_x_is_zero(torch) -> None:
    x = aa.tensor([0.0, 0.0, 2.0], dtype=aa.float64, requires_grad=True)
    y = aa.tensor([0.0, 3.0, 3.0], dtype=aa.float64, requires_grad=True)
    out = aa.xlogy(x, y)
    assert to_numpy(out).tolist() == [0.0, 0.0, 2 * math.log(3.0)]
    gx, _ = aa.autograd.grad(out.sum(), [x, y])
    tx = torch.tensor([0.0, 0.0, 2.0], dtype=torch.float64, requires_grad=True)
    ty = torch.tensor([0.0, 3.0, 3.0], dtype=torch.float64, requires_grad=True)
    (rx,) = torch.autograd.grad(torch.xlogy(tx, ty).sum(), [tx])
    np.testing.assert_allclose(to_numpy(gx), rx.numpy())


# ------------------------------------------------------------------- clamp
@pytest.mark.parametrize("bounds", ["both", "min", "max", "crossed"])
def test_clamp_with_tensor_bounds(torch, device: str, bounds: str) -> None:
    x = np.array([[-2.0, -0.5, 0.0, 0.5, 2.0, 1.0]])
    lo = np.array([-1.0, -0.5, 0.1, -1.0, -1.0, 1.5])
    hi = np.array([1.0, 1.0, 0.5, 0.5, 1.0, 0.5])
    if bounds == "both":
        versus_torch(torch, device, aa.clamp, torch.clamp, x, lo, hi)
    elif bounds == "min":
        versus_torch(
            torch,
            device,
            lambda a, b: aa.clamp(a, min=b),
            lambda a, b: torch.clamp(a, min=b),
            x,
            lo,
        )
    elif bounds == "max":
        versus_torch(torch, device, lambda a, b: a.clip(max=b), lambda a, b: a.clip(max=b), x, hi)
    else:  # min above max: the output is max, which takes the gradient
        versus_torch(torch, device, aa.clamp, torch.clamp, x, hi, lo)


def test_clamp_gradcheck(device: str) -> None:
    x, lo, hi = _inputs(device, _x(2, 3, seed=9), _x(3, seed=10) - 1, _x(2, 1, seed=11) + 1)
    assert gradcheck(aa.clamp, (x, lo, hi))
    assert gradcheck(lambda a: a.clamp(-0.3, 0.4), (x,))


def test_clamp_errors() -> None:
    with pytest.raises(
        RuntimeError, match="torch.clamp: At least one of 'min' or 'max' must not be None"
    ):
        aa.clamp(aa.zeros(2))


# ------------------------------------------------------- prod and the scans
ZEROS = {
    "none": np.array([[1.5, -2.0, 0.5], [3.0, 0.7, -1.2]]),
    "one": np.array([[1.5, 0.0, 0.5], [3.0, 0.7, -1.2]]),
    "several": np.array([[0.0, 2.0, 0.0], [3.0, 0.0, -1.2]]),
    "all": np.zeros((2, 3)),
}


@pytest.mark.parametrize("zeros", sorted(ZEROS))
@pytest.mark.parametrize("dim", [None, 0, 1, -1])
def test_prod_matches_torch(torch, device: str, zeros: str, dim) -> None:
    data = ZEROS[zeros]
    if dim is None:
        versus_torch(torch, device, aa.prod, torch.prod, data)
    else:
        versus_torch(torch, device, lambda t: t.prod(dim), lambda t: t.prod(dim), data)
        versus_torch(
            torch,
            device,
            lambda t: aa.prod(t, dim, keepdim=True),
            lambda t: torch.prod(t, dim, keepdim=True),
            data,
        )


@pytest.mark.parametrize("zeros", sorted(ZEROS))
@pytest.mark.parametrize("dim", [0, 1])
def test_cumprod_matches_torch(torch, device: str, zeros: str, dim: int) -> None:
    data = np.concatenate([ZEROS[zeros], ZEROS[zeros][:, ::-1]], axis=1)
    versus_torch(torch, device, lambda t: aa.cumprod(t, dim), lambda t: torch.cumprod(t, dim), data)


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_cumsum_matches_torch(torch, device: str, dim: int) -> None:
    versus_torch(torch, device, lambda t: t.cumsum(dim), lambda t: t.cumsum(dim), _x(3, 4))


@pytest.mark.parametrize("zeros", ["none", "one", "several"])
def test_products_gradcheck_and_second_order(device: str, zeros: str) -> None:
    (x,) = _inputs(device, ZEROS[zeros])
    for fn in (aa.prod, lambda t: t.prod(1), lambda t: t.cumprod(1), lambda t: t.cumsum(0)):
        assert gradcheck(fn, (x,))
        assert gradgradcheck(fn, (x,))


def test_scan_dtypes_and_errors() -> None:
    ints = aa.tensor([[1, 2], [3, 4]], dtype=aa.int32)
    assert aa.cumsum(ints, 0).dtype == np.int64
    assert aa.prod(ints).dtype == np.int64 and aa.prod(ints).item() == 24
    assert aa.cumsum(ints, 1, dtype=aa.float64).dtype == np.float64
    with pytest.raises(TypeError, match=r"cumsum\(\) missing required argument 'dim'"):
        aa.cumsum(ints)
    with pytest.raises(IndexError, match="Dimension out of range"):
        aa.cumprod(ints, 2)
    with pytest.raises(TypeError, match=r"prod\(\): argument 'input' must be Tensor"):
        aa.prod([1, 2])


# -------------------------------------------------------------- reductions
REDUCTIONS = {
    "var_corr0": (lambda m, t: m.var(t, 1, correction=0), None),
    "var_unbiased": (lambda m, t: m.var(t, 0, unbiased=True, keepdim=True), None),
    "std_corr2": (lambda m, t: m.std(t, (0, 1), correction=2), None),
    "var_mean": (lambda m, t: _pair(m.var_mean(t, 1, correction=0)), None),
    "std_mean": (lambda m, t: _pair(m.std_mean(t, keepdim=True)), None),
    "amax": (lambda m, t: m.amax(t, 1), np.array([[1.0, 3.0, 3.0], [2.0, 2.0, 2.0]])),
    "amin_all": (lambda m, t: m.amin(t), np.array([[1.0, 0.0, 3.0], [0.0, 2.0, 0.0]])),
    "amax_dims": (lambda m, t: m.amax(t, (0, 1), keepdim=True), np.array([[3.0, 3.0, 1.0]])),
    "logsumexp": (lambda m, t: m.logsumexp(t, 1), None),
    "logsumexp_dims": (lambda m, t: m.logsumexp(t, (0, 1), keepdim=True), None),
}


def _pair(pair):
    first, second = pair
    return first * 2 + second


@pytest.mark.parametrize("name", sorted(REDUCTIONS))
def test_reductions_match_torch(torch, device: str, name: str) -> None:
    fn, data = REDUCTIONS[name]
    data = _x(2, 3, seed=12) if data is None else data
    versus_torch(torch, device, lambda t: fn(aa, t), lambda t: fn(torch, t), data)


def test_var_std_gradcheck(device: str) -> None:
    (x,) = _inputs(device, _x(3, 4, seed=13))
    assert gradcheck(lambda t: aa.var_mean(t, 1, correction=0), (x,))
    assert gradcheck(lambda t: aa.std_mean(t, 0), (x,))
    assert gradcheck(lambda t: t.logsumexp(1), (x,))
    assert gradcheck(lambda t: t.amax(0), (x,))


def test_all_any_isclose(torch, device: str) -> None:
    data = np.array([[1.0, 0.0, 2.0], [3.0, 4.0, 5.0]])
    x, ref = aa.tensor(data, device=device), torch.tensor(data)
    for name in ("all", "any"):
        for kwargs in ({}, {"dim": 1}, {"dim": 0, "keepdim": True}, {"dim": (0, 1)}):
            out = getattr(aa, name)(x, **kwargs)
            expected = getattr(torch, name)(ref, **kwargs)
            assert out.dtype == np.bool_ and out.device == aa.device(device)
            assert to_numpy(out).tolist() == expected.tolist(), (name, kwargs)
        assert to_numpy(getattr(x, name)(1)).tolist() == getattr(ref, name)(1).tolist()
    other = data + np.array([1e-9, 1e-3, 0.0])
    close = aa.isclose(x, aa.tensor(other, device=device))
    assert to_numpy(close).tolist() == torch.isclose(ref, torch.tensor(other)).tolist()
    assert not aa.allclose(x, aa.tensor(other, device=device))
    assert aa.equal(x, aa.tensor(data, device=device))
    nan = aa.tensor([math.nan, math.inf, 1.0], device=device)
    assert to_numpy(aa.isnan(nan)).tolist() == [True, False, False]
    assert to_numpy(aa.isinf(nan)).tolist() == [False, True, False]
    assert to_numpy(aa.isfinite(nan)).tolist() == [False, False, True]
    assert to_numpy(aa.isclose(nan, nan, equal_nan=True)).tolist() == [True, True, True]


def test_reduction_errors() -> None:
    with pytest.raises(IndexError, match="Dimension out of range"):
        aa.all(aa.zeros(2, 3), 2)
    with pytest.raises(RuntimeError, match="isclose expects both tensors to have the same dtype"):
        aa.isclose(aa.zeros(2), aa.zeros(2, dtype=aa.float64))
    with pytest.raises(RuntimeError, match="var/std: pass either unbiased or correction"):
        aa.var_mean(aa.zeros(2), 0, True, correction=1)


# ---------------------------------------------------------------- products
PRODUCTS = {
    "bmm": (aa.bmm, "bmm", [(2, 3, 4), (2, 4, 5)], {}),
    "mv": (aa.mv, "mv", [(3, 4), (4,)], {}),
    "outer": (aa.outer, "outer", [(3,), (4,)], {}),
    "dot": (aa.dot, "dot", [(4,), (4,)], {}),
    "addmm": (aa.addmm, "addmm", [(3, 5), (3, 4), (4, 5)], {}),
    "addmm_scaled": (aa.addmm, "addmm", [(5,), (3, 4), (4, 5)], {"beta": 0.5, "alpha": 2.0}),
    "addmm_beta0": (aa.addmm, "addmm", [(3, 5), (3, 4), (4, 5)], {"beta": 0}),
    "baddbmm": (aa.baddbmm, "baddbmm", [(2, 3, 5), (2, 3, 4), (2, 4, 5)], {"alpha": -1.5}),
}


@pytest.mark.parametrize("name", sorted(PRODUCTS))
def test_products_match_torch(torch, device: str, name: str) -> None:
    ours, theirs, shapes, kwargs = PRODUCTS[name]
    arrays = [_x(*s, seed=i) for i, s in enumerate(shapes)]
    versus_torch(
        torch,
        device,
        lambda *t: ours(*t, **kwargs),
        lambda *t: getattr(torch, theirs)(*t, **kwargs),
        *arrays,
    )
    assert gradcheck(lambda *t: ours(*t, **kwargs), _inputs(device, *arrays))


def test_addmm_beta0_ignores_nan_input(device: str) -> None:
    nan = aa.full((2, 2), math.nan, device=device)
    out = aa.addmm(nan, aa.ones(2, 3, device=device), aa.ones(3, 2, device=device), beta=0)
    assert to_numpy(out).tolist() == [[3.0, 3.0], [3.0, 3.0]]


EINSUM = {
    "matmul": ("ij,jk->ik", [(3, 4), (4, 5)]),
    "batch": ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    "implicit": ("ij,jk", [(3, 4), (4, 5)]),
    "ellipsis": ("...ij,...jk->...ik", [(2, 3, 4), (2, 4, 5)]),
    "ellipsis_broadcast_rank": ("...ij,jk", [(2, 3, 4), (4, 5)]),
    "sum_all": ("ij->", [(3, 4)]),
    "transpose": ("ij->ji", [(3, 4)]),
    "outer": ("i,j->ij", [(3,), (4,)]),
    "summed_in_one": ("ij,kl->ik", [(3, 4), (5, 2)]),
    "three": ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 2)]),
    "bilinear": ("bn,anm,bm->ba", [(2, 3), (4, 3, 5), (2, 5)]),
    "trace": ("ii->", [(3, 3)]),
    "diagonal": ("ii->i", [(3, 3)]),
    "batch_diagonal_times": ("bii,bj->bij", [(2, 3, 3), (2, 4)]),
    "repeat_and_sum_inside": ("iij,k->k", [(2, 2, 3), (4,)]),
}


@pytest.mark.parametrize("name", sorted(EINSUM))
def test_einsum_matches_torch(torch, device: str, name: str) -> None:
    equation, shapes = EINSUM[name]
    arrays = [_x(*s, seed=i) for i, s in enumerate(shapes)]
    versus_torch(
        torch,
        device,
        lambda *t: aa.einsum(equation, *t),
        lambda *t: torch.einsum(equation, *t),
        *arrays,
    )
    assert gradcheck(lambda *t: aa.einsum(equation, list(t)), _inputs(device, *arrays))


def test_einsum_second_order(device: str) -> None:
    a, b = _inputs(device, _x(2, 3), _x(3, 2, seed=1))
    assert gradgradcheck(lambda x, y: aa.einsum("ij,jk->ik", x, y).tanh(), (a, b))
    (square,) = _inputs(device, _x(3, 3, seed=2))
    assert gradgradcheck(lambda x: aa.einsum("ii,ij->j", x, x * x), (square,))


def test_product_errors() -> None:
    with pytest.raises(RuntimeError, match="bmm: batch1 must be a 3D tensor, got 2D"):
        aa.bmm(aa.zeros(2, 3), aa.zeros(2, 3, 4))
    with pytest.raises(
        RuntimeError,
        match=r"Expected size for first two dimensions of batch2 "
        r"tensor to be: \[2, 4\] but got: \[2, 5\].",
    ):
        aa.bmm(aa.zeros(2, 3, 4), aa.zeros(2, 5, 4))
    with pytest.raises(
        RuntimeError,
        match=r"size mismatch, got input \(3\), mat \(3x4\), vec "
        r"\(5\)",
    ):
        aa.mv(aa.zeros(3, 4), aa.zeros(5))
    with pytest.raises(RuntimeError, match="outer: expected 1D tensors, but got 2D and 1D"):
        aa.outer(aa.zeros(2, 2), aa.zeros(2))
    with pytest.raises(RuntimeError, match="addmm: mat1 and mat2 must be 2D matrices"):
        aa.addmm(aa.zeros(2), aa.zeros(2), aa.zeros(2))
    with pytest.raises(RuntimeError, match="subscript 'j' has size 4 and size 5 in operand 1"):
        aa.einsum("ij,jk", aa.zeros(3, 4), aa.zeros(5, 2))
    with pytest.raises(RuntimeError, match="does not match the number of dimensions"):
        aa.einsum("ijk", aa.zeros(3, 4))
    with pytest.raises(RuntimeError, match="more operands were provided"):
        aa.einsum("ij", aa.zeros(3, 4), aa.zeros(3, 4))
    with pytest.raises(RuntimeError, match="bmm: expected both operands to have the same dtype"):
        aa.bmm(aa.zeros(1, 2, 2), aa.zeros(1, 2, 2, dtype=aa.float64))


# ------------------------------------------------------------------- norms
NORMS = {
    "vector_2": (lambda m, t: m.linalg.vector_norm(t), None),
    "vector_1_dim": (lambda m, t: m.linalg.vector_norm(t, 1, dim=1), None),
    "vector_3": (lambda m, t: m.linalg.vector_norm(t, 3, dim=(0, 1), keepdim=True), None),
    "vector_half": (lambda m, t: m.linalg.vector_norm(t, 0.5, dim=0), None),
    "vector_inf": (lambda m, t: m.linalg.vector_norm(t, math.inf, dim=1), None),
    "vector_-inf": (lambda m, t: m.linalg.vector_norm(t, -math.inf), None),
    "vector_0": (lambda m, t: m.linalg.vector_norm(t, 0, dim=1), None),
    "vector_inf_ties": (
        lambda m, t: m.linalg.vector_norm(t, math.inf),
        np.array([[1.0, -3.0], [3.0, 2.0]]),
    ),
    "vector_2_zero_row": (
        lambda m, t: m.linalg.vector_norm(t, dim=1),
        np.array([[0.0, 0.0], [3.0, 4.0]]),
    ),
    "matrix_fro": (lambda m, t: m.linalg.matrix_norm(t), None),
    "matrix_1": (lambda m, t: m.linalg.matrix_norm(t, 1), None),
    "matrix_-1": (lambda m, t: m.linalg.matrix_norm(t, -1, keepdim=True), None),
    "matrix_inf": (lambda m, t: m.linalg.matrix_norm(t, math.inf, dim=(1, 0)), None),
    "matrix_-inf": (lambda m, t: m.linalg.matrix_norm(t, -math.inf), None),
    "matrix_nuc": (lambda m, t: m.linalg.matrix_norm(t, "nuc"), None),
    "matrix_2": (lambda m, t: m.linalg.matrix_norm(t, 2, keepdim=True), None),
    "matrix_-2_dims": (lambda m, t: m.linalg.matrix_norm(t, -2, dim=(1, 0)), None),
    "svdvals": (lambda m, t: m.linalg.svdvals(t), None),
    "norm_nuc": (lambda m, t: t.norm("nuc"), None),
    "linalg_norm": (lambda m, t: m.linalg.norm(t), None),
    "linalg_norm_ord": (lambda m, t: m.linalg.norm(t, 1), None),
    "linalg_norm_dim": (lambda m, t: m.linalg.norm(t, 3, dim=1), None),
    "linalg_norm_matrix": (lambda m, t: m.linalg.norm(t, "fro", dim=(0, 1)), None),
    "norm": (lambda m, t: m.norm(t), None),
    "norm_p_dim": (lambda m, t: t.norm(1, dim=0, keepdim=True), None),
    "norm_fro_dims": (lambda m, t: t.norm("fro", dim=(0, 1)), None),
}


@pytest.mark.parametrize("name", sorted(NORMS))
def test_norms_match_torch(torch, device: str, name: str) -> None:
    fn, data = NORMS[name]
    data = _x(3, 4, seed=14) if data is None else data
    versus_torch(torch, device, lambda t: fn(aa, t), lambda t: fn(torch, t), data)


def test_norms_gradcheck(device: str) -> None:
    (x,) = _inputs(device, _x(3, 4, seed=15))
    for ord in (2, 1, 3, math.inf):
        assert gradcheck(lambda t, o=ord: aa.linalg.vector_norm(t, o, dim=1), (x,))
    for ord in ("fro", 1, math.inf, "nuc", 2, -2):
        assert gradcheck(lambda t, o=ord: aa.linalg.matrix_norm(t, o), (x,))
    batch = aa.tensor(_x(2, 3, 4, seed=16), device=device, requires_grad=True)
    assert gradcheck(aa.linalg.svdvals, (batch,))
    assert gradgradcheck(lambda t: aa.linalg.vector_norm(t, 3, dim=0), (x,))


def test_norm_errors() -> None:
    with pytest.raises(
        RuntimeError,
        match="linalg.vector_norm: Expected a floating point or complex tensor as input. Got Long",
    ):
        aa.linalg.vector_norm(aa.tensor([1, 2]))
    with pytest.raises(
        RuntimeError,
        match="linalg.matrix_norm: The input tensor A must have at least 2 dimensions.",
    ):
        aa.linalg.matrix_norm(aa.zeros(3))
    with pytest.raises(RuntimeError, match="linalg.matrix_norm: Order 3 not supported."):
        aa.linalg.matrix_norm(aa.zeros(3, 3), 3)
    x = aa.randn(3, 3, dtype=aa.float64, requires_grad=True)
    # The nuclear norm's gradient U Vh is itself differentiable (create_graph=True).
    assert aa.autograd.gradgradcheck(lambda v: aa.linalg.matrix_norm(v, "nuc"), (x,))
    with pytest.raises(
        RuntimeError,
        match="linalg.norm: If dim is not specified but ord is, the "
        "input must be 1D or 2D. Got 3D.",
    ):
        aa.linalg.norm(aa.zeros(2, 2, 2), 1)
    with pytest.raises(RuntimeError, match="cannot compute the inf norm on an empty tensor"):
        aa.linalg.vector_norm(aa.zeros(0), math.inf)


# ------------------------------------------------------------ second order
SECOND_ORDER = {
    "atan2": (lambda a, b: aa.atan2(a, b), 2),
    "hypot": (lambda a, b: aa.hypot(a, b), 2),
    "lerp": (lambda a, b: aa.lerp(a, b, b.sigmoid()), 2),
    "xlogy": (lambda a, b: aa.xlogy(a, b.exp()), 2),
    "remainder": (lambda a, b: aa.remainder(a * 3, b.exp()) * a, 2),
    "clamp": (lambda a, b: aa.clamp(a * a, b - 1, b + 1) * a, 2),
    "cumsum": (lambda a: a.cumsum(1) ** 2, 1),
    "vector_norm_1": (lambda a: aa.linalg.vector_norm(a, 1, dim=1) * a.sum(), 1),
    "vector_norm_2": (lambda a: aa.linalg.vector_norm(a, dim=0), 1),
    "vector_norm_inf": (lambda a: aa.linalg.vector_norm(a, math.inf) * a, 1),
    "matrix_norm_1": (lambda a: aa.linalg.matrix_norm(a, 1) * a, 1),
    "bmm": (lambda a, b: aa.bmm(a.reshape(1, 2, 3), b.reshape(1, 3, 2)).tanh(), 2),
    "addmm": (lambda a, b: aa.addmm(a[:, :2], a, b.reshape(3, 2), beta=0.5).tanh(), 2),
}


@pytest.mark.parametrize("name", sorted(SECOND_ORDER))
def test_second_order(device: str, name: str) -> None:
    fn, arity = SECOND_ORDER[name]
    arrays = [_x(2, 3, seed=20) + 0.1, _x(2, 3, seed=21) * 0.5][:arity]
    assert gradgradcheck(fn, _inputs(device, *arrays))
