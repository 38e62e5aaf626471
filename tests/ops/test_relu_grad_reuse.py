"""ReLU's backward writes into the gradient that linear's backward made for it alone.

Every test here builds `loss = (linear(relu(linear(x, W1, b1)), W2) * r).sum()` and checks the
gradients against NumPy, in the cases where the reused gradient is also seen elsewhere: hooks on
either node, retain_grad, grad() capturing it, a kept graph, a caller's gradient. Each would read
a masked gradient (zeros where the ReLU output is 0) if the reuse ignored it.
"""

from __future__ import annotations

import numpy as np
import pytest

import autograd_async as aa
from autograd_async.autograd import Function, gradgradcheck
from autograd_async.nn import functional as F  # noqa: N812
from autograd_async.ops.elementwise import ReluBackward0

RNG = np.random.default_rng(7)
X = RNG.standard_normal((4, 5)).astype(np.float32)
W1 = RNG.standard_normal((6, 5)).astype(np.float32)
B1 = RNG.standard_normal(6).astype(np.float32)
W2 = RNG.standard_normal((3, 6)).astype(np.float32)
R = RNG.standard_normal((4, 3)).astype(np.float32)


def _expected() -> dict[str, np.ndarray]:
    z = X @ W1.T + B1
    h = np.maximum(z, 0)
    assert (h == 0).any() and (h > 0).any()  # the mask matters
    gh = R @ W2
    gz = gh * (h > 0)
    return {"h": h, "gh": gh, "gW1": gz.T @ X, "gb1": gz.sum(0), "gW2": R.T @ h, "gx": gz @ W1}


def _leaves() -> dict[str, aa.Tensor]:
    return {
        name: aa.tensor(value.copy(), requires_grad=True)
        for name, value in (("x", X), ("W1", W1), ("b1", B1), ("W2", W2))
    }


def _hidden(p: dict[str, aa.Tensor]) -> aa.Tensor:
    return F.relu(F.linear(p["x"], p["W1"], p["b1"]))


def _loss(p: dict[str, aa.Tensor], h: aa.Tensor) -> aa.Tensor:
    return (F.linear(h, p["W2"]) * aa.tensor(R)).sum()


def _check_leaf_grads(p: dict[str, aa.Tensor], times: float = 1.0) -> None:
    want = _expected()
    for name, key in (("x", "gx"), ("W1", "gW1"), ("b1", "gb1"), ("W2", "gW2")):
        np.testing.assert_allclose(p[name].grad.numpy(), times * want[key], rtol=1e-5, atol=1e-5)


