"""Custom `autograd.Function`: ctx, saved tensors, needs_input_grad, non-differentiable outputs,
materialized gradients, non-tensor arguments, several outputs, async backward, and its errors.

Each Function is defined for either library by a factory, so the same program runs in both.
"""

from __future__ import annotations

import asyncio
import re
import threading

import numpy as np
import pytest

import autograd_async as aa

from .helpers import values


def make_functions(lib):
    """The same custom Functions on top of `lib` (autograd_async or torch)."""

    class Cube(lib.autograd.Function):
        """x^3 * k, with a non-tensor k; records ctx state for the tests."""

        @staticmethod
        def forward(ctx, x, k):
            ctx.save_for_backward(x)
            ctx.k = k
            ctx.seen_needs = ctx.needs_input_grad
            return x * x * x * k

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * 3 * x * x * ctx.k, None

    class SplitSign(lib.autograd.Function):
        """Two differentiable outputs (positive and negative parts), a non-differentiable mask."""

        @staticmethod
        def forward(ctx, x, materialize):
            ctx.set_materialize_grads(materialize)
            mask = x > 0
            ctx.mark_non_differentiable(mask)
            ctx.save_for_backward(mask)
            return x * mask, x * ~mask, mask

        @staticmethod
        def backward(ctx, g_pos, g_neg, g_mask):
            (mask,) = ctx.saved_tensors
            ctx.received = (g_pos, g_neg, g_mask)
            total = None
            if g_pos is not None:
                total = g_pos * mask
            if g_neg is not None:
                part = g_neg * ~mask
                total = part if total is None else total + part
            return total, None

    class Scale(lib.autograd.Function):
        """x * w with gradients for both, skipping those not needed."""

        @staticmethod
        def forward(ctx, x, w):
            ctx.save_for_backward(x, w)
            return x * w

        @staticmethod
        def backward(ctx, g):
            x, w = ctx.saved_tensors
            gx = g * w if ctx.needs_input_grad[0] else None
            gw = g * x if ctx.needs_input_grad[1] else None
            return gx, gw

    return Cube, SplitSign, Scale


def cube_program(lib):
    Cube, _, _ = make_functions(lib)
    x = lib.tensor([1.0, -2.0, 3.0], dtype=lib.float64, requires_grad=True)
    y = Cube.apply(x, 2.0)
    y.sum().backward()
    node = y.grad_fn
    return values(y), values(x.grad), node.name(), node.seen_needs, len(node.next_functions)


def test_save_for_backward_and_non_tensor_arguments():
    out, grad, name, needs, edges = cube_program(aa)
    np.testing.assert_allclose(out, [2.0, -16.0, 54.0])
    np.testing.assert_allclose(grad, [6.0, 24.0, 54.0])
    assert name == "CubeBackward"
    assert needs == (True, False)  # one flag per forward argument
    assert edges == 1  # an edge per tensor argument only


def test_save_for_backward_and_non_tensor_arguments_like_pytorch(torch):
    ours, theirs = cube_program(aa), cube_program(torch)
    np.testing.assert_allclose(ours[0], theirs[0])
    np.testing.assert_allclose(ours[1], theirs[1])
    assert ours[2:] == theirs[2:]


def split_program(lib, materialize, use):
    _, SplitSign, _ = make_functions(lib)
    x = lib.tensor([1.0, -2.0, 3.0], requires_grad=True)
    pos, neg, mask = SplitSign.apply(x, materialize)
    loss = sum((t * (i + 2)).sum() for i, t in enumerate((pos, neg)) if i in use)
    loss.backward()
    received = [None if g is None else values(g) for g in pos.grad_fn.received]
    return values(x.grad), mask.requires_grad, received


@pytest.mark.parametrize("materialize", [True, False])
@pytest.mark.parametrize("use", [(0,), (1,), (0, 1)])
def test_multiple_outputs_and_materialized_gradients(materialize, use):
    grad, mask_requires_grad, received = split_program(aa, materialize, use)
    assert not mask_requires_grad
    expected = np.zeros(3)
    if 0 in use:
        expected += 2 * np.array([1.0, 0.0, 1.0])
    if 1 in use:
        expected += 3 * np.array([0.0, 1.0, 0.0])
    np.testing.assert_allclose(grad, expected)
    for i in range(3):
        if i in use:
            assert received[i] is not None and received[i].shape == (3,)
        elif materialize:
            np.testing.assert_array_equal(received[i], np.zeros(3))  # zeros, mask's included
        else:
            assert received[i] is None


