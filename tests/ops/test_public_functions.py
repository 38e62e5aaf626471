"""Every public function: a wrong-typed first argument names the function, and `out=` behaves as
PyTorch's (written in place, cast, resized with a warning, refused under autograd)."""

from __future__ import annotations

import inspect
import warnings

import numpy as np
import pytest

import autograd_async as aa
import autograd_async.nn.functional as F

# Where PyTorch's text names the function by another name, that name is accepted.
ALSO_NAMED = {"clip": "clamp", "logsigmoid": "log_sigmoid", "relu_": "relu"}
# Functions whose first argument need not be a tensor (PyTorch takes a number there).
FIRST_ARGUMENT_FREE = {"normal"}
FIRST_ARGUMENT_FREE |= {"is_storage"}  # a question about any object, as PyTorch's


def _public(module, names) -> list[tuple[str, object]]:
    return [
        (n, getattr(module, n))
        for n in names
        if callable(getattr(module, n, None)) and not inspect.isclass(getattr(module, n))
    ]


# Probes that take any object, as PyTorch's do (a string is simply not an override).
ANY_ARGUMENT = {"has_torch_function", "has_torch_function_unary", "has_torch_function_variadic"}


def _functional_names() -> list[str]:
    torch = pytest.importorskip("torch")
    return [
        n
        for n in dir(F)
        if not n.startswith("_") and hasattr(torch.nn.functional, n) and n not in ANY_ARGUMENT
    ]


CASES = [
    (f"aa.{n}", n, fn) for n, fn in _public(aa, aa.ops.__all__) if n not in FIRST_ARGUMENT_FREE
]


@pytest.mark.parametrize("wrong", ["abc", object(), 5], ids=["str", "object", "int"])
@pytest.mark.parametrize(("label", "name", "fn"), CASES, ids=[c[0] for c in CASES])
def test_a_wrong_first_argument_names_the_function(label: str, name: str, fn, wrong) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            fn(wrong)
        except (TypeError, ValueError, RuntimeError, NotImplementedError) as exc:
            message = str(exc)
        else:
            if isinstance(wrong, int):
                return  # a number is a valid first argument of some functions (pow, remainder)
            pytest.fail(f"{label}({wrong!r}) raised nothing")
    assert name in message or ALSO_NAMED.get(name, name) in message, (label, message)


def test_every_functional_name_checks_its_input() -> None:
    failures = []
    for name, fn in _public(F, _functional_names()):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                fn("abc")
        except Exception as exc:  # noqa: BLE001 - each failure is judged by its text below
            if name not in str(exc) and ALSO_NAMED.get(name, name) not in str(exc):
                failures.append((name, type(exc).__name__, str(exc)[:80]))
        else:
            failures.append((name, "no error", ""))
    assert not failures


@pytest.mark.parametrize(
    ("call", "expected"),
    [
        (
            lambda: aa.cat(5),
            "cat(): argument 'tensors' (position 1) must be tuple of Tensors, not int",
        ),
        (
            lambda: aa.stack(aa.ones(2)),
            "stack(): argument 'tensors' (position 1) must be tuple of Tensors, not Tensor",
        ),
        (
            lambda: aa.cat([aa.ones(1), 2]),
            "cat(): expected a list of Tensors, got int at position 1",
        ),
        (lambda: aa.sum("a"), "sum(): argument 'input' (position 1) must be Tensor, not str"),
        (
            lambda: aa.arccos([1.0]),
            "arccos(): argument 'input' (position 1) must be Tensor, not list",
        ),
        (lambda: aa.ge(aa.ones(1)), "ge() missing 1 required positional argument: 'other'"),
        (
            lambda: aa.add(aa.ones(1), 1, bogus=2),
            "add() got an unexpected keyword argument 'bogus'",
        ),
    ],
    ids=["cat-int", "stack-tensor", "cat-element", "sum", "alias", "missing", "unknown-keyword"],
)
def test_argument_errors_in_pytorchs_words(call, expected: str) -> None:
    with pytest.raises(TypeError) as info:
        call()
    assert str(info.value) == expected


