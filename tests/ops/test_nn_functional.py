"""nn.functional against PyTorch, plus the fused nodes' shapes, reductions and errors."""

from __future__ import annotations

import numpy as np
import pytest
from gradients import check_op, compare_torch, to_numpy

import autograd_async as aa
from autograd_async.autograd import gradgradcheck
from autograd_async.nn import functional as F  # noqa: N812

RNG = np.random.default_rng(0)
X = RNG.standard_normal((5, 4))
T = RNG.integers(0, 4, size=5)


def test_activations_match_torch(torch) -> None:
    tf = torch.nn.functional
    for ours, theirs in (
        (F.relu, tf.relu),
        (F.gelu, tf.gelu),
        (lambda t: F.gelu(t, approximate="tanh"), lambda t: tf.gelu(t, approximate="tanh")),
        (lambda t: F.softmax(t, 1), lambda t: tf.softmax(t, 1)),
        (lambda t: F.softmax(t, dim=0), lambda t: tf.softmax(t, dim=0)),
        (lambda t: F.log_softmax(t, -1), lambda t: tf.log_softmax(t, -1)),
        (F.sigmoid, torch.sigmoid),
        (F.tanh, torch.tanh),
    ):
        compare_torch(torch, ours, theirs, X)


def test_linear_matches_torch_and_is_one_node(torch) -> None:
    tf = torch.nn.functional
    w, b = RNG.standard_normal((3, 4)), RNG.standard_normal(3)
    compare_torch(torch, F.linear, tf.linear, X, w, b)
    compare_torch(torch, F.linear, tf.linear, X, w)
    compare_torch(torch, F.linear, tf.linear, RNG.standard_normal((2, 5, 4)), w, b)
    compare_torch(torch, F.linear, tf.linear, RNG.standard_normal(4), w, b)
    out = F.linear(aa.tensor(X), aa.tensor(w, requires_grad=True), aa.tensor(b))
    assert out.grad_fn.name() == "LinearBackward0"
    assert out.grad_fn.next_functions[0][0] is None
    with pytest.raises(
        RuntimeError,
        match=r"mat1 and mat2 shapes cannot be multiplied \(5x4 and "
        r"2x3\)",
    ):
        F.linear(aa.tensor(X), aa.randn(3, 2, dtype=aa.float64))


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy_matches_torch(torch, reduction: str) -> None:
    tf = torch.nn.functional
    compare_torch(
        torch,
        lambda t: F.cross_entropy(t, aa.tensor(T), reduction=reduction),
        lambda t: tf.cross_entropy(t, torch.tensor(T), reduction=reduction),
        X,
    )
    ignored = T.copy()
    ignored[[1, 3]] = -100
    compare_torch(
        torch,
        lambda t: F.cross_entropy(t, aa.tensor(ignored), reduction=reduction),
        lambda t: tf.cross_entropy(t, torch.tensor(ignored), reduction=reduction),
        X,
    )
    spatial = RNG.standard_normal((2, 4, 3))
    target = RNG.integers(0, 4, size=(2, 3))
    compare_torch(
        torch,
        lambda t: F.cross_entropy(t, aa.tensor(target), reduction=reduction),
        lambda t: tf.cross_entropy(t, torch.tensor(target), reduction=reduction),
        spatial,
    )


