"""Where NumPy's rules would quietly differ from PyTorch's, nn.functional warns or refuses as
PyTorch does: a broadcasting mse_loss, mixed dtypes in linear and mse_loss, softmax without dim."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

import autograd_async as aa
from autograd_async import nn
from autograd_async.nn import functional as F  # noqa: N812


def only_warning(call) -> warnings.WarningMessage:
    """Run `call` and return the one warning it gave."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        call()
    assert len(caught) == 1, [str(w.message) for w in caught]
    return caught[0]


def no_warning(call):
    """Run `call`, failing on any warning; returns its result."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return call()


def as_our_shapes(message: str) -> str:
    """PyTorch's message with its `torch.Size([4, 1])` written as ours prints, `Size([4, 1])`."""
    return message.replace("torch.Size(", "Size(")


# ------------------------------------------------------------------------ mse_loss broadcasting
@pytest.mark.parametrize(
    ("input_shape", "target_shape"), [((4, 1), (4,)), ((4, 1), ()), ((3,), (2, 3))]
)
def test_mse_loss_warns_as_pytorch_does_when_the_target_broadcasts(
    torch, input_shape, target_shape
):
    x, t = np.ones(input_shape, np.float32), np.zeros(target_shape, np.float32)
    ours = only_warning(lambda: F.mse_loss(aa.tensor(x), aa.tensor(t)))
    theirs = only_warning(lambda: torch.nn.functional.mse_loss(torch.tensor(x), torch.tensor(t)))
    assert ours.category is theirs.category is UserWarning
    assert str(ours.message) == as_our_shapes(str(theirs.message))
    assert ours.filename == __file__  # points at the caller, not at nn/functional.py


def test_mse_loss_warning_text():
    warning = only_warning(lambda: F.mse_loss(aa.ones(4, 1), aa.ones(4)))
    assert str(warning.message) == (
        "Using a target size (Size([4])) that is different to the input size (Size([4, 1])). "
        "This will "
        "likely lead to incorrect results due to broadcasting. Please ensure they have the same "
        "size."
    )


def test_mse_loss_of_equal_shapes_and_the_module_form():
    assert float(no_warning(lambda: F.mse_loss(aa.ones(4, 1), aa.zeros(4, 1)))) == 1.0
    warning = only_warning(lambda: nn.MSELoss()(aa.ones(4, 1), aa.ones(4)))
    assert "different to the input size (Size([4, 1]))" in str(warning.message)


# --------------------------------------------------------------------------- linear dtypes
@pytest.mark.parametrize("dtype", ["float64", "int64", "float16", "int32"])
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("shape", [(2, 3), (3,), (4, 2, 3)])
def test_linear_refuses_an_input_of_another_dtype_than_its_weight(torch, dtype, bias, shape):
    data = np.ones(shape, dtype)
    with pytest.raises(RuntimeError) as ours:
        nn.Linear(3, 2, bias=bias)(aa.tensor(data))
    with pytest.raises(RuntimeError) as theirs:
        torch.nn.Linear(3, 2, bias=True)(torch.tensor(data))
    # PyTorch's biased path gives this text (its unbiased matmul path words it differently).
    assert str(ours.value) == str(theirs.value)
    assert re.fullmatch(
        r"mat1 and mat2 must have the same dtype, but got \w+ and Float", str(ours.value)
    )


def test_linear_refuses_a_bias_of_another_dtype(torch):
    x, w, b = np.ones((2, 3), np.float32), np.ones((2, 3), np.float32), np.ones(2, np.float64)
    with pytest.raises(RuntimeError) as ours:
        F.linear(aa.tensor(x), aa.tensor(w), aa.tensor(b))
    with pytest.raises(RuntimeError) as theirs:
        torch.nn.functional.linear(torch.tensor(x), torch.tensor(w), torch.tensor(b))
    assert (
        str(ours.value)
        == str(theirs.value)
        == ("self and mat2 must have the same dtype, but got Double and Float")
    )


def test_linear_of_matching_dtypes_keeps_the_dtype():
    layer = nn.Linear(3, 2, dtype=aa.float64)
    out = layer(aa.tensor(np.ones((2, 3))))
    assert out.dtype == np.float64
    assert nn.Linear(3, 2)(aa.ones(2, 3)).dtype == np.float32


