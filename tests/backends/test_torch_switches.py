"""torch.backends' switches that training scripts set (cudnn, cuda.matmul, mps): present with
PyTorch's names and defaults, settable, and honest about what they change here (nothing)."""

from __future__ import annotations

import pytest

import autograd_async as aa


def test_switches_exist_with_pytorchs_defaults():
    torch = pytest.importorskip("torch")
    for name in ("enabled", "benchmark", "deterministic", "allow_tf32"):
        assert getattr(aa.backends.cudnn, name) == getattr(torch.backends.cudnn, name), name
    for name in ("allow_tf32", "allow_fp16_reduced_precision_reduction"):
        assert getattr(aa.backends.cuda.matmul, name) == getattr(torch.backends.cuda.matmul, name)


def test_setting_them_changes_no_result():
    x = aa.randn(4, 4)
    before = (x @ x).numpy()
    previous = aa.backends.cudnn.benchmark, aa.backends.cuda.matmul.allow_tf32
    try:
        aa.backends.cudnn.benchmark = True
        aa.backends.cuda.matmul.allow_tf32 = True
        assert ((x @ x).numpy() == before).all()
    finally:
        aa.backends.cudnn.benchmark, aa.backends.cuda.matmul.allow_tf32 = previous
    with pytest.raises(AttributeError):
        aa.backends.cuda.matmul.allow_tf33 = True  # a misspelt switch is refused, not recorded


def test_probes():
    assert aa.backends.mps.is_available() is False and aa.backends.mps.is_built() is False
    assert aa.backends.cudnn.is_available() is False and aa.backends.cudnn.version() is None
    assert isinstance(aa.backends.cuda.is_built(), bool)
