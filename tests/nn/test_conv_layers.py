"""Convolution, pooling, normalisation and upsampling layers against PyTorch's: outputs, input
and parameter gradients (float64), running statistics, reprs, state_dict keys and errors."""

from __future__ import annotations

import numpy as np
import pytest

import autograd_async as aa
from autograd_async import nn

from .layer_helpers import compare_layer, load_from_torch

rng = np.random.default_rng(0)


def _x(*shape):
    return rng.standard_normal(shape)


CONV_CASES = [
    ("Conv1d", (3, 4, 3), {}, (2, 3, 9)),
    ("Conv1d", (4, 6, 3), {"stride": 2, "padding": 1, "groups": 2}, (2, 4, 10)),
    ("Conv1d", (3, 2, 4), {"padding": "same", "dilation": 2, "padding_mode": "circular"}, (3, 11)),
    ("Conv2d", (3, 4, 3), {"padding": 1}, (2, 3, 8, 7)),
    (
        "Conv2d",
        (4, 4, (3, 2)),
        {"stride": (2, 1), "dilation": (1, 2), "groups": 4, "bias": False},
        (1, 4, 9, 9),
    ),
    ("Conv2d", (2, 3, 3), {"padding": 2, "padding_mode": "reflect"}, (2, 2, 6, 6)),
    ("Conv2d", (2, 3, 3), {"padding": "same", "padding_mode": "replicate"}, (2, 5, 6)),
    ("Conv2d", (2, 3, 3), {"padding": "valid"}, (1, 2, 5, 5)),
    ("Conv3d", (2, 3, 2), {"padding": 1, "stride": 2}, (1, 2, 5, 4, 4)),
    ("ConvTranspose1d", (3, 4, 3), {"stride": 2, "padding": 1, "output_padding": 1}, (2, 3, 5)),
    ("ConvTranspose2d", (4, 2, 3), {"stride": 2, "groups": 2, "dilation": 2}, (1, 4, 4, 5)),
    ("ConvTranspose2d", (2, 3, (2, 3)), {"padding": (1, 0), "bias": False}, (2, 3, 3)),
]


@pytest.mark.parametrize(("name", "args", "kwargs", "shape"), CONV_CASES)
def test_convolutions_match_torch(torch, name, args, kwargs, shape):
    ours, theirs = getattr(nn, name)(*args, **kwargs), getattr(torch.nn, name)(*args, **kwargs)
    assert repr(ours) == repr(theirs)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    compare_layer(torch, ours, theirs, _x(*shape))


def test_conv_transpose_output_size_matches_torch(torch):
    ours = nn.ConvTranspose2d(2, 3, 3, stride=2)
    theirs = torch.nn.ConvTranspose2d(2, 3, 3, stride=2)
    x = _x(1, 2, 4, 4)
    compare_layer(torch, ours, theirs, x, call=lambda layer, t: layer(t, output_size=(10, 9)))
    with pytest.raises(ValueError, match="valid sizes range from 9 to 10"):
        ours(aa.tensor(x), output_size=(12, 12))


def test_conv_init_follows_torch_bounds():
    layer = nn.Conv2d(4, 8, 3, groups=2)
    fan_in = 2 * 9
    assert np.abs(np.asarray(layer.bias.detach())).max() <= 1 / np.sqrt(fan_in)
    assert np.abs(np.asarray(layer.weight.detach())).max() <= 1 / np.sqrt(fan_in) + 1e-7
    assert tuple(layer.weight.shape) == (8, 2, 3, 3)


POOL_CASES = [
    ("MaxPool1d", (3,), {"stride": 2, "padding": 1}, (2, 3, 9)),
    ("MaxPool2d", (2,), {}, (2, 3, 6, 6)),
    ("MaxPool2d", ((3, 2),), {"stride": 2, "dilation": (1, 2), "ceil_mode": True}, (1, 2, 9, 9)),
    ("AvgPool1d", (3,), {"padding": 1, "count_include_pad": False}, (2, 2, 8)),
    ("AvgPool2d", (3,), {"stride": 2, "padding": 1, "ceil_mode": True}, (1, 2, 7, 7)),
    ("AvgPool2d", (2,), {"divisor_override": 3}, (2, 6, 6)),
    ("AdaptiveAvgPool1d", (4,), {}, (2, 3, 9)),
    ("AdaptiveAvgPool2d", ((3, 2),), {}, (2, 3, 7, 5)),
    ("AdaptiveMaxPool2d", (3,), {}, (1, 2, 7, 8)),
]


@pytest.mark.parametrize(("name", "args", "kwargs", "shape"), POOL_CASES)
def test_pooling_matches_torch(torch, name, args, kwargs, shape):
    ours, theirs = getattr(nn, name)(*args, **kwargs), getattr(torch.nn, name)(*args, **kwargs)
    assert repr(ours) == repr(theirs)
    compare_layer(torch, ours, theirs, _x(*shape))


@pytest.mark.parametrize("name", ["MaxPool2d", "AdaptiveMaxPool2d"])
def test_pooling_indices_match_torch(torch, name):
    x = _x(2, 3, 6, 6)
    ours = getattr(nn, name)(2 if name == "MaxPool2d" else 3, return_indices=True)
    theirs = getattr(torch.nn, name)(2 if name == "MaxPool2d" else 3, return_indices=True)
    (values, indices), (t_values, t_indices) = ours(aa.tensor(x)), theirs(torch.tensor(x))
    np.testing.assert_array_equal(np.asarray(indices), t_indices.numpy())
    np.testing.assert_allclose(np.asarray(values), t_values.numpy())


