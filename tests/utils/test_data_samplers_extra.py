"""WeightedRandomSampler and StackDataset, checked against PyTorch's behaviour."""

from __future__ import annotations

import numpy as np
import pytest

import autograd_async as aa
from autograd_async.utils.data import DataLoader, StackDataset, TensorDataset, WeightedRandomSampler


def test_weighted_sampler_follows_the_weights():
    weights = [0.0, 1.0, 3.0]
    sampler = WeightedRandomSampler(
        weights, num_samples=4000, generator=aa.Generator().manual_seed(0)
    )
    drawn = np.bincount(list(sampler), minlength=3)
    assert len(sampler) == 4000 and drawn[0] == 0
    assert abs(drawn[2] / drawn[1] - 3.0) < 0.4


def test_weighted_sampler_without_replacement_and_tensor_weights():
    sampler = WeightedRandomSampler(aa.tensor([1.0, 2.0, 3.0, 0.5]), 4, replacement=False)
    assert sorted(sampler) == [0, 1, 2, 3]
    aa.manual_seed(5)
    first = list(WeightedRandomSampler([1.0, 2.0, 3.0], 10))
    aa.manual_seed(5)
    assert list(WeightedRandomSampler([1.0, 2.0, 3.0], 10)) == first


@pytest.mark.parametrize(
    "args, error, words",
    [
        (([1.0, 2.0], 0), ValueError, "num_samples should be a positive integer"),
        (([1.0, 2.0], 2, 1), ValueError, "replacement should be a boolean"),
        (([[1.0, 2.0]], 2), ValueError, "weights should be a 1d sequence"),
        (([1.0, 0.0], 2, False), RuntimeError, "without replacement"),
        (([-1.0, 2.0], 2), RuntimeError, "invalid multinomial distribution"),
    ],
)
def test_weighted_sampler_errors(args, error, words):
    with pytest.raises(error, match=words):
        WeightedRandomSampler(*args)


def test_weighted_sampler_in_a_loader():
    data = TensorDataset(aa.arange(10.0))
    loader = DataLoader(data, batch_size=4, sampler=WeightedRandomSampler([1.0] * 10, 12))
    assert [len(b[0]) for b in loader] == [4, 4, 4]


def test_stack_dataset_tuple_and_dict():
    a, b = TensorDataset(aa.arange(4.0)), [10, 11, 12, 13]
    pairs = StackDataset(a, b)
    assert len(pairs) == 4 and pairs[2][1] == 12 and float(pairs[2][0][0]) == 2.0
    named = StackDataset(x=a, y=b)
    assert set(named[1]) == {"x", "y"} and named[1]["y"] == 11
    batch = next(iter(DataLoader(named, batch_size=2)))
    assert batch["y"].tolist() == [10, 11]
    with pytest.raises(ValueError, match="Size mismatch"):
        StackDataset(a, [1, 2])
    with pytest.raises(ValueError, match="At least one dataset"):
        StackDataset()
    with pytest.raises(ValueError, match="both types are given"):
        StackDataset(a, y=b)


def test_against_torch():
    torch = pytest.importorskip("torch")
    theirs = torch.utils.data.StackDataset(x=[1, 2], y=[3, 4])
    ours = StackDataset(x=[1, 2], y=[3, 4])
    assert ours[1] == theirs[1] and len(ours) == len(theirs)
