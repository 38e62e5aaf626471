"""View ops with PyTorch's view semantics: shared storage and version counter, `_base`,
`_is_view()`, `output_nr`, `data_ptr()`, and the gradients through each view."""

from __future__ import annotations

import pytest

from .fidelity import error_of

VALUES = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]]


def _view_ops(lib):
    return {
        "narrow": lambda x: x.narrow(1, 1, 2),
        "narrow_negative_start": lambda x: x.narrow(0, -2, 2),
        "select": lambda x: x.select(1, -1),
        "view_as": lambda x: x.view_as(lib.zeros(9)),
        "diagonal": lambda x: x.diagonal(),
        "diagonal_offset": lambda x: x.diagonal(1),
        "diagonal_below": lambda x: lib.diagonal(x, -1),
        "as_strided": lambda x: x.as_strided((2, 2), (3, 1), 1),
        "transpose": lambda x: x.t(),
    }


VIEW_NAMES = list(_view_ops(None))


@pytest.mark.parametrize("name", VIEW_NAMES)
def test_view_shares_storage_and_version_with_its_base(lib, name):
    x = lib.tensor(VALUES)
    v = _view_ops(lib)[name](x)
    before = v.tolist()
    x.mul_(2)
    assert v._is_view() and v._base is x
    assert v._version == x._version == 1
    assert v.tolist() != before  # the view sees the base's change
    assert x.data_ptr() <= v.data_ptr() < x.data_ptr() + 9 * 4


EXPECTED_GRADS = {
    "narrow": [[0.0, 1.0, 2.0], [0.0, 3.0, 4.0], [0.0, 5.0, 6.0]],
    "narrow_negative_start": [[0.0, 0.0, 0.0], [1.0, 2.0, 3.0], [4.0, 5.0, 6.0]],
    "select": [[0.0, 0.0, 1.0], [0.0, 0.0, 2.0], [0.0, 0.0, 3.0]],
    "view_as": [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]],
    "diagonal": [[1.0, 0.0, 0.0], [0.0, 2.0, 0.0], [0.0, 0.0, 3.0]],
    "diagonal_offset": [[0.0, 1.0, 0.0], [0.0, 0.0, 2.0], [0.0, 0.0, 0.0]],
    "diagonal_below": [[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 2.0, 0.0]],
    "as_strided": [[0.0, 1.0, 2.0], [0.0, 3.0, 4.0], [0.0, 0.0, 0.0]],
    "transpose": [[1.0, 4.0, 7.0], [2.0, 5.0, 8.0], [3.0, 6.0, 9.0]],
}


@pytest.mark.parametrize("name", VIEW_NAMES)
def test_gradient_through_a_view(lib, name):
    x = lib.tensor(VALUES, requires_grad=True)
    v = _view_ops(lib)[name](x)
    weights = lib.arange(1.0, v.numel() + 1).reshape(v.shape)
    (v * weights).sum().backward()
    assert x.grad.tolist() == EXPECTED_GRADS[name]


def test_view_node_names(lib):
    x = lib.tensor(VALUES, requires_grad=True)
    names = [
        x.narrow(0, 0, 1).grad_fn.name(),
        x.select(0, 1).grad_fn.name(),
        x.view_as(x).grad_fn.name(),
        x.diagonal().grad_fn.name(),
        x.as_strided((2,), (1,)).grad_fn.name(),
        [p.grad_fn.name() for p in x.unbind(1)],
        [p.grad_fn.name() for p in x.split([1, 2])],
        [p.grad_fn.name() for p in x.split(2)],
    ]
    assert names == [
        "SliceBackward0",
        "SelectBackward0",
        "ViewBackward0",
        "DiagonalBackward0",
        "AsStridedBackward0",
        ["UnbindBackward0"] * 3,
        ["SplitWithSizesBackward0"] * 2,
        ["SplitBackward0"] * 2,
    ]


def test_multi_output_views_and_output_nr(lib):
    x = lib.tensor(VALUES, requires_grad=True)
    pieces = x.unbind(0)
    parts = x.split([2, 1], 1)
    assert [p.output_nr for p in pieces] == [0, 1, 2]
    assert [p.output_nr for p in parts] == [0, 1]
    assert all(p._base is x and p._is_view() for p in (*pieces, *parts))
    (pieces[0] * 2 + pieces[2]).sum().backward()
    assert x.grad.tolist() == [[2.0, 2.0, 2.0], [0.0, 0.0, 0.0], [1.0, 1.0, 1.0]]


def test_detach_shares_the_version_counter_but_is_not_a_view(lib):
    x = lib.tensor([1.0, 2.0])
    d = x.detach()
    d.add_(1)
    assert (d._base, d._is_view(), x._version, d._version) == (None, False, 1, 1)
    assert x.tolist() == [2.0, 3.0]
    v = d[0:1]
    assert v._base is d and v._version == 1