@pytest.mark.parametrize(
    ("name", "kwargs", "shape"),
    [
        ("BatchNorm1d", {}, (6, 3)),
        ("BatchNorm1d", {"momentum": None}, (4, 3, 5)),
        ("BatchNorm2d", {"eps": 1e-3, "momentum": 0.3}, (4, 3, 5, 5)),
        ("BatchNorm2d", {"affine": False}, (2, 3, 4, 4)),
        ("BatchNorm2d", {"bias": False}, (2, 3, 4, 4)),
        ("BatchNorm2d", {"track_running_stats": False}, (2, 3, 4, 4)),
        ("InstanceNorm2d", {}, (2, 3, 5, 5)),
        ("InstanceNorm2d", {"affine": True, "track_running_stats": True}, (2, 3, 5, 5)),
    ],
)
def test_normalisation_train_then_eval_matches_torch(torch, name, kwargs, shape):
    ours = getattr(nn, name)(3, **kwargs)
    theirs = getattr(torch.nn, name)(3, **kwargs)
    assert repr(ours) == repr(theirs)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    for _ in range(3):  # training steps move the running statistics
        compare_layer(torch, ours, theirs, _x(*shape))
    for (key, mine), ref in zip(
        ours.state_dict().items(), theirs.state_dict().values(), strict=True
    ):
        np.testing.assert_allclose(np.asarray(mine), ref.numpy(), rtol=1e-10, err_msg=key)
    ours.eval()
    theirs.eval()
    compare_layer(torch, ours, theirs, _x(*shape))


def test_group_norm_matches_torch(torch):
    for affine, bias in ((True, True), (False, True), (True, False)):
        ours = nn.GroupNorm(2, 4, affine=affine, bias=bias)
        theirs = torch.nn.GroupNorm(2, 4, affine=affine, bias=bias)
        assert repr(ours) == repr(theirs)
        compare_layer(torch, ours, theirs, _x(3, 4, 5, 2))


@pytest.mark.parametrize(
    "kwargs",
    [
        {"scale_factor": 2},
        {"size": (5, 7)},
        {"scale_factor": 2, "mode": "bilinear"},
        {"size": 9, "mode": "bilinear", "align_corners": True},
    ],
)
def test_upsample_matches_torch(torch, kwargs):
    ours, theirs = nn.Upsample(**kwargs), torch.nn.Upsample(**kwargs)
    assert repr(ours) == repr(theirs)
    compare_layer(torch, ours, theirs, _x(2, 3, 4, 5))


@pytest.mark.parametrize(
    ("make", "x", "error", "message"),
    [
        (
            lambda: nn.Conv2d(3, 8, 3),
            (2, 4, 8, 8),
            RuntimeError,
            r"Conv2d\(3, 8, \.\.\.\): expected input with 3 channels, got 4",
        ),
        (lambda: nn.Conv2d(3, 8, 3), (8, 8), RuntimeError, "Conv2d: expected 3D or 4D input"),
        (lambda: nn.Conv1d(3, 8, 3), (2, 3, 4, 4), RuntimeError, "Conv1d: expected 2D or 3D"),
        (
            lambda: nn.BatchNorm2d(3),
            (2, 3, 4),
            ValueError,
            r"BatchNorm2d: expected 4D input \(got 3D input\)",
        ),
        (lambda: nn.BatchNorm1d(3), (2, 5), ValueError, r"BatchNorm1d\(3\): expected input with 3"),
        (lambda: nn.MaxPool2d(2), (4,), RuntimeError, "MaxPool2d: expected 3D or 4D input"),
    ],
)
def test_bad_input_names_the_layer(make, x, error, message):
    with pytest.raises(error, match=message):
        make()(aa.zeros(*x))


def test_layer_refuses_a_list():
    message = r"Conv2d.forward\(\): argument 'input' must be Tensor, not list"
    with pytest.raises(TypeError, match=message):
        nn.Conv2d(1, 1, 1)([[1.0]])


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: nn.Conv2d(3, 8, 3, groups=2), "in_channels must be divisible by groups"),
        (lambda: nn.Conv2d(4, 6, 3, groups=4), "out_channels must be divisible by groups"),
        (lambda: nn.Conv2d(4, 6, 3, padding="full"), "Invalid padding string 'full'"),
        (lambda: nn.Conv2d(4, 6, 3, stride=2, padding="same"), "not supported for strided"),
        (lambda: nn.Conv2d(4, 6, 3, padding_mode="mirror"), "padding_mode must be one of"),
        (lambda: nn.GroupNorm(3, 4), r"num_channels \(4\) must be divisible by num_groups \(3\)"),
    ],
)
def test_constructor_errors_match_torch(torch, make, message):
    with pytest.raises(ValueError, match=message):
        make()


def test_mismatched_state_dict_shape_names_the_key(torch):
    theirs = torch.nn.Conv2d(3, 8, 5)
    with pytest.raises(RuntimeError, match="size mismatch for weight"):
        load_from_torch(nn.Conv2d(3, 8, 3), theirs)
    with pytest.raises(RuntimeError, match='Missing key\\(s\\) in state_dict: "running_mean"'):
        nn.BatchNorm2d(2).load_state_dict({"weight": aa.ones(2), "bias": aa.zeros(2)})
    missing, unexpected = nn.BatchNorm2d(2).load_state_dict(
        {"weight": aa.ones(2), "extra": aa.zeros(1)}, strict=False
    )
    assert "running_mean" in missing and unexpected == ["extra"]
