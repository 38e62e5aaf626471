"""What a tensor says about itself and its memory, against PyTorch: itemsize, nbytes, layout,
dim_order, memory formats, is_set_to, H/mH, sum_to_size, new_empty_strided, as_subclass, the
small casts, numpy(force=), apply_/map_/map2_ and fill_diagonal_."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from gradients import to_numpy, versus_torch

import autograd_async as aa
from autograd_async.autograd import gradcheck

X0 = np.arange(6.0).reshape(2, 3) / 5 + 0.1


def test_sizes_and_flags_match_torch(torch, device: str) -> None:
    for dtype, tdtype in (
        (aa.float32, torch.float32),
        (aa.complex128, torch.complex128),
        (aa.int16, torch.int16),
        (aa.bool, torch.bool),
    ):
        ours = aa.zeros(2, 3, dtype=dtype, device=device)
        theirs = torch.zeros(2, 3, dtype=tdtype)
        assert ours.itemsize == theirs.itemsize and ours.nbytes == theirs.nbytes
        assert ours.expand(4, 2, 3).nbytes == theirs.expand(4, 2, 3).nbytes
        assert ours.ndimension() == theirs.ndimension() == 2
    x = aa.zeros(2, device=device)
    assert x.layout is aa.strided and repr(aa.strided) == "aa.strided"
    assert x.is_meta is False and x.is_sparse is False and x.name is None
    assert x.dense_dim() == 1 and x.to_dense() is x and x.to_dense(aa.float64).dtype == aa.float64
    assert x.is_pinned() is False and x.is_shared() is False
    assert x.const_data_ptr() == x.data_ptr()
    assert x.is_same_size(aa.ones(2)) and not x.is_same_size(aa.ones(1, 2))


def test_dead_and_sparse_only_names_say_so_as_torch(torch) -> None:
    for lib in (aa, torch):
        x = lib.zeros(2)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert x.volatile is False
        assert "volatile was removed" in str(caught[0].message)
        for name in ("coalesce", "is_coalesced"):
            with pytest.raises(
                RuntimeError,
                match=f"{name} expected sparse coordinate tensor layout but got Strided",
            ):
                getattr(x, name)()
        with pytest.raises(RuntimeError, match="reinforce\\(\\) was removed"):
            x.reinforce(1.0)


def test_dim_order_and_memory_formats_match_torch(torch) -> None:
    shapes = [(2, 3), (2, 1, 3), (2, 3, 4, 5)]
    for shape in shapes:
        a = np.arange(float(np.prod(shape))).reshape(shape)
        ours, theirs = aa.tensor(a), torch.tensor(a)
        assert ours.dim_order() == theirs.dim_order()
        assert ours.mT.dim_order() == theirs.mT.dim_order()
        flipped = tuple(reversed(range(len(shape))))
        assert ours.permute(*flipped).dim_order() == theirs.permute(*flipped).dim_order()
    ours, theirs = aa.zeros(3, 1).expand(3, 4), torch.zeros(3, 1).expand(3, 4)
    assert ours.dim_order() == theirs.dim_order()
    ours, theirs = aa.zeros(2, 3, 4).permute(1, 2, 0), torch.zeros(2, 3, 4).permute(1, 2, 0)
    assert ours.dim_order() == theirs.dim_order()
    assert ours.dim_order(ambiguity_check=True) == theirs.dim_order(ambiguity_check=True)
    ours = aa.randn(2, 3, 4, 5).contiguous(memory_format=aa.channels_last)
    theirs = torch.randn(2, 3, 4, 5).contiguous(memory_format=torch.channels_last)
    assert ours.stride() == theirs.stride() and ours.dim_order() == theirs.dim_order()
    for fmt, tfmt in (
        (aa.contiguous_format, torch.contiguous_format),
        (aa.channels_last, torch.channels_last),
        (aa.preserve_format, torch.preserve_format),
        (aa.channels_last_3d, torch.channels_last_3d),
    ):
        assert ours.is_contiguous(memory_format=fmt) == theirs.is_contiguous(memory_format=tfmt)
    assert not ours.is_contiguous() and ours.contiguous().is_contiguous()
    assert ours.contiguous(memory_format=aa.channels_last) is ours
    for lib in (aa, torch):
        with pytest.raises(RuntimeError, match="does not have unique dim order"):
            lib.zeros(2, 1, 3).dim_order(ambiguity_check=True)
        assert lib.zeros(2, 1, 3).dim_order(ambiguity_check=[lib.contiguous_format]) == (0, 1, 2)
        with pytest.raises(RuntimeError, match="required rank 4 tensor to use channels_last"):
            lib.zeros(2, 3).contiguous(memory_format=lib.channels_last)
        with pytest.raises(TypeError, match="argument 'memory_format' must be"):
            lib.zeros(2).contiguous(memory_format=1)
        assert lib.zeros(2, 3).is_contiguous(memory_format=lib.channels_last) is False
        x = lib.zeros(2, 3)
        assert x.contiguous(memory_format=lib.preserve_format) is x
        with pytest.raises(
            RuntimeError, match="preserve memory format is unsupported by the contiguous operator"
        ):
            x.t().contiguous(memory_format=lib.preserve_format)


def test_channels_last_copies_are_differentiable(torch, device: str) -> None:
    a = np.random.default_rng(0).standard_normal((2, 3, 2, 2))
    versus_torch(
        torch,
        device,
        lambda x: x.contiguous(memory_format=aa.channels_last) * 2,
        lambda x: x.contiguous(memory_format=torch.channels_last) * 2,
        a,
    )
    y = aa.tensor(a, device=device).clone(memory_format=aa.channels_last)
    assert y.stride() == torch.tensor(a).clone(memory_format=torch.channels_last).stride()


def test_is_set_to_matches_torch(torch) -> None:
    for lib in (aa, torch):
        x = lib.zeros(2, 3)
        assert x.is_set_to(x) and x.is_set_to(x.view(2, 3)) and x.is_set_to(x[:])
        assert not x.is_set_to(x.view(3, 2)) and not x.is_set_to(x.clone())
        assert not x.is_set_to(x.t())


def test_conjugate_transposes_match_torch(torch, device: str) -> None:
    a = np.random.default_rng(1).standard_normal((2, 3))
    versus_torch(torch, device, lambda x: x.H * 3, lambda x: x.H * 3, a)
    versus_torch(torch, device, lambda x: x.mH.exp(), lambda x: x.mH.exp(), a[None])
    c = a + 1j * a[::-1]
    ours, theirs = aa.tensor(c, device=device), torch.tensor(c)
    np.testing.assert_allclose(to_numpy(ours.mH), theirs.mH.resolve_conj().numpy())
    np.testing.assert_allclose(to_numpy(ours.H), theirs.H.resolve_conj().numpy())
    for lib in (aa, torch):
        with pytest.raises(
            RuntimeError,
            match="tensor.H is only supported on matrices "
            r"\(2-D tensors\). Got 1-D tensor.",
        ):
            _ = lib.zeros(3).H
        with pytest.raises(RuntimeError, match="consider using tensor.mH"):
            _ = lib.zeros(2, 2, 2).H
        with pytest.raises(RuntimeError, match="tensor.mH is only supported on matrices"):
            _ = lib.zeros(3).mH
    with pytest.warns(UserWarning, match="Tensor.H is deprecated on 0-D tensors"):
        _ = aa.zeros(()).H  # PyTorch's text, which it gives once per process


@pytest.mark.parametrize("size", [(3,), (1, 3), (2, 1), (1, 1), (2, 3)])
def test_sum_to_size_matches_torch(torch, device: str, size: tuple) -> None:
    versus_torch(
        torch, device, lambda x: x.sum_to_size(size), lambda x: x.sum_to_size(size), X0[None]
    )
    versus_torch(torch, device, lambda x: x.sum_to_size(*size), lambda x: x.sum_to_size(*size), X0)


def test_sum_to_size_errors_match_torch(torch) -> None:
    for lib in (aa, torch):
        with pytest.raises(
            RuntimeError,
            match=r"size \{\[4\]\} is not expandable to size "
            r"\{\[2, 3\]\}.",
        ):
            lib.zeros(2, 3).sum_to_size(4)
        with pytest.raises(RuntimeError, match="is not expandable"):
            lib.zeros(2, 3).sum_to_size(1, 2, 3)


def test_new_empty_strided_matches_torch(torch, device: str) -> None:
    x = aa.zeros(2, device=device)
    y = x.new_empty_strided((2, 3), (1, 2))
    assert y.stride() == torch.zeros(2).new_empty_strided((2, 3), (1, 2)).stride()
    assert y.device == aa.device(device) and y.dtype == aa.float32
    z = x.new_empty_strided((2, 2), (2, 1), dtype=aa.float64, requires_grad=True)
    assert z.dtype == aa.float64 and z.requires_grad and z.is_leaf
    assert x.new_empty_strided((0, 3), (3, 1)).shape == (0, 3)
    for lib in (aa, torch):
        with pytest.raises(
            RuntimeError,
            match=r"dimensionality of sizes \(2\) must match "
            r"dimensionality of strides \(1\)",
        ):
            lib.zeros(1).new_empty_strided((2, 3), (1,))


def test_as_subclass_aliases_in_the_graph(torch) -> None:
    class Mine(aa.Tensor):
        pass

    x = aa.tensor([1.0, 2.0], requires_grad=True)
    s = x.as_subclass(Mine)
    assert type(s) is Mine and s.data_ptr() == x.data_ptr()
    assert type(s.grad_fn).__name__ == "AliasBackward0" and not s.is_leaf
    (s * s).sum().backward()
    assert x.grad.tolist() == [2.0, 4.0]
    plain = aa.ones(2).as_subclass(Mine)
    assert plain.grad_fn is None and not plain.requires_grad
    plain.add_(1)  # the same memory and version counter
    with pytest.raises(TypeError, match="does not inherit from Tensor"):
        x.as_subclass(int)
    with pytest.raises(TypeError, match="does not inherit from Tensor"):
        torch.zeros(1).as_subclass(int)


def test_module_load_copies_or_assigns() -> None:
    param = aa.zeros(2)
    loaded = param.module_load(aa.ones(2))
    assert param.tolist() == [1.0, 1.0] and loaded is not param and loaded.tolist() == [1.0, 1.0]
    other = aa.full((2,), 3.0, requires_grad=True)
    assigned = param.module_load(other, assign=True)
    assert not assigned.requires_grad and assigned.data_ptr() == other.data_ptr()


def test_small_casts_match_torch(torch, device: str) -> None:
    a = np.array([-1.5, 0.0, 2.7, 300.0])
    ours, theirs = aa.tensor(a, device=device), torch.tensor(a)
    for name in (
        "byte",
        "char",
        "short",
        "int",
        "long",
        "half",
        "bfloat16",
        "double",
        "float",
        "bool",
        "cfloat",
        "cdouble",
    ):
        o, t = getattr(ours, name)(), getattr(theirs, name)()
        assert str(o.dtype).rsplit(".", 1)[-1] == str(t.dtype).rsplit(".", 1)[-1], name
        if name not in ("byte", "char"):  # out-of-range casts are undefined in C
            np.testing.assert_allclose(
                to_numpy(o).astype(np.complex128),
                t.float().numpy() if name == "bfloat16" else t.numpy(),
            )
    x = aa.tensor(a, requires_grad=True)
    x.cdouble().real.sum().backward()
    assert x.grad.tolist() == [1.0] * 4


def test_numpy_force(device: str) -> None:
    x = aa.tensor([1.0, 2.0], device=device, requires_grad=True)
    assert x.numpy(force=True).tolist() == [1.0, 2.0]
    with pytest.raises(RuntimeError, match="Can't call numpy\\(\\) on Tensor that requires grad"):
        x.numpy()
    y = aa.zeros(2)
    y.numpy(force=True)[0] = 5.0  # a cpu tensor's own memory, as PyTorch's
    assert y[0].item() == 5.0


def test_apply_and_map_match_torch(torch) -> None:
    ours, theirs = aa.arange(4.0), torch.arange(4.0)
    for t in (ours, theirs):
        t.apply_(lambda v: v * 2)
        t.map_(type(t)([1.0]) if t is theirs else aa.tensor([1.0]), lambda a, b: a + b)
    theirs.map2_(torch.ones(4), torch.full((1,), 2.0), lambda a, b, c: a * b + c)
    ours.map2_(aa.ones(4), aa.full((1,), 2.0), lambda a, b, c: a * b + c)
    assert ours.tolist() == theirs.tolist() and ours._version == theirs._version
    ints, tints = aa.arange(4), torch.arange(4)
    ints.apply_(lambda v: v * 1.7)
    tints.apply_(lambda v: v * 1.7)
    assert ints.tolist() == tints.tolist()
    flags, tflags = aa.tensor([True, False]), torch.tensor([True, False])
    flags.apply_(lambda v: not v)
    tflags.apply_(lambda v: not v)
    assert flags.tolist() == tflags.tolist()


def test_apply_and_map_errors_match_torch(torch) -> None:
    for lib in (aa, torch):
        with pytest.raises(TypeError, match="must be real number, not str"):
            lib.zeros(2).apply_(lambda v: "x")
        with pytest.raises(
            RuntimeError,
            match=r"Can't call apply_\(\) on Variable that requires "
            r"grad. Use var.detach\(\).apply_\(\) instead.",
        ):
            lib.zeros(2, requires_grad=True).apply_(lambda v: v)
        with pytest.raises(RuntimeError, match=r"Can't call map_\(\) on Variable"):
            lib.zeros(2).map_(lib.zeros(2, requires_grad=True), lambda a, b: a)
        with pytest.raises(
            RuntimeError,
            match=r"The expanded size of the tensor \(1\) must "
            r"match the existing size \(4\)",
        ):
            lib.zeros(1).map_(lib.zeros(4), lambda a, b: a)
        with pytest.raises(
            TypeError,
            match="map_: expected .*FloatTensor for 'other' "
            r"\(got .*DoubleTensor\)",
        ):
            lib.zeros(2).map_(lib.zeros(2, dtype=lib.float64), lambda a, b: a)
    with pytest.raises(RuntimeError, match="apply_ is only implemented on CPU tensors"):
        aa.zeros(2, device="sim:0").apply_(lambda v: v)


@pytest.mark.parametrize("shape", [(3, 3), (3, 5), (5, 3), (7, 3), (4, 3), (3, 3, 3), (2, 2)])
@pytest.mark.parametrize("wrap", [False, True])
def test_fill_diagonal_matches_torch(torch, device: str, shape: tuple, wrap: bool) -> None:
    ours = aa.zeros(*shape, device=device)
    theirs = torch.zeros(*shape)
    assert ours.fill_diagonal_(5.0, wrap=wrap) is ours
    theirs.fill_diagonal_(5.0, wrap=wrap)
    assert to_numpy(ours).tolist() == theirs.tolist()
    assert ours._version == 1
    if len(shape) == 2:
        transposed = aa.zeros(*shape[::-1], device=device).t()
        transposed.fill_diagonal_(2.0, wrap=wrap)
        assert (
            to_numpy(transposed).tolist()
            == torch.zeros(*shape[::-1]).t().fill_diagonal_(2.0, wrap=wrap).tolist()
        )


def test_fill_diagonal_gradient_and_errors_match_torch(torch) -> None:
    versus_torch(
        torch,
        "cpu",
        lambda x: (x * 1).fill_diagonal_(2.0) * x,
        lambda x: (x * 1).fill_diagonal_(2.0) * x,
        X0,
    )
    assert gradcheck(
        lambda x: (x * 1).fill_diagonal_(0.5, wrap=True).exp(),
        (aa.tensor(np.arange(15.0).reshape(5, 3) / 10, requires_grad=True),),
    )
    for lib in (aa, torch):
        with pytest.raises(RuntimeError, match="all dimensions of input must be of equal length"):
            lib.zeros(2, 3, 4).fill_diagonal_(1)
        with pytest.raises(RuntimeError, match="dimensions must larger than 1"):
            lib.zeros(3).fill_diagonal_(1)
        with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad"):
            lib.zeros(3, 3, requires_grad=True).fill_diagonal_(1)


def test_to_takes_torchs_three_overloads(torch, device: str) -> None:
    ours, theirs = aa.zeros(2, 3, device=device), torch.zeros(2, 3)
    cases = [
        ((aa.float64, True, True), (torch.float64, True, True)),
        ((aa.float32, False, False), (torch.float32, False, False)),
        ((aa.float32, False, True), (torch.float32, False, True)),
        ((device, aa.int32), ("cpu", torch.int32)),
        ((aa.zeros(1, dtype=aa.int16), True), (torch.zeros(1, dtype=torch.int16), True)),
    ]
    for args, targs in cases:
        o, t = ours.to(*args), theirs.to(*targs)
        assert str(o.dtype).rsplit(".", 1)[-1] == str(t.dtype).rsplit(".", 1)[-1]
        assert (o is ours) == (t is theirs)
    assert ours.to(dtype=aa.float64, non_blocking=True).dtype == aa.float64
    image = aa.zeros(1, 2, 3, 4, device=device).to(memory_format=aa.channels_last)
    assert image.stride() == torch.zeros(1, 2, 3, 4).to(memory_format=torch.channels_last).stride()
    with pytest.raises(TypeError, match="to\\(\\) received an invalid combination of arguments"):
        ours.to(aa.float64, 1)


def test_copy_takes_non_blocking(torch, device: str) -> None:
    for lib, on in ((aa, {"device": device}), (torch, {})):
        x = lib.zeros(3, **on)
        assert x.copy_(lib.ones(3), non_blocking=True) is x and x.copy_(lib.ones(1), True) is x
        assert x.tolist() == [1.0, 1.0, 1.0]
