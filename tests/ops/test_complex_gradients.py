"""Gradients of complex tensors follow PyTorch's convention: for a real loss L of a complex z,
z.grad is the conjugate Wirtinger derivative (2 dL/d(conj z)), so that gradient descent on z
decreases L. Each op below is compared with PyTorch under three real losses: |f(z)|^2 summed,
the real part summed and the imaginary part summed, which together pin down every component of
the vector-Jacobian product."""

from __future__ import annotations

import numpy as np
import pytest

import autograd_async as aa

_RNG = np.random.default_rng(7)
Z = _RNG.normal(size=(3, 3)) + 1j * _RNG.normal(size=(3, 3))
W = _RNG.normal(size=(3, 3)) + 1j * _RNG.normal(size=(3, 3))
X = _RNG.normal(size=(3, 3))

UNARY = {
    "abs": lambda m, z: z.abs(),
    "exp": lambda m, z: z.exp(),
    "log": lambda m, z: z.log(),
    "sqrt": lambda m, z: z.sqrt(),
    "sin": lambda m, z: z.sin(),
    "cos": lambda m, z: z.cos(),
    "tanh": lambda m, z: z.tanh(),
    "sigmoid": lambda m, z: z.sigmoid(),
    "reciprocal": lambda m, z: z.reciprocal(),
    "neg": lambda m, z: -z,
    "square": lambda m, z: z.square(),
    "pow_int": lambda m, z: z**3,
    "pow_float": lambda m, z: z**1.5,
    "conj": lambda m, z: z.conj() * 1,
    "conj_times_self": lambda m, z: z.conj() * z,
    "real": lambda m, z: z.real,
    "imag": lambda m, z: z.imag,
    "sum_dim": lambda m, z: z.sum(0),
    "mean": lambda m, z: z.mean(),
    "prod": lambda m, z: z.prod(1),
    "cumsum": lambda m, z: z.cumsum(0),
    "cumprod": lambda m, z: z.cumprod(1),
    "transpose": lambda m, z: z.transpose(0, 1) * z,
    "reshape": lambda m, z: z.reshape(9),
    "flip": lambda m, z: z.flip(0),
    "index": lambda m, z: z[1:, ::2],
    "matmul_self": lambda m, z: z @ z,
    "norm": lambda m, z: z.norm(),
    "vector_norm": lambda m, z: m.linalg.vector_norm(z, dim=1),
    "matrix_norm": lambda m, z: m.linalg.matrix_norm(z),
    "det": lambda m, z: m.linalg.det(z),
    "inv": lambda m, z: m.linalg.inv(z),
    "slogdet": lambda m, z: m.linalg.slogdet(z)[1],
    "solve": lambda m, z: m.linalg.solve(z, z.T),
    "matrix_exp": lambda m, z: m.linalg.matrix_exp(z * 0.3),
    "qr_q": lambda m, z: m.linalg.qr(z)[0],
    "qr_r": lambda m, z: m.linalg.qr(z)[1],
    "qr_wide": lambda m, z: m.linalg.qr(z[:2])[1],
    "svd_uvh": lambda m, z: (lambda u, s, vh: u @ vh)(*m.linalg.svd(z)),
    "svd_rebuilt": lambda m, z: (lambda u, s, vh: (u * s.to(u.dtype)) @ vh)(
        *m.linalg.svd(z, full_matrices=False)
    ),
    "pinv": lambda m, z: m.linalg.pinv(z),
    "trace": lambda m, z: z.trace(),
    "diag": lambda m, z: z.diag(),
    "tril": lambda m, z: z.tril(),
    "roll": lambda m, z: z.roll(1, 0),
    "fft": lambda m, z: m.fft.fft(z),
    "ifft": lambda m, z: m.fft.ifft(z),
    "fft2": lambda m, z: m.fft.fft2(z),
    "var": lambda m, z: z.var(0),
    "std": lambda m, z: z.std(1),
    "mul_complex_scalar": lambda m, z: z * (2 - 1j),
    "add_complex_scalar": lambda m, z: z + (2 - 1j),
    "complex_scalar_div": lambda m, z: (1 + 2j) / z,
    "scalar_div": lambda m, z: 2 / z,
    "kron": lambda m, z: m.kron(z, z),
    "outer": lambda m, z: m.outer(z[0], z[1]),
    "dot": lambda m, z: m.dot(z[0], z[1]),
    "cat": lambda m, z: m.cat([z, z * 2]),
    "stack": lambda m, z: m.stack([z, z.exp()]),
    "einsum": lambda m, z: m.einsum("ij,jk->ik", z, z),
    "where": lambda m, z: m.where(z.real > 0, z, z * z),
    "expand": lambda m, z: z[0].expand(3, 3) * z,
    "gather": lambda m, z: z.gather(1, m.tensor([[0, 0], [1, 2], [2, 1]])),
    "masked_fill": lambda m, z: z.masked_fill(z.real > 0, 0),
    "repeat": lambda m, z: z.repeat(2, 1),
    "mv": lambda m, z: m.mv(z, z[0]),
    "addcmul": lambda m, z: m.addcmul(z, z, z.T, value=0.5),
    "to_complex64": lambda m, z: z.to(m.complex64) * 2,
}