@pytest.fixture
def reuses(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Records, per ReluBackward0 run, whether it returned the very array it was given."""
    seen: list[bool] = []
    original = ReluBackward0.backward

    def spy(self: ReluBackward0, g):
        out = original(self, g)
        seen.append(out is g)
        return out

    monkeypatch.setattr(ReluBackward0, "backward", spy)
    return seen


def test_reuses_the_gradient_when_nothing_else_sees_it(reuses: list[bool]) -> None:
    p = _leaves()
    _loss(p, _hidden(p)).backward()  # the hidden tensor is gone by the time relu runs backward
    _check_leaf_grads(p)
    assert reuses == [True]


def test_kept_hidden_tensor_keeps_a_new_array(reuses: list[bool]) -> None:
    p = _leaves()
    h = _hidden(p)
    _loss(p, h).backward()
    _check_leaf_grads(p)
    assert reuses == [False]


def test_retain_grad_sees_the_unmasked_gradient(reuses: list[bool]) -> None:
    p = _leaves()
    h = _hidden(p)
    h.retain_grad()
    _loss(p, h).backward()
    np.testing.assert_allclose(h.grad.numpy(), _expected()["gh"], rtol=1e-5, atol=1e-5)
    _check_leaf_grads(p)


def test_tensor_hook_keeps_the_unmasked_gradient(reuses: list[bool]) -> None:
    p = _leaves()
    kept = []
    h = _hidden(p)
    h.register_hook(kept.append)
    loss = _loss(p, h)
    del h  # the hook stays on the node: it alone must stop the reuse
    loss.backward()
    np.testing.assert_allclose(kept[0].numpy(), _expected()["gh"], rtol=1e-5, atol=1e-5)
    _check_leaf_grads(p)
    assert reuses == [False]


@pytest.mark.parametrize("kind", ["post", "pre"])
def test_relu_node_hooks_keep_the_unmasked_gradient(reuses: list[bool], kind: str) -> None:
    p = _leaves()
    kept = []
    h = _hidden(p)
    if kind == "post":
        h.grad_fn.register_hook(lambda grad_inputs, grad_outputs: kept.append(grad_outputs[0]))
    else:
        h.grad_fn.register_prehook(lambda grad_outputs: kept.append(grad_outputs[0]))
    loss = _loss(p, h)
    del h
    loss.backward()
    got = kept[0].numpy() if isinstance(kept[0], aa.Tensor) else kept[0]
    np.testing.assert_allclose(got, _expected()["gh"], rtol=1e-5, atol=1e-5)
    _check_leaf_grads(p)
    assert reuses == [False]


def test_linear_post_hook_keeps_the_unmasked_gradient(reuses: list[bool]) -> None:
    p = _leaves()
    kept = []
    loss = _loss(p, _hidden(p))
    linear_node = loss.grad_fn.next_functions[0][0].next_functions[0][0]
    assert linear_node.name() == "LinearBackward0"
    linear_node.register_hook(lambda grad_inputs, grad_outputs: kept.append(grad_inputs[0]))
    loss.backward()
    got = kept[0].numpy() if isinstance(kept[0], aa.Tensor) else kept[0]
    np.testing.assert_allclose(got, _expected()["gh"], rtol=1e-5, atol=1e-5)
    _check_leaf_grads(p)
    assert reuses == [False]


def test_grad_capturing_the_hidden_gradient_gets_it_unmasked() -> None:
    p = _leaves()
    h = _hidden(p)
    gh, gw1 = aa.autograd.grad(_loss(p, h), [h, p["W1"]])
    want = _expected()
    np.testing.assert_allclose(gh.numpy(), want["gh"], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(gw1.numpy(), want["gW1"], rtol=1e-5, atol=1e-5)


def test_captured_gradient_routed_back_later_is_not_overwritten() -> None:
    """grad() captures h's gradient without running relu; it must not stay marked as reusable."""

    class Give(Function):
        @staticmethod
        def forward(ctx, t, g):
            ctx.g = g
            return t * 1

        @staticmethod
        def backward(ctx, grad):
            return ctx.g, None

    p = _leaves()
    h = _hidden(p)
    (gh,) = aa.autograd.grad(_loss(p, h), [h])
    before = gh.numpy().copy()
    out = Give.apply(h, gh)
    del h
    out.sum().backward()
    np.testing.assert_array_equal(gh.numpy(), before)


def test_kept_graph_gives_the_same_gradients_twice(reuses: list[bool]) -> None:
    p = _leaves()
    loss = _loss(p, _hidden(p))
    loss.backward(retain_graph=True)
    loss.backward()
    _check_leaf_grads(p, times=2.0)


def test_caller_gradient_is_left_alone(reuses: list[bool]) -> None:
    p = _leaves()
    h = _hidden(p)
    y = F.linear(h, p["W2"])
    del h
    given = aa.tensor(R.copy())
    y.backward(given)
    np.testing.assert_array_equal(given.numpy(), R)
    _check_leaf_grads(p)
    assert reuses == [True]  # linear's own new array, not the caller's


def test_hidden_gradient_from_two_consumers(reuses: list[bool]) -> None:
    p = _leaves()
    h = _hidden(p)
    loss = _loss(p, h) + (h * 2.0).sum()
    del h
    loss.backward()
    want = _expected()
    gz = (want["gh"] + 2.0) * (want["h"] > 0)
    np.testing.assert_allclose(p["W1"].grad.numpy(), gz.T @ X, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(p["x"].grad.numpy(), gz @ W1, rtol=1e-5, atol=1e-5)


def test_double_backward_through_linear_relu_linear() -> None:
    rng = np.random.default_rng(3)
    x = aa.tensor(rng.standard_normal((3, 4)), requires_grad=True)
    w1 = aa.tensor(rng.standard_normal((5, 4)), requires_grad=True)
    w2 = aa.tensor(rng.standard_normal((2, 5)), requires_grad=True)

    def net(x, w1, w2):
        return F.linear(F.relu(F.linear(x, w1)), w2) ** 2

    assert gradgradcheck(net, (x, w1, w2))
