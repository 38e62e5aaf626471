"""Convolutions, transposed convolutions, unfold and fold against PyTorch, on every device."""

from __future__ import annotations

import numpy as np
import pytest

import autograd_async as aa
from autograd_async.autograd import gradcheck, gradgradcheck
from autograd_async.nn import functional as F  # noqa: N812

from .torch_reference import against_torch

RNG = np.random.default_rng(0)


def _r(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape)


CONV_CASES = [
    # (name, input shape, weight shape, with bias, keyword arguments)
    ("conv1d", (2, 3, 10), (4, 3, 3), True, {}),
    ("conv1d", (2, 4, 11), (6, 2, 2), False, {"stride": 3, "padding": 2, "groups": 2}),
    ("conv1d", (3, 9), (4, 3, 3), True, {"padding": "same", "dilation": 2}),
    ("conv2d", (2, 3, 7, 8), (5, 3, 3, 3), True, {"padding": 1}),
    (
        "conv2d",
        (2, 4, 7, 8),
        (6, 4, 3, 2),
        True,
        {"stride": (2, 1), "padding": (1, 2), "dilation": (1, 2)},
    ),
    ("conv2d", (2, 4, 6, 7), (6, 2, 3, 4), True, {"padding": "same", "groups": 2}),
    ("conv2d", (1, 6, 5, 5), (6, 1, 3, 3), False, {"padding": "valid", "groups": 6}),
    ("conv2d", (3, 6, 6), (2, 3, 2, 2), True, {"stride": 2}),
    ("conv3d", (2, 2, 4, 5, 4), (3, 2, 2, 3, 2), True, {"padding": (1, 0, 1)}),
    ("conv3d", (1, 2, 5, 5, 5), (2, 1, 3, 3, 3), False, {"stride": 2, "groups": 2}),
    # unit strides with dilation along the last dim: col2im's two-stage sum over short rows
    ("conv2d", (3, 4, 8, 8), (5, 4, 3, 3), True, {"padding": (1, 2), "dilation": (1, 2)}),
    ("conv3d", (2, 2, 4, 4, 5), (3, 2, 2, 2, 3), True, {"padding": 1, "dilation": (1, 2, 2)}),
]


@pytest.mark.filterwarnings("ignore:Using padding='same' with even kernel lengths")
@pytest.mark.parametrize(("name", "xs", "ws", "bias", "kwargs"), CONV_CASES)
def test_conv_matches_torch(torch, device, name, xs, ws, bias, kwargs) -> None:
    ours, theirs = getattr(F, name), getattr(torch.nn.functional, name)
    arrays = [_r(*xs), _r(*ws)] + ([_r(ws[0])] if bias else [])
    against_torch(
        torch,
        lambda *t: ours(*t, **kwargs),
        lambda *t: theirs(*t, **kwargs),
        *arrays,
        device=device,
    )


TRANSPOSED_CASES = [
    ("conv_transpose1d", (2, 3, 6), (3, 4, 3), True, {}),
    ("conv_transpose1d", (4, 5), (4, 1, 2), False, {"stride": 3, "groups": 2, "padding": 1}),
    (
        "conv_transpose2d",
        (2, 4, 5, 6),
        (4, 3, 3, 2),
        True,
        {"stride": 2, "padding": 1, "output_padding": 1, "groups": 2, "dilation": 2},
    ),
    ("conv_transpose2d", (2, 3, 4, 4), (3, 2, 3, 3), False, {"stride": (2, 1), "padding": (0, 1)}),
    ("conv_transpose2d", (2, 3, 5, 4), (3, 2, 3, 2), True, {"padding": (1, 0), "dilation": (1, 2)}),
]


@pytest.mark.parametrize(("name", "xs", "ws", "bias", "kwargs"), TRANSPOSED_CASES)
def test_conv_transpose_matches_torch(torch, device, name, xs, ws, bias, kwargs) -> None:
    ours, theirs = getattr(F, name), getattr(torch.nn.functional, name)
    out_channels = ws[1] * kwargs.get("groups", 1)
    arrays = [_r(*xs), _r(*ws)] + ([_r(out_channels)] if bias else [])
    against_torch(
        torch,
        lambda *t: ours(*t, **kwargs),
        lambda *t: theirs(*t, **kwargs),
        *arrays,
        device=device,
    )


