"""Assignments PyTorch refuses (`.grad` of the wrong type, shape or dtype; integer `.data` on a
tensor that requires grad) and empty `inputs` to backward/grad raise here too."""

from __future__ import annotations

import autograd_async as aa


def _outcome(fn):
    """(exception type name, first words of its message), or None when it returns."""
    try:
        fn()
    except Exception as exc:  # noqa: BLE001 - the outcome is what the test compares
        return type(exc).__name__, " ".join(str(exc).split()[:6])
    return None


def _grad_assignments(lib):
    def assign(value, dtype=None):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        if dtype is not None:
            x = lib.tensor([1, 2], dtype=dtype)

        def run():
            x.grad = value if value != "self" else x

        return run

    cases = [
        assign(3),
        assign([1.0, 2.0]),
        assign(lib.ones(3)),
        assign(lib.ones(2, 1)),
        assign(lib.ones(2, dtype=lib.int64)),
        assign(lib.ones(2, dtype=lib.float64)),
        assign("self"),
        assign(lib.ones(2)),
        assign(None),
        assign(lib.ones(2), dtype=lib.int64),
    ]
    return [_outcome(case) for case in cases]


def test_grad_assignment_checks_match_pytorch(torch):
    ours = _grad_assignments(aa)
    assert ours == _grad_assignments(torch)
    assert ours[-3:-1] == [None, None]


def test_grad_assignment_keeps_the_tensor_and_del_clears_it():
    x = aa.tensor([1.0, 2.0], requires_grad=True)
    g = aa.tensor([3.0, 4.0])
    x.grad = g
    assert x.grad is g
    (x * 1).sum().backward()
    assert x.grad.tolist() == [4.0, 5.0]
    del x.grad
    assert x.grad is None


def _data_assignments(lib):
    def set_data(target, value):
        def run():
            target.data = value

        return run

    ints = lib.tensor([1, 2])
    return [
        _outcome(set_data(lib.tensor([1.0, 2.0], requires_grad=True), ints)),
        _outcome(set_data(lib.tensor([1.0, 2.0]), ints)),
        _outcome(set_data(lib.tensor([1.0, 2.0], requires_grad=True), lib.ones(3))),
        _outcome(set_data(lib.tensor([1.0, 2.0], requires_grad=True), 5)),
    ]


def test_data_assignment_checks_match_pytorch(torch):
    ours = _data_assignments(aa)
    assert ours == _data_assignments(torch)
    assert ours[0][0] == "RuntimeError"


def _empty_inputs(lib):
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    out = (x * 2).sum()
    return [
        _outcome(lambda: lib.autograd.backward(out, inputs=[], retain_graph=True)),
        _outcome(lambda: out.backward(inputs=(), retain_graph=True)),
        _outcome(lambda: lib.autograd.grad(out, [], retain_graph=True)),
        _outcome(lambda: lib.autograd.grad(out, (), retain_graph=True)),
    ]


def test_empty_inputs_raise_like_pytorch(torch):
    ours = _empty_inputs(aa)
    assert ours == _empty_inputs(torch)
    assert all(o is not None and o[1].endswith("cannot be") for o in ours)
