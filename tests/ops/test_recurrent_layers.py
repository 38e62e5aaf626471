"""The functional recurrent networks (aten's lstm, gru, rnn_tanh, rnn_relu) against PyTorch:
padded (batch_first or not) and packed forms, biases, both directions, projections; outputs
and the gradients of input, states and every weight."""

from __future__ import annotations

import numpy as np
import pytest

import autograd_async as aa
from autograd_async.autograd import gradcheck

MODES = ["lstm", "gru", "rnn_tanh", "rnn_relu"]
_GATES = {"lstm": 4, "gru": 3, "rnn_tanh": 1, "rnn_relu": 1}


def _weights(mode, layers, directions, bias, hidden=4, size=3, proj=0, seed=0):
    rng = np.random.default_rng(seed)
    gates = _GATES[mode] * hidden
    out = []
    for layer in range(layers):
        width = size if layer == 0 else (proj or hidden) * directions
        for _ in range(directions):
            out += [
                rng.normal(size=(gates, width)) * 0.5,
                rng.normal(size=(gates, proj or hidden)) * 0.5,
            ]
            if bias:
                out += [rng.normal(size=gates) * 0.5, rng.normal(size=gates) * 0.5]
            if proj:
                out.append(rng.normal(size=(proj, hidden)) * 0.5)
    return out


def _run(lib, mode, arrays, packed_sizes, device, *flags):
    on = {} if device is None else {"device": device}
    tensors = [lib.tensor(a, requires_grad=True, **on) for a in arrays]
    x, h0, c0, *params = tensors
    hx = (h0, c0) if mode == "lstm" else h0
    if packed_sizes is None:
        result = getattr(lib, mode)(x, hx, params, *flags)
    else:
        sizes = lib.tensor(packed_sizes)
        result = getattr(lib, mode)(x, sizes, hx, params, *flags[:-1])
    loss = sum((r * r).sum() for r in result)
    loss.backward()
    used = tensors if mode == "lstm" else [x, h0, *params]
    return [r.detach() for r in result] + [t.grad for t in used]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("bidirectional", [False, True])
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("batch_first", [False, True])
def test_padded_form_matches_torch(torch, device, mode, bidirectional, bias, batch_first):
    rng = np.random.default_rng(1)
    directions = 2 if bidirectional else 1
    proj = 2 if mode == "lstm" and bias else 0
    x = rng.normal(size=(2, 5, 3) if batch_first else (5, 2, 3))
    h0 = rng.normal(size=(2 * directions, 2, proj or 4))
    c0 = rng.normal(size=(2 * directions, 2, 4))
    arrays = [x, h0, c0, *_weights(mode, 2, directions, bias, proj=proj)]
    flags = (bias, 2, 0.0, False, bidirectional, batch_first)
    ours = _run(aa, mode, arrays, None, device, *flags)
    theirs = _run(torch, mode, arrays, None, None, *flags)
    for mine, ref in zip(ours, theirs, strict=True):
        assert tuple(mine.shape) == tuple(ref.shape)
        np.testing.assert_allclose(mine.cpu().numpy(), ref.numpy(), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("mode", MODES)
def test_packed_form_matches_torch(torch, device, mode):
    rng = np.random.default_rng(2)
    sizes = [3, 3, 2, 1]
    data = rng.normal(size=(sum(sizes), 3))
    h0, c0 = rng.normal(size=(2, 3, 4)), rng.normal(size=(2, 3, 4))
    arrays = [data, h0, c0, *_weights(mode, 1, 2, True)]
    flags = (True, 1, 0.0, False, True, False)
    ours = _run(aa, mode, arrays, sizes, device, *flags)
    theirs = _run(torch, mode, arrays, sizes, None, *flags)
    for mine, ref in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(mine.cpu().numpy(), ref.numpy(), rtol=1e-10, atol=1e-10)


def test_finite_differences(device):
    rng = np.random.default_rng(3)
    weights = [
        aa.tensor(w, device=device, requires_grad=True)
        for w in _weights("gru", 1, 1, True, hidden=2, size=2)
    ]
    x = aa.tensor(rng.normal(size=(3, 2, 2)), device=device, requires_grad=True)
    h0 = aa.tensor(rng.normal(size=(1, 2, 2)), device=device, requires_grad=True)

    def gru(x, h0, *w):
        return aa.gru(x, h0, list(w), True, 1, 0.0, False, False, False)[0]

    assert gradcheck(gru, (x, h0, *weights))


def test_wrong_number_of_weights_is_named():
    x, h0 = aa.zeros(2, 1, 3), aa.zeros(1, 1, 4)
    with pytest.raises(RuntimeError, match="expected 4 parameter tensors"):
        aa.rnn_tanh(x, h0, [aa.zeros(4, 3)], True, 1, 0.0, False, False, False)