def test_unfold_and_fold_match_torch(torch, device) -> None:
    tf = torch.nn.functional
    kwargs = {"padding": 1, "stride": 2, "dilation": (2, 1)}
    against_torch(
        torch,
        lambda t: F.unfold(t, (2, 3), **kwargs),
        lambda t: tf.unfold(t, (2, 3), **kwargs),
        _r(2, 3, 7, 8),
        device=device,
    )
    against_torch(
        torch, lambda t: F.unfold(t, 2), lambda t: tf.unfold(t, 2), _r(3, 4, 4), device=device
    )
    against_torch(
        torch,
        lambda t: F.fold(t, (5, 6), (2, 3), padding=1, stride=2),
        lambda t: tf.fold(t, (5, 6), (2, 3), padding=1, stride=2),
        _r(2, 12, 9),
        device=device,
    )
    against_torch(
        torch, lambda t: F.fold(t, 3, 2), lambda t: tf.fold(t, 3, 2), _r(8, 4), device=device
    )


def test_float32_stays_float32(device) -> None:
    x = aa.randn(2, 3, 6, 6, device=device, requires_grad=True)
    w = aa.randn(4, 3, 3, 3, device=device, requires_grad=True)
    out = F.conv2d(x, w, padding=1)
    out.sum().backward()
    assert out.dtype == x.grad.dtype == w.grad.dtype == aa.float32
    assert out.grad_fn.name() == "ConvolutionBackward0"


def _x(*shape: int, device: str = "cpu") -> aa.Tensor:
    return aa.tensor(_r(*shape), device=device, requires_grad=True)


def test_gradcheck_and_gradgradcheck(device) -> None:
    x, b = _x(1, 2, 4, 4, device=device), _x(2, device=device)
    w, wt = _x(2, 1, 2, 2, device=device), _x(2, 1, 2, 2, device=device)
    for fn, args in (
        (lambda x, w, b: F.conv2d(x, w, b, padding=1, groups=2, stride=2), (x, w, b)),
        (lambda x, w, b: F.conv2d(x, w, b, padding="same", groups=2), (x, w, b)),
        (lambda x, w, b: F.conv_transpose2d(x, w, b, padding=1, groups=2, stride=2), (x, wt, b)),
        (lambda x: F.unfold(x, 2, padding=1), (x,)),
        (lambda c: F.fold(c, 3, 2), (_x(1, 8, 4, device=device),)),
    ):
        assert gradcheck(fn, args)
        assert gradgradcheck(fn, args)
    assert gradcheck(lambda x, w: F.conv1d(x, w, stride=2), (_x(1, 2, 7), _x(3, 2, 3)))
    assert gradcheck(lambda x, w: F.conv3d(x, w, padding=1), (_x(1, 1, 3, 2, 3), _x(1, 1, 2, 2, 2)))
    assert gradcheck(
        lambda x, w: F.conv_transpose1d(x, w, stride=2, output_padding=1),
        (_x(1, 2, 3), _x(2, 1, 3)),
    )


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (
            lambda: F.conv2d(aa.randn(2, 3), aa.randn(4, 3, 3, 3)),
            r"Expected 3D \(unbatched\) or 4D \(batched\) input to conv2d, but got input of size: "
            r"\[2, 3\]",
        ),
        (
            lambda: F.conv1d(aa.randn(2, 3, 5, 5), aa.randn(4, 3, 3)),
            r"Expected 2D \(unbatched\) or 3D \(batched\) input to conv1d",
        ),
        (
            lambda: F.conv2d(aa.randn(2, 3, 5, 5), aa.randn(4, 3, 3, 3), groups=2),
            r"Given groups=2, weight of size \[4, 3, 3, 3\], expected input\[2, 3, 5, 5\] to have 6 "
            r"channels, but got 3 channels instead",
        ),
        (
            lambda: F.conv2d(aa.randn(2, 4, 5, 5), aa.randn(3, 2, 3, 3), groups=2),
            r"Given groups=2, expected weight to be divisible by 2 at dimension 0",
        ),
        (
            lambda: F.conv2d(aa.randn(2, 3, 5, 5), aa.randn(4, 3, 3, 3), padding="foo"),
            r"Invalid padding string: 'foo'",
        ),
        (
            lambda: F.conv2d(aa.randn(2, 3, 5, 5), aa.randn(4, 3, 3, 3), padding="same", stride=2),
            r"padding='same' is not supported for strided convolutions",
        ),
        (
            lambda: F.conv2d(aa.randn(2, 3, 5, 5), aa.randn(4, 3, 3, 3), padding=-1),
            r"negative padding is not supported",
        ),
        (
            lambda: F.conv2d(aa.randn(2, 3, 5, 5), aa.randn(4, 3, 3, 3), stride=0),
            r"non-positive stride is not supported",
        ),
        (
            lambda: F.conv2d(aa.randn(2, 3, 5, 5), aa.randn(4, 3, 7, 7)),
            r"Calculated padded input size per channel: \(5 x 5\). Kernel size: \(7 x 7\)",
        ),
        (
            lambda: F.conv2d(aa.randn(2, 3, 5, 5), aa.randn(4, 3, 3, 3), aa.randn(3)),
            r"expected bias to be 1-dimensional with 4 elements, but got bias of size \[3\]",
        ),
        (
            lambda: F.conv2d(aa.randn(2, 3, 5, 5), aa.randn(4, 3, 3)),
            r"conv2d: expected a 4-D weight",
        ),
        (
            lambda: F.conv2d(aa.randn(2, 3, 5, 5, dtype=aa.float64), aa.randn(4, 3, 3, 3)),
            r"conv2d: expected weight of the input's dtype float64, but found float32",
        ),
        (
            lambda: F.conv2d(aa.randn(2, 3, 5, 5), aa.randn(4, 3, 3, 3), stride=(1, 1, 1)),
            r"expected stride to be a single integer value or a list of 2 values",
        ),
        (
            lambda: F.conv_transpose2d(aa.randn(2, 3, 5, 5), aa.randn(4, 2, 3, 3)),
            r"Given transposed=1, weight of size \[4, 2, 3, 3\], expected input\[2, 3, 5, 5\] to have "
            r"4 channels, but got 3 channels instead",
        ),
        (
            lambda: F.conv_transpose2d(
                aa.randn(2, 3, 5, 5), aa.randn(3, 2, 3, 3), output_padding=1
            ),
            r"output padding must be smaller than either stride or dilation",
        ),
        (
            lambda: F.unfold(aa.randn(3, 4), 2),
            r"Input Error: Only 3D or 4D input Tensors are supported \(got 2D\)",
        ),
        (
            lambda: F.fold(aa.randn(1, 8, 5), 3, 2),
            r"expected size of input's dimension 2 to match the calculated number of sliding blocks "
            r"2 \* 2 = 4, but got input.size\(2\)=5",
        ),
    ],
)
def test_bad_arguments_raise_pytorch_errors(call, message) -> None:
    with pytest.raises((RuntimeError, NotImplementedError), match=message):
        call()


