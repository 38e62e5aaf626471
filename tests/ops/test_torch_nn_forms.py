"""The `torch.<name>` forms of nn.functional's functions (ATen's argument order, integer
reductions, pools without indices) against PyTorch on every device, with float64 gradients."""

from __future__ import annotations

import numpy as np
import pytest
from torch_reference import check_like_torch

import autograd_async as aa

RNG = np.random.default_rng(5)
IMG1 = RNG.standard_normal((2, 3, 7))
IMG2 = RNG.standard_normal((2, 3, 5, 6))
IMG3 = RNG.standard_normal((1, 2, 4, 5, 4))
W1 = RNG.standard_normal((4, 3, 3))
W2 = RNG.standard_normal((4, 3, 2, 3))
W3T = RNG.standard_normal((2, 3, 2, 2, 2))
CH = RNG.standard_normal(3)
VEC = RNG.standard_normal((4, 5))
TAB = RNG.standard_normal((6, 3))
PROB = RNG.uniform(0.1, 0.9, (4, 5))
SIGNS = np.array([1.0, -1.0, 1.0, -1.0])

CASES = {
    "conv1d": (lambda L, T, x, w: L.conv1d(x, w, None, 1, 1), IMG1, W1),
    "conv2d": (lambda L, T, x, w: L.conv2d(x, w, stride=(1, 2)), IMG2, W2),
    "conv3d": (lambda L, T, x, w: L.conv3d(x, w.transpose(0, 1), padding=1), IMG3, W3T),
    "conv_transpose1d": (
        lambda L, T, x, w: L.conv_transpose1d(x, w.transpose(0, 1), None, 2),
        IMG1,
        W1,
    ),
    "conv_transpose2d": (lambda L, T, x, w: L.conv_transpose2d(x, w[:3, :2]), IMG2, W2),
    "conv_transpose3d": (lambda L, T, x, w: L.conv_transpose3d(x, w, None, 2, 1, 1), IMG3, W3T),
    "avg_pool1d": (lambda L, T, x: L.avg_pool1d(x, 3, [], 1, True, False), IMG1),
    "adaptive_avg_pool1d": (lambda L, T, x: L.adaptive_avg_pool1d(x, [4]), IMG1),
    "adaptive_max_pool1d": (lambda L, T, x: L.adaptive_max_pool1d(x, 3), IMG1),
    "max_pool1d": (lambda L, T, x: L.max_pool1d(x, 2), IMG1),
    "max_pool1d_with_indices": (lambda L, T, x: L.max_pool1d_with_indices(x, 3, 2, 1), IMG1),
    "max_pool2d": (lambda L, T, x: L.max_pool2d(x, [2, 3], [], 1, 1, True), IMG2),
    "max_pool3d": (lambda L, T, x: L.max_pool3d(x, 2, 1), IMG3),
    "batch_norm": (
        lambda L, T, x, w, b: L.batch_norm(x, w, b, None, None, True, 0.1, 1e-5, False),
        IMG2,
        CH,
        CH,
    ),
    "instance_norm": (
        lambda L, T, x, w: L.instance_norm(x, w, None, None, None, True, 0.1, 1e-5, False),
        IMG2,
        CH,
    ),
    "layer_norm": (lambda L, T, x, w: L.layer_norm(x, [6], w[0, 0, 0]), IMG2, IMG2),
    "group_norm": (lambda L, T, x: L.group_norm(x, 3, eps=1e-3), IMG2),
    "rms_norm": (lambda L, T, x: L.rms_norm(x, [5, 6]), IMG2),
    "celu": (lambda L, T, x: L.celu(x, 0.5), VEC),
    "selu": (lambda L, T, x: L.selu(x), VEC),
    "prelu": (lambda L, T, x, w: L.prelu(x, w), IMG2, CH),
    "prelu_method": (lambda L, T, x, w: x.prelu(w), IMG2, CH),
    "pixel_shuffle": (lambda L, T, x: L.pixel_shuffle(x.reshape(1, 4, 3, 5), 2), VEC.repeat(3, 0)),
    "pixel_unshuffle": (lambda L, T, x: L.pixel_unshuffle(x[:, :, :4, :4], 2), IMG2),
    "channel_shuffle": (lambda L, T, x: L.channel_shuffle(x.reshape(2, 6, 5, 3), 3), IMG2),
    "embedding_no_padding": (lambda L, T, w: L.embedding(w, T([1, 1, 3])), TAB),
    "cosine_similarity": (lambda L, T, a, b: L.cosine_similarity(a, b, 0), VEC, PROB),
    "pairwise_distance": (lambda L, T, a, b: L.pairwise_distance(a, b, 1.5), VEC, PROB),
    "bce_with_logits": (lambda L, T, x, t: L.binary_cross_entropy_with_logits(x, t), VEC, PROB),
    "bce_with_logits_none": (
        lambda L, T, x, t: L.binary_cross_entropy_with_logits(x, t, T(PROB), T(PROB[0]), 0),
        VEC,
        PROB,
    ),
    "kl_div": (lambda L, T, x, t: L.kl_div(x, t, 2), VEC, PROB),
    "kl_div_log_target": (lambda L, T, x, t: L.kl_div(x, t, 0, log_target=True), VEC, VEC),
    "margin_ranking_loss": (
        lambda L, T, a, b, y: L.margin_ranking_loss(a[0, :4], b[0, :4], y, 0.3),
        VEC,
        PROB,
        SIGNS,
    ),
    "cosine_embedding_loss": (
        lambda L, T, a, b, y: L.cosine_embedding_loss(a, b, y, 0.1, 2),
        VEC,
        PROB,
        SIGNS,
    ),
    "hinge_embedding_loss": (
        lambda L, T, x: L.hinge_embedding_loss(x, T([1.0, -1.0, -1.0, 1.0, 1.0]).double(), 0.5, 0),
        VEC,
    ),
    "poisson_nll_loss": (
        lambda L, T, x, t: L.poisson_nll_loss(x, t, True, True, 1e-8, 1),
        VEC,
        PROB,
    ),
    "triplet_margin_loss": (
        lambda L, T, a, p, n: L.triplet_margin_loss(a, p, n, 1.0, 2.0, 1e-6, True, 2),
        VEC,
        PROB,
        VEC.T.reshape(4, 5),
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_like_torch(torch, device, name):
    fn, *arrays = CASES[name]
    check_like_torch(torch, device, fn, *arrays)


def test_embedding_padding_row_gets_no_gradient(torch, device):
    ours = aa.tensor(TAB, device=device, requires_grad=True)
    theirs = torch.tensor(TAB, requires_grad=True)
    for lib, w in ((aa, ours), (torch, theirs)):
        index = lib.tensor([[0, 2], [5, 2]], device=device if lib is aa else "cpu")
        (
            lib.embedding(w, index, 2) * lib.arange(1.0, 4.0, dtype=lib.float64).to(w.device)
        ).sum().backward()
    np.testing.assert_allclose(ours.grad.cpu().numpy(), theirs.grad.numpy())
    assert not ours.grad.cpu().numpy()[2].any()


@pytest.mark.parametrize("reduction", [-1, 3, "average"])
def test_an_unknown_integer_reduction_is_refused(reduction):
    x = aa.zeros(3)
    with pytest.raises(ValueError, match="is not a valid value for reduction"):
        aa.kl_div(x, x, reduction)


def test_the_functions_are_not_tensor_methods(torch):
    for name in ("conv1d", "batch_norm", "embedding", "max_pool2d", "kl_div"):
        assert hasattr(torch, name) and hasattr(aa, name)
        assert not hasattr(torch.Tensor, name) and not hasattr(aa.Tensor, name)
