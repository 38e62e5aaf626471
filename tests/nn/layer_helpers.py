"""Running one layer on both libraries: our copy takes PyTorch's parameters and buffers through
`load_state_dict` (so the keys and shapes must match), then outputs and gradients are compared."""

from __future__ import annotations

import numpy as np

import autograd_async as aa


def load_from_torch(ours, theirs) -> None:
    """Copy every parameter and buffer of `theirs` into `ours` (strict: same keys and shapes)."""
    state = {k: aa.tensor(v.detach().numpy()) for k, v in theirs.state_dict().items()}
    ours.load_state_dict(state)


def compare_layer(torch, ours, theirs, *arrays, rtol=1e-10, atol=1e-12, call=None, **kwargs):
    """Same inputs (float64, requiring grad) through both; outputs, input and parameter grads."""
    ours.double()
    theirs.double()
    load_from_torch(ours, theirs)
    mine = [aa.tensor(a, requires_grad=a.dtype.kind == "f") for a in arrays]
    ref = [torch.tensor(a, requires_grad=a.dtype.kind == "f") for a in arrays]
    call = call or (lambda layer, *xs: layer(*xs, **kwargs))
    out_ours, out_theirs = call(ours, *mine), call(theirs, *ref)
    if isinstance(out_theirs, tuple):
        outs = [(a, b) for a, b in zip(out_ours, out_theirs, strict=True) if b is not None]
    else:
        outs = [(out_ours, out_theirs)]
    rng = np.random.default_rng(1)
    loss_ours, loss_theirs = 0, 0
    for a, b in outs:
        np.testing.assert_allclose(np.asarray(a.detach()), b.detach().numpy(), rtol=rtol, atol=atol)
        if b.dtype.is_floating_point and b.requires_grad:
            weights = rng.standard_normal(tuple(b.shape))
            loss_ours = loss_ours + (a * aa.tensor(weights)).sum()
            loss_theirs = loss_theirs + (b * torch.tensor(weights)).sum()
    if isinstance(loss_theirs, int):
        return
    loss_ours.backward()
    loss_theirs.backward()
    for x, t in zip(mine, ref, strict=True):
        if t.grad is not None:
            np.testing.assert_allclose(np.asarray(x.grad), t.grad.numpy(), rtol=rtol, atol=atol)
    grads = dict(theirs.named_parameters())
    for name, p in ours.named_parameters():
        expected = grads[name].grad
        if expected is None:
            assert p.grad is None, name
        else:
            np.testing.assert_allclose(
                np.asarray(p.grad), expected.numpy(), rtol=rtol, atol=atol, err_msg=name
            )