def test_empty_batch_gives_empty_results_and_gradients(torch, device) -> None:
    tf = torch.nn.functional
    w = _r(4, 3, 3, 3)
    for ours, theirs in (
        (
            lambda x: F.conv2d(x, aa.tensor(w, device=device), padding=1),
            lambda x: tf.conv2d(x, torch.tensor(w), padding=1),
        ),
        (
            lambda x: F.conv2d(x, aa.tensor(w, device=device), stride=2),
            lambda x: tf.conv2d(x, torch.tensor(w), stride=2),
        ),
        (
            lambda x: F.conv_transpose2d(x, aa.tensor(w[:3], device=device), stride=2),
            lambda x: tf.conv_transpose2d(x, torch.tensor(w[:3]), stride=2),
        ),
        (lambda x: F.max_pool2d(x, 2), lambda x: tf.max_pool2d(x, 2)),
        (lambda x: F.avg_pool2d(x, 2), lambda x: tf.avg_pool2d(x, 2)),
    ):
        against_torch(torch, ours, theirs, np.zeros((0, 3, 5, 5)), device=device)


def test_gradients_with_one_input_requiring_grad(device) -> None:
    # Only the gradient that is asked for is computed, from what was saved for it.
    for fn, shapes in (
        (lambda x, w: F.conv2d(x, w, stride=2, padding=1), ((1, 2, 5, 5), (3, 2, 3, 3))),
        (lambda x, w: F.conv_transpose2d(x, w, stride=2), ((1, 2, 3, 3), (2, 3, 2, 2))),
    ):
        for wanted in (0, 1):
            inputs = [
                aa.tensor(_r(*s), device=device, requires_grad=i == wanted)
                for i, s in enumerate(shapes)
            ]
            assert gradcheck(fn, tuple(inputs))
            assert gradgradcheck(fn, tuple(inputs))
