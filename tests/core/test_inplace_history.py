"""In-place ops and history, as PyTorch: the node an in-place op leaves, CopySlices on a view's
base, retain_grad following the tensor, the errors PyTorch raises and their wording."""

from __future__ import annotations

import pytest

from .fidelity import before_hint, error_of

INPLACE = {
    "add_": lambda a: a.add_(1),
    "sub_": lambda a: a.sub_(1),
    "mul_": lambda a: a.mul_(2),
    "div_": lambda a: a.div_(2),
    "relu_": lambda a: a.relu_(),
    "clamp_": lambda a: a.clamp_(0, 1),
    "zero_": lambda a: a.zero_(),
    "fill_": lambda a: a.fill_(1),
    "copy_": lambda a: a.copy_(a.detach() * 0 + 1),
    "setitem": lambda a: a.__setitem__(0, 2.0),
}
NODE_AFTER = {
    "add_": ("AddBackward0", "Add"),
    "sub_": ("SubBackward0", "Sub"),
    "mul_": ("MulBackward0", "Mul"),
    "div_": ("DivBackward0", "Div"),
    "relu_": ("ReluBackward0", "Relu"),
    "clamp_": ("ClampBackward1", "Clamp1"),
    "zero_": ("ZeroBackward0", "Zero"),
    "fill_": ("FillBackward2", "Fill2"),
    "copy_": ("torch::autograd::CopyBackwards", "torch::autograd::CopyBackwards"),
    "setitem": ("torch::autograd::CopySlices", "torch::autograd::CopySlices"),
}


@pytest.mark.parametrize("op", list(INPLACE))
def test_the_node_an_inplace_op_leaves(lib, op):
    t = lib.tensor([1.0, 2.0], requires_grad=True)
    a = t.exp()
    INPLACE[op](a)
    assert a.grad_fn.name() == NODE_AFTER[op][0]


@pytest.mark.parametrize("op", list(INPLACE))
def test_version_error_names_the_op_that_made_the_value(lib, op):
    t = lib.tensor([1.0, 2.0], requires_grad=True)
    a = t.exp()
    y = (a * a).sum()
    INPLACE[op](a)
    kind, message = error_of(y.backward)
    assert kind == "RuntimeError"
    assert before_hint(message) == (
        "one of the variables needed for gradient computation has been modified by an inplace "
        f"operation: [torch.FloatTensor [2]], which is output 0 of {NODE_AFTER[op][1]}, is at "
        "version 1; expected version 0 instead."
    )


def test_version_error_of_a_leaf_names_no_op(lib):
    t = lib.tensor([1.0, 2.0], requires_grad=True)
    w = lib.tensor([[1.0, 2.0]], dtype=lib.float64)
    y = (t.double() * w).sum()
    w.mul_(2)
    _, message = error_of(y.backward)
    assert before_hint(message) == (
        "one of the variables needed for gradient computation has been modified by an inplace "
        "operation: [torch.DoubleTensor [1, 2]] is at version 1; expected version 0 instead."
    )


def test_inplace_through_a_view_gives_the_base_copy_slices(lib):
    x = lib.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    b = x.clone()
    v = b[1:3]
    v.mul_(2)
    names = (
        b.grad_fn.name(),
        [fn.name() if fn is not None else None for fn, _ in b.grad_fn.next_functions],
        v.grad_fn.name(),
        v.grad_fn.next_functions[0][0] is b.grad_fn,
        v._base is b,
    )
    copy_slices = "torch::autograd::CopySlices"
    assert names == (copy_slices, ["CloneBackward0", None], "AsStridedBackward0", True, True)
    b.sum().backward(retain_graph=True)
    assert x.grad.tolist() == [1.0, 2.0, 2.0, 1.0]
    x.grad = None
    v.sum().backward()
    assert x.grad.tolist() == [0.0, 2.0, 2.0, 0.0]


def test_inplace_through_a_view_with_another_input(lib):
    x = lib.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    w = lib.tensor([3.0, 5.0], requires_grad=True)
    b = x * 1
    b[1:3].mul_(w)
    b[0:2].add_(w)
    (b * lib.tensor([1.0, 2.0, 3.0, 4.0])).sum().backward()
    assert (x.grad.tolist(), w.grad.tolist()) == ([1.0, 6.0, 15.0, 4.0], [5.0, 11.0])


