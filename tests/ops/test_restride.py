"""In-place changes of shape and memory: t_, transpose_, swapaxes_, swapdims_, squeeze_,
unsqueeze_, as_strided_, resize_, resize_as_ and set_, against PyTorch."""

from __future__ import annotations

import numpy as np
import pytest
from gradients import to_numpy

import autograd_async as aa
from autograd_async.autograd import gradcheck, gradgradcheck

X0 = np.arange(6.0).reshape(2, 3) / 5 + 0.1

VIEW_FORMS = [
    ("t_", ()),
    ("transpose_", (0, 1)),
    ("swapaxes_", (1, 0)),
    ("swapdims_", (0, -1)),
    ("unsqueeze_", (1,)),
    ("squeeze_", ()),
    ("as_strided_", ((3, 2), (1, 3))),
]


def _lib_tensor(lib, device, values, **kwargs):
    if lib is aa:
        return aa.tensor(values, dtype=aa.float64, device=device, **kwargs)
    return lib.tensor(values, dtype=lib.float64, **kwargs)


@pytest.mark.parametrize(("name", "args"), VIEW_FORMS)
def test_view_forms_match_torch(torch, device: str, name: str, args: tuple) -> None:
    def run(lib):
        values = X0 if name == "t_" else X0[None]
        x = _lib_tensor(lib, device, values, requires_grad=True)
        y = x * 1
        before = y._version
        assert getattr(y, name)(*args) is y
        bumped = y._version - before
        w = _lib_tensor(lib, device, np.linspace(1, 2, y.numel()).reshape(tuple(y.shape)))
        (y * w).sum().backward()
        return y, x.grad, bumped

    (y, g, bumped), (ty, tg, tbumped) = run(aa), run(torch)
    assert tuple(y.shape) == tuple(ty.shape) and y.stride() == ty.stride()
    assert bumped == tbumped == 1
    np.testing.assert_allclose(to_numpy(y), ty.detach().numpy())
    np.testing.assert_allclose(to_numpy(g), tg.numpy())
    assert y.device == aa.device(device)


def test_view_forms_pass_gradcheck() -> None:
    def fn(x):
        y = x * 2
        y.t_().unsqueeze_(0).transpose_(0, 2).squeeze_(2)
        return y * y

    x = aa.tensor(X0, requires_grad=True)
    assert gradcheck(fn, (x,)) and gradgradcheck(fn, (x,))


def test_view_forms_record_the_view_op(torch) -> None:
    for lib in (aa, torch):
        y = lib.tensor(X0, requires_grad=True) * 1
        y.t_()
        assert type(y.grad_fn).__name__.startswith("TBackward")
        y.unsqueeze_(0)
        assert type(y.grad_fn).__name__.startswith("UnsqueezeBackward")


def test_view_forms_on_a_view_keep_its_base(torch) -> None:
    for lib in (aa, torch):
        b = lib.tensor(np.arange(12.0).reshape(4, 3))
        v = b[1:]
        v.t_()
        assert v._base is b and tuple(v.shape) == (3, 3)
        b[1, 0] = 100.0
        assert v[0, 0].item() == 100.0  # still b's memory


def test_view_forms_refuse_leaves_as_torch(torch) -> None:
    for lib in (aa, torch):
        leaf = lib.tensor(X0, requires_grad=True)
        with pytest.raises(RuntimeError, match="^a leaf Variable that requires grad"):
            leaf.t_()
        with pytest.raises(RuntimeError, match="^a view of a leaf Variable that requires grad"):
            leaf[0:1].squeeze_(0)
        with lib.no_grad():
            leaf.t_()
        assert tuple(leaf.shape) == (3, 2) and leaf.is_leaf


def test_resize_matches_torch(torch, device: str) -> None:
    cases = [
        (lambda lib, **on: lib.arange(6.0, **on), ((2, 2),)),
        # memory order, not shape order
        (lambda lib, **on: lib.arange(6.0, **on).view(2, 3).t(), (2, 2)),
        (lambda lib, **on: lib.arange(6.0, **on)[2:], (3,)),
        (lambda lib, **on: lib.arange(4.0, **on), ([2, 1, 2],)),
    ]
    for make, sizes in cases:
        ours = make(aa, device=device)
        theirs = make(torch)
        v = ours._version
        assert ours.resize_(*sizes) is ours and theirs.resize_(*sizes) is theirs
        assert ours._version == v + 1
        assert tuple(ours.shape) == tuple(theirs.shape)
        assert to_numpy(ours).tolist() == theirs.tolist()


