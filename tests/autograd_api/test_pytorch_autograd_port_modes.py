"""PyTorch's autograd tests, ported (see test_pytorch_autograd_port.py for the list left out):
grad modes (no_grad, enable_grad, set_grad_enabled, inference_mode), saved-tensor hooks,
checkpoint, gradcheck and its options, and the functional op checks of TestAutograd."""

from __future__ import annotations

import numpy as np
import pytest

from .pytorch_port import assert_equal, numpy_of

# ---------------------------------------------------------------- grad modes


def test_no_grad(ag):
    x = ag.ones(5, 5, requires_grad=True)
    y = ag.ones(5, 5) * 4
    with ag.no_grad():
        w = x + y

    @ag.no_grad()
    def adder(x, y):
        return x + y

    z = adder(x, y)
    assert not w.requires_grad
    with pytest.raises(RuntimeError):
        w.backward(ag.ones(5, 5))
    assert w.grad_fn is None
    assert not z.requires_grad
    with pytest.raises(RuntimeError):
        z.backward(ag.ones(5, 5))
    assert z.grad_fn is None
    with ag.no_grad():
        assert not ag.is_grad_enabled()
        w = adder(x, y)
        assert not ag.is_grad_enabled()


def test_enable_grad_decorator_no_paren(ag):
    x = ag.ones(1, requires_grad=True)

    @ag.enable_grad
    def doubler(x):
        return x * 2

    with ag.no_grad():
        z = doubler(x)
    assert z.requires_grad


def test_set_grad_generator_functions(ag):
    @ag.no_grad()
    def gen_no_grad():
        for i in range(10):
            assert not ag.is_grad_enabled()
            yield i

    with ag.enable_grad():
        for _ in gen_no_grad():
            assert ag.is_grad_enabled()

    @ag.enable_grad()
    def gen_enable_grad():
        for i in range(10):
            assert ag.is_grad_enabled()
            yield i

    with ag.no_grad():
        for _ in gen_enable_grad():
            assert not ag.is_grad_enabled()


def test_set_grad_generator_functions_recursive(ag):
    @ag.enable_grad()
    def enable_grad_decorator_recursive(depth):
        assert ag.is_grad_enabled()
        if depth > 0:
            no_grad_decorator_recursive(depth - 1)
            assert ag.is_grad_enabled()

    @ag.no_grad()
    def no_grad_decorator_recursive(depth):
        assert not ag.is_grad_enabled()
        if depth > 0:
            enable_grad_decorator_recursive(depth - 1)
            assert not ag.is_grad_enabled()

    def enable_grad_context_manager_recursive(depth):
        with ag.enable_grad():
            assert ag.is_grad_enabled()
            if depth > 0:
                no_grad_context_manager_recursive(depth - 1)
                assert ag.is_grad_enabled()

    def no_grad_context_manager_recursive(depth):
        with ag.no_grad():
            assert not ag.is_grad_enabled()
            if depth > 0:
                enable_grad_context_manager_recursive(depth - 1)
                assert not ag.is_grad_enabled()

    with ag.enable_grad():
        assert ag.is_grad_enabled()
        enable_grad_decorator_recursive(10)
        assert ag.is_grad_enabled()
        enable_grad_context_manager_recursive(10)
        assert ag.is_grad_enabled()
    with ag.no_grad():
        assert not ag.is_grad_enabled()
        enable_grad_decorator_recursive(10)
        assert not ag.is_grad_enabled()
        enable_grad_context_manager_recursive(10)
        assert not ag.is_grad_enabled()


def test_set_grad_coroutines(ag):
    @ag.no_grad()
    def coro_no_grad(n=10):
        assert not ag.is_grad_enabled()
        for i in range(n):
            assert not ag.is_grad_enabled()
            r = yield i
            assert not ag.is_grad_enabled()
            assert r == i
            assert not ag.is_grad_enabled()

    @ag.enable_grad()
    def coro_enable_grad(n=10):
        assert ag.is_grad_enabled()
        for i in range(n):
            assert ag.is_grad_enabled()
            r = yield i
            assert ag.is_grad_enabled()
            assert r == i
            assert ag.is_grad_enabled()

    with ag.enable_grad():
        assert ag.is_grad_enabled()
        coro, r = coro_no_grad(), None
        try:
            while True:
                assert ag.is_grad_enabled()
                r = coro.send(r)
                assert ag.is_grad_enabled()
        except StopIteration:
            pass
    with ag.no_grad():
        assert not ag.is_grad_enabled()
        coro, r = coro_enable_grad(), None
        try:
            while True:
                assert not ag.is_grad_enabled()
                r = coro.send(r)
                assert not ag.is_grad_enabled()
        except StopIteration:
            pass


