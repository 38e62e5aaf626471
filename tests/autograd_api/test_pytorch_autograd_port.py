"""PyTorch's own autograd tests (test/test_autograd.py), ported to this library: the engine and
the autograd API. The tests are split by subject over this file and its siblings
test_pytorch_autograd_port_{functions,views,modes}.py; pytorch_port.py holds the shared fixture
(`ag`, which AUTOGRAD_PORT_REFERENCE=torch points at PyTorch to check the port itself).

This file: backward and grad, hooks and their order, retain_graph, create_graph, accumulation,
graph introspection and the requires_grad rules.

Tests of test_autograd.py left out, with the reason (for all four files):
- test_accumulate_grad_tensor_reference sparse cases, test_sparse_backward, test_sparse_mm_backward,
  test_sparse_gather_*, test_no_grad_copy_sparse, test_gradcheck_sparse_input,
  test_set_data_tensorimpl_type: sparse tensors.
- test_hooks_cpp: hooks on C++ autograd functions (covered by test_hooks on this library's ops).
- test_legacy_function_deprecation_exception, test_naughty_legacy_*, test_gc_in_destructor,
  test_volatile_deprecated, test_saved_variables_deprecated, test_return_leaf_inplace:
  legacy (non-static) autograd Functions and Variable-era attributes.
- test_materialize_grads, test_dont_materialize_grads as written: torch._C._functions.UndefinedGrad
  (C++ internals); ported with an output left unused instead.
- test_attribute_deletion: deleting C++-backed attributes (_grad_fn, _backward_hooks).
- test_thread_shutdown, test_profiler_*, test_record_function*, test_memory_profiler:
  PyTorch's API usage logging and its profiler's event format.
- test_profiler_propagation, test_fork_join_in_middle: torch.jit.
- test_free_unneeded_tensor, test_pin_memory, test_profiler_emit_nvtx,
  test_rnn_backward_to_input_but_not_parameters, test_lstmcell_backward_only_one_output_grad,
  test_simple_reentrant_cross_device, test_cross_device_reentrant_autograd,
  test_reentrant_parent_error_on_cpu, test_ctc_loss_cudnn, test_unused_output_device,
  test_backward_device, test_inputbuffer_add_multidevice: CUDA devices.
- test_autograd_complex_views_python's view_as_real/view_as_complex cases, TestAutogradComplex
  test_view_func_for_complex_views: complex views of real storage.
- test_type_conversions: legacy tensor type classes (torch.FloatTensor, .type(str)).
- test_strided_leaf_grad_layout: channels_last memory formats.
- test_fft_ifft_rfft_irfft, test_eig*, test_symeig*, test_svd_no_singularvectors,
  test_cholesky*, test_triangular_solve, test_pinverse, test_ctc_loss, test_LSTM/GRU gradgrad:
  op derivative checks of removed or linear-algebra-specific functions, covered by this library's
  op tests rather than by the engine's.
- test_profiler_aggregation_*, test_dir: PyTorch-specific object layouts.
- TestAutogradFunctional: ported in test_functional.py of this folder.
"""

from __future__ import annotations

import gc
import pickle
import threading
import weakref

import pytest

from .pytorch_port import assert_equal, numpy_of

# ---------------------------------------------------------------- backward and grad


def test_backward(ag):
    v = ag.randn(5, 5, requires_grad=True)
    x = ag.randn(5, 5, requires_grad=True)
    y = (ag.rand(5, 5) + 0.1).requires_grad_(True)
    z = ag.randn(5, 5, requires_grad=True)
    grad_output = ag.randn(5, 5)
    v.backward(grad_output)
    assert_equal(v.grad, grad_output)
    a = x + (y * z) + 4 * z**2 * x / y
    a.backward(grad_output)
    with ag.no_grad():
        x_grad = 4 * z.pow(2) / y + 1
        y_grad = z - 4 * x * z.pow(2) / y.pow(2)
        z_grad = 8 * x * z / y + y
    assert_equal(x.grad, x_grad * grad_output)
    assert_equal(y.grad, y_grad * grad_output)
    assert_equal(z.grad, z_grad * grad_output)


def test_sum_to_with_empty_dim_grad(ag):
    a = ag.rand(4, 0, requires_grad=True)
    b = ag.rand(4, 1, requires_grad=True)
    c = a + b
    assert tuple(c.shape) == (4, 0)
    c.sum().backward()
    assert_equal(b.grad, ag.zeros(4, 1))
    assert_equal(a.grad, ag.zeros(4, 0))


def test_hessian_vector(ag):
    x = ag.randn(2, 2, requires_grad=True)
    y = ag.randn(2, 2, requires_grad=True)
    z = x**2 + y * x + y**2
    z.backward(ag.ones(2, 2), create_graph=True)
    with ag.no_grad():
        x_grad = 2 * x + y
        y_grad = x + 2 * y
    assert_equal(x.grad, x_grad)
    assert_equal(y.grad, y_grad)
    grad_sum = 2 * x.grad + y.grad
    grad_sum.backward(ag.ones(2, 2))
    assert_equal(x.grad, x_grad + ag.ones(2, 2) * 5)
    assert_equal(y.grad, y_grad + ag.ones(2, 2) * 4)


