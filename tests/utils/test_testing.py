"""`autograd_async.testing`: assert_close's verdicts and messages equal torch.testing's on the same
inputs; make_tensor's ranges, shapes and options."""

from __future__ import annotations

import re

import numpy as np
import pytest

import autograd_async as aa
from autograd_async.testing import assert_allclose, assert_close, make_tensor

nan, inf = float("nan"), float("inf")

# (actual, expected, options) built by a function of the library, so each case runs on both.
CASES = {
    "equal float": lambda L: (L.tensor([1.0, 2.0]), L.tensor([1.0, 2.0]), {}),
    "close float32": lambda L: (L.tensor([1.0, 2.0]), L.tensor([1.0, 2.5]), {}),
    "within default": lambda L: (L.tensor([1.0]), L.tensor([1.0 + 1e-7]), {}),
    "2-d index": lambda L: (
        L.tensor([[1.0, 2.0], [3.0, 4.0]]),
        L.tensor([[1.0, 2.0], [3.0, 5.0]]),
        {},
    ),
    "float64": lambda L: (
        L.tensor([1.0, 3.0], dtype=L.float64),
        L.tensor([1.0, 3.01], dtype=L.float64),
        {},
    ),
    "ints": lambda L: (L.tensor([1, 2]), L.tensor([1, 3]), {}),
    "ints with tolerance": lambda L: (
        L.tensor([10, 2]),
        L.tensor([11, 2]),
        {"rtol": 0.2, "atol": 0},
    ),
    "bools": lambda L: (L.tensor([True, False]), L.tensor([True, True]), {}),
    "bools to false": lambda L: (L.tensor([True, True]), L.tensor([True, False]), {}),
    "dtype": lambda L: (L.tensor([1.0, 2.0]), L.tensor([1.0, 2.0], dtype=L.float64), {}),
    "dtype unchecked": lambda L: (
        L.tensor([1.0]),
        L.tensor([1.1], dtype=L.float64),
        {"check_dtype": False},
    ),
    "dtype unchecked equal": lambda L: (
        L.tensor([1.0]),
        L.tensor([1.0], dtype=L.float64),
        {"check_dtype": False},
    ),
    "shape": lambda L: (L.tensor([1.0, 2.0]), L.tensor([1.0, 2.0, 3.0]), {}),
    "nan": lambda L: (L.tensor([nan]), L.tensor([nan]), {}),
    "nan equal": lambda L: (L.tensor([nan, 1.0]), L.tensor([nan, 1.0]), {"equal_nan": True}),
    "inf": lambda L: (L.tensor([inf, -inf]), L.tensor([inf, -inf]), {}),
    "inf sign": lambda L: (L.tensor([inf]), L.tensor([-inf]), {}),
    "rtol only": lambda L: (L.tensor([1.0]), L.tensor([1.1]), {"rtol": 0.2}),
    "atol only": lambda L: (L.tensor([1.0]), L.tensor([1.1]), {"atol": 0.2}),
    "loose": lambda L: (L.tensor([1.0]), L.tensor([1.1]), {"rtol": 0.2, "atol": 0.0}),
    "message": lambda L: (L.tensor([1.0]), L.tensor([1.1]), {"msg": "custom"}),
    "message callable": lambda L: (
        L.tensor([1.0]),
        L.tensor([1.1]),
        {"msg": lambda m: "X" + m[:12]},
    ),
    "stride": lambda L: (L.ones(2, 3), L.ones(3, 2).t(), {"check_stride": True}),
    "stride unchecked": lambda L: (L.ones(2, 3), L.ones(3, 2).t(), {}),
    "complex": lambda L: (L.tensor([1 + 1j]), L.tensor([1 + 2j]), {}),
    "0-d": lambda L: (L.tensor(1.0), L.tensor(2.0), {}),
    "0-d int": lambda L: (L.tensor(1), L.tensor(3), {}),
    "requires grad": lambda L: (L.tensor([1.0], requires_grad=True), L.tensor([1.0]), {}),
    "scalars": lambda L: (1.0, 1.5, {}),
    "scalar types": lambda L: (1, 1.0, {}),
    "scalar types unchecked": lambda L: (1, 1.0, {"check_dtype": False}),
    "ints equal": lambda L: (3, 3, {}),
    "ints differ": lambda L: (3, 4, {}),
    "numpy numbers": lambda L: (np.float64(1.0), 1.0, {}),
    "numpy arrays": lambda L: (np.array([1.0, 2.0]), np.array([1.0, 2.5]), {}),
    "tensor and number": lambda L: (L.tensor(1.0), 1.0, {}),
    "tensor and list": lambda L: (L.tensor([1.0, 2.0]), [1.0, 2.0], {}),
    "tensor and array": lambda L: (L.tensor([1.0]), np.array([1.0]), {}),
    "strings": lambda L: ("a", "a", {}),
    "bool scalars": lambda L: (True, False, {}),
    "none": lambda L: (None, None, {}),
    "none and number": lambda L: (None, 1, {}),
    "sequence item": lambda L: ([1.0, 2.0], [1.0, 2.5], {}),
    "sequence length": lambda L: ([1, 2], [1, 2, 3], {}),
    "nested": lambda L: (
        (L.tensor([1.0]), [L.tensor([2.0])]),
        [L.tensor([1.0]), (L.tensor([3.0]),)],
        {},
    ),
    "mapping item": lambda L: ({"a": L.ones(2), "b": 1}, {"a": L.zeros(2), "b": 1}, {}),
    "mapping keys": lambda L: ({"a": 1, "c": 2}, {"b": 1, "c": 2}, {}),
    "structure before values": lambda L: ([L.tensor([1.0]), [1, 2]], [L.tensor([5.0]), [1]], {}),
    "parameter and tensor": lambda L: (L.nn.Parameter(L.ones(2)), L.ones(2), {}),
    "subclasses refused": lambda L: (
        L.nn.Parameter(L.ones(2)),
        L.ones(2),
        {"allow_subclasses": False},
    ),
    "float16": lambda L: (L.tensor([1.0], dtype=L.float16), L.tensor([1.002], dtype=L.float16), {}),
}