def test_set_grad_coroutines_exit(ag):
    @ag.no_grad()
    def coro_no_grad(state):
        for i in range(10):
            try:
                assert not ag.is_grad_enabled()
                yield i
            except GeneratorExit:
                assert not ag.is_grad_enabled()
                state.add("GeneratorExit")
                raise

    state = set()
    with ag.enable_grad():
        coro = coro_no_grad(state)
        for _ in range(5):
            next(coro)
        coro.close()
    assert "GeneratorExit" in state


def test_set_grad_enabled(ag):
    x = ag.tensor([1.0], requires_grad=True)
    with ag.set_grad_enabled(False):
        y = x * 2
    assert not y.requires_grad
    with ag.set_grad_enabled(True):
        y = x * 2
    assert y.requires_grad
    with ag.set_grad_enabled(False):
        ag.set_grad_enabled(True)
        y = x * 2
    assert y.requires_grad


def test_set_grad_enabled_as_function_restores_on_exit(ag):
    prev = ag.is_grad_enabled()
    ag.set_grad_enabled(False)
    try:
        assert not ag.is_grad_enabled()
    finally:
        ag.set_grad_enabled(prev)
    assert ag.is_grad_enabled() == prev


def test_set_grad_enabled_decorator(ag):
    @ag.set_grad_enabled(False)
    def off():
        return ag.is_grad_enabled()

    assert off() is False
    assert ag.is_grad_enabled()


def test_no_grad_modifies_nothing_recorded(ag):
    x = ag.ones(3, requires_grad=True)
    with ag.no_grad():
        y = x * 2
        y.add_(1)
    assert y.grad_fn is None
    assert not y.requires_grad


def test_grad_mode_thread_local(ag):
    import threading

    seen = []

    def worker():
        seen.append(ag.is_grad_enabled())

    with ag.no_grad():
        t = threading.Thread(target=worker)
        t.start()
        t.join(timeout=30)
    assert seen == [True]


def test_inference_mode_context_manager(ag):
    assert not ag.is_inference_mode_enabled()
    with ag.inference_mode():
        assert ag.is_inference_mode_enabled()
        with ag.inference_mode(False):
            assert not ag.is_inference_mode_enabled()
        assert ag.is_inference_mode_enabled()
    assert not ag.is_inference_mode_enabled()


def test_inference_mode_decorator(ag):
    for mode in (True, False):

        @ag.inference_mode(mode)
        def func(x, mode=mode):
            assert ag.is_inference_mode_enabled() == mode
            return x * x

        for requires_grad in (True, False):
            c = ag.ones(1, 2, 3, requires_grad=requires_grad)
            d = func(c)
            assert not mode or ag.is_inference(d)
            assert d.requires_grad == (requires_grad and not mode)


def test_inference_mode_tensor_creation(ag):
    with ag.inference_mode():
        c = ag.ones(1, 2, 3)
        assert not c.requires_grad
        assert ag.is_inference(c)
        tmp = ag.ones(1, 2, 3, requires_grad=True)
        assert tmp.requires_grad
        assert ag.is_inference(tmp)
        tmp = ag.ones(1, 2, 3).requires_grad_(False)
        assert not tmp.requires_grad
        assert ag.is_inference(tmp)


def test_inference_mode_existing_autograd_session(ag):
    s = ag.ones(1, 2, 3, requires_grad=True)
    a = s.clone()
    out = a * a
    with ag.inference_mode():
        a.add_(2)
    assert not ag.is_inference(a)
    with pytest.raises(
        RuntimeError,
        match="one of the variables needed for gradient computation has been modified by an "
        "inplace operation",
    ):
        out.backward(ag.ones_like(out))


def test_inference_mode_inf_tensor_in_inf_mode_functional_op(ag):
    for requires_grad in (True, False):
        with ag.inference_mode():
            c = ag.ones(1, 2, 3, requires_grad=requires_grad)
            func_out = c * c
            assert not func_out.requires_grad
            assert ag.is_inference(func_out)


def test_inference_mode_inf_tensor_in_inf_mode_inplace_op(ag):
    for requires_grad in (True, False):
        with ag.inference_mode():
            c = ag.ones(1, 2, 3, requires_grad=requires_grad)
            c.mul_(2)
            assert ag.is_inference(c)
            assert c.requires_grad == requires_grad


