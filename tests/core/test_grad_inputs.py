"""`autograd.grad(outputs, inputs, ...)` and `backward(inputs=...)`: only the part of the graph that
leads to the inputs runs, and only the inputs receive gradients."""

from __future__ import annotations

import numpy as np
import pytest

import autograd_async as aa

from .helpers import node_name, values

# PyTorch warns when a non-leaf's .grad is read; reading it is what these tests do.
pytestmark = pytest.mark.filterwarnings("ignore:The .grad attribute of a Tensor that is not a leaf")


def _watch_all_nodes(roots, ran: list):
    """A pre-hook on every node reachable from `roots` that records the node's name when it runs."""
    seen, stack = set(), [r.grad_fn for r in roots]
    while stack:
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        node.register_prehook(lambda go, node=node: ran.append(node))
        stack.extend(n for n, _ in node.next_functions)
    return seen


def two_branches(lib):
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    w = lib.tensor([3.0, 4.0], requires_grad=True)
    a = x.tanh()
    b = (w * 2).exp()
    y = (a * 3).sum() + b.sum()
    return x, w, a, b, y


def test_grad_runs_only_nodes_that_lead_to_the_inputs():
    x, w, a, b, y = two_branches(aa)
    ran: list = []
    _watch_all_nodes([y], ran)
    (gx,) = aa.autograd.grad(y, x)
    names = sorted(node_name(n) for n in ran)
    # Add (root), Sum and Mul of x's branch, Tanh; nothing of w's branch, no accumulator.
    assert names == ["AddBackward0", "MulBackward0", "SumBackward0", "TanhBackward0"]
    assert all(n is not b.grad_fn for n in ran)
    np.testing.assert_allclose(values(gx), 3 * (1 - np.tanh([1.0, 2.0]) ** 2), rtol=1e-6)
    assert x.grad is None and w.grad is None


def test_grad_leaves_existing_grads_untouched():
    x, w, a, b, y = two_branches(aa)
    x.grad = aa.tensor([100.0, 100.0])
    aa.autograd.grad(y, [x, w])
    np.testing.assert_array_equal(values(x.grad), [100.0, 100.0])
    assert w.grad is None


def test_grad_of_non_leaf_inputs():
    x, w, a, b, y = two_branches(aa)
    ga, gb, gx = aa.autograd.grad(y, [a, b, x])
    np.testing.assert_allclose(values(ga), [3.0, 3.0])
    np.testing.assert_allclose(values(gb), [1.0, 1.0])
    np.testing.assert_allclose(values(gx), 3 * (1 - np.tanh([1.0, 2.0]) ** 2), rtol=1e-6)


def test_grad_matches_pytorch(torch):
    ours, theirs = two_branches(aa), two_branches(torch)
    for picks in ([0], [1], [2, 3], [0, 1, 2, 3]):
        got = aa.autograd.grad(ours[4], [ours[i] for i in picks], retain_graph=True)
        want = torch.autograd.grad(theirs[4], [theirs[i] for i in picks], retain_graph=True)
        for g, t in zip(got, want, strict=True):
            np.testing.assert_allclose(values(g), values(t), rtol=1e-6)


def test_grad_of_the_same_input_twice():
    x = aa.tensor([1.0, 2.0], requires_grad=True)
    g1, g2 = aa.autograd.grad((x * x).sum(), [x, x])
    np.testing.assert_allclose(values(g1), [2.0, 4.0])
    np.testing.assert_allclose(values(g2), [2.0, 4.0])


def test_grad_of_an_output_with_respect_to_itself_is_its_grad_output():
    x = aa.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    (g,) = aa.autograd.grad(y, y, grad_outputs=aa.tensor([5.0, 6.0]))
    np.testing.assert_array_equal(values(g), [5.0, 6.0])


def test_grad_outputs_give_a_vector_jacobian_product():
    x = aa.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * x
    (g,) = aa.autograd.grad(y, x, grad_outputs=aa.tensor([1.0, 0.0, -1.0]))
    np.testing.assert_allclose(values(g), [2.0, 0.0, -6.0])


def test_grad_of_several_outputs_sums():
    x = aa.tensor([1.0, 2.0], requires_grad=True)
    y1, y2 = (x * 2).sum(), x * x
    (g,) = aa.autograd.grad([y1, y2], x, grad_outputs=[None, aa.tensor([1.0, 1.0])])
    np.testing.assert_allclose(values(g), [4.0, 6.0])


def unused_program(lib, allow_unused):
    x = lib.tensor([1.0], requires_grad=True)
    w = lib.tensor([1.0], requires_grad=True)
    return lib.autograd.grad((x * 2).sum(), [x, w], allow_unused=allow_unused)