def test_errors_inside_an_op_are_not_renamed() -> None:
    with pytest.raises(RuntimeError, match="size of tensor a"):
        aa.add(aa.ones(2), aa.ones(3))


# ------------------------------------------------------------------------------------------ out=
def _both(torch, fn):
    return fn(aa, {}), fn(torch, {})


def test_out_is_written_and_returned(torch, device: str) -> None:
    out = aa.empty(2, device=device)
    result = aa.add(aa.ones(2, device=device), 1, out=out)
    assert result is out
    np.testing.assert_array_equal(out.cpu().numpy(), [2.0, 2.0])


def test_out_bumps_the_version_and_writes_through_views(device: str) -> None:
    whole = aa.zeros(2, 3, device=device)
    column = whole[:, 1]
    before = column._version
    aa.sum(aa.ones(2, 4, device=device), 1, out=column)
    assert column._version > before
    np.testing.assert_array_equal(whole.cpu().numpy(), [[0, 4, 0], [0, 4, 0]])


def test_out_of_another_shape_is_resized_with_pytorchs_warning(torch) -> None:
    for lib in (aa, torch):
        out = lib.empty(3)
        with pytest.warns(UserWarning, match=r"resized since it had shape \[3\]"):
            lib.mul(lib.ones(2), 2, out=out)
        assert tuple(out.shape) == (2,)
        empty = lib.empty(0)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            lib.matmul(lib.ones(2, 3), lib.ones(3, 2), out=empty)
        assert tuple(empty.shape) == (2, 2)


def test_out_casts_up_and_refuses_down(torch) -> None:
    for lib in (aa, torch):
        wide = lib.empty(2, dtype=lib.float64)
        lib.add(lib.ones(2, dtype=lib.int64), 1, out=wide)
        assert wide.dtype == lib.float64
    messages = []
    for lib in (aa, torch):
        with pytest.raises(RuntimeError) as info:
            lib.add(lib.ones(2), 1, out=lib.empty(2, dtype=lib.int64))
        messages.append(str(info.value))
    assert (
        messages[0]
        == messages[1]
        == ("result type Float can't be cast to the desired output type Long")
    )


def test_out_refuses_autograd_as_pytorch(torch) -> None:
    messages = []
    for lib in (aa, torch):
        with pytest.raises(RuntimeError) as info:
            lib.mul(lib.ones(2, requires_grad=True), 2, out=lib.empty(2))
        messages.append(str(info.value))
        with lib.no_grad():
            lib.mul(lib.ones(2, requires_grad=True), 2, out=lib.empty(2))
    assert messages[0] == messages[1]


def test_out_of_several_results(torch) -> None:
    values, indices = aa.empty(2), aa.empty(2, dtype=aa.int64)
    result = aa.max(aa.tensor([[1.0, 3.0], [4.0, 2.0]]), 1, out=(values, indices))
    assert result.values is values and result.indices is indices
    np.testing.assert_array_equal(indices.numpy(), [1, 0])
    with pytest.raises(TypeError, match="tuple of 2 Tensors"):
        aa.max(aa.tensor([[1.0, 3.0]]), 1, out=values)


def test_creation_functions_take_out() -> None:
    out = aa.empty(3)
    assert aa.zeros(3, out=out) is out
    aa.arange(3, out=out)
    np.testing.assert_array_equal(out.numpy(), [0.0, 1.0, 2.0])


def test_views_refuse_out_as_pytorch(torch) -> None:
    for lib in (aa, torch):
        with pytest.raises(TypeError, match="unexpected keyword argument 'out'"):
            lib.reshape(lib.ones(4), (2, 2), out=lib.empty(2, 2))


def test_out_on_another_device_is_refused() -> None:
    with pytest.raises(RuntimeError, match="Expected out tensor to have device cpu"):
        aa.add(aa.ones(2), 1, out=aa.empty(2, device="sim:0"))
