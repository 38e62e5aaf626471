"""nn.Buffer (assigning one registers a buffer, persistent or not) and nn.functional's bilinear,
pdist, conv_tbc and native_channel_shuffle against PyTorch, with gradients."""

from __future__ import annotations

import numpy as np
import pytest

import autograd_async as aa
from autograd_async.autograd import gradcheck

_RNG = np.random.default_rng(0)


def test_assigning_a_buffer_registers_it(torch):
    for lib in (aa, torch):
        m = lib.nn.Module()
        m.kept = lib.nn.Buffer(lib.ones(2))
        m.scratch = lib.nn.Buffer(lib.zeros(1), persistent=False)
        m.tracked = lib.nn.Buffer(lib.ones(1, requires_grad=True))
        assert [n for n, _ in m.named_buffers()] == ["kept", "scratch", "tracked"]
        assert list(m.state_dict()) == ["kept", "tracked"]
        assert m.tracked.requires_grad and isinstance(m.kept, lib.nn.Buffer)
        assert not isinstance(lib.ones(1), lib.nn.Buffer)
        m.kept = lib.zeros(2)  # a plain tensor assigned to a buffer's name stays a buffer
        assert m.state_dict()["kept"].tolist() == [0.0, 0.0]
    data = aa.ones(3)
    shared = aa.nn.Buffer(data)
    shared.add_(1)
    assert data.tolist() == [2.0, 2.0, 2.0]


CASES = {
    "bilinear": (
        lambda F, a, b, w, bias: F.bilinear(a, b, w, bias),
        [(4, 3), (4, 2), (5, 3, 2), (5,)],
    ),
    "pdist": (lambda F, x: F.pdist(x), [(5, 3)]),
    "pdist_p1": (lambda F, x: F.pdist(x, p=1.0), [(4, 3)]),
    "conv_tbc": (lambda F, x, w, b: F.conv_tbc(x, w, b), [(6, 2, 3), (3, 3, 4), (4,)]),
    "conv_tbc_pad": (lambda F, x, w, b: F.conv_tbc(x, w, b, 2), [(6, 2, 3), (3, 3, 4), (4,)]),
}


def test_native_channel_shuffle_shuffles_without_a_derivative(torch, device):
    x = _RNG.normal(size=(2, 4, 3))
    ours = aa.nn.functional.native_channel_shuffle(aa.tensor(x, device=device), 2)
    ref = torch.nn.functional.native_channel_shuffle(torch.tensor(x), 2)
    np.testing.assert_array_equal(ours.cpu().numpy(), ref.numpy())
    for lib in (aa, torch):
        out = lib.native_channel_shuffle(lib.ones(1, 4, 2, requires_grad=True), 2)
        with pytest.raises(RuntimeError, match="derivative for aten::native_channel_shuffle"):
            out.sum().backward()


@pytest.mark.parametrize("name", sorted(CASES))
def test_functional_forms_match_torch(torch, device, name):
    fn, shapes = CASES[name]
    arrays = [_RNG.normal(size=s) for s in shapes]
    ours = [aa.tensor(a, device=device, requires_grad=True) for a in arrays]
    theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
    out, ref = fn(aa.nn.functional, *ours), fn(torch.nn.functional, *theirs)
    assert out.device == aa.device(device) and tuple(out.shape) == tuple(ref.shape)
    np.testing.assert_allclose(out.detach().cpu().numpy(), ref.detach().numpy(), atol=1e-12)
    (out * out).sum().backward()
    (ref * ref).sum().backward()
    for mine, other in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(mine.grad.cpu().numpy(), other.grad.numpy(), atol=1e-10)
    assert gradcheck(lambda *xs: fn(aa.nn.functional, *xs), tuple(ours))


def test_conv_tbc_errors_match_torch(torch):
    for lib in (aa, torch):
        x, w = lib.ones(4, 3, 5), lib.ones(6, 3, 2)
        with pytest.raises(RuntimeError, match="Input dim 2 \\(input channels\\) is not == dim 1"):
            lib.conv_tbc(x, w, lib.ones(2))
