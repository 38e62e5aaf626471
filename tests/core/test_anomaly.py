"""Anomaly mode: the forward traceback of a failing node in the error's notes, NaN checks in
backward that name the node, and how the mode is switched on."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

import autograd_async as aa

from .helpers import in_fresh_thread

# 0 / 0 on purpose: NumPy's floating-point warnings are expected here.
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


class Explodes(aa.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 1

    @staticmethod
    def backward(ctx, g):
        raise ValueError("exploded in backward")


def make_failing_graph(x):
    return Explodes.apply(x * 2).sum()  # the forward line anomaly mode must point at


def _forward_note(error: BaseException) -> str | None:
    notes = getattr(error, "__notes__", [])
    found = [n for n in notes if n.startswith("Traceback of forward call")]
    return found[0] if found else None


def test_error_in_backward_shows_the_forward_traceback():
    x = aa.tensor([1.0, 2.0], requires_grad=True)
    with aa.autograd.detect_anomaly():
        y = make_failing_graph(x)
        with pytest.raises(ValueError, match="exploded in backward") as info:
            y.backward()
    note = _forward_note(info.value)
    assert note is not None
    assert "make_failing_graph" in note
    assert "return Explodes.apply(x * 2).sum()" in note
    assert "test_error_in_backward_shows_the_forward_traceback" in note
    assert any("ExplodesBackward" in n for n in info.value.__notes__)


def test_op_error_in_backward_points_at_the_op_that_saved():
    x = aa.tensor([1.0, 2.0], requires_grad=True)
    with aa.autograd.set_detect_anomaly(True):
        h = x * 1
        y = (h * h).sum()  # MulBackward0 saves h
        h.add_(1)
        with pytest.raises(RuntimeError, match="modified by an inplace operation") as info:
            y.backward()
    note = _forward_note(info.value)
    assert note is not None and "y = (h * h).sum()" in note


def test_without_anomaly_mode_there_is_no_forward_traceback():
    x = aa.tensor([1.0, 2.0], requires_grad=True)
    y = make_failing_graph(x)
    with pytest.raises(ValueError) as info:
        y.backward()
    assert _forward_note(info.value) is None
    assert y.grad_fn.metadata == {}


def test_forward_traceback_is_kept_in_metadata():
    x = aa.tensor([1.0], requires_grad=True)
    with aa.autograd.detect_anomaly():
        y = x * 2
    trace = "".join(y.grad_fn.metadata["traceback_"])
    assert "y = x * 2" in trace


def test_the_mode_at_backward_decides_whether_the_note_is_added():
    x = aa.tensor([1.0, 2.0], requires_grad=True)
    with aa.autograd.detect_anomaly():
        y = make_failing_graph(x)
    with pytest.raises(ValueError) as info:
        y.backward()  # anomaly mode is off now
    assert _forward_note(info.value) is None


# ----------------------------------------------------------------------- NaN
def nan_program(lib, check_nan=True):
    x = lib.tensor([0.0, 1.0], requires_grad=True)
    with lib.autograd.detect_anomaly(check_nan=check_nan):
        y = (x / x).sum()
        y.backward()
    return x.grad


NAN_MESSAGE = "Function 'DivBackward0' returned nan values in its 1th output."


def test_nan_in_backward_is_reported_with_the_node_name():
    with pytest.raises(RuntimeError) as info:
        nan_program(aa)
    assert str(info.value) == NAN_MESSAGE
    assert _forward_note(info.value) is not None  # and where the division was made


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_nan_in_backward_is_reported_with_the_node_name_in_pytorch(torch):
    with pytest.raises(RuntimeError) as info:
        nan_program(torch)
    assert str(info.value) == NAN_MESSAGE


def test_check_nan_false_lets_nan_through():
    grad = nan_program(aa, check_nan=False)
    assert np.isnan(grad.tolist()[0])


def test_nan_is_not_checked_outside_anomaly_mode():
    x = aa.tensor([0.0, 1.0], requires_grad=True)
    (x / x).sum().backward()
    assert np.isnan(x.grad.tolist()[0])


def test_a_nan_in_the_forward_result_alone_is_not_a_backward_anomaly():
    x = aa.tensor([float("nan"), 1.0], requires_grad=True)
    with aa.autograd.detect_anomaly():
        x.sum().backward()  # the gradient of a sum is 1 even where the value is nan
    assert x.grad.tolist() == [1.0, 1.0]


# -------------------------------------------------------------------- switching
def test_set_detect_anomaly_takes_effect_when_called():
    def program():
        before = aa.autograd.is_anomaly_enabled()
        aa.autograd.set_detect_anomaly(True)
        on = aa.autograd.is_anomaly_enabled()
        aa.autograd.set_detect_anomaly(False)
        return before, on, aa.autograd.is_anomaly_enabled()

    assert in_fresh_thread(program) == (False, True, False)


def test_set_detect_anomaly_as_a_block_restores_the_previous_mode():
    with aa.autograd.set_detect_anomaly(True):
        assert aa.autograd.is_anomaly_enabled()
        with aa.autograd.set_detect_anomaly(False):
            assert not aa.autograd.is_anomaly_enabled()
        assert aa.autograd.is_anomaly_enabled()
    assert not aa.autograd.is_anomaly_enabled()


def test_set_detect_anomaly_takes_effect_when_called_in_pytorch(torch):
    def program():
        before = torch.is_anomaly_enabled()
        torch.autograd.set_detect_anomaly(True)
        on = torch.is_anomaly_enabled()
        torch.autograd.set_detect_anomaly(False)
        return before, on, torch.is_anomaly_enabled()

    assert in_fresh_thread(program) == (False, True, False)


async def test_anomaly_mode_is_scoped_to_its_asyncio_task():
    entered, checked = asyncio.Event(), asyncio.Event()
    seen = {}

    async def anomalous():
        with aa.autograd.detect_anomaly():
            entered.set()
            await checked.wait()
            seen["inside"] = aa.autograd.is_anomaly_enabled()

    async def plain():
        await entered.wait()
        seen["other"] = aa.autograd.is_anomaly_enabled()
        checked.set()

    await asyncio.gather(anomalous(), plain())
    assert seen == {"inside": True, "other": False}
