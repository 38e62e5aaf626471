"""Shared gradient checks for op tests: forward against NumPy, VJPs against central differences.

Like HIPS autograd's `check_grads`, the gradient check projects: for a random output cotangent `v`
and a random input direction `d`, the engine's VJP `g` must satisfy
<g, d> = <v, (f(x + eps d) - f(x - eps d)) / 2 eps>, all in float64.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

import autograd_async as aa


def to_numpy(t: Any) -> np.ndarray:
    """A tensor's values as a NumPy array (works for tensors that require grad, on any device)."""
    return np.asarray(t.__array__()) if isinstance(t, aa.Tensor) else np.asarray(t)


def check_op(
    fn_ours: Callable[..., Any],
    fn_numpy: Callable[..., Any],
    *arrays: Any,
    device: str = "cpu",
    eps: float = 1e-6,
    rtol: float = 1e-5,
    atol: float = 1e-7,
    seed: int = 0,
) -> None:
    """Check `fn_ours` against `fn_numpy` at `arrays`: values, then each input's VJP."""
    arrays = [np.asarray(a, dtype=np.float64) for a in arrays]
    tensors = [aa.tensor(a, device=device, requires_grad=True) for a in arrays]
    out = fn_ours(*tensors)
    expected = np.asarray(fn_numpy(*arrays), dtype=np.float64)
    assert out.dtype == np.float64, f"float64 in, {out.dtype} out"
    assert tuple(out.shape) == expected.shape, (tuple(out.shape), expected.shape)
    np.testing.assert_allclose(to_numpy(out), expected, rtol=1e-10, atol=1e-12)
    rng = np.random.default_rng(seed)
    v = rng.standard_normal(expected.shape)
    grads = aa.autograd.grad(out, tensors, aa.tensor(v, device=device), allow_unused=True)
    for i, (a, g) in enumerate(zip(arrays, grads, strict=True)):
        d = rng.standard_normal(a.shape)
        shifted = [list(arrays), list(arrays)]
        shifted[0][i] = a + eps * d
        shifted[1][i] = a - eps * d
        plus, minus = (np.asarray(fn_numpy(*args), dtype=np.float64) for args in shifted)
        numeric = float(np.sum(v * (plus - minus)) / (2 * eps))
        analytic = 0.0 if g is None else float(np.sum(to_numpy(g) * d))
        if g is not None:
            assert tuple(g.shape) == a.shape, f"grad {i} has shape {tuple(g.shape)}, not {a.shape}"
            assert g.device == aa.device(device)
        scale = max(1.0, abs(numeric))
        assert abs(analytic - numeric) <= atol * 1e3 + rtol * 1e2 * scale, (
            f"input {i}: VJP along a random direction is {analytic}, finite differences give "
            f"{numeric}"
        )


def compare_torch(
    torch: Any,
    fn_ours: Callable[..., Any],
    fn_torch: Callable[..., Any],
    *arrays: Any,
    seed: int = 0,
    rtol: float = 1e-7,
    atol: float = 1e-9,
) -> None:
    """Run the same expression in both libraries (float64): values and gradients must agree."""
    arrays = [np.asarray(a, dtype=np.float64) for a in arrays]
    ours = [aa.tensor(a, requires_grad=True) for a in arrays]
    theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
    out, ref = fn_ours(*ours), fn_torch(*theirs)
    np.testing.assert_allclose(to_numpy(out), ref.detach().numpy(), rtol=rtol, atol=atol)
    assert_vjps_match(torch, out, ref, ours, theirs, rtol=rtol, atol=atol, seed=seed)


def versus_torch(
    torch, device: str, ours, theirs, *arrays, rtol: float = 1e-7, atol: float = 1e-9, seed: int = 0
) -> None:
    """Values and gradients of `ours` on `device` equal `theirs` in PyTorch (float64)."""
    arrays = [np.asarray(a, dtype=np.float64) for a in arrays]
    mine = [aa.tensor(a, device=device, requires_grad=True) for a in arrays]
    ref_in = [torch.tensor(a, requires_grad=True) for a in arrays]
    out, ref = ours(*mine), theirs(*ref_in)
    assert out.device == aa.device(device)
    assert out.dtype == np.float64
    np.testing.assert_allclose(to_numpy(out), ref.detach().numpy(), rtol=rtol, atol=atol)
    if not ref.requires_grad:
        return
    assert_vjps_match(torch, out, ref, mine, ref_in, device, rtol, atol, seed)


def assert_vjps_match(
    torch: Any,
    out: Any,
    ref: Any,
    ours: Sequence[Any],
    theirs: Sequence[Any],
    device: str = "cpu",
    rtol: float = 1e-7,
    atol: float = 1e-9,
    seed: int = 0,
    labels: Sequence[int] | None = None,
) -> None:
    """Gradients of `out` w.r.t. `ours` equal PyTorch's of `ref` w.r.t. `theirs` along one random
    cotangent; an input torch gives no gradient gets none (or zeros) here too."""
    v = np.random.default_rng(seed).standard_normal(tuple(ref.shape))
    grads = aa.autograd.grad(out, list(ours), aa.tensor(v, device=device), allow_unused=True)
    ref_grads = torch.autograd.grad(ref, list(theirs), torch.tensor(v), allow_unused=True)
    labels = range(len(grads)) if labels is None else labels
    for i, g, r in zip(labels, grads, ref_grads, strict=True):
        if r is None:
            assert g is None or not to_numpy(g).any(), f"input {i}: torch has no gradient"
            continue
        assert g is not None, f"input {i}: no gradient, torch has one"
        assert g.device == aa.device(device)
        np.testing.assert_allclose(
            to_numpy(g), r.numpy(), rtol=rtol, atol=atol, err_msg=f"gradient of input {i}"
        )
