"""A gradient crossing devices is a set-once future that its consumer's worker takes when set."""

from __future__ import annotations

import asyncio
import threading

import numpy as np
import pytest

import autograd_async as aa
from autograd_async.engine import device_worker
from autograd_async.engine.handoff import GradientFuture


def _future(delivered: list) -> GradientFuture:
    return GradientFuture(None, "node", 1, "src", None, 0, delivered.append)


def test_a_future_is_delivered_once_when_set_and_cannot_be_set_again():
    delivered: list = []
    future = _future(delivered)
    assert not future.done() and delivered == []
    with pytest.raises(asyncio.InvalidStateError):
        future.result()
    future.set_result(np.ones(2))
    assert future.done() and delivered == [future]
    np.testing.assert_array_equal(future.result(), np.ones(2))
    with pytest.raises(asyncio.InvalidStateError):
        future.set_result(np.zeros(2))
    with pytest.raises(asyncio.InvalidStateError):
        future.set_exception(RuntimeError("late"))
    assert delivered == [future]  # the consumer saw it once, with the first value
    np.testing.assert_array_equal(future.result(), np.ones(2))


def test_racing_settlers_set_a_future_exactly_once():
    for _ in range(200):
        delivered: list = []
        future = _future(delivered)
        wins: list = []
        start = threading.Barrier(4)

        def settle(value: int, start=start, future=future, wins=wins) -> None:
            start.wait(5)
            try:
                future.set_result(value)
                wins.append(value)
            except asyncio.InvalidStateError:
                pass

        threads = [threading.Thread(target=settle, args=(i,)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(5)
        assert len(wins) == 1 and delivered == [future] and future.result() == wins[0]


def test_an_error_settled_into_a_handoff_fails_that_backward_only(monkeypatch):
    class FailingCopy(GradientFuture):
        __slots__ = ()

        def set_result(self, gradient):
            self.set_exception(RuntimeError("the copy to the consumer's device failed"))

    x = aa.tensor([0.5, 1.5], requires_grad=True)
    loss = (x.to("sim:0") * 3.0).to("cpu").sum()
    monkeypatch.setattr(device_worker, "GradientFuture", FailingCopy)
    with pytest.raises(RuntimeError, match="the copy to the consumer's device failed"):
        loss.backward(retain_graph=True)
    monkeypatch.undo()
    loss.backward()  # the engine and both workers still serve
    np.testing.assert_allclose(x.grad.numpy(), [3.0, 3.0])


def test_cross_device_gradients_travel_as_futures_taken_on_the_consumers_thread(monkeypatch):
    taken: list[tuple[str, str]] = []

    class Observed(GradientFuture):
        """Notes where the receiving worker takes the gradient out (already settled)."""

        __slots__ = ()

        def result(self):
            assert self.done()
            taken.append((str(self.node.device), threading.current_thread().name))
            return super().result()

    monkeypatch.setattr(device_worker, "GradientFuture", Observed)
    x = aa.tensor([1.0, 2.0], requires_grad=True)
    (x.to("sim:0").to("sim:1") * 2.0).to("cpu").sum().backward()
    assert {dev for dev, _ in taken} == {"sim:1", "sim:0", "cpu"}
    assert all(thread == f"autograd-async:{dev}" for dev, thread in taken)
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 2.0])
