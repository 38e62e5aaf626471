"""Higher-level differentiation of functions: `vjp`, `jvp`, `jacobian`, `hessian`, `vhp`, `hvp`.

PyTorch's `torch.autograd.functional`, on reverse mode only: `jvp` and `hvp` use the double
backward trick (the gradient of a vector-Jacobian product with respect to its vector), and
Jacobians are built one row per output element (`vectorize=True` computes the same rows; there is
no vmap). Inputs and outputs are a Tensor or a tuple of Tensors, and results keep that shape.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..core.tensor import Tensor
from ..creation import zeros_like
from ..grad_mode import enable_grad, is_grad_enabled, set_grad_enabled
from ..ops import stack
from .api import grad

__all__ = ["hessian", "hvp", "jacobian", "jvp", "vhp", "vjp"]


# ------------------------------------------------------------------------------------- helpers
def _as_tuple(value: Any, arg_name: str, fn_name: str) -> tuple[bool, tuple]:
    """(whether `value` was a tuple, `value` as a tuple of Tensors); refuses anything else."""
    is_tuple = isinstance(value, tuple)
    items = value if is_tuple else (value,)
    for i, item in enumerate(items):
        if not isinstance(item, Tensor):
            where = f"the value at index {i}" if is_tuple else f"the given {arg_name}"
            raise TypeError(
                f"The {arg_name} given to {fn_name} must be either a Tensor or a tuple of "
                f"Tensors but {where} has type {type(item)}."
            )
    return is_tuple, items


def _unpack(result: Any, was_tuple: bool | tuple[bool, bool]) -> Any:
    """Undo `_as_tuple` on a result: one level per flag (outputs, then inputs)."""
    if isinstance(was_tuple, tuple):
        outer, inner = was_tuple
        if not inner:
            result = tuple(row[0] for row in result)
        return result if outer else result[0]
    return result if was_tuple else result[0]


def _prepare(inputs: tuple, create_graph: bool, need_graph: bool) -> tuple:
    """Fresh graph entry points: views of inputs already in a graph kept under create_graph."""
    out = []
    for t in inputs:
        if create_graph and t.requires_grad:
            out.append(t.view(t.shape))
        else:
            out.append(t.detach().requires_grad_(need_graph))
    return tuple(out)


def _finish(values: tuple, create_graph: bool) -> tuple:
    """Results outside the graph unless create_graph (nested tuples for Jacobians)."""
    if values and isinstance(values[0], Tensor):
        return values if create_graph else tuple(v.detach() for v in values)
    return tuple(_finish(v, create_graph) for v in values)


def _check_v(v: tuple, other: tuple, other_is_tuple: bool) -> None:
    if len(v) != len(other):
        if other_is_tuple:
            raise RuntimeError(
                f"v is a tuple of invalid length: should be {len(other)} but got {len(v)}."
            )
        raise RuntimeError("The given v should contain a single Tensor.")
    for i, (a, b) in enumerate(zip(v, other, strict=True)):
        if tuple(a.shape) != tuple(b.shape):
            prefix = f"Entry {i} in " if other_is_tuple else ""
            raise RuntimeError(
                f"{prefix}v has invalid size: should be {tuple(b.shape)} but got {tuple(a.shape)}."
            )


_STRICT_NO_GRAD = {
    "outputs": (
        "Output {i} of the user-provided function does not require gradients. The outputs must "
        "be computed in a differentiable manner from the input when running in strict mode."
    ),
    "grad_inputs": (
        "The gradient with respect to input {i} is independent of the inputs of the "
        "user-provided function. This is not allowed in strict mode."
    ),
    "jacobian": (
        "While computing the hessian, found that the jacobian of the user-provided function with "
        "respect to input {i} is independent of the input. This is not allowed in strict mode. "
        "You should ensure that your function is twice differentiable and that the jacobian "
        "depends on the inputs (this would be violated by a linear function for example)."
    ),
    "hessian": (
        "The hessian of the user-provided function with respect to input {i} is independent of "
        "the input. This is not allowed in strict mode. You should ensure that your function is "
        "thrice differentiable and that the hessian depends on the inputs."
    ),
}


def _check_requires_grad(values: tuple, kind: str, strict: bool) -> None:
    if not strict:
        return
    for i, t in enumerate(values):
        if t is None:
            raise RuntimeError(
                f"The output of the user-provided function is independent of input {i}. This is "
                "not allowed in strict mode."
            )
        if not t.requires_grad:
            raise RuntimeError(_STRICT_NO_GRAD[kind].format(i=i))


def _grad(
    outputs: tuple,
    inputs: tuple,
    grad_outputs: tuple | None = None,
    create_graph: bool = False,
    retain_graph: bool | None = None,
) -> tuple:
    """`grad` over the outputs that require grad only; None for every input when none does."""
    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    kept = [
        (o, g)
        for o, g in zip(outputs, grad_outputs, strict=True)
        if o is not None and o.requires_grad
    ]
    if not kept:
        return (None,) * len(inputs)
    outs, grads = zip(*kept, strict=True)
    return grad(
        outs,
        inputs,
        None if all(g is None for g in grads) else grads,
        retain_graph=retain_graph,
        create_graph=create_graph,
        allow_unused=True,
    )


_STRICT_MISSING = {
    "back": "The output of the user-provided function is independent of input {i}. This is not "
    "allowed in strict mode.",
    "back_trick": "The gradient with respect to the input is independent of entry {i} in the "
    "grad_outputs when using the double backward trick to compute forward mode "
    "gradients. This is not allowed in strict mode.",
    "double_back": "The jacobian of the user-provided function is independent of input {i}. "
    "This is not allowed in strict mode.",
    "double_back_trick": "The hessian of the user-provided function is independent of entry {i} "
    "in the grad_jacobian. This is not allowed in strict mode as it prevents "
    "from using the double backward trick to replace forward mode AD.",
}


def _fill_in_zeros(grads: tuple, refs: tuple, strict: bool, create_graph: bool, stage: str):
    """Zeros where no gradient came (an error in strict mode), as PyTorch's helper."""
    out = []
    for i, g in enumerate(grads):
        if g is None:
            if strict:
                raise RuntimeError(_STRICT_MISSING[stage].format(i=i))
            g = zeros_like(refs[i])
        elif strict and create_graph and not g.requires_grad:
            what = "hessian" if "double" in stage else "jacobian"
            raise RuntimeError(
                f"The {what} of the user-provided function is independent of input {i}. This is "
                "not allowed in strict mode when create_graph=True."
            )
        out.append(g)
    return tuple(out)


