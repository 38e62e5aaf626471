"""Everyday Tensor idioms: cpu/cuda, is_cuda, aa.cuda, type, casts, sizes, Python protocols and
PyTorch's repr."""

from __future__ import annotations

import pytest

import autograd_async as aa


def test_cpu_is_the_differentiable_edge(device: str) -> None:
    x = aa.tensor([1.0, 2.0], dtype=aa.float64, device=device, requires_grad=True)
    y = x.cpu()
    assert y.device == aa.device("cpu")
    assert (y is x) == (device == "cpu")
    (y * y).sum().backward()
    assert x.grad.device == aa.device(device) and x.grad.tolist() == [2.0, 4.0]
    assert not x.is_cuda and x.is_cpu == (device == "cpu")


def test_cuda_namespace_matches_the_devices_module() -> None:
    assert aa.cuda.is_available() == aa.cuda_is_available()
    assert aa.cuda.device_count() == aa.cuda_device_count()
    assert isinstance(aa.cuda.is_available(), bool) and isinstance(aa.cuda.device_count(), int)


@pytest.mark.skipif(not aa.cuda.is_available(), reason="needs CuPy and a CUDA GPU")
def test_cuda_moves_and_back() -> None:
    x = aa.tensor([1.0, 2.0], requires_grad=True)
    y = x.cuda()
    assert y.is_cuda and y.device == aa.device("cuda:0") and x.cuda(0).device == y.device
    assert y.type() == "aa.cuda.FloatTensor"
    (y.cpu() * 3).sum().backward()
    assert x.grad.tolist() == [3.0, 3.0]


def test_cuda_without_a_gpu_or_with_a_wrong_device_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="cuda\\(\\): expected a cuda device, got sim:0"):
        aa.zeros(1).cuda("sim:0")
    if not aa.cuda.is_available():
        with pytest.raises(aa.DeviceError, match="cuda"):
            aa.zeros(1).cuda()


def test_type_strings_and_casts(torch, device: str) -> None:
    for dtype in (
        "float32",
        "float64",
        "float16",
        "int64",
        "int32",
        "int16",
        "int8",
        "uint8",
        "bool",
    ):
        ours = aa.zeros(2, dtype=getattr(aa, dtype if dtype != "bool" else "bool_"))
        ref = torch.zeros(2, dtype=getattr(torch, dtype))
        assert ours.type() == ref.type().replace("torch.", "aa."), dtype
        assert ours.element_size() == ref.element_size(), dtype
    x = aa.tensor([1.5, 2.5], device=device, requires_grad=True)
    assert x.type() == ("aa.FloatTensor" if device == "cpu" else "aa.sim.FloatTensor")
    assert x.type(aa.float64).dtype == aa.float64
    assert x.type("aa.DoubleTensor").dtype == aa.float64
    assert x.type("torch.LongTensor").tolist() == [1, 2]
    assert x.type(aa.float32) is x
    d = x.double()
    assert d.grad_fn is not None and d.device == aa.device(device)
    for cast, dtype in [
        ("float", aa.float32),
        ("half", aa.float16),
        ("long", aa.int64),
        ("int", aa.int32),
        ("bool", aa.bool_),
        ("double", aa.float64),
    ]:
        assert getattr(x, cast)().dtype == dtype
    with pytest.raises(ValueError, match="type\\(\\): invalid type: 'aa.FooTensor'"):
        x.type("aa.FooTensor")


def test_sizes() -> None:
    x = aa.zeros(2, 3, dtype=aa.float64)
    assert x.dim() == 2 and x.nelement() == 6 == x.numel() and x.element_size() == 8
    assert aa.zeros(0).nelement() == 0 and aa.tensor(1.0).dim() == 0


def test_format_of_zero_dim_tensors(torch) -> None:
    loss = aa.tensor(2.123456)
    assert f"{loss:.4f}" == f"{torch.tensor(2.123456):.4f}" == "2.1235"
    assert f"{aa.tensor(7):>4d}" == "   7"
    assert format(aa.tensor([1.0, 2.0])) == repr(aa.tensor([1.0, 2.0]))
    with pytest.raises(TypeError, match="only 0-d tensors take a format spec"):
        f"{aa.tensor([1.0, 2.0]):.3f}"


def test_python_protocols(device: str) -> None:
    x = aa.tensor([[1.0, 2.0], [3.0, 4.0]], device=device)
    assert len(x) == 2
    rows = list(x)
    assert [r.tolist() for r in rows] == [[1.0, 2.0], [3.0, 4.0]]
    assert all(r.device == aa.device(device) for r in rows)
    assert bool(aa.tensor([1.0])) and not bool(aa.tensor(0.0))
    assert [10, 20, 30][aa.tensor(2)] == 30
    assert range(10)[aa.tensor(3) : aa.tensor(5)] == range(3, 5)
    with pytest.raises(TypeError, match="only integer tensors"):
        [1, 2][aa.tensor(1.0)]
    with pytest.raises(RuntimeError, match="Boolean value of Tensor with more than one value"):
        bool(x)
    with pytest.raises(TypeError, match="len\\(\\) of a 0-d tensor"):
        len(aa.tensor(1.0))
    with pytest.raises(TypeError, match="iteration over a 0-d tensor"):
        iter(aa.tensor(1.0))


@pytest.mark.parametrize(
    "make",
    [
        lambda lib: lib.tensor([0.0, 0.25], dtype=lib.float64),
        lambda lib: lib.tensor([0.0, 0.25], requires_grad=True),
        lambda lib: lib.tensor([0.0, 0.25], requires_grad=True) * 2,
        lambda lib: lib.tensor([1, 2], dtype=lib.int32),
        lambda lib: lib.tensor([1, 20]),
        lambda lib: lib.tensor([1.5, 2], dtype=lib.float16),
        lambda lib: lib.tensor(3.5),
        lambda lib: lib.tensor([]),
        lambda lib: lib.zeros(0, 3),
        lambda lib: lib.tensor([True, False]),
        lambda lib: lib.tensor([[1.0, 2.0], [3.0, 4.123456]]),
        lambda lib: lib.tensor([1e-5, 1e5]),
        lambda lib: lib.tensor([1.0, -2.0]),
        lambda lib: lib.tensor([123456789.0, 1.0]),
        lambda lib: lib.tensor([[0.001, -0.5], [10.0, 99.25]], dtype=lib.float64),
        lambda lib: lib.arange(24.0).reshape(2, 3, 4),
        lambda lib: lib.tensor([1.0, float("nan"), float("inf")]),
        lambda lib: lib.tensor([1.5, float("nan")]),
        lambda lib: lib.tensor([-float("inf"), 1e-5]),
        lambda lib: lib.tensor([0.0, float("nan")]),
        lambda lib: lib.tensor([[1e-8, 1.0]]),
    ],
)
def test_repr_matches_pytorch(torch, make) -> None:
    assert repr(make(aa)) == repr(make(torch)).replace("torch.", "aa.")


def test_repr_names_the_device() -> None:
    x = aa.tensor([1.0, 2.0], device="sim:0", requires_grad=True)
    assert repr(x) == "tensor([1., 2.], device='sim:0', requires_grad=True)"
    assert repr(x.double()) == (
        "tensor([1., 2.], device='sim:0', dtype=aa.float64, grad_fn=<ToCopyBackward0>)"
    )


def test_repr_summarises_large_tensors() -> None:
    text = repr(aa.arange(2000.0))
    assert text.startswith("tensor([0.0000e+00, 1.0000e+00, 2.0000e+00,")
    assert "..." in text and text.endswith("1.9990e+03])")
    assert len(text) < 200
