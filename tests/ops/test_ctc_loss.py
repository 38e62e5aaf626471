"""ctc_loss and CTCLoss against PyTorch: losses and gradients (through log_softmax, where finite
differences confirm them, and with respect to log_probs directly, PyTorch's rule), padded and
concatenated targets, every reduction, zero_infinity, unbatched input and the errors."""

from __future__ import annotations

import numpy as np
import pytest

import autograd_async as aa
from autograd_async.autograd import gradcheck

RNG = np.random.default_rng(0)
T, N, C = 12, 4, 5
LOGITS = RNG.standard_normal((T, N, C))
TARGETS = np.array([[1, 2, 2, 3], [1, 1, 4, 0], [3, 2, 1, 1], [4, 4, 4, 4]])
INPUT_LENGTHS = np.array([12, 10, 7, 12])
TARGET_LENGTHS = np.array([4, 3, 2, 0])


def _both(torch, device, reduction, zero_infinity, direct, targets=TARGETS, lengths=INPUT_LENGTHS):
    x = aa.tensor(LOGITS, device=device, requires_grad=True)
    tx = torch.tensor(LOGITS, requires_grad=True)
    ours = aa.nn.functional.ctc_loss(
        x if direct else x.log_softmax(2),
        aa.tensor(targets, device=device),
        aa.tensor(lengths),
        aa.tensor(TARGET_LENGTHS),
        reduction=reduction,
        zero_infinity=zero_infinity,
    )
    theirs = torch.nn.functional.ctc_loss(
        tx if direct else tx.log_softmax(2),
        torch.tensor(targets),
        torch.tensor(lengths),
        torch.tensor(TARGET_LENGTHS),
        reduction=reduction,
        zero_infinity=zero_infinity,
    )
    return x, tx, ours, theirs


@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
@pytest.mark.parametrize("zero_infinity", [False, True])
@pytest.mark.parametrize("direct", [False, True])
def test_ctc_loss_and_gradient_match_torch(torch, device, reduction, zero_infinity, direct) -> None:
    x, tx, ours, theirs = _both(torch, device, reduction, zero_infinity, direct)
    assert ours.device == aa.device(device)
    np.testing.assert_allclose(np.asarray(ours.detach().cpu()), theirs.detach().numpy(), rtol=1e-10)
    weights = RNG.standard_normal(tuple(theirs.shape))
    (grad,) = aa.autograd.grad(ours, [x], aa.tensor(weights, device=device))
    (expected,) = torch.autograd.grad(theirs, [tx], torch.tensor(weights))
    np.testing.assert_allclose(np.asarray(grad.cpu()), expected.numpy(), rtol=1e-9, atol=1e-12)


def test_infeasible_alignments_are_infinite_or_zeroed(torch) -> None:
    short = np.array([2, 2, 2, 2])
    for zero_infinity in (False, True):
        x, tx, ours, theirs = _both(torch, "cpu", "none", zero_infinity, False, lengths=short)
        np.testing.assert_allclose(np.asarray(ours.detach()), theirs.detach().numpy(), rtol=1e-12)
        if zero_infinity:
            (grad,) = aa.autograd.grad(ours.sum(), [x])
            (expected,) = torch.autograd.grad(theirs.sum(), [tx])
            np.testing.assert_allclose(np.asarray(grad), expected.numpy(), atol=1e-12)


def test_gradient_through_log_softmax_by_finite_differences(device) -> None:
    targets = aa.tensor(TARGETS[:2], device=device)
    x = aa.tensor(LOGITS[:6, :2], device=device, requires_grad=True)

    def loss(t):
        return aa.nn.functional.ctc_loss(
            t.log_softmax(2), targets, (6, 5), (3, 2), reduction="none"
        )

    assert gradcheck(loss, (x,))


def test_concatenated_targets_unbatched_input_and_the_layer(torch) -> None:
    concatenated = np.concatenate([TARGETS[n, : TARGET_LENGTHS[n]] for n in range(N)])
    lp = LOGITS.copy()
    ours = aa.nn.CTCLoss(reduction="sum")(
        aa.tensor(lp).log_softmax(2),
        aa.tensor(concatenated),
        tuple(INPUT_LENGTHS),
        tuple(TARGET_LENGTHS),
    )
    theirs = torch.nn.CTCLoss(reduction="sum")(
        torch.tensor(lp).log_softmax(2),
        torch.tensor(concatenated),
        tuple(INPUT_LENGTHS),
        tuple(TARGET_LENGTHS),
    )
    np.testing.assert_allclose(float(ours), float(theirs), rtol=1e-12)
    one = aa.nn.functional.ctc_loss(
        aa.tensor(lp[:, 0]).log_softmax(1),
        aa.tensor(TARGETS[0]),
        aa.tensor(12),
        aa.tensor(4),
        reduction="none",
    )
    ref = torch.nn.functional.ctc_loss(
        torch.tensor(lp[:, 0]).log_softmax(1),
        torch.tensor(TARGETS[0]),
        torch.tensor(12),
        torch.tensor(4),
        reduction="none",
    )
    assert tuple(one.shape) == tuple(ref.shape) == ()
    np.testing.assert_allclose(float(one), float(ref), rtol=1e-12)
    layer = aa.nn.CTCLoss(blank=4, zero_infinity=True)
    assert (layer.blank, layer.reduction, layer.zero_infinity) == (4, "mean", True)


@pytest.mark.parametrize(
    ("kwargs", "lengths", "targets"),
    [
        ({"blank": 5}, ((12,) * 4, (2,) * 4), TARGETS),
        ({}, ((13, 12, 12, 12), (2,) * 4), TARGETS),
        ({}, ((12,) * 4, (5, 2, 2, 2)), TARGETS),
        ({}, ((12,) * 3, (2,) * 4), TARGETS),
        ({}, ((12,) * 4, (2,) * 3), TARGETS),
        ({"reduction": "avg"}, ((12,) * 4, (2,) * 4), TARGETS),
    ],
)
def test_errors_match_torch(torch, kwargs, lengths, targets) -> None:
    lp = LOGITS
    with pytest.raises(Exception) as theirs:
        torch.nn.functional.ctc_loss(torch.tensor(lp), torch.tensor(targets), *lengths, **kwargs)
    with pytest.raises(type(theirs.value)) as ours:
        aa.nn.functional.ctc_loss(aa.tensor(lp), aa.tensor(targets), *lengths, **kwargs)
    assert str(ours.value) == str(theirs.value)
