"""Hooks in PyTorch's order: tensor hooks, retain_grad, node pre-hooks, the node, post-hooks, then
AccumulateGrad's post-accumulate hooks; removal through handles; hooks under `grad()`.

Each program records a trace and runs in both libraries; the traces are pinned here and compared
with PyTorch's when it is installed.
"""

from __future__ import annotations

import numpy as np
import pytest

import autograd_async as aa

from .helpers import node_name, values


def full_program(lib):
    """Every kind of hook on a two-node chain over one leaf."""
    trace = []
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    z = y.tanh()
    out = z.sum()
    y.register_hook(lambda g: trace.append("y.hook"))
    y.retain_grad()
    y.register_hook(lambda g: trace.append(("y.hook2 sees y.grad", y.grad is not None)))
    y.grad_fn.register_prehook(lambda go: trace.append("Mul.pre"))
    y.grad_fn.register_hook(lambda gi, go: trace.append(("Mul.post", len(gi), len(go))))
    z.grad_fn.register_prehook(lambda go: trace.append("Tanh.pre"))
    z.grad_fn.register_hook(lambda gi, go: trace.append("Tanh.post"))
    acc = y.grad_fn.next_functions[0][0]
    acc.register_prehook(lambda go: trace.append("Acc.pre"))
    acc.register_hook(lambda gi, go: trace.append(("Acc.post", len(gi), len(go))))
    x.register_hook(lambda g: trace.append("x.hook"))
    x.register_post_accumulate_grad_hook(
        lambda t: trace.append(("x.post_accumulate", t.grad is not None))
    )
    out.backward()
    return trace


FULL_TRACE = [
    "Tanh.pre",
    "Tanh.post",
    "y.hook",
    ("y.hook2 sees y.grad", False),  # retain_grad runs after every tensor hook
    "Mul.pre",
    ("Mul.post", 2, 1),
    "x.hook",  # a leaf's hooks run before its accumulator's pre-hooks
    "Acc.pre",
    ("x.post_accumulate", True),
    ("Acc.post", 0, 1),
]


def test_hook_order():
    assert full_program(aa) == FULL_TRACE


def test_hook_order_is_pytorchs(torch):
    assert full_program(torch) == FULL_TRACE


def replacing_program(lib):
    """Hooks that replace gradients at each stage; returns the resulting gradients."""
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    w = lib.tensor([3.0, 4.0], requires_grad=True)
    y = x * w
    y.retain_grad()
    y.register_hook(lambda g: g * 10)  # tensor hook: y's gradient
    y.register_hook(lambda g: g + 1)  # chained on the previous hook's result
    y.grad_fn.register_prehook(lambda go: (go[0] * 2,))  # node pre-hook: MulBackward0's input
    y.grad_fn.register_hook(lambda gi, go: (gi[0], gi[1] * 0 - 1))  # post-hook: w's gradient
    x.register_hook(lambda g: g * 100)  # leaf hook: x.grad
    (y * y).sum().backward()
    return [values(x.grad), values(w.grad), values(y.grad)]


def test_hooks_replace_gradients():
    gx, gw, gy = replacing_program(aa)
    # d(sum y^2)/dy = 2y = [6, 16]; tensor hooks: *10 then +1 -> [61, 161] (y.grad sees that);
    # pre-hook doubles -> [122, 322]; x gets 122 * w * 100, w gets -1 from the post-hook.
    np.testing.assert_allclose(gy, [61.0, 161.0])
    np.testing.assert_allclose(gx, [122 * 3 * 100, 322 * 4 * 100])
    np.testing.assert_allclose(gw, [-1.0, -1.0])


def test_hooks_replace_gradients_like_pytorch(torch):
    for ours, theirs in zip(replacing_program(aa), replacing_program(torch), strict=True):
        np.testing.assert_allclose(ours, theirs)


def test_hook_returning_none_keeps_the_gradient():
    x = aa.tensor([1.0, 2.0], requires_grad=True)
    seen = []
    x.register_hook(lambda g: seen.append(values(g)))
    (x * 3).sum().backward()
    np.testing.assert_allclose(seen[0], [3.0, 3.0])
    np.testing.assert_allclose(values(x.grad), [3.0, 3.0])


def test_post_hook_sees_grad_inputs_and_grad_outputs():
    x = aa.tensor([1.0, 2.0], requires_grad=True)
    c = aa.tensor([5.0, 7.0])
    y = x * c
    seen = {}

    def post(grad_inputs, grad_outputs):
        seen["in"] = [None if g is None else values(g) for g in grad_inputs]
        seen["out"] = [values(g) for g in grad_outputs]

    y.grad_fn.register_hook(post)
    y.backward(aa.tensor([1.0, 10.0]))
    np.testing.assert_allclose(seen["in"][0], [5.0, 70.0])
    assert seen["in"][1] is None  # c does not require grad
    np.testing.assert_allclose(seen["out"][0], [1.0, 10.0])


def test_removed_hooks_are_not_called():
    x = aa.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    calls = []
    handles = [
        y.register_hook(lambda g: calls.append("tensor")),
        y.grad_fn.register_prehook(lambda go: calls.append("pre")),
        y.grad_fn.register_hook(lambda gi, go: calls.append("post")),
        x.register_hook(lambda g: calls.append("leaf")),
        x.register_post_accumulate_grad_hook(lambda t: calls.append("post_accumulate")),
    ]
    kept = y.register_hook(lambda g: calls.append("kept"))
    for handle in handles:
        handle.remove()
    handles[0].remove()  # removing twice is harmless
    y.sum().backward()
    assert calls == ["kept"]
    kept.remove()


