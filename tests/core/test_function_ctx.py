"""Custom Functions as PyTorch's: mark_dirty, mark_non_differentiable, set_materialize_grads,
once_differentiable, the torch 2 `setup_context` style, calling a `grad_fn`, and the refusal of
a gradient on another device."""

from __future__ import annotations

import pytest

from .fidelity import error_of


def _double_in_place(lib):
    class DoubleInPlace(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            x.mul_(2)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 2

    return DoubleInPlace


def test_mark_dirty_rebases_the_input_and_bumps_its_version(lib):
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    a = x.clone()
    out = _double_in_place(lib).apply(a)
    observed = (out is a, a._version, a.grad_fn.name(), a.grad_fn.next_functions[0][0].name())
    assert observed == (True, 2, "DoubleInPlaceBackward", "CloneBackward0")
    a.sum().backward()
    assert (a.tolist(), x.grad.tolist()) == ([2.0, 4.0], [2.0, 2.0])


def test_mark_dirty_on_a_view_gives_the_base_copy_slices(lib):
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    b = x.clone()
    v = b[0:1]
    _double_in_place(lib).apply(v)
    names = (b.grad_fn.name(), v.grad_fn.name())
    assert names == ("torch::autograd::CopySlices", "AsStridedBackward0")
    b.sum().backward()
    assert (b.tolist(), x.grad.tolist()) == ([2.0, 2.0], [2.0, 1.0])


def test_mark_dirty_on_a_leaf_that_requires_grad_raises(lib):
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    assert error_of(lambda: _double_in_place(lib).apply(x)) == (
        "RuntimeError",
        "a leaf Variable that requires grad has been used in an in-place operation.",
    )


def test_mark_dirty_on_a_view_of_a_leaf_that_requires_grad_raises(lib):
    x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
    assert error_of(lambda: _double_in_place(lib).apply(x[0:2])) == (
        "RuntimeError",
        "a view of a leaf Variable that requires grad is being used in an in-place operation.",
    )


def test_mark_dirty_without_grad_only_bumps_the_version(lib):
    a = lib.tensor([1.0, 2.0])
    out = _double_in_place(lib).apply(a)
    assert (out is a, a._version, a.grad_fn, a.tolist()) == (True, 2, None, [2.0, 4.0])


def test_a_dirty_input_must_be_returned(lib):
    class Forgets(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.mark_dirty(x)
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g

    x = lib.tensor([1.0], requires_grad=True)
    assert error_of(lambda: Forgets.apply(x.clone())) == (
        "RuntimeError",
        "Some elements marked as dirty during the forward method were not returned as output. "
        "The inputs that are modified inplace must all be outputs of the Function.",
    )


def test_mark_non_differentiable_and_materialized_grads(lib):
    seen = []

    class TwoOut(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            a, b = x * 2, x * 3
            ctx.mark_non_differentiable(b)
            return a, b

        @staticmethod
        def backward(ctx, ga, gb):
            seen.append((ga.tolist(), gb.tolist()))
            return ga * 2

    x = lib.tensor([1.0, 2.0], requires_grad=True)
    a, b = TwoOut.apply(x)
    assert (a.requires_grad, b.requires_grad, b.grad_fn) == (True, False, None)
    a.sum().backward()
    assert (seen, x.grad.tolist()) == ([([1.0, 1.0], [0.0, 0.0])], [2.0, 2.0])


def test_set_materialize_grads_false_passes_none(lib):
    seen = []

    class TwoOut(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            return x * 2, x * 3

        @staticmethod
        def backward(ctx, ga, gb):
            seen.append((ga.tolist(), gb))
            return ga * 2

    x = lib.tensor([1.0, 2.0], requires_grad=True)
    a, _ = TwoOut.apply(x)
    a.sum().backward()
    assert (seen, x.grad.tolist()) == ([([1.0, 1.0], None)], [2.0, 2.0])


def _square_once(lib):
    class SquareOnce(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x**2

        @staticmethod
        @lib.autograd.function.once_differentiable
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            ctx.grad_mode_seen = lib.is_grad_enabled()
            return 2 * x * g

    return SquareOnce


def test_once_differentiable_runs_without_grad(lib):
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    y = _square_once(lib).apply(x)
    (gx,) = lib.autograd.grad(y.sum(), x, create_graph=True)
    assert (gx.tolist(), gx.requires_grad, y.grad_fn.grad_mode_seen) == ([2.0, 4.0], False, False)


def test_once_differentiable_refuses_a_second_derivative(lib):
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    y = _square_once(lib).apply(x)
    g = lib.ones(2, requires_grad=True)
    (gx,) = lib.autograd.grad(y, x, grad_outputs=g, create_graph=True)
    assert (gx.requires_grad, gx.tolist()) == (True, [2.0, 4.0])
    assert error_of(lambda: gx.sum().backward()) == (
        "RuntimeError",
        "trying to differentiate twice a function that was marked with @once_differentiable",
    )


def test_setup_context_style(lib):
    class Scale(lib.autograd.Function):
        @staticmethod
        def forward(x, k):
            return x * k

        @staticmethod
        def setup_context(ctx, inputs, output):
            x, k = inputs
            ctx.k = k
            ctx.save_for_backward(x)
            ctx.output_shape = tuple(output.shape)

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * ctx.k + x * 0, None

    x = lib.tensor([1.0, 2.0], requires_grad=True)
    y = Scale.apply(x, 3.0)
    y.sum().backward()
    observed = (x.grad.tolist(), y.grad_fn.name(), y.grad_fn.output_shape)
    assert observed == ([3.0, 3.0], "ScaleBackward", (2,))


def test_calling_a_grad_fn_runs_its_backward(lib):
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    g_mul = (x * 3).grad_fn(lib.ones(2))
    g_exp = x.exp().grad_fn(lib.ones(2))
    g_sum = (x * x).sum().grad_fn(lib.tensor(1.0))
    assert (g_mul[0].tolist(), g_mul[1]) == ([3.0, 3.0], None)
    assert [round(v, 4) for v in g_exp.tolist()] == [2.7183, 7.3891]
    assert (g_exp.grad_fn.name(), g_sum.tolist()) == ("MulBackward0", [1.0, 1.0])


def test_calling_a_grad_fn_leaves_broadcast_gradients_unreduced(lib):
    a = lib.tensor([[1.0], [2.0]], requires_grad=True)
    b = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
    ga, gb = (a + b).grad_fn(lib.ones(2, 3))
    assert ga.tolist() == gb.tolist() == [[1.0, 1.0, 1.0], [1.0, 1.0, 1.0]]


def test_a_gradient_on_another_device_is_refused(lib):
    other = "meta" if lib.__name__ == "torch" else "sim:0"

    class Moves(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, g):
            return g.to(other)

    x = lib.tensor([1.0, 2.0], requires_grad=True)
    assert error_of(lambda: Moves.apply(x).sum().backward()) == (
        "RuntimeError",
        "Function MovesBackward returned an invalid gradient at index 0 - expected device cpu "
        f"but got {other}",
    )
    assert x.grad is None


@pytest.mark.parametrize("returned", ["int", "tensor", "self", "none"])
def test_post_accumulate_grad_hook_must_return_none(lib, returned):
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    results = {"int": lambda t: 5, "tensor": lambda t: t * 0, "self": lambda t: t}
    x.register_post_accumulate_grad_hook(results.get(returned, lambda t: None))
    expected = {
        "int": ("TypeError", "expected Variable, but hook returned 'int'"),
        "tensor": ("RuntimeError", "Tensor post accumulate grad hooks should return None."),
    }
    assert error_of(lambda: (x * 2).sum().backward()) == expected.get(returned, ("", ""))