BINARY = {
    "mul": lambda m, z, w: z * w,
    "div": lambda m, z, w: z / w,
    "sub": lambda m, z, w: z - w,
    "pow": lambda m, z, w: z**w,
    "matmul": lambda m, z, w: z @ w,
    "add_alpha": lambda m, z, w: m.add(z, w, alpha=2),
}

# A real tensor meets a complex one: the real input's gradient is the real part.
MIXED = {
    "real_times_complex": lambda m, x, w: x * w,
    "real_matmul_complex": lambda m, x, w: x.to(w.dtype) @ w,
    "complex_over_real": lambda m, x, w: w / (x + 3),
}


def _numpy(t):
    t = t.detach()
    return np.asarray((t.resolve_conj() if hasattr(t, "resolve_conj") else t).numpy())


def _grads(lib, fn, arrays, loss):
    inputs = [lib.tensor(a, requires_grad=True) for a in arrays]
    out = fn(lib, *inputs)
    if loss == "abs2":
        value = (out.abs() ** 2).sum()
    elif loss == "real":
        value = out.real.sum() if out.is_complex() else out.sum()
    else:
        value = out.imag.sum() if out.is_complex() else (out * out).sum()
    grads = lib.autograd.grad(value, inputs, allow_unused=True)
    return [None if g is None else _numpy(g) for g in grads]


def _check(torch, fn, arrays):
    for loss in ("abs2", "real", "imag"):
        ours = _grads(aa, fn, arrays, loss)
        theirs = _grads(torch, fn, arrays, loss)
        for mine, ref in zip(ours, theirs, strict=True):
            assert (mine is None) == (ref is None), loss
            if ref is not None:
                assert mine.dtype == ref.dtype, loss
                np.testing.assert_allclose(mine, ref, rtol=1e-6, atol=1e-9, err_msg=loss)


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_complex_gradient_matches_torch(torch, name):
    _check(torch, UNARY[name], [Z])


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_complex_gradient_matches_torch(torch, name):
    _check(torch, BINARY[name], [Z, W])


@pytest.mark.parametrize("name", sorted(MIXED))
def test_real_and_complex_inputs_match_torch(torch, name):
    _check(torch, MIXED[name], [X, W])


def test_gradient_descent_step_lowers_a_real_loss():
    """The convention's point: z - lr * z.grad decreases L (here L = |z w - 1|^2)."""
    w = aa.tensor(W)
    z = aa.tensor(Z, requires_grad=True)
    loss = ((z * w - 1).abs() ** 2).sum()
    loss.backward()
    stepped = ((aa.tensor(Z - 0.01 * z.grad.numpy()) * w - 1).abs() ** 2).sum()
    assert stepped.item() < loss.item()


def test_holomorphic_gradient_is_the_conjugate_derivative():
    """For holomorphic f and L = real(f(z)), z.grad = conj(f'(z)) (PyTorch's documented rule)."""
    z = aa.tensor(Z, requires_grad=True)
    (z * z * z).real.sum().backward()
    np.testing.assert_allclose(z.grad.numpy(), np.conj(3 * Z**2))


def test_double_backward_through_complex_ops(torch):
    """create_graph: the second derivative follows the same convention."""

    def second(lib):
        z = lib.tensor(Z, requires_grad=True)
        (g,) = lib.autograd.grad((z.exp() * z).abs().pow(2).sum(), z, create_graph=True)
        (h,) = lib.autograd.grad(g.real.sum() + g.imag.sum(), z)
        return h.detach().numpy()

    np.testing.assert_allclose(second(aa), second(torch), rtol=1e-6)