@pytest.mark.parametrize(
    "args", [(0, 0, 1), (1, 0, 1), (-1, 1, 0), (0, 0, 2), (2, 2, 1), (-5, 0, 1)]
)
def test_diagonal_of_a_non_contiguous_tensor(lib, args):
    x = lib.arange(24.0).reshape(2, 3, 4).permute(2, 0, 1).clone().requires_grad_()
    base = x * 1
    t = base.transpose(0, 2)  # strides that are not C-contiguous
    d = t.diagonal(*args)
    weights = lib.arange(1.0, d.numel() + 1).reshape(d.shape)
    (d * weights).sum().backward()
    assert (d.tolist(), d._base is base) == (t.diagonal(*args).tolist(), True)
    assert x.grad.tolist() == _grad_of_diagonal(lib, args)


def _grad_of_diagonal(lib, args):
    x = lib.arange(24.0).reshape(2, 3, 4).permute(2, 0, 1).clone().requires_grad_()
    d = x.transpose(0, 2).contiguous().diagonal(*args)
    (d * lib.arange(1.0, d.numel() + 1).reshape(d.shape)).sum().backward()
    return x.grad.tolist()


def test_writing_through_a_diagonal(lib):
    x = lib.zeros(3, 3)
    x.t().diagonal(1).fill_(5.0)
    x.diagonal().add_(1)
    assert x.tolist() == [[1.0, 0.0, 0.0], [5.0, 1.0, 0.0], [0.0, 5.0, 1.0]]


def test_view_of_a_view_has_the_root_as_base(lib):
    x = lib.tensor(VALUES)
    v = x[1:][:, 1]
    assert v._base is x and x._is_view() is False and x._base is None


def test_leaf_and_output_nr_of_plain_tensors(lib):
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    assert (x.output_nr, (x * 2).output_nr, x._is_view()) == (0, 0, False)


def test_as_strided_with_offset_reads_the_storage(lib):
    x = lib.arange(6.0)
    assert x.as_strided((2, 2), (1, 2), 1).tolist() == [[1.0, 3.0], [2.0, 4.0]]
    assert x[2:].as_strided((2,), (2,)).tolist() == [2.0, 4.0]  # from the view's own offset


ARGUMENT_ERRORS = {
    "narrow": (
        lambda x: x.narrow(0, 2, 2),
        ("RuntimeError", "start (2) + length (2) exceeds dimension size (3)."),
    ),
    "select": (
        lambda x: x.select(0, 3),
        ("IndexError", "select(): index 3 out of range for tensor of size [3, 3] at dimension 0"),
    ),
    "diagonal": (
        lambda x: x.diagonal(0, 0, 0),
        ("RuntimeError", "diagonal dimensions cannot be identical 0, 0"),
    ),
    "unbind_0d": (
        lambda x: x.sum().unbind(),
        ("IndexError", "Dimension specified as 0 but tensor has no dimensions"),
    ),
}


@pytest.mark.parametrize("name", list(ARGUMENT_ERRORS))
def test_view_argument_errors(lib, name):
    call, expected = ARGUMENT_ERRORS[name]
    assert error_of(lambda: call(lib.tensor(VALUES))) == expected


def test_as_strided_outside_the_storage_raises(lib):
    kind, _ = error_of(lambda: lib.ones(3, 3).as_strided((2,), (1,), 20))
    assert kind == "RuntimeError"


# ----------------------------------------------------------- numerically
def _numeric_cases():
    import autograd_async as aa

    return {
        "narrow": lambda x: x.narrow(1, 1, 2) * x.narrow(1, 0, 2),
        "select": lambda x: x.select(0, 1) * x.select(1, 2),
        "unbind": lambda x: x.unbind(1)[0] * x.unbind(1)[2],
        "diagonal": lambda x: x.diagonal(1) * x.t().diagonal(-1),
        "as_strided": lambda x: x.as_strided((2, 2), (1, 3), 1) ** 2,
        "view_as": lambda x: x.view_as(aa.zeros(9)) ** 2,
        "inplace_on_view": _inplace_on_view,
    }


def _inplace_on_view(x):
    b = x * 1
    b[1].mul_(x[0])
    b[:, 2].add_(b[0, :])
    return b * b


@pytest.mark.parametrize("name", list(_numeric_cases()))
def test_view_gradients_and_second_derivatives_check_numerically(name):
    import numpy as np

    import autograd_async as aa

    x = aa.tensor(np.arange(1.0, 10.0).reshape(3, 3) / 7, requires_grad=True)
    fn = _numeric_cases()[name]
    assert aa.autograd.gradcheck(fn, (x,))
    assert aa.autograd.gradgradcheck(fn, (x,))


@pytest.mark.parametrize("name", ["narrow", "diagonal", "inplace_on_view"])
def test_views_on_each_device(device, name):
    import numpy as np

    import autograd_async as aa

    values = np.arange(1.0, 10.0).reshape(3, 3)
    x = aa.tensor(values, requires_grad=True, device=device)
    y = _numeric_cases()[name](x)
    y.sum().backward()
    x_cpu = aa.tensor(values, requires_grad=True)
    _numeric_cases()[name](x_cpu).sum().backward()
    np.testing.assert_allclose(np.asarray(x.grad.__array__()), x_cpu.grad.numpy())