def _vector(v: Any, fn_name: str, create_graph: bool, like: tuple, like_is_tuple: bool) -> tuple:
    _, v = _as_tuple(v, "v", fn_name)
    v = _prepare(v, create_graph, need_graph=False)
    _check_v(v, like, like_is_tuple)
    return v


def _single_output(outputs: tuple, is_tuple: bool, fn_name: str) -> None:
    if is_tuple or not isinstance(outputs[0], Tensor):
        raise RuntimeError(f"The function given to {fn_name} should return a single Tensor")
    if outputs[0].numel() != 1:
        raise RuntimeError(
            f"The Tensor returned by the function given to {fn_name} should contain a single "
            "element"
        )


# --------------------------------------------------------------------------------- the API
def vjp(
    func: Callable, inputs: Any, v: Any = None, create_graph: bool = False, strict: bool = False
) -> tuple[Any, Any]:
    """(func(inputs), the vector-Jacobian product `v^T J`) as PyTorch's `functional.vjp`."""
    with enable_grad():
        inputs_tuple, inputs = _as_tuple(inputs, "inputs", "vjp")
        inputs = _prepare(inputs, create_graph, need_graph=True)
        outputs_tuple, outputs = _as_tuple(
            func(*inputs), "outputs of the user-provided function", "vjp"
        )
        _check_requires_grad(outputs, "outputs", strict)
        if v is not None:
            v = _vector(v, "vjp", create_graph, outputs, outputs_tuple)
        elif len(outputs) != 1 or outputs[0].numel() != 1:
            raise RuntimeError(
                "The vector v can only be None if the user-provided function returns a single "
                "Tensor with a single element."
            )
    with set_grad_enabled(True if create_graph else is_grad_enabled()):
        result = _grad(outputs, inputs, v, create_graph=create_graph)
        result = _fill_in_zeros(result, inputs, strict, create_graph, "back")
    return (
        _unpack(_finish(outputs, create_graph), outputs_tuple),
        _unpack(_finish(result, create_graph), inputs_tuple),
    )


