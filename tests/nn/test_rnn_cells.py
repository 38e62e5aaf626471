"""RNNCell, LSTMCell and GRUCell against PyTorch, and the recurrent layers' input errors."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import autograd_async as aa
from autograd_async import nn


def to_numpy(t):
    return t.detach().cpu().numpy()


def pair(torch, kind, *args, **kwargs):
    torch.manual_seed(0)
    theirs = getattr(torch.nn, kind)(*args, **kwargs).double()
    ours = getattr(nn, kind)(*args, **kwargs).double()
    ours.load_state_dict({k: aa.tensor(v.detach().numpy()) for k, v in theirs.state_dict().items()})
    return ours, theirs


CELLS = [
    ("RNNCell", {}),
    ("RNNCell", {"nonlinearity": "relu"}),
    ("RNNCell", {"bias": False}),
    ("LSTMCell", {}),
    ("LSTMCell", {"bias": False}),
    ("GRUCell", {}),
    ("GRUCell", {"bias": False}),
]


@pytest.mark.parametrize(("kind", "kwargs"), CELLS)
@pytest.mark.parametrize("shape", [(3, 4), (4,)], ids=["batched", "unbatched"])
@pytest.mark.parametrize("with_state", [True, False])
def test_cell_matches_torch(torch, device, kind, kwargs, shape, with_state):
    ours, theirs = pair(torch, kind, 4, 5, **kwargs)
    ours.to(device)
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape)
    state_shape = shape[:-1] + (5,)
    count = 2 if kind == "LSTMCell" else 1
    states = [rng.standard_normal(state_shape) for _ in range(count)] if with_state else []
    x_ours = aa.tensor(x, requires_grad=True, device=device)
    x_ref = torch.tensor(x, requires_grad=True)
    s_ours = [aa.tensor(s, requires_grad=True, device=device) for s in states]
    s_ref = [torch.tensor(s, requires_grad=True) for s in states]

    def hx(values):
        if not values:
            return None
        return tuple(values) if count == 2 else values[0]

    out_ours, out_ref = ours(x_ours, hx(s_ours)), theirs(x_ref, hx(s_ref))
    out_ours = list(out_ours) if count == 2 else [out_ours]
    out_ref = list(out_ref) if count == 2 else [out_ref]
    loss_ours, loss_ref = 0, 0
    for a, b in zip(out_ours, out_ref, strict=True):
        np.testing.assert_allclose(to_numpy(a), b.detach().numpy(), rtol=1e-10, atol=1e-12)
        w = rng.standard_normal(tuple(b.shape))
        loss_ours = loss_ours + (a * aa.tensor(w, device=device)).sum()
        loss_ref = loss_ref + (b * torch.tensor(w)).sum()
    loss_ours.backward()
    loss_ref.backward()
    for a, b in zip([x_ours, *s_ours], [x_ref, *s_ref], strict=True):
        np.testing.assert_allclose(to_numpy(a.grad), b.grad.numpy(), rtol=1e-9, atol=1e-12)
    ref_params = dict(theirs.named_parameters())
    for name, p in ours.named_parameters():
        np.testing.assert_allclose(
            to_numpy(p.grad), ref_params[name].grad.numpy(), rtol=1e-9, atol=1e-12, err_msg=name
        )


def test_cells_double_backward_matches_torch(torch):
    for kind in ("LSTMCell", "GRUCell", "RNNCell"):
        ours, theirs = pair(torch, kind, 3, 4)
        x = np.random.default_rng(1).standard_normal((2, 3))
        grads = []
        for layer, lib in ((ours, aa), (theirs, torch)):
            xt = lib.tensor(x, requires_grad=True)
            out = layer(xt)
            out = out[1] if isinstance(out, tuple) else out
            params = list(layer.parameters())
            first = lib.autograd.grad((out**3).sum(), [xt, *params], create_graph=True)
            second = lib.autograd.grad(sum((g**2).sum() for g in first), [xt, *params])
            grads.append([np.asarray(g.detach().numpy()) for g in second])
        for a, b in zip(*grads, strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-8, atol=1e-10)


def error_of(fn):
    try:
        fn()
    except Exception as exc:  # noqa: BLE001 - the type and text are what is compared
        return type(exc).__name__, str(exc)
    return None


def errors_agree(torch, build, call):
    """Both libraries raise the same error type and text for `call(layer, tensor)`."""
    ours, theirs = build(nn), build(torch.nn)
    mine = error_of(lambda: call(ours, aa.tensor))
    ref = error_of(lambda: call(theirs, lambda a: torch.tensor(np.asarray(a, np.float32))))
    assert ref is not None
    assert mine == ref


F32 = np.float32
INPUT_ERRORS = [
    (lambda m: m.LSTM(4, 3), lambda layer, t: layer(t(np.zeros((5, 2, 3), F32)))),
    (lambda m: m.GRU(4, 3), lambda layer, t: layer(t(np.zeros((5, 2, 2, 4), F32)))),
    (lambda m: m.RNN(4, 3), lambda layer, t: layer(t(np.zeros((5, 2, 2, 4), F32)))),
    (lambda m: m.LSTM(4, 3), lambda layer, t: layer(t(np.zeros((5,), F32)))),
    (
        lambda m: m.RNN(4, 3),
        lambda layer, t: layer(t(np.zeros((5, 2, 4), F32)), t(np.zeros((1, 3, 3), F32))),
    ),
    (
        lambda m: m.GRU(4, 3),
        lambda layer, t: layer(t(np.zeros((5, 2, 4), F32)), t(np.zeros((2, 3), F32))),
    ),
    (
        lambda m: m.GRU(4, 3),
        lambda layer, t: layer(t(np.zeros((5, 4), F32)), t(np.zeros((1, 1, 3), F32))),
    ),
    (
        lambda m: m.LSTM(4, 3),
        lambda layer, t: layer(
            t(np.zeros((5, 2, 4), F32)), (t(np.zeros((1, 3, 3), F32)), t(np.zeros((1, 2, 3), F32)))
        ),
    ),
    (
        lambda m: m.LSTM(4, 3),
        lambda layer, t: layer(
            t(np.zeros((5, 2, 4), F32)), (t(np.zeros((1, 2, 3), F32)), t(np.zeros((1, 2, 2), F32)))
        ),
    ),
    (
        lambda m: m.LSTM(4, 3),
        lambda layer, t: layer(
            t(np.zeros((5, 2, 4), F32)), (t(np.zeros((2, 3), F32)), t(np.zeros((2, 3), F32)))
        ),
    ),
    (
        lambda m: m.LSTM(4, 3, proj_size=2),
        lambda layer, t: layer(
            t(np.zeros((5, 2, 4), F32)), (t(np.zeros((1, 2, 3), F32)), t(np.zeros((1, 2, 3), F32)))
        ),
    ),
    (lambda m: m.LSTMCell(4, 3), lambda layer, t: layer(t(np.zeros((2, 3), F32)))),
    (
        lambda m: m.LSTMCell(4, 3),
        lambda layer, t: layer(
            t(np.zeros((2, 4), F32)), (t(np.zeros((3, 3), F32)), t(np.zeros((2, 3), F32)))
        ),
    ),
    (
        lambda m: m.GRUCell(4, 3),
        lambda layer, t: layer(t(np.zeros((2, 4), F32)), t(np.zeros((2, 5), F32))),
    ),
    (lambda m: m.RNNCell(4, 3), lambda layer, t: layer(t(np.zeros((2, 2, 4), F32)))),
    (
        lambda m: m.GRUCell(4, 3),
        lambda layer, t: layer(t(np.zeros((2, 4), F32)), t(np.zeros((1, 2, 3), F32))),
    ),
]


@pytest.mark.parametrize(("build", "call"), INPUT_ERRORS)
def test_input_errors_match_torch(torch, build, call):
    errors_agree(torch, build, call)


CONSTRUCTION_ERRORS = [
    lambda m: m.LSTM(4, 3, dropout=1.5),
    lambda m: m.LSTM(4, 0),
    lambda m: m.LSTM(0, 3),
    lambda m: m.LSTM(4, 3, num_layers=0),
    lambda m: m.LSTM(4, 3, proj_size=3),
    lambda m: m.LSTM(4, 3, proj_size=-1),
    lambda m: m.GRU(4, 3, proj_size=1),
    lambda m: m.RNN(4, 3, nonlinearity="gelu"),
    lambda m: m.RNN(4, 3, bias=1),
    lambda m: m.RNN(4.0, 3),
]


@pytest.mark.parametrize("build", CONSTRUCTION_ERRORS)
def test_construction_errors_match_torch(torch, build):
    mine, ref = error_of(lambda: build(nn)), error_of(lambda: build(torch.nn))
    assert ref is not None
    assert mine == ref


def test_dropout_with_one_layer_warns_as_torch():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        nn.GRU(4, 3, dropout=0.5)
    assert any(
        "non-zero dropout expects num_layers greater than 1" in str(w.message) for w in caught
    )


def test_dtype_mismatch_is_a_value_error():
    with pytest.raises(ValueError, match="does not match weight dtype"):
        nn.LSTM(4, 3)(aa.zeros(5, 2, 4, dtype=aa.float64))
