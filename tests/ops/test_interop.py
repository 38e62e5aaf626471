"""Zero-copy interop: DLPack both ways with PyTorch and NumPy, as_tensor, np.asarray."""

from __future__ import annotations

import numpy as np
import pytest

import autograd_async as aa


def test_pytorch_reads_and_writes_our_memory(torch) -> None:
    x = aa.arange(4.0, dtype=aa.float64)
    t = torch.from_dlpack(x)
    assert t.dtype == torch.float64 and tuple(t.shape) == (4,)
    t[0] = 7.0
    assert x.tolist() == [7.0, 1.0, 2.0, 3.0]
    x.add_(1.0)
    assert t.tolist() == [8.0, 2.0, 3.0, 4.0]


def test_we_read_and_write_pytorch_memory(torch) -> None:
    t = torch.arange(6.0).reshape(2, 3)
    x = aa.from_dlpack(t)
    assert x.dtype == aa.float32 and x.shape == (2, 3) and x.device == aa.device("cpu")
    x[0, 1] = 10.0
    assert t[0, 1].item() == 10.0
    t.mul_(2)
    assert x.tolist() == [[0.0, 20.0, 4.0], [6.0, 8.0, 10.0]]
    strided = aa.from_dlpack(t.t())  # a transposed view keeps its strides
    assert strided.tolist() == t.t().tolist()


def test_numpy_both_ways() -> None:
    x = aa.zeros(3, dtype=aa.int32)
    a = np.from_dlpack(x)
    a[2] = 5
    assert x.tolist() == [0, 0, 5]
    b = np.arange(3.0)
    y = aa.from_dlpack(b)
    y.mul_(3.0)
    assert b.tolist() == [0.0, 3.0, 6.0]
    assert x.__dlpack_device__() == (1, 0)


def test_as_tensor_shares_memory_when_it_can(torch) -> None:
    b = np.ones(3)
    x = aa.as_tensor(b)
    assert np.shares_memory(x._data, b)
    t = torch.ones(3)
    y = aa.as_tensor(t)
    y[0] = 4.0
    assert t[0].item() == 4.0
    assert aa.as_tensor(y) is y
    converted = aa.as_tensor(b, dtype=aa.float32)
    assert converted.dtype == aa.float32 and not np.shares_memory(converted._data, b)
    assert aa.as_tensor(t, dtype=aa.float64).dtype == aa.float64
    z = aa.tensor([1.0], requires_grad=True)
    moved = aa.as_tensor(z, dtype=aa.float64)
    assert moved.grad_fn is not None  # as PyTorch, a cast of a tensor stays in the graph


def test_np_asarray_does_not_copy() -> None:
    x = aa.arange(3.0)
    a = np.asarray(x)
    a[0] = 9.0
    assert x.tolist() == [9.0, 1.0, 2.0]
    assert np.array(x, copy=True) is not x._data
    assert np.asarray(x, dtype=np.float64).dtype == np.float64


def test_export_refuses_tensors_that_require_grad_and_sim_tensors(torch) -> None:
    with pytest.raises(RuntimeError, match="Can't export tensors that require gradient"):
        torch.from_dlpack(aa.zeros(2, requires_grad=True))
    with pytest.raises(BufferError, match="sim:0 .* cannot be exported"):
        np.from_dlpack(aa.zeros(2, device="sim:0"))
    with pytest.raises(TypeError, match="from_dlpack expects an object with __dlpack__"):
        aa.from_dlpack([1, 2])
