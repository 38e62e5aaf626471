"""torch.ctc_loss and torch.embedding_bag (ATen's forms) against PyTorch: values, the auxiliary
tensors of embedding_bag, and gradients."""

from __future__ import annotations

import numpy as np
import pytest

import autograd_async as aa

_RNG = np.random.default_rng(0)
WEIGHT = _RNG.normal(size=(6, 3))
INDICES = [1, 2, 4, 5, 4, 3]
OFFSETS = [0, 2, 2, 4]
BAG_CASES = [
    (0,),
    (1,),
    (2,),
    (0, False, None, False, 4),
    (1, False, None, False, 4),
    (2, False, None, False, 4),
    (0, False, "weights"),
    (0, False, None, True),
    (1, False, None, True),
    (2, False, None, True),
]


@pytest.mark.parametrize("case", range(len(BAG_CASES)))
def test_embedding_bag_matches_torch(torch, device, case):
    args = BAG_CASES[case]

    def run(lib, on):
        weight = lib.tensor(WEIGHT, requires_grad=True, **on)
        extra = list(args)
        if len(extra) > 2 and extra[2] == "weights":
            extra[2] = lib.tensor(np.linspace(0.5, 1.5, 6), requires_grad=True, **on)
        offsets = OFFSETS[:-1] + [6] if len(extra) > 3 and extra[3] else OFFSETS
        out = lib.embedding_bag(
            weight, lib.tensor(INDICES, **on), lib.tensor(offsets, **on), False, *extra
        )
        (out[0] * out[0]).sum().backward()
        return out, weight.grad

    ours, grad = run(aa, {"device": device})
    theirs, ref_grad = run(torch, {})
    for mine, ref in zip(ours, theirs, strict=True):
        assert str(mine.dtype) == str(ref.dtype).removeprefix("torch.")
        assert tuple(mine.shape) == tuple(ref.shape)
        np.testing.assert_allclose(mine.detach().cpu().numpy(), ref.detach().numpy(), atol=1e-12)
    np.testing.assert_allclose(grad.cpu().numpy(), ref_grad.numpy(), atol=1e-12)


def test_single_precision_sum_leaves_offset2bag_empty(torch):
    for lib in (aa, torch):
        weight = lib.tensor(WEIGHT, dtype=lib.float32)
        out = lib.embedding_bag(weight, lib.tensor(INDICES), lib.tensor(OFFSETS))
        assert tuple(out[1].shape) == (0,)
        out = lib.embedding_bag(weight.double(), lib.tensor(INDICES), lib.tensor(OFFSETS))
        assert tuple(out[1].shape) == (6,)


@pytest.mark.parametrize("reduction", [None, 0, 1, 2])
def test_ctc_loss_matches_torch(torch, device, reduction):
    log_probs = np.log(_RNG.dirichlet(np.ones(4), size=(6, 2)))
    targets = [[1, 2], [3, 1]]

    def run(lib, on):
        lp = lib.tensor(log_probs, requires_grad=True, **on)
        extra = () if reduction is None else (0, reduction)
        loss = lib.ctc_loss(lp, lib.tensor(targets, **on), [6, 5], [2, 1], *extra)
        loss.sum().backward()
        return loss, lp.grad

    (loss, grad), (ref, ref_grad) = run(aa, {"device": device}), run(torch, {})
    assert tuple(loss.shape) == tuple(ref.shape)
    np.testing.assert_allclose(loss.detach().cpu().numpy(), ref.detach().numpy(), rtol=1e-10)
    np.testing.assert_allclose(grad.cpu().numpy(), ref_grad.numpy(), rtol=1e-8, atol=1e-12)


def test_embedding_bag_needs_offsets(torch):
    for lib in (aa, torch):
        with pytest.raises(TypeError, match="argument 'offsets' \\(position 3\\) must be Tensor"):
            lib.embedding_bag(lib.ones(3, 2), lib.tensor([[0, 1]]), None)
