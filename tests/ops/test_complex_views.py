"""complex, polar, angle, view_as_real and view_as_complex against PyTorch: values, dtypes,
views sharing memory, error texts and gradients (first and second order) on each device."""

from __future__ import annotations

import numpy as np
import pytest

import autograd_async as aa
from autograd_async.autograd import gradcheck, gradgradcheck

_RNG = np.random.default_rng(3)
A = _RNG.normal(size=(3, 4))
B = _RNG.normal(size=(3, 4))
Z = _RNG.normal(size=(3, 2)) + 1j * _RNG.normal(size=(3, 2))

# Expressions of real (A, B) or complex (Z) inputs, the same for both libraries.
CASES = {
    "complex": (lambda m, a, b: m.complex(a, b), (A, B)),
    "complex_broadcast": (lambda m, a, b: m.complex(a, b[:1]), (A, B)),
    "polar": (lambda m, a, b: m.polar(a, b), (A, B)),
    "polar_of_abs": (lambda m, a, b: m.polar(a.abs() + 0.1, b), (A, B)),
    "angle_real": (lambda m, a: m.angle(a) + a, (A,)),
    "angle_complex": (lambda m, z: m.angle(z), (Z,)),
    "angle_method": (lambda m, z: (z * z).angle(), (Z,)),
    "view_as_real": (lambda m, z: m.view_as_real(z) * 2, (Z,)),
    "view_as_real_transposed": (lambda m, z: m.view_as_real(z.t()), (Z,)),
    "view_as_complex": (lambda m, a: m.view_as_complex(a.reshape(6, 2)) * 3, (A,)),
    "view_as_complex_rows": (lambda m, a: m.view_as_complex(a[1:].reshape(2, 2, 2)), (A,)),
    "round_trip": (lambda m, z: m.view_as_complex(m.view_as_real(z * z)), (Z,)),
}


def _numpy(t):
    t = t.detach()
    return np.asarray((t.resolve_conj() if hasattr(t, "resolve_conj") else t).cpu().numpy())


def _losses(lib, out):
    if out.is_complex():
        yield (out.abs() ** 2).sum()
        yield out.real.sum()
        yield (out.imag * out.real.exp()).sum()
    else:
        yield (out * out).sum()
        yield out.sin().sum()


def _run(lib, fn, arrays, device=None):
    kw = {} if device is None else {"device": device}
    inputs = [lib.tensor(a, requires_grad=True, **kw) for a in arrays]
    out = fn(lib, *inputs)
    grads = []
    for loss in _losses(lib, out):
        gs = lib.autograd.grad(loss, inputs, retain_graph=True, allow_unused=True)
        grads.append([None if g is None else _numpy(g) for g in gs])
    return out, grads


