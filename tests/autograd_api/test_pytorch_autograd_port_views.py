"""PyTorch's autograd tests, ported (see test_pytorch_autograd_port.py for the list left out):
in-place changes, version counters, views changed in place, setitem and indexing, out=, and
the gradients PyTorch's engine tests check for ties and subgradients."""

from __future__ import annotations

import math

import numpy as np
import pytest

from .pytorch_port import assert_equal, numpy_of


def test_inplace(ag):
    x = ag.ones(5, 5, requires_grad=True)
    y = (ag.ones(5, 5) * 4).requires_grad_(True)
    z = x * y
    q = z + y
    w = z * y
    z.add_(2)
    q.backward(ag.ones(5, 5), retain_graph=True)
    with pytest.raises(RuntimeError):
        w.backward(ag.ones(5, 5))
    z = x * y
    q = z * y
    r = z + y
    w = z.add_(y)
    w.backward(ag.ones(5, 5), retain_graph=True)
    r.backward(ag.ones(5, 5), retain_graph=True)
    with pytest.raises(RuntimeError):
        q.backward(ag.ones(5, 5))
    with ag.no_grad():
        x.grad.zero_()
    m = x / 2
    z = m + y / 8
    q = z * y
    r = z + y
    prev_version = z._version
    w = z.exp_()
    assert z._version != prev_version
    r.backward(ag.ones(5, 5), retain_graph=True)
    assert_equal(x.grad, ag.ones(5, 5) / 2)
    w.backward(ag.ones(5, 5), retain_graph=True)
    assert_equal(x.grad, ag.full((5, 5), (1 + math.e) / 2))
    with pytest.raises(RuntimeError):
        q.backward(ag.ones(5, 5))
    leaf = ag.ones(5, 5, requires_grad=True)
    x = leaf.clone()
    x.add_(10)
    assert_equal(x, ag.ones(5, 5) * 11)
    y = x + 2
    y.backward(ag.ones(5, 5))
    assert_equal(leaf.grad, ag.ones(5, 5))
    z = x * y
    x.add_(2)
    with pytest.raises(RuntimeError):
        z.backward(ag.ones(5, 5))


def test_inplace_version_error_text(ag):
    a = ag.randn(3, requires_grad=True)
    b = a.sigmoid()
    b.mul_(2)
    with pytest.raises(
        RuntimeError,
        match=r"one of the variables needed for gradient computation "
        r"has been modified by an inplace operation: \[torch.DoubleTensor \[3\]\], "
        r"which is output 0 of Sigmoid, is at version 1; expected version 0 "
        r"instead",
    ):
        b.sum().backward()


def test_no_grad_modifies_version(ag):
    x = ag.randn(5, requires_grad=True)
    y = ag.randn(5, requires_grad=True)
    z = (x * y).sum()
    with ag.no_grad():
        x *= 2
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.backward()


def test_leaf_assignment(ag):
    x = ag.randn(5, 5)
    y = ag.randn(5, requires_grad=True)
    z = ag.randn(5, requires_grad=True)
    x[0] = y
    x[1] = 2 * z
    assert x.requires_grad
    assert x.grad_fn is not None
    x.sum().backward()
    assert_equal(y.grad, ag.ones(5))
    assert_equal(z.grad, ag.ones(5) * 2)


def test_no_grad_assignment(ag):
    x = ag.randn(5, 5, requires_grad=True)
    y = ag.randn(5)
    with ag.no_grad():
        x[0] = y
    assert x.requires_grad
    assert x.grad_fn is None


def _setitem(ag, size, index):
    x = ag.ones(*size, requires_grad=True)
    y = x + 2
    y_version = y._version
    y[index] = 2
    assert y._version != y_version
    y.backward(ag.ones(*size))
    expected = numpy_of(ag.ones(*size))
    expected[_np_index(index)] = 0
    assert_equal(x.grad, expected)


