"""Margin, hinge and likelihood losses against PyTorch: values and gradients (float64) for every
reduction, the modules' constructors, and errors."""

from __future__ import annotations

import numpy as np
import pytest

import autograd_async as aa
from autograd_async import nn

RNG = np.random.default_rng(0)
X = RNG.standard_normal((4, 5))
Y = RNG.standard_normal((4, 5))
Z = RNG.standard_normal((4, 5))
CLASSES = np.array([0, 3, 4, 1])
SIGNS = np.array([1.0, -1.0, -1.0, 1.0, 1.0])
LABEL_LISTS = np.array([[3, 0, -1, 1, 2], [1, -1, 0, 0, 0], [4, 3, 2, 1, 0], [-1, 0, 0, 0, 0]])
BITS = (RNG.random((4, 5)) > 0.5).astype(np.float64)
COUNTS = RNG.integers(0, 5, (4, 5)).astype(np.float64)
VAR = RNG.random((4, 5)) + 0.1

# (module name, constructor kwargs, inputs: (array, takes grad)); forward(*inputs)
CASES = [
    ("TripletMarginLoss", {}, [(X, True), (Y, True), (Z, True)]),
    (
        "TripletMarginLoss",
        {"margin": 0.5, "p": 1.0, "swap": True},
        [(X, True), (Y, True), (Z, True)],
    ),
    ("TripletMarginWithDistanceLoss", {"swap": True}, [(X, True), (Y, True), (Z, True)]),
    ("MultiMarginLoss", {}, [(X, True), (CLASSES, False)]),
    ("MultiMarginLoss", {"p": 2, "margin": 0.7}, [(X, True), (CLASSES, False)]),
    (
        "MultiMarginLoss",
        {"weight": np.array([1.0, 2.0, 0.5, 1.5, 3.0])},
        [(X, True), (CLASSES, False)],
    ),
    ("MultiMarginLoss", {}, [(X[0], True), (CLASSES[1:2], False)]),
    ("MultiLabelMarginLoss", {}, [(X, True), (LABEL_LISTS, False)]),
    ("MultiLabelMarginLoss", {}, [(X[0], True), (LABEL_LISTS[0], False)]),
    ("MultiLabelSoftMarginLoss", {}, [(X, True), (BITS, False)]),
    (
        "MultiLabelSoftMarginLoss",
        {"weight": np.array([1.0, 2.0, 0.5, 1.5, 3.0])},
        [(X, True), (BITS, True)],
    ),
    ("HingeEmbeddingLoss", {"margin": 0.5}, [(X, True), (np.tile(SIGNS, (4, 1)), False)]),
    ("SoftMarginLoss", {}, [(X, True), (np.tile(SIGNS, (4, 1)), False)]),
    ("PoissonNLLLoss", {}, [(X, True), (COUNTS, True)]),
    ("PoissonNLLLoss", {"log_input": False, "full": True}, [(VAR, True), (COUNTS, True)]),
    ("GaussianNLLLoss", {}, [(X, True), (Y, True), (VAR, True)]),
    ("GaussianNLLLoss", {"full": True}, [(X, True), (Y, True), (VAR[:, 0], True)]),
    ("GaussianNLLLoss", {"eps": 0.5}, [(X, True), (Y, True), (VAR[:, :1], True)]),
]


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize(
    ("name", "kwargs", "inputs"), CASES, ids=[f"{c[0]}{i}" for i, c in enumerate(CASES)]
)
def test_loss_matches_torch(torch, device, name, kwargs, inputs, reduction):
    results = []
    for lib, module, where in ((aa, nn, device), (torch, torch.nn, None)):
        on = {"device": where} if where else {}
        built = {
            k: lib.tensor(v, **on) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()
        }
        loss_fn = getattr(module, name)(reduction=reduction, **built)
        tensors = [
            lib.tensor(a, requires_grad=grad, **on) if a.dtype.kind == "f" else lib.tensor(a, **on)
            for a, grad in inputs
        ]
        loss = loss_fn(*tensors)
        weights = np.arange(1, np.prod(tuple(loss.shape)) + 1, dtype=np.float64)
        (loss * lib.tensor(weights.reshape(tuple(loss.shape)), **on)).sum().backward()
        grads = [t.grad.cpu().numpy() for t, (_, grad) in zip(tensors, inputs, strict=True) if grad]
        results.append([loss.detach().cpu().numpy(), *grads])
    for a, b in zip(*results, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def error_of(fn):
    try:
        fn()
    except Exception as exc:  # noqa: BLE001 - the type and text are what is compared
        return type(exc).__name__, str(exc)
    return None


ERRORS = [
    lambda lib, f: f.triplet_margin_loss(lib.zeros(3, 4), lib.zeros(4), lib.zeros(3, 4)),
    lambda lib, f: f.multi_margin_loss(lib.zeros(3, 4), lib.tensor([0, 1, 2]), p=3),
    lambda lib, f: f.multi_margin_loss(lib.zeros(3, 4), lib.tensor([0, 1])),
    lambda lib, f: f.multi_margin_loss(lib.zeros(3, 4), lib.tensor([0, 1, 7])),
    lambda lib, f: f.multi_margin_loss(lib.zeros(3, 4), lib.tensor([0, 1, 2]), weight=lib.ones(3)),
    lambda lib, f: f.gaussian_nll_loss(lib.zeros(3, 4), lib.zeros(3, 4), -lib.ones(3, 4)),
    lambda lib, f: f.gaussian_nll_loss(lib.zeros(3, 4), lib.zeros(3, 4), lib.ones(3, 2)),
    lambda lib, f: f.multilabel_margin_loss(lib.zeros(3, 4), lib.zeros(3, 3, dtype=lib.int64)),
    lambda lib, f: f.soft_margin_loss(lib.zeros(3, 4), lib.zeros(3, 4), reduction="avg"),
]


@pytest.mark.parametrize("call", ERRORS)
def test_errors_match_torch(torch, call):
    ref = error_of(lambda: call(torch, torch.nn.functional))
    assert ref is not None
    assert error_of(lambda: call(aa, nn.functional)) == ref