def test_resize_keeps_sharing_memory_when_it_fits() -> None:
    base = aa.arange(6.0)
    view = base[2:]
    view.resize_(2)
    base[2] = 100.0
    assert view.tolist() == [100.0, 3.0] and view.storage_offset() == 2


def test_resize_to_more_elements_keeps_the_old_ones_first() -> None:
    x = aa.arange(3.0)
    x.resize_(2, 3)
    assert x.tolist()[0] == [0.0, 1.0, 2.0] and tuple(x.shape) == (2, 3)
    y = aa.ones(2)
    y.resize_as_(aa.zeros(3, 1))
    assert tuple(y.shape) == (3, 1) and y[:2, 0].tolist() == [1.0, 1.0]


def test_resize_errors_match_torch(torch) -> None:
    for lib in (aa, torch):
        with pytest.raises(RuntimeError, match="cannot resize variables that require grad"):
            lib.ones(2, requires_grad=True).resize_(3)
        with lib.no_grad(), pytest.raises(RuntimeError, match="cannot resize variables"):
            lib.ones(2, requires_grad=True).resize_(2)
        with pytest.raises(RuntimeError, match="cannot resize variables"):
            (lib.ones(2, requires_grad=True) * 1).resize_as_(lib.ones(2))


def test_set_shares_source_memory(torch) -> None:
    for lib in (aa, torch):
        a, b = lib.ones(3), lib.zeros(2, 2)
        v = a._version
        assert a.set_(b) is a
        assert a.data_ptr() == b.data_ptr() and tuple(a.shape) == (2, 2)
        assert a.is_set_to(b) and a._version == v + 1
        b[0, 0] = 5.0
        assert a[0, 0].item() == 5.0
        a.set_()
        assert tuple(a.shape) == (0,)
        c = lib.ones(3)
        c.set_(lib.arange(4.0), 1, (3,), (1,))
        assert c.tolist() == [1.0, 2.0, 3.0]
        d = lib.ones(2, 2)
        d.set_(lib.arange(4.0), 0, (2, 2), (1, 2))
        assert d.tolist() == [[0.0, 2.0], [1.0, 3.0]]


def test_set_errors_and_history_match_torch(torch) -> None:
    for lib in (aa, torch):
        with pytest.raises(RuntimeError, match="Could not set tensor of type"):
            lib.ones(3).set_(lib.ones(2, dtype=lib.float64))
        with pytest.raises(
            RuntimeError,
            match=r"setStorage: sizes \[3\], strides \[1\], storage "
            r"offset 2, and itemsize 4 requiring a storage "
            r"size of 20 are out of bounds for storage of "
            r"size 16",
        ):
            lib.ones(3).set_(lib.arange(4.0), 2, (3,), (1,))
        with pytest.raises(RuntimeError, match="^a leaf Variable that requires grad"):
            lib.ones(2, requires_grad=True).set_(lib.ones(2))
        y = lib.ones(2, requires_grad=True)
        a = lib.ones(2)
        a.set_(y * 2)
        assert a.requires_grad and a.grad_fn.name() == "torch::autograd::NotImplemented"
        with pytest.raises(RuntimeError, match="derivative for set_ is not implemented"):
            a.sum().backward()


def test_deprecated_resize_reshapes_differentiably(torch) -> None:
    for lib in (aa, torch):
        x = lib.tensor(np.arange(6.0), requires_grad=True)
        with pytest.warns(UserWarning, match="non-inplace resize is deprecated"):
            y = x.resize(2, 3)
        with pytest.warns(UserWarning, match="non-inplace resize_as is deprecated"):
            z = x.resize_as(lib.zeros(3, 2))
        assert tuple(y.shape) == (2, 3) and tuple(z.shape) == (3, 2)
        (y.sum() + 2 * z.sum()).backward()
        assert x.grad.tolist() == [3.0] * 6
        with (
            pytest.warns(UserWarning),
            pytest.raises(
                RuntimeError,
                match=r"requested resize to 4 \(4 elements in total\), but the given "
                r"tensor has a size of 6 \(6 elements\)",
            ),
        ):
            x.resize(4)