def test_grad(ag):
    x = ag.randn(2, 2, requires_grad=True)
    y = ag.randn(2, 2, requires_grad=True)
    z = x**2 + y * x + y**2
    z.backward(ag.ones(2, 2), create_graph=True)
    x_grad = 2 * x + y
    y_grad = x + 2 * y
    assert_equal(x.grad, x_grad)
    assert_equal(y.grad, y_grad)
    grad_sum = 2 * x.grad + y.grad
    x_hv = ag.autograd.grad(
        outputs=[grad_sum], grad_outputs=[ag.ones(2, 2)], inputs=[x], create_graph=True
    )
    assert_equal(x_hv[0], ag.ones(2, 2) * 5)
    assert_equal(x.grad, x_grad)
    assert_equal(y.grad, y_grad)
    grad_out = ag.ones(2)
    with pytest.raises(RuntimeError) as info:
        ag.autograd.grad(outputs=[grad_sum], grad_outputs=[grad_out], inputs=[x], create_graph=True)
    assert str(info.value) == (
        "Mismatch in shape: grad_output[0] has a shape of "
        + str(grad_out.shape)
        + " and output[0] has a shape of "
        + str(grad_sum.shape)
        + "."
    )


def test_grad_nonleaf(ag):
    x_init = ag.randn(2, 2, requires_grad=True)
    x = x_init
    y = ag.randn(2, 2, requires_grad=True)
    grad_output = ag.ones(2, 2)

    def fn(x):
        return x**2 + y * x + y**2

    for _ in range(5):
        (grad_x,) = ag.autograd.grad(fn(x), x, grad_outputs=grad_output, create_graph=True)
        grad_x_expected = 2 * x + y
        assert y.grad is None
        assert x.grad is None
        assert_equal(grad_x, grad_x_expected)
        x = x + 0.05 * grad_x
    val_init = fn(x_init).sum()
    val_final = fn(x).sum()
    assert val_final.item() > val_init.item()
    x.backward(grad_output)
    assert y.grad is not None
    assert x_init.grad is not None


def test_grad_nonleaf_many_outputs(ag):
    x = ag.randn(4, 2, requires_grad=True)
    a, b = x.chunk(2)
    hook_called = [False]

    def hook(*grads):
        hook_called[0] = True

    x.register_hook(hook)
    go = ag.randn(2, 2)
    grad_a, grad_b = ag.autograd.grad((a + 2 * b), [a, b], grad_outputs=go, create_graph=True)
    assert_equal(grad_a, go)
    assert_equal(grad_b, go * 2)
    assert not hook_called[0]
    assert x.grad is None


def test_grad_nonleaf_register_hook(ag):
    x = ag.randn(5, requires_grad=True)
    x_list = x.unbind()
    x0 = x_list[0]
    hook_results = [None]

    def hook(grad):
        hook_results[0] = grad

    x0.register_hook(hook)
    x_list[0].backward()
    assert_equal(hook_results[0], ag.tensor(1.0))
    expected_grad = [1.0, 0, 0, 0, 0]
    assert_equal(x.grad, expected_grad)
    assert x_list[0].grad is None
    for i in range(1, 5):
        x_list[i].backward()
        assert hook_results[0] is None
        expected_grad[i] = 1.0
        assert_equal(x.grad, expected_grad)
        assert x_list[i].grad is None


def test_hook_with_no_name(ag):
    class MyHookClass:
        def __call__(self, grad):
            return grad.clone()

    x = ag.randn(5, requires_grad=True).clone()
    x.register_hook(MyHookClass())
    x.sum().backward()


def test_sharded_grad(ag):
    leaves = [ag.zeros(5, 5, requires_grad=True) for _ in range(10)]
    intermediates = [leaf * i + leaf * leaf for i, leaf in enumerate(leaves)]
    loss = sum(v * i for i, v in enumerate(intermediates)).sum()

    def group(items, size):
        return (items[i : i + size] for i in range(0, len(items), size))

    d_intermediates = [
        d for batch in group(intermediates, 2) for d in ag.autograd.grad(loss, batch)
    ]
    ag.autograd.backward(intermediates, d_intermediates)
    for i, leaf in enumerate(leaves):
        assert_equal(leaf.grad, i * i * (1 + leaf))


def test_backward_badcalls(ag):
    x = ag.ones(1)
    with pytest.raises(RuntimeError, match="does not require grad"):
        x.backward()


def test_grad_badcalls(ag):
    x = ag.ones(1)
    y = x**2
    with pytest.raises(RuntimeError, match="does not require grad"):
        ag.autograd.grad(x, y)
    with pytest.raises(RuntimeError, match="does not require grad"):
        ag.autograd.grad(y, x)
    x = ag.ones(1, requires_grad=True)
    y = x**2
    ag.autograd.grad(y, x)


def test_grad_fn_badcalls(ag):
    error_regex = "expected .* arguments, got .* instead"
    x = ag.ones(1, requires_grad=True)
    y = x**2
    with pytest.raises(TypeError, match=error_regex):
        y.grad_fn(x.detach(), x.detach())
    with pytest.raises(TypeError, match=error_regex):
        y.grad_fn()
    y.grad_fn(x.detach())