def _setitem_tensor(ag, size, index):
    x = ag.ones(*size, requires_grad=True)
    y = x + 2
    y_version = y._version
    value = ag.zeros(x[index].size()).fill_(7)
    value.requires_grad = True
    y[index] = value
    assert y._version != y_version
    y.backward(ag.ones(*size))
    expected = numpy_of(ag.ones(*size))
    expected[_np_index(index)] = 0
    assert_equal(x.grad, expected)
    assert_equal(value.grad, ag.ones_like(value))
    x = ag.randn(4, requires_grad=True)
    y = ag.zeros(2, 3, 4)
    y[1] = x
    y.backward(ag.randn(2, 3, 4))
    assert x.size() == x.grad.size()


def _np_index(index):
    if isinstance(index, list):
        return tuple(_np_index(i) for i in index)
    if hasattr(index, "detach"):
        return numpy_of(index)
    return index


def test_setitem(ag):
    _setitem(ag, (5, 5), 1)
    _setitem(ag, (5,), 1)
    _setitem(ag, (1,), 0)
    _setitem(ag, (10,), [[0, 4, 2]])
    _setitem(ag, (5, 5), [[0, 4], [2, 2]])
    _setitem(ag, (5, 5, 5), [slice(None), slice(None), [1, 3]])
    _setitem(ag, (5, 5, 5), [slice(None), [1, 3], slice(None)])
    _setitem(ag, (5, 5, 5), [[1, 3], slice(None), slice(None)])
    _setitem(ag, (5, 5, 5), [slice(None), [2, 4], [1, 3]])
    _setitem(ag, (5, 5, 5), [[1, 3], [2, 4], slice(None)])


def test_setitem_tensor_values(ag):
    _setitem_tensor(ag, (5, 5), 3)
    _setitem_tensor(ag, (5, 5), [[0, 1], [1, 0]])
    _setitem_tensor(ag, (5,), 3)
    _setitem_tensor(ag, (5,), ag.tensor([3]).sum())
    _setitem_tensor(ag, (5,), [[0, 1, 2, 3]])
    _setitem_tensor(ag, (5, 5, 5), [slice(None), slice(None), [1, 3]])
    _setitem_tensor(ag, (5, 5, 5), [slice(None), [1, 3], slice(None)])
    _setitem_tensor(ag, (5, 5, 5), [[1, 3], slice(None), slice(None)])
    _setitem_tensor(ag, (5, 5, 5), [slice(None), [2, 4], [1, 3]])
    _setitem_tensor(ag, (5, 5, 5), [[1, 3], [2, 4], slice(None)])
    _setitem_tensor(ag, (5, 5, 5), [ag.tensor([1, 3]), [2, 4], slice(None)])


def test_setitem_mask(ag):
    mask = ag.tensor(np.random.default_rng(0).random((5, 5)) > 0.5)
    _setitem(ag, (5, 5), mask)
    _setitem(ag, (5,), mask[0])
    _setitem(ag, (1,), mask[0, 0:1])
    _setitem_tensor(ag, (5, 5), mask)
    _setitem_tensor(ag, (5,), mask[0])


def test_setitem_on_view_of_non_leaf(ag):
    x = ag.ones(4, 4, requires_grad=True)
    y = x * 2
    v = y[1]
    v[1:3] = 0
    y.sum().backward()
    expected = np.full((4, 4), 2.0)
    expected[1, 1:3] = 0
    assert_equal(x.grad, expected)


def test_index_backward_does_not_save_tensor(ag):
    a = ag.tensor([1.0, 0, 0])
    b = ag.zeros(3, requires_grad=True)
    tensor = b + 0
    tensor[a != 0] = tensor[a != 0]
    tensor.backward(ag.zeros_like(tensor))


