"""F.embedding_bag and nn.EmbeddingBag against PyTorch: every mode, offsets or 2-D bags,
include_last_offset, per_sample_weights, padding_idx; values, gradients and errors."""

from __future__ import annotations

import numpy as np
import pytest

import autograd_async as aa
from autograd_async import nn
from autograd_async.nn import functional as F  # noqa: N812

INDICES = [1, 2, 2, 5, 7, 2, 9, 0]
OFFSETS = [0, 0, 3, 6]  # an empty bag first

CASES = [
    {"mode": "sum"},
    {"mode": "mean"},
    {"mode": "max"},
    {"mode": "sum", "per_sample_weights": True},
    {"mode": "sum", "padding_idx": 2},
    {"mode": "mean", "padding_idx": 2},
    {"mode": "max", "padding_idx": 2},
    {"mode": "mean", "include_last_offset": True},
    {"mode": "sum", "two_d": True},
    {"mode": "max", "two_d": True, "padding_idx": 0},
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: "-".join(f"{k}={v}" for k, v in c.items()))
def test_embedding_bag_matches_torch(torch, device, case):
    case = dict(case)
    two_d = case.pop("two_d", False)
    with_weights = case.pop("per_sample_weights", False)
    rng = np.random.default_rng(0)
    weight = rng.standard_normal((10, 3))
    if two_d:
        indices, offsets = np.array(INDICES).reshape(2, 4), None
    elif case.get("include_last_offset"):
        indices, offsets = np.array(INDICES), np.array([*OFFSETS, len(INDICES)])
    else:
        indices, offsets = np.array(INDICES), np.array(OFFSETS)
    sample = rng.standard_normal(indices.shape) if with_weights else None
    results = []
    for lib, functional, where in ((aa, F, device), (torch, torch.nn.functional, None)):
        on = {"device": where} if where else {}
        w = lib.tensor(weight, requires_grad=True, **on)
        p = None if sample is None else lib.tensor(sample, requires_grad=True, **on)
        out = functional.embedding_bag(
            lib.tensor(indices, **on),
            w,
            None if offsets is None else lib.tensor(offsets, **on),
            per_sample_weights=p,
            **case,
        )
        cotangent = np.arange(np.prod(tuple(out.shape)), dtype=np.float64).reshape(out.shape)
        (out * lib.tensor(cotangent, **on)).sum().backward()
        grads = [w.grad] + ([] if p is None else [p.grad])
        results.append([out.detach().cpu().numpy()] + [g.cpu().numpy() for g in grads])
    for a, b in zip(*results, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_module_matches_torch_and_loads_its_state(torch):
    torch.manual_seed(0)
    theirs = torch.nn.EmbeddingBag(10, 3, mode="max", padding_idx=1).double()
    ours = nn.EmbeddingBag(10, 3, mode="max", padding_idx=1).double()
    assert repr(ours) == repr(theirs)
    ours.load_state_dict({k: aa.tensor(v.detach().numpy()) for k, v in theirs.state_dict().items()})
    x, offsets = [1, 4, 1, 3, 8], [0, 2]
    expected = theirs(torch.tensor(x), torch.tensor(offsets)).detach().numpy()
    np.testing.assert_allclose(ours(aa.tensor(x), aa.tensor(offsets)).detach().numpy(), expected)
    fresh = nn.EmbeddingBag(10, 3, padding_idx=1)
    assert np.all(fresh.weight.detach().numpy()[1] == 0)
    frozen = nn.EmbeddingBag.from_pretrained(aa.tensor(np.eye(3)), mode="sum")
    assert not frozen.weight.requires_grad
    np.testing.assert_array_equal(frozen(aa.tensor([[0, 2]])).numpy(), [[1.0, 0.0, 1.0]])


def error_of(fn):
    try:
        fn()
    except Exception as exc:  # noqa: BLE001 - the type and text are what is compared
        # the class names differ by package only
        text = str(exc).replace("autograd_async.tensor.Tensor", "Tensor")
        return type(exc).__name__, text.replace("torch.Tensor", "Tensor")
    return None


ERRORS = [
    lambda lib, f, w: f.embedding_bag(lib.tensor([[1, 2], [3, 4]]), w, lib.tensor([0])),
    lambda lib, f, w: f.embedding_bag(lib.tensor([1, 2]), w),
    lambda lib, f, w: f.embedding_bag(lib.tensor([[[1]]]), w),
    lambda lib, f, w: f.embedding_bag(
        lib.tensor([1, 2]), w, lib.tensor([0]), mode="mean", per_sample_weights=lib.ones(2)
    ),
    lambda lib, f, w: f.embedding_bag(lib.tensor([1, 2]), w, lib.tensor([0]), mode="bad"),
    lambda lib, f, w: f.embedding_bag(lib.tensor([1, 2]), w, lib.tensor([0, 3])),
    lambda lib, f, w: f.embedding_bag(lib.tensor([1, 12]), w, lib.tensor([0])),
]


@pytest.mark.parametrize("call", ERRORS)
def test_errors_match_torch(torch, call):
    ours = error_of(lambda: call(aa, F, aa.zeros(10, 3)))
    ref = error_of(lambda: call(torch, torch.nn.functional, torch.zeros(10, 3)))
    assert ref is not None
    assert ours == ref