def test_view_of_a_tensor_without_grad_gains_history(lib):
    w = lib.tensor([2.0, 3.0], requires_grad=True)
    b = lib.zeros(4)
    b[1:3].copy_(w * 2)
    assert (b.requires_grad, b.grad_fn.name()) == (True, "torch::autograd::CopySlices")
    (b * lib.tensor([1.0, 2.0, 3.0, 4.0])).sum().backward()
    assert w.grad.tolist() == [4.0, 6.0]


def test_setitem_into_a_view_rebases_the_root_and_the_view(lib):
    x = lib.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    w = lib.tensor([10.0], requires_grad=True)
    b = x * 1
    v = b[1:]
    v[1:2] = w * 2
    names = (b.grad_fn.name(), v.grad_fn.name())
    assert names == ("torch::autograd::CopySlices", "AsStridedBackward0")
    (v * lib.tensor([1.0, 2.0, 3.0])).sum().backward()
    assert (x.grad.tolist(), w.grad.tolist()) == ([0.0, 1.0, 0.0, 3.0], [4.0])


# ------------------------------------------------------------ behaviour 3
def test_retain_grad_follows_the_tensor_through_an_inplace_op(lib):
    t = lib.tensor([1.0], requires_grad=True)
    a = t.clone()
    a.retain_grad()
    a.mul_(2)
    a.sum().backward()
    assert (a.grad.tolist(), t.grad.tolist(), a.retains_grad) == ([1.0], [2.0], True)


def test_a_tensor_hook_stays_with_the_old_value(lib):
    t = lib.tensor([1.0], requires_grad=True)
    a = t.clone()
    seen = []
    a.register_hook(lambda g: seen.append(g.tolist()))
    a.mul_(3)
    a.sum().backward()
    assert seen == [[3.0]]


def test_a_hook_on_a_view_before_an_inplace_op_on_it_does_not_fire(lib):
    x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
    base = x.clone()
    v = base[:2]
    seen = []
    v.register_hook(lambda g: seen.append("view hook"))
    v.mul_(2)
    base.sum().backward(retain_graph=True)
    v.sum().backward()
    assert (seen, x.grad.tolist()) == ([], [4.0, 4.0, 1.0])


# ------------------------------------------------------------ behaviour 5
def test_view_of_a_leaf_taken_before_requires_grad(lib):
    x = lib.zeros(3)
    v = x[:2]
    x.requires_grad_()
    assert error_of(lambda: v.mul_(2)) == (
        "RuntimeError",
        "a view of a leaf Variable that requires grad is being used in an in-place operation.",
    )


def test_view_of_a_leaf_taken_after_requires_grad(lib):
    x = lib.zeros(3, requires_grad=True)
    assert error_of(lambda: x[:2].add_(1)) == (
        "RuntimeError",
        "a view of a leaf Variable that requires grad is being used in an in-place operation.",
    )


def test_view_of_a_leaf_under_no_grad_may_change(lib):
    x = lib.zeros(3, requires_grad=True)
    with lib.no_grad():
        x[:2].add_(1)
    assert x.tolist() == [1.0, 1.0, 0.0] and x._version == 1


# ------------------------------------------------------------ behaviour 7
OVERLAP = (
    "unsupported operation: more than one element of the written-to tensor refers to a single "
    "memory location. Please clone() the tensor before performing the operation."
)
EXPANDED = {
    "expand": lambda lib: lib.tensor([1.0, 2.0]).expand(3, 2),
    "expand_as": lambda lib: lib.tensor([[1.0], [2.0]]).expand_as(lib.zeros(2, 3)),
    "broadcast_to": lambda lib: lib.broadcast_to(lib.tensor([1.0, 2.0]), (2, 2)),
}
WRITES = {
    "mul_": lambda e: e.mul_(2),
    "add_": lambda e: e.add_(1),
    "copy_": lambda e: e.copy_(e.detach().clone()),
    "setitem": lambda e: e.__setitem__(Ellipsis, 1.0),
}


