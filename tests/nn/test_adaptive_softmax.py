"""AdaptiveLogSoftmaxWithLoss against PyTorch's: parameters and state_dict keys, outputs, loss,
log_prob and predict, gradients for input and every parameter, unbatched input and errors."""

from __future__ import annotations

import numpy as np
import pytest

import autograd_async as aa

from .layer_helpers import compare_layer, load_from_torch

RNG = np.random.default_rng(0)


def _pair(torch, **kwargs):
    theirs = torch.nn.AdaptiveLogSoftmaxWithLoss(8, 20, [4, 10, 15], **kwargs)
    ours = aa.nn.AdaptiveLogSoftmaxWithLoss(8, 20, [4, 10, 15], **kwargs)
    return ours, theirs


@pytest.mark.parametrize("kwargs", [{}, {"div_value": 2.0, "head_bias": True}])
def test_outputs_loss_and_gradients_match_torch(torch, kwargs) -> None:
    ours, theirs = _pair(torch, **kwargs)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    x = RNG.standard_normal((12, 8))
    target = np.array([0, 3, 4, 9, 10, 14, 15, 19, 2, 12, 5, 17])
    compare_layer(torch, ours, theirs, x, target)


def test_log_prob_predict_and_unbatched_match_torch(torch) -> None:
    ours, theirs = _pair(torch, head_bias=True)
    ours.double()
    theirs.double()
    load_from_torch(ours, theirs)
    x = RNG.standard_normal((6, 8))
    full = ours.log_prob(aa.tensor(x))
    np.testing.assert_allclose(
        np.asarray(full.detach()), theirs.log_prob(torch.tensor(x)).detach().numpy(), rtol=1e-10
    )
    np.testing.assert_allclose(np.exp(np.asarray(full.detach())).sum(1), 1.0)
    np.testing.assert_array_equal(
        np.asarray(ours.predict(aa.tensor(x))), theirs.predict(torch.tensor(x)).numpy()
    )
    one = ours(aa.tensor(x[0]), aa.tensor(np.int64(16)))
    ref = theirs(torch.tensor(x[0]), torch.tensor(16))
    assert tuple(one.output.shape) == () and tuple(ref.output.shape) == ()
    np.testing.assert_allclose(float(one.loss), float(ref.loss), rtol=1e-10)


@pytest.mark.parametrize(
    "call",
    [
        lambda lib: lib.nn.AdaptiveLogSoftmaxWithLoss(8, 20, []),
        lambda lib: lib.nn.AdaptiveLogSoftmaxWithLoss(8, 20, [10, 4]),
        lambda lib: lib.nn.AdaptiveLogSoftmaxWithLoss(8, 20, [4, 20]),
        lambda lib: lib.nn.AdaptiveLogSoftmaxWithLoss(8, 20, [4])(
            lib.ones(3, 8), lib.tensor([1, 2, 25])
        ),
        lambda lib: lib.nn.AdaptiveLogSoftmaxWithLoss(8, 20, [4])(
            lib.ones(3, 8), lib.tensor([1, 2])
        ),
        lambda lib: lib.nn.AdaptiveLogSoftmaxWithLoss(8, 20, [4])(
            lib.ones(3, 8), lib.ones(3, 1).long()
        ),
    ],
)
def test_errors_match_torch(torch, call) -> None:
    with pytest.raises(Exception) as theirs:
        call(torch)
    with pytest.raises(type(theirs.value)) as ours:
        call(aa)
    assert str(ours.value) == str(theirs.value)
