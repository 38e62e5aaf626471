"""Hooks at the edges of a pass, and the warnings PyTorch gives, on the same programs as PyTorch:
backward(inputs=) through a non-leaf, hooks of outputs that got no gradient, anomaly mode's
warnings, the create_graph reference-cycle warning."""

from __future__ import annotations

import subprocess
import sys
import warnings

import pytest

from .fidelity import error_of


def test_backward_inputs_runs_the_hooks_of_a_non_leaf_input(lib):
    log = []
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    b = x * 2
    b.register_hook(lambda g: log.append(("tensor hook", g.tolist())))
    b.grad_fn.register_prehook(lambda gs: log.append(("pre", [g.tolist() for g in gs])))
    b.grad_fn.register_hook(lambda gi, go: log.append(("post", [g.tolist() for g in go])))
    (b * 3).sum().backward(inputs=(b,))
    assert log == [("tensor hook", [3.0, 3.0]), ("pre", [[3.0, 3.0]]), ("post", [[3.0, 3.0]])]
    assert (b.grad.tolist(), x.grad) == ([3.0, 3.0], None)


SPLITTERS = {
    "unbind": lambda x: x.unbind(),
    "split": lambda x: x.split(1),
    "split_sizes": lambda x: x.split([1, 1]),
    "chunk": lambda x: x.chunk(2),
}


@pytest.mark.parametrize("name", list(SPLITTERS))
def test_a_hook_on_a_sibling_output_is_called_with_none(lib, name):
    log = []
    x = lib.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    pieces = SPLITTERS[name](x)
    pieces[0].register_hook(lambda g: log.append(None if g is None else g.tolist()))
    pieces[1].sum().backward()
    assert (log, x.grad.tolist()) == ([None], [[0.0, 0.0], [1.0, 1.0]])


def test_a_hook_may_not_replace_a_missing_gradient(lib):
    x = lib.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    pieces = x.unbind()
    pieces[0].register_hook(lambda g: lib.ones(2))
    assert error_of(lambda: pieces[1].sum().backward()) == (
        "RuntimeError",
        "can't replace a None gradient with a non-None value",
    )


def test_hooks_downstream_of_a_none_gradient_see_none(lib):
    class FirstOnly(lib.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            return a + b

        @staticmethod
        def backward(ctx, g):
            return g, None

    log = []
    a = lib.tensor([1.0], requires_grad=True)
    b = lib.tensor([1.0], requires_grad=True)
    b.register_hook(lambda g: log.append(("leaf b", g)))
    bb = b * 2
    bb.register_hook(lambda g: log.append(("bb", g)))
    bb.grad_fn.register_prehook(lambda gs: log.append(("pre bb", gs)))
    FirstOnly.apply(a, bb).sum().backward()
    assert (log, b.grad, a.grad.tolist()) == (
        [("bb", None), ("pre bb", (None,)), ("leaf b", None)],
        None,
        [1.0],
    )


# ------------------------------------------------------------------ warnings
def _recorded(fn) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fn()
    # PyTorch adds where in its C++ sources a warning comes from.
    messages = [str(w.message) for w in caught if issubclass(w.category, UserWarning)]
    return [m.split(" (Triggered internally")[0] for m in messages]


def test_detect_anomaly_warns_that_it_is_on(lib):
    messages = _recorded(lambda: lib.autograd.detect_anomaly())
    assert messages == [
        "Anomaly Detection has been enabled. This mode will increase the runtime and should only "
        "be enabled for debugging."
    ]


def test_anomaly_mode_warns_where_a_failing_node_was_made(lib):
    class Explodes(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, g):
            raise ValueError("boom")

    x = lib.tensor([1.0, 2.0], requires_grad=True)

    def program():
        with lib.autograd.detect_anomaly():
            y = Explodes.apply(x).sum()  # the line the warning points at
            with pytest.raises(ValueError, match="boom"):
                y.backward()

    found = [m for m in _recorded(program) if m.startswith("Error detected in")]
    assert len(found) == 1
    head, _, trace = found[0].partition("\n")
    assert head == (
        "Error detected in ExplodesBackward. Traceback of forward call that caused the error:"
    )
    assert "y = Explodes.apply(x).sum()  # the line the warning points at" in trace


def test_anomaly_mode_warns_without_forward_information(lib):
    x = lib.tensor([0.0, 1.0], requires_grad=True)
    y = (x / x).sum()  # made outside anomaly mode

    def program():
        with lib.autograd.detect_anomaly():
            with pytest.raises(RuntimeError, match="returned nan values"):
                y.backward()

    found = [m for m in _recorded(program) if m.startswith("Error detected in")]
    assert found == [
        "Error detected in DivBackward0. No forward pass information available. Enable detect "
        "anomaly during forward pass for more information."
    ]


CREATE_GRAPH_PROGRAM = """
import warnings
import {lib} as lib
x = lib.tensor([1.0, 2.0], requires_grad=True)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    (x * x).sum().backward(create_graph=True)
    (x * x).sum().backward(create_graph=True)
    lib.autograd.grad((x * x).sum(), x, create_graph=True)
for w in caught:
    print(str(w.message).split(" (Triggered")[0])
"""


@pytest.mark.parametrize("name", ["autograd_async", "torch"])
def test_backward_with_create_graph_warns_once_about_the_cycle(name):
    if name == "torch":
        pytest.importorskip("torch")
    # A fresh process: the warning is given once per process.
    out = subprocess.run(
        [sys.executable, "-c", CREATE_GRAPH_PROGRAM.format(lib=name)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    assert out.splitlines() == [
        "Using backward() with create_graph=True will create a reference cycle between the "
        "parameter and its gradient which can cause a memory leak. We recommend using "
        "autograd.grad when creating the graph to avoid this. If you have to use this function, "
        "make sure to reset the .grad fields of your parameters to None after use to break the "
        "cycle and avoid the leak."
    ]
