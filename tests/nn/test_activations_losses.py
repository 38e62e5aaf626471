"""Activations and losses of nn.functional, and their modules, against PyTorch on every device:
values and gradients in float64 (kinks included), gradcheck, and the errors for bad input."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from gradients import to_numpy, versus_torch

import autograd_async as aa
from autograd_async.autograd import gradcheck, gradgradcheck
from autograd_async.nn import functional as F  # noqa: N812

RNG = np.random.default_rng(0)
# Random values plus each activation's kinks: 0, +-1, +-3, 6, and a large value for softplus.
X = np.concatenate([RNG.standard_normal(14) * 3, [0.0, 1.0, -1.0, 3.0, -3.0, 6.0, 25.0, -25.0]])
X = X.reshape(2, 11)

# name -> (keyword arguments, second derivatives checked)
ACTIVATIONS = {
    "silu": ({}, True),
    "leaky_relu": ({"negative_slope": 0.2}, False),
    "elu": ({"alpha": 0.7}, False),
    "selu": ({}, False),
    "celu": ({"alpha": 0.5}, False),
    "softplus": ({"beta": 2.0, "threshold": 3.0}, True),
    "mish": ({}, True),
    "hardtanh": ({"min_val": -1.0, "max_val": 3.0}, False),
    "relu6": ({}, False),
    "hardsigmoid": ({}, False),
    "hardswish": ({}, False),
    "logsigmoid": ({}, True),
    "softsign": ({}, True),
    "tanhshrink": ({}, True),
    "gelu": ({"approximate": "tanh"}, True),
    "sigmoid": ({}, True),
    "tanh": ({}, True),
}


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_activation_matches_torch(torch, device: str, name: str) -> None:
    kwargs, _ = ACTIVATIONS[name]
    theirs = getattr(torch.nn.functional, name)
    versus_torch(
        torch, device, lambda t: getattr(F, name)(t, **kwargs), lambda t: theirs(t, **kwargs), X
    )


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_activation_gradcheck(device: str, name: str) -> None:
    kwargs, second = ACTIVATIONS[name]
    # away from the kinks, where finite differences are meaningful
    x = aa.tensor(
        RNG.standard_normal((3, 4)) * 2, dtype=aa.float64, device=device, requires_grad=True
    )
    fn = lambda t: getattr(F, name)(t, **kwargs)  # noqa: E731
    assert gradcheck(fn, (x,))
    if second:
        assert gradgradcheck(fn, (x,))


def test_elu_family_second_order_away_from_zero(device: str) -> None:
    x = aa.tensor([[-2.0, -0.5, 0.5, 30.0]], dtype=aa.float64, device=device, requires_grad=True)
    for fn in (F.elu, F.selu, lambda t: F.celu(t, 0.5)):
        assert gradgradcheck(fn, (x,))


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_glu_matches_torch(torch, device: str, dim: int) -> None:
    data = RNG.standard_normal((4, 6))
    versus_torch(
        torch, device, lambda t: F.glu(t, dim), lambda t: torch.nn.functional.glu(t, dim), data
    )
    assert gradcheck(lambda t: F.glu(t, dim), (aa.tensor(data, device=device, requires_grad=True),))


@pytest.mark.parametrize("shape", [(2, 3, 4), (5, 3), (3,)])
@pytest.mark.parametrize("count", [1, 3])
def test_prelu_matches_torch(torch, device: str, shape, count: int) -> None:
    data = RNG.standard_normal(shape)
    data.flat[0] = 0.0
    weight = np.array([0.1, 0.2, 0.3])[:count]
    if len(shape) == 1 and count > 1:  # a 1-D input has one channel
        with pytest.raises(RuntimeError, match="Found parameter numbers = 3 and channel size = 1"):
            F.prelu(aa.tensor(data), aa.tensor(weight))
        return
    versus_torch(torch, device, F.prelu, torch.nn.functional.prelu, data, weight)
    data.flat[0] = 0.5  # finite differences across the kink would disagree
    assert gradcheck(
        F.prelu,
        (
            aa.tensor(data, device=device, requires_grad=True),
            aa.tensor(weight, device=device, requires_grad=True),
        ),
    )


def test_inplace_activations(torch, device: str) -> None:
    for name in ("silu", "leaky_relu", "elu", "hardtanh", "relu6", "hardswish"):
        base = aa.tensor(X, device=device, requires_grad=True)
        x = base * 1
        out = getattr(F, name)(x, inplace=True)
        assert out is x and x._version > 0, name
        (g,) = aa.autograd.grad(out.sum(), [base])
        ref = torch.tensor(X, requires_grad=True)
        getattr(torch.nn.functional, name)(ref * 1, inplace=True).sum().backward()
        np.testing.assert_allclose(to_numpy(g), ref.grad.numpy(), atol=1e-9, err_msg=name)


# integer inputs: PyTorch's kernel refuses them (naming itself), keeps them, or makes them float
INTEGER_INPUTS = {
    "silu": "silu",
    "leaky_relu": "leaky_relu",
    "elu": "elu",
    "selu": "elu",
    "celu": "elu",
    "softplus": "softplus",
    "mish": "mish",
    "hardsigmoid": "hardsigmoid",
    "hardswish": "hardswish",
    "logsigmoid": "log_sigmoid",
    "hardtanh": "keep",
    "relu6": "keep",
    "softsign": "float",
    "tanhshrink": "float",
}


@pytest.mark.parametrize("name", sorted(INTEGER_INPUTS))
def test_activation_integer_inputs(torch, name: str) -> None:
    expected = INTEGER_INPUTS[name]
    ints = aa.tensor([-7, 1, 2, 9])
    if expected not in ("keep", "float"):
        with pytest.raises(
            NotImplementedError, match=f"\"{expected}_cpu\" not implemented for 'Long'"
        ):
            getattr(F, name)(ints)
        return
    out = getattr(F, name)(ints)
    ref = getattr(torch.nn.functional, name)(torch.tensor([-7, 1, 2, 9]))
    assert str(out.dtype) == str(ref.dtype).removeprefix("torch.")
    np.testing.assert_allclose(to_numpy(out), ref.numpy(), rtol=1e-6)


def test_activation_errors() -> None:
    with pytest.raises(ValueError, match="min_val cannot be greater than max_val"):
        F.hardtanh(aa.zeros(2), 2.0, 1.0)
    with pytest.raises(
        RuntimeError, match="Halving dimension must be even, but dimension 1 is size 3"
    ):
        F.glu(aa.zeros(2, 3))
    with pytest.raises(RuntimeError, match="glu does not support scalars"):
        F.glu(aa.zeros(()))
    with pytest.raises(
        RuntimeError,
        match="Mismatch of parameter numbers and input channel size. "
        "Found parameter numbers = 2 and channel size = 3.",
    ):
        F.prelu(aa.zeros(2, 3), aa.zeros(2))
    with pytest.raises(TypeError, match=r"silu\(\): argument 'input' must be Tensor"):
        F.silu([1.0])


# ------------------------------------------------------------------ losses
LOGITS = RNG.standard_normal((5, 4))
TARGET = np.array([0, 3, 1, -100, 2])
WEIGHT = np.array([0.5, 1.0, 2.0, 0.3])
REDUCTIONS = ["mean", "sum", "none"]


def _log_probs(logits: np.ndarray, axis: int = 1) -> np.ndarray:
    shifted = logits - logits.max(axis=axis, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))


def _pair(torch, device: str, array, dtype=None):
    """The same constant in both libraries (targets, weights)."""
    return aa.tensor(array, device=device, dtype=dtype), torch.tensor(array)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weighted", [False, True])
def test_nll_loss_matches_torch(torch, device: str, reduction: str, weighted: bool) -> None:
    target, t_target = _pair(torch, device, TARGET)
    weight, t_weight = _pair(torch, device, WEIGHT) if weighted else (None, None)
    versus_torch(
        torch,
        device,
        lambda x: F.nll_loss(x, target, weight=weight, reduction=reduction),
        lambda x: torch.nn.functional.nll_loss(x, t_target, weight=t_weight, reduction=reduction),
        _log_probs(LOGITS),
    )


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_nll_loss_k_dimensional_and_single_sample(torch, device: str, reduction: str) -> None:
    data = _log_probs(RNG.standard_normal((2, 4, 3, 2)))
    target, t_target = _pair(torch, device, RNG.integers(0, 4, (2, 3, 2)))
    weight, t_weight = _pair(torch, device, WEIGHT)
    versus_torch(
        torch,
        device,
        lambda x: F.nll_loss(x, target, weight=weight, reduction=reduction),
        lambda x: torch.nn.functional.nll_loss(x, t_target, weight=t_weight, reduction=reduction),
        data,
    )
    single, t_single = _pair(torch, device, np.array(2))
    versus_torch(
        torch,
        device,
        lambda x: F.nll_loss(x, single, reduction=reduction),
        lambda x: torch.nn.functional.nll_loss(x, t_single, reduction=reduction),
        _log_probs(LOGITS[0], 0),
    )


CE_CASES = {
    "weight": {"weight": True},
    "smoothing": {"label_smoothing": 0.2},
    "weight_smoothing": {"weight": True, "label_smoothing": 0.1},
    "ignore_other": {"ignore_index": 1, "label_smoothing": 0.3},
}


@pytest.mark.parametrize("case", sorted(CE_CASES))
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_cross_entropy_options_match_torch(torch, device: str, case: str, reduction: str) -> None:
    options = dict(CE_CASES[case])
    ours_opts, their_opts = dict(options), dict(options)
    if options.pop("weight", False):
        ours_opts["weight"], their_opts["weight"] = _pair(torch, device, WEIGHT)
    target, t_target = _pair(
        torch, device, np.where(TARGET < 0, 1, TARGET) if case == "ignore_other" else TARGET
    )
    versus_torch(
        torch,
        device,
        lambda x: F.cross_entropy(x, target, reduction=reduction, **ours_opts),
        lambda x: torch.nn.functional.cross_entropy(x, t_target, reduction=reduction, **their_opts),
        LOGITS,
    )


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("options", [{}, {"weight": True, "label_smoothing": 0.1}])
def test_cross_entropy_probability_targets(torch, device: str, reduction: str, options) -> None:
    ours_opts: dict = {"label_smoothing": options.get("label_smoothing", 0.0)}
    their_opts = dict(ours_opts)
    if options.get("weight"):
        ours_opts["weight"], their_opts["weight"] = _pair(torch, device, WEIGHT)
    probs = RNG.dirichlet(np.ones(4), 5)
    # the targets take a gradient too, as in PyTorch
    versus_torch(
        torch,
        device,
        lambda x, p: F.cross_entropy(x, p, reduction=reduction, **ours_opts),
        lambda x, p: torch.nn.functional.cross_entropy(x, p, reduction=reduction, **their_opts),
        LOGITS,
        probs,
    )


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("smoothing", [0.0, 0.25])
def test_cross_entropy_k_dimensional(
    torch, device: str, reduction: str, weighted: bool, smoothing: float
) -> None:
    data = RNG.standard_normal((2, 4, 3, 2))
    labels = RNG.integers(0, 4, (2, 3, 2))
    labels[0, 0, 0] = -100
    target, t_target = _pair(torch, device, labels)
    weight, t_weight = _pair(torch, device, WEIGHT) if weighted else (None, None)
    versus_torch(
        torch,
        device,
        lambda x: F.cross_entropy(
            x, target, weight=weight, reduction=reduction, label_smoothing=smoothing
        ),
        lambda x: torch.nn.functional.cross_entropy(
            x, t_target, weight=t_weight, reduction=reduction, label_smoothing=smoothing
        ),
        data,
    )
    probs = RNG.dirichlet(np.ones(4), (2, 3, 2)).transpose(0, 3, 1, 2)
    versus_torch(
        torch,
        device,
        lambda x, p: F.cross_entropy(
            x, p, weight=weight, reduction=reduction, label_smoothing=smoothing
        ),
        lambda x, p: torch.nn.functional.cross_entropy(
            x, p, weight=t_weight, reduction=reduction, label_smoothing=smoothing
        ),
        data,
        probs,
    )


def test_cross_entropy_gradcheck(device: str) -> None:
    x = aa.tensor(LOGITS, device=device, requires_grad=True)
    target = aa.tensor(TARGET, device=device)
    weight = aa.tensor(WEIGHT, device=device)
    probs = aa.tensor(RNG.dirichlet(np.ones(4), 5), device=device, requires_grad=True)
    assert gradcheck(lambda t: F.cross_entropy(t, target, weight=weight, label_smoothing=0.2), (x,))
    assert gradcheck(lambda t, p: F.cross_entropy(t, p, label_smoothing=0.1), (x, probs))
    assert gradcheck(lambda t: F.nll_loss(t, target, weight=weight, reduction="none"), (x,))
    assert gradgradcheck(lambda t: F.cross_entropy(t, target, weight=weight), (x,))


def test_cross_entropy_legacy_reduction(torch) -> None:
    x = aa.tensor(LOGITS, requires_grad=True)
    with pytest.warns(UserWarning, match="size_average and reduce args will be deprecated"):
        out = F.cross_entropy(x, aa.tensor(TARGET), reduce=False)
    ref = torch.nn.functional.cross_entropy(
        torch.tensor(LOGITS), torch.tensor(TARGET), reduction="none"
    )
    np.testing.assert_allclose(to_numpy(out), ref.numpy())


BINARY_PROBS = RNG.uniform(0.05, 0.95, (3, 4))
BINARY_TARGETS = RNG.uniform(0, 1, (3, 4))


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weighted", [False, True])
def test_binary_cross_entropy(torch, device: str, reduction: str, weighted: bool) -> None:
    weight, t_weight = _pair(torch, device, WEIGHT) if weighted else (None, None)
    versus_torch(
        torch,
        device,
        lambda x, t: F.binary_cross_entropy(x, t, weight, reduction=reduction),
        lambda x, t: torch.nn.functional.binary_cross_entropy(x, t, t_weight, reduction=reduction),
        BINARY_PROBS,
        BINARY_TARGETS,
    )


def test_binary_cross_entropy_at_zero_and_one(torch, device: str) -> None:
    probs = np.array([0.0, 1.0, 0.5, 1.0])
    targets = np.array([0.0, 1.0, 1.0, 0.0])
    versus_torch(
        torch,
        device,
        lambda x: F.binary_cross_entropy(x, aa.tensor(targets, device=device), reduction="sum"),
        lambda x: torch.nn.functional.binary_cross_entropy(
            x, torch.tensor(targets), reduction="sum"
        ),
        probs,
    )


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("options", ["plain", "weight", "pos_weight", "both"])
def test_binary_cross_entropy_with_logits(torch, device: str, reduction: str, options: str) -> None:
    ours_opts, their_opts = {}, {}
    if options in ("weight", "both"):
        ours_opts["weight"], their_opts["weight"] = _pair(torch, device, WEIGHT)
    if options in ("pos_weight", "both"):
        ours_opts["pos_weight"], their_opts["pos_weight"] = _pair(torch, device, WEIGHT * 3)
    versus_torch(
        torch,
        device,
        lambda x, t: F.binary_cross_entropy_with_logits(x, t, reduction=reduction, **ours_opts),
        lambda x, t: torch.nn.functional.binary_cross_entropy_with_logits(
            x, t, reduction=reduction, **their_opts
        ),
        X[:, :4] * 10,
        BINARY_TARGETS[:2],
    )


# name -> (ours, theirs' name, keyword arguments): losses of (input, target)
REGRESSION = {
    "l1": (F.l1_loss, "l1_loss", {}),
    "smooth_l1": (F.smooth_l1_loss, "smooth_l1_loss", {"beta": 0.5}),
    "smooth_l1_beta0": (F.smooth_l1_loss, "smooth_l1_loss", {"beta": 0.0}),
    "huber": (F.huber_loss, "huber_loss", {"delta": 0.5}),
    "huber_default": (F.huber_loss, "huber_loss", {}),
}


@pytest.mark.parametrize("name", sorted(REGRESSION))
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_regression_losses(torch, device: str, name: str, reduction: str) -> None:
    ours, theirs, kwargs = REGRESSION[name]
    target = X + np.array([0.0, 0.5, -0.5, 1.0, 0.25, 2.0, 0.0, -3.0, 0.1, 0.7, -0.2])
    versus_torch(
        torch,
        device,
        lambda x, t: ours(x, t, reduction=reduction, **kwargs),
        lambda x, t: getattr(torch.nn.functional, theirs)(x, t, reduction=reduction, **kwargs),
        X,
        target,
    )
    inputs = (
        aa.tensor(X[:, :4] * 2, device=device, requires_grad=True),
        aa.tensor(BINARY_TARGETS[:2], device=device, requires_grad=True),
    )
    assert gradcheck(lambda x, t: ours(x, t, reduction=reduction, **kwargs), inputs)


@pytest.mark.parametrize("name", ["l1_loss", "huber_loss"])
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_weighted_regression_losses(torch, device: str, name: str, reduction: str) -> None:
    weights = RNG.uniform(0.1, 2.0, X.shape)
    versus_torch(
        torch,
        device,
        lambda x, t, w: getattr(F, name)(x, t, reduction=reduction, weight=w),
        lambda x, t, w: getattr(torch.nn.functional, name)(x, t, reduction=reduction, weight=w),
        X,
        X[::-1] * 0.5,
        weights,
    )
    with pytest.raises(ValueError, match="Weights and input must have the same size."):
        getattr(F, name)(aa.zeros(3), aa.zeros(3), weight=aa.ones(2))


@pytest.mark.parametrize("reduction", REDUCTIONS + ["batchmean"])
@pytest.mark.parametrize("log_target", [False, True])
def test_kl_div(torch, device: str, reduction: str, log_target: bool) -> None:
    inputs = _log_probs(LOGITS)
    targets = _log_probs(RNG.standard_normal((5, 4)))
    if not log_target:
        targets = np.exp(targets)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # 'mean' warns in both libraries
        versus_torch(
            torch,
            device,
            lambda x, t: F.kl_div(x, t, reduction=reduction, log_target=log_target),
            lambda x, t: torch.nn.functional.kl_div(
                x, t, reduction=reduction, log_target=log_target
            ),
            inputs,
            targets,
        )
        assert gradcheck(
            lambda x, t: F.kl_div(x, t, reduction=reduction, log_target=log_target),
            (
                aa.tensor(inputs, device=device, requires_grad=True),
                aa.tensor(targets, device=device, requires_grad=True),
            ),
        )


def test_kl_div_zero_targets(torch) -> None:
    target = np.array([0.0, 0.5, 0.5])
    versus_torch(
        torch,
        "cpu",
        lambda x: F.kl_div(x, aa.tensor(target), reduction="sum"),
        lambda x: torch.nn.functional.kl_div(x, torch.tensor(target), reduction="sum"),
        np.log([0.2, 0.3, 0.5]),
    )


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_margin_ranking_loss(torch, device: str, reduction: str) -> None:
    labels = np.array([1.0, -1.0, 1.0, -1.0])
    first, second = np.array([0.5, 0.2, -1.0, 3.0]), np.array([0.2, 0.5, 1.0, 0.0])
    versus_torch(
        torch,
        device,
        lambda a, b, y: F.margin_ranking_loss(a, b, y, margin=0.1, reduction=reduction),
        lambda a, b, y: torch.nn.functional.margin_ranking_loss(
            a, b, y, margin=0.1, reduction=reduction
        ),
        first,
        second,
        labels,
    )


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("batched", [True, False])
def test_cosine_embedding_loss(torch, device: str, reduction: str, batched: bool) -> None:
    first, second = RNG.standard_normal((4, 3)), RNG.standard_normal((4, 3))
    labels = np.array([1.0, -1.0, 1.0, -1.0])
    if not batched:
        first, second, labels = first[0], second[0], labels[1]
    target, t_target = _pair(torch, device, labels)
    versus_torch(
        torch,
        device,
        lambda a, b: F.cosine_embedding_loss(a, b, target, margin=-0.5, reduction=reduction),
        lambda a, b: torch.nn.functional.cosine_embedding_loss(
            a, b, t_target, margin=-0.5, reduction=reduction
        ),
        first,
        second,
    )
    assert gradcheck(
        lambda a, b: F.cosine_embedding_loss(a, b, target, reduction=reduction),
        (
            aa.tensor(first, device=device, requires_grad=True),
            aa.tensor(second, device=device, requires_grad=True),
        ),
    )


def test_loss_errors() -> None:
    long = aa.int64
    with pytest.raises(
        ValueError,
        match=r"Expected input batch_size \(3\) to match target "
        r"batch_size \(4\).",
    ):
        F.nll_loss(aa.zeros(3, 4), aa.zeros(4, dtype=long))
    with pytest.raises(
        RuntimeError,
        match=r"weight tensor should be defined either for all 4 "
        r"classes or no classes but got weight tensor of "
        r"shape: \[2\]",
    ):
        F.nll_loss(aa.zeros(3, 4), aa.zeros(3, dtype=long), weight=aa.ones(2))
    with pytest.raises(
        RuntimeError, match="expected target dtype to be Long or Byte, but got Float"
    ):
        F.nll_loss(aa.zeros(3, 4), aa.zeros(3))
    with pytest.raises(IndexError, match="Target 5 is out of bounds."):
        F.nll_loss(aa.zeros(3, 4), aa.full((3,), 5, dtype=long))
    with pytest.raises(RuntimeError, match=r"Expected target size \[3, 5\], got \[3, 4\]"):
        F.nll_loss(aa.zeros(3, 4, 5), aa.zeros(3, 4, dtype=long))
    with pytest.raises(ValueError, match="bad is not a valid value for reduction"):
        F.nll_loss(aa.zeros(3, 4), aa.zeros(3, dtype=long), reduction="bad")
    with pytest.raises(RuntimeError, match="label_smoothing must be between 0.0 and 1.0. Got: 1.5"):
        F.cross_entropy(aa.zeros(3, 4), aa.zeros(3, dtype=long), label_smoothing=1.5)
    with pytest.raises(
        RuntimeError,
        match="Expected floating point type for target with class probabilities, got Long",
    ):
        F.cross_entropy(aa.zeros(3, 4), aa.zeros(3, 4, dtype=long))
    with pytest.raises(
        ValueError,
        match=r"Using a target size \(torch.Size\(\[3, 1\]\)\) that is "
        r"different to the input size",
    ):
        F.binary_cross_entropy(aa.zeros(3), aa.zeros(3, 1))
    with pytest.raises(RuntimeError, match="all elements of input should be between 0 and 1"):
        F.binary_cross_entropy(aa.full((3,), 2.0), aa.zeros(3))
    with pytest.raises(
        ValueError,
        match=r"Target size \(torch.Size\(\[3, 1\]\)\) must be the "
        r"same as input size",
    ):
        F.binary_cross_entropy_with_logits(aa.zeros(3), aa.zeros(3, 1))
    with pytest.raises(
        RuntimeError, match="smooth_l1_loss does not support negative values for beta."
    ):
        F.smooth_l1_loss(aa.zeros(3), aa.zeros(3), beta=-1.0)
    with pytest.raises(
        RuntimeError, match="huber_loss does not support non-positive values for delta."
    ):
        F.huber_loss(aa.zeros(3), aa.zeros(3), delta=0.0)
    with pytest.raises(ValueError, match="bad is not a valid value for reduction"):
        F.kl_div(aa.zeros(3), aa.zeros(3), reduction="bad")
    with pytest.raises(
        RuntimeError, match="margin_ranking_loss : All input tensors should have same dimension"
    ):
        F.margin_ranking_loss(aa.zeros(3), aa.zeros(3, 1), aa.zeros(3))
    with pytest.raises(
        RuntimeError,
        match=r"1D target tensor expects 2D input tensors, but found "
        r"inputs with sizes \[3, 2, 2\] and \[3, 2, 2\].",
    ):
        F.cosine_embedding_loss(aa.zeros(3, 2, 2), aa.zeros(3, 2, 2), aa.zeros(3))
    with pytest.warns(
        UserWarning, match="This will likely lead to incorrect results due to broadcasting"
    ):
        F.l1_loss(aa.zeros(3, 1), aa.zeros(3))


def test_losses_refuse_mixed_devices() -> None:
    x, target = aa.zeros(3, 4), aa.zeros(3, dtype=aa.int64, device="sim:0")
    same = "expected all tensors to be on the same device, but found at least two devices"
    with pytest.raises(aa.DeviceError, match=f"nll_loss: {same}, cpu and sim:0"):
        F.nll_loss(x, target)
    with pytest.raises(RuntimeError, match=f"nll_loss: {same}, cpu and sim:0"):
        F.cross_entropy(x, aa.zeros(3, dtype=aa.int64), weight=aa.ones(4, device="sim:0"))
    with pytest.raises(RuntimeError, match=f"binary_cross_entropy: {same}"):
        F.binary_cross_entropy(aa.zeros(3), aa.zeros(3), weight=aa.ones(3, device="sim:0"))
    with pytest.raises(RuntimeError, match=f"cosine_embedding_loss: {same}"):
        F.cosine_embedding_loss(aa.zeros(3, 2), aa.zeros(3, 2), aa.ones(3, device="sim:0"))


def test_nll_loss_everything_ignored_is_nan(torch) -> None:
    out = F.nll_loss(aa.zeros(3, 4), aa.full((3,), -100, dtype=aa.int64))
    assert math.isnan(out.item())
    assert math.isnan(
        F.cross_entropy(
            aa.zeros(3, 4), aa.full((3,), -100, dtype=aa.int64), weight=aa.ones(4)
        ).item()
    )


# ----------------------------------------------------------------- modules
def _module_pairs(torch) -> list:
    tnn = torch.nn
    return [
        (aa.nn.SiLU(), tnn.SiLU()),
        (aa.nn.LeakyReLU(0.3), tnn.LeakyReLU(0.3)),
        (aa.nn.ELU(alpha=0.5), tnn.ELU(alpha=0.5)),
        (aa.nn.SELU(), tnn.SELU()),
        (aa.nn.CELU(2.0), tnn.CELU(2.0)),
        (aa.nn.Softplus(beta=0.5, threshold=5.0), tnn.Softplus(beta=0.5, threshold=5.0)),
        (aa.nn.Mish(), tnn.Mish()),
        (aa.nn.Hardtanh(-2.0, 2.0), tnn.Hardtanh(-2.0, 2.0)),
        (aa.nn.ReLU6(), tnn.ReLU6()),
        (aa.nn.Hardsigmoid(), tnn.Hardsigmoid()),
        (aa.nn.Hardswish(), tnn.Hardswish()),
        (aa.nn.LogSigmoid(), tnn.LogSigmoid()),
        (aa.nn.Softsign(), tnn.Softsign()),
        (aa.nn.Tanhshrink(), tnn.Tanhshrink()),
        (aa.nn.GLU(dim=0), tnn.GLU(dim=0)),
    ]


def test_activation_modules_match_torch(torch, device: str) -> None:
    data = X[:, :10]
    for ours, theirs in _module_pairs(torch):
        assert repr(ours) == repr(theirs)
        versus_torch(torch, device, ours, theirs, data)


def test_prelu_module_matches_torch(torch, device: str) -> None:
    ours = aa.nn.PReLU(3, init=0.1, device=device, dtype=aa.float64)
    theirs = torch.nn.PReLU(3, init=0.1, dtype=torch.float64)
    assert repr(ours) == repr(theirs)
    data = RNG.standard_normal((2, 3, 4))
    out, ref = ours(aa.tensor(data, device=device)), theirs(torch.tensor(data))
    out.sum().backward()
    ref.sum().backward()
    np.testing.assert_allclose(to_numpy(out), ref.detach().numpy())
    np.testing.assert_allclose(to_numpy(ours.weight.grad), theirs.weight.grad.numpy())
    assert [name for name, _ in ours.named_parameters()] == ["weight"]


def test_loss_modules_match_torch(torch, device: str) -> None:
    tnn = torch.nn
    weight, t_weight = _pair(torch, device, WEIGHT)
    target, t_target = _pair(torch, device, TARGET)
    probs, t_probs = _pair(torch, device, BINARY_TARGETS[:, :4])
    labels, t_labels = _pair(torch, device, np.array([1.0, -1.0, 1.0]))
    cases = [
        (
            aa.nn.NLLLoss(weight, reduction="sum"),
            tnn.NLLLoss(t_weight, reduction="sum"),
            [_log_probs(LOGITS)],
            [target],
            [t_target],
        ),
        (
            aa.nn.CrossEntropyLoss(weight, label_smoothing=0.2),
            tnn.CrossEntropyLoss(t_weight, label_smoothing=0.2),
            [LOGITS],
            [target],
            [t_target],
        ),
        (aa.nn.BCELoss(weight), tnn.BCELoss(t_weight), [BINARY_PROBS], [probs], [t_probs]),
        (
            aa.nn.BCEWithLogitsLoss(pos_weight=weight),
            tnn.BCEWithLogitsLoss(pos_weight=t_weight),
            [LOGITS[:3]],
            [probs],
            [t_probs],
        ),
        (
            aa.nn.L1Loss(reduction="none"),
            tnn.L1Loss(reduction="none"),
            [LOGITS[:3]],
            [probs],
            [t_probs],
        ),
        (
            aa.nn.SmoothL1Loss(beta=0.3),
            tnn.SmoothL1Loss(beta=0.3),
            [LOGITS[:3]],
            [probs],
            [t_probs],
        ),
        (aa.nn.HuberLoss(delta=0.4), tnn.HuberLoss(delta=0.4), [LOGITS[:3]], [probs], [t_probs]),
        (
            aa.nn.KLDivLoss(reduction="batchmean", log_target=True),
            tnn.KLDivLoss(reduction="batchmean", log_target=True),
            [_log_probs(LOGITS[:3])],
            [aa.tensor(_log_probs(LOGITS[2:]), device=device)],
            [torch.tensor(_log_probs(LOGITS[2:]))],
        ),
        (
            aa.nn.MarginRankingLoss(margin=0.2),
            tnn.MarginRankingLoss(margin=0.2),
            [LOGITS[0, :3], LOGITS[1, :3]],
            [labels],
            [t_labels],
        ),
        (
            aa.nn.CosineEmbeddingLoss(0.1),
            tnn.CosineEmbeddingLoss(0.1),
            [LOGITS[:3], LOGITS[2:]],
            [labels],
            [t_labels],
        ),
    ]
    for ours, theirs, arrays, constants, t_constants in cases:
        assert repr(ours) == repr(theirs)
        versus_torch(
            torch,
            device,
            lambda *t, m=ours, c=constants: m(*t, *c),
            lambda *t, m=theirs, c=t_constants: m(*t, *c),
            *arrays,
        )


def test_loss_module_legacy_arguments(torch) -> None:
    with pytest.warns(UserWarning, match="size_average and reduce args will be deprecated"):
        ours = aa.nn.L1Loss(size_average=False)
    assert ours.reduction == "sum"
    with pytest.warns(UserWarning):
        assert aa.nn.NLLLoss(reduce=False).reduction == "none"
    module = aa.nn.BCEWithLogitsLoss(weight=aa.ones(3), pos_weight=aa.ones(3))
    assert sorted(dict(module.named_buffers())) == ["pos_weight", "weight"]


SECOND_ORDER = {
    "binary_cross_entropy": lambda x, t: F.binary_cross_entropy(
        x.sigmoid(), t.sigmoid(), reduction="sum"
    ),
    "bce_with_logits": lambda x, t: F.binary_cross_entropy_with_logits(
        x, t.sigmoid(), pos_weight=aa.tensor([2.0, 0.5, 1.0], dtype=aa.float64, device=x.device)
    ),
    "smooth_l1": lambda x, t: F.smooth_l1_loss(x * x, t, beta=0.7),
    "huber": lambda x, t: F.huber_loss(x * x, t, delta=0.7),
    "kl_div": lambda x, t: F.kl_div(x.log_softmax(1), t.softmax(1), reduction="batchmean"),
    "margin_ranking": lambda x, t: F.margin_ranking_loss(
        x * x, t, aa.tensor([[1.0, -1.0, 1.0]], dtype=aa.float64, device=x.device)
    ),
    "leaky_relu": lambda x, t: F.leaky_relu(x, 0.3) * t,
    "hardswish": lambda x, t: F.hardswish(x) * t,
    "elu": lambda x, t: F.elu(x) * t,
    "prelu": lambda x, t: F.prelu(x * t, t[0]),
}


@pytest.mark.parametrize("name", sorted(SECOND_ORDER))
def test_second_order(device: str, name: str) -> None:
    inputs = (
        aa.tensor(RNG.standard_normal((2, 3)) + 0.2, device=device, requires_grad=True),
        aa.tensor(RNG.standard_normal((2, 3)), device=device, requires_grad=True),
    )
    assert gradgradcheck(SECOND_ORDER[name], inputs)
