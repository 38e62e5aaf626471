"""The layers over 3-d pooling, unpooling, power and fractional pooling, normalisation, dropout,
distances, shrinkage and the older aliases: PyTorch's constructor arguments, repr and state_dict,
outputs and gradients (through its own state dict) in float64."""

from __future__ import annotations

import numpy as np
import pytest

import autograd_async as aa

from .layer_helpers import compare_layer

RNG = np.random.default_rng(0)


def _r(*shape):
    return RNG.standard_normal(shape)


# (class name, constructor args, constructor kwargs, inputs)
LAYERS = [
    ("MaxPool3d", (2,), {"stride": 1, "padding": 1}, (_r(2, 3, 4, 5, 4),)),
    (
        "AvgPool3d",
        (3,),
        {"stride": 2, "padding": 1, "count_include_pad": False},
        (_r(2, 3, 5, 6, 5),),
    ),
    ("AdaptiveAvgPool3d", ((2, 3, None),), {}, (_r(2, 3, 5, 6, 5),)),
    ("AdaptiveMaxPool1d", (4,), {}, (_r(2, 3, 9),)),
    ("AdaptiveMaxPool3d", (3,), {}, (_r(3, 5, 6, 5),)),
    ("LPPool1d", (2, 3), {"stride": 2}, (_r(2, 3, 9),)),
    ("LPPool2d", (1.5, 2), {"ceil_mode": True}, (np.abs(_r(2, 3, 5, 5)) + 0.1,)),
    ("LPPool3d", (2, 2), {}, (_r(2, 3, 4, 4, 4),)),
    (
        "ConvTranspose3d",
        (3, 4, (2, 3, 2)),
        {"stride": 2, "padding": 1, "output_padding": 1},
        (_r(2, 3, 3, 4, 3),),
    ),
    ("ConvTranspose3d", (4, 2, 2), {"groups": 2, "bias": False, "dilation": 2}, (_r(4, 3, 2, 3),)),
    ("BatchNorm3d", (3,), {}, (_r(2, 3, 2, 3, 4),)),
    ("InstanceNorm1d", (3,), {"affine": True}, (_r(2, 3, 7),)),
    ("InstanceNorm1d", (3,), {}, (_r(3, 7),)),
    ("InstanceNorm3d", (3,), {"affine": True, "track_running_stats": True}, (_r(2, 3, 3, 4, 2),)),
    ("LocalResponseNorm", (3,), {"alpha": 0.1, "k": 2.0}, (_r(2, 5, 3, 4),)),
    ("CosineSimilarity", (), {"dim": 0}, (_r(4, 5), _r(4, 5))),
    ("PairwiseDistance", (), {"p": 3.0, "keepdim": True}, (_r(4, 5), _r(4, 5))),
    ("Hardshrink", (0.3,), {}, (_r(3, 4),)),
    ("Softshrink", (), {}, (_r(3, 4),)),
    ("Threshold", (0.1, 20.0), {}, (_r(3, 4),)),
    ("RReLU", (0.1, 0.3), {}, (_r(3, 4),)),
    ("Fold", ((4, 5), 2), {"stride": 1}, (_r(2, 12, 12),)),
    ("Unfold", (2,), {"dilation": 2, "padding": 1}, (_r(2, 3, 5, 4),)),
    ("UpsamplingNearest2d", (), {"scale_factor": 2}, (_r(2, 3, 3, 4),)),
    ("UpsamplingBilinear2d", ((5, 7),), {}, (_r(2, 3, 3, 4),)),
    ("Dropout1d", (0.3,), {}, (_r(2, 3, 4),)),
    ("Dropout2d", (), {}, (_r(2, 3, 4, 4),)),
    ("Dropout3d", (0.2,), {}, (_r(2, 3, 4, 4, 2),)),
    ("AlphaDropout", (0.2,), {}, (_r(2, 3),)),
    ("FeatureAlphaDropout", (), {}, (_r(2, 3, 4),)),
]


@pytest.mark.parametrize("case", LAYERS, ids=lambda c: c[0] if isinstance(c, tuple) else None)
def test_layer_matches_torch(torch, case) -> None:
    name, args, kwargs, inputs = case
    theirs = getattr(torch.nn, name)(*args, **kwargs)
    ours = getattr(aa.nn, name)(*args, **kwargs)
    assert repr(ours) == repr(theirs)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    theirs.eval()
    ours.eval()  # dropout and batch norm deterministic: their running statistics
    compare_layer(torch, ours, theirs, *inputs)
    if name in ("BatchNorm3d", "InstanceNorm3d"):
        theirs.train()
        ours.train()
        compare_layer(torch, ours, theirs, *inputs)
        for key, value in theirs.state_dict().items():
            np.testing.assert_allclose(np.asarray(ours.state_dict()[key]), value.numpy())