@pytest.mark.parametrize("materialize", [True, False])
@pytest.mark.parametrize("use", [(0,), (1,), (0, 1)])
def test_multiple_outputs_and_materialized_gradients_like_pytorch(torch, materialize, use):
    ours, theirs = split_program(aa, materialize, use), split_program(torch, materialize, use)
    np.testing.assert_allclose(ours[0], theirs[0])
    assert ours[1] == theirs[1]
    for g, t in zip(ours[2], theirs[2], strict=True):
        assert (g is None) == (t is None)
        if g is not None:
            np.testing.assert_allclose(g, t)


def needs_program(lib):
    _, _, Scale = make_functions(lib)
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    w = lib.tensor([3.0, 4.0])
    y = Scale.apply(x, w)
    y.sum().backward()
    return y.grad_fn.needs_input_grad, values(x.grad), w.grad


def test_needs_input_grad_skips_unneeded_gradients():
    needs, gx, gw = needs_program(aa)
    assert needs == (True, False)
    np.testing.assert_allclose(gx, [3.0, 4.0])
    assert gw is None


def test_needs_input_grad_like_pytorch(torch):
    ours, theirs = needs_program(aa), needs_program(torch)
    assert ours[0] == theirs[0]
    np.testing.assert_allclose(ours[1], theirs[1])


def test_no_graph_when_nothing_requires_grad_or_under_no_grad():
    Cube, _, _ = make_functions(aa)
    y = Cube.apply(aa.tensor([1.0]), 2.0)
    assert y.grad_fn is None and not y.requires_grad
    x = aa.tensor([1.0], requires_grad=True)
    with aa.no_grad():
        y = Cube.apply(x, 2.0)
    assert y.grad_fn is None and not y.requires_grad