@pytest.mark.parametrize("make", list(EXPANDED))
@pytest.mark.parametrize("write", list(WRITES))
def test_writing_into_an_expanded_view_raises_pytorchs_error(lib, make, write):
    e = EXPANDED[make](lib)
    assert error_of(lambda: WRITES[write](e)) == ("RuntimeError", OVERLAP)


@pytest.mark.parametrize("make", list(EXPANDED))
def test_an_expanded_view_can_be_written_after_clone(lib, make):
    e = EXPANDED[make](lib)
    c = e.clone()
    c.mul_(2)
    c[0] = 0.0
    assert c.tolist() == [[0.0] * c.shape[1]] + (e * 2).tolist()[1:]


def test_a_row_of_an_expanded_view_without_repeats_writes_through(lib):
    x = lib.tensor([1.0, 2.0])
    e = x.expand(3, 2)
    e[0] = lib.tensor([5.0, 6.0])
    assert (x.tolist(), e.tolist(), x._version) == ([5.0, 6.0], [[5.0, 6.0]] * 3, 1)


def test_zero_and_fill_may_write_an_expanded_view(lib):
    x = lib.tensor([1.0, 2.0])
    x.expand(3, 2).fill_(4.0)
    assert x.tolist() == [4.0, 4.0]
    x.expand(2, 2).zero_()
    assert (x.tolist(), x._version) == ([0.0, 0.0], 2)


def test_expanded_view_with_grad_backward(lib):
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    e = x.expand(3, 2).clone()
    e.mul_(lib.tensor([[1.0], [2.0], [3.0]]))
    e.sum().backward()
    assert x.grad.tolist() == [6.0, 6.0]


# ----------------------------------------------------------- behaviour 10
MULTI = {
    "unbind": (lambda x: x.unbind(), "Output 0 of Unbind"),
    "split": (lambda x: x.split([1, 3]), "Output 0 of SplitWithSizes"),
    "split_int": (lambda x: x.split(2), "Output 0 of Split"),
    "chunk": (lambda x: x.chunk(2), "Output 0 of Split"),
}


@pytest.mark.parametrize("name", list(MULTI))
def test_inplace_on_an_output_of_a_multi_view_op_raises(lib, name):
    x = lib.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    make, head = MULTI[name]
    piece = make(x.clone())[0]
    assert error_of(lambda: piece.mul_(2)) == (
        "RuntimeError",
        f"{head} is a view and is being modified inplace. This view is the output of a function "
        "that returns multiple views. Such functions do not allow the output views to be "
        "modified inplace. You should replace the inplace operation by an out-of-place one.",
    )


@pytest.mark.parametrize("name", list(MULTI))
def test_multi_view_outputs_without_grad_may_change(lib, name):
    x = lib.tensor([1.0, 2.0, 3.0, 4.0])
    piece = MULTI[name][0](x)[0]
    piece.mul_(10)
    assert x.tolist()[0] == 10.0


def test_detach_inplace_of_a_saved_tensor_makes_backward_raise(lib):
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    a = x * 2
    y = (a * a).sum()
    a.detach_()
    assert error_of(y.backward) == (
        "RuntimeError",
        "Trying to use a saved tensor that has been detached in-place, i.e. with .detach_().This "
        "is not supported, please use out-of-place `.detach()` instead",
    )


def test_detach_inplace_of_a_view_raises(lib):
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    kind, message = error_of(lambda: (x * 2)[0:1].detach_())
    assert kind == "RuntimeError"
    assert message.startswith("Can't detach views in-place. Use detach() instead.")


def test_detach_inplace_of_an_unsaved_tensor(lib):
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    a = x * 2
    a.detach_()
    assert (a.requires_grad, a.grad_fn, a.is_leaf) == (False, None, True)


