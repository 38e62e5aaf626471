"""`utils.checkpoint.checkpoint`, reentrant and not, against PyTorch's on the same programs:
gradients equal to an unchecheckpointed run, the recomputation, dropout's mask kept by
preserve_rng_state, activations not kept, and the warning when use_reentrant is not passed."""

from __future__ import annotations

import gc
import warnings
import weakref

import numpy as np
import pytest

import autograd_async as aa
from autograd_async.utils.checkpoint import checkpoint

X = np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]])
W1 = np.array([[0.1, 0.2], [-0.3, 0.4], [0.5, -0.6]])
W2 = np.array([[1.0], [-2.0]])


def _mlp(lib, use_reentrant, *, mode="backward"):
    """Gradients of a two-layer net through checkpoint (None: no checkpoint) and call count."""
    x = lib.tensor(X, dtype=lib.float64, requires_grad=True)
    w1 = lib.tensor(W1, dtype=lib.float64, requires_grad=True)
    w2 = lib.tensor(W2, dtype=lib.float64, requires_grad=True)
    calls = []

    def block(inp, scale):
        calls.append(lib.is_grad_enabled())
        return ((inp @ w1).tanh() * scale) @ w2

    if use_reentrant is None:
        out = block(x, 2.0)
    else:
        out = lib.utils.checkpoint.checkpoint(block, x, 2.0, use_reentrant=use_reentrant)
    loss = (out * out).sum()
    if mode == "backward":
        loss.backward()
        grads = (x.grad, w1.grad, w2.grad)
    else:
        grads = lib.autograd.grad(loss, (x, w1, w2))
    return [np.round(g.tolist(), 10).tolist() for g in grads], calls


@pytest.mark.parametrize("use_reentrant", [True, False])
def test_gradients_and_recomputation_match_pytorch(torch, use_reentrant):
    ours = _mlp(aa, use_reentrant)
    assert ours == _mlp(torch, use_reentrant)
    assert ours[0] == _mlp(aa, None)[0]
    # Reentrant: forward under no_grad, recomputed with grad; non-reentrant: both with grad.
    assert ours[1] == ([False, True] if use_reentrant else [True, True])


def test_non_reentrant_works_with_autograd_grad_like_pytorch(torch):
    ours = _mlp(aa, False, mode="grad")
    assert ours == _mlp(torch, False, mode="grad")
    assert ours[0] == _mlp(aa, None, mode="grad")[0]


def _dropout_program(lib, use_reentrant, preserve):
    lib.manual_seed(0)
    x = lib.tensor(np.linspace(-1, 1, 64).reshape(8, 8), dtype=lib.float64, requires_grad=True)

    def block(t):
        return lib.nn.functional.dropout(t.sin(), p=0.5, training=True) * 3.0

    if use_reentrant is None:
        out = block(x)
    else:
        out = checkpoint(block, x, use_reentrant=use_reentrant, preserve_rng_state=preserve)
    (out * x).sum().backward()
    forward_mask = (out.detach().numpy() != 0).tolist()
    return forward_mask, np.asarray(x.grad).round(10).tolist()


@pytest.mark.parametrize("use_reentrant", [True, False])
def test_preserve_rng_state_recomputes_the_same_dropout_mask(use_reentrant):
    plain = _dropout_program(aa, None, True)
    assert _dropout_program(aa, use_reentrant, True) == plain
    mask, grad = _dropout_program(aa, use_reentrant, False)
    assert mask == plain[0] and grad != plain[1]  # a fresh mask in backward: other gradients


def test_dropout_program_behaves_alike_in_pytorch(torch):
    from torch.utils.checkpoint import checkpoint as torch_checkpoint

    torch.manual_seed(0)
    x = torch.linspace(-1, 1, 64, dtype=torch.float64).reshape(8, 8).requires_grad_()

    def block(t):
        return torch.nn.functional.dropout(t.sin(), p=0.5, training=True) * 3.0

    out = torch_checkpoint(block, x, use_reentrant=False)
    (out * x).sum().backward()
    # PyTorch's gradient is zero exactly where its forward mask is: the mask was recomputed.
    assert ((x.grad == 0) == (out.detach() == 0)).all()
    _, grad = _dropout_program(aa, False, True)
    mask, _ = _dropout_program(aa, None, True)
    assert ((np.asarray(grad) == 0) == ~np.asarray(mask)).all()