def test_forward_runs_with_grad_mode_off():
    seen = []

    class Probe(aa.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            seen.append(aa.is_grad_enabled())
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    x = aa.tensor([1.0], requires_grad=True)
    y = Probe.apply(x)
    assert seen == [False]
    assert y.grad_fn.name() == "ProbeBackward"
    assert y.grad_fn.next_functions[0][0].variable is x  # recorded on the Function, not inside


def test_an_input_returned_as_is_keeps_its_own_history():
    class Identity(aa.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 5

    x = aa.tensor([1.0, 2.0], requires_grad=True)
    y = Identity.apply(x)
    assert y is not x and x.grad_fn is None and y.grad_fn.name() == "IdentityBackward"
    y.sum().backward()
    np.testing.assert_allclose(values(x.grad), [5.0, 5.0])


def test_ctx_takes_arbitrary_attributes_and_is_the_node():
    class Keep(aa.autograd.Function):
        @staticmethod
        def forward(ctx, x, note):
            ctx.note = note
            return x * 1

        @staticmethod
        def backward(ctx, g):
            assert ctx.note == "hello"
            return g, None

    x = aa.tensor([1.0], requires_grad=True)
    y = Keep.apply(x, "hello")
    assert y.grad_fn.note == "hello"
    y.sum().backward()
    assert isinstance(y.grad_fn, aa.autograd.Node)


def test_function_backward_with_create_graph_is_differentiable():
    Cube, _, _ = make_functions(aa)
    x = aa.tensor([1.0, 2.0], dtype=aa.float64, requires_grad=True)
    (g,) = aa.autograd.grad(Cube.apply(x, 1.0).sum(), x, create_graph=True)
    (gg,) = aa.autograd.grad(g.sum(), x)
    np.testing.assert_allclose(values(gg), [6.0, 12.0])


def test_function_on_a_sim_device_runs_there():
    threads = []

    class Where(aa.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, g):
            threads.append(threading.current_thread().name)
            return g

    x = aa.tensor([1.0], device="sim:1", requires_grad=True)
    y = Where.apply(x)
    assert str(y.grad_fn.device) == "sim:1"
    y.sum().backward()
    assert threads == ["autograd-async:sim:1"]


# ------------------------------------------------------------------ async backward
class SlowDouble(aa.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    async def backward(ctx, g):
        await asyncio.sleep(0.01)
        ctx.loop = asyncio.get_running_loop()
        return g * 2


def test_async_backward_through_blocking_backward():
    x = aa.tensor([1.0, 2.0], requires_grad=True)
    y = SlowDouble.apply(x)
    assert y.grad_fn.is_async
    (y * 3).sum().backward()
    np.testing.assert_allclose(values(x.grad), [6.0, 6.0])
    assert y.grad_fn.loop is not None


async def test_async_backward_through_backward_async():
    x = aa.tensor([1.0, 2.0], requires_grad=True)
    y = SlowDouble.apply(SlowDouble.apply(x))
    await y.sum().backward_async()
    np.testing.assert_allclose(values(x.grad), [4.0, 4.0])
    assert y.grad_fn.loop is not asyncio.get_running_loop()  # it ran on the device's loop
    (g,) = await aa.autograd.grad_async(SlowDouble.apply(x).sum(), x)
    np.testing.assert_allclose(values(g), [2.0, 2.0])


async def test_async_backwards_overlap():
    """Two async nodes on one device are awaited concurrently, not one after the other."""

    in_flight: list[str] = []
    both_in_flight = asyncio.Event()

    class Nap(aa.autograd.Function):
        @staticmethod
        def forward(ctx, x, name):
            ctx.name = name
            return x * 1

        @staticmethod
        async def backward(ctx, g):
            in_flight.append(ctx.name)
            if len(in_flight) == 2:
                both_in_flight.set()
            # Run one after the other, the first would wait here for a second that never comes.
            await asyncio.wait_for(both_in_flight.wait(), 20)
            return g, None

    x = aa.tensor([1.0], requires_grad=True)
    y = Nap.apply(x, "a") + Nap.apply(x, "b")
    await y.sum().backward_async()
    assert sorted(in_flight) == ["a", "b"]
    np.testing.assert_allclose(values(x.grad), [2.0])


# ------------------------------------------------------------------------ errors
def wrong_count(lib):
    class TooMany(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, g):
            return g, g

    TooMany.apply(lib.tensor([1.0, 2.0], requires_grad=True)).sum().backward()


def wrong_shape(lib):
    class BadShape(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, g):
            return lib.ones(3)

    BadShape.apply(lib.tensor([1.0, 2.0], requires_grad=True)).sum().backward()


def grad_for_non_tensor(lib):
    class Scalar(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, k):
            return x * k

        @staticmethod
        def backward(ctx, g):
            return g, g

    Scalar.apply(lib.tensor([1.0], requires_grad=True), 2.0).sum().backward()


def extra_trailing_none(lib):
    class Extra(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2, None, None

    x = lib.tensor([1.0], requires_grad=True)
    Extra.apply(x).sum().backward()
    return values(x.grad)


FUNCTION_ERRORS = {
    "count": (
        wrong_count,
        r"^function TooManyBackward returned an incorrect number of gradients "
        r"\(expected 1, got 2\)$",
    ),
    "shape": (
        wrong_shape,
        r"^Function BadShapeBackward returned an invalid gradient at index 0 - got \[3\] but "
        r"expected shape compatible with \[2\]$",
    ),
    "non_tensor": (
        grad_for_non_tensor,
        r"^function ScalarBackward returned a gradient different than None at position 2, but "
        r"the corresponding forward input was not a Variable$",
    ),
}


@pytest.mark.parametrize("case", FUNCTION_ERRORS)
def test_function_errors(case):
    program, message = FUNCTION_ERRORS[case]
    with pytest.raises(RuntimeError) as info:
        program(aa)
    assert re.fullmatch(message, str(info.value))  # the notes add where it was raised
    assert any("raised in backward node" in n for n in info.value.__notes__)


@pytest.mark.parametrize("case", FUNCTION_ERRORS)
def test_function_errors_are_pytorchs(torch, case):
    program, message = FUNCTION_ERRORS[case]
    with pytest.raises(RuntimeError) as info:
        program(torch)
    assert re.fullmatch(message, str(info.value))


def test_extra_trailing_none_gradients_are_dropped():
    np.testing.assert_allclose(extra_trailing_none(aa), [2.0])


def test_extra_trailing_none_gradients_are_dropped_in_pytorch(torch):
    np.testing.assert_allclose(extra_trailing_none(torch), [2.0])


def test_save_for_backward_takes_only_tensors():
    class SaveNumber(aa.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x, 3)
            return x * 1

        @staticmethod
        def backward(ctx, g):
            return g

    with pytest.raises(TypeError, match="save_for_backward can only save tensors or None"):
        SaveNumber.apply(aa.tensor([1.0], requires_grad=True))


def test_a_saved_tensor_changed_in_place_is_detected():
    Cube, _, _ = make_functions(aa)
    x = aa.tensor([1.0, 2.0], requires_grad=True)
    h = x * 1
    y = Cube.apply(h, 1.0)
    h.mul_(2)
    with pytest.raises(
        RuntimeError,
        match=r"modified by an inplace operation.*is at version 1; "
        r"expected version 0 instead",
    ):
        y.sum().backward()


def test_an_error_in_backward_keeps_its_type():
    class Fails(aa.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, g):
            raise LookupError("from backward")

    with pytest.raises(LookupError, match="from backward"):
        Fails.apply(aa.tensor([1.0], requires_grad=True)).sum().backward()