def test_indexing(ag):
    x = ag.arange(1.0, 17).view(4, 4)
    y = x.clone().requires_grad_(True)

    def check_index(idx):
        if y.grad is not None:
            with ag.no_grad():
                y.grad.zero_()
        indexed_tensor = x[idx]
        indexed_var = y[idx]
        assert_equal(indexed_var, indexed_tensor)
        indexed_var.sum().backward()
        expected = np.zeros((4, 4))
        expected[_np_index(idx)] = 1
        assert_equal(y.grad, expected)

    check_index(1)
    check_index((1, 1))
    check_index(slice(1, None))
    check_index(slice(None, 2))
    check_index((slice(None, 2), 2))
    check_index((slice(1, 2), 2))
    check_index((1, slice(2, None)))
    check_index((slice(None, None), slice(2, None)))
    check_index(ag.tensor([0, 2]))
    check_index(ag.tensor(np.random.default_rng(1).random((4, 4)) > 0.5))
    check_index((Ellipsis, slice(2, None)))
    check_index(([0], [0]))
    check_index(([1, 2, 3], [0]))
    check_index(([1, 2], [2, 1]))
    check_index(([[1, 2], [3, 0]], [[0, 1], [2, 3]]))
    check_index((slice(None), [2, 3]))
    check_index(([2, 3], slice(None)))
    check_index([0])


def test_indexing_duplicates(ag):
    x = ag.arange(1.0, 17).view(4, 4)
    y = x.clone().requires_grad_(True)
    idx = ag.tensor([1, 1, 3, 2, 1, 2])
    y[idx].sum().backward()
    expected = np.zeros((4, 4))
    for i in [1, 1, 3, 2, 1, 2]:
        expected[i] += 1
    assert_equal(y.grad, expected)
    y = x.clone().requires_grad_(True)
    idx = [[1, 1, 3, 2, 1, 2], [0]]
    y[idx].sum().backward()
    expected = np.zeros((4, 4))
    for i in idx[0]:
        expected[i][0] += 1
    assert_equal(y.grad, expected)
    y = x.clone().requires_grad_(True)
    idx = [[[1, 2], [0, 0]], [[0, 1], [1, 1]]]
    y[idx].sum().backward()
    assert_equal(y.grad, [[0, 2, 0, 0], [1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 0, 0]])
    x = ag.arange(1.0, 65).view(4, 4, 4)
    y = x.clone().requires_grad_(True)
    idx = [[1, 1, 1], slice(None), slice(None)]
    y[idx].sum().backward()
    expected = np.zeros((4, 4, 4))
    expected[1] = 3
    assert_equal(y.grad, expected)


def test_select_sum(ag):
    x = ag.randn(10, requires_grad=True)

    def func(x):
        return x.select(0, 1).sum()

    assert ag.autograd.gradcheck(func, [x])
    assert ag.autograd.gradgradcheck(func, [x])


@pytest.mark.parametrize("name", ["stack", "hstack", "vstack", "dstack"])
def test_stacks(ag, name):
    fn = getattr(ag, name)
    x, y, z = (ag.randn(10, 10, requires_grad=True) for _ in range(3))
    stacked = fn([x, y, z])
    grad = ag.randn(*stacked.shape)
    stacked.backward(grad)
    g = numpy_of(grad)
    pieces = {
        "stack": lambda: (g[0], g[1], g[2]),
        "hstack": lambda: (g[:, 0:10], g[:, 10:20], g[:, 20:30]),
        "vstack": lambda: (g[0:10], g[10:20], g[20:30]),
        "dstack": lambda: (g[:, :, 0], g[:, :, 1], g[:, :, 2]),
    }[name]()
    for t, expected in zip((x, y, z), pieces):
        assert_equal(t.grad, expected)


def test_unbind(ag):
    stacked = ag.randn(3, 10, 10, requires_grad=True)
    x, y, z = stacked.unbind()
    grad = ag.randn(3, 10, 10)
    ag.autograd.backward([x, y, z], grad.unbind())
    assert_equal(stacked.grad, grad)
    for i in range(3):
        stacked = ag.randn(3, 10, 10, requires_grad=True)
        outs = stacked.unbind()
        gi = grad.unbind()[i]
        (g,) = ag.autograd.grad(outs[i], stacked, gi)
        g_expected = ag.stack([gi if j == i else ag.zeros_like(gi) for j in range(3)], dim=0)
        assert_equal(g, g_expected)


