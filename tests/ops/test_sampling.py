"""pad and interpolate against PyTorch, on every device."""

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


PAD_CASES = [
    ((2, 3, 4, 5), (1, 2), "constant", 0.5),
    ((2, 3, 4, 5), (1, 2, 0, 3, 2, 1), "constant", None),
    ((2, 3, 4, 5), (-1, 2, 1, -2), "constant", 0.0),
    ((3, 4), (0, 1, 2, 0), "constant", -1.0),
    ((2, 3, 4, 5), (1, 2, 3, 1), "reflect", None),
    ((2, 3, 5), (4, 2), "reflect", None),
    ((2, 2, 3, 4, 5), (1, 2, 2, 1, 2, 1), "reflect", None),
    ((2, 3, 4, 5), (1, 2, 3, 1), "replicate", None),
    ((3, 4, 5), (2, 0), "replicate", None),
    ((2, 3, 4, 5), (1, 2, 3, 4), "circular", None),
    ((2, 2, 3, 4, 5), (1, 0, 2, 1, 3, 2), "circular", None),
]


@pytest.mark.parametrize(("shape", "pads", "mode", "value"), PAD_CASES)
def test_pad_matches_torch(torch, device, shape, pads, mode, value) -> None:
    kwargs = {"mode": mode} if value is None else {"mode": mode, "value": value}
    against_torch(
        torch,
        lambda t: F.pad(t, pads, **kwargs),
        lambda t: torch.nn.functional.pad(t, pads, **kwargs),
        _r(*shape),
        device=device,
    )


INTERPOLATE_CASES = [
    ((2, 3, 4, 5), {"size": (7, 3)}),
    ((2, 3, 4, 5), {"scale_factor": 2}),
    ((2, 3, 4, 5), {"scale_factor": (1.5, 0.7)}),
    ((2, 3, 4, 5), {"scale_factor": 1.7, "recompute_scale_factor": True}),
    ((2, 3, 4, 5), {"size": (7, 3), "mode": "nearest-exact"}),
    ((2, 3, 5), {"size": 8, "mode": "nearest"}),
    ((2, 3, 4, 5), {"size": (7, 3), "mode": "bilinear"}),
    ((2, 3, 4, 5), {"size": (7, 3), "mode": "bilinear", "align_corners": True}),
    ((2, 3, 4, 5), {"scale_factor": 2.5, "mode": "bilinear"}),
    ((2, 3, 4, 5), {"size": (1, 9), "mode": "bilinear", "align_corners": True}),
    ((2, 3, 6), {"size": 4, "mode": "linear"}),
    ((2, 3, 6), {"scale_factor": 1.5, "mode": "linear", "align_corners": True}),
    ((2, 3, 7, 5), {"size": (3, 4), "mode": "area"}),
    ((2, 3, 7), {"scale_factor": 0.5, "mode": "area"}),
]


@pytest.mark.parametrize(("shape", "kwargs"), INTERPOLATE_CASES)
def test_interpolate_matches_torch(torch, device, shape, kwargs) -> None:
    against_torch(
        torch,
        lambda t: F.interpolate(t, **kwargs),
        lambda t: torch.nn.functional.interpolate(t, **kwargs),
        _r(*shape),
        device=device,
    )


def test_float32_stays_float32(device) -> None:
    x = aa.randn(1, 2, 3, 4, device=device, requires_grad=True)
    out = F.pad(x, (1, 1, 0, 0), mode="reflect") + F.interpolate(x, size=(3, 6), mode="bilinear")
    out.sum().backward()
    assert out.dtype == x.grad.dtype == aa.float32


def test_gradcheck_and_gradgradcheck(device) -> None:
    x = aa.tensor(_r(1, 2, 3, 4), device=device, requires_grad=True)
    for fn in (
        lambda t: F.pad(t, (1, 2, -1, 1), value=3.0),
        lambda t: F.pad(t, (2, 1, 1, 2), mode="reflect"),
        lambda t: F.pad(t, (2, 1, 1, 2), mode="replicate"),
        lambda t: F.pad(t, (2, 1, 1, 2), mode="circular"),
        lambda t: F.interpolate(t, scale_factor=1.5),
        lambda t: F.interpolate(t, size=(5, 2), mode="bilinear"),
        lambda t: F.interpolate(t[0], size=6, mode="linear", align_corners=True),
    ):
        assert gradcheck(fn, (x,))
        assert gradgradcheck(fn, (x,))


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (
            lambda: F.pad(aa.randn(1, 1, 3, 3), (1,)),
            RuntimeError,
            r"Padding length must be divisible by 2",
        ),
        (
            lambda: F.pad(aa.randn(1, 1, 3, 3), (1, 1) * 5),
            RuntimeError,
            r"Padding length should be less than or equal to two times the input dimension but got "
            r"padding length 10 and input of dimension 4",
        ),
        (
            lambda: F.pad(aa.randn(1, 1, 3, 3), (3, 3, 0, 0), mode="reflect"),
            RuntimeError,
            r"Padding size should be less than the corresponding input dimension, but got: padding "
            r"\(3, 3\) at dimension 3 of input \[1, 1, 3, 3\]",
        ),
        (
            lambda: F.pad(aa.randn(1, 1, 3, 3), (1, 1), mode="reflect"),
            NotImplementedError,
            r"Padding size 2 is not supported for 4D input tensor",
        ),
        (
            lambda: F.pad(aa.randn(1, 3, 3), (4, 4), mode="circular"),
            RuntimeError,
            r"Padding value causes wrapping around more than once",
        ),
        (
            lambda: F.pad(aa.randn(1, 3, 3), (1, 1), mode="foo"),
            NotImplementedError,
            r"Unrecognised padding mode foo",
        ),
        (
            lambda: F.interpolate(aa.randn(1, 1, 3, 3)),
            ValueError,
            r"either size or scale_factor should be defined",
        ),
        (
            lambda: F.interpolate(aa.randn(1, 1, 3, 3), size=2, scale_factor=2),
            ValueError,
            r"only one of size or scale_factor should be defined",
        ),
        (
            lambda: F.interpolate(aa.randn(1, 1, 3, 3), size=2, align_corners=True),
            ValueError,
            r"align_corners option can only be set with the interpolating modes",
        ),
        (
            lambda: F.interpolate(aa.randn(1, 1, 3, 3), size=2, mode="linear"),
            NotImplementedError,
            r"Got 4D input, but linear mode needs 3D input",
        ),
        (
            lambda: F.interpolate(aa.randn(2), size=2),
            NotImplementedError,
            r"Input Error: Only 3D, 4D and 5D input Tensors supported \(got 1D\)",
        ),
        (
            lambda: F.interpolate(aa.randn(1, 1, 3, 3), size=(2, 2, 2)),
            ValueError,
            r"Input and output must have the same number of spatial dimensions",
        ),
    ],
)
def test_bad_arguments_raise_pytorch_errors(call, error, message) -> None:
    with pytest.raises(error, match=message):
        call()
