"""PixelShuffle, PixelUnshuffle, ChannelShuffle, Softmin, Softmax2d, RMSNorm and the padding
modules against PyTorch: values, gradients, reprs and errors."""

from __future__ import annotations

import numpy as np
import pytest

import autograd_async as aa
from autograd_async import nn

RNG = np.random.default_rng(0)

# (module name, constructor args, constructor kwargs, input shape)
CASES = [
    ("PixelShuffle", (2,), {}, (2, 8, 3, 2)),
    ("PixelShuffle", (3,), {}, (9, 2, 2)),
    ("PixelUnshuffle", (2,), {}, (2, 3, 4, 6)),
    ("PixelUnshuffle", (2,), {}, (1, 2, 1, 4, 2)),
    ("ChannelShuffle", (3,), {}, (2, 6, 2, 2)),
    ("ChannelShuffle", (2,), {}, (2, 4, 3)),
    ("Softmin", (1,), {}, (3, 4, 2)),
    ("Softmin", (-1,), {}, (3, 4)),
    ("Softmax2d", (), {}, (2, 3, 2, 2)),
    ("Softmax2d", (), {}, (3, 2, 2)),
    ("RMSNorm", (4,), {}, (3, 4)),
    ("RMSNorm", ((2, 3),), {"eps": 1e-3}, (4, 2, 3)),
    ("RMSNorm", (3,), {"elementwise_affine": False}, (2, 3)),
    ("ZeroPad1d", ((1, 2),), {}, (2, 3, 4)),
    ("ZeroPad2d", (1,), {}, (2, 3, 4)),
    ("ZeroPad3d", ((1, 0, 2, 1, 0, 1),), {}, (1, 2, 3, 4, 2)),
    ("ConstantPad1d", (2, 3.5), {}, (2, 3)),
    ("ConstantPad2d", ((1, 2, 0, 1), -1.0), {}, (2, 3, 4)),
    ("ConstantPad3d", (1, 0.5), {}, (1, 2, 2, 2)),
    ("ReflectionPad1d", ((2, 1),), {}, (2, 3, 4)),
    ("ReflectionPad2d", (1,), {}, (1, 2, 3, 4)),
    ("ReflectionPad3d", (1,), {}, (1, 2, 3, 3, 3)),
    ("ReplicationPad1d", (2,), {}, (2, 3, 4)),
    ("ReplicationPad2d", ((1, 2, 2, 0),), {}, (1, 2, 3, 4)),
    ("ReplicationPad3d", (1,), {}, (1, 1, 2, 3, 2)),
    ("CircularPad1d", (2,), {}, (2, 3, 4)),
    ("CircularPad2d", ((1, 2, 2, 1),), {}, (1, 2, 3, 4)),
    ("CircularPad3d", (1,), {}, (1, 1, 2, 3, 2)),
]


@pytest.mark.parametrize(
    ("name", "args", "kwargs", "shape"), CASES, ids=[f"{c[0]}{i}" for i, c in enumerate(CASES)]
)
def test_layer_matches_torch(torch, device, name, args, kwargs, shape):
    x = RNG.standard_normal(shape)
    theirs = getattr(torch.nn, name)(*args, **kwargs).double()
    ours = getattr(nn, name)(*args, **kwargs).double()
    assert repr(ours) == repr(theirs)
    with torch.no_grad():
        for p in theirs.parameters():
            p.copy_(torch.tensor(RNG.standard_normal(tuple(p.shape))))
    ours.load_state_dict({k: aa.tensor(v.detach().numpy()) for k, v in theirs.state_dict().items()})
    ours.to(device)
    x_ours = aa.tensor(x, requires_grad=True, device=device)
    x_ref = torch.tensor(x, requires_grad=True)
    out_ours, out_ref = ours(x_ours), theirs(x_ref)
    np.testing.assert_allclose(
        out_ours.detach().cpu().numpy(), out_ref.detach().numpy(), rtol=1e-12, atol=1e-14
    )
    w = RNG.standard_normal(tuple(out_ref.shape))
    (out_ours * aa.tensor(w, device=device)).sum().backward()
    (out_ref * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(
        x_ours.grad.cpu().numpy(), x_ref.grad.numpy(), rtol=1e-10, atol=1e-12
    )
    ref_params = dict(theirs.named_parameters())
    for key, p in ours.named_parameters():
        np.testing.assert_allclose(
            p.grad.cpu().numpy(), ref_params[key].grad.numpy(), rtol=1e-10, atol=1e-12
        )


def test_rms_norm_default_eps_follows_the_dtype(torch):
    x = np.full((2, 3), 1e-5, dtype=np.float32)
    ours = nn.functional.rms_norm(aa.tensor(x), (3,))
    ref = torch.nn.functional.rms_norm(torch.tensor(x), (3,))
    np.testing.assert_allclose(ours.numpy(), ref.numpy(), rtol=1e-6)


def error_of(fn):
    try:
        fn()
    except Exception as exc:  # noqa: BLE001 - the type and text are what is compared
        return type(exc).__name__, str(exc)
    return None


ERRORS = [
    lambda lib, f: f.pixel_shuffle(lib.zeros(2, 3), 2),
    lambda lib, f: f.pixel_shuffle(lib.zeros(1, 5, 2, 2), 2),
    lambda lib, f: f.pixel_unshuffle(lib.zeros(1, 1, 5, 4), 2),
    lambda lib, f: f.pixel_unshuffle(lib.zeros(1, 1, 4, 5), 2),
    lambda lib, f: f.channel_shuffle(lib.zeros(1, 5, 2), 2),
    lambda lib, f: f.channel_shuffle(lib.zeros(1, 4), 2),
    lambda lib, f: f.channel_shuffle(lib.zeros(1, 4, 2), 0),
    lambda lib, f: f.rms_norm(lib.zeros(2, 3), (4,)),
    lambda lib, f: f.rms_norm(lib.zeros(2, 3), (3,), lib.ones(2)),
    lambda lib, f: lib.nn.Softmax2d()(lib.zeros(2, 2)),
]


@pytest.mark.parametrize("call", ERRORS)
def test_errors_match_torch(torch, call):
    ref = error_of(lambda: call(torch, torch.nn.functional))
    assert ref is not None
    assert error_of(lambda: call(aa, nn.functional)) == ref