def test_put(ag):
    root = ag.randn(4, 5, requires_grad=True)
    values = ag.randn(6, requires_grad=True)
    idx = ag.tensor([1, 2, 3, -1, -2, -3])

    def func(root, values):
        x = root.clone()
        x.put_(idx, values)
        return x

    assert ag.autograd.gradcheck(func, [root, values])
    assert ag.autograd.gradgradcheck(func, [root, values])


def test_put_accumulate(ag):
    root = ag.randn(4, 5, requires_grad=True)
    values = ag.randn(6, requires_grad=True)
    idx = ag.tensor([1, 2, 3, 1, 2, 3])

    def func(root, values):
        x = root.clone()
        x.put_(idx, values, accumulate=True)
        return x

    assert ag.autograd.gradcheck(func, [root, values])
    assert ag.autograd.gradgradcheck(func, [root, values])


def test_fill(ag):
    root = ag.randn(4, 5, requires_grad=True)

    def func(root):
        x = root.clone()
        x.fill_(2)
        return x

    assert ag.autograd.gradcheck(func, [root])
    assert ag.autograd.gradgradcheck(func, [root])


def test_mul_out(ag):
    a = ag.randn(2, 2, requires_grad=True)
    b = ag.randn(2, 2, requires_grad=True)
    x = ag.zeros_like(a)
    with pytest.raises(RuntimeError, match="out="):
        ag.mul(a, b, out=x)
    with ag.no_grad():
        ag.mul(a, b, out=x)
        assert_equal(x, a * b)


def test_mul_out_result_requires_grad(ag):
    a = ag.randn(2, 2)
    b = ag.randn(2, 2)
    x = ag.zeros(2, 2, requires_grad=True)
    with pytest.raises(RuntimeError, match="out="):
        ag.mul(a, b, out=x)


def test_diagonal_derivative_requires_grad(ag):
    a = ag.randn(5, 6, requires_grad=True)
    b = ag.diagonal(a) ** 2
    c = b.sum()
    (d,) = ag.autograd.grad(c, a, retain_graph=True, create_graph=True)
    assert d.requires_grad


def test_power_function(ag):
    a = ag.tensor([0.0, 0.0, 0.0])
    b = ag.tensor([-1.0, 0.0, 1.0], requires_grad=True)
    c = ag.sum(a**b)
    c.backward()
    assert_equal(b.grad, [-math.inf, 0.0, 0.0])
    s = 0
    b = ag.tensor([-1.0, 0.0, 1.0], requires_grad=True)
    c = ag.sum(s**b)
    c.backward()
    assert_equal(b.grad, [-math.inf, 0.0, 0.0])


def test_pow_zero_tensor_gradient(ag):
    def run_test(input_size, exponent):
        input = ag.zeros(*input_size, requires_grad=True)
        input.pow(exponent).sum().backward()
        assert input.grad.abs().sum().item() == 0

    run_test((10,), ag.zeros(10))
    run_test((10, 10), ag.zeros(10, 10))
    run_test((10,), 0)


def test_pow_scalar_base(ag):
    a = ag.arange(1, 13, dtype=ag.float64).view(3, 4).requires_grad_()
    assert ag.autograd.gradcheck(lambda a: ag.pow(2, a), (a,))


def test_norm_subgradient(ag):
    def run_test(input_size, norm_deg):
        input = ag.zeros(*input_size, requires_grad=True)
        input.norm(norm_deg).backward()
        assert input.grad.abs().sum().item() == 0

    run_test((10,), 2)
    run_test((10, 10), 2)
    run_test((10,), 3)
    run_test((10,), 1)
    run_test((10,), 1.5)
    run_test((10,), math.inf)


def test_min_max_median_backprops_to_all_values(ag):
    for f in (ag.min, ag.max, ag.median, ag.nanmedian):
        x1 = ag.tensor([1.0, 0.0, 1.0, 0.0, 1.0, 0.0], requires_grad=True)
        x2 = ag.tensor([float("nan"), float("nan"), float("nan")], requires_grad=True)
        for x in (x1, x2):
            y = f(x)
            y.backward()
            assert x.grad.sum().item() == pytest.approx(1.0)
            assert (x.grad == 1 / 3).sum().item() == 3


