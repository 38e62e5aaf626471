"""`where`'s two forms against PyTorch: with the condition alone it gives the indices."""

from __future__ import annotations

import numpy as np
import pytest

import autograd_async as aa


@pytest.mark.parametrize("shape", [(5,), (2, 3), (2, 0, 3), ()])
def test_condition_alone_gives_indices_like_torch(shape):
    torch = pytest.importorskip("torch")
    cond = np.random.default_rng(1).random(shape) > 0.5
    ours, theirs = aa.where(aa.tensor(cond)), torch.where(torch.tensor(cond))
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        assert a.dtype == aa.int64 and a.tolist() == b.tolist()


def test_three_arguments_still_select_and_a_missing_one_is_named():
    out = aa.where(aa.tensor([True, False]), aa.tensor([1.0, 2.0]), 0.0)
    assert out.tolist() == [1.0, 0.0]
    with pytest.raises(TypeError, match="got input without the other"):
        aa.where(aa.tensor([True]), aa.ones(1))