def jvp(
    func: Callable, inputs: Any, v: Any = None, create_graph: bool = False, strict: bool = False
) -> tuple[Any, Any]:
    """(func(inputs), the Jacobian-vector product `J v`), by the double backward trick."""
    with enable_grad():
        inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jvp")
        inputs = _prepare(inputs, create_graph, need_graph=True)
        if v is not None:
            v = _vector(v, "jvp", create_graph, inputs, inputs_tuple)
        elif len(inputs) != 1 or inputs[0].numel() != 1:
            raise RuntimeError(
                "The vector v can only be None if the input to the user-provided function is a "
                "single Tensor with a single element."
            )
        outputs_tuple, outputs = _as_tuple(
            func(*inputs), "outputs of the user-provided function", "jvp"
        )
        _check_requires_grad(outputs, "outputs", strict)
        # u -> J^T u is linear in u; its gradient with respect to u along v is J v.
        dummies = tuple(zeros_like(o, requires_grad=True) for o in outputs)
        grad_inputs = _grad(outputs, inputs, dummies, create_graph=True)
        _check_requires_grad(grad_inputs, "grad_inputs", strict)
    with set_grad_enabled(True if create_graph else is_grad_enabled()):
        result = _grad(grad_inputs, dummies, v, create_graph=create_graph)
        result = _fill_in_zeros(result, outputs, strict, create_graph, "back_trick")
    return (
        _unpack(_finish(outputs, create_graph), outputs_tuple),
        _unpack(_finish(result, create_graph), outputs_tuple),
    )


def jacobian(
    func: Callable,
    inputs: Any,
    create_graph: bool = False,
    strict: bool = False,
    vectorize: bool = False,
    strategy: str = "reverse-mode",
) -> Any:
    """The Jacobian of `func` at `inputs`: entry `[i][j]` has shape output_i.shape + input_j.shape.

    A Tensor for one input and one output, a tuple when either is a tuple, a tuple of tuples when
    both are. `vectorize=True` gives the same result, computed the same way (one backward per
    output element); `strategy="forward-mode"` is not available (there is no forward mode AD).
    """
    if strategy not in ("forward-mode", "reverse-mode"):
        raise ValueError('Expected strategy to be either "forward-mode" or "reverse-mode".')
    if strategy == "forward-mode":
        raise NotImplementedError(
            'jacobian: strategy="forward-mode" needs forward mode AD, which this library does '
            'not have; use strategy="reverse-mode"'
        )
    if vectorize and strict:
        raise RuntimeError(
            "torch.autograd.functional.jacobian: `strict=True` and `vectorized=True` are not "
            "supported together. Please either set `strict=False` or `vectorize=False`."
        )
    with enable_grad():
        inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
        inputs = _prepare(inputs, create_graph, need_graph=True)
        outputs_tuple, outputs = _as_tuple(
            func(*inputs), "outputs of the user-provided function", "jacobian"
        )
        _check_requires_grad(outputs, "outputs", strict)
        rows = tuple(
            _jacobian_of_output(i, out, inputs, create_graph, strict)
            for i, out in enumerate(outputs)
        )
    return _unpack(_finish(rows, create_graph), (outputs_tuple, inputs_tuple))


def _jacobian_of_output(
    i: int, out: Tensor, inputs: tuple, create_graph: bool, strict: bool
) -> tuple:
    """d out / d input_j for every j: one backward pass per element of `out`."""
    columns: list[list[Tensor]] = [[] for _ in inputs]
    flat = out.reshape(-1)
    for k in range(out.numel()):
        grads = _grad((flat[k],), inputs, retain_graph=True, create_graph=create_graph)
        for j, (g, inp) in enumerate(zip(grads, inputs, strict=True)):
            if g is None:
                if strict:
                    raise RuntimeError(
                        f"Output {i} of the user-provided function is independent of input {j}. "
                        "This is not allowed in strict mode."
                    )
                g = zeros_like(inp)
            elif strict and create_graph and not g.requires_grad:
                raise RuntimeError(
                    f"The jacobian of the user-provided function is independent of input {i}. "
                    "This is not allowed in strict mode when create_graph=True."
                )
            columns[j].append(g)
    return tuple(
        _stacked(col, tuple(out.shape) + tuple(inp.shape), inp)
        for col, inp in zip(columns, inputs, strict=True)
    )


