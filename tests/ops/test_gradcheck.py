"""gradcheck and gradgradcheck: they pass correct rules, catch wrong ones, warn for float32."""

from __future__ import annotations

import pytest

import autograd_async as aa
from autograd_async.autograd import Function, gradcheck, gradgradcheck
from autograd_async.autograd.gradcheck import GradcheckError


def _x(*shape: int) -> aa.Tensor:
    return aa.randn(*shape, dtype=aa.float64, requires_grad=True)


class WrongSquare(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * x  # should be 2 * g * x


def test_gradcheck_passes_correct_ops() -> None:
    a, b = _x(3, 4), _x(4, 2)
    assert gradcheck(lambda x, y: (x @ y).sigmoid(), (a, b))
    assert gradcheck(lambda x: (x.max(1).values, x.std(0)), (a,))
    assert gradgradcheck(lambda x, y: (x @ y).tanh(), (a, b))


def test_gradcheck_catches_a_wrong_rule() -> None:
    with pytest.raises(GradcheckError, match="Jacobian mismatch for output 0 with respect to inp"):
        gradcheck(WrongSquare.apply, (_x(3),))
    assert gradcheck(WrongSquare.apply, (_x(3),), raise_exception=False) is False


def test_gradcheck_warns_for_single_precision_and_runs() -> None:
    with pytest.warns(UserWarning, match="Input #0 requires gradient and is not a double"):
        assert gradcheck(lambda x: x * 2, (aa.randn(3, requires_grad=True),), eps=1e-2, atol=1e-2)
    with pytest.raises(ValueError, match="at least one input tensor to require gradient"):
        gradcheck(lambda x: x * 2, (aa.randn(3, dtype=aa.float64),))


def test_gradcheck_on_device(device: str) -> None:
    x = aa.randn(2, 3, dtype=aa.float64, device=device, requires_grad=True)
    assert gradcheck(lambda t: (t * t).sum(1).exp(), (x,))
