"""Convolutions whose batch is split in halves over the intra-op helper thread, against PyTorch.

The split only applies to large NumPy batches; these tests lower the threshold so that small
cases take that path, and compare values and gradients with PyTorch as the other tests do.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest

import autograd_async as aa
from autograd_async.nn import functional as F  # noqa: N812
from autograd_async.ops import conv_arrays
from autograd_async.ops.intra_op import IntraOpPool, get_num_threads, set_num_threads

from .torch_reference import against_torch

RNG = np.random.default_rng(1)

SPLIT_CASES = [
    # (name, input shape, weight shape, with bias, keyword arguments)
    ("conv2d", (5, 3, 7, 8), (4, 3, 3, 3), True, {"padding": 1}),
    ("conv2d", (4, 4, 8, 8), (6, 2, 3, 2), True, {"padding": (1, 2), "groups": 2,
                                                   "dilation": (1, 2)}),
    ("conv2d", (3, 4, 9, 8), (5, 4, 3, 3), False, {"stride": 2, "padding": 1}),
    ("conv1d", (4, 3, 12), (2, 3, 3), True, {"padding": 2}),
    ("conv3d", (2, 2, 4, 5, 4), (3, 2, 2, 3, 2), True, {"padding": (1, 0, 1)}),
]


@pytest.fixture
def split_every_batch(monkeypatch):
    """Every NumPy convolution splits its batch, on a pool with two threads."""
    monkeypatch.setattr(conv_arrays, "SPLIT_MIN_COLUMNS", 0)
    monkeypatch.setattr(conv_arrays, "POOL", IntraOpPool(2))


@pytest.mark.parametrize(("name", "xs", "ws", "bias", "kwargs"), SPLIT_CASES)
def test_split_batches_match_torch(torch, split_every_batch, name, xs, ws, bias, kwargs) -> None:
    ours, theirs = getattr(F, name), getattr(torch.nn.functional, name)
    arrays = [RNG.standard_normal(xs), RNG.standard_normal(ws)]
    arrays += [RNG.standard_normal(ws[0])] if bias else []
    against_torch(torch, lambda *t: ours(*t, **kwargs), lambda *t: theirs(*t, **kwargs),
                  *arrays)


def test_split_batch_with_only_the_weight_needing_a_gradient(torch, split_every_batch) -> None:
    x, w = RNG.standard_normal((4, 3, 6, 6)), RNG.standard_normal((2, 3, 3, 3))
    against_torch(torch, lambda a, b: F.conv2d(a, b, padding=1),
                  lambda a, b: torch.nn.functional.conv2d(a, b, padding=1), x, w,
                  grad=[False, True])
    against_torch(torch, lambda a, b: F.conv2d(a, b, padding=1),
                  lambda a, b: torch.nn.functional.conv2d(a, b, padding=1), x, w,
                  grad=[True, False])


def test_pool_runs_the_second_half_on_its_helper_thread() -> None:
    pool = IntraOpPool(2)
    threads = {}

    def part(start: int, stop: int) -> tuple[int, int]:
        threads[(start, stop)] = threading.current_thread()
        return start, stop

    parts = pool.split(5)
    assert parts == [(0, 2), (2, 5)]
    assert pool.run(part, parts) == [(0, 2), (2, 5)]
    assert threads[(0, 2)] is threading.current_thread()
    assert threads[(2, 5)] is not threading.current_thread()
    assert IntraOpPool(1).split(5) == [(0, 5)] and pool.split(1) == [(0, 1)]


def test_pool_waits_for_the_helper_when_the_callers_half_fails() -> None:
    pool = IntraOpPool(2)
    finished = threading.Event()

    def part(start: int, stop: int) -> None:
        if start == 0:
            raise ValueError("first half failed")
        finished.wait(0.05)
        finished.set()

    with pytest.raises(ValueError, match="first half failed"):
        pool.run(part, pool.split(4))
    assert finished.is_set()  # run() returned only after the helper's half had ended


def test_set_num_threads_validates_and_round_trips() -> None:
    before = get_num_threads()
    try:
        set_num_threads(1)
        assert get_num_threads() == 1
        with pytest.raises(ValueError, match="positive integer"):
            set_num_threads(0)
    finally:
        set_num_threads(before)
    assert aa.get_num_threads() == before == 1  # one by default: nothing splits unless asked
