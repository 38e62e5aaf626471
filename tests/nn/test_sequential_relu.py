"""nn.Sequential runs a ReLU that follows a Linear over the Linear's output array.

The graph and every value must be what the unfused composition gives, and the reuse must not
happen where the Linear's output could be seen: a patched or subclassed module, a ReLU first.
"""

from __future__ import annotations

import numpy as np
import pytest

import autograd_async as aa
from autograd_async import nn
from autograd_async.autograd import gradgradcheck
from autograd_async.nn import functional as F  # noqa: N812

RNG = np.random.default_rng(11)
X = RNG.standard_normal((4, 5)).astype(np.float32)


def _net(dtype=aa.float32) -> nn.Sequential:
    aa.manual_seed(0)
    return nn.Sequential(
        nn.Linear(5, 6, dtype=dtype), nn.ReLU(), nn.Linear(6, 3, dtype=dtype), nn.ReLU()
    )


def _by_hand(net: nn.Sequential, x: aa.Tensor) -> aa.Tensor:
    """The same network through F.linear and F.relu, each result a new array."""
    h = x
    for module in net:
        h = F.linear(h, module.weight, module.bias) if isinstance(module, nn.Linear) else F.relu(h)
    return h


def _grads(net: nn.Sequential) -> list[np.ndarray]:
    return [p.grad.numpy().copy() for p in net.parameters()]


def test_values_gradients_and_graph_match_the_unfused_composition() -> None:
    net = _net()
    x = aa.tensor(X, requires_grad=True)
    out = net(x)
    out.sum().backward()
    fused = _grads(net), x.grad.numpy().copy()
    net.zero_grad()
    x2 = aa.tensor(X, requires_grad=True)
    expected = _by_hand(net, x2)
    expected.sum().backward()
    np.testing.assert_array_equal(out.detach().numpy(), expected.detach().numpy())
    for got, want in zip(fused[0], _grads(net), strict=True):
        np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(fused[1], x2.grad.numpy())
    names = []
    node = out.grad_fn
    while node is not None and node.name() != "AccumulateGrad":
        names.append(node.name())
        node = node.next_functions[0][0]
    assert names == ["ReluBackward0", "LinearBackward0", "ReluBackward0", "LinearBackward0"]
    assert out._version == 0


def test_retained_graph_and_inference_mode() -> None:
    net = _net()
    x = aa.tensor(X, requires_grad=True)
    loss = net(x).sum()
    loss.backward(retain_graph=True)
    once = _grads(net)
    loss.backward()
    for got, want in zip(_grads(net), once, strict=True):
        np.testing.assert_allclose(got, 2 * want, rtol=1e-6)
    with aa.no_grad():
        fused, unfused = net(aa.tensor(X)), _by_hand(net, aa.tensor(X))
    np.testing.assert_array_equal(fused.numpy(), unfused.numpy())


def test_double_backward_through_the_fused_pair() -> None:
    net = _net(dtype=aa.float64)
    x = aa.tensor(X.astype(np.float64), requires_grad=True)
    assert gradgradcheck(lambda t: net(t) ** 2, (x,))


def test_patched_linear_forward_sees_its_own_output_unchanged() -> None:
    net = _net()
    first = net[0]
    kept = []

    def forward(input):
        out = F.linear(input, first.weight, first.bias)
        kept.append(out)
        return out

    first.forward = forward
    net(aa.tensor(X))
    pre = X @ first.weight.detach().numpy().T + first.bias.detach().numpy()
    assert (pre < 0).any()
    np.testing.assert_allclose(kept[0].detach().numpy(), pre, rtol=1e-6, atol=1e-6)


def test_subclasses_are_called_as_written() -> None:
    kept = []

    class KeepingLinear(nn.Linear):
        def forward(self, input):
            out = super().forward(input)
            kept.append(out)
            return out

    class SeeingReLU(nn.ReLU):
        def forward(self, input):
            kept.append(input.detach().numpy().copy())
            return super().forward(input)

    aa.manual_seed(0)
    net = nn.Sequential(KeepingLinear(5, 6), nn.ReLU(), nn.Linear(6, 3), SeeingReLU())
    net(aa.tensor(X))
    assert (kept[0].detach().numpy() < 0).any()  # the ReLU after it wrote a new array
    assert (kept[1] < 0).any()  # and SeeingReLU saw its input


@pytest.mark.parametrize("inplace", [False, True])
def test_relu_first_leaves_the_callers_tensor_alone(inplace: bool) -> None:
    aa.manual_seed(0)
    net = nn.Sequential(nn.ReLU(inplace=False), nn.Linear(5, 3), nn.ReLU(inplace=inplace))
    x = aa.tensor(X)
    out = net(x)
    np.testing.assert_array_equal(x.numpy(), X)
    want = np.maximum(
        np.maximum(X, 0) @ net[1].weight.detach().numpy().T + net[1].bias.detach().numpy(), 0
    )
    np.testing.assert_allclose(out.detach().numpy(), want, rtol=1e-6, atol=1e-6)