def test_min_max_dim_ties_pick_one(ag):
    x = ag.tensor([[1.0, 3.0, 3.0], [2.0, 2.0, 0.0]], requires_grad=True)
    values, indices = x.max(dim=1)
    values.sum().backward()
    grad = numpy_of(x.grad)
    assert grad.sum() == 2.0
    assert grad[0, indices[0].item()] == 1.0 and grad[1, indices[1].item()] == 1.0


def test_amax_amin_ties_split_evenly(ag):
    x = ag.tensor([[1.0, 3.0, 3.0], [2.0, 2.0, 0.0]], requires_grad=True)
    x.amax(dim=1).sum().backward()
    assert_equal(x.grad, [[0.0, 0.5, 0.5], [0.5, 0.5, 0.0]])
    x.grad = None
    x.amin().backward()
    assert_equal(x.grad, [[0.0, 0.0, 0.0], [0.0, 0.0, 1.0]])


def test_integer_min_max_not_differentiable(ag):
    x = ag.tensor([1, 2, 3])
    assert not x.max().requires_grad


def test_autograd_views_codegen(ag):
    def maybe_check_raise(fn, should_raise):
        if should_raise is not None:
            with pytest.raises(RuntimeError, match=should_raise):
                fn()
        else:
            fn()

    def run_test(grad_mode, requires_grad, is_view, should_raise_tuple):
        inp = ag.rand(2, requires_grad=requires_grad).clone()
        with ag.set_grad_enabled(grad_mode):
            out = inp.view_as(inp)
        assert out._is_view() == is_view
        maybe_check_raise(lambda: out.add_(1), should_raise_tuple[0])
        inp = ag.rand(2, requires_grad=requires_grad).clone()
        with ag.set_grad_enabled(grad_mode):
            out = inp.unbind()
        assert out[0]._is_view() == is_view
        assert out[1]._is_view() == is_view
        maybe_check_raise(lambda: out[0].add_(1), should_raise_tuple[1])
        maybe_check_raise(lambda: out[1].add_(1), should_raise_tuple[2])

    run_test(
        grad_mode=True, requires_grad=False, is_view=True, should_raise_tuple=(None, None, None)
    )
    inp_change_err = "Output {} of Unbind is a view and is being modified inplace."
    run_test(
        grad_mode=True,
        requires_grad=True,
        is_view=True,
        should_raise_tuple=(None, inp_change_err.format("0"), inp_change_err.format("1")),
    )
    leaf_grad_err = "A view was created in no_grad mode and is being modified inplace"
    run_test(
        grad_mode=False,
        requires_grad=True,
        is_view=True,
        should_raise_tuple=(leaf_grad_err, leaf_grad_err, leaf_grad_err),
    )
    run_test(
        grad_mode=False, requires_grad=False, is_view=True, should_raise_tuple=(None, None, None)
    )


def test_inplace_view_backprop_base(ag):
    root = ag.randn(2, 2, requires_grad=True)
    x = root.clone()
    v1 = x.narrow(0, 0, 1)
    v1.mul_(2)
    x.sum().backward()
    assert root.grad.tolist() == [[2, 2], [1, 1]]


def test_inplace_view_backprop_view_of_view(ag):
    root = ag.randn(2, 2, requires_grad=True)
    x = root.clone()
    v1 = x.narrow(0, 0, 1)
    v2 = x.narrow(0, 0, 1)
    v1.mul_(2)
    v2.sum().backward()
    assert root.grad.tolist() == [[2, 2], [0, 0]]


def test_inplace_view_of_view(ag):
    root = ag.randn(2, 2, requires_grad=True)
    x = root.clone()
    v1 = x.narrow(0, 0, 1)
    v2 = v1.narrow(1, 1, 1)
    v2.mul_(2)
    x.sum().backward()
    assert root.grad.tolist() == [[1, 2], [1, 1]]


