"""Python numbers as operands: reflected operators, scalars off the graph, `2 / x` as reciprocal
times 2, and inf/nan from x / 0 or log(0) without NumPy warnings, all as in PyTorch.

The graph shapes (`next_functions`) are pinned in tests/core/test_grad_fn.py; here are the values,
gradients, dtypes and sequence numbers.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from gradients import check_op, to_numpy

import autograd_async as aa

X0 = np.array([0.5, 1.5, -2.0, 3.0])

# Each expression of one tensor, with its value and derivative in NumPy (float64).
EXPRESSIONS = {
    "radd": (lambda x: 1 + x, lambda a: 1 + a, lambda a: np.ones_like(a)),
    "rmul": (lambda x: 2 * x, lambda a: 2 * a, lambda a: np.full_like(a, 2.0)),
    "rsub": (lambda x: 2 - x, lambda a: 2 - a, lambda a: -np.ones_like(a)),
    "rsub_fn": (lambda x: aa.rsub(x, 2), lambda a: 2 - a, lambda a: -np.ones_like(a)),
    "pow_2": (lambda x: x**2, lambda a: a**2, lambda a: 2 * a),
    "pow_3": (lambda x: x**3, lambda a: a**3, lambda a: 3 * a**2),
    "pow_0": (lambda x: x**0, lambda a: a**0, lambda a: np.zeros_like(a)),
    "pow_neg": (lambda x: x**-1.5, lambda a: np.abs(a) ** -1.5, None),
    "rpow": (lambda x: 2**x, lambda a: 2**a, lambda a: 2**a * np.log(2)),
    "rpow_float": (lambda x: 0.5**x, lambda a: 0.5**a, lambda a: 0.5**a * np.log(0.5)),
    "rdiv": (lambda x: 2 / x, lambda a: 2 / a, lambda a: -2 / a**2),
    "rdiv_int": (lambda x: 3 / x, lambda a: 3 / a, lambda a: -3 / a**2),
    "reciprocal": (lambda x: x.reciprocal(), lambda a: 1 / a, lambda a: -1 / a**2),
    "reciprocal_fn": (lambda x: aa.reciprocal(x), lambda a: 1 / a, lambda a: -1 / a**2),
}


def _apply(lib, name, x):
    fn = EXPRESSIONS[name][0]
    if name == "reciprocal_fn":
        return lib.reciprocal(x)
    if name == "rsub_fn":
        return lib.rsub(x, 2)
    if name == "pow_neg":
        return fn(x.abs())
    return fn(x)


def _value_and_grad(lib, name):
    x = lib.tensor(X0, dtype=lib.float64, requires_grad=True)
    y = _apply(lib, name, x)
    y.sum().backward()
    return y, x.grad


@pytest.mark.parametrize("name", EXPRESSIONS)
def test_value_and_gradient(name):
    _, value, slope = EXPRESSIONS[name]
    y, g = _value_and_grad(aa, name)
    np.testing.assert_allclose(to_numpy(y), value(X0), rtol=1e-12)
    if slope is None:
        slope = lambda a: -1.5 * np.abs(a) ** -2.5 * np.sign(a)  # noqa: E731
    np.testing.assert_allclose(to_numpy(g), slope(X0), rtol=1e-12)


@pytest.mark.parametrize("name", EXPRESSIONS)
def test_value_and_gradient_are_pytorchs(torch, name):
    ours, theirs = _value_and_grad(aa, name), _value_and_grad(torch, name)
    for a, t in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(to_numpy(a), t.detach().numpy(), rtol=1e-14)


@pytest.mark.parametrize("name", ["pow_3", "pow_neg", "rpow", "rdiv", "reciprocal"])
def test_finite_differences_and_second_derivative(name):
    fn, value, _ = EXPRESSIONS[name]
    if name == "pow_neg":
        fn, value = (lambda x: x.abs() ** -1.5), (lambda a: np.abs(a) ** -1.5)
    check_op(fn, value, X0)
    x = aa.tensor(X0, dtype=aa.float64, requires_grad=True)
    (g,) = aa.autograd.grad(fn(x).sum(), x, create_graph=True)
    (gg,) = aa.autograd.grad(g.sum(), x)
    eps = 1e-6
    numeric = (_slope(fn, X0 + eps) - _slope(fn, X0 - eps)) / (2 * eps)
    np.testing.assert_allclose(to_numpy(gg), numeric, rtol=1e-5, atol=1e-7)


def _slope(fn, a):
    x = aa.tensor(a, dtype=aa.float64, requires_grad=True)
    fn(x).sum().backward()
    return to_numpy(x.grad)


def test_second_derivatives_are_pytorchs(torch):
    def run(lib):
        x = lib.tensor(X0, dtype=lib.float64, requires_grad=True)
        y = (2 / x + 3 - x + 2**x + x**3 * 2).sum()
        (g,) = lib.autograd.grad(y, x, create_graph=True)
        (gg,) = lib.autograd.grad(g.sum(), x)
        return g, gg

    for a, t in zip(run(aa), run(torch), strict=True):
        np.testing.assert_allclose(to_numpy(a), t.detach().numpy(), rtol=1e-12)


def _rdiv_sequence(lib):
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    y = 2 / x
    mul = y.grad_fn
    recip = mul.next_functions[0][0]
    return mul.name(), recip.name(), mul._sequence_nr() - recip._sequence_nr()


def test_rdiv_is_reciprocal_then_mul_with_two_sequence_numbers():
    assert _rdiv_sequence(aa) == ("MulBackward0", "ReciprocalBackward0", 1)


def test_rdiv_is_reciprocal_then_mul_in_pytorch(torch):
    assert _rdiv_sequence(torch) == ("MulBackward0", "ReciprocalBackward0", 1)


def _dtypes(lib):
    i = lib.tensor([1, 2, 4])
    f = lib.tensor([1.0, 2.0], dtype=lib.float32)
    h = lib.tensor([1.0, 2.0], dtype=lib.float64)
    results = [
        i.reciprocal(),
        2 / i,
        2.5 / i,
        2**i,
        2.0**i,
        i**2,
        1 + i,
        2 - i,
        2 * i,
        1.5 * i,
        f.reciprocal(),
        2 / f,
        2**f,
        f**2,
        2 - f,
        h.reciprocal(),
        2 / h,
        2**h,
        2 - h,
    ]
    return [str(r.dtype).removeprefix("torch.") for r in results], [r.tolist() for r in results]


def test_result_dtypes():
    names, _ = _dtypes(aa)
    assert names == [
        "float32",
        "float32",
        "float32",
        "int64",
        "float32",
        "int64",
        "int64",
        "int64",
        "int64",
        "float32",
        "float32",
        "float32",
        "float32",
        "float32",
        "float32",
        "float64",
        "float64",
        "float64",
        "float64",
    ]


def test_result_dtypes_and_values_are_pytorchs(torch):
    ours, theirs = _dtypes(aa), _dtypes(torch)
    assert ours[0] == theirs[0]
    for a, t in zip(ours[1], theirs[1], strict=True):
        np.testing.assert_allclose(a, t, rtol=1e-6)


def test_scalar_operands_are_not_inputs_of_the_node():
    x = aa.tensor([1.0, 2.0], requires_grad=True)
    for y in (2 - x, x**2, 2**x):
        assert len(y.grad_fn.next_functions) == 1
    y = x**3
    y.sum().backward()
    assert x.grad.tolist() == [3.0, 12.0]


def test_reflected_operators_refuse_other_types():
    x = aa.tensor([1.0, 2.0])
    for op in (lambda: "a" + x, lambda: [1] * x, lambda: None / x, lambda: "2" ** x):
        with pytest.raises(TypeError):
            op()


# -------------------------------------------------------------- inf and nan, silently
ZERO = np.array([0.0, 1.0, -1.0, 4.0])

SINGULAR = {
    "div_by_zero": lambda lib, x: x / lib.zeros(4, dtype=lib.float64),
    "div_by_scalar_zero": lambda lib, x: x / 0,
    "zero_over_zero": lambda lib, x: x / x,
    "zero_over_zero_scalar": lambda lib, x: (x - x.detach()) / 0,
    "rdiv": lambda lib, x: 1 / x,
    "reciprocal": lambda lib, x: x.reciprocal(),
    "log": lambda lib, x: x.log(),
    "sqrt": lambda lib, x: x.sqrt(),
    "pow_neg": lambda lib, x: x**-1,
    "pow_half": lambda lib, x: x**0.5,
    "pow_tensor": lambda lib, x: x ** (x * 0 + 0.5),
    "rpow_zero": lambda lib, x: 0**x,
    "rpow_negative_base": lambda lib, x: (-2.0) ** x,
    "logsumexp_all_neg_inf": lambda lib, x: (x * 0 - float("inf")).logsumexp(0),
    "std_of_constant": lambda lib, x: (x * 0).std(),
    "max_of_nan": lambda lib, x: (x.log()).amax(0),
    "int_div_by_zero": lambda lib, x: lib.tensor([0, 1, 0]) / lib.tensor([0, 0, 1]),
}


def _singular(lib, name):
    x = lib.tensor(ZERO, dtype=lib.float64, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        y = SINGULAR[name](lib, x)
        if y.requires_grad:
            y.sum().backward()
    grad = None if x.grad is None else to_numpy(x.grad.detach())
    return to_numpy(y.detach()), grad


@pytest.mark.parametrize("name", SINGULAR)
def test_inf_and_nan_without_warnings(name):
    value, grad = _singular(aa, name)  # warnings are errors inside
    if name in ("div_by_zero", "div_by_scalar_zero", "rdiv", "reciprocal", "log", "pow_neg"):
        assert not np.isfinite(value[0])
    if grad is not None and name in ("rdiv", "reciprocal", "log", "sqrt", "pow_neg", "pow_half"):
        assert not np.isfinite(grad[0])


@pytest.mark.parametrize("name", SINGULAR)
def test_inf_and_nan_are_pytorchs(torch, name):
    ours, theirs = _singular(aa, name), _singular(torch, name)
    for a, t in zip(ours, theirs, strict=True):
        if t is None:
            assert a is None
            continue
        t = t.detach().numpy() if hasattr(t, "detach") else t
        np.testing.assert_allclose(a, t, rtol=1e-12, equal_nan=True)
