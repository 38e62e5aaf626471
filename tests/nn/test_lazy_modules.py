"""Lazy layers as PyTorch's: uninitialised parameters until the first forward, which gives them
their shapes, initialises them and turns the layer into its eager class; state dicts of
uninitialised layers, loading into them, and an optimizer built around them."""

from __future__ import annotations

import numpy as np
import pytest

import autograd_async as aa
from autograd_async import nn

from .layer_helpers import compare_layer

RNG = np.random.default_rng(0)

# (lazy class, constructor args and kwargs, eager class, input shape)
LAZY = [
    ("LazyLinear", (3,), {}, "Linear", (4, 5)),
    ("LazyLinear", (3,), {"bias": False}, "Linear", (2, 4, 6)),
    ("LazyConv1d", (4, 3), {"padding": 1}, "Conv1d", (2, 3, 7)),
    ("LazyConv2d", (4, 3), {"groups": 2, "stride": 2}, "Conv2d", (2, 6, 7, 6)),
    ("LazyConv3d", (2, 2), {"bias": False}, "Conv3d", (3, 4, 4, 3)),
    (
        "LazyConvTranspose1d",
        (4, 3),
        {"stride": 2, "output_padding": 1},
        "ConvTranspose1d",
        (2, 3, 5),
    ),
    ("LazyConvTranspose2d", (4, 2), {"groups": 2}, "ConvTranspose2d", (2, 6, 3, 4)),
    ("LazyConvTranspose3d", (2, 2), {"dilation": 2}, "ConvTranspose3d", (1, 3, 2, 3, 2)),
    ("LazyBatchNorm1d", (), {}, "BatchNorm1d", (4, 3, 5)),
    ("LazyBatchNorm2d", (), {"momentum": None}, "BatchNorm2d", (4, 3, 2, 5)),
    ("LazyBatchNorm3d", (), {"affine": False}, "BatchNorm3d", (2, 3, 2, 2, 3)),
    ("LazyInstanceNorm1d", (), {}, "InstanceNorm1d", (2, 3, 6)),
    ("LazyInstanceNorm2d", (), {"track_running_stats": False}, "InstanceNorm2d", (2, 3, 4, 5)),
    ("LazyInstanceNorm3d", (), {}, "InstanceNorm3d", (2, 3, 2, 3, 2)),
]


@pytest.mark.parametrize("case", LAZY, ids=lambda c: c[0] if isinstance(c, tuple) else None)
def test_lazy_layer_becomes_its_eager_class_like_torch(torch, case) -> None:
    name, args, kwargs, eager, shape = case
    ours = getattr(nn, name)(*args, **kwargs)
    theirs = getattr(torch.nn, name)(*args, **kwargs)
    assert repr(ours) == repr(theirs)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert ours.has_uninitialized_params()
    lazy = [
        k
        for k, v in ours.state_dict().items()
        if isinstance(v, nn.UninitializedParameter | nn.UninitializedBuffer)
    ]
    assert lazy == [
        k
        for k, v in theirs.state_dict().items()
        if isinstance(v, torch.nn.UninitializedParameter | torch.nn.UninitializedBuffer)
    ]
    x = RNG.standard_normal(shape)
    ours(aa.tensor(x, dtype=aa.float32))
    theirs(torch.tensor(x, dtype=torch.float32))
    assert type(ours) is getattr(nn, eager) and type(theirs) is getattr(torch.nn, eager)
    assert repr(ours) == repr(theirs)
    for (key, a), b in zip(ours.state_dict().items(), theirs.state_dict().values(), strict=True):
        assert tuple(a.shape) == tuple(b.shape), key
        assert str(a.dtype) == str(b.dtype).removeprefix("torch."), key
    compare_layer(torch, ours, theirs, x)


def test_initialisation_after_materialising_is_the_eager_layers(torch) -> None:
    aa.manual_seed(0)
    layer = nn.LazyLinear(50)
    layer(aa.ones(2, 200))
    bound = 1 / np.sqrt(200)
    weight = np.asarray(layer.weight.detach())
    assert np.abs(weight).max() <= bound and np.abs(weight).max() > 0.9 * bound
    bn = nn.LazyBatchNorm1d()
    bn.eval()
    bn(aa.ones(2, 4))
    np.testing.assert_array_equal(np.asarray(bn.weight.detach()), np.ones(4))
    np.testing.assert_array_equal(np.asarray(bn.running_var), np.ones(4))