def test_handle_as_context_manager():
    x = aa.tensor([1.0], requires_grad=True)
    calls = []
    with x.register_hook(lambda g: calls.append(1)):
        (x * 2).sum().backward()
    (x * 2).sum().backward()
    assert calls == [1]


def test_leaf_hook_registered_before_or_after_its_graph_exists():
    calls = []
    x = aa.tensor([1.0], requires_grad=True)
    x.register_hook(lambda g: calls.append("before"))
    y = (x * 2).sum()
    x.register_hook(lambda g: calls.append("after"))
    y.backward()
    assert calls == ["before", "after"]


def test_post_accumulate_grad_hook_sees_the_accumulated_gradient():
    x = aa.tensor([1.0, 2.0], requires_grad=True)
    seen = []
    x.register_post_accumulate_grad_hook(lambda t: seen.append(values(t.grad)))
    (x * 2).sum().backward()
    (x * 3).sum().backward()
    np.testing.assert_allclose(seen[0], [2.0, 2.0])
    np.testing.assert_allclose(seen[1], [5.0, 5.0])


def test_retain_grad_keeps_a_copy_and_accumulates():
    x = aa.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    y.retain_grad()
    assert y.retains_grad and not x.retains_grad
    out = (y * y).sum()
    out.backward(retain_graph=True)
    np.testing.assert_allclose(values(y.grad), [4.0, 8.0])
    out.backward()
    np.testing.assert_allclose(values(y.grad), [8.0, 16.0])
    np.testing.assert_allclose(values(x.grad), [16.0, 32.0])  # y.grad is not x's gradient buffer


def test_retain_grad_on_a_leaf_is_a_no_op():
    x = aa.tensor([1.0], requires_grad=True)
    x.retain_grad()
    (x * 2).sum().backward()
    np.testing.assert_allclose(values(x.grad), [2.0])


def size_changing_hook_program(lib):
    """A tensor hook that returns a gradient of another size: PyTorch's error names the hook."""
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2

    def shrink(g):
        return g.sum()

    y.register_hook(shrink)
    with pytest.raises(RuntimeError, match=r"^hook 'shrink' has changed the size of value"):
        y.sum().backward()


def test_hook_that_changes_the_size_raises_pytorchs_error():
    size_changing_hook_program(aa)


def test_hook_that_changes_the_size_is_an_error_in_pytorch(torch):
    size_changing_hook_program(torch)


# --------------------------------------------------------------- hooks in grad()
def grad_program(lib):
    """grad() of a non-leaf with hooks everywhere: which run, and what grad() returns."""
    trace = []
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    w = lib.tensor([3.0, 4.0], requires_grad=True)
    a = x * 2
    b = w * 3
    b_sum = b.sum()
    out = (a * a).sum() + b_sum
    for name, t in (("a", a), ("b", b), ("b_sum", b_sum), ("x", x), ("w", w)):
        t.register_hook(lambda g, name=name: trace.append(f"{name}.hook"))
    for t in (a, b, b_sum, out):
        node = t.grad_fn
        node.register_prehook(lambda go, node=node: trace.append(f"{node_name(node)}.pre"))
    a.register_hook(lambda g: g * 10)
    (ga,) = lib.autograd.grad(out, a)
    return trace, values(ga), x.grad is None and w.grad is None


GRAD_TRACE = ["AddBackward0.pre", "a.hook"]


def test_grad_runs_only_what_leads_to_the_inputs():
    trace, ga, untouched = grad_program(aa)
    # The root runs; the target's tensor hooks run (and shape the result) but its node does not;
    # w's branch is never run, and no leaf's .grad changes.
    assert trace == GRAD_TRACE
    np.testing.assert_allclose(ga, [40.0, 80.0])
    assert untouched


def test_grad_runs_only_what_leads_to_the_inputs_in_pytorch(torch):
    trace, ga, untouched = grad_program(torch)
    assert trace == GRAD_TRACE
    np.testing.assert_allclose(ga, [40.0, 80.0])
    assert untouched


def leaf_hook_in_grad(lib):
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    x.register_hook(lambda g: g * 10)
    (g,) = lib.autograd.grad((x * 3).sum(), x)
    return values(g)


def test_leaf_hooks_shape_what_grad_returns():
    np.testing.assert_allclose(leaf_hook_in_grad(aa), [30.0, 30.0])


def test_leaf_hooks_shape_what_grad_returns_in_pytorch(torch):
    np.testing.assert_allclose(leaf_hook_in_grad(torch), [30.0, 30.0])


def test_hooks_get_tensors_with_history_under_create_graph():
    x = aa.tensor([1.0, 2.0], requires_grad=True)
    y = x * x
    seen = []
    y.register_hook(lambda g: seen.append(g))
    (y * x).sum().backward(create_graph=True)
    assert isinstance(seen[0], aa.Tensor) and seen[0].requires_grad
    np.testing.assert_allclose(values(x.grad), [3.0, 12.0])
    assert x.grad.requires_grad