def _stacked(rows: list[Tensor], shape: tuple, like: Tensor) -> Tensor:
    if not rows:  # an output without elements
        return zeros_like(like).reshape(-1)[:0].reshape(shape)
    return stack(rows, 0).reshape(shape)


def hessian(
    func: Callable,
    inputs: Any,
    create_graph: bool = False,
    strict: bool = False,
    vectorize: bool = False,
    outer_jacobian_strategy: str = "reverse-mode",
) -> Any:
    """The Hessian of a scalar function: entry `[i][j]` has shape input_i.shape + input_j.shape."""
    inputs_tuple, inputs = _as_tuple(inputs, "inputs", "hessian")
    if outer_jacobian_strategy not in ("forward-mode", "reverse-mode"):
        raise ValueError('Expected strategy to be either "forward-mode" or "reverse-mode".')

    def single_output(*args: Tensor) -> Tensor:
        out = func(*args)
        out_tuple, outs = _as_tuple(out, "outputs of the user-provided function", "hessian")
        _check_requires_grad(outs, "outputs", strict)
        _single_output(outs, out_tuple, "hessian")
        return out.squeeze()

    def gradient(*args: Tensor) -> Any:
        jac = jacobian(single_output, args, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict)
        return jac

    result = jacobian(
        gradient,
        inputs,
        create_graph=create_graph,
        strict=strict,
        vectorize=vectorize,
        strategy=outer_jacobian_strategy,
    )
    return _unpack(result, (inputs_tuple, inputs_tuple))


def _first_derivatives(
    func: Callable, inputs: Any, v: Any, create_graph: bool, strict: bool, fn_name: str
) -> tuple:
    """The shared start of vhp and hvp: prepared inputs and v, the output, its gradient."""
    inputs_tuple, inputs = _as_tuple(inputs, "inputs", fn_name)
    inputs = _prepare(inputs, create_graph, need_graph=True)
    if v is not None:
        v = _vector(v, fn_name, create_graph, inputs, inputs_tuple)
    elif len(inputs) != 1 or inputs[0].numel() != 1:
        raise RuntimeError(
            "The vector v can only be None if the input to the user-provided function is a "
            "single Tensor with a single element."
        )
    outputs_tuple, outputs = _as_tuple(
        func(*inputs), "outputs of the user-provided function", fn_name
    )
    _check_requires_grad(outputs, "outputs", strict)
    _single_output(outputs, outputs_tuple, fn_name)
    jac = _grad(outputs, inputs, create_graph=True)
    _check_requires_grad(jac, "jacobian", strict)
    return inputs_tuple, inputs, v, outputs_tuple, outputs, jac


def vhp(
    func: Callable, inputs: Any, v: Any = None, create_graph: bool = False, strict: bool = False
) -> tuple[Any, Any]:
    """(func(inputs), the vector-Hessian product `v^T H`) of a scalar function."""
    with enable_grad():
        inputs_tuple, inputs, v, outputs_tuple, outputs, jac = _first_derivatives(
            func, inputs, v, create_graph, strict, "vhp"
        )
    with set_grad_enabled(True if create_graph else is_grad_enabled()):
        result = _grad(jac, inputs, v, create_graph=create_graph)
        result = _fill_in_zeros(result, inputs, strict, create_graph, "double_back")
    return (
        _unpack(_finish(outputs, create_graph), outputs_tuple),
        _unpack(_finish(result, create_graph), inputs_tuple),
    )


def hvp(
    func: Callable, inputs: Any, v: Any = None, create_graph: bool = False, strict: bool = False
) -> tuple[Any, Any]:
    """(func(inputs), the Hessian-vector product `H v`), by the double backward trick."""
    with enable_grad():
        inputs_tuple, inputs, v, outputs_tuple, outputs, jac = _first_derivatives(
            func, inputs, v, create_graph, strict, "hvp"
        )
        dummies = tuple(zeros_like(t, requires_grad=True) for t in inputs)
        double_back = _grad(jac, inputs, dummies, create_graph=True)
        _check_requires_grad(jac, "hessian", strict)
    with set_grad_enabled(True if create_graph else is_grad_enabled()):
        result = _grad(double_back, dummies, v, create_graph=create_graph)
        result = _fill_in_zeros(result, inputs, strict, create_graph, "double_back_trick")
    return (
        _unpack(_finish(outputs, create_graph), outputs_tuple),
        _unpack(_finish(result, create_graph), inputs_tuple),
    )
