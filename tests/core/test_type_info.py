"""`finfo` and `iinfo` against PyTorch's for every element type."""

from __future__ import annotations

import pytest

import autograd_async as aa

FLOATS = ["float16", "bfloat16", "float32", "float64", "complex64", "complex128"]
INTS = ["uint8", "int8", "int16", "int32", "int64"]


@pytest.mark.parametrize("name", FLOATS)
def test_finfo_matches_torch(name):
    torch = pytest.importorskip("torch")
    ours, theirs = aa.finfo(getattr(aa, name)), torch.finfo(getattr(torch, name))
    for field in ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution", "dtype"):
        assert getattr(ours, field) == pytest.approx(getattr(theirs, field)), field
    assert repr(ours) == repr(theirs)


@pytest.mark.parametrize("name", INTS)
def test_iinfo_matches_torch(name):
    torch = pytest.importorskip("torch")
    ours, theirs = aa.iinfo(getattr(aa, name)), torch.iinfo(getattr(torch, name))
    assert (ours.bits, ours.min, ours.max, ours.dtype) == (
        theirs.bits,
        theirs.min,
        theirs.max,
        theirs.dtype,
    )
    assert repr(ours) == repr(theirs)


def test_defaults_errors_and_use():
    assert aa.finfo() == aa.finfo(aa.get_default_dtype())
    assert aa.finfo(aa.float32).eps == 2.0**-23 and aa.iinfo(aa.int8).max == 127
    with pytest.raises(TypeError, match="finfo\\(\\) requires a floating point input type"):
        aa.finfo(aa.int32)
    with pytest.raises(TypeError, match="iinfo\\(\\) requires an integer input type"):
        aa.iinfo(aa.float32)
    with pytest.raises(TypeError, match="bool is not supported"):
        aa.iinfo(aa.bool)
    x = aa.zeros(3)
    assert float(x.clamp(min=aa.finfo(x.dtype).eps).min()) > 0
