"""autograd_async.fft against torch.fft: values, gradients (real and complex inputs, every norm,
cropped and padded sizes), gradcheck, double backward, helpers and errors."""

from __future__ import annotations

import numpy as np
import pytest

import autograd_async as aa
from tests.gradients import to_numpy

ONE_D = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft"]
MANY_D = ["fft2", "ifft2", "rfft2", "irfft2", "fftn", "ifftn", "rfftn", "irfftn"]
MANY_D += ["hfft2", "hfftn", "ihfft2", "ihfftn"]
REAL_ONLY = {"rfft", "ihfft", "rfft2", "rfftn", "ihfft2", "ihfftn"}
NORMS = ["backward", "ortho", "forward"]  # None is "backward": see the single-precision test


def _sizes(name: str) -> list[dict]:
    if name in ONE_D:
        return [{}, {"n": 5}, {"n": 9}]
    return [{}, {"s": (3, 7)}, {"s": (5, 4), "dim": (0, 1)}]


def _compare(torch, name, x, kwargs, norm, device, dtype):
    ours_in = aa.tensor(x, device=device, requires_grad=True)
    theirs_in = torch.tensor(x, requires_grad=True)
    ours = getattr(aa.fft, name)(ours_in, norm=norm, **kwargs)
    theirs = getattr(torch.fft, name)(theirs_in, norm=norm, **kwargs).resolve_conj()
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert str(ours.dtype) == str(theirs.dtype).removeprefix("torch.")
    tol = 1e-4 if dtype == "float32" else 1e-10
    np.testing.assert_allclose(to_numpy(ours), theirs.detach().numpy(), rtol=tol, atol=tol)
    rng = np.random.default_rng(1)
    w = rng.standard_normal(tuple(theirs.shape)).astype(dtype)
    if theirs.is_complex():  # a real loss that weighs both parts differently
        loss = (
            aa.real(ours) * aa.tensor(w, device=device)
            + aa.imag(ours) * aa.tensor(0.3 * w, device=device)
        ).sum()
        their_loss = (theirs.real * torch.tensor(w) + theirs.imag * torch.tensor(0.3 * w)).sum()
    else:
        loss = (ours * aa.tensor(w, device=device)).sum()
        their_loss = (theirs * torch.tensor(w)).sum()
    loss.backward()
    their_loss.backward()
    assert ours_in.grad.dtype == ours_in.dtype
    np.testing.assert_allclose(
        to_numpy(ours_in.grad), theirs_in.grad.resolve_conj().numpy(), rtol=tol, atol=tol
    )


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("name", ONE_D + MANY_D)
def test_real_inputs_match_torch(torch, name, norm, device):
    x = np.random.default_rng(0).standard_normal((4, 6))
    for kwargs in _sizes(name):
        _compare(torch, name, x, kwargs, norm, device, "float64")


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("name", [n for n in ONE_D + MANY_D if n not in REAL_ONLY])
def test_complex_inputs_match_torch(torch, name, norm, device):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 6)) + 1j * rng.standard_normal((4, 6))
    for kwargs in _sizes(name):
        _compare(torch, name, x, kwargs, norm, device, "float64")


@pytest.mark.parametrize("name", ["fft", "rfft", "irfft", "fftn", "irfftn", "hfft", "ihfft"])
def test_single_precision_keeps_single_precision(torch, name):
    x = np.random.default_rng(0).standard_normal((3, 8)).astype(np.float32)
    _compare(torch, name, x, {}, None, "cpu", "float32")


def test_dim_and_transposed_axes_match_torch(torch):
    x = np.random.default_rng(2).standard_normal((3, 4, 5))
    for name, kwargs in [
        ("fft", {"dim": 0}),
        ("rfft", {"dim": 1, "n": 6}),
        ("irfft", {"dim": 0}),
        ("fftn", {"dim": (2, 0)}),
        ("rfftn", {"dim": (2, 0)}),
        ("irfftn", {"s": (4, 6), "dim": (0, 2)}),
        ("fftn", {"s": (2, 3)}),
    ]:
        _compare(torch, name, x, kwargs, None, "cpu", "float64")


def _real_loss(fn, weights):
    """A real loss of a transform's output: sum(w * real) + sum(w' * imag)."""

    def loss(x):
        y = fn(x)
        if y.dtype.kind == "c":
            return (aa.real(y) * aa.tensor(weights[0]) + aa.imag(y) * aa.tensor(weights[1])).sum()
        return (y * aa.tensor(weights[0])).sum()

    return loss