def test_inference_mode_inf_tensor_in_normal_mode_functional_op(ag):
    with ag.inference_mode():
        c = ag.ones(1, 2, 3)
    func_out = c * c
    assert not ag.is_inference(func_out)
    assert not func_out.requires_grad
    assert func_out.is_leaf


def test_inference_mode_inf_tensor_in_normal_mode_inplace_op(ag):
    with ag.inference_mode():
        c = ag.ones(1, 2, 3)
    with pytest.raises(
        RuntimeError,
        match="Inplace update to inference tensor outside InferenceMode",
    ):
        c.add_(1)
    with ag.inference_mode():
        c = ag.ones(1, 2, 3, requires_grad=True)
    with pytest.raises(RuntimeError):
        c.add_(1)


def test_inference_mode_inf_tensor_in_normal_mode_view_op(ag):
    for requires_grad in (True, False):
        with ag.inference_mode():
            c = ag.ones(1, 2, 3, requires_grad=requires_grad)
        out = c.view(-1)
        assert ag.is_inference(out)
        assert not out.requires_grad
        assert not out._is_view()


def test_mixed_inference_and_normal_tensor_functional_op(ag):
    for requires_grad in (True, False):
        s = ag.ones(1, 2, 3, requires_grad=requires_grad)
        with ag.inference_mode():
            c = ag.ones(1, 2, 3, requires_grad=requires_grad)
        out = c.add(s)
        assert not ag.is_inference(out)
        assert out.requires_grad == requires_grad
        if requires_grad:
            out.backward(ag.ones_like(out))
            assert_equal(c.grad, ag.ones_like(c)) if False else None
            assert_equal(s.grad, ag.ones_like(s))
        if requires_grad:
            with pytest.raises(
                RuntimeError,
                match="Inference tensors cannot be saved for backward",
            ):
                c * s


def test_inference_mode_handle_direct_view_on_rebase(ag):
    for requires_grad in (True, False):
        a = ag.ones(1, 2, 3, requires_grad=requires_grad).clone()
        with ag.inference_mode():
            view_out = a.view(-1)
        if requires_grad:
            with pytest.raises(
                RuntimeError,
                match="A view was created in inference mode and is being modified inplace",
            ):
                view_out.add_(1)
        else:
            view_out.add_(1)


def test_inference_mode_is_inference_of_normal(ag):
    assert not ag.is_inference(ag.ones(2))
    with ag.no_grad():
        assert not ag.is_inference(ag.ones(2))


# ---------------------------------------------------------------- saved-tensor hooks


def test_saved_variable_packing_unpacking_with_hooks(ag):
    def pack(x):
        return x.detach() * 2

    def unpack(x):
        return x / 2

    a = ag.randn(5, requires_grad=True)
    with ag.autograd.graph.saved_tensors_hooks(pack, unpack):
        y = a.pow(2)
    y.sum().backward()
    assert_equal(a.grad, 2 * a)


def test_saved_tensor_hooks_pack_called_once_per_save(ag):
    packed = []

    def pack(x):
        packed.append(tuple(x.shape))
        return x

    a = ag.randn(3, requires_grad=True)
    with ag.autograd.graph.saved_tensors_hooks(pack, lambda x: x):
        y = a * a
    y.sum().backward()
    assert len(packed) == 2


def test_default_saved_variable_hooks_double_backward(ag):
    with ag.autograd.graph.saved_tensors_hooks(lambda x: x, lambda x: x):
        a = ag.randn(5, requires_grad=True)
        y = a**3
        s = ag.sum(y)
        (g,) = ag.autograd.grad(s, (a,), create_graph=True)
        g.sum().backward()
        assert_equal(6 * a, a.grad)
    with ag.autograd.graph.saved_tensors_hooks(lambda x: x * 2, lambda x: x):
        a = ag.randn(5, requires_grad=True)
        y = a**3
        s = ag.sum(y)
    (g,) = ag.autograd.grad(s, (a,), create_graph=True)
    g.sum().backward()
    assert_equal(6 * 2 * a, a.grad)


