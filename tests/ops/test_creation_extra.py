"""linspace, logspace, eye, randint, randperm, full_like, empty, new_* methods, is_tensor, numel."""

from __future__ import annotations

import numpy as np
import pytest

import autograd_async as aa


def _same(ours: aa.Tensor, ref, device: str) -> None:
    assert ours.device == aa.device(device)
    assert str(ours.dtype) == str(ref.dtype).removeprefix("torch.")
    assert tuple(ours.shape) == tuple(ref.shape)
    np.testing.assert_allclose(
        np.asarray(ours.__array__(), dtype=np.float64), ref.double().numpy(), rtol=1e-6
    )


@pytest.mark.parametrize(
    ("make", "kwargs"),
    [
        (lambda lib, **k: lib.linspace(0, 1, 5, **k), {}),
        (lambda lib, **k: lib.linspace(-2.5, 10, 7, **k), {}),
        (lambda lib, **k: lib.linspace(3, 3, 1, **k), {}),
        (lambda lib, **k: lib.linspace(0, 10, 0, **k), {}),
        (lambda lib, **k: lib.linspace(0, 10, 5, **k), {"dtype": "int64"}),
        (lambda lib, **k: lib.linspace(-1, 1, 4, **k), {"dtype": "float64"}),
        (lambda lib, **k: lib.logspace(0, 2, 3, **k), {}),
        (lambda lib, **k: lib.logspace(-1, 1, 5, base=2.0, **k), {"dtype": "float64"}),
        (lambda lib, **k: lib.eye(3, **k), {}),
        (lambda lib, **k: lib.eye(2, 4, **k), {}),
        (lambda lib, **k: lib.eye(3, 2, **k), {"dtype": "int64"}),
        (
            lambda lib, **k: lib.full_like(lib.zeros(2, 3, dtype=k.pop("dtype")), 7, **k),
            {"dtype": "int32"},
        ),
    ],
)
def test_like_torch(torch, device: str, make, kwargs) -> None:
    ref = make(torch, **{k: getattr(torch, v) for k, v in kwargs.items()})
    ours = make(aa, device=device, **{k: getattr(aa, v) for k, v in kwargs.items()})
    _same(ours, ref, device)


def test_requires_grad_on_factories(device: str) -> None:
    for t in (
        aa.linspace(0, 1, 3, device=device, requires_grad=True),
        aa.eye(2, device=device, requires_grad=True),
        aa.logspace(0, 1, 2, device=device, requires_grad=True),
    ):
        assert t.requires_grad and t.is_leaf


def test_randint(device: str) -> None:
    g = aa.Generator(0)
    x = aa.randint(3, 7, (200,), generator=g, device=device)
    assert x.dtype == aa.int64 and x.device == aa.device(device) and x.shape == (200,)
    assert set(x.tolist()) == {3, 4, 5, 6}
    y = aa.randint(4, (2, 3), dtype=aa.int32)
    assert y.dtype == aa.int32 and y.shape == (2, 3) and int(y.min()) >= 0 and int(y.max()) < 4
    assert aa.randint(10, size=(5,)).shape == (5,)
    keywords = aa.randint(low=-2, high=0, size=(50,))
    assert set(keywords.tolist()) == {-2, -1}
    assert aa.randint(high=3, size=4).shape == (4,)
    again = aa.randint(3, 7, (200,), generator=aa.Generator(0), device=device)
    assert again.tolist() == x.tolist()


def test_randperm(device: str) -> None:
    p = aa.randperm(10, device=device, generator=aa.Generator(1))
    assert p.dtype == aa.int64 and p.device == aa.device(device)
    assert sorted(p.tolist()) == list(range(10))
    assert aa.randperm(0).shape == (0,)
    assert aa.randperm(4, dtype=aa.float32).dtype == aa.float32


def test_new_methods_take_dtype_and_device(torch, device: str) -> None:
    x = aa.ones(2, dtype=aa.float64, device=device)
    t = torch.ones(2, dtype=torch.float64)
    for name, args in [
        ("new_zeros", (3,)),
        ("new_ones", ((2, 2),)),
        ("new_empty", (2, 3)),
        ("new_full", ((2,), 3)),
        ("new_tensor", ([1, 2],)),
    ]:
        ours, ref = getattr(x, name)(*args), getattr(t, name)(*args)
        assert ours.device == aa.device(device) and ours.dtype == aa.float64
        assert tuple(ours.shape) == tuple(ref.shape)
        if name != "new_empty":
            assert ours.tolist() == ref.tolist()
    z = x.new_zeros(2, dtype=aa.int32, device="cpu", requires_grad=False)
    assert z.dtype == aa.int32 and z.device == aa.device("cpu")
    assert x.new_ones(1, requires_grad=True).requires_grad
    data = np.array([1.0, 2.0])
    copied = x.new_tensor(data)
    data[0] = 5.0
    assert copied.tolist() == [1.0, 2.0]


def test_empty_and_empty_like(device: str) -> None:
    e = aa.empty(2, 3, dtype=aa.float64, device=device)
    assert e.shape == (2, 3) and e.dtype == aa.float64 and e.device == aa.device(device)
    assert aa.empty_like(e).shape == (2, 3) and aa.empty_like(e).device == aa.device(device)


def test_is_tensor_and_numel() -> None:
    x = aa.zeros(2, 3)
    assert aa.is_tensor(x) and not aa.is_tensor(np.zeros(2)) and not aa.is_tensor(1.0)
    assert aa.numel(x) == 6 == x.numel()


@pytest.mark.parametrize(
    ("make", "match"),
    [
        (lambda: aa.linspace(0, 1, -1), "linspace: number of steps must be non-negative"),
        (lambda: aa.logspace(0, 1, -2), "logspace: number of steps must be non-negative"),
        (lambda: aa.eye(-1), "eye: n must be greater or equal to 0, got -1"),
        (lambda: aa.eye(2, -1), "eye: m must be greater or equal to 0, got -1"),
        (
            lambda: aa.randint(5, 2, (3,)),
            "randint: random_ expects 'from' to be less than 'to', but got from=5 >= to=2",
        ),
        (lambda: aa.randperm(-1), "randperm: Trying to create tensor with negative dimension -1"),
    ],
)
def test_errors(make, match) -> None:
    with pytest.raises(RuntimeError, match=match):
        make()


def test_randint_needs_a_size() -> None:
    with pytest.raises(TypeError, match="randint\\(\\) takes \\(high, size\\) or"):
        aa.randint(5)
    with pytest.raises(TypeError, match="randint\\(\\) takes"):
        aa.randint(1, 2, 3, (4,))