def test_grad_unreachable(ag):
    x = ag.ones(1, requires_grad=True)
    y = ag.ones(1, requires_grad=True)
    _z = x * 2
    _w = y * 2
    grad_x, grad_y = ag.autograd.grad(x * 2, [x, y], allow_unused=True)
    assert_equal(grad_x, x * 2)
    assert grad_y is None
    z = ag.ones(1, requires_grad=True)
    grad_x, grad_z = ag.autograd.grad(x * 2, [x, z], allow_unused=True)
    assert_equal(grad_x, x * 2)
    assert grad_z is None
    with pytest.raises(RuntimeError, match="Set allow_unused=True"):
        ag.autograd.grad(x * 2, [x, y], allow_unused=False)


def test_grad_unreachable_discovery(ag):
    class MyFunc(ag.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, x):
            pytest.fail("This node should not be executed!")

    x = MyFunc.apply(ag.randn(1, requires_grad=True) * 2)
    y = ag.randn(1, requires_grad=True)
    (gY,) = ag.autograd.grad(x, (y,), allow_unused=True)
    assert gY is None
    x = MyFunc.apply(ag.randn(1, requires_grad=True) * 2)
    y = ag.randn(1, requires_grad=True)
    z = ag.randn(1, requires_grad=True)
    (gY, gZ) = ag.autograd.grad(x + z, (y, z), allow_unused=True)
    assert gY is None
    assert gZ is not None


def test_grad_batched_grad(ag):
    x = ag.randn(2, 2, requires_grad=True)
    out = x.clone()
    batched_grad = ag.arange(3).expand(2, 2, 3).transpose(0, 2).to(x.dtype)
    (grad,) = ag.autograd.grad(out, (x,), (batched_grad,), is_grads_batched=True)
    assert_equal(grad, ag.arange(3).expand(2, 2, 3).transpose(0, 2).to(x.dtype))


def test_multi_backward(ag):
    x = ag.randn(5, 5, requires_grad=True)
    y = ag.randn(5, 5, requires_grad=True)
    q = ag.randn(5, 5, requires_grad=True)
    a = ag.randn(5, 5, requires_grad=True)
    b = ag.randn(5, 5, requires_grad=True)
    q2 = q * 2
    z = x + y + q2
    c = a * b + q2
    grad_z = ag.randn(5, 5)
    grad_c = ag.randn(5, 5)
    ag.autograd.backward([z, c], [grad_z, grad_c])
    assert_equal(x.grad, grad_z)
    assert_equal(y.grad, grad_z)
    assert_equal(a.grad, grad_c * b)
    assert_equal(b.grad, grad_c * a)
    assert_equal(q.grad, (grad_c + grad_z) * 2)


def test_multi_backward_no_grad(ag):
    x = ag.randn(5, 5, requires_grad=True)
    y = ag.randn(5, 5, requires_grad=False)
    z = x + y
    q = y * 2
    with pytest.raises(RuntimeError):
        ag.autograd.backward([z, q], [ag.ones(5, 5), ag.ones(5, 5)])


def test_backward_with_inputs(ag):
    x = ag.randn(2, 2, requires_grad=True)
    y = ag.randn(2, 2, requires_grad=True)

    def fn():
        return x**2 + y * x + y**2

    gradient = ag.ones(2, 2)
    with ag.no_grad():
        x_grad_expected = 2 * x + y
        y_grad_expected = x + 2 * y

    def reset_grad():
        x.grad = None
        y.grad = None

    ag.autograd.backward(fn(), gradient, inputs=[x, y])
    assert_equal(x.grad, x_grad_expected)
    assert_equal(y.grad, y_grad_expected)
    reset_grad()
    ag.autograd.backward(fn(), gradient, inputs=[x])
    assert_equal(x.grad, x_grad_expected)
    assert y.grad is None
    reset_grad()
    ag.autograd.backward(fn(), gradient, inputs=[y])
    assert_equal(y.grad, y_grad_expected)
    assert x.grad is None
    reset_grad()
    ag.autograd.backward(fn(), gradient, inputs=y)
    assert_equal(y.grad, y_grad_expected)
    assert x.grad is None
    reset_grad()
    with pytest.raises(RuntimeError, match="cannot be empty"):
        ag.autograd.backward(fn(), gradient, inputs=[])


def test_backward_with_nonleaf_inputs(ag):
    x = ag.randn(2, 2, requires_grad=True)
    x_nonleaf = x * 1
    y = ag.randn(2, 2, requires_grad=True)
    z = ag.randn(2, 2, requires_grad=True)
    out = x_nonleaf**2 + y * x_nonleaf + y**2
    out.backward(ag.ones(2, 2), create_graph=True, inputs=[x, y, x_nonleaf])
    with ag.no_grad():
        x_grad_expected = 2 * x + y
        x_non_leaf_expected = 2 * x_nonleaf + y
    assert_equal(y.grad, x + 2 * y)
    assert_equal(x.grad, x_grad_expected)
    assert_equal(x_nonleaf.grad, x_non_leaf_expected)
    out.backward(ag.ones(2, 2), create_graph=True, inputs=[z])
    assert z.grad is None


