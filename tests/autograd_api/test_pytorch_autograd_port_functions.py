"""PyTorch's autograd tests, ported (see test_pytorch_autograd_port.py for the list left out):
custom Functions (save_for_backward, mark_dirty, mark_non_differentiable, set_materialize_grads,
once_differentiable, returning inputs, views and duplicates), reentrant backward and anomaly
mode."""

from __future__ import annotations

import warnings

import pytest

from .pytorch_port import assert_equal


def _function_test(ag, cls):
    x = ag.randn(5, 5, requires_grad=True)
    y = ag.randn(5, 5, requires_grad=True)
    result = cls.apply(x, 2, y)
    go = ag.ones((), requires_grad=True)
    result.sum().backward(go, create_graph=True)
    assert_equal(x.grad, y + ag.ones(5, 5))
    assert_equal(y.grad, x + ag.ones(5, 5) * 2)
    assert x.grad.grad_fn is not None
    assert y.grad.grad_fn is not None
    return x, y


def test_function(ag):
    class MyFunction(ag.autograd.Function):
        @staticmethod
        def forward(ctx, tensor1, pyscalar, tensor2):
            ctx.pyscalar = pyscalar
            ctx.save_for_backward(tensor1, tensor2)
            return tensor1 + pyscalar * tensor2 + tensor1 * tensor2

        @staticmethod
        def backward(ctx, grad_output):
            var1, var2 = ctx.saved_tensors
            assert isinstance(var1, ag.Tensor)
            assert isinstance(var2, ag.Tensor)
            assert isinstance(grad_output, ag.Tensor)
            return (
                grad_output + grad_output * var2,
                None,
                grad_output * ctx.pyscalar + grad_output * var1,
            )

    x, y = _function_test(ag, MyFunction)
    # The gradients' graphs lead back to the inputs through the Function's backward ops.
    (gx,) = ag.autograd.grad(x.grad.sum(), y, retain_graph=True)
    assert_equal(gx, ag.ones(5, 5))


def test_once_differentiable(ag):
    class MyFunction(ag.autograd.Function):
        @staticmethod
        def forward(ctx, tensor1, pyscalar, tensor2):
            ctx.pyscalar = pyscalar
            ctx.save_for_backward(tensor1, tensor2)
            return tensor1 + pyscalar * tensor2 + tensor1 * tensor2

        @staticmethod
        @ag.autograd.function.once_differentiable
        def backward(ctx, grad_output):
            assert not ag.is_grad_enabled()
            t1, t2 = ctx.saved_tensors
            return (
                grad_output + grad_output * t2,
                None,
                grad_output * ctx.pyscalar + grad_output * t1,
            )

    x, y = _function_test(ag, MyFunction)
    with pytest.raises(
        RuntimeError,
        match="trying to differentiate twice a function that was marked with @once_differentiable",
    ):
        x.grad.sum().backward()


def test_function_returns_input(ag):
    class MyFunction(ag.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, grad):
            return grad * 2

    for shape in [(1,), ()]:
        v = ag.ones(shape, requires_grad=True)
        MyFunction.apply(v).backward()
        assert_equal(v.grad, ag.full(shape, 2.0))
        with ag.no_grad():
            v.grad.zero_()
        MyFunction.apply(v.clone()).backward()
        assert_equal(v.grad, ag.full(shape, 2.0))


