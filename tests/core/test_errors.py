"""The core's error messages (PyTorch's where it has one), and errors raised inside backward nodes:
the original exception reaches the caller with a note naming the node and its device.

Errors with their own topic are tested next to it: invalid gradients and counts from a custom
Function in test_function, hooks in test_hooks, NaN in test_anomaly, versions in
test_version_counter, freed graphs in test_retain_create_graph, allow_unused in test_grad_inputs.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import autograd_async as aa

from .helpers import values


def _leaf(lib, data=(1.0, 2.0)):
    return lib.tensor(list(data), requires_grad=True)


# Each case: a program for either library, the exception type, and a regex for the whole message
# that both libraries satisfy (PyTorch prints sizes as torch.Size([3]), we print (3,)).
SHARED = {
    "non_scalar_implicit_grad": (
        lambda lib: (_leaf(lib) * 2).backward(),
        RuntimeError,
        r"grad can be implicitly created only for scalar outputs",
    ),
    "complex_implicit_grad": (
        lambda lib: (_leaf(lib).to(lib.complex64) * 2).sum().backward(),
        RuntimeError,
        r"grad can be implicitly created only for real scalar outputs but got "
        r"(torch|aa)\.complex64",
    ),
    "complex_implicit_grad_of_grad": (
        lambda lib: lib.autograd.grad((_leaf(lib).to(lib.complex128) * 2).sum(), _leaf(lib)),
        RuntimeError,
        r"grad can be implicitly created only for real scalar outputs but got "
        r"(torch|aa)\.complex128",
    ),
    "no_grad_fn": (
        lambda lib: (lib.tensor([1.0, 2.0]) * 2).sum().backward(),
        RuntimeError,
        r"element 0 of tensors does not require grad and does not have a grad_fn",
    ),
    "no_grad_fn_second_output": (
        lambda lib: lib.autograd.backward([(_leaf(lib) * 2).sum(), lib.tensor(1.0)]),
        RuntimeError,
        r"element 1 of tensors does not require grad and does not have a grad_fn",
    ),
    "grad_shape_mismatch": (
        lambda lib: (_leaf(lib) * 2).backward(lib.tensor([1.0, 2.0, 3.0])),
        RuntimeError,
        r"Mismatch in shape: grad_output\[0\] has a shape of (torch\.)?Size\(\[3\]\) and "
        r"output\[0\] has a shape of (torch\.)?Size\(\[2\]\)\.",
    ),
    "grad_empty_inputs": (
        lambda lib: lib.autograd.grad((_leaf(lib) * 2).sum(), []),
        RuntimeError,
        r"`inputs` argument to `grad\(\)` cannot be empty\.",
    ),
    "grad_input_without_grad": (
        lambda lib: lib.autograd.grad((_leaf(lib) * 2).sum(), [lib.tensor([1.0])]),
        RuntimeError,
        r"One of the differentiated Tensors( \(input 0\))? does not require grad",
    ),
    "requires_grad_on_non_leaf": (
        lambda lib: (_leaf(lib) * 2).requires_grad_(False),
        RuntimeError,
        r"you can only change requires_grad flags of leaf variables\. If you want to use a "
        r"computed variable in a subgraph that doesn't require differentiation use "
        r"var_no_grad = var\.detach\(\)\.",
    ),
    "requires_grad_on_integers": (
        lambda lib: lib.tensor([1, 2]).requires_grad_(),
        RuntimeError,
        r"only Tensors of floating point (and complex )?dtype can require gradients.*",
    ),
    "retain_grad_without_grad": (
        lambda lib: lib.tensor([1.0]).retain_grad(),
        RuntimeError,
        r"can't retain_grad on Tensor that has requires_grad=False",
    ),
    "hook_without_grad": (
        lambda lib: lib.tensor([1.0]).register_hook(lambda g: g),
        RuntimeError,
        r"cannot register a hook on a tensor that doesn't require gradient",
    ),
    "post_accumulate_hook_on_non_leaf": (
        lambda lib: (_leaf(lib) * 2).register_post_accumulate_grad_hook(lambda t: None),
        RuntimeError,
        r"post accumulate grad hooks cannot be registered on non-leaf tensors",
    ),
    "post_accumulate_hook_without_grad": (
        lambda lib: lib.tensor([1.0]).register_post_accumulate_grad_hook(lambda t: None),
        RuntimeError,
        r"cannot register a hook on a tensor that doesn't require gradient",
    ),
    "numpy_of_tensor_that_requires_grad": (
        lambda lib: _leaf(lib).numpy(),
        RuntimeError,
        r"Can't call numpy\(\) on Tensor that requires grad\. Use tensor\.detach\(\)\.numpy\(\) "
        r"instead\.",
    ),
    "item_of_many": (
        lambda lib: _leaf(lib).item(),
        RuntimeError,
        r"a Tensor with 2 elements cannot be converted to Scalar",
    ),
    "bool_of_many": (
        lambda lib: bool(lib.tensor([1.0, 2.0])),
        RuntimeError,
        r"Boolean value of Tensor with more than one value is ambiguous",
    ),
    "in_place_on_leaf": (
        lambda lib: _leaf(lib).add_(1),
        RuntimeError,
        r"a leaf Variable that requires grad is being used in an in-place operation\.",
    ),
}


@pytest.mark.parametrize("case", SHARED)
def test_error_message(case):
    program, kind, message = SHARED[case]
    with pytest.raises(kind) as info:
        program(aa)
    assert re.fullmatch(message, str(info.value)), str(info.value)


@pytest.mark.parametrize("case", SHARED)
def test_error_message_is_pytorchs(torch, case):
    program, kind, message = SHARED[case]
    with pytest.raises(kind) as info:
        program(torch)
    assert re.fullmatch(message, str(info.value)), str(info.value)


# Errors PyTorch words differently or does not have.
OURS = {
    "gradient_count": (
        lambda: aa.autograd.backward([(_leaf(aa) * 2).sum()], [aa.tensor(1.0), aa.tensor(1.0)]),
        RuntimeError,
        "got 1 tensors and 2 gradients",
    ),
    "gradient_device": (
        lambda: (_leaf(aa) * 2).backward(aa.tensor([1.0, 1.0], device="sim:0")),
        RuntimeError,
        "gradient for output 0 is on sim:0 but the output is on cpu",
    ),
    "gradient_type": (
        lambda: (_leaf(aa) * 2).backward(np.ones(2)),
        TypeError,
        "gradients must be Tensors or None, got ndarray",
    ),
    "output_type": (
        lambda: aa.autograd.backward([np.ones(2)]),
        TypeError,
        "outputs must be Tensors, got ndarray at index 0",
    ),
    "output_array": (
        lambda: aa.autograd.backward(np.ones(2)),
        TypeError,
        "outputs must be Tensors, got ndarray at index 0",
    ),
    "output_number": (
        lambda: aa.autograd.grad(3.0, [_leaf(aa)]),
        TypeError,
        "outputs must be Tensors, got float at index 0",
    ),
    "input_type": (
        lambda: aa.autograd.grad((_leaf(aa) * 2).sum(), [np.ones(2)]),
        TypeError,
        "inputs must be Tensors, got ndarray at index 0",
    ),
    "no_outputs": (
        lambda: aa.autograd.backward([]),
        RuntimeError,
        "backward: expected at least one output tensor",
    ),
    "hook_changes_dtype": (
        lambda: _hooked((lambda g: g.double()), "cpu"),
        RuntimeError,
        "hook '<lambda>' has changed the type of value (was float32 got float64)",
    ),
    "hook_changes_device": (
        lambda: _hooked((lambda g: g.to("sim:1")), "sim:0"),
        RuntimeError,
        "hook '<lambda>' has changed the device of value (was sim:0 got sim:1)",
    ),
    "hook_returns_non_tensor": (
        lambda: _hooked((lambda g: 3.0), "cpu"),
        TypeError,
        "hook '<lambda>' returned float; expected a Tensor or None",
    ),
}


def _hooked(hook, device):
    x = aa.tensor([1.0, 2.0], device=device, requires_grad=True)
    y = x * 2
    y.register_hook(hook)
    y.sum().backward()


@pytest.mark.parametrize("case", OURS)
def test_our_error_message(case):
    program, kind, message = OURS[case]
    with pytest.raises(kind) as info:
        program()
    assert str(info.value) == message


# ------------------------------------------------------------ errors from a node
class Raises(aa.autograd.Function):
    @staticmethod
    def forward(ctx, x, error):
        ctx.error = error
        return x * 1

    @staticmethod
    def backward(ctx, g):
        raise ctx.error


class RaisesAsync(aa.autograd.Function):
    @staticmethod
    def forward(ctx, x, error):
        ctx.error = error
        return x * 1

    @staticmethod
    async def backward(ctx, g):
        raise ctx.error


def _note(error: BaseException) -> str:
    notes = [n for n in getattr(error, "__notes__", []) if n.startswith("raised in backward node")]
    assert len(notes) == 1, getattr(error, "__notes__", None)
    return notes[0]


@pytest.mark.parametrize("device", ["cpu", "sim:0", "sim:1"])
@pytest.mark.parametrize("fn", [Raises, RaisesAsync])
def test_an_error_in_a_node_keeps_its_type_and_names_the_node(device, fn):
    error = KeyError("the original")
    x = aa.tensor([1.0], device=device, requires_grad=True)
    y = fn.apply(x, error).sum()
    with pytest.raises(KeyError) as info:
        y.backward()
    assert info.value is error
    note = _note(error)
    # A small all-cpu graph without async nodes runs inline, on this thread, which the note names.
    inline = device == "cpu" and fn is Raises and aa.sim_mode() != "cuda"
    runner = (
        r"calling thread MainThread \(run inline for the cpu worker\)"
        if inline
        else rf"worker thread autograd-async:{device}"
    )
    assert re.match(
        rf"raised in backward node {fn.__name__}Backward \(sequence_nr \d+\) on {device}, "
        rf"{runner}, graph task \d+",
        note,
    ), note
    assert error.node_name == f"{fn.__name__}Backward" and error.device == device


async def test_an_error_reaches_an_awaiting_caller_the_same_way():
    error = ZeroDivisionError("async caller")
    x = aa.tensor([1.0], device="sim:0", requires_grad=True)
    with pytest.raises(ZeroDivisionError) as info:
        await aa.autograd.grad_async(Raises.apply(x, error).sum(), x)
    assert info.value is error
    assert "RaisesBackward" in _note(error)


def test_an_error_on_another_device_names_that_device():
    error = ValueError("on the second device")
    x = aa.tensor([1.0, 2.0], device="sim:0", requires_grad=True)
    y = Raises.apply((x * 2).to("sim:1"), error)
    with pytest.raises(ValueError) as info:
        y.sum().backward()
    assert info.value is error
    assert " on sim:1, worker thread autograd-async:sim:1" in _note(error)


def test_an_op_error_names_the_op():
    x = aa.tensor([1.0, 2.0], requires_grad=True)
    h = x * 1
    y = (h * h).sum()
    h.add_(1)
    with pytest.raises(RuntimeError) as info:
        y.backward()
    assert "raised in backward node MulBackward0" in _note(info.value)


def test_an_error_in_a_hook_propagates_with_its_type():
    x = aa.tensor([1.0], requires_grad=True)
    y = x * 2

    def bad_hook(g):
        raise IndexError("from a hook")

    y.register_hook(bad_hook)
    with pytest.raises(IndexError, match="from a hook") as info:
        y.sum().backward()
    assert "MulBackward0" in _note(info.value)


def test_the_engine_keeps_working_after_a_failed_backward():
    x = aa.tensor([1.0], requires_grad=True)
    with pytest.raises(KeyError):
        Raises.apply(x, KeyError("once")).sum().backward()
    (x * 3).sum().backward()
    np.testing.assert_allclose(values(x.grad), [3.0])


def test_a_failed_backward_stops_before_the_leaves():
    x = aa.tensor([1.0], requires_grad=True)
    w = aa.tensor([1.0], requires_grad=True)
    y = Raises.apply(x, KeyError("stop")).sum() + (w * 2).sum() * 0
    with pytest.raises(KeyError):
        y.backward()
    assert x.grad is None