def test_cross_entropy_is_one_node_with_softmax_minus_onehot_gradient() -> None:
    logits = aa.tensor(X, requires_grad=True)
    loss = F.cross_entropy(logits, aa.tensor(T))
    assert loss.grad_fn.name() == "CrossEntropyLossBackward0"
    loss.backward()
    p = np.exp(X - X.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    p[np.arange(5), T] -= 1
    np.testing.assert_allclose(to_numpy(logits.grad), p / 5, rtol=1e-12)


def test_cross_entropy_float32_stays_float32() -> None:
    logits = aa.randn(8, 10, requires_grad=True)
    loss = F.cross_entropy(logits, aa.tensor(np.arange(8)))
    loss.backward()
    assert loss.dtype == aa.float32 and logits.grad.dtype == aa.float32


def test_cross_entropy_errors() -> None:
    with pytest.raises(IndexError, match="Target 7 is out of bounds."):
        F.cross_entropy(aa.tensor(X), aa.tensor([0, 1, 7, 0, 0]))
    with pytest.raises(ValueError, match=r"Expected target size \(5,\), got \(4,\)"):
        F.cross_entropy(aa.tensor(X), aa.tensor([0, 1, 2, 3]))
    with pytest.raises(ValueError, match="bogus is not a valid value for reduction"):
        F.cross_entropy(aa.tensor(X), aa.tensor(T), reduction="bogus")
    with pytest.raises(
        RuntimeError, match="expected target dtype to be Long or Byte, but got Double"
    ):
        F.cross_entropy(aa.tensor(X), aa.tensor(X[:, 0]))


def _numpy_cross_entropy(
    x: np.ndarray, target: np.ndarray, reduction: str, ignore_index: int
) -> np.ndarray:
    keep = target != ignore_index
    shifted = x - x.max(axis=1, keepdims=True)
    logp = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    losses = -logp[np.arange(len(target)), np.where(keep, target, 0)] * keep
    if reduction == "none":
        return losses
    return losses.sum() / (keep.sum() if reduction == "mean" else 1)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize(
    ("target", "ignore_index"),
    [
        ([0, 3, 1, 1, 2], -100),  # nothing ignored: the loss is taken without a mask
        ([0, -100, 1, -100, 2], -100),  # the default index, present
        ([0, 3, 1, 1, 2], 1),  # an index inside the targets' range
        ([0, 3, 0, 0, 2], 1),  # inside the range of classes but absent from the targets
        ([0, 2, 0, 0, 2], 3),  # a valid class beyond the targets' range: no mask needed
        ([3, 3, 1, 1, 2], 3),  # at the end of the targets' range
    ],
)
def test_cross_entropy_ignore_index_values_and_gradients(
    target, ignore_index, reduction: str
) -> None:
    t = np.array(target)
    check_op(
        lambda x: F.cross_entropy(x, aa.tensor(t), reduction=reduction, ignore_index=ignore_index),
        lambda x: _numpy_cross_entropy(x, t, reduction, ignore_index),
        X,
    )


def test_cross_entropy_with_every_target_ignored_is_nan_like_torch() -> None:
    x = aa.tensor(X, requires_grad=True)
    loss = F.cross_entropy(x, aa.tensor([2] * 5), ignore_index=2)
    assert np.isnan(loss.item())
    assert F.cross_entropy(x, aa.tensor([2] * 5), ignore_index=2, reduction="sum").item() == 0


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_mse_loss_matches_torch(torch, reduction: str) -> None:
    y = RNG.standard_normal((5, 4))
    compare_torch(
        torch,
        lambda a, b: F.mse_loss(a, b, reduction=reduction),
        lambda a, b: torch.nn.functional.mse_loss(a, b, reduction=reduction),
        X,
        y,
    )


def test_dropout() -> None:
    x = aa.ones(1000, requires_grad=True)
    assert F.dropout(x, 0.3, training=False) is x
    assert F.dropout(x, 0.0) is x
    out = F.dropout(x, 0.25)
    kept = to_numpy(out) != 0
    assert 0.6 < kept.mean() < 0.9
    np.testing.assert_allclose(to_numpy(out)[kept], 1 / 0.75, rtol=1e-6)
    out.sum().backward()
    np.testing.assert_allclose(to_numpy(x.grad), to_numpy(out), rtol=1e-6)
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1"):
        F.dropout(x, 1.5)


def test_finite_differences_of_fused_ops() -> None:
    w = RNG.standard_normal((3, 4))
    check_op(lambda a, b: F.linear(a, b), lambda a, b: a @ b.T, X, w)

    def ce(a: np.ndarray) -> np.ndarray:
        m = a.max(1, keepdims=True)
        lse = np.log(np.exp(a - m).sum(1)) + m[:, 0]
        return np.mean(lse - a[np.arange(5), T])

    check_op(lambda a: F.cross_entropy(a, aa.tensor(T)), ce, X)


def test_second_derivatives_of_nn_ops(torch) -> None:
    for fn in (
        lambda t: F.softmax(t, 1) ** 2,
        lambda t: F.log_softmax(t, 0) * t,
        lambda t: F.gelu(t),
        lambda t: F.gelu(t, approximate="tanh"),
        lambda t: F.cross_entropy(t, aa.tensor(T)),
        lambda t: F.linear(t, t[:2] * 1, t[0, :2] * 1).tanh(),
    ):
        assert gradgradcheck(fn, (aa.tensor(X, requires_grad=True),))
    x = aa.tensor(X, requires_grad=True)
    (g,) = aa.autograd.grad(F.cross_entropy(x, aa.tensor(T)), x, create_graph=True)
    (gg,) = aa.autograd.grad((g * g).sum(), x)
    tx = torch.tensor(X, requires_grad=True)
    (tg,) = torch.autograd.grad(
        torch.nn.functional.cross_entropy(tx, torch.tensor(T)), tx, create_graph=True
    )
    (tgg,) = torch.autograd.grad((tg * tg).sum(), tx)
    np.testing.assert_allclose(to_numpy(gg), tgg.numpy(), rtol=1e-8, atol=1e-12)


def test_mlp_step_on_device(device: str) -> None:
    rng = np.random.default_rng(1)
    x = aa.tensor(rng.standard_normal((16, 8)), dtype=aa.float32, device=device)
    y = aa.tensor(rng.integers(0, 3, 16), device=device)
    w1 = aa.tensor(
        rng.standard_normal((6, 8)) * 0.3, dtype=aa.float32, device=device, requires_grad=True
    )
    w2 = aa.tensor(
        rng.standard_normal((3, 6)) * 0.3, dtype=aa.float32, device=device, requires_grad=True
    )
    loss = F.cross_entropy(F.linear(F.relu(F.linear(x, w1)), w2), y)
    loss.backward()
    assert w1.grad.device == aa.device(device) and w1.grad.dtype == aa.float32
    assert w2.grad.shape == (3, 6)


@pytest.mark.parametrize("classes", [3, 40])
def test_cross_entropy_rows_far_apart_and_nan(classes: int) -> None:
    """The per-row shift (a max over few classes is taken differently) keeps every row finite."""
    rng = np.random.default_rng(5)
    logits = rng.standard_normal((6, classes)).astype(np.float32)
    logits[0] += 1000.0
    logits[1] -= 1000.0
    logits[5, 1] = np.nan
    target = rng.integers(0, classes, 6)
    x = aa.tensor(logits, requires_grad=True)
    losses = F.cross_entropy(x, aa.tensor(target), reduction="none")
    shifted = logits - logits.max(1, keepdims=True)
    want = np.log(np.exp(shifted).sum(1)) - shifted[np.arange(6), target]
    np.testing.assert_allclose(to_numpy(losses), want, rtol=1e-6, atol=1e-6)
    assert np.isnan(to_numpy(losses)[5]) and np.isfinite(to_numpy(losses)[:5]).all()