def test_dependent_backward(ag):
    x = ag.randn(10, requires_grad=True)
    y = x**2
    z = y**3
    go_y = ag.randn(10)
    go_z = ag.randn(10)
    ag.autograd.backward([y, z], [go_y, go_z])
    with ag.no_grad():
        expected = 2 * x * go_y + 6 * x.pow(5) * go_z
    assert_equal(x.grad, expected)


def test_duplicate_backward_root(ag):
    a = ag.randn(5, 5, requires_grad=True)
    b = ag.randn(5, 5, requires_grad=True)
    x = a * b
    grad_output = ag.randn_like(x)
    ag.autograd.backward([x, x], [grad_output, grad_output])
    assert_equal(a.grad, b * grad_output * 2)
    assert_equal(b.grad, a * grad_output * 2)


def test_backward_no_grad(ag):
    a = ag.randn(5, 5, requires_grad=True)
    b = a + 2
    with pytest.raises(RuntimeError):
        ag.autograd.backward([b], [None])


def test_backward_twice_with_saved_values(ag):
    b = ag.randn(3, requires_grad=True, dtype=ag.float64)
    c = ag.zeros(3, dtype=ag.float64)
    c[[1, 2]] = b[[1, 1]]
    c.backward(ag.tensor([1, 1, 1], dtype=ag.float64))
    with pytest.raises(RuntimeError, match="Specify retain_graph=True"):
        c.backward(ag.tensor([1, 1, 1], dtype=ag.float64))


def test_backward_twice_retained_graph_with_saved_values(ag):
    b = ag.randn(3, requires_grad=True, dtype=ag.float64)
    c = ag.zeros(3, dtype=ag.float64)
    c[[1, 2]] = b[[1, 1]]
    c.backward(ag.tensor([1, 1, 1], dtype=ag.float64), retain_graph=True)
    c.backward(ag.tensor([1, 1, 1], dtype=ag.float64))


def test_backward_twice_without_saved_values(ag):
    b = ag.randn(3, requires_grad=True, dtype=ag.float64)
    c = b + 1
    c.backward(ag.tensor([1, 1, 1], dtype=ag.float64))
    c.backward(ag.tensor([1, 1, 1], dtype=ag.float64))


def test_next_functions(ag):
    x = ag.randn(5, 5, requires_grad=True)
    y = ag.randn(5, 5, requires_grad=True)
    a = x + y
    assert a.grad_fn is not None
    next_functions = a.grad_fn.next_functions
    assert len(next_functions) == 2
    assert type(next_functions[0][0]).__name__ == "AccumulateGrad"
    assert next_functions[0][1] == 0
    assert type(next_functions[1][0]).__name__ == "AccumulateGrad"
    assert next_functions[1][1] == 0
    b = a + 5
    next_functions = b.grad_fn.next_functions
    assert len(next_functions) == 2
    assert next_functions[0][0] is a.grad_fn
    assert next_functions[1][0] is None


def test_accumulate_grad(ag):
    grad_output = ag.ones(5, 5)

    def compute_grad(create_graph):
        x = ag.randn(5, 5, requires_grad=True)
        y = x + 2
        y.backward(grad_output, retain_graph=True)
        x_grad = x.grad
        x_grad_clone = x.grad.clone()
        y.backward(grad_output, create_graph=create_graph)
        return x_grad, x_grad_clone

    x_grad, x_grad_clone = compute_grad(create_graph=False)
    assert_equal(x_grad, x_grad_clone * 2)
    x_grad, x_grad_clone = compute_grad(create_graph=True)
    assert_equal(x_grad, x_grad_clone)


def test_accumulate_grad_tensor_reference(ag):
    def check(params_grad, backward_grad, should_preserve_reference, create_graph):
        params = ag.tensor([1.5, 1.5]).requires_grad_()
        params.grad = params_grad
        grad_saved = params.grad
        params.backward(backward_grad, create_graph=create_graph)
        assert (id(grad_saved) == id(params.grad)) == should_preserve_reference

    for create_graph in (False, True):
        check(ag.tensor([1.5, 1.5]), ag.tensor([1.5, 1.5]), not create_graph, create_graph)


def test_accumulate_grad_with_zero_numel_grad(ag):
    a = ag.rand(4, 0, requires_grad=True)
    b = ag.rand(4, 1, requires_grad=True)
    c = a + b
    assert tuple(c.shape) == (4, 0)
    c.sum().backward()
    assert_equal(b.grad, ag.zeros(4, 1))
    assert_equal(a.grad, ag.zeros(4, 0))


def test_backward_copy(ag):
    x = ag.ones(5, 5, requires_grad=True)
    y = ag.ones(5, 5, requires_grad=True)
    a = x + 2
    b = y + 2
    c = x + 2
    add1 = a + b
    add2 = add1 + c
    for _ in range(4):
        a = a * 2
        b = b * 2
        c = c * 2
    branch = a + b + c
    out = add2 + branch
    out.backward(ag.ones(5, 5))
    assert_equal(x.grad, ag.ones(5, 5) * 34)
    assert_equal(y.grad, ag.ones(5, 5) * 17)