def test_function_returns_undefined_tensor(ag):
    class MyFunction(ag.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            return None

    x = ag.ones(1, requires_grad=True)
    MyFunction.apply(x).backward()
    assert x.grad is None
    MyFunction.apply(x**2).backward()
    assert x.grad is None
    MyFunction.apply(x).sum().backward()
    assert x.grad is None
    assert ag.autograd.grad(MyFunction.apply(x), x, allow_unused=True)[0] is None


def test_materialize_grads(ag):
    class MyFunction(ag.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.clone(), x.clone()

        @staticmethod
        def backward(ctx, grad0, grad1):
            assert_equal(grad1, ag.zeros(1))
            return grad0 + grad1

    x = ag.ones(1, requires_grad=True)
    MyFunction.apply(x)[0].backward()
    assert_equal(x.grad, [1.0])


def test_dont_materialize_grads(ag):
    class MyFunction(ag.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            return x.clone(), x.clone()

        @staticmethod
        def backward(ctx, grad0, grad1):
            assert grad1 is None
            return grad0

    x = ag.ones(1, requires_grad=True)
    MyFunction.apply(x)[0].backward()
    assert_equal(x.grad, [1.0])


def test_set_materialize_non_diff_grads(ag):
    class Func(ag.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            out0 = x.clone()
            out1 = x.clone()
            ctx.mark_non_differentiable(out1)
            ctx._materialize_non_diff_grads = False
            return out0, out1

        @staticmethod
        def backward(ctx, g0, g1):
            assert g1 is None
            return g0

    a = ag.tensor(1.0, requires_grad=True)
    out = Func.apply(a)[0]
    out.backward()
    assert_equal(a.grad, 1.0)


class _SimulateBackwardError:
    @staticmethod
    def make(ag):
        class SimulateBackwardError(ag.autograd.Function):
            @staticmethod
            def forward(ctx, input):
                return input.clone()

            @staticmethod
            @ag.autograd.function.once_differentiable
            def backward(ctx, input):
                raise Exception("Simulate error on backward pass")

        return SimulateBackwardError


def test_custom_function_exception(ag):
    t1 = ag.rand((3, 3), requires_grad=True)
    t2 = ag.rand((3, 3), requires_grad=True)
    tmp = (t1 + t2) * (t1 + t2)
    t3 = _SimulateBackwardError.make(ag).apply(tmp)
    with pytest.raises(Exception, match="Simulate error on backward pass"):
        t3.sum().backward()


def test_invalid_gradients(ag):
    class MyFunction(ag.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, grad_output):
            return ag.randn(10, dtype=ag.float32)

    input = ag.randn(5, 5, dtype=ag.float32, requires_grad=True)
    with pytest.raises(RuntimeError, match="expected shape"):
        MyFunction.apply(input).sum().backward()


def test_custom_function_error(ag):
    class BadFw(ag.autograd.Function):
        @staticmethod
        def backward(ctx, foo):
            return foo

    class BadBw(ag.autograd.Function):
        @staticmethod
        def forward(ctx, foo):
            return foo.clone()

    inp = ag.rand(1, requires_grad=True)
    with pytest.raises(NotImplementedError, match="must implement the forward"):
        BadFw.apply(inp)
    with pytest.raises(RuntimeError, match="must implement either the backward"):
        BadBw.apply(inp).sum().backward()


def test_custom_function_local_inplace(ag):
    class MyFn(ag.autograd.Function):
        @staticmethod
        def forward(ctx, inp, inplace):
            view = inp.clone()[:3]
            if inplace:
                view += 2
            return view

        @staticmethod
        def backward(ctx, grad):
            return grad, None

    base = ag.rand(10, requires_grad=True)
    foo = MyFn.apply(base, False)
    assert foo.grad_fn.__class__.__name__ == "MyFnBackward"
    foo = MyFn.apply(base, True)
    assert foo.grad_fn.__class__.__name__ == "MyFnBackward"


def test_save_output_nr(ag):
    x = ag.randn(10, requires_grad=True)

    class MultiOutputFn(ag.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x[:5], x[5:]

        @staticmethod
        def backward(ctx, *grad):
            return ag.cat(grad)

    a, b = MultiOutputFn.apply(x)
    assert b.output_nr == 1
    seen = []

    class TestFn(ag.autograd.Function):
        @staticmethod
        def forward(ctx, b):
            ctx.save_for_backward(b)
            return b * 2

        @staticmethod
        def backward(ctx, grad_b):
            (b,) = ctx.saved_tensors
            seen.append(b.output_nr)

    TestFn.apply(b).sum().backward()
    assert seen == [1]


def test_mark_non_differentiable(ag):
    class MyFunction(ag.autograd.Function):
        @staticmethod
        def forward(ctx, input):
            output = input > 0
            ctx.mark_non_differentiable(output)
            return output

        @staticmethod
        def backward(ctx, grad_output):
            return (grad_output * 0).to(ag.float64)

    x = ag.randn(5, 5, requires_grad=True)
    mask = MyFunction.apply(x)
    assert not mask.requires_grad
    y = x.masked_fill(mask, 0)
    y.sum().backward()


def test_mark_non_differentiable_mixed(ag):
    class MyFunction(ag.autograd.Function):
        @staticmethod
        def forward(ctx, input):
            a = input + 1
            b = input + 2
            ctx.mark_non_differentiable(a)
            return a, b

        @staticmethod
        def backward(ctx, grad_a, grad_b):
            assert bool((grad_a == 0).all())
            assert bool((grad_b == 1).all())
            return grad_b

    x = ag.randn(5, 5, requires_grad=True)
    a, b = MyFunction.apply(x)
    assert not a.requires_grad
    assert b.requires_grad
    b.sum().backward()
    assert_equal(x.grad, ag.ones(5, 5))


def test_mark_non_differentiable_none(ag):
    class MyFunction(ag.autograd.Function):
        @staticmethod
        def forward(ctx, input):
            output = input.clone()
            ctx.mark_non_differentiable(output)
            return output

        @staticmethod
        def backward(ctx, grad_output):
            return None

    x = ag.randn(5, 5, requires_grad=True)
    r = MyFunction.apply(x * x)
    (r * x).sum().backward()


def test_return_duplicate(ag):
    class DoubleDuplicate(ag.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            output = x * 2
            return output, output

        @staticmethod
        def backward(ctx, grad1, grad2):
            return grad1 * 2 + grad2 * 2

    def fn(x):
        a, b = DoubleDuplicate.apply(x)
        assert a is b
        return a + b

    x = ag.randn(5, 5, requires_grad=True)
    assert ag.autograd.gradcheck(fn, [x])
    assert ag.autograd.gradgradcheck(fn, [x])


def test_return_duplicate_inplace(ag):
    class DoubleInplace(ag.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            x.mul_(2)
            ctx.mark_dirty(x)
            return x, x

        @staticmethod
        def backward(ctx, grad1, grad2):
            return grad1 * 2 + grad2 * 2

    def inplace_fn(x):
        a, b = DoubleInplace.apply(x.clone())
        assert a is b
        return a + b

    x = ag.randn(5, 5, requires_grad=True)
    assert ag.autograd.gradcheck(inplace_fn, [x])
    assert ag.autograd.gradgradcheck(inplace_fn, [x])
    with pytest.raises(RuntimeError):
        DoubleInplace.apply(x)
    with pytest.raises(RuntimeError):
        DoubleInplace.apply(x.clone()[0])


def test_return_leaf(ag):
    class Identity(ag.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            return a, a + b

        @staticmethod
        def backward(ctx, grad_a, grad_b):
            return grad_a + grad_b, grad_b

    hook_called = [False]
    x = ag.randn(5, 5, requires_grad=True)
    y = ag.randn(5, 5, requires_grad=True)
    q, p = Identity.apply(x, y)

    def hook(grad):
        hook_called[0] = True
        assert_equal(grad, ag.ones(5, 5))

    q.register_hook(hook)
    (q + p + x).sum().backward()
    assert_equal(x.grad, ag.ones(5, 5) * 3)
    assert_equal(y.grad, ag.ones(5, 5))
    assert hook_called[0]


def test_save_none_for_backward(ag):
    class MyFn(ag.autograd.Function):
        @staticmethod
        def forward(ctx, input):
            ctx.save_for_backward(None, input, None)
            return input * input

        @staticmethod
        def backward(ctx, grad_output):
            n1, input, n2 = ctx.saved_tensors
            assert n1 is None
            assert n2 is None
            return 2 * input * grad_output

    x = ag.randn(5, requires_grad=True)
    y = MyFn.apply(x)
    y.sum().backward()
    assert_equal(x.grad, 2 * x)


def test_too_many_grads(ag):
    class MyFn(ag.autograd.Function):
        @staticmethod
        def forward(ctx, input):
            return input

        @staticmethod
        def backward(ctx, grad_output):
            return grad_output, None, None

    x = ag.randn(5, 5, requires_grad=True)
    y = MyFn.apply(x)
    y.sum().backward()
    assert_equal(x.grad, ag.ones_like(x))


def test_too_many_non_none_grads(ag):
    class MyFn(ag.autograd.Function):
        @staticmethod
        def forward(ctx, input):
            return input.clone()

        @staticmethod
        def backward(ctx, grad_output):
            return grad_output, grad_output

    x = ag.randn(5, requires_grad=True)
    with pytest.raises(
        RuntimeError,
        match="function MyFnBackward returned an incorrect number of gradients",
    ):
        MyFn.apply(x).sum().backward()


def test_dep_nograd(ag):
    class F1(ag.autograd.Function):
        @staticmethod
        def forward(ctx, input):
            out = ag.randn(input.size())
            ctx.mark_non_differentiable(out)
            return input, out

        @staticmethod
        def backward(ctx, grad_output, ignored):
            return grad_output

    class F2(ag.autograd.Function):
        @staticmethod
        def forward(ctx, input, ignored):
            return input

        @staticmethod
        def backward(ctx, grad_output):
            return grad_output, None

    x = ag.randn(5, requires_grad=True)
    a, b = F1.apply(x)
    b = b + 1
    assert a.requires_grad
    assert not b.requires_grad
    c = F2.apply(a, b)
    c.backward(ag.ones(c.size()))
    assert_equal(x.grad, ag.ones(x.size()))


def test_no_grad_python_function(ag):
    x = ag.ones(5, 5, requires_grad=True)

    class MyOp(ag.autograd.Function):
        @staticmethod
        def forward(self, x):
            return x + 1

        @staticmethod
        def backward(self, dy):
            return dy

    with ag.no_grad():
        y = MyOp.apply(x)
    assert not y.requires_grad


def test_no_grad_input(ag):
    class MyFunction(ag.autograd.Function):
        @staticmethod
        def forward(self, x):
            return x

        @staticmethod
        def backward(self, grad_output):
            return grad_output

    x = ag.randn(5, requires_grad=True)
    with ag.no_grad():
        y = MyFunction.apply(x)
    assert x.requires_grad
    assert y.grad_fn is None


def test_naughty_autograd_function_stashing_ctx(ag):
    saved_ctx = []

    class Id(ag.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x

        @staticmethod
        def backward(ctx, grad_x):
            saved_ctx.append(ctx)
            return ctx.saved_tensors

    p = ag.zeros(1, requires_grad=True)
    loss = Id.apply(p)
    loss.backward()
    del loss
    with pytest.raises(RuntimeError):
        _ = saved_ctx[0].saved_tensors


def test_saved_tensors_after_backward_freed(ag):
    class Square(ag.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * x * g

    x = ag.randn(3, requires_grad=True)
    y = Square.apply(x)
    y.sum().backward()
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        y.sum().backward()


def test_custom_autograd_repeated_grad_grad(ag):
    def mult1(x):
        return x.prod(dim=-1).prod(dim=-1)

    class Mult(ag.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            y = mult1(x)
            ctx.save_for_backward(x, y)
            return y

        @staticmethod
        def backward(ctx, grad_output):
            x, y = ctx.saved_tensors
            return (grad_output * y)[:, None, None] / x

    mult2 = Mult.apply

    def check_gradgrad_repeated(x, y):
        (gy,) = ag.autograd.grad(y[0], x, create_graph=True)
        (ggy_1,) = ag.autograd.grad(gy[0, 0, 0], x, retain_graph=True)
        (gy,) = ag.autograd.grad(y[0], x, create_graph=True)
        (ggy_2,) = ag.autograd.grad(gy[0, 0, 0], x, retain_graph=True)
        assert_equal(ggy_1[0, 0, 1], ggy_2[0, 0, 1])

    x = ag.ones(2, 4, 4).requires_grad_()
    check_gradgrad_repeated(x, mult1(x))
    check_gradgrad_repeated(x, mult2(x))


def test_custom_autograd_no_early_free(ag):
    class Double(ag.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            y = x**2
            ctx.save_for_backward(x, y)
            return y

        @staticmethod
        def backward(ctx, grad_output):
            x, _ = ctx.saved_tensors
            return grad_output * 2 * x

    class Double2(Double):
        @staticmethod
        def backward(ctx, grad_output):
            x, y = ctx.saved_tensors
            return grad_output * 2 * y / x

    double = Double.apply
    double2 = Double2.apply
    x = ag.tensor(2).double().requires_grad_()
    assert ag.autograd.gradcheck(double, x)
    assert ag.autograd.gradgradcheck(double, x)
    assert ag.autograd.gradcheck(double2, x)
    assert ag.autograd.gradgradcheck(double2, x)
    y = double(x)
    ag.autograd.grad(y, x, create_graph=True)
    ag.autograd.grad(y, x)
    y = double2(x)
    ag.autograd.grad(y, x, create_graph=True)
    ag.autograd.grad(y, x)


def test_needs_input_grad(ag):
    seen = []

    class Fn(ag.autograd.Function):
        @staticmethod
        def forward(ctx, a, b, c):
            seen.append(tuple(ctx.needs_input_grad))
            return a * b

        @staticmethod
        def backward(ctx, g):
            return g, g, None

    a = ag.randn(2, requires_grad=True)
    b = ag.randn(2)
    Fn.apply(a, b, 3)
    assert seen == [(True, False, False)]


def test_custom_function_setup_context_simple(ag):
    class MySquare(ag.autograd.Function):
        @staticmethod
        def forward(x):
            return x**2

        @staticmethod
        def setup_context(ctx, inputs, output):
            (x,) = inputs
            ctx.save_for_backward(x)

        @staticmethod
        def backward(ctx, gO):
            (x,) = ctx.saved_tensors
            return gO * 2 * x

    x = ag.randn([], requires_grad=True)
    y = MySquare.apply(x)
    (gx,) = ag.autograd.grad(y, x)
    assert_equal(gx, 2 * x)


def test_custom_function_setup_context_multi_output(ag):
    class MySquare(ag.autograd.Function):
        @staticmethod
        def forward(x):
            two_x = x.item() * 2
            return x**2, two_x

        @staticmethod
        def setup_context(ctx, inputs, output):
            (x,) = inputs
            _, two_x = output
            ctx.two_x = two_x

        @staticmethod
        @ag.autograd.function.once_differentiable
        def backward(ctx, gO, _):
            return gO * ctx.two_x

    x = ag.randn([], requires_grad=True)
    y, _ = MySquare.apply(x)
    (gx,) = ag.autograd.grad(y, x)
    assert_equal(gx, 2 * x)


def test_function_returns_non_tensor(ag):
    class MyFunction(ag.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2, "not a tensor", 3

        @staticmethod
        def backward(ctx, g, _unused1, _unused2):
            return g * 2

    x = ag.randn(3, requires_grad=True)
    y, text, number = MyFunction.apply(x)
    assert text == "not a tensor"
    assert number == 3
    y.sum().backward()
    assert_equal(x.grad, ag.full((3,), 2.0))


def test_function_apply_keyword_arguments(ag):
    class MyFunction(ag.autograd.Function):
        @staticmethod
        def forward(ctx, x, scale=1.0):
            ctx.scale = scale
            return x * scale

        @staticmethod
        def backward(ctx, g):
            return g * ctx.scale, None

    x = ag.randn(3, requires_grad=True)
    MyFunction.apply(x, 3.0).sum().backward()
    assert_equal(x.grad, ag.full((3,), 3.0))


def test_custom_function_return_view_in_nograd(ag):
    class Alias(ag.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x[:]

        @staticmethod
        def backward(ctx, gx):
            return gx

    inp = ag.rand(2, requires_grad=True)
    with ag.no_grad():
        output = Alias.apply(inp)
    with ag.no_grad():
        expected_output = inp[:]
    assert output.requires_grad == expected_output.requires_grad
    with pytest.raises(
        RuntimeError,
        match="A view was created in no_grad mode and is being modified inplace",
    ):
        output.zero_()


def test_autograd_inplace_views_python(ag):
    bw_called = [0]

    class MyAdder(ag.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            a.add_(b)
            ctx.mark_dirty(a)
            return a

        @staticmethod
        def backward(ctx, grad):
            bw_called[0] += 1
            return grad, grad

    a = ag.ones(2, requires_grad=True)
    b = ag.ones(2, requires_grad=True)
    c = MyAdder.apply(a.clone(), b)
    c.sum().backward()
    assert bw_called[0] == 1
    bw_called[0] = 0
    c = MyAdder.apply(a.clone(), b)
    c += 2
    c.sum().backward()
    assert bw_called[0] == 1
    bw_called[0] = 0
    c = MyAdder.apply(a.clone().view_as(a), b)
    c.sum().backward()
    assert bw_called[0] == 1

    class MyBadAdder(ag.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            a.add_(b)
            ctx.mark_dirty(a)
            return a, a + b

        @staticmethod
        def backward(ctx, ga, gab):
            bw_called[0] += 1
            return ga + gab, ga + gab

    bw_called[0] = 0
    c, d = MyBadAdder.apply(a.clone(), b)
    (c * d).sum().backward()
    assert bw_called[0] == 1
    bw_called[0] = 0
    c, d = MyBadAdder.apply(a.clone(), b)
    c += 2
    (c * d).sum().backward()
    assert bw_called[0] == 1

    class MyOutPlaceAdder(ag.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            a.add_(b)
            ctx.mark_dirty(a)
            return a.clone(), a + b

        @staticmethod
        def backward(ctx, ga, gab):
            bw_called[0] += 1
            return ga + gab, ga + 2 * gab

    def fn(a, b):
        orig_a = a.clone().view_as(a)
        c, d = MyOutPlaceAdder.apply(orig_a, b)
        return (c * d).sum()

    with pytest.raises(
        RuntimeError,
        match="Some elements marked as dirty during the forward method were not returned as "
        "output.",
    ):
        fn(a, b)


def test_mark_dirty_leaf_requiring_grad(ag):
    class Inplace(ag.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.mark_dirty(x)
            return x.mul_(2)

        @staticmethod
        def backward(ctx, g):
            return g * 2

    x = ag.randn(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        Inplace.apply(x)


def test_simple_reentrant(ag):
    y_data = ag.randn(2, 2)

    class Reenter(ag.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            with ag.enable_grad():
                ctx.x = x.detach().requires_grad_(True)
                ctx.y = y_data.clone().requires_grad_(True)
                ctx.output_var = ctx.x * ctx.y
            return ctx.output_var.detach()

        @staticmethod
        def backward(ctx, grad_output):
            with ag.enable_grad():
                ctx.output_var.sum().backward()
            return ctx.x.grad * grad_output

    x = ag.randn(2, 2, requires_grad=True)
    out = Reenter.apply(x)
    out.sum().backward()
    assert_equal(x.grad, y_data)


def test_reentrant_child_error(ag):
    a = ag.rand(3, 3, requires_grad=True)
    c = a * a
    b = ag.rand(3, 3, requires_grad=True)
    e = b * b
    f = _SimulateBackwardError.make(ag).apply(e)
    reentrant_root = f.sum()

    class ReentrantFunc(ag.autograd.Function):
        @staticmethod
        def forward(ctx, inp):
            return inp.clone()

        @staticmethod
        def backward(ctx, grad):
            reentrant_root.backward()
            return grad

    d = ReentrantFunc.apply(c)
    with pytest.raises(Exception, match="Simulate error"):
        d.sum().backward()


def test_deep_reentrant(ag):
    class DeepReentrant(ag.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            with ag.enable_grad():
                ctx.x = x.detach().requires_grad_(True)
                ctx.x = ctx.x - 1
            return ctx.x.detach()

        @staticmethod
        def backward(ctx, x):
            if ctx.x < 0:
                return x
            with ag.enable_grad():
                DeepReentrant.apply(ctx.x).sum().backward()
            return x

    v = ag.tensor(200.0, requires_grad=True)
    DeepReentrant.apply(v).sum().backward()
    v2 = ag.tensor(20.0, requires_grad=True)
    DeepReentrant.apply(v2).sum().backward()


def test_reentrant_priority(ag):
    order = []

    class MyFunction(ag.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, x):
            order.append("MyFunction")
            return x

    class Reentrant(ag.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            with ag.enable_grad():
                ctx.x = x.detach().requires_grad_(True)
                ctx.x = ctx.x - 1
            return ctx.x.detach()

        @staticmethod
        def backward(ctx, x):
            order.append("Reentrant")
            if ctx.x < 0:
                return x
            with ag.enable_grad():
                Reentrant.apply(ctx.x).backward()
            return x

    a = MyFunction.apply(ag.tensor(6.0, requires_grad=True))
    b = Reentrant.apply(ag.tensor(9.0, requires_grad=True))
    v = a * b
    v.backward()
    assert len(order) == 11
    assert order.count("Reentrant") == 10
    assert order[-1] == "MyFunction"


def test_reentrant_with_leaf_variable_hook(ag):
    handle = None
    param = ag.rand(10, requires_grad=True)

    def add_gradient_penalty_to_grad(grad):
        handle.remove()
        old_param_grad = grad
        param.grad = None
        with ag.enable_grad():
            g = grad.detach().requires_grad_()
            new_param = param.detach().requires_grad_()
            out = ((g * 2) + new_param).sum()
            out.backward()
        res = g.grad + grad
        param.grad = old_param_grad
        return res

    handle = param.register_hook(add_gradient_penalty_to_grad)
    tmp = param * param
    loss = tmp.sum()
    loss.backward()


def test_reentrant_with_non_leaf_variable_hook(ag):
    handle = None
    param = ag.rand(10, requires_grad=True)

    def manual_increase_gradient(grad):
        handle.remove()
        with ag.enable_grad():
            g = grad.detach().requires_grad_()
            out = ((g * 2) + 5).sum()
            out.backward()
        return g.grad + grad

    tmp = param * param
    handle = tmp.register_hook(manual_increase_gradient)
    loss = tmp.sum()
    loss.backward()
    assert_equal(param.grad, 6 * param)


def _reentrant_with_callbacks(ag, install_callbacks_in_depths):
    counter = {"inner": 0, "outer": 0}

    def inc_inner_counter():
        counter["inner"] += 1

    def inc_outer_counter():
        counter["outer"] += 1

    engine = ag.autograd.Variable._execution_engine

    class MyFunc(ag.autograd.Function):
        @staticmethod
        def forward(ctx, input):
            return input

        @staticmethod
        @ag.autograd.function.once_differentiable
        def backward(ctx, input):
            if 1 in install_callbacks_in_depths:
                engine.queue_callback(inc_inner_counter)
            return input

    class MyReentrantFunc(ag.autograd.Function):
        @staticmethod
        def forward(ctx, input):
            return input

        @staticmethod
        @ag.autograd.function.once_differentiable
        def backward(ctx, input):
            if 0 in install_callbacks_in_depths:
                engine.queue_callback(inc_outer_counter)
            tmp_inp = input.detach().requires_grad_()
            with ag.enable_grad():
                tmp_out = (MyFunc.apply(tmp_inp)).sum()
            tmp_out.backward()
            return input

    t1 = ag.rand((3, 3), requires_grad=True)
    t2 = MyReentrantFunc.apply(t1)
    t3 = t2.sum()
    ag.autograd.backward([t3])
    return counter


def test_reentrant_with_callbacks_depth_0(ag):
    ret = _reentrant_with_callbacks(ag, [0])
    assert ret == {"outer": 1, "inner": 0}


def test_reentrant_with_callbacks_depth_1(ag):
    ret = _reentrant_with_callbacks(ag, [1])
    assert ret == {"outer": 0, "inner": 1}


def test_reentrant_with_callbacks_both_depths(ag):
    ret = _reentrant_with_callbacks(ag, [0, 1])
    assert ret == {"outer": 1, "inner": 1}


def test_queue_callback_outside_backward(ag):
    with pytest.raises(
        RuntimeError,
        match="Final callbacks can only be installed during backward pass",
    ):
        ag.autograd.Variable._execution_engine.queue_callback(lambda: None)


# ---------------------------------------------------------------- anomaly mode


def _nan_function(ag, size):
    class MyFunc(ag.autograd.Function):
        @staticmethod
        def forward(ctx, inp1, inp2, fail_0th):
            ctx.fail_0th = fail_0th
            return inp1.sum(0, keepdim=True)

        @staticmethod
        def backward(ctx, gO):
            gI = gO.clone().expand(size).clone()
            gI[0] = 0
            gI[0] /= 0
            if ctx.fail_0th:
                return gI, None, None
            return None, gI, None

    return MyFunc


def test_anomaly_detect_nan(ag):
    size = 10
    MyFunc = _nan_function(ag, size)
    inp = ag.rand(size, requires_grad=True)
    out = MyFunc.apply(inp, inp, True)
    out.backward()
    inp = ag.rand(size, requires_grad=True)
    out = MyFunc.apply(inp, inp, True)
    with pytest.raises(
        RuntimeError,
        match="Function 'MyFuncBackward' returned nan values in its 0th output.",
    ):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            with ag.autograd.detect_anomaly():
                out.backward()
    assert "No forward pass information" in str(w[-1].message)
    inp = ag.rand(size, requires_grad=True)
    with pytest.raises(
        RuntimeError,
        match="Function 'MyFuncBackward' returned nan values in its 1th output.",
    ):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            with ag.autograd.detect_anomaly():
                out = MyFunc.apply(inp, inp, False)
                out.backward()
    assert "MyFunc.apply" in str(w[-1].message)


def test_anomaly_check_nan_false(ag):
    size = 10
    MyFunc = _nan_function(ag, size)
    inp = ag.rand(size, requires_grad=True)
    with ag.autograd.detect_anomaly(check_nan=False):
        out = MyFunc.apply(inp, inp, True)
        out.backward()


def test_nested_anomaly_detect_nan(ag):
    size = 10

    class MyFunc(ag.autograd.Function):
        @staticmethod
        def forward(ctx, inp1, fail_0th):
            ctx.fail_0th = fail_0th
            ctx.save_for_backward(inp1)
            return inp1.sum(0, keepdim=True)

        @staticmethod
        def backward(ctx, gO):
            (inp,) = ctx.saved_tensors
            fail_0th = ctx.fail_0th
            g = gO.clone().expand(size)
            gI = MyFunc2.apply(g * inp, g + inp, fail_0th)
            return gI, None

    class MyFunc2(ag.autograd.Function):
        @staticmethod
        def forward(ctx, inp1, inp2, fail_0th):
            ctx.fail_0th = fail_0th
            return inp1 * 2.0 + inp2

        @staticmethod
        def backward(ctx, gO):
            fail_0th = ctx.fail_0th
            g1 = gO.clone()
            g2 = gO.clone()
            g1[0] = 0
            g2[0] = 0
            if fail_0th:
                g1[0] /= 0
            else:
                g2[0] /= 0
            return g1, g2, None

    inp = ag.rand(size, requires_grad=True)
    out = MyFunc.apply(inp, True)
    (ginp,) = ag.autograd.grad(out, (inp,), create_graph=True)
    gsum = ginp.sum()
    gsum.backward()
    inp = ag.rand(size, requires_grad=True)
    out = MyFunc.apply(inp, True)
    (ginp,) = ag.autograd.grad(out, (inp,), create_graph=True)
    gsum = ginp.sum()
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        with pytest.raises(
            RuntimeError,
            match="Function 'MyFunc2Backward' returned nan values in its 0th output.",
        ):
            with ag.autograd.detect_anomaly():
                gsum.backward()
    assert "No forward pass information" in str(w[-1].message)
    inp = ag.rand(size, requires_grad=True)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        with pytest.raises(
            RuntimeError,
            match="Function 'MyFunc2Backward' returned nan values in its 1th output.",
        ):
            with ag.autograd.detect_anomaly():
                out = MyFunc.apply(inp, False)
                (ginp,) = ag.autograd.grad(out, (inp,), create_graph=True)
                gsum = ginp.sum()
                gsum.backward()
    messages = "".join(str(m.message) for m in w)
    assert "MyFunc2.apply" in messages
    assert "MyFunc.apply" in messages


def test_anomaly_grad_warnings(ag):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        with pytest.raises(
            RuntimeError,
            match="one of the variables needed for gradient computation has been modified by "
            "an inplace operation",
        ):
            with ag.autograd.detect_anomaly():
                a = ag.randn(5, requires_grad=True)
                d1 = a + 1
                d2 = d1**2
                d1 += 1
                ag.autograd.grad(d2.sum(), a)
    messages = [str(x.message) for x in w]
    assert any("Anomaly Detection has been enabled" in m for m in messages)
    assert any("Error detected in PowBackward0" in m for m in messages)


def test_anomaly_mode_no_check_nan(ag):
    class MyFunc(ag.autograd.Function):
        @staticmethod
        def forward(ctx, inp):
            return inp.clone()

        @staticmethod
        def backward(ctx, gO):
            return ag.tensor(float("nan")).expand(10, 10)

    def run_fn(a):
        out = MyFunc.apply(a)
        return out.sum()

    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        with ag.autograd.detect_anomaly(check_nan=False):
            inp = ag.rand(10, 10, requires_grad=True)
            out = run_fn(inp)
            out.backward(retain_graph=True)
            with ag.autograd.detect_anomaly(check_nan=True):
                with pytest.raises(
                    RuntimeError,
                    match="Function 'MyFuncBackward' returned nan values in its 0th output.",
                ):
                    out.backward(retain_graph=True)
            out.backward()


def test_anomaly_is_enabled_flags(ag):
    assert not ag.is_anomaly_enabled()
    with ag.autograd.detect_anomaly():
        assert ag.is_anomaly_enabled()
        assert ag.is_anomaly_check_nan_enabled()
    with ag.autograd.set_detect_anomaly(True, check_nan=False):
        assert ag.is_anomaly_enabled()
        assert not ag.is_anomaly_check_nan_enabled()
    assert not ag.is_anomaly_enabled()


def test_anomaly_forward_trace_in_error(ag):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        with ag.autograd.detect_anomaly():
            x = ag.randn(3, requires_grad=True)
            y = x.exp()
            y.mul_(2)
            with pytest.raises(RuntimeError, match="modified by an inplace operation"):
                y.sum().backward()
    assert any("Traceback of forward call that caused the error" in str(m.message) for m in w)