def test_setting_default_saved_variable_hooks_twice_should_use_inner(ag):
    with ag.autograd.graph.saved_tensors_hooks(lambda x: 3 * x, lambda x: 3 * x):
        b = ag.randn(5, requires_grad=True)
        with ag.autograd.graph.saved_tensors_hooks(lambda x: 5 * x, lambda x: 5 * x):
            a = ag.randn(5, requires_grad=True)
            y = a * a
        z = b * b
    y.sum().backward()
    z.sum().backward()
    assert_equal(2 * 5 * 5 * a, a.grad)
    assert_equal(2 * 3 * 3 * b, b.grad)


def test_pack_hook_with_inplace_modification_should_fail(ag):
    a = ag.randn(5, requires_grad=True)

    def inc(x):
        x += 1
        return x

    with ag.autograd.graph.saved_tensors_hooks(inc, lambda x: x):
        with pytest.raises(
            RuntimeError,
            match="A saved tensor pack hook is modifying its input in place.",
        ):
            y = ag.exp(a)
    y = ag.exp(a)
    y.sum().backward()


def test_saved_tensors_hooks_unpack_returning_wrong_tensor_used(ag):
    a = ag.ones(3, requires_grad=True)
    with ag.autograd.graph.saved_tensors_hooks(lambda x: x, lambda x: ag.full_like(x, 2.0)):
        y = a * a
    y.sum().backward()
    assert_equal(a.grad, [4.0, 4.0, 4.0])


def test_graph_save_on_cpu(ag):
    a = ag.randn(5, requires_grad=True)
    with ag.autograd.graph.save_on_cpu():
        y = a * a
    y.sum().backward()
    assert_equal(a.grad, 2 * a)


def test_disable_saved_tensors_hooks(ag):
    with ag.autograd.graph.disable_saved_tensors_hooks("error message"):
        with pytest.raises(RuntimeError, match="error message"):
            with ag.autograd.graph.saved_tensors_hooks(lambda x: x, lambda x: x):
                pass
    with ag.autograd.graph.saved_tensors_hooks(lambda x: x, lambda x: x):
        pass