def test_uninitialised_parameters_refuse_their_shape() -> None:
    layer = nn.LazyConv2d(4, 3)
    assert repr(layer.weight) == "<UninitializedParameter>"
    with pytest.raises(RuntimeError, match="Can't access the shape of an uninitialized"):
        _ = layer.weight.shape
    with pytest.raises(
        RuntimeError,
        match=r"Expected 3D \(unbatched\) or 4D \(batched\) input "
        "to LazyConv2d",
    ):
        layer(aa.ones(5, 5))
    with pytest.raises(ValueError, match="in_channels must be divisible by groups"):
        nn.LazyConv2d(4, 3, groups=2)(aa.ones(1, 3, 5, 5))


def test_loading_a_state_dict_materialises_nested_lazy_layers(torch) -> None:
    trained = nn.Sequential(nn.LazyLinear(4), nn.ReLU(), nn.LazyLinear(2))
    x = aa.randn(3, 7)
    expected = trained(x)
    fresh = nn.Sequential(nn.LazyLinear(4), nn.ReLU(), nn.LazyLinear(2))
    fresh.load_state_dict(trained.state_dict())
    assert not fresh[0].has_uninitialized_params()
    np.testing.assert_array_equal(np.asarray(fresh(x).detach()), np.asarray(expected.detach()))
    assert type(fresh[2]) is nn.Linear
    # an uninitialised state dict loads into an uninitialised layer and leaves it lazy
    empty = nn.LazyLinear(3)
    empty.load_state_dict(nn.LazyLinear(3).state_dict())
    assert empty.has_uninitialized_params()
    # PyTorch's checkpoints too
    theirs = torch.nn.LazyBatchNorm2d()
    theirs(torch.randn(2, 5, 3, 3))
    ours = nn.LazyBatchNorm2d()
    ours.load_state_dict({k: aa.tensor(v.numpy()) for k, v in theirs.state_dict().items()})
    np.testing.assert_array_equal(np.asarray(ours.running_mean), theirs.running_mean.numpy())


def test_optimizer_built_after_the_first_forward_trains_the_layer() -> None:
    layer = nn.LazyLinear(1)
    x, y = aa.randn(16, 3), aa.randn(16, 1)
    layer(x)
    opt = aa.optim.SGD(layer.parameters(), lr=0.1)
    losses = []
    for _ in range(5):
        opt.zero_grad()
        loss = ((layer(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
        losses.append(float(loss))
    assert losses[-1] < losses[0]


def test_optimizer_holding_the_uninitialised_parameters_sees_them_materialised() -> None:
    layer = nn.LazyLinear(2)
    opt = aa.optim.SGD(layer.parameters(), lr=1.0)
    layer(aa.ones(1, 3)).sum().backward()
    before = np.asarray(layer.weight.detach()).copy()
    opt.step()
    np.testing.assert_allclose(np.asarray(layer.weight.detach()), before - 1.0)
    assert type(opt.param_groups[0]["params"][0]) is nn.Parameter


def test_lazy_layers_move_and_cast_before_materialising() -> None:
    layer = nn.LazyLinear(3).double()
    layer(aa.ones(2, 4, dtype=aa.float64))
    assert layer.weight.dtype == aa.float64
    made = nn.LazyConv1d(2, 2, dtype=aa.float64)
    made(aa.ones(1, 3, 4, dtype=aa.float64))
    assert made.weight.dtype == aa.float64


def test_load_state_dict_pre_hooks_see_each_module_with_its_prefix() -> None:
    model = nn.Sequential(nn.Linear(2, 2), nn.Sequential(nn.Linear(2, 1)))
    seen = []

    def hook(module, state_dict, prefix, metadata, strict, missing, unexpected, errors):
        seen.append((type(module).__name__, prefix, strict))

    handle = model[1][0].register_load_state_dict_pre_hook(hook)
    model.load_state_dict(model.state_dict())
    assert seen == [("Linear", "1.0.", True)]
    handle.remove()
    model.load_state_dict(model.state_dict(), strict=False)
    assert len(seen) == 1


def test_first_forward_refuses_a_weight_loaded_alone_as_torch_does(torch) -> None:
    # A partial state dict materialises the weight alone; the first forward then finds it
    # initialised and, as PyTorch's does, stops with an AttributeError rather than
    # re-initialising the loaded weight.
    for lib in (aa, torch):
        layer = lib.nn.LazyLinear(3)
        layer.load_state_dict({"weight": lib.zeros(3, 2)}, strict=False)
        with pytest.raises(AttributeError):
            layer(lib.ones(4, 2))