@pytest.mark.parametrize("name", sorted(CASES))
def test_values_and_gradients_match_torch(torch, device, name):
    fn, arrays = CASES[name]
    out, grads = _run(aa, fn, arrays, device)
    ref, ref_grads = _run(torch, fn, arrays)
    assert out.device == aa.device(device)
    assert str(out.dtype) == str(ref.dtype).removeprefix("torch.")
    assert tuple(out.shape) == tuple(ref.shape)
    np.testing.assert_allclose(_numpy(out), _numpy(ref), rtol=1e-12, atol=1e-12)
    for mine, theirs in zip(grads, ref_grads, strict=True):
        for g, r in zip(mine, theirs, strict=True):
            assert (g is None) == (r is None)
            if r is not None:
                assert g.dtype == r.dtype
                np.testing.assert_allclose(g, r, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize(
    "name",
    ["complex", "polar_of_abs", "angle_complex", "view_as_real", "view_as_complex", "round_trip"],
)
def test_finite_differences_first_and_second_order(device, name):
    """gradcheck over real numbers: complex inputs travel as (..., 2) reals and complex outputs
    come back as such (the two views are checked against PyTorch above)."""
    fn, arrays = CASES[name]

    def as_real(a):
        return np.stack([a.real, a.imag], -1) if np.iscomplexobj(a) else a

    complex_at = [np.iscomplexobj(a) for a in arrays]

    def real_fn(*xs):
        xs = [aa.view_as_complex(x) if c else x for x, c in zip(xs, complex_at, strict=True)]
        out = fn(aa, *xs)
        return aa.view_as_real(out) if out.is_complex() else out

    inputs = tuple(aa.tensor(as_real(a), device=device, requires_grad=True) for a in arrays)
    assert gradcheck(real_fn, inputs)
    assert gradgradcheck(real_fn, inputs)


def test_views_share_memory_and_version(device):
    z = aa.tensor(Z, device=device)
    r = aa.view_as_real(z)
    assert r._base is z and tuple(r.shape) == (3, 2, 2) and r.stride() == (4, 2, 1)
    r[0, 1, 1] = 7.0
    assert z[0, 1].item() == complex(Z[0, 1].real, 7.0)
    assert z._version == r._version == 1
    x = aa.zeros(3, 2, dtype=aa.float64, device=device)
    c = aa.view_as_complex(x)
    c.mul_(0).add_(1 + 2j)
    np.testing.assert_array_equal(x.cpu().numpy(), [[1, 2]] * 3)
    assert aa.view_as_real(z.t()).stride() == (2, 4, 1)


def test_dtypes_follow_torch(torch):
    for dt in ("float32", "float64"):
        a = aa.ones(2, dtype=getattr(aa, dt))
        t = torch.ones(2, dtype=getattr(torch, dt))
        assert str(aa.complex(a, a).dtype) == str(torch.complex(t, t).dtype).split(".")[1]
        assert str(aa.view_as_complex(a).dtype) == str(torch.view_as_complex(t).dtype)[6:]
        assert str(aa.view_as_real(aa.complex(a, a)).dtype) == dt
    for data in ([1, -2, 0], [True, False]):
        ours, ref = aa.angle(aa.tensor(data)), torch.angle(torch.tensor(data))
        assert str(ours.dtype) == str(ref.dtype)[6:]
        np.testing.assert_allclose(ours.numpy(), ref.numpy())
    nan = aa.angle(aa.tensor([float("nan"), -0.0, -1.0]))
    np.testing.assert_allclose(nan.numpy(), [np.nan, 0.0, np.pi], rtol=1e-6)


ERRORS = [
    (
        lambda m: m.complex(m.ones(2), m.ones(2, dtype=m.float64)),
        "Expected object of scalar type Float but got scalar type Double for second argument",
    ),
    (
        lambda m: m.complex(m.ones(2, dtype=m.long), m.ones(2, dtype=m.long)),
        "Expected both inputs to be Half, Float or Double tensors but got Long and Long",
    ),
    (
        lambda m: m.polar(m.ones(2, dtype=m.long), m.ones(2, dtype=m.long)),
        "Expected both inputs to be Half, Float or Double tensors but got Long and Long",
    ),
    (lambda m: m.view_as_real(m.ones(2)), "view_as_real is only supported for complex tensors"),
    (
        lambda m: m.view_as_complex(m.ones(3, dtype=m.long)),
        "view_as_complex is only supported for half, float and double tensors, but got a tensor "
        "of scalar type: Long",
    ),
    (lambda m: m.view_as_complex(m.ones(2, 3)), "Tensor must have a last dimension of size 2"),
    (
        lambda m: m.view_as_complex(m.ones(2, 2).t()),
        "Tensor must have a last dimension with stride 1",
    ),
    (
        lambda m: m.view_as_complex(m.ones(6)[1:5].view(2, 2)),
        "Tensor must have a storage_offset divisible by 2",
    ),
    (
        lambda m: m.view_as_complex(m.ones(3, 3, 2)[:, :, :1].expand(3, 3, 2)),
        "Tensor must have a last dimension with stride 1",
    ),
]


@pytest.mark.parametrize("case", range(len(ERRORS)))
def test_errors_match_torch(torch, case):
    fn, text = ERRORS[case]
    with pytest.raises(RuntimeError, match=text) as ours:
        fn(aa)
    with pytest.raises(RuntimeError) as theirs:
        fn(torch)
    assert text in str(theirs.value)
    assert str(ours.value) == text
