"""autograd_async.special against torch.special: values, gradients, errors, finite differences."""

from __future__ import annotations

import numpy as np
import pytest

import autograd_async as aa
from tests.gradients import check_op, to_numpy

# name -> sample points inside the domain (away from poles, where float32 agrees)
UNARY = {
    "erf": [-2.0, -0.3, 0.0, 0.7, 3.0],
    "erfc": [-2.0, -0.3, 0.0, 0.7, 3.0],
    "erfcx": [-1.0, 0.0, 0.5, 2.0, 10.0],
    "erfinv": [-0.9, -0.2, 0.0, 0.4, 0.95],
    "expit": [-3.0, 0.0, 2.0],
    "logit": [0.1, 0.4, 0.5, 0.93],
    "log_ndtr": [-5.0, -1.0, 0.0, 2.0],
    "ndtr": [-3.0, -0.5, 0.0, 1.5],
    "ndtri": [0.01, 0.3, 0.5, 0.97],
    "gammaln": [0.3, 1.0, 2.5, 7.0, -0.5],
    "digamma": [0.3, 1.0, 2.5, 7.0, -0.5],
    "psi": [0.3, 2.5],
    "i0": [-2.0, 0.0, 0.5, 3.0],
    "i0e": [-2.0, -0.1, 0.5, 3.0],
    "i1": [-2.0, 0.0, 0.5, 3.0],
    "i1e": [-2.0, 0.0, 0.5, 3.0],
    "entr": [0.0, 0.2, 1.0, 3.0],
    "sinc": [-1.5, 0.0, 0.25, 2.3],
    "round": [-1.5, 0.5, 2.5, 0.4],
    "log1p": [-0.5, 0.0, 2.0],
    "expm1": [-0.5, 0.0, 2.0],
    "exp2": [-2.0, 0.0, 1.5],
    "bessel_j0": [0.0, 1.0, 5.0],
    "bessel_j1": [0.0, 1.0, 5.0],
    "bessel_y0": [0.5, 1.0, 5.0],
    "bessel_y1": [0.5, 1.0, 5.0],
    "modified_bessel_i0": [0.0, 1.0, 3.0],
    "modified_bessel_i1": [0.0, 1.0, 3.0],
    "modified_bessel_k0": [0.5, 1.0, 3.0],
    "modified_bessel_k1": [0.5, 1.0, 3.0],
    "scaled_modified_bessel_k0": [0.5, 1.0, 3.0],
    "scaled_modified_bessel_k1": [0.5, 1.0, 3.0],
    "spherical_bessel_j0": [0.0, 1.0, 4.0],
    "airy_ai": [-2.0, 0.0, 1.0],
}
NO_GRADIENT = {n for n in UNARY if "bessel" in n or n == "airy_ai"}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_values_and_gradients_match_torch(torch, name, dtype, device):
    values = np.array(UNARY[name], dtype=dtype)
    ours_in = aa.tensor(values, device=device, requires_grad=True)
    theirs_in = torch.tensor(values, requires_grad=True)
    ours = getattr(aa.special, name)(ours_in)
    theirs = getattr(torch.special, name)(theirs_in)
    assert str(ours.dtype) == dtype
    # PyTorch's own Bessel series are good to about 1e-8 in float64; SciPy's (Cephes) to 1e-15.
    tol = 1e-5 if dtype == "float32" else 1e-7 if name in NO_GRADIENT else 1e-11
    np.testing.assert_allclose(to_numpy(ours), theirs.detach().numpy(), rtol=tol, atol=tol)
    assert ours.requires_grad == theirs.requires_grad
    if name in NO_GRADIENT:
        assert ours.grad_fn is None
        return
    weights = np.linspace(0.5, 1.5, len(values)).astype(dtype)
    (ours * aa.tensor(weights, device=device)).sum().backward()
    (theirs * torch.tensor(weights)).sum().backward()
    # PyTorch's trigamma (the slope of digamma) is good to about 1e-9 in float64.
    np.testing.assert_allclose(
        to_numpy(ours_in.grad), theirs_in.grad.numpy(), rtol=max(tol * 10, 1e-8), atol=tol
    )


