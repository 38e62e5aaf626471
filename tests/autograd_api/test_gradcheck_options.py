"""gradcheck/gradgradcheck options with PyTorch's meaning, each program run on both libraries:
float32 inputs warn and run, fast_mode, nondet_tol, atol/rtol, raise_exception and
check_undefined_grad."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import autograd_async as aa


def _functions(lib):
    """Custom functions built on `lib`: a wrong rule, a noisy one, one refusing undefined grads."""

    class WrongSquare(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * x  # should be 2 * g * x

    class NoisyDouble(lib.autograd.Function):
        calls = [0]

        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            NoisyDouble.calls[0] += 1
            return g * (2 + 1e-7 * NoisyDouble.calls[0])  # differs on every call

    class TwoOutputsNeedOneGrad(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            return x * 2, x * 3

        @staticmethod
        def backward(ctx, g1, g2):
            if g1 is None and g2 is None:
                raise RuntimeError("both output gradients are undefined")
            return (0 if g1 is None else g1 * 2) + (0 if g2 is None else g2 * 3)

    return WrongSquare, NoisyDouble, TwoOutputsNeedOneGrad


def _x(lib, dtype_name="float64"):
    data = np.array([0.3, -1.2, 0.8])
    return lib.tensor(data, dtype=getattr(lib, dtype_name), requires_grad=True)


def _outcome(lib, call):
    """(result or exception type, whether a 'not double precision' warning was raised)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = call()
        except Exception as exc:  # noqa: BLE001 - compared between the libraries
            result = type(exc).__name__
    warned = any("is not a double precision" in str(w.message) for w in caught)
    return result, warned


def _programs(lib):
    wrong, noisy, two = _functions(lib)
    gc, ggc = lib.autograd.gradcheck, lib.autograd.gradgradcheck
    sin = lambda t: t.sin()  # noqa: E731
    return {
        "float32 default tolerances": lambda: gc(sin, (_x(lib, "float32"),), raise_exception=False),
        "float32 loose tolerances": lambda: gc(
            sin, (_x(lib, "float32"),), eps=1e-2, atol=1e-2, rtol=1e-2
        ),
        "float64": lambda: gc(sin, (_x(lib),)),
        "wrong rule returns False": lambda: gc(wrong.apply, (_x(lib),), raise_exception=False),
        "wrong rule raises": lambda: gc(wrong.apply, (_x(lib),)),
        "wrong rule, huge atol": lambda: gc(wrong.apply, (_x(lib),), atol=10.0),
        "wrong rule, huge rtol": lambda: gc(wrong.apply, (_x(lib),), rtol=1.0, atol=1.0),
        "fast mode float64": lambda: gc(sin, (_x(lib),), fast_mode=True),
        "fast mode wrong rule": lambda: gc(
            wrong.apply, (_x(lib),), fast_mode=True, raise_exception=False
        ),
        "fast mode float32": lambda: gc(
            sin, (_x(lib, "float32"),), fast_mode=True, eps=1e-2, atol=1e-2, rtol=1e-2
        ),
        "nondeterministic, tol 0": lambda: gc(noisy.apply, (_x(lib),), raise_exception=False),
        "nondeterministic, tol 1e-3": lambda: gc(noisy.apply, (_x(lib),), nondet_tol=1e-3),
        "nondet fast mode": lambda: gc(
            noisy.apply, (_x(lib),), fast_mode=True, raise_exception=False
        ),
        "undefined grads checked": lambda: gc(two.apply, (_x(lib),), raise_exception=False),
        "undefined grads not checked": lambda: gc(
            two.apply, (_x(lib),), check_undefined_grad=False
        ),
        "gradgradcheck float64": lambda: ggc(lambda t: (t * t).tanh(), (_x(lib),)),
        "gradgradcheck fast": lambda: ggc(lambda t: (t * t).tanh(), (_x(lib),), fast_mode=True),
        "gradgradcheck float32": lambda: ggc(
            lambda t: t * t, (_x(lib, "float32"),), eps=1e-2, atol=1e-2, rtol=1e-2
        ),
        "gradgradcheck wrong": lambda: ggc(wrong.apply, (_x(lib),), raise_exception=False),
    }


@pytest.mark.parametrize("name", list(_programs(aa)))
def test_gradcheck_option_matches_pytorch(torch, name):
    ours = _outcome(aa, _programs(aa)[name])
    theirs = _outcome(torch, _programs(torch)[name])
    if theirs[0] == "GradcheckError":  # PyTorch's class lives in torch.autograd.gradcheck
        assert ours[0] == "GradcheckError"
    assert ours == theirs


def test_gradcheck_error_names_what_failed():
    wrong, noisy, two = _functions(aa)
    gc = aa.autograd.gradcheck
    with pytest.raises(RuntimeError, match="Backward is not reentrant"):
        gc(noisy.apply, (_x(aa),))
    with pytest.raises(RuntimeError, match="handle undefined output grads"):
        gc(two.apply, (_x(aa),))
    with pytest.raises(RuntimeError, match="computed in fast mode"):
        gc(wrong.apply, (_x(aa),), fast_mode=True)
