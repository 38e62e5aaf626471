"""`Size`: what `x.shape` and `x.size()` return, checked against `torch.Size` where installed."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest

import autograd_async as aa


def test_shape_and_size_are_sizes_equal_to_tuples():
    x = aa.ones(2, 3)
    assert isinstance(x.shape, aa.Size) and isinstance(x.size(), aa.Size)
    assert x.shape == (2, 3) and x.size() == aa.Size([2, 3])
    assert hash(x.shape) == hash((2, 3))
    assert x.size(1) == 3 and x.size(-1) == 3 and type(x.shape[0]) is int


def test_numel_repr_and_arithmetic():
    s = aa.Size([2, 3, 4])
    assert s.numel() == 24 and aa.Size([]).numel() == 1 and aa.Size([0, 5]).numel() == 0
    assert repr(s) == "Size([2, 3, 4])" and str(aa.Size()) == "Size([])"
    assert isinstance(s + (5,), aa.Size) and s + (5,) == (2, 3, 4, 5)
    assert isinstance(s * 2, aa.Size) and 2 * aa.Size([1]) == (1, 1)


def test_construction_checks_ints():
    assert aa.Size(np.array([2, 3])) == (2, 3)
    assert aa.Size(x for x in (4, 5)) == (4, 5)
    with pytest.raises(TypeError, match="iterable of ints"):
        aa.Size([2.5])
    with pytest.raises(TypeError, match="iterable of ints"):
        aa.Size(3)


def test_round_trips_and_use_as_an_argument():
    s = aa.ones(2, 3).shape
    assert pickle.loads(pickle.dumps(s)) == s and type(pickle.loads(pickle.dumps(s))) is aa.Size
    assert type(copy.deepcopy(s)) is aa.Size
    assert aa.zeros(s).shape == (2, 3) and aa.ones(1).new_zeros(s).shape == (2, 3)
    assert aa.ones(6).view(s).shape == (2, 3) and np.zeros(s).shape == (2, 3)


def test_against_torch():
    torch = pytest.importorskip("torch")
    for dims in ([], [3], [2, 0, 4]):
        ours, theirs = aa.Size(dims), torch.Size(dims)
        assert ours == theirs and ours.numel() == theirs.numel()
        assert repr(theirs) == "torch." + repr(ours)
        assert ours + (1,) == theirs + (1,)
    assert aa.zeros(2, 3).sum(dim=0, keepdim=True).shape == torch.zeros(2, 3).sum(0, True).shape