# ------------------------------------------------------------ broadcasting
@pytest.mark.parametrize(
    "shapes, dim",
    [(((3,), (4,)), 0), (((3, 2), (4, 1)), 0), (((2, 3), (4,)), 1), (((5, 2, 3), (2, 4)), 2)],
)
def test_shapes_that_do_not_broadcast_raise_runtime_error(lib, shapes, dim):
    a, b = lib.ones(*shapes[0]), lib.ones(*shapes[1])
    expected = (
        "RuntimeError",
        f"The size of tensor a ({shapes[0][-1] if dim == len(shapes[0]) - 1 else shapes[0][0]}) "
        f"must match the size of tensor b ({shapes[1][-1] if dim >= len(shapes[0]) - 1 else 4}) "
        f"at non-singleton dimension {dim}",
    )
    assert error_of(lambda: a + b) == expected
    assert error_of(lambda: a * b) == expected


def test_inplace_with_shapes_that_do_not_broadcast(lib):
    a = lib.ones(3)
    assert error_of(lambda: a.mul_(lib.ones(4))) == (
        "RuntimeError",
        "The size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 0",
    )


def test_broadcast_error_names_the_op():
    import autograd_async as aa

    with pytest.raises(RuntimeError) as info:
        aa.ones(2, 3) - aa.ones(4)
    assert any("sub" in note and "[2, 3]" in note for note in info.value.__notes__)


# ------------------------------------------------- views of a changed base
def test_an_overlapping_view_taken_earlier_sees_the_inplace_op(lib):
    x = lib.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    b = x.clone()
    v1, v2 = b[0:2], b[1:3]
    v1.mul_(2)
    v2.sum().backward()
    assert (x.grad.tolist(), v2.grad_fn.name()) == ([0.0, 2.0, 1.0, 0.0], "AsStridedBackward0")


def test_a_view_taken_before_the_base_changed(lib):
    x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
    b = x * 1
    v = b[1:]
    b.mul_(lib.tensor([1.0, 5.0, 7.0]))
    (v * lib.tensor([1.0, 10.0])).sum().backward()
    assert x.grad.tolist() == [0.0, 5.0, 70.0]


def test_a_view_of_a_base_that_gained_history(lib):
    w = lib.tensor([5.0, 6.0], requires_grad=True)
    b = lib.zeros(4)
    v = b[1:3]
    b[0:2].copy_(w)
    (v * lib.tensor([1.0, 10.0])).sum().backward()
    assert w.grad.tolist() == [0.0, 1.0]


def test_a_stale_view_used_under_no_grad_is_regenerated_later(lib):
    x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
    b = x * 1
    v = b[1:]
    b.mul_(lib.tensor([1.0, 5.0, 7.0]))
    with lib.no_grad():
        v * 2
    (v * lib.tensor([1.0, 10.0])).sum().backward()
    assert x.grad.tolist() == [0.0, 5.0, 70.0]


def test_reading_a_stale_views_grad_fn_regenerates_it(lib):
    x = lib.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    b = x.clone()
    v1, v2 = b[0:2], b[1:3]
    v1.mul_(2)
    fn = v2.grad_fn
    assert (fn.name(), fn.next_functions[0][0] is b.grad_fn) == ("AsStridedBackward0", True)


def test_a_view_of_a_base_that_gained_history_requires_grad(lib):
    w = lib.tensor([5.0, 6.0], requires_grad=True)
    b = lib.zeros(4)
    v = b[2:4]
    assert not v.requires_grad
    b[0:2].copy_(w)
    assert (v.requires_grad, v.grad_fn.name(), v.is_leaf) == (True, "AsStridedBackward0", False)


def test_a_view_made_under_no_grad_refuses_an_inplace_change_with_grad(lib):
    x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
    b = x * 2
    with lib.no_grad():
        v = b[0:2]
    assert error_of(lambda: v.mul_(2)) == (
        "RuntimeError",
        "A view was created in no_grad mode and is being modified inplace with grad mode enabled. "
        "Given that this use case is ambiguous and error-prone, it is forbidden. You can clarify "
        "your code by moving both the view and the inplace either both inside the no_grad block "
        "(if you don't want the inplace to be tracked) or both outside (if you want the inplace "
        "to be tracked).",
    )
    with lib.no_grad():
        v.mul_(2)
    assert b.tolist() == [4.0, 8.0, 6.0]