def _warning(lib, **kw):
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = lib.utils.checkpoint.checkpoint(lambda t: t.sin(), x, **kw)
    out.sum().backward()
    return [
        ("use_reentrant parameter should be passed explicitly" in str(w.message)) for w in caught
    ], np.round(x.grad.tolist(), 5).tolist()


def test_warns_without_use_reentrant_like_pytorch(torch):
    import torch.utils.checkpoint  # noqa: F401 - makes torch.utils.checkpoint reachable

    assert _warning(aa) == _warning(torch)
    assert _warning(aa)[0] == [True]
    assert _warning(aa, use_reentrant=False) == _warning(torch, use_reentrant=False)


def test_no_input_requires_grad_warns_like_pytorch(torch):
    import torch.utils.checkpoint  # noqa: F401

    def program(lib):
        x = lib.tensor([1.0, 2.0])
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out = lib.utils.checkpoint.checkpoint(lambda t: t * 2, x, use_reentrant=True)
        return [str(w.message) for w in caught], out.requires_grad

    assert program(aa) == program(torch)


def test_non_reentrant_keeps_no_activation():
    x = aa.tensor(X, requires_grad=True)
    kept = []

    def block(t):
        h = t.exp() * 2.0
        kept.append(weakref.ref(h))
        return (h.sin() * h).sum()

    plain = block(x)
    gc.collect()
    assert kept[0]() is not None  # without checkpoint, the graph holds the activation
    loss = checkpoint(block, x, use_reentrant=False)
    gc.collect()
    assert kept[1]() is None
    loss.backward()
    grad = x.grad.numpy().copy()
    x.grad = None
    plain.backward()
    np.testing.assert_allclose(grad, x.grad.numpy(), rtol=1e-6)


def test_keyword_arguments():
    x = aa.tensor([1.0, 2.0], requires_grad=True)
    out = checkpoint(lambda t, *, scale: t * t * scale, x, scale=3.0, use_reentrant=False)
    out.sum().backward()
    assert x.grad.tolist() == [6.0, 12.0]
    with pytest.raises(ValueError, match="Unexpected keyword arguments: scale"):
        checkpoint(lambda t, *, scale: t * scale, x, scale=3.0, use_reentrant=True)


def test_retain_graph_recomputes_for_each_backward():
    x = aa.tensor([1.0, 2.0], dtype=aa.float64, requires_grad=True)
    calls = []

    def block(t):
        calls.append(1)
        return (t.sin() * t).sum()

    loss = checkpoint(block, x, use_reentrant=False)
    loss.backward(retain_graph=True)
    first = x.grad.tolist()
    loss.backward()
    assert x.grad.tolist() == [2 * g for g in first]
    assert len(calls) == 3


def test_recomputation_that_saves_differently_is_refused():
    x = aa.tensor([1.0, 2.0], requires_grad=True)
    shapes = iter([(2,), (1, 2)])

    def block(t):
        return (t.reshape(next(shapes)).exp()).sum()

    loss = checkpoint(block, x, use_reentrant=False)
    with pytest.raises(RuntimeError, match="different metadata than during the forward pass"):
        loss.backward()


def test_reentrant_form_refuses_grad_and_inputs_like_pytorch(torch):
    import torch.utils.checkpoint  # noqa: F401

    def program(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        outcomes = []
        for run in (
            lambda loss: lib.autograd.grad(loss, x),
            lambda loss: loss.backward(inputs=[x]),
            lambda loss: loss.backward(),
        ):
            loss = lib.utils.checkpoint.checkpoint(lambda t: (t * t).sum(), x, use_reentrant=True)
            try:
                run(loss)
                outcomes.append(None)
            except RuntimeError as exc:
                outcomes.append("incompatible with .grad()" in str(exc))
        return outcomes, x.grad.tolist()

    assert program(aa) == program(torch) == ([True, True, None], [2.0, 4.0])