def _outcome(lib, case):
    actual, expected, options = CASES[case](lib)
    try:
        lib.testing.assert_close(actual, expected, **options)
    except Exception as exc:  # noqa: BLE001 - the outcome is the exception, whatever it is
        return type(exc).__name__, str(exc)
    return "passed", ""


def _torch_words(text: str) -> str:
    """torch's names of things in a message, written as ours are printed."""
    text = re.sub(r"torch\.Size\(", "Size(", text)
    text = re.sub(r"torch\.(float|int|bool|complex)(\d*)", r"\1\2", text)
    text = text.replace("<class 'torch.Tensor'>", str(aa.Tensor))
    return text.replace("<class 'torch.nn.parameter.Parameter'>", str(aa.nn.Parameter))


@pytest.mark.parametrize("case", sorted(CASES))
def test_verdict_and_message_match_torch(case):
    torch = pytest.importorskip("torch")
    ours = _outcome(aa, case)
    kind, text = _outcome(torch, case)
    assert ours == (kind, _torch_words(text))


def test_verdicts_without_torch():
    assert _outcome(aa, "equal float") == ("passed", "")
    kind, text = _outcome(aa, "close float32")
    assert kind == "AssertionError" and text.startswith("Tensor-likes are not close!")
    assert "Mismatched elements: 1 / 2 (50.0%)" in text
    assert "Greatest absolute difference: 0.5 at index (1,) (up to 1e-05 allowed)" in text
    assert _outcome(aa, "nan equal") == ("passed", "")
    assert _outcome(aa, "tensor and number")[0] == "TypeError"
    kind, text = _outcome(aa, "mapping item")
    assert text.endswith("The failure occurred for item ['a']")


def test_devices_are_checked_then_compared_on_the_host():
    a, b = aa.ones(3), aa.ones(3, device="sim:0")
    with pytest.raises(AssertionError, match="'device' do not match: cpu != sim:0"):
        assert_close(a, b)
    assert_close(a, b, check_device=False)
    with pytest.raises(AssertionError, match="Mismatched elements: 1 / 3"):
        assert_close(a, aa.tensor([1.0, 1.0, 2.0], device="sim:0"), check_device=False)


def test_assert_allclose_is_deprecated_and_takes_array_likes():
    with pytest.warns(FutureWarning, match="assert_close"):
        assert_allclose(aa.tensor([1.0, 2.0]), [1.0, 2.0])
    with pytest.warns(FutureWarning), pytest.raises(AssertionError, match="not close"):
        assert_allclose(aa.tensor([1.0, 2.0]), [1.0, 2.5])


@pytest.mark.parametrize(
    "dtype, low, high",
    [
        (aa.float32, -9, 9),
        (aa.float64, -9, 9),
        (aa.int64, -9, 10),
        (aa.int32, -9, 10),
        (aa.uint8, 0, 10),
        (aa.int8, -9, 10),
        (aa.bool, 0, 2),
    ],
)
def test_make_tensor_default_ranges(dtype, low, high):
    t = make_tensor(2000, dtype=dtype, device="cpu")
    assert t.dtype == dtype and t.shape == (2000,)
    values = t.numpy().astype(np.float64)
    assert values.min() >= low and values.max() < high


def test_make_tensor_options():
    t = make_tensor((3, 4), dtype=aa.float64, device="sim:0", low=-1, high=1, requires_grad=True)
    assert t.shape == (3, 4) and t.device == aa.device("sim:0") and t.requires_grad
    assert float(t.abs().max()) < 1
    nc = make_tensor(3, 4, dtype=aa.float32, device="cpu", noncontiguous=True)
    assert nc.shape == (3, 4) and not nc.is_contiguous()
    nz = make_tensor(500, dtype=aa.int64, device="cpu", low=-1, high=2, exclude_zero=True)
    assert (nz != 0).all()
    c = make_tensor(10, dtype=aa.complex64, device="cpu", low=0, high=1)
    assert c.dtype == aa.complex64 and float(c.real.min()) >= 0 and float(c.imag.max()) < 1
    clamped = make_tensor(100, dtype=aa.uint8, device="cpu", low=-100, high=300)
    assert clamped.dtype == aa.uint8
    with pytest.raises(ValueError, match="`low` must be less than `high`, but got 5 >= 2"):
        make_tensor(3, dtype=aa.float32, device="cpu", low=5, high=2)
    with pytest.raises(ValueError, match="cannot be NaN"):
        make_tensor(3, dtype=aa.float32, device="cpu", low=nan)
    aa.manual_seed(3)
    first = make_tensor(5, dtype=aa.float32, device="cpu")
    aa.manual_seed(3)
    assert_close(first, make_tensor(5, dtype=aa.float32, device="cpu"))