def test_unused_output(ag):
    x = ag.randn(10, 10, requires_grad=True)
    outputs = x.chunk(5)
    o = outputs[2]
    o = o * 4 + 2
    o.sum().backward()
    expected_grad = numpy_of(ag.zeros(10, 10))
    expected_grad[4:6] = 4
    assert_equal(x.grad, expected_grad)
    with ag.no_grad():
        x.grad.zero_()
    grad_output = ag.randn(2, 10)
    outputs = x.chunk(5)
    outputs[0].backward(grad_output)
    expected_grad = numpy_of(ag.zeros(10, 10))
    expected_grad[:2] = numpy_of(grad_output)
    assert_equal(x.grad, expected_grad)


def test_isolated_node(ag):
    x = ag.randn(5, 5, requires_grad=True)
    y = ag.randn(5, 5, requires_grad=True)
    a = x + y
    b = ag.max(a, 1, True)[1].repeat(1, 5).double()
    o = (b + a).sum()
    o.backward()


def test_free_deep_graph(ag):
    def scope():
        depth = 15000
        x = ag.randn(1, requires_grad=True)
        y = x.clone()
        for _ in range(depth):
            y = y + y * 0.000001

    scope()


def test_free_deep_graph_complicated(ag):
    def scope():
        depth = 10000
        randchoice = ag.randint(2, [depth, 2])
        x = ag.randn(1, requires_grad=True)
        y = x.clone()
        prev_values = [None, None]
        for _ in range(depth):
            prev_tensors = [t for t in prev_values[:-1] if t is not None]
            prev_values.append(y)
            prev_values.pop(0)
            y += y * 0.000001
            if len(prev_tensors) == 2:
                y += randchoice[depth - 1].mul(ag.cat(prev_tensors)).sum()

    scope()


def test_free_deep_graph_pyfunction(ag):
    class MyOp(ag.autograd.Function):
        @staticmethod
        def forward(ctx, tensor1, tensor2):
            return tensor1 + tensor2

        @staticmethod
        def backward(ctx, grad_output):
            return grad_output, grad_output

    def scope():
        x = ag.randn(1, requires_grad=True)
        y = x.clone()
        for _ in range(5000):
            y = MyOp.apply(y, y)

    scope()


def test_no_unnecessary_save(ag):
    mu = ag.ones(1, requires_grad=True)
    x = ag.empty(1)
    loss = 0
    for i in range(3):
        x.detach_()
        x.copy_(mu + i)
        ft = ag.tensor([float(i)])
        multiplied = x * ft
        s = multiplied.sum()
        loss += s
    loss.backward()


def test_deep_backward_no_recursion_limit(ag):
    x = ag.randn(1, requires_grad=True)
    y = x
    for _ in range(20000):
        y = y * 1.0
    y.backward()
    assert_equal(x.grad, [1.0])


# ---------------------------------------------------------------- hooks


def test_hooks(ag):
    x = ag.ones(5, 5, requires_grad=True)
    y = ag.ones(5, 5) * 4
    y.requires_grad_(True)
    counter = [0]

    def bw_hook(inc, grad):
        assert hasattr(grad, "grad_fn")
        counter[0] += inc

    z = x**2 + x * 2 + x * y + y
    x.register_hook(lambda *args: bw_hook(0, *args))
    test = z.register_hook(lambda *args: bw_hook(1, *args))
    z.backward(ag.ones(5, 5), retain_graph=True)
    assert counter[0] == 1
    test2 = z.register_hook(lambda *args: bw_hook(2, *args))
    z.backward(ag.ones(5, 5), retain_graph=True)
    assert counter[0] == 4
    test2.remove()
    z.backward(ag.ones(5, 5), retain_graph=True)
    assert counter[0] == 5

    def bw_hook_modify(grad):
        return grad.mul(2)

    test.remove()
    z.register_hook(bw_hook_modify)
    with ag.no_grad():
        y.grad.zero_()
    z.backward(ag.ones(5, 5), retain_graph=True)
    assert_equal(y.grad, (x + 1) * 2)
    y.register_hook(bw_hook_modify)
    with ag.no_grad():
        y.grad.zero_()
    z.backward(ag.ones(5, 5))
    assert_equal(y.grad, (x + 1) * 4)


def test_hooks_on_module_ops(ag):
    bn = ag.nn.BatchNorm1d(5, affine=False)
    bn.double()
    bn.eval()
    counter = [0]

    def bw_hook(grad):
        counter[0] += 1
        return grad * 2

    x = ag.ones(5, 5, requires_grad=True)
    z = bn(x)
    z.register_hook(bw_hook)
    z.sum().backward()
    assert counter[0] == 1
    assert_equal(x.grad, ag.ones(5, 5) * 2, atol=1e-5, rtol=0)