BINARY = {
    "xlogy": ([0.0, 1.0, 2.5, 0.3], [0.5, 2.0, 1.5, 4.0]),
    "xlog1py": ([0.0, 1.0, 2.5, 0.3], [0.5, 2.0, -0.5, 4.0]),
    "zeta": ([2.0, 3.5, 1.5, 4.0], [1.0, 0.5, 2.0, 3.0]),
    "gammainc": ([0.5, 1.0, 2.5, 4.0], [0.3, 1.0, 2.0, 5.0]),
    "gammaincc": ([0.5, 1.0, 2.5, 4.0], [0.3, 1.0, 2.0, 5.0]),
}
NOT_IMPLEMENTED = {"zeta": "zeta", "gammainc": "igamma: input", "gammaincc": "igammac: input"}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_values_and_gradients_match_torch(torch, name, dtype, device):
    a, b = (np.array(v, dtype=dtype) for v in BINARY[name])
    fixed_first = name in NOT_IMPLEMENTED
    ours_a = aa.tensor(a, device=device, requires_grad=not fixed_first)
    ours_b = aa.tensor(b, device=device, requires_grad=True)
    theirs_a = torch.tensor(a, requires_grad=not fixed_first)
    theirs_b = torch.tensor(b, requires_grad=True)
    ours = getattr(aa.special, name)(ours_a, ours_b)
    theirs = getattr(torch.special, name)(theirs_a, theirs_b)
    tol = 1e-5 if dtype == "float32" else 1e-11
    np.testing.assert_allclose(to_numpy(ours), theirs.detach().numpy(), rtol=tol, atol=tol)
    ours.sum().backward()
    theirs.sum().backward()
    np.testing.assert_allclose(to_numpy(ours_b.grad), theirs_b.grad.numpy(), rtol=tol * 10)
    if not fixed_first:
        np.testing.assert_allclose(to_numpy(ours_a.grad), theirs_a.grad.numpy(), rtol=tol * 10)


@pytest.mark.parametrize("name", sorted(NOT_IMPLEMENTED))
def test_missing_gradients_raise_torchs_error_in_backward(torch, name):
    a = aa.tensor([2.0, 3.0], requires_grad=True)
    out = getattr(aa.special, name)(a, aa.tensor([1.0, 2.0]))
    with pytest.raises(NotImplementedError) as ours:
        out.sum().backward()
    b = torch.tensor([2.0, 3.0], requires_grad=True)
    with pytest.raises(NotImplementedError) as theirs:
        getattr(torch.special, name)(b, torch.tensor([1.0, 2.0])).sum().backward()
    assert (
        str(ours.value)
        == str(theirs.value)
        == f"the derivative for '{NOT_IMPLEMENTED[name]}' is not implemented."
    )


POLYNOMIALS = [
    "chebyshev_polynomial_t",
    "chebyshev_polynomial_u",
    "chebyshev_polynomial_v",
    "chebyshev_polynomial_w",
    "hermite_polynomial_h",
    "hermite_polynomial_he",
    "laguerre_polynomial_l",
    "legendre_polynomial_p",
    "shifted_chebyshev_polynomial_t",
    "shifted_chebyshev_polynomial_u",
    "shifted_chebyshev_polynomial_v",
    "shifted_chebyshev_polynomial_w",
]


