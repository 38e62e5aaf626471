"""Run one expression in autograd-async (on any device) and in PyTorch (cpu), in float64.

An expression is `fn(lib, T, *xs)`: `lib` is `autograd_async` or `torch`, `T(data)` makes an
index or mask tensor of that library (on the device under test), and `xs` are float64 tensors that
require grad. Most methods have the same names in both libraries, so one lambda serves both.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from gradients import assert_vjps_match, to_numpy

import autograd_async as aa
from autograd_async.autograd import gradcheck


def _first(out: Any) -> Any:
    return out[0] if isinstance(out, tuple) else out


def check_like_torch(
    torch: Any,
    device: str,
    fn: Callable[..., Any],
    *arrays: Any,
    seed: int = 0,
    check_grads: bool = True,
) -> None:
    """Values, output dtype and device, VJPs against PyTorch's, then `gradcheck` on the device."""
    arrays = [np.asarray(a, dtype=np.float64) for a in arrays]

    def ours_t(data: Any) -> aa.Tensor:
        return aa.tensor(data, device=device)

    ours = [aa.tensor(a, device=device, requires_grad=True) for a in arrays]
    theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
    out_all, ref_all = fn(aa, ours_t, *ours), fn(torch, torch.tensor, *theirs)
    outs = out_all if isinstance(out_all, tuple) else (out_all,)
    refs = ref_all if isinstance(ref_all, tuple) else (ref_all,)
    for o, r in zip(outs, refs, strict=True):
        assert o.device == aa.device(device)
        assert tuple(o.shape) == tuple(r.shape), (tuple(o.shape), tuple(r.shape))
        assert str(o.dtype) == str(r.dtype).removeprefix("torch."), (o.dtype, r.dtype)
        np.testing.assert_allclose(to_numpy(o), r.detach().numpy(), rtol=1e-12, atol=1e-12)
    if not check_grads:
        return
    out, ref = _first(out_all), _first(ref_all)
    assert_vjps_match(torch, out, ref, ours, theirs, device, 1e-10, 1e-12, seed)
    fresh = tuple(aa.tensor(a, device=device, requires_grad=True) for a in arrays)
    assert gradcheck(lambda *xs: _first(fn(aa, ours_t, *xs)), fresh)