def test_inplace_view_gradcheck(ag):
    a = ag.randn(4, 4, requires_grad=True)
    b = ag.randn(2, 2, requires_grad=True)

    def func(root, b):
        x = root.clone()
        x.narrow(1, 2, 2).narrow(0, 1, 2).mul_(b)
        x.narrow(1, 0, 2).narrow(0, 1, 2).mul_(b)
        return x

    assert ag.autograd.gradcheck(func, [a, b], raise_exception=True)
    go = ag.randn(a.size(), requires_grad=True)
    assert ag.autograd.gradgradcheck(func, (a, b), (go,))


def test_inplace_view_multiple_outputs(ag):
    root = ag.arange(9.0).reshape(3, 3).requires_grad_()
    x = root.clone()
    v1 = x.unbind()
    with pytest.raises(RuntimeError):
        v1[0].mul_(2)


def test_inplace_view_makes_base_require_grad(ag):
    a = ag.randn(4, 4, requires_grad=False)
    b = ag.randn(4, 2, requires_grad=True)

    def func(root, b):
        x = root.clone()
        assert not x.requires_grad
        x.narrow(1, 2, 2).mul_(b)
        assert x.requires_grad
        return x

    assert ag.autograd.gradcheck(func, [a, b], raise_exception=True)
    go = ag.randn(a.size(), requires_grad=True)
    assert ag.autograd.gradgradcheck(func, (a, b), (go,))


def test_inplace_view_backprop_view(ag):
    a = ag.tensor([2.0, 5.0], requires_grad=False)
    b = ag.tensor([3.0], requires_grad=True)
    res = a.narrow(0, 1, 1).mul_(b)
    res.sum().backward()
    assert b.grad.tolist() == [5]
    assert a.grad is None


def test_inplace_view_modify_base(ag):
    r = ag.ones(1, requires_grad=True)

    def fn(r):
        x = ag.ones(5)
        v = x.select(0, 1)
        assert not v.requires_grad
        assert v.grad_fn is None
        x.add_(r)
        assert v.requires_grad
        return v

    assert ag.autograd.gradcheck(fn, [r])
    assert ag.autograd.gradgradcheck(fn, [r])