@pytest.mark.parametrize("name", POLYNOMIALS)
def test_polynomials_match_torch_for_tensor_and_scalar_degrees(torch, name, device):
    x = np.array([-0.9, -0.3, 0.0, 0.4, 0.8], dtype=np.float64)
    n = np.array([-1, 0, 1, 3, 6])
    ours = getattr(aa.special, name)(aa.tensor(x, device=device), aa.tensor(n, device=device))
    theirs = getattr(torch.special, name)(torch.tensor(x), torch.tensor(n))
    np.testing.assert_allclose(to_numpy(ours), theirs.numpy(), rtol=1e-9, atol=1e-9)
    ours = getattr(aa.special, name)(aa.tensor(x.astype(np.float32)), 4.7)
    theirs = getattr(torch.special, name)(torch.tensor(x.astype(np.float32)), 4.7)
    assert ours.dtype == aa.float32
    np.testing.assert_allclose(to_numpy(ours), theirs.numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("n", [0, 1, 3])
def test_polygamma_and_multigammaln_match_torch(torch, n):
    x = np.array([0.7, 1.5, 4.0])
    ours_in, theirs_in = aa.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    ours, theirs = aa.special.polygamma(n, ours_in), torch.special.polygamma(n, theirs_in)
    ours.sum().backward()
    theirs.sum().backward()
    np.testing.assert_allclose(to_numpy(ours), theirs.detach().numpy(), rtol=1e-8)
    np.testing.assert_allclose(to_numpy(ours_in.grad), theirs_in.grad.numpy(), rtol=1e-8)
    ours_in, theirs_in = (
        aa.tensor(x + 2, requires_grad=True),
        torch.tensor(x + 2, requires_grad=True),
    )
    aa.special.multigammaln(ours_in, n + 1).sum().backward()
    torch.special.multigammaln(theirs_in, n + 1).sum().backward()
    np.testing.assert_allclose(to_numpy(ours_in.grad), theirs_in.grad.numpy(), rtol=1e-9)


def test_logit_with_eps_clamps_and_zeroes_the_gradient_outside(torch):
    x = np.array([0.05, 0.3, 0.5, 0.97])
    ours_in, theirs_in = aa.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    ours, theirs = aa.special.logit(ours_in, eps=0.1), torch.special.logit(theirs_in, eps=0.1)
    ours.sum().backward()
    theirs.sum().backward()
    np.testing.assert_allclose(to_numpy(ours), theirs.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(to_numpy(ours_in.grad), theirs_in.grad.numpy(), rtol=1e-12)


def test_second_derivatives_follow_create_graph(torch):
    x = np.array([0.6, 1.7, 3.1])
    for name in ("gammaln", "i1e", "erfcx", "ndtri", "log_ndtr", "sinc", "i0"):
        values = x / 4 if name == "ndtri" else x
        ours_in = aa.tensor(values, requires_grad=True)
        theirs_in = torch.tensor(values, requires_grad=True)
        (g,) = aa.autograd.grad(
            getattr(aa.special, name)(ours_in).sum(), ours_in, create_graph=True
        )
        (h,) = aa.autograd.grad(g.sum(), ours_in)
        (tg,) = torch.autograd.grad(
            getattr(torch.special, name)(theirs_in).sum(), theirs_in, create_graph=True
        )
        (th,) = torch.autograd.grad(tg.sum(), theirs_in)
        np.testing.assert_allclose(to_numpy(h), th.numpy(), rtol=1e-8, err_msg=name)


@pytest.mark.parametrize(
    "name, fn",
    [
        ("erfc", lambda x: aa.special.erfc(x)),
        ("i1", lambda x: aa.special.i1(x)),
        ("i0e", lambda x: aa.special.i0e(x)),
        ("digamma", lambda x: aa.special.digamma(x)),
        ("entr", lambda x: aa.special.entr(x)),
        ("log_ndtr", lambda x: aa.special.log_ndtr(x)),
    ],
)
def test_gradients_match_finite_differences(name, fn, device):
    import scipy.special as sp

    reference = {
        "erfc": sp.erfc,
        "i1": sp.i1,
        "i0e": sp.i0e,
        "digamma": sp.digamma,
        "entr": sp.entr,
        "log_ndtr": sp.log_ndtr,
    }[name]
    check_op(fn, reference, np.array([[0.4, 1.3, 2.2], [0.9, 1.7, 3.5]]), device=device)


def test_top_level_names_methods_and_in_place_forms(torch):
    x = np.array([0.3, 0.8, 2.5])
    for name in ("lgamma", "digamma", "erfc", "i0", "sinc", "logit", "exp2", "log2", "log10"):
        ours = getattr(aa, name)(aa.tensor(x))
        np.testing.assert_allclose(
            to_numpy(ours), getattr(torch, name)(torch.tensor(x)).numpy(), rtol=1e-12
        )
        method = getattr(aa.tensor(x), name)()
        np.testing.assert_allclose(to_numpy(method), to_numpy(ours))
        t = aa.tensor(x)
        assert getattr(t, name + "_")() is t
        np.testing.assert_allclose(to_numpy(t), to_numpy(ours))
    np.testing.assert_allclose(
        to_numpy(aa.tensor(x).polygamma(2)), torch.tensor(x).polygamma(2).numpy(), rtol=1e-12
    )
    np.testing.assert_allclose(
        to_numpy(aa.mvlgamma(aa.tensor(x + 2), 3)),
        torch.mvlgamma(torch.tensor(x + 2), 3).numpy(),
        rtol=1e-12,
    )
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output"):
        aa.tensor([1, 2]).lgamma_()
    leaf = aa.tensor(x, requires_grad=True)
    y = leaf * 1
    y.digamma_()
    y.sum().backward()
    np.testing.assert_allclose(
        to_numpy(leaf.grad), torch.special.polygamma(1, torch.tensor(x)).numpy()
    )


def test_integers_promote_and_errors_name_the_function(torch):
    assert aa.special.gammaln(aa.tensor([1, 2, 3])).dtype == aa.float32
    with pytest.raises(TypeError, match="erfcx"):
        aa.special.erfcx([1.0])
    with pytest.raises(TypeError, match="must be int"):
        aa.special.polygamma(1.5, aa.tensor([1.0]))
    assert aa.special.erfc(aa.tensor([0.5], dtype=aa.float16)).dtype == aa.float16


def test_covers_most_of_torch_special(torch):
    names = [
        n
        for n in dir(torch.special)
        if not n.startswith("_") and n[0].islower() and callable(getattr(torch.special, n))
    ]
    missing = [n for n in names if not hasattr(aa.special, n)]
    assert len(missing) <= 0.3 * len(names), missing


def test_edge_values_match_torch(torch):
    edge = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, -2.0])
    names = [
        "erfc",
        "erfcx",
        "log_ndtr",
        "ndtr",
        "ndtri",
        "gammaln",
        "digamma",
        "i0",
        "i0e",
        "i1",
        "i1e",
        "entr",
        "sinc",
        "logit",
        "exp2",
        "erfinv",
        "bessel_j0",
        "bessel_y0",
        "modified_bessel_k0",
        "scaled_modified_bessel_k1",
        "spherical_bessel_j0",
        "airy_ai",
    ]
    with np.errstate(all="ignore"):
        for name in names:
            ours = to_numpy(getattr(aa.special, name)(aa.tensor(edge)))
            theirs = getattr(torch.special, name)(torch.tensor(edge)).numpy()
            np.testing.assert_allclose(ours, theirs, rtol=1e-6, equal_nan=True, err_msg=name)
        for name in ["zeta", "gammainc", "gammaincc", "xlog1py", "xlogy"]:
            ours = to_numpy(getattr(aa.special, name)(aa.tensor(edge), aa.tensor(edge[::-1])))
            theirs = getattr(torch.special, name)(
                torch.tensor(edge), torch.tensor(edge[::-1].copy())
            ).numpy()
            np.testing.assert_allclose(ours, theirs, rtol=1e-6, equal_nan=True, err_msg=name)
