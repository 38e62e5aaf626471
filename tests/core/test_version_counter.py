"""Version counters: in-place changes count, views share the counter with their base, and a saved
tensor changed before backward raises PyTorch's error."""

from __future__ import annotations

import re

import pytest

import autograd_async as aa

VERSION_ERROR = (
    r"one of the variables needed for gradient computation has been modified by an inplace "
    r"operation: .*, which is output 0 of [\w:]+, is at version (\d+); expected version (\d+) "
    r"instead\. Hint: enable anomaly detection"
)


def counter_program(lib):
    """Versions after each kind of in-place change, on a tensor, its views and detached aliases."""
    x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 1
    seen = [y._version]
    y.add_(1)
    seen.append(y._version)
    y += 1
    seen.append(y._version)
    y[0] = 5.0
    seen.append(y._version)
    view = y[1:]
    view.mul_(2)  # a view's change is its base's
    seen += [y._version, view._version]
    reshaped = y.view(3, 1)
    y.sub_(1)
    seen.append(reshaped._version)
    detached = y.detach()  # shares the counter, as PyTorch's
    detached.zero_()
    seen.append(y._version)
    y.data.add_(1)  # .data does not
    seen.append(y._version)
    return seen


COUNTER_VERSIONS = [0, 1, 2, 3, 4, 4, 5, 6, 6]


def test_version_counter():
    assert counter_program(aa) == COUNTER_VERSIONS


def test_version_counter_is_pytorchs(torch):
    assert counter_program(torch) == COUNTER_VERSIONS


def saved_input_program(lib):
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    h = x * 1
    y = (h * h).sum()  # MulBackward0 saves h at version 0
    h.add_(1)
    y.backward()


def saved_output_program(lib):
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    t = x.tanh()  # TanhBackward0 saves its output
    y = (t * 2).sum()
    t.mul_(2)
    y.backward()


def saved_view_program(lib):
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    h = x * 1
    y = (h * h).sum()
    h[0:1].mul_(3)  # through a view: the base's counter moves
    y.backward()


@pytest.mark.parametrize("program", [saved_input_program, saved_output_program, saved_view_program])
def test_a_saved_tensor_changed_in_place_raises(program):
    with pytest.raises(RuntimeError) as info:
        program(aa)
    found = re.match(VERSION_ERROR, str(info.value))
    assert found and found.groups() == ("1", "0"), str(info.value)


@pytest.mark.parametrize("program", [saved_input_program, saved_output_program, saved_view_program])
def test_a_saved_tensor_changed_in_place_raises_in_pytorch(torch, program):
    with pytest.raises(RuntimeError) as info:
        program(torch)
    found = re.match(VERSION_ERROR, str(info.value))
    assert found and found.groups() == ("1", "0"), str(info.value)


def test_the_error_says_how_many_changes_were_made():
    x = aa.tensor([1.0, 2.0], requires_grad=True)
    h = x * 1
    y = (h * h).sum()
    h.add_(1)
    h.add_(1)
    with pytest.raises(RuntimeError, match="is at version 2; expected version 0 instead"):
        y.backward()


def test_changes_after_backward_or_to_unsaved_tensors_are_fine():
    x = aa.tensor([1.0, 2.0], requires_grad=True)
    h = x * 1
    y = (h + 1).sum()  # AddBackward0 saves nothing
    h.add_(1)
    y.backward()
    assert x.grad.tolist() == [1.0, 1.0]
    h2 = x * 1
    z = (h2 * h2).sum()
    z.backward()
    h2.add_(1)  # after backward: nothing left to check


def test_retained_graph_is_checked_again_on_the_second_backward():
    x = aa.tensor([1.0, 2.0], requires_grad=True)
    h = x * 1
    y = (h * h).sum()
    y.backward(retain_graph=True)
    h.add_(1)
    with pytest.raises(RuntimeError, match="is at version 1; expected version 0"):
        y.backward()


def only_needed_inputs_are_saved(lib):
    """PyTorch saves x * c's `x` only when `c` needs a gradient: changing x later is fine."""
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    y = x * 1
    z = (y * 2).sum()  # d/dy needs only the 2
    y.add_(1)
    z.backward()
    return x.grad.tolist()


def test_only_inputs_a_gradient_needs_are_version_checked():
    assert only_needed_inputs_are_saved(aa) == [2.0, 2.0]


def test_only_inputs_a_gradient_needs_are_version_checked_in_pytorch(torch):
    assert only_needed_inputs_are_saved(torch) == [2.0, 2.0]


def test_in_place_on_a_leaf_that_requires_grad_is_refused():
    x = aa.tensor([1.0], requires_grad=True)
    with pytest.raises(
        RuntimeError, match="a leaf Variable that requires grad is being used in an in-place"
    ):
        x.add_(1)
    with aa.no_grad():
        x.add_(1)  # allowed without grad, and counted
    assert x._version == 1


def _tensor_pow(lib, needs: str, changed: str) -> None:
    """`x ** w` with one side needing a gradient, then one of x, w, the result changed in place."""
    x = lib.tensor([0.5, 1.5], requires_grad=needs == "x")
    w = lib.tensor([2.0, 0.5], requires_grad=needs == "w")
    y = x**w
    {"x": x, "w": w, "out": y}[changed].add_(1)  # never the leaf that requires grad
    y.sum().backward()


# PowBackward1 saves base, exponent and result whatever needs a gradient (as PyTorch's does), so
# changing any of them in place is an error even where that gradient would not read it.
POW_CASES = [("x", "w"), ("x", "out"), ("w", "x"), ("w", "out")]


@pytest.mark.parametrize(("needs", "changed"), POW_CASES)
def test_tensor_pow_checks_all_it_saves(needs, changed):
    with pytest.raises(RuntimeError, match=VERSION_ERROR.split(",")[0]):
        _tensor_pow(aa, needs, changed)


@pytest.mark.parametrize(("needs", "changed"), POW_CASES)
def test_tensor_pow_checks_all_it_saves_in_pytorch(torch, needs, changed):
    with pytest.raises(RuntimeError, match=VERSION_ERROR.split(",")[0]):
        _tensor_pow(torch, needs, changed)