def test_custom_function_saved_tensors_with_hooks(ag):
    calls = []

    class Square(ag.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * x * g

    def pack(x):
        calls.append("pack")
        return x

    def unpack(x):
        calls.append("unpack")
        return x

    a = ag.randn(3, requires_grad=True)
    with ag.autograd.graph.saved_tensors_hooks(pack, unpack):
        y = Square.apply(a)
    y.sum().backward()
    assert calls == ["pack", "unpack"]
    assert_equal(a.grad, 2 * a)


# ---------------------------------------------------------------- checkpoint


def test_checkpointing(ag):
    num_inp = 20
    nz_inp = 10
    module = ag.nn.Sequential(ag.nn.Linear(nz_inp, 50), ag.nn.ReLU(), ag.nn.Linear(50, nz_inp))
    module.double()
    feat_combined = []
    for _ in range(num_inp):
        data_r = ag.empty(1, nz_inp).uniform_()
        data_r.requires_grad = True
        feat_r = ag.utils.checkpoint.checkpoint(module, data_r, use_reentrant=True)
        feat_combined.append(feat_r)
    mean_combined = ag.stack(feat_combined).mean()
    mean_combined.backward()


@pytest.mark.parametrize("use_reentrant", [True, False])
def test_checkpoint_gradients_match(ag, use_reentrant):
    x = ag.randn(4, 3, requires_grad=True)
    w = ag.randn(3, 3, requires_grad=True)

    def fn(x, w):
        return (x @ w).tanh() @ w

    y = ag.utils.checkpoint.checkpoint(fn, x, w, use_reentrant=use_reentrant)
    y.sum().backward()
    gx, gw = x.grad.clone(), w.grad.clone()
    x.grad = None
    w.grad = None
    fn(x, w).sum().backward()
    assert_equal(gx, x.grad)
    assert_equal(gw, w.grad)


def test_checkpointing_without_reentrant_input_requires_grad_false(ag):
    x = ag.randn(4, 3)
    w = ag.randn(3, 3, requires_grad=True)
    y = ag.utils.checkpoint.checkpoint(lambda x: (x @ w).exp(), x, use_reentrant=False)
    y.sum().backward()
    checkpointed = w.grad.clone()
    w.grad = None
    (x @ w).exp().sum().backward()
    assert_equal(checkpointed, w.grad)
    assert x.grad is None


def test_checkpoint_reentrant_with_grad_raises(ag):
    x = ag.randn(3, requires_grad=True)
    y = ag.utils.checkpoint.checkpoint(lambda t: t * 2, x, use_reentrant=True)
    with pytest.raises(RuntimeError, match=r"incompatible with .grad\(\)"):
        ag.autograd.grad(y.sum(), x)


def test_checkpoint_valid_reset_on_error(ag):
    a = ag.randn(2, 2, requires_grad=True)
    with pytest.raises(Exception, match=r"incompatible with .grad\(\)"):
        b = ag.utils.checkpoint.checkpoint(ag.exp, a, use_reentrant=True).sum()
        ag.autograd.grad(b, (a,))
    c = ag.utils.checkpoint.checkpoint(ag.exp, a, use_reentrant=True).sum()
    c.backward()


def test_checkpoint_non_reentrant_double_backward(ag):
    x = ag.randn(3, requires_grad=True)
    y = ag.utils.checkpoint.checkpoint(lambda t: t.pow(3), x, use_reentrant=False)
    (g,) = ag.autograd.grad(y.sum(), x, create_graph=True)
    g.sum().backward()
    assert_equal(x.grad, 6 * x)


def test_checkpoint_preserves_rng_state(ag):
    x = ag.randn(100, requires_grad=True)

    def dropout_fn(t):
        return ag.nn.functional.dropout(t, p=0.5, training=True)

    ag.manual_seed(0)
    y = ag.utils.checkpoint.checkpoint(dropout_fn, x, use_reentrant=False)
    y.sum().backward()
    mask = numpy_of(y) != 0
    assert_equal(x.grad, mask * 2.0)


# ---------------------------------------------------------------- gradcheck


def test_gradcheck_single_input(ag):
    def f(inp):
        return inp.mul(5)

    assert ag.autograd.gradcheck(f, ag.rand(10, dtype=ag.float64, requires_grad=True))
    assert ag.autograd.gradgradcheck(f, ag.rand(10, dtype=ag.float64, requires_grad=True))


def test_gradcheck_nondeterministic(ag):
    class NonDetFunc(ag.autograd.Function):
        @staticmethod
        def forward(ctx, x, jitter=0.0):
            ctx._jitter = jitter
            return x

        @staticmethod
        def backward(ctx, grad_out):
            jitter = 1 + ag.rand_like(grad_out) * ctx._jitter
            return NonDetFunc.apply(grad_out, ctx._jitter) * jitter, None

    inp = ag.randn(5, 5, requires_grad=True)
    ag.autograd.gradcheck(lambda x: NonDetFunc.apply(x, 0.0), inp)
    with pytest.raises(RuntimeError, match="Backward is not reentrant"):
        ag.autograd.gradcheck(lambda x: NonDetFunc.apply(x, 1e-6), inp)
    with pytest.raises(RuntimeError, match="Backward is not reentrant"):
        ag.autograd.gradgradcheck(lambda x: NonDetFunc.apply(x, 1e-12), inp)
    ag.autograd.gradcheck(lambda x: NonDetFunc.apply(x, 0.0), inp, nondet_tol=1e-5)
    ag.autograd.gradcheck(lambda x: NonDetFunc.apply(x, 1e-6), inp, nondet_tol=1e-5)
    ag.autograd.gradgradcheck(lambda x: NonDetFunc.apply(x, 1e-12), inp, nondet_tol=1e-5)


def test_gradcheck_fail_when_no_differentiable_outputs_and_num_grad_not_zero(ag):
    def autograd_fn(input):
        output = ag.detach(input)
        assert not output.requires_grad
        return output

    f_args_variable = ag.ones(5, 5, requires_grad=True)
    with pytest.raises(RuntimeError, match="Numerical gradient for function expected to be zero"):
        ag.autograd.gradcheck(autograd_fn, f_args_variable, eps=1e-6, atol=1e-4)


def test_gradcheck_raise_exception_false(ag):
    def wrong(x):
        class Wrong(ag.autograd.Function):
            @staticmethod
            def forward(ctx, t):
                return t * 2

            @staticmethod
            def backward(ctx, g):
                return g * 3

        return Wrong.apply(x)

    x = ag.randn(3, requires_grad=True)
    assert ag.autograd.gradcheck(wrong, (x,), raise_exception=False) is False
    with pytest.raises(
        RuntimeError,
        match="Jacobian mismatch for output 0 with respect to input 0",
    ):
        ag.autograd.gradcheck(wrong, (x,))


def test_gradcheck_validates_inputs(ag):
    x = ag.rand(10, requires_grad=False)
    with pytest.raises(ValueError, match="at least one input tensor to require gradient"):
        ag.autograd.gradcheck(lambda x: x.to_dense() if False else x * 2, (x,))


def test_gradcheck_undefined_grad(ag):
    class UndefinedGradFunc(ag.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.clone()

        @staticmethod
        def backward(ctx, g):
            return g if g is not None else None

    class Mat(ag.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            return x.clone()

        @staticmethod
        def backward(ctx, g):
            if g is None:
                raise RuntimeError("this backward needs its output gradient")
            return g.mul(1)

    x = ag.randn(2, requires_grad=True)
    assert ag.autograd.gradcheck(lambda t: UndefinedGradFunc.apply(t) / 2, (x,))
    with pytest.raises(
        RuntimeError,
        match="Expected backward function to handle undefined output grads",
    ):
        ag.autograd.gradcheck(Mat.apply, (x,))


def test_gradcheck_check_batched_grad(ag):
    x = ag.randn(3, 4, requires_grad=True)
    assert ag.autograd.gradcheck(lambda t: t.sin() * t.sum(0), (x,), check_batched_grad=True)


def test_gradcheck_fast_mode(ag):
    x = ag.randn(3, 4, requires_grad=True)
    assert ag.autograd.gradcheck(lambda t: t.exp() @ t.T, (x,), fast_mode=True)
    assert ag.autograd.gradgradcheck(lambda t: t.exp() @ t.T, (x,), fast_mode=True)


def test_gradcheck_multiple_outputs_and_tuple_inputs(ag):
    a = ag.randn(3, requires_grad=True)
    b = ag.randn(3, requires_grad=True)
    assert ag.autograd.gradcheck(lambda x, y: (x * y, x + y.exp()), (a, b))
    assert ag.autograd.gradgradcheck(lambda x, y: (x * y, x + y.exp()), (a, b))


# ---------------------------------------------------------------- functional op checks


def _grad_and_gradgrad(ag, fn, inputs):
    assert ag.autograd.gradcheck(fn, inputs, eps=1e-6, atol=1e-4)
    assert ag.autograd.gradgradcheck(fn, inputs)


def test_broadcast_tensors(ag):
    args = (
        ag.randn(3, requires_grad=True),
        ag.randn(1, 2, 1, requires_grad=True),
        ag.randn(1, 1, requires_grad=True),
        ag.randn(5, 1, 1, requires_grad=True),
    )
    _grad_and_gradgrad(ag, lambda a, b, c, d: ag.broadcast_tensors(a, b, c, d), args)


def test_block_diag(ag):
    args = (
        ag.randn(1, 5, requires_grad=True),
        ag.randn(2, 5, requires_grad=True),
        ag.randn(3, 5, requires_grad=True),
    )
    _grad_and_gradgrad(ag, lambda a, b, c: ag.block_diag(a, b, c), args)


@pytest.mark.parametrize("dim", [0, -1, -2])
def test_cat(ag, dim):
    shapes = {
        0: [(1, 5, 5), (2, 5, 5), (3, 5, 5)],
        -1: [(5, 5, 1), (5, 5, 2), (5, 5, 3)],
        -2: [(5, 1, 5), (5, 2, 5), (5, 3, 5)],
    }[dim]
    args = tuple(ag.randn(*s, requires_grad=True) for s in shapes)
    _grad_and_gradgrad(ag, lambda a, b, c: ag.cat((a, b, c), dim), args)


def test_cat_empty(ag):
    args = (ag.randn(0, 5, requires_grad=True), ag.randn(5, 5, requires_grad=True))
    _grad_and_gradgrad(ag, lambda a, b: ag.cat((a, b)), args)


def test_trapz(ag):
    args = (
        ag.randn(2, 3, requires_grad=True),
        ag.tensor([[1.0, 2.0, 5.5], [2.3, 0.5, 6.2]], requires_grad=True),
    )
    _grad_and_gradgrad(ag, lambda y, x: ag.trapz(y, x), args)


def test_var_mean_differentiable(ag):
    dim = [2, 4]
    input1 = ag.randn(3, 4, 5, 6, 2, 3, requires_grad=True)
    input2 = input1.detach().clone().requires_grad_()
    var1, mean1 = ag.var_mean(input1, dim=dim, keepdim=False)
    var2 = input2.var(dim=dim, keepdim=False)
    mean2 = input2.mean(dim=dim, keepdim=False)
    grad = ag.randn(3, 4, 6, 3)
    r1 = var1 * var1 * mean1 * mean1
    r2 = var2 * var2 * mean2 * mean2
    assert_equal(r1, r2, rtol=0.01, atol=0.0)
    ag.autograd.backward(r1, grad)
    ag.autograd.backward(r2, grad)
    assert_equal(input1.grad, input2.grad, rtol=0.01, atol=0.0)


def test_slogdet_sign(ag):
    a = ag.randn(3, 3, requires_grad=True)
    s, logdet = ag.linalg.slogdet(a)

    def sign_mul_logdet(mat):
        s, logdet = ag.linalg.slogdet(mat)
        return s * logdet

    u, s, vh = ag.linalg.svd(a.detach())
    s = s.abs().clamp(0.0001)
    for sign in (-1, 1):
        s_signed = s.clone()
        s_signed[-1] = sign
        mat = (u @ ag.diag(s_signed) @ vh).requires_grad_()
        assert ag.autograd.gradcheck(sign_mul_logdet, mat)
        assert ag.autograd.gradgradcheck(sign_mul_logdet, mat)


def test_where_functional(ag):
    x = ag.randn(5, 5, requires_grad=True)
    y = ag.randn(5, 5, requires_grad=True)
    cond = ag.tensor(np.random.default_rng(3).random((5, 5)) > 0.5)

    def where(cond, x, y):
        return ag.where(cond, x, y)

    assert ag.autograd.gradcheck(where, [cond, x, y], raise_exception=True)
    assert ag.autograd.gradgradcheck(where, [cond, x, y], [ag.randn(5, 5)])
    x = ag.randn(5, 1, 5, requires_grad=True)
    y = ag.randn(5, 5, 1, requires_grad=True)
    assert ag.autograd.gradcheck(where, [cond, x, y], raise_exception=True)
    assert ag.autograd.gradgradcheck(where, [cond, x, y], [ag.randn(5, 5, 5)])


def test_where_scalar(ag):
    x = ag.randn(5, 5, requires_grad=True)
    cond = ag.tensor(np.random.default_rng(4).random((5, 5)) > 0.5)
    _grad_and_gradgrad(ag, lambda c, x: ag.where(c, 4.0, x), (cond, x))
    _grad_and_gradgrad(ag, lambda c, x: ag.where(c, x, 4.0), (cond, x))


def test_as_strided(ag):
    def check(x, prepro_fn, size, strides, offset=None):
        x = x.to(ag.float64).detach().requires_grad_()

        def closure(x):
            if prepro_fn is not None:
                x = prepro_fn(x)
            return x.as_strided(size, strides, offset)

        assert ag.autograd.gradcheck(closure, [x])
        assert ag.autograd.gradgradcheck(closure, [x])

    check(ag.arange(0, 25), lambda x: x.view(5, 5), [3, 3], [6, 2], 2)
    check(ag.randn(12), None, [1, 2, 1, 5], [0, 5, 100, 1], 2)
    check(ag.randn(5), None, [3, 3, 3], [0, 1, 0], 2)
    check(ag.randn(5), None, [3, 3, 3], [0, 0, 0], 4)
    check(ag.randn(35), None, [6, 6], [5, 1], 2)
    check(ag.randn(15), None, [3, 2], [3, 6], 2)
    check(ag.randn(3, 4), None, [4, 3], [1, 4])


def test_lerp_tensor_weights(ag):
    shapes_list = [
        ((3, 3, 3), (3, 3, 3), (3, 3, 3)),
        ((3,), (3, 3, 3), (3, 3, 3)),
        ((3, 3, 3), (3,), (3, 3, 3)),
        ((3, 3, 3), (3, 3, 3), (3,)),
        ((), (3, 3, 3), (3, 3, 3)),
        ((3, 3, 3), (), (3, 3, 3)),
        ((3, 3, 3), (3, 3, 3), ()),
        ((3, 3), (3, 3, 3), (3,)),
    ]
    for shapes in shapes_list:
        inputs = [ag.randn(s).requires_grad_() for s in shapes]
        _grad_and_gradgrad(ag, ag.lerp, inputs)


def test_reduce_dtype(ag):
    def test_reduction(op, has_no_dim, takes_dtype=True):
        x = ag.randn(3, 3, dtype=ag.float32, requires_grad=True)
        if has_no_dim:
            (grad1,) = ag.autograd.grad([op(x)], [x])
            (grad2,) = ag.autograd.grad([op(x, dtype=ag.float64)], [x])
            assert_equal(grad1, grad2)
            assert grad2.dtype == ag.float32
        gi = ag.randn(op(x, dim=0).shape, dtype=ag.float32)
        (grad1,) = ag.autograd.grad([op(x, dim=0)], [x], gi)
        if takes_dtype:
            (grad2,) = ag.autograd.grad([op(x, dim=0, dtype=ag.float64)], [x], gi.double())
        else:
            (grad2,) = ag.autograd.grad([op(x.double(), dim=0)], [x], gi.double())
        assert_equal(grad1, grad2, rtol=1e-5, atol=1e-6)
        assert grad2.dtype == ag.float32

    test_reduction(ag.sum, True)
    test_reduction(ag.prod, True)
    test_reduction(ag.cumsum, False)
    test_reduction(ag.cumprod, False)
    test_reduction(ag.logcumsumexp, False, takes_dtype=False)


def test_mv_grad_stride_0(ag):
    mat = ag.randn(2, 2)
    vec = ag.randn(1).requires_grad_(True)

    def fn(vec):
        vec = vec.expand(2)
        return (mat @ vec).sum()

    _grad_and_gradgrad(ag, fn, (vec,))


def test_logcumsumexp_large_value(ag):
    a = ag.rand(4, 4, 4, dtype=ag.float64, requires_grad=True)
    with ag.no_grad():
        a[0] = 10000
    for dim in range(3):
        _grad_and_gradgrad(ag, lambda x, dim=dim: x.logcumsumexp(dim), (a,))


def test_movedim(ag):
    x = ag.randn(4, 3, 2, 1, dtype=ag.float64, requires_grad=True)
    _grad_and_gradgrad(ag, lambda x: ag.movedim(x, (0, 1, 2, 3), (3, 2, 1, 0)), (x,))
    _grad_and_gradgrad(ag, lambda x: ag.movedim(x, (0, -1, -2, -3), (-3, -2, -1, -0)), (x,))


@pytest.mark.parametrize("name", ["atleast_1d", "atleast_2d", "atleast_3d"])
def test_atleast(ag, name):
    fn = getattr(ag, name)
    s = ag.tensor(0.5, dtype=ag.float64, requires_grad=True)
    _grad_and_gradgrad(ag, lambda x: fn(x), (s,))
    a = ag.rand(4, dtype=ag.float64, requires_grad=True)
    _grad_and_gradgrad(ag, lambda x: fn(x), (a,))
    b = ag.rand(4, 3, dtype=ag.float64, requires_grad=True)
    c = ag.rand(4, 3, 2, dtype=ag.float64, requires_grad=True)
    d = ag.rand(4, 3, 2, 1, dtype=ag.float64, requires_grad=True)
    _grad_and_gradgrad(ag, lambda s, w, x, y, z: fn(s, w, x, y, z), (s, a, b, c, d))


def test_nansum_with_nans(ag):
    a = ag.randn(2, 2, 2, 2)
    with ag.no_grad():
        a[a < 0.2] = float("nan")
    a.requires_grad = True
    _grad_and_gradgrad(ag, lambda x: x.nansum(), (a,))
    _grad_and_gradgrad(ag, lambda x: x.nansum(0), (a,))
    _grad_and_gradgrad(ag, lambda x: x.nansum((0, 2)), (a,))
    _grad_and_gradgrad(ag, lambda x: x.nansum((0, -1)), (a,))
    _grad_and_gradgrad(ag, lambda x: x.nansum((0, -1), True), (a,))


def test_nansum_dtype(ag):
    inp = ag.randn(2, 2, 2, 2)
    for inp_dtype, out_dtype in ((ag.float32, ag.float64), (ag.float64, ag.float32)):
        with ag.no_grad():
            a = inp.to(inp_dtype)
        a.requires_grad = True
        b = ag.sum(a, dtype=out_dtype)
        b.backward()
        assert a.dtype == a.grad.dtype


def test_chain_matmul(ag):
    def gen_matrices(p):
        return [ag.randn(pi, pi_1).requires_grad_() for pi, pi_1 in zip(p[:-1], p[1:])]

    fn = ag.linalg.multi_dot if hasattr(ag.linalg, "multi_dot") else ag.chain_matmul
    for p in ([5, 10, 15, 5], [3, 5, 2, 6], [6, 2, 4, 8, 10]):
        mats = gen_matrices(p)
        _grad_and_gradgrad(ag, lambda *m: fn(list(m)), mats)