@pytest.mark.parametrize(("size", "channels"), [(3, 7), (4, 3), (5, 8), (2, 5), (1, 4)])
def test_cross_map_lrn2d_forward_matches_torch_and_gradient_is_exact(
    torch, device, size, channels
) -> None:
    x = _r(2, channels, 3, 2)
    ref = torch.nn.CrossMapLRN2d(size, 0.1, 0.6, 1.5)(torch.tensor(x))
    layer = aa.nn.CrossMapLRN2d(size, 0.1, 0.6, 1.5)
    assert repr(layer) == repr(torch.nn.CrossMapLRN2d(size, 0.1, 0.6, 1.5))
    out = layer(aa.tensor(x, device=device))
    np.testing.assert_allclose(np.asarray(out.cpu()), ref.numpy(), rtol=1e-12)
    # PyTorch's hand-written backward is not the derivative of its forward (see
    # docs/differences-from-pytorch.md); ours is, by finite differences.
    fresh = aa.tensor(x, device=device, requires_grad=True)
    assert aa.autograd.gradcheck(layer, (fresh,))


def test_max_unpool_layers_invert_max_pool(torch) -> None:
    for dims, shape in ((1, (2, 3, 8)), (2, (2, 3, 6, 8)), (3, (2, 2, 4, 6, 4))):
        x = _r(*shape)
        pool_t = getattr(torch.nn, f"MaxPool{dims}d")(2, return_indices=True)
        pool_o = getattr(aa.nn, f"MaxPool{dims}d")(2, return_indices=True)
        unpool_t = getattr(torch.nn, f"MaxUnpool{dims}d")(2)
        unpool_o = getattr(aa.nn, f"MaxUnpool{dims}d")(2)
        assert repr(unpool_o) == repr(unpool_t)
        ref = unpool_t(*pool_t(torch.tensor(x)))
        out = unpool_o(*pool_o(aa.tensor(x)))
        np.testing.assert_array_equal(np.asarray(out), ref.numpy())
        sized = unpool_o(*pool_o(aa.tensor(x)), output_size=[s + 1 for s in shape[-dims:]])
        assert tuple(sized.shape[-dims:]) == tuple(s + 1 for s in shape[-dims:])


def test_fractional_max_pool_layers_take_torch_arguments(torch) -> None:
    samples = RNG.random((2, 3, 2))
    theirs = torch.nn.FractionalMaxPool2d(
        2, output_size=(3, 4), return_indices=True, _random_samples=torch.tensor(samples)
    )
    ours = aa.nn.FractionalMaxPool2d(
        2, output_size=(3, 4), return_indices=True, _random_samples=aa.tensor(samples)
    )
    x = _r(2, 3, 7, 8)
    for a, b in zip(ours(aa.tensor(x)), theirs(torch.tensor(x)), strict=True):
        np.testing.assert_array_equal(np.asarray(a), b.numpy())
    assert list(ours.state_dict()) == list(theirs.state_dict())
    out = aa.nn.FractionalMaxPool3d(2, output_ratio=0.5)(aa.tensor(_r(2, 3, 6, 6, 6)))
    assert tuple(out.shape) == (2, 3, 3, 3, 3)
    for lib in (torch, aa):
        with pytest.raises(ValueError, match="requires specifying either an output size"):
            lib.nn.FractionalMaxPool2d(2)
        with pytest.raises(ValueError, match="only one of output_size and output_ratio"):
            lib.nn.FractionalMaxPool2d(2, 3, 0.5)
        with pytest.raises(ValueError, match="output_ratio must be between 0 and 1"):
            lib.nn.FractionalMaxPool3d(2, output_ratio=1.5)


def test_dropout_layers_train_and_eval(torch) -> None:
    aa.manual_seed(0)
    layer = aa.nn.Dropout2d(0.5)
    x = aa.ones(8, 16, 3, 3)
    out = np.asarray(layer(x))
    assert set(np.unique(out)) == {0.0, 2.0}
    layer.eval()
    assert layer(x) is x
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1"):
        aa.nn.AlphaDropout(-0.1)


def test_nll_loss_2d_and_container_are_the_old_names(torch) -> None:
    logp = aa.tensor(_r(2, 3, 4, 4)).log_softmax(1)
    target = aa.tensor(RNG.integers(0, 3, (2, 4, 4)))
    with pytest.warns(FutureWarning, match="`NLLLoss2d` has been deprecated"):
        loss = aa.nn.NLLLoss2d(ignore_index=1)(logp, target)
    with pytest.warns(FutureWarning):
        ref = torch.nn.NLLLoss2d(ignore_index=1)(
            torch.tensor(np.asarray(logp)), torch.tensor(np.asarray(target))
        )
    np.testing.assert_allclose(float(loss), float(ref))
    with pytest.warns(FutureWarning, match="`nn.Container` is deprecated"):
        box = aa.nn.Container(lin=aa.nn.Linear(2, 3))
    assert list(box.state_dict()) == ["lin.weight", "lin.bias"]
