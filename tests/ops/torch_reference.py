"""Run an nn.functional expression here (on any device) and in PyTorch on the same float64 inputs.

Values and the gradients of every input along a random output cotangent must agree; the
reference is PyTorch on the CPU.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from gradients import assert_vjps_match, to_numpy

import autograd_async as aa


def against_torch(
    torch: Any,
    ours: Callable[..., Any],
    theirs: Callable[..., Any],
    *arrays: np.ndarray,
    device: str = "cpu",
    grad: Sequence[bool] | None = None,
    rtol: float = 1e-7,
    atol: float = 1e-9,
    seed: int = 0,
) -> Any:
    """Compare values and gradients; `grad[i]` False leaves input i without requires_grad.

    Returns our output (its first element when the op returns a tuple).
    """
    grad = [np.asarray(a).dtype.kind == "f" for a in arrays] if grad is None else list(grad)
    ours_in = [
        aa.tensor(a, device=device, requires_grad=g) for a, g in zip(arrays, grad, strict=True)
    ]
    theirs_in = [torch.tensor(a, requires_grad=g) for a, g in zip(arrays, grad, strict=True)]
    out, ref = ours(*ours_in), theirs(*theirs_in)
    extra = None
    if isinstance(ref, tuple):
        extra = list(zip(out[1:], ref[1:], strict=True))
        out, ref = out[0], ref[0]
    assert out.device == aa.device(device)
    assert tuple(out.shape) == tuple(ref.shape), (tuple(out.shape), tuple(ref.shape))
    assert str(out.dtype) == str(ref.dtype).removeprefix("torch."), (out.dtype, ref.dtype)
    np.testing.assert_allclose(to_numpy(out), ref.detach().numpy(), rtol=rtol, atol=atol)
    for a, b in extra or ():
        np.testing.assert_array_equal(to_numpy(a), b.numpy())
    wrt = [i for i, g in enumerate(grad) if g]
    if not wrt or not ref.requires_grad:
        return out
    assert_vjps_match(
        torch,
        out,
        ref,
        [ours_in[i] for i in wrt],
        [theirs_in[i] for i in wrt],
        device,
        rtol,
        atol,
        seed,
        labels=wrt,
    )
    return out