@pytest.mark.parametrize(
    "name",
    [
        "fft",
        "ifft",
        "rfft",
        "irfft",
        "hfft",
        "ihfft",
        "fft2",
        "rfftn",
        "irfftn",
        "hfft2",
        "hfftn",
        "ihfft2",
        "ihfftn",
    ],
)
def test_gradients_match_central_differences_in_double_precision(name):
    """PyTorch's convention for a complex input: dL/dre + 1j * dL/dim of the real loss L."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((3, 4))
    if name not in REAL_ONLY:
        x = x + 1j * rng.standard_normal((3, 4))
    for norm in ("backward", "ortho", "forward"):
        fn = lambda v, norm=norm: getattr(aa.fft, name)(v, norm=norm)  # noqa: E731
        shape = tuple(fn(aa.tensor(x)).shape)
        loss = _real_loss(fn, (rng.standard_normal(shape), rng.standard_normal(shape)))
        t = aa.tensor(x, requires_grad=True)
        loss(t).backward()
        eps = 1e-6
        numeric = np.zeros_like(x)
        for index in np.ndindex(x.shape):
            for step in (1, 1j) if x.dtype.kind == "c" else (1,):
                plus, minus = x.copy(), x.copy()
                plus[index] += eps * step
                minus[index] -= eps * step
                slope = (loss(aa.tensor(plus)).item() - loss(aa.tensor(minus)).item()) / (2 * eps)
                numeric[index] += slope * step
        np.testing.assert_allclose(to_numpy(t.grad), numeric, rtol=1e-6, atol=1e-7)
        if x.dtype.kind != "c" and len(shape) and fn(aa.tensor(x)).dtype.kind != "c":
            assert aa.autograd.gradcheck(fn, (aa.tensor(x, requires_grad=True),))


def test_second_derivatives_match_torch(torch):
    x = np.random.default_rng(4).standard_normal(6)
    ours_in = aa.tensor(x, requires_grad=True)
    theirs_in = torch.tensor(x, requires_grad=True)
    ours = aa.fft.irfft(aa.fft.rfft(ours_in * ours_in, n=8) * 2, n=7).sum()
    theirs = torch.fft.irfft(torch.fft.rfft(theirs_in * theirs_in, n=8) * 2, n=7).sum()
    (g,) = aa.autograd.grad(ours, ours_in, create_graph=True)
    (tg,) = torch.autograd.grad(theirs, theirs_in, create_graph=True)
    (h,) = aa.autograd.grad((g * g).sum(), ours_in)
    (th,) = torch.autograd.grad((tg * tg).sum(), theirs_in)
    np.testing.assert_allclose(to_numpy(h), th.numpy(), rtol=1e-9, atol=1e-10)


def test_frequencies_and_shifts_match_torch(torch, device):
    for n, d in [(8, 1.0), (7, 0.25)]:
        np.testing.assert_allclose(
            to_numpy(aa.fft.fftfreq(n, d, device=device)), torch.fft.fftfreq(n, d).numpy()
        )
        np.testing.assert_allclose(
            to_numpy(aa.fft.rfftfreq(n, d)), torch.fft.rfftfreq(n, d).numpy()
        )
    assert aa.fft.fftfreq(4, dtype=aa.float64).dtype == aa.float64
    x = np.arange(15.0).reshape(3, 5)
    for name in ("fftshift", "ifftshift"):
        for dim in (None, 0, (1,), (0, 1)):
            t = aa.tensor(x, device=device, requires_grad=True)
            out = getattr(aa.fft, name)(t, dim=dim)
            np.testing.assert_array_equal(
                to_numpy(out), getattr(torch.fft, name)(torch.tensor(x), dim=dim).numpy()
            )
            (out * aa.tensor(x, device=device)).sum().backward()
            expected = getattr(torch.fft, "ifftshift" if name == "fftshift" else "fftshift")(
                torch.tensor(x), dim=dim
            )
            np.testing.assert_array_equal(to_numpy(t.grad), expected.numpy())


def test_errors_match_torch(torch):
    x = aa.tensor([1.0, 2.0, 3.0])
    tx = torch.tensor([1.0, 2.0, 3.0])
    cases = [
        (lambda m, t: m.fft(t, norm="foo"), RuntimeError),
        (lambda m, t: m.rfft(t.to(dtype=getattr(m, "_complex", None) or t.dtype)), None),
        (lambda m, t: m.fft(t, n=0), RuntimeError),
        (lambda m, t: m.fft(t, dim=3), IndexError),
        (lambda m, t: m.fftn(t, s=(2, 2), dim=(0,)), RuntimeError),
    ]
    for case, error in cases:
        if error is None:
            continue
        with pytest.raises(error) as ours:
            case(aa.fft, x)
        with pytest.raises(error) as theirs:
            case(torch.fft, tx)
        assert str(ours.value) == str(theirs.value)
    with pytest.raises(
        RuntimeError, match="rfft expects a real input tensor, but got ComplexFloat"
    ):
        aa.fft.rfft(aa.tensor(np.ones(3, np.complex64)))
    with pytest.raises(RuntimeError, match="Unsupported dtype Half"):
        aa.fft.fft(aa.tensor([1.0, 2.0], dtype=aa.float16))
    with pytest.raises(TypeError, match=r"fft\(\): argument 'input'"):
        aa.fft.fft([1.0, 2.0])
    assert aa.fft.fft(aa.tensor([1, 2, 3])).dtype == aa.complex64
    assert aa.fft.irfft(aa.tensor([1.0, 2.0, 3.0])).dtype == aa.float32


def test_complex_parts_follow_torchs_gradients(torch):
    z = np.array([1 + 2j, -0.5 + 0.25j])
    ours_in, theirs_in = aa.tensor(z, requires_grad=True), torch.tensor(z, requires_grad=True)
    loss = (aa.real(ours_in) * 2 + aa.imag(ours_in) * 3 + aa.real(aa.conj(ours_in) * 1)).sum()
    their_loss = (theirs_in.real * 2 + theirs_in.imag * 3 + (theirs_in.conj() * 1).real).sum()
    loss.backward()
    their_loss.backward()
    np.testing.assert_allclose(to_numpy(ours_in.grad), theirs_in.grad.numpy())
    np.testing.assert_allclose(to_numpy(aa.tensor(z).imag), np.imag(z))
    with pytest.raises(RuntimeError, match="imag is not implemented for tensors with non-complex"):
        aa.imag(aa.tensor([1.0]))
