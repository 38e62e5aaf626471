"""Defects 2 and 3 under the CUDA-faithful sim mode (and on every device for index bounds).

2: CuPy copies between GPUs only contiguous arrays, so a column slice or a permuted gradient
   crossing devices must be made contiguous on its source first.
3: CuPy wraps out-of-range integer indices around; the library refuses them with IndexError on
   every device, as NumPy (and PyTorch) do.
"""

from __future__ import annotations

import numpy as np
import pytest

import autograd_async as aa

from .helpers import run_json

COPIES = r"""
import json
import sys

import numpy as np

import autograd_async as aa
from autograd_async.backends import backends
import autograd_async.backends.sim as sim_module

if sys.argv[1] == "no_contiguous_step":
    sim_module.np = type("NoContiguous", (), {
        "ndarray": np.ndarray, "ascontiguousarray": staticmethod(lambda a: a),
    })

results = {}


def attempt(name, fn):
    try:
        results[name] = fn()
    except Exception as exc:
        results[name] = f"{type(exc).__name__}: {exc}"


def refused_peer_copy():
    strided = np.ones((4, 4))[:, :2]
    backends.for_type("sim").peer_copy(strided)
    return "copied"


def column_slice():
    x = aa.arange(16.0, device="sim:0").reshape(4, 4)
    return x[:, :2].to("sim:1").cpu().numpy().tolist()


def permuted_gradient():
    x = aa.arange(24.0, device="sim:0", requires_grad=True)
    y = x.reshape(2, 3, 4).to("sim:1").permute(2, 0, 1)
    weight = aa.arange(24.0, device="sim:1").reshape(4, 2, 3)
    (y * weight).sum().backward()
    return x.grad.cpu().numpy().tolist()


attempt("refused_peer_copy", refused_peer_copy)
attempt("column_slice", column_slice)
attempt("permuted_gradient", permuted_gradient)
print(json.dumps(results))
"""

CUPY_REFUSAL = "CuPy cannot copy non-contiguous array between devices."


def _expected_permuted_gradient() -> list:
    weight = np.arange(24.0).reshape(4, 2, 3)
    return weight.transpose(1, 2, 0).reshape(-1).tolist()


def test_non_contiguous_arrays_cross_sim_devices_made_contiguous_first():
    got = run_json(COPIES, "fixed")
    assert CUPY_REFUSAL in got["refused_peer_copy"]  # the sim device refuses as CuPy does
    assert got["column_slice"] == np.arange(16.0).reshape(4, 4)[:, :2].tolist()
    assert got["permuted_gradient"] == _expected_permuted_gradient()


def test_without_the_contiguous_step_cross_device_copies_fail():
    got = run_json(COPIES, "no_contiguous_step")
    assert CUPY_REFUSAL in got["column_slice"]
    assert CUPY_REFUSAL in got["permuted_gradient"]


INDICES = r"""
import json

import autograd_async as aa

results = {}


def attempt(name, fn):
    try:
        fn()
        results[name] = "no error"
    except Exception as exc:
        results[name] = f"{type(exc).__name__}: {exc}"


x = aa.arange(12.0, device="sim:0").reshape(3, 4)
bad = aa.tensor([0, 3], device="sim:0")
attempt("index", lambda: x[bad])
attempt("index_second_dim", lambda: x[:, aa.tensor([4], device="sim:0")])
attempt("index_negative", lambda: x[aa.tensor([-4], device="sim:0")])
attempt("index_put", lambda: x.__setitem__(bad, 1.0))
attempt("embedding", lambda: aa.nn.functional.embedding(bad, x))
attempt("gather", lambda: x.gather(0, aa.tensor([[3, 0, 0, 0]], device="sim:0")))
attempt("index_select", lambda: x.index_select(0, bad))
attempt("in_range", lambda: (x[aa.tensor([-3, 2], device="sim:0")], x[:, aa.tensor([3])
                                                                         .to("sim:0")]))
print(json.dumps(results))
"""


def test_out_of_range_indices_raise_on_sim_under_cuda_rules():
    got = run_json(INDICES)
    assert got.pop("in_range") == "no error"
    for name, result in got.items():
        assert result.startswith(("IndexError", "RuntimeError")), (name, result)
        assert "out of" in result, (name, result)
    assert "index 3 is out of bounds for dimension 0 with size 3" in got["index"]
    assert "index 4 is out of bounds for dimension 1 with size 4" in got["index_second_dim"]
    assert "index -4 is out of bounds for dimension 0 with size 3" in got["index_negative"]


@pytest.mark.parametrize(
    "make_key",
    [
        lambda d: aa.tensor([0, 3], device=d),
        lambda d: (slice(None), aa.tensor([4], device=d)),
    ],
)
def test_out_of_range_indices_raise_on_every_device(device, make_key):
    x = aa.arange(12.0, device=device).reshape(3, 4)
    with pytest.raises(IndexError):
        x[make_key(device)]
    with pytest.raises(IndexError):
        x[make_key(device)] = 1.0


def test_check_indices_of_each_host_backend():
    for kind in ("cpu", "sim"):
        backend = aa.backends.backends.for_type(kind)
        backend.check_indices(np.array([-3, 2]), 3, 0, "index")
        with pytest.raises(IndexError, match="index 3 is out of bounds for dimension 1"):
            backend.check_indices(np.array([0, 3]), 3, 1, "index")
        backend.check_indices(np.array([], dtype=np.int64), 0, 0, "index")


def test_complex_gradients_accumulate_at_repeated_indices(device):
    """Defect 4's path on every device: the gradient of x[idx] scatter-adds complex values."""
    x = aa.tensor(np.array([3 + 4j, 2, 3j], np.complex64), device=device, requires_grad=True)
    idx = aa.tensor([0, 2, 2, 0, 0], device=device)
    x[idx].abs().sum().backward()  # d|z| = z / |z|, added once per pick
    np.testing.assert_allclose(np.asarray(x.grad.cpu()), [3 * (0.6 + 0.8j), 0, 2j], rtol=1e-6)


@pytest.mark.parametrize("kind", ["cpu", "sim"])
def test_scatter_add_of_host_backends_takes_complex_values(kind):
    values = (np.arange(5) + 1j * np.arange(5, 10)).astype(np.complex128)
    index = np.array([0, 2, 2, 1, 0])
    out = np.zeros(3, np.complex128)
    aa.backends.backends.for_type(kind).scatter_add(out, (index,), values)
    np.testing.assert_allclose(out, [0 + 5j + 4 + 9j, 3 + 8j, 1 + 6j + 2 + 7j])