UNUSED_MESSAGE = (
    "The differentiated Tensor at index 1 appears to not have been used in the graph. "
    "Set allow_unused=True if this is the desired behavior."
)


def test_unused_input_is_an_error_unless_allowed():
    with pytest.raises(RuntimeError) as info:
        unused_program(aa, allow_unused=False)
    assert str(info.value) == UNUSED_MESSAGE
    gx, gw = unused_program(aa, allow_unused=True)
    np.testing.assert_allclose(values(gx), [2.0])
    assert gw is None


def test_unused_input_message_is_pytorchs(torch):
    with pytest.raises(RuntimeError) as info:
        unused_program(torch, allow_unused=False)
    assert str(info.value) == UNUSED_MESSAGE


def test_input_reached_only_by_a_none_gradient_counts_as_unused():
    x = aa.tensor([1.0, 2.0], requires_grad=True)
    c = aa.tensor([1.0, 1.0])
    y = (c * x.detach()).sum() + (x * 0).sum()  # x is used, with a zero gradient
    (g,) = aa.autograd.grad(y, x)
    np.testing.assert_array_equal(values(g), [0.0, 0.0])


# -------------------------------------------------------- backward(inputs=...)
def backward_inputs_program(lib, pick):
    x, w, a, b, y = two_branches(lib)
    chosen = [(x, w, a, b)[i] for i in pick]
    y.backward(inputs=chosen)
    return [None if t.grad is None else values(t.grad) for t in (x, w, a, b)]


@pytest.mark.parametrize("pick", [[0], [1], [2], [0, 3], [2, 0]])
def test_backward_inputs_accumulates_only_into_those(pick):
    grads = backward_inputs_program(aa, pick)
    for i, g in enumerate(grads):
        assert (g is not None) == (i in pick), (i, pick)


@pytest.mark.parametrize("pick", [[0], [1], [2], [0, 3], [2, 0]])
def test_backward_inputs_match_pytorch(torch, pick):
    ours, theirs = backward_inputs_program(aa, pick), backward_inputs_program(torch, pick)
    for g, t in zip(ours, theirs, strict=True):
        assert (g is None) == (t is None)
        if g is not None:
            np.testing.assert_allclose(g, t, rtol=1e-6)


def test_backward_inputs_runs_only_what_leads_to_them():
    x, w, a, b, y = two_branches(aa)
    ran: list = []
    _watch_all_nodes([y], ran)
    y.backward(inputs=[w])
    names = sorted(node_name(n) for n in ran)
    assert names == [
        "AccumulateGrad",
        "AddBackward0",
        "ExpBackward0",
        "MulBackward0",
        "SumBackward0",
    ]
    assert x.grad is None


def test_backward_inputs_accumulate_across_calls():
    x = aa.tensor([1.0, 2.0], requires_grad=True)
    y = x * 3
    y.retain_grad()
    out = y.sum()
    out.backward(inputs=[x, y], retain_graph=True)
    out.backward(inputs=[x, y])
    np.testing.assert_allclose(values(x.grad), [6.0, 6.0])
    np.testing.assert_allclose(values(y.grad), [2.0, 2.0])


def non_leaf_retains(lib):
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    y = x * 3
    out = y.sum()
    out.backward(inputs=[y], retain_graph=True)
    first = (y.retains_grad, values(y.grad), x.grad)
    out.backward()  # y keeps retaining its grad, as PyTorch's does
    return first, values(y.grad)


def test_backward_inputs_makes_a_non_leaf_retain_its_grad():
    (retains, first, x_grad), second = non_leaf_retains(aa)
    assert retains and x_grad is None
    np.testing.assert_array_equal(first, [1.0, 1.0])
    np.testing.assert_array_equal(second, [2.0, 2.0])


def test_backward_inputs_makes_a_non_leaf_retain_its_grad_in_pytorch(torch):
    (retains, first, x_grad), second = non_leaf_retains(torch)
    assert retains and x_grad is None
    np.testing.assert_array_equal(first, [1.0, 1.0])
    np.testing.assert_array_equal(second, [2.0, 2.0])


def test_backward_inputs_must_require_grad():
    x = aa.tensor([1.0], requires_grad=True)
    c = aa.tensor([1.0])
    with pytest.raises(RuntimeError, match="does not require grad"):
        (x * c).sum().backward(inputs=[c])


async def test_grad_async_and_backward_async():
    x, w, a, b, y = two_branches(aa)
    (gx,) = await aa.autograd.grad_async(y, x, retain_graph=True)
    np.testing.assert_allclose(values(gx), 3 * (1 - np.tanh([1.0, 2.0]) ** 2), rtol=1e-6)
    await y.backward_async(inputs=[w])
    assert x.grad is None
    np.testing.assert_allclose(values(w.grad), 2 * np.exp(2 * np.array([3.0, 4.0])), rtol=1e-6)