def test_hook_none(ag):
    class NoneGradientFunction(ag.autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            assert ctx.needs_input_grad[0]
            assert not ctx.needs_input_grad[1]
            return x, y

        @staticmethod
        def backward(ctx, grad_x, grad_y):
            return grad_x, None

    was_called = [False]

    def hook(grad):
        assert grad is not None
        was_called[0] = True

    x = ag.randn(5, 5, requires_grad=True)
    y = ag.randn(5, 5)
    rx, ry = NoneGradientFunction.apply(x, y)
    rx.register_hook(hook)
    ry.register_hook(hook)
    sum([rx, ry]).sum().backward()
    assert was_called[0]


def test_retain_grad(ag):
    input = ag.rand(1, 3, requires_grad=True)
    h1 = input * 3
    out = (h1 * h1).sum()
    h1.retain_grad()
    h1.retain_grad()
    out.backward(retain_graph=True)
    assert_equal(h1 * 2, h1.grad)
    out.backward(retain_graph=True)
    assert_equal(h1 * 4, h1.grad)
    with ag.no_grad():
        input.grad.zero_()
    input.retain_grad()
    input.retain_grad()
    out.backward()
    assert_equal(input * 18, input.grad)


def test_retain_grad_cycle(ag):
    x = ag.ones(5, 5, requires_grad=True)

    def run_test():
        y = x * 2
        y.retain_grad()
        return y, y / 2

    y, z = run_test()
    ref = weakref.ref(y)
    del y
    gc.collect()
    assert ref() is None
    z.sum().backward()


def test_retain_grad_inplace(ag):
    a = ag.tensor([1.0], requires_grad=True).clone()
    a.retain_grad()
    a.mul_(2)
    a.sum().backward()
    assert_equal(a.grad, [1.0])


def test_retains_grad_property(ag):
    a = ag.tensor([1.0], requires_grad=True)
    assert not a.retains_grad
    b = a * 2
    assert not b.retains_grad
    b.retain_grad()
    assert b.retains_grad


def test_tensor_hooks_inplace(ag):
    count1 = [0]
    count2 = [0]

    def fn1(grad):
        count1[0] += 1
        assert_equal(grad, ag.tensor([4.0]))
        return grad * 2

    def fn2(grad):
        count2[0] += 1
        assert_equal(grad, ag.tensor([1.0]))
        return grad * 2

    a = ag.tensor([1.0], requires_grad=True)
    b = a.clone()
    b.register_hook(fn1)
    b.mul_(2)
    b.register_hook(fn2)
    b.sum().backward()
    assert count1[0] == 1
    assert count2[0] == 1
    assert_equal(a.grad, [8.0])


def test_hook_order_tensor_pre_node_post(ag):
    """Tensor hooks run before the node's pre-hooks, which run before its post-hooks."""
    order = []
    a = ag.tensor([1.0, 2.0], requires_grad=True)
    b = a * 3
    b.grad_fn.register_prehook(lambda grad_outputs: order.append("pre"))
    b.grad_fn.register_hook(lambda grad_inputs, grad_outputs: order.append("post"))
    b.register_hook(lambda grad: order.append("tensor"))
    b.sum().backward()
    assert order == ["tensor", "pre", "post"]


def test_node_prehook_changes_gradient(ag):
    a = ag.tensor([1.0, 2.0], requires_grad=True)
    b = a * 3
    b.grad_fn.register_prehook(lambda grad_outputs: (grad_outputs[0] * 10,))
    b.sum().backward()
    assert_equal(a.grad, [30.0, 30.0])


def test_node_post_hook_changes_gradient(ag):
    a = ag.tensor([1.0, 2.0], requires_grad=True)
    b = a * 3
    b.grad_fn.register_hook(
        lambda grad_inputs, grad_outputs: (grad_inputs[0] + 1,) + tuple(grad_inputs[1:])
    )
    b.sum().backward()
    assert_equal(a.grad, [4.0, 4.0])


def test_hooks_removed_by_handle(ag):
    a = ag.tensor([1.0], requires_grad=True)
    b = a * 2
    calls = []
    handle = b.register_hook(lambda g: calls.append(1))
    pre = b.grad_fn.register_prehook(lambda g: calls.append(2))
    post = b.grad_fn.register_hook(lambda gi, go: calls.append(3))
    handle.remove()
    pre.remove()
    post.remove()
    b.backward()
    assert calls == []


def test_post_accumulate_grad_hook(ag):
    acc = []
    a = ag.tensor([1.0, 2.0], requires_grad=True)
    a.register_post_accumulate_grad_hook(lambda t: acc.append(numpy_of(t.grad).copy()))
    (a * 2).sum().backward()
    (a * 3).sum().backward()
    assert [list(v) for v in acc] == [[2.0, 2.0], [5.0, 5.0]]


def test_post_accumulate_grad_hook_on_non_leaf(ag):
    a = ag.tensor([1.0], requires_grad=True) * 2
    with pytest.raises(
        RuntimeError,
        match="post accumulate grad hooks cannot be registered on non-leaf",
    ):
        a.register_post_accumulate_grad_hook(lambda t: None)


def test_hook_on_tensor_that_does_not_require_grad(ag):
    a = ag.tensor([1.0])
    with pytest.raises(
        RuntimeError,
        match="cannot register a hook on a tensor that doesn't require gradient",
    ):
        a.register_hook(lambda g: g)


def test_grad_hook_sees_grad_in_grad_api(ag):
    x = ag.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    seen = []
    y.register_hook(lambda g: seen.append(numpy_of(g).tolist()))
    (g,) = ag.autograd.grad(y.sum(), x)
    assert seen == [[1.0, 1.0]]
    assert_equal(g, [2.0, 2.0])
    assert x.grad is None


def test_grad_mode_restored_reentrant(ag):
    class MyFunction(ag.autograd.Function):
        @staticmethod
        def forward(ctx, inp):
            return inp.clone()

        @staticmethod
        def backward(ctx, go):
            original = ag.is_grad_enabled()
            with ag.enable_grad():
                assert ag.is_grad_enabled()
                foo = ag.rand(go.size(), requires_grad=True)
                (grad,) = ag.autograd.grad(foo**3, foo, grad_outputs=go)
                assert ag.is_grad_enabled()
            assert ag.is_grad_enabled() == original
            return grad

    inp = ag.rand(3, requires_grad=True)
    MyFunction.apply(inp).sum().backward()
    MyFunction.apply(inp).sum().backward(create_graph=True)


# ---------------------------------------------------------------- requires_grad rules


def test_requires_grad(ag):
    x = ag.randn(5, 5)
    y = ag.randn(5, 5)
    z = ag.randn(5, 5, requires_grad=True)
    a = x + y
    assert not a.requires_grad
    b = a + z
    assert b.requires_grad
    b.backward(ag.ones(5, 5))
    assert x.grad is None and y.grad is None and a.grad is None


def test_requires_grad_(ag):
    x = ag.randn(5, 5)
    y = ag.randn(5, 5, requires_grad=True)
    assert x is x.requires_grad_()
    assert x.requires_grad
    assert y is y.requires_grad_()
    assert y.requires_grad
    assert x is x.requires_grad_(True)
    assert y is y.requires_grad_(True)
    z = x * y
    with pytest.raises(RuntimeError):
        z.requires_grad_(False)
    assert z is z.requires_grad_()
    assert z.requires_grad
    assert x is x.requires_grad_(False)
    assert not x.requires_grad
    assert y is y.requires_grad_(False)
    assert not y.requires_grad


def test_requires_grad_inplace(ag):
    a = ag.randn(5, 5)
    b = ag.randn(5, 5, requires_grad=True)
    a += b
    assert a.requires_grad
    a = ag.randn(5, 5) + 0
    b = ag.randn(5, 5, requires_grad=True)
    a += b
    assert a.requires_grad


def test_no_requires_grad_inplace(ag):
    a = ag.randn(2, 3)
    a.add_(5)
    a.requires_grad = True
    a.sum().backward()
    assert_equal(a.grad, ag.ones(2, 3))
    a = ag.randn(2, 3)
    b = a[:]
    b.add_(5)
    a.requires_grad = True
    a.sum().backward()
    assert_equal(a.grad, ag.ones(2, 3))
    a = ag.randn(2, 3)
    b = a[:]
    a.requires_grad = True
    with pytest.raises(RuntimeError):
        a.add_(5)
    with pytest.raises(RuntimeError):
        b.add_(5)


def test_requires_grad_only_floating_or_complex(ag):
    with pytest.raises(RuntimeError, match="nly Tensors of floating point.*can require gradients"):
        ag.tensor([1, 2]).requires_grad_()
    with pytest.raises(RuntimeError, match="nly Tensors of floating point.*can require gradients"):
        ag.ones(2, dtype=ag.int64, requires_grad=True)


def test_non_leaf_requires_grad_assignment(ag):
    x = ag.ones(2, requires_grad=True) * 2
    with pytest.raises(
        RuntimeError,
        match="you can only change requires_grad flags of leaf variables",
    ):
        x.requires_grad = False


def test_integer_outputs(ag):
    inp = ag.rand(4, requires_grad=True)
    for out in (inp.argmax(), inp.argmin(), inp.argsort()):
        assert not out.dtype.is_floating_point
        assert not out.requires_grad
    val = ag.rand((), requires_grad=True)
    out = ag.searchsorted(inp, val)
    assert not out.dtype.is_floating_point
    assert not out.requires_grad
    bins = ag.linspace(0, 1.0, steps=100, requires_grad=True)
    vals = ag.rand(5, 5, requires_grad=True)
    out = ag.bucketize(vals, bins)
    assert not out.dtype.is_floating_point
    assert not out.requires_grad
    out = inp > 0.5
    assert not out.requires_grad


def test_requires_grad_factory(ag):
    x = ag.randn(2, 3)
    for fn in (ag.ones_like, ag.randn_like, ag.zeros_like):
        for requires_grad in (True, False):
            output = fn(x, dtype=ag.float32, requires_grad=requires_grad)
            assert output.requires_grad == requires_grad
            assert output.dtype == ag.float32


def test_detach(ag):
    x = ag.randn(10, 10, requires_grad=True)
    y = x + 2
    y = y.detach()
    z = y * 4 + 2
    assert not y.requires_grad
    assert not z.requires_grad
    x = ag.randn(10, 10, requires_grad=True)
    y = x * 2
    y = y.detach()
    assert not y.requires_grad
    assert y.grad_fn is None
    z = x + y
    z.sum().backward()
    assert_equal(x.grad, ag.ones(10, 10))
    x = ag.randn(10, 10, requires_grad=True)
    y = ag.randn(10, 10, requires_grad=True)
    a = x * 2
    (y + a).sum().backward(retain_graph=True)
    a.detach_()
    assert not a.requires_grad
    (y + a).sum().backward()
    assert_equal(x.grad, ag.ones(10, 10) * 2)
    assert_equal(y.grad, ag.ones(10, 10) * 2)
    view = x.narrow(0, 1, 4)
    with pytest.raises(RuntimeError, match="view"):
        view.detach_()


def test_detach_base(ag):
    x = ag.randn(10, 10, requires_grad=True)
    view = x.narrow(0, 1, 4)
    x.detach_()
    assert not x.requires_grad
    assert view.requires_grad
    assert view.grad_fn is not None
    assert view._base is x


def test_type_conversion_backward(ag):
    fvar = ag.randn(5, 5).float().requires_grad_(True)
    fvar.double().sum().backward()
    assert_equal(fvar.grad, ag.ones_like(fvar))
    assert fvar.grad.dtype == fvar.dtype
    dvar = ag.randn(5, 5).double().requires_grad_(True)
    dvar.float().sum().backward()
    assert_equal(dvar.grad, ag.ones_like(dvar))
    assert dvar.grad.dtype == dvar.dtype


def test_shape(ag):
    x = ag.randn(3, 4)
    assert len(x.shape) == 2
    assert x.shape[0] == 3
    assert x.shape[1] == 4


def test_numpy_requires_grad(ag):
    x = ag.randn(2, 2, requires_grad=True)
    with pytest.raises(
        RuntimeError,
        match=r"Can't call numpy\(\) on Tensor that requires grad. Use "
        r"tensor.detach\(\).numpy\(\) instead.",
    ):
        x.numpy()
    with ag.no_grad():
        x.numpy()
    x = ag.randn(2, 2)
    x.numpy()


def test_pickle(ag):
    x = ag.randn(10, 10, requires_grad=True)
    y = ag.randn(10, 10, requires_grad=False)
    for protocol in range(3):
        xc, yc = pickle.loads(pickle.dumps([x, y], protocol=protocol))
        assert_equal(xc, x)
        assert xc.requires_grad == x.requires_grad
        assert_equal(yc, y)
        assert yc.requires_grad == y.requires_grad


def test_grad_assignment(ag):
    x = ag.randn(5, 5)
    with pytest.raises(RuntimeError):
        x.grad = ag.randn(2, 2)
    with pytest.raises(RuntimeError):
        x.grad = ag.randn(5, 5).long()
    with pytest.raises(RuntimeError):
        x.grad = x


def test_grad_nonleaf_access_warns(ag):
    x = ag.ones(2, requires_grad=True) * 2
    with pytest.warns(UserWarning, match="is not a leaf Tensor is being accessed"):
        assert x.grad is None


def test_version_counter(ag):
    x = ag.randn(1, 2)
    saved = x._version
    x.add_(1).add_(1)
    assert x._version > saved
    xz = x[:]
    assert x._version == xz._version
    xz.add_(1)
    assert x._version == xz._version
    saved = x._version
    x.data = ag.randn(2, 3)
    assert x._version == saved
    x.add_(1)
    assert x._version > saved
    assert x._version == xz._version
    xz.add_(1)
    assert x._version == xz._version


def test_set_data_preserve_pyobj(ag):
    a = ag.randn(1, 2)
    b = ag.randn(1, 2)
    b_id_saved = id(b)
    b.data = a
    assert b_id_saved == id(b)


def test_output_nr(ag):
    x = ag.randn(10, requires_grad=True)
    a, b = x.split(5)
    assert a.output_nr == 0
    assert b.output_nr == 1


def test_thread_backward_separate_inputs(ag):
    errors = []

    def train_fn():
        try:
            x = ag.ones(5, 5, requires_grad=True)
            y = (x + 3) * (x + 4) * 0.5
            y.sum().backward()
            assert_equal(x.grad, x + 3.5)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=train_fn) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not errors


def test_thread_backward_same_input(ag):
    x = ag.ones(5, 5, requires_grad=True)
    errors = []

    def train_fn_backward():
        try:
            y = (x + 3) * (x + 4) * 0.5
            y.sum().backward()
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=train_fn_backward) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not errors
    assert_equal(x.grad, 4 * (x + 3.5))


def test_thread_python_thread_in_middle(ag):
    results = [0, 0]
    lock = threading.Lock()

    def train_fn_no_retain_graph(x):
        y = x + x**2
        try:
            y.sum().backward()
            with lock:
                results[0] += 1
        except RuntimeError as error:
            with lock:
                results[1] += 1
            assert "Specify retain_graph=True" in str(error)

    x = ag.ones(5, 5, requires_grad=True)
    y = x + x**2
    threads = [threading.Thread(target=train_fn_no_retain_graph, args=(y,)) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert results[0] >= 1
    assert sum(results) == 3
