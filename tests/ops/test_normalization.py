"""batch_norm, instance_norm, group_norm and layer_norm against PyTorch, on every device."""

from __future__ import annotations

import numpy as np
import pytest
from gradients import to_numpy

import autograd_async as aa
from autograd_async.autograd import gradcheck, gradgradcheck
from autograd_async.nn import functional as F  # noqa: N812

from .torch_reference import against_torch

RNG = np.random.default_rng(0)


def _r(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape)


@pytest.mark.parametrize("shape", [(4, 3), (4, 3, 5), (2, 3, 4, 5)])
@pytest.mark.parametrize("affine", [True, False])
def test_batch_norm_training_matches_torch_and_updates_running_stats(
    torch, device, shape, affine
) -> None:
    mean0, var0 = _r(3), np.abs(_r(3)) + 0.5
    ours_stats = [aa.tensor(mean0, device=device), aa.tensor(var0, device=device)]
    their_stats = [torch.tensor(mean0), torch.tensor(var0)]
    arrays = [_r(*shape)] + ([_r(3), _r(3)] if affine else [])
    against_torch(
        torch,
        lambda x, *wb: F.batch_norm(x, *ours_stats, *wb, training=True, momentum=0.3, eps=1e-3),
        lambda x, *wb: torch.nn.functional.batch_norm(
            x, *their_stats, *wb, training=True, momentum=0.3, eps=1e-3
        ),
        *arrays,
        device=device,
    )
    for ours, theirs in zip(ours_stats, their_stats, strict=True):
        np.testing.assert_allclose(to_numpy(ours), theirs.numpy(), rtol=1e-12)
        assert ours._version > 0  # updated in place


def test_batch_norm_eval_uses_running_stats(torch, device) -> None:
    mean, var = _r(3), np.abs(_r(3)) + 0.5
    against_torch(
        torch,
        lambda x, w, b, m, v: F.batch_norm(x, m, v, w, b),
        lambda x, w, b, m, v: torch.nn.functional.batch_norm(x, m, v, w, b),
        _r(2, 3, 4),
        _r(3),
        _r(3),
        mean,
        var,
        device=device,
        grad=[True, True, True, False, False],
    )
    x = aa.tensor(_r(2, 3), device=device)
    stats = aa.tensor(mean, device=device)
    F.batch_norm(x, stats, aa.tensor(var, device=device))
    np.testing.assert_array_equal(to_numpy(stats), mean)  # eval leaves the stats alone


@pytest.mark.parametrize("use_input_stats", [True, False])
def test_instance_norm_matches_torch(torch, device, use_input_stats) -> None:
    mean0, var0 = _r(3), np.abs(_r(3)) + 0.5
    ours_stats = [aa.tensor(mean0, device=device), aa.tensor(var0, device=device)]
    their_stats = [torch.tensor(mean0), torch.tensor(var0)]
    against_torch(
        torch,
        lambda x, w, b: F.instance_norm(x, *ours_stats, w, b, use_input_stats, 0.2),
        lambda x, w, b: torch.nn.functional.instance_norm(
            x, *their_stats, w, b, use_input_stats, 0.2
        ),
        _r(2, 3, 4, 5),
        _r(3),
        _r(3),
        device=device,
    )
    for ours, theirs in zip(ours_stats, their_stats, strict=True):
        np.testing.assert_allclose(to_numpy(ours), theirs.numpy(), rtol=1e-12)
    against_torch(
        torch, F.instance_norm, torch.nn.functional.instance_norm, _r(2, 3, 6), device=device
    )


def test_group_and_layer_norm_match_torch(torch, device) -> None:
    tf = torch.nn.functional
    against_torch(
        torch,
        lambda x, w, b: F.group_norm(x, 2, w, b, eps=1e-4),
        lambda x, w, b: tf.group_norm(x, 2, w, b, eps=1e-4),
        _r(2, 4, 3, 5),
        _r(4),
        _r(4),
        device=device,
    )
    against_torch(
        torch,
        lambda x: F.group_norm(x, 3),
        lambda x: tf.group_norm(x, 3),
        _r(2, 6, 5),
        device=device,
    )
    against_torch(
        torch,
        lambda x, w, b: F.layer_norm(x, (4, 5), w, b),
        lambda x, w, b: tf.layer_norm(x, (4, 5), w, b),
        _r(2, 3, 4, 5),
        _r(4, 5),
        _r(4, 5),
        device=device,
    )
    against_torch(
        torch,
        lambda x: F.layer_norm(x, 5),
        lambda x: tf.layer_norm(x, [5]),
        _r(3, 5),
        device=device,
    )


def test_float32_stays_float32(device) -> None:
    x = aa.randn(4, 3, 5, device=device, requires_grad=True)
    stats = aa.zeros(3, device=device), aa.ones(3, device=device)
    out = F.batch_norm(x, *stats, training=True) + F.group_norm(x, 3) + F.layer_norm(x, 5)
    out.sum().backward()
    assert out.dtype == x.grad.dtype == stats[0].dtype == aa.float32


def test_gradcheck_and_gradgradcheck(device) -> None:
    def t(*shape: int) -> aa.Tensor:
        return aa.tensor(_r(*shape), device=device, requires_grad=True)

    x, w, b = t(3, 2, 3), t(2), t(2)
    for fn, args in (
        (lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True), (x, w, b)),
        (lambda x, w, b: F.instance_norm(x, weight=w, bias=b), (x, w, b)),
        (lambda x, w, b: F.group_norm(x, 1, w, b), (x, w, b)),
        (lambda x, w, b: F.layer_norm(x, (3,), w[:1].expand(3), b[:1].expand(3)), (x, w, b)),
    ):
        assert gradcheck(fn, args)
        assert gradgradcheck(fn, args)


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (
            lambda: F.batch_norm(aa.randn(1, 3), aa.zeros(3), aa.ones(3), training=True),
            ValueError,
            r"Expected more than 1 value per channel when training, got input size \[1, 3\]",
        ),
        (
            lambda: F.batch_norm(aa.randn(2, 3, 4), aa.zeros(4), aa.ones(4)),
            RuntimeError,
            r"running_mean should contain 3 elements not 4",
        ),
        (
            lambda: F.batch_norm(aa.randn(2, 3, 4), aa.zeros(3), aa.ones(3), weight=aa.ones(4)),
            RuntimeError,
            r"weight should contain 3 elements not 4",
        ),
        (
            lambda: F.batch_norm(aa.randn(2, 3), None, None),
            RuntimeError,
            r"running_mean must be defined in evaluation mode",
        ),
        (
            lambda: F.group_norm(aa.randn(2, 3, 4), 2),
            RuntimeError,
            r"Expected number of channels in input to be divisible by num_groups, but got input of "
            r"shape \[2, 3, 4\] and num_groups=2",
        ),
        (
            lambda: F.instance_norm(aa.randn(2, 3, 1)),
            ValueError,
            r"Expected more than 1 spatial element when training, got input size \[2, 3, 1\]",
        ),
        (
            lambda: F.layer_norm(aa.randn(2, 3, 4), (3,)),
            RuntimeError,
            r"Given normalized_shape=\[3\], expected input with shape \[\*, 3\], but got input of "
            r"size\[2, 3, 4\]",
        ),
    ],
)
def test_bad_arguments_raise_pytorch_errors(call, error, message) -> None:
    with pytest.raises(error, match=message):
        call()
