"""Layers and functions called with something that is not a Tensor say so, naming themselves.

Without a check a Python list reaches the first op and fails with "'list' object has no attribute
'ndim'", which names neither the layer nor what it expected.
"""

from __future__ import annotations

import numpy as np
import pytest

import autograd_async as aa
from autograd_async import nn
from autograd_async.nn import functional as F  # noqa: N812

DATA = [[1.0, 2.0, 3.0]]


def layers() -> list[nn.Module]:
    """One of each built-in layer that takes a single tensor, built to accept DATA's shape."""
    return [
        nn.Linear(3, 2),
        nn.ReLU(),
        nn.GELU(),
        nn.Tanh(),
        nn.Sigmoid(),
        nn.Softmax(dim=1),
        nn.LogSoftmax(dim=1),
        nn.Dropout(),
        nn.Flatten(),
        nn.LayerNorm(3),
        nn.Embedding(4, 2),
    ]


@pytest.mark.parametrize("layer", layers(), ids=lambda m: type(m).__name__)
def test_a_list_passed_to_a_layer_is_a_type_error_naming_the_layer(layer):
    name = type(layer).__name__
    with pytest.raises(
        TypeError,
        match=rf"^{name}\.forward\(\): argument 'input' must be Tensor, "
        r"not list \(autograd_async\.tensor\(data\) makes one\)$",
    ):
        layer(DATA)


@pytest.mark.parametrize("layer", layers(), ids=lambda m: type(m).__name__)
def test_the_layer_still_runs_on_a_tensor(layer):
    x = aa.tensor([[1, 2, 3]]) if isinstance(layer, nn.Embedding) else aa.tensor(DATA)
    assert isinstance(layer(x), aa.Tensor)


def test_torch_refuses_a_list_with_a_type_error_too(torch):
    # Where PyTorch checks (most of its layers; Softmax and Flatten fail on an attribute instead).
    for layer in (torch.nn.Linear(3, 2), torch.nn.ReLU(), torch.nn.LayerNorm(3)):
        with pytest.raises(TypeError, match="must be Tensor, not list"):
            layer(DATA)


def test_other_librarys_arrays_are_named_with_their_module(torch):
    with pytest.raises(TypeError, match=r"not numpy\.ndarray"):
        nn.Linear(3, 2)(np.ones((1, 3), np.float32))
    with pytest.raises(TypeError, match=r"not torch\.Tensor"):
        nn.Linear(3, 2)(torch.ones(1, 3))


def test_the_layer_inside_a_sequential_is_named():
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    with pytest.raises(TypeError, match=r"^Linear\.forward\(\): argument 'input'"):
        model(DATA)


@pytest.mark.parametrize(
    ("loss", "target"),
    [(nn.MSELoss(), aa.ones(1, 3)), (nn.CrossEntropyLoss(), aa.tensor([0]))],
    ids=["MSELoss", "CrossEntropyLoss"],
)
def test_losses_name_the_argument_that_is_not_a_tensor(loss, target):
    name = type(loss).__name__
    with pytest.raises(TypeError, match=rf"^{name}\.forward\(\): argument 'input' must be Tensor"):
        loss(DATA, target)
    with pytest.raises(TypeError, match=rf"^{name}\.forward\(\): argument 'target' must be Tensor"):
        loss(aa.tensor(DATA), [0])


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: F.linear(DATA, aa.ones(2, 3)), "linear(): argument 'input' (position 1)"),
        (lambda: F.linear(aa.ones(3), DATA), "linear(): argument 'weight' (position 2)"),
        (lambda: F.softmax(DATA, dim=1), "softmax(): argument 'input' (position 1)"),
        (lambda: F.log_softmax(DATA, dim=1), "log_softmax(): argument 'input' (position 1)"),
        (lambda: F.mse_loss(DATA, aa.ones(1, 3)), "mse_loss(): argument 'input' (position 1)"),
        (lambda: F.mse_loss(aa.ones(1, 3), DATA), "mse_loss(): argument 'target' (position 2)"),
        (
            lambda: F.cross_entropy(DATA, aa.tensor([0])),
            "cross_entropy(): argument 'input' (position 1)",
        ),
    ],
    ids=[
        "linear-input",
        "linear-weight",
        "softmax",
        "log_softmax",
        "mse-input",
        "mse-target",
        "cross_entropy-input",
    ],
)
def test_functions_use_pytorchs_wording(call, message):
    with pytest.raises(TypeError) as error:
        call()
    assert str(error.value) == f"{message} must be Tensor, not list"


def test_linear_matches_pytorchs_message_exactly(torch):
    with pytest.raises(TypeError) as theirs:
        torch.nn.functional.linear(DATA, torch.ones(2, 3))
    with pytest.raises(TypeError) as ours:
        F.linear(DATA, aa.ones(2, 3))
    assert str(ours.value) == str(theirs.value)


def test_a_list_target_for_cross_entropy_is_a_type_error_about_the_target(torch):
    logits = [[0.5, 1.0], [2.0, -1.0]]
    with pytest.raises(
        TypeError,
        match=r"argument 'target' \(position 2\) must be Tensor, not "
        "list",
    ) as ours:
        F.cross_entropy(aa.tensor(logits), [0, 1])
    with pytest.raises(TypeError) as theirs:
        torch.nn.functional.cross_entropy(torch.tensor(logits), [0, 1])
    # PyTorch's kernel is called cross_entropy_loss; ours names the function that was called.
    assert str(theirs.value) == str(ours.value).replace("cross_entropy(", "cross_entropy_loss(")