# ------------------------------------------------------------------- softmax without dim
@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
@pytest.mark.parametrize("ndim", [0, 1, 2, 3, 4])
def test_softmax_without_dim_warns_and_picks_pytorchs_dim(torch, name, ndim):
    data = np.random.default_rng(ndim).standard_normal((2, 3, 4, 5)[:ndim]).astype(np.float32)
    ours_fn, theirs_fn = getattr(F, name), getattr(torch.nn.functional, name)
    got = []
    ours = only_warning(lambda: got.append(ours_fn(aa.tensor(data))))
    want = []
    theirs = only_warning(lambda: want.append(theirs_fn(torch.tensor(data))))
    assert (
        str(ours.message)
        == str(theirs.message)
        == (
            f"Implicit dimension choice for {name} has been deprecated. Change the call to include "
            "dim=X as an argument."
        )
    )
    assert ours.category is theirs.category is UserWarning
    assert ours.filename == __file__
    np.testing.assert_allclose(np.asarray(got[0]), want[0].numpy(), rtol=1e-6, atol=1e-6)


def test_softmax_with_dim_is_silent_and_the_modules_warn_without_one():
    no_warning(lambda: F.softmax(aa.ones(2, 3), dim=1))
    no_warning(lambda: nn.LogSoftmax(dim=0)(aa.ones(2, 3)))
    assert "for softmax" in str(only_warning(lambda: nn.Softmax()(aa.ones(2, 3))).message)
    assert "for log_softmax" in str(only_warning(lambda: nn.LogSoftmax()(aa.ones(2, 3))).message)


# ---------------------------------------------------------------------- mse_loss dtypes
@pytest.mark.parametrize(
    ("input_dtype", "target_dtype"),
    [
        ("float32", "int64"),
        ("float32", "bool"),
        ("float64", "float32"),
        ("float32", "float64"),
        ("int64", "float32"),
        ("float16", "int64"),
    ],
)
@pytest.mark.parametrize("reduction", ["mean", "none"])
def test_mse_loss_result_dtype_is_pytorchs(torch, input_dtype, target_dtype, reduction):
    x = (
        np.array([0.5, 1.5, -2.0, 3.0], input_dtype)
        if input_dtype != "int64"
        else np.array([0, 1, -2, 3])
    )
    t = np.array([1, 0, 1, 1], target_dtype)
    ours = F.mse_loss(aa.tensor(x), aa.tensor(t), reduction=reduction)
    theirs = torch.nn.functional.mse_loss(torch.tensor(x), torch.tensor(t), reduction=reduction)
    assert str(ours.dtype) == str(theirs.dtype).removeprefix("torch.")
    np.testing.assert_allclose(np.asarray(ours), theirs.numpy(), rtol=1e-3)


def test_mse_loss_with_an_integer_target_gives_the_input_its_own_dtype_of_gradient(torch):
    x = aa.tensor([0.5, 1.5, -2.0], requires_grad=True)
    loss = F.mse_loss(x, aa.tensor([1, 0, 1]))
    assert loss.dtype == np.float32
    loss.backward()
    tx = torch.tensor([0.5, 1.5, -2.0], requires_grad=True)
    torch.nn.functional.mse_loss(tx, torch.tensor([1, 0, 1])).backward()
    assert x.grad.dtype == np.float32
    np.testing.assert_allclose(np.asarray(x.grad), tx.grad.numpy(), rtol=1e-6)


def test_mse_loss_of_integers_is_refused_as_in_pytorch(torch):
    with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
        torch.nn.functional.mse_loss(torch.tensor([1, 2]), torch.tensor([1, 3]))
    with pytest.raises(NotImplementedError, match="\"mse_loss\" not implemented for 'Long'"):
        F.mse_loss(aa.tensor([1, 2]), aa.tensor([1, 3]))
    with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
        F.mse_loss(aa.tensor(np.array([1, 2], np.int32)), aa.tensor([1, 3]))


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_softmax_of_a_zero_dim_tensor_and_its_gradient_match_pytorch(torch, name):
    x = aa.tensor(0.3, requires_grad=True)
    y = getattr(x, name)(0)
    y.backward()
    tx = torch.tensor(0.3, requires_grad=True)
    ty = getattr(tx, name)(0)
    ty.backward()
    assert float(y) == pytest.approx(ty.item()) and float(x.grad) == pytest.approx(tx.grad.item())