def test_inplace_view_python(ag):
    a = ag.randn(4, 4, requires_grad=True)
    b = ag.randn(2, 2, requires_grad=True)

    class PyAdd(ag.autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            ctx.mark_dirty(x)
            x.add_(y)
            return x

        @staticmethod
        def backward(ctx, grad):
            return grad, grad

    def func(root, b):
        x = root.clone()
        PyAdd.apply(x.narrow(1, 2, 2).narrow(0, 1, 2), b)
        PyAdd.apply(x.narrow(1, 0, 2).narrow(0, 1, 2), b)
        return x

    assert ag.autograd.gradcheck(func, [a, b], raise_exception=True)
    go = ag.randn(a.size(), requires_grad=True)
    assert ag.autograd.gradgradcheck(func, (a, b), (go,))


def test_inplace_view_non_contig(ag):
    root = ag.ones(2, 3, 2).select(2, 1).t().requires_grad_(True)
    x = root.clone()
    v1 = x.narrow(0, 0, 1)
    v2 = v1.narrow(1, 1, 1)
    v2.mul_(2)
    x.sum().backward()
    assert root.grad.tolist() == [[1, 2], [1, 1], [1, 1]]


def test_inplace_view_multi_output_unsafe(ag):
    for f in (
        lambda t: t.unsafe_split(1),
        lambda t: t.unsafe_split_with_sizes((1, 1, 1)),
        lambda t: t.unsafe_chunk(3),
    ):
        a = ag.randn(3, 3, requires_grad=True)
        b = a + a
        s1, s2, s3 = f(b)
        s1.mul_(s2)
        s1.sum().backward()


def test_inplace_view_multi_output_safe(ag):
    for f in (lambda t: t.split(1), lambda t: t.split_with_sizes((1, 1, 1)), lambda t: t.chunk(3)):
        a = ag.randn(3, 3, requires_grad=True)
        b = a + a
        s1, s2, s3 = f(b)
        with pytest.raises(
            RuntimeError,
            match="This view is the output of a function that returns multiple views.",
        ):
            s1.mul_(s2)


def test_inplace_view_saved_output(ag):
    dealloc = [0]

    class IncrementOnDelete:
        def __call__(self, *args):
            return None

        def __del__(self):
            dealloc[0] += 1

    def test():
        root = ag.randn(3, 3, requires_grad=True)
        copy = root.clone()
        copy.grad_fn.register_hook(IncrementOnDelete())
        view = copy.view(9)
        ag.nn.functional.relu(view, inplace=True)

    test()
    import gc

    gc.collect()
    assert dealloc[0] == 1


def test_inplace_view_weak_grad_fn(ag):
    import gc

    a = ag.arange(10.0, requires_grad=True)
    b = a.narrow(0, 0, 2).clone().view(-1)
    b.relu_()
    c = b.clone()
    del b
    gc.collect()
    s = c.sum()
    s.backward()
    assert_equal(s, ag.tensor(1.0))
    a = ag.rand(10, requires_grad=True).narrow(0, 0, 10)
    with pytest.raises(RuntimeError):
        a.relu_()


def test_inplace_on_view_backward_twice_through_base(ag):
    base = ag.ones(4, requires_grad=True)
    x = base * 1
    x[:2].mul_(3)
    x.sum().backward(retain_graph=True)
    x.sum().backward()
    assert_equal(base.grad, [6.0, 6.0, 2.0, 2.0])


def test_view_of_view_after_base_changed_regenerates(ag):
    root = ag.ones(4, requires_grad=True)
    x = root * 1
    v = x[1:3]
    x.mul_(2)
    v.sum().backward()
    assert_equal(root.grad, [0.0, 2.0, 2.0, 0.0])


def test_leaky_relu_inplace_with_neg_slope(ag):
    a = ag.tensor([-1.0, 1.0], requires_grad=True)
    b = ag.nn.functional.leaky_relu_(a.clone(), -2)
    with pytest.raises(RuntimeError, match="call out-of-place version"):
        b.backward(ag.ones(2))


def test_leaky_relu_inplace_with_zero_slope(ag):
    a = ag.tensor([-2.0, 0.0, 2.0], requires_grad=True)
    b = ag.nn.functional.leaky_relu_(a.clone(), 0.0)
    b.backward(ag.ones(3))
    assert_equal(a.grad, [0.0, 0.0, 1.0])


def test_variable_traverse(ag):
    import gc

    def get_out_and_unrefed_cycle():
        inp = ag.randn(10, requires_grad=True)
        tmp = inp.view(10, 1)
        out = tmp.view(10)
        my_list = [tmp]
        my_list.append(my_list)
        return out

    out = get_out_and_unrefed_cycle()
    gc.collect()
    out.backward(ag.randn(out.size()))


def test_copy_requires_grad(ag):
    x = ag.randn(10, requires_grad=True)
    for dt in (ag.float32, ag.float64, ag.float16):
        y = ag.empty(10, dtype=dt)
        y.copy_(x)
        assert y.requires_grad


def test_copy_backward_to_source_dtype(ag):
    x = ag.randn(4, requires_grad=True)
    y = ag.zeros(4, dtype=ag.float32)
    y.copy_(x)
    (y * 2).sum().backward()
    assert x.grad.dtype == ag.float64
    assert_equal(x.grad, ag.full((4,), 2.0))


def test_new_tensors_do_not_require_grad(ag):
    x = ag.randn(3, requires_grad=True)
    for made in (
        x.new_zeros(2),
        x.new_ones(2),
        x.new_full((2,), 3.0),
        x.new_empty(2),
        x.new_tensor([1.0, 2.0]),
        x.new(2),
    ):
        assert not made.requires_grad
        assert made.dtype == x.dtype
    assert x.new_zeros(2, requires_grad=True).requires_grad


def test_tensor_new_from_data(ag):
    x = ag.randn(3, dtype=ag.float32)
    y = x.new([1, 2])
    assert y.dtype == ag.float32
    assert y.tolist() == [1.0, 2.0]
    assert tuple(x.new().shape) == (0,)
    assert tuple(x.new(2, 3).shape) == (2, 3)
