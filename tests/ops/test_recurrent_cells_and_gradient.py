"""ATen's recurrent cells and torch.gradient against PyTorch on every device, with float64
gradients checked against PyTorch's and by finite differences."""

from __future__ import annotations

import numpy as np
import pytest
from torch_reference import check_like_torch

import autograd_async as aa

RNG = np.random.default_rng(41)
X = RNG.standard_normal((2, 3))
H = RNG.standard_normal((2, 4))
C = RNG.standard_normal((2, 4))
W_IH = {k: RNG.standard_normal((k * 4, 3)) * 0.5 for k in (1, 3, 4)}
W_HH = {k: RNG.standard_normal((k * 4, 4)) * 0.5 for k in (1, 3, 4)}
B = {k: RNG.standard_normal(k * 4) * 0.1 for k in (1, 3, 4)}
F = RNG.standard_normal((4, 5))
COORDS = np.array([0.0, 0.5, 1.7, 2.0, 3.1])

CASES = {
    "rnn_tanh_cell": (
        lambda L, T, x, h, wi, wh, bi, bh: L.rnn_tanh_cell(x, h, wi, wh, bi, bh),
        X,
        H,
        W_IH[1],
        W_HH[1],
        B[1],
        B[1],
    ),
    "rnn_relu_cell": (
        lambda L, T, x, h, wi, wh: L.rnn_relu_cell(x, h, wi, wh),
        X,
        H,
        W_IH[1],
        W_HH[1],
    ),
    "lstm_cell": (
        lambda L, T, x, h, c, wi, wh, bi, bh: L.lstm_cell(x, (h, c), wi, wh, bi, bh),
        X,
        H,
        C,
        W_IH[4],
        W_HH[4],
        B[4],
        B[4],
    ),
    "gru_cell": (
        lambda L, T, x, h, wi, wh, bi, bh: L.gru_cell(x, h, wi, wh, bi, bh),
        X,
        H,
        W_IH[3],
        W_HH[3],
        B[3],
        B[3],
    ),
    "gru_cell_no_bias": (
        lambda L, T, x, h, wi, wh: L.gru_cell(x, h, wi, wh),
        X,
        H,
        W_IH[3],
        W_HH[3],
    ),
    "gradient": (lambda L, T, f: L.gradient(f), F),
    "gradient_dim_spacing": (lambda L, T, f: L.gradient(f, spacing=2.0, dim=1), F),
    "gradient_spacings": (lambda L, T, f: L.gradient(f, spacing=[0.5, 3.0], edge_order=2), F),
    "gradient_coordinates": (lambda L, T, f: L.gradient(f, spacing=(T(COORDS),), dim=1), F),
    "gradient_coordinates_edge2": (
        lambda L, T, f: L.gradient(f, spacing=(T(COORDS),), dim=-1, edge_order=2),
        F,
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_like_torch(torch, device, name):
    fn, *arrays = CASES[name]
    check_like_torch(torch, device, fn, *arrays)


def test_lstm_cell_second_output_like_torch(torch, device):
    fn = CASES["lstm_cell"][0]
    check_like_torch(torch, device, lambda L, T, *xs: fn(L, T, *xs)[1], *CASES["lstm_cell"][1:])


def test_gradient_of_integers_like_torch(torch):
    for lib in (aa, torch):
        (out,) = lib.gradient(lib.tensor([1, 4, 9, 16]))
        assert out.dtype == lib.float32 and out.tolist() == [3.0, 4.0, 6.0, 7.0]


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda L: L.gradient(L.ones(1)), "at least edge_order\\+1"),
        (lambda L: L.gradient(L.ones(2), edge_order=2), "at least edge_order\\+1"),
        (lambda L: L.gradient(L.ones(3), edge_order=3), "only supports edge_order=1 and "),
        (
            lambda L: L.gradient(L.ones(3, 3), spacing=[1.0, 2.0, 3.0]),
            "a list of length equal to 'self.dim\\(\\) = 2', since dim argument was not given, "
            "but got a list of length 3",
        ),
    ],
)
def test_gradient_errors_like_torch(torch, call, message):
    for lib in (aa, torch):
        with pytest.raises(RuntimeError, match=message):
            call(lib)
