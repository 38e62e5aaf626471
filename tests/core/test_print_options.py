"""set_printoptions: PyTorch's profiles and options change how tensors print, exactly as
PyTorch's repr shows them; `printoptions` restores the previous options after a block."""

from __future__ import annotations

import numpy as np
import pytest

import autograd_async as aa
from autograd_async._tensor_str import get_printoptions, printoptions

OPTIONS = [
    {},
    {"precision": 2},
    {"threshold": 5},
    {"profile": "short"},
    {"profile": "full"},
    {"sci_mode": True},
    {"sci_mode": False},
    {"linewidth": 30, "edgeitems": 1, "threshold": 4},
    {"profile": "short", "precision": 6},
]
VALUES = [
    np.arange(12, dtype=np.float32).reshape(3, 4) / 7,
    np.arange(2000, dtype=np.float32) / 3,
    np.array([1e-5, 1.0, 3e5], dtype=np.float32),
    np.arange(20),
    np.arange(2 * 3 * 40).reshape(2, 3, 40) - 50,
    np.array([True, False] * 600).reshape(40, 30),
    np.array([np.nan, np.inf, -1.5, 0.0], dtype=np.float32),
    np.arange(1500, dtype=np.float32).reshape(5, 300),
    np.array(2.5, dtype=np.float32),
    np.arange(24, dtype=np.float32).reshape(2, 3, 4) * 1e-6,
]


@pytest.mark.parametrize("options", OPTIONS, ids=lambda o: ",".join(map(str, o.items())))
def test_repr_matches_torch_under_options(torch, options):
    for values in VALUES:
        with printoptions(**options):
            ours = repr(aa.tensor(values))
        torch.set_printoptions(**options)
        try:
            theirs = repr(torch.tensor(values))
        finally:
            torch.set_printoptions(profile="default", sci_mode=None)
        assert ours == theirs


def test_set_printoptions_and_restore():
    before = get_printoptions()
    try:
        aa.set_printoptions(precision=1)
        assert repr(aa.tensor([1.25, 2.5])) == "tensor([1.2, 2.5])"
        aa.set_printoptions(profile="default")  # a profile resets precision, keeps nothing else
        assert repr(aa.tensor([1.25, 2.5])) == "tensor([1.2500, 2.5000])"
        aa.set_printoptions(sci_mode=True)
        assert repr(aa.tensor([1.5])) == "tensor([1.5000e+00])"
        aa.set_printoptions()  # sci_mode is always set: back to choosing from the values
        assert repr(aa.tensor([1.5])) == "tensor([1.5000])"
    finally:
        aa.set_printoptions(**before)
    assert get_printoptions() == before


def test_printoptions_block_restores_after_an_error():
    before = get_printoptions()
    with pytest.raises(KeyError), printoptions(profile="short"):
        assert get_printoptions()["precision"] == 2
        raise KeyError("leave the block")
    assert get_printoptions() == before


def test_unknown_profile_is_refused():
    with pytest.raises(ValueError, match="unknown print profile 'long'"):
        aa.set_printoptions(profile="long")
