"""`autograd.functional` (vjp, jvp, jacobian, hessian, vhp, hvp) against PyTorch's on the same
programs: values, shapes, tuple structure, requires_grad under create_graph, strict-mode errors."""

from __future__ import annotations

import numpy as np
import pytest

import autograd_async as aa

A = np.array([0.5, -1.0, 2.0])
B = np.array([[1.0, 2.0], [-0.5, 0.25]])


def _summary(value):
    """Nested tuples of tensors as nested tuples of (shape, rounded values, requires_grad)."""
    if isinstance(value, tuple):
        return tuple(_summary(v) for v in value)
    if value is None:
        return None
    data = np.asarray(value.detach().tolist(), dtype=np.float64)
    return tuple(value.shape), np.round(data, 8).tolist(), value.requires_grad


def _run(lib, name, fn_name, *, create_graph=False, strict=False, **extra):
    """Call `lib.autograd.functional.<fn_name>` on the program `name`; (summary) or (error)."""
    functional = lib.autograd.functional
    f64 = lib.float64
    a = lib.tensor(A, dtype=f64)
    b = lib.tensor(B, dtype=f64)
    programs = {
        "one to one": (lambda x: (x * x).sin(), a, lib.ones(3, dtype=f64)),
        "tuple in": (lambda x, y: (x.sum() * y).exp(), (a, b), lib.ones(2, 2, dtype=f64)),
        "tuple out": (
            lambda x: (x * 2, x.sum()),
            a,
            (lib.ones(3, dtype=f64), lib.tensor(1.0, dtype=f64)),
        ),
        "both tuples": (
            lambda x, y: (x * y.sum(), (y * y).sum()),
            (a, b),
            (lib.ones(3, dtype=f64), lib.tensor(2.0, dtype=f64)),
        ),
        "scalar": (lambda x: (x**3).sum() + x[0] * x[1] * x[2], a, None),
        "scalar tuple": (lambda x, y: (x**2).sum() * (y**3).sum(), (a, b), None),
        "unused input": (lambda x, y: (x**3).sum(), (a, b), None),
        "linear": (lambda x: (x * 3.0).sum(), a, None),
        "constant": (lambda x: lib.ones(3, dtype=f64), a, lib.ones(3, dtype=f64)),
    }
    func, inputs, v = programs[name]
    if fn_name in ("jvp", "hvp", "vhp"):
        ins = inputs if isinstance(inputs, tuple) else (inputs,)
        v = tuple(lib.ones(t.shape, dtype=f64) * 0.5 for t in ins)
        v = v if isinstance(inputs, tuple) else v[0]
    if fn_name in ("jacobian", "hessian"):
        call = lambda: getattr(functional, fn_name)(  # noqa: E731
            func, inputs, create_graph=create_graph, strict=strict, **extra
        )
    else:
        call = lambda: getattr(functional, fn_name)(  # noqa: E731
            func, inputs, v, create_graph=create_graph, strict=strict
        )
    try:
        return _summary(call())
    except (RuntimeError, TypeError, ValueError) as exc:
        return type(exc).__name__, str(exc)


CASES = [
    ("vjp", "one to one"),
    ("vjp", "tuple in"),
    ("vjp", "tuple out"),
    ("vjp", "both tuples"),
    ("vjp", "scalar"),
    ("vjp", "unused input"),
    ("jvp", "one to one"),
    ("jvp", "tuple in"),
    ("jvp", "tuple out"),
    ("jvp", "both tuples"),
    ("jacobian", "one to one"),
    ("jacobian", "tuple in"),
    ("jacobian", "tuple out"),
    ("jacobian", "both tuples"),
    ("jacobian", "unused input"),
    ("hessian", "scalar"),
    ("hessian", "scalar tuple"),
    ("hessian", "unused input"),
    ("vhp", "scalar"),
    ("vhp", "scalar tuple"),
    ("vhp", "unused input"),
    ("hvp", "scalar"),
    ("hvp", "scalar tuple"),
    ("hvp", "unused input"),
]


@pytest.mark.parametrize("create_graph", [False, True])
@pytest.mark.parametrize("fn_name, program", CASES)
def test_matches_pytorch(torch, fn_name, program, create_graph):
    ours = _run(aa, program, fn_name, create_graph=create_graph)
    assert ours == _run(torch, program, fn_name, create_graph=create_graph)


STRICT_CASES = [
    ("vjp", "unused input"),
    ("vjp", "constant"),
    ("jvp", "constant"),
    ("jacobian", "unused input"),
    ("jacobian", "constant"),
    ("hessian", "unused input"),
    ("hessian", "linear"),
    ("vhp", "linear"),
    ("hvp", "linear"),
    ("vhp", "unused input"),
]


@pytest.mark.parametrize("create_graph", [False, True])
@pytest.mark.parametrize("fn_name, program", STRICT_CASES)
def test_strict_mode_matches_pytorch(torch, fn_name, program, create_graph):
    ours = _run(aa, program, fn_name, create_graph=create_graph, strict=True)
    theirs = _run(torch, program, fn_name, create_graph=create_graph, strict=True)
    assert ours == theirs


def test_vectorize_gives_the_same_jacobian(torch):
    for lib in (aa, torch):
        plain = _run(lib, "both tuples", "jacobian")
        assert _run(lib, "both tuples", "jacobian", vectorize=True) == plain
    assert _run(aa, "both tuples", "jacobian", vectorize=True) == _run(
        torch, "both tuples", "jacobian", vectorize=True
    )


def _bad_arguments(lib):
    functional = lib.autograd.functional
    x = lib.tensor(A)
    calls = [
        lambda: functional.vjp(lambda t: t * 2, x),
        lambda: functional.vjp(lambda t: t * 2, x, lib.ones(4)),
        lambda: functional.vjp(lambda t: t * 2, x, (lib.ones(3), lib.ones(3))),
        lambda: functional.jvp(lambda t: t * 2, x),
        lambda: functional.jacobian(lambda t: t * 2, [x]),
        lambda: functional.hessian(lambda t: t * 2, x),
        lambda: functional.hvp(lambda t: (t * 2, t), x, lib.ones(3)),
    ]
    out = []
    for call in calls:
        try:
            call()
            out.append(None)
        except (RuntimeError, TypeError) as exc:
            # Sizes print as torch.Size there: compare the text before them.
            out.append((type(exc).__name__, str(exc).split(" but ")[0].split(" should be")[0]))
    return out


def test_argument_errors_match_pytorch(torch):
    assert _bad_arguments(aa) == _bad_arguments(torch)


def test_create_graph_results_are_differentiable(torch):
    def program(lib):
        x = lib.tensor(A, dtype=lib.float64, requires_grad=True)
        hess = lib.autograd.functional.hessian(lambda t: (t**4).sum(), x, create_graph=True)
        (third,) = lib.autograd.grad(hess.sum(), x)
        _, hv = lib.autograd.functional.hvp(
            lambda t: (t**3).sum(), x, lib.ones(3, dtype=lib.float64), create_graph=True
        )
        (g,) = lib.autograd.grad(hv.sum(), x)
        return np.round(third.tolist(), 8).tolist(), np.round(g.tolist(), 8).tolist()

    assert program(aa) == program(torch)


def test_functions_leave_grad_mode_and_inputs_alone():
    x = aa.tensor(A, requires_grad=True)
    with aa.no_grad():
        out, v = aa.autograd.functional.vjp(lambda t: t * t, x, aa.ones(3))
        assert not aa.is_grad_enabled()
    assert not out.requires_grad and not v.requires_grad and x.grad is None
