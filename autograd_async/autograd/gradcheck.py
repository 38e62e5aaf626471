"""`gradcheck` and `gradgradcheck`: engine Jacobians against central differences.

As in PyTorch, inputs that require grad must be float64: with float32 the finite differences are too
coarse for the default tolerances to mean anything.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..tensor import Tensor
from .api import grad


class GradcheckError(RuntimeError):
    """The analytical and numerical derivatives disagree."""


def _as_tuple(x: Any) -> tuple:
    return x if isinstance(x, tuple) else tuple(x) if isinstance(x, list) else (x,)


def _differentiable_outputs(outputs: tuple) -> list[Tensor]:
    return [o for o in outputs if isinstance(o, Tensor) and o.dtype.kind in "fc"]


def _host(t: Tensor) -> np.ndarray:
    return np.array(t.__array__(), dtype=np.float64 if t.dtype.kind == "f" else t.dtype)


def _check_inputs(inputs: tuple) -> list[int]:
    wrt = [i for i, x in enumerate(inputs) if isinstance(x, Tensor) and x.requires_grad]
    if not wrt:
        raise ValueError("gradcheck expects at least one input tensor to require gradient")
    for i in wrt:
        if inputs[i].dtype not in (np.float64, np.complex128):
            raise ValueError(
                f"gradcheck expects double precision inputs that require grad: input {i} is "
                f"{inputs[i].dtype}; finite differences in single precision are meaningless at "
                "these tolerances (use .double())"
            )
    return wrt


def _numerical(fn: Callable, inputs: tuple, wrt: list[int], eps: float) -> list[list[np.ndarray]]:
    """J[i][o]: (numel of input i, numel of output o), by central differences."""
    base = _differentiable_outputs(_as_tuple(fn(*inputs)))
    jac = [[np.zeros((inputs[i].numel(), o.numel())) for o in base] for i in wrt]
    for row, i in enumerate(wrt):
        data = inputs[i]._data
        for j in range(data.size):
            index = np.unravel_index(j, data.shape)
            original = data[index].item()
            data[index] = original + eps
            plus = [_host(o).ravel() for o in _differentiable_outputs(_as_tuple(fn(*inputs)))]
            data[index] = original - eps
            minus = [_host(o).ravel() for o in _differentiable_outputs(_as_tuple(fn(*inputs)))]
            data[index] = original
            for col, (p, m) in enumerate(zip(plus, minus, strict=True)):
                jac[row][col][j] = (p - m) / (2 * eps)
    return jac


def _analytical(fn: Callable, inputs: tuple, wrt: list[int]) -> list[list[np.ndarray]]:
    """J[i][o] from one backward pass per output element."""
    outputs = _differentiable_outputs(_as_tuple(fn(*inputs)))
    targets = [inputs[i] for i in wrt]
    jac = [[np.zeros((inputs[i].numel(), o.numel())) for o in outputs] for i in wrt]
    for col, out in enumerate(outputs):
        if not out.requires_grad:
            continue
        flat = np.zeros(out.numel(), dtype=out.dtype)
        for k in range(out.numel()):
            flat[:] = 0
            flat[k] = 1
            seed = Tensor(flat.reshape(out.shape), device=out.device)
            grads = grad(out, targets, seed, retain_graph=True, allow_unused=True)
            for row, g in enumerate(grads):
                if g is not None:
                    jac[row][col][:, k] = _host(g).ravel()
    return jac


def gradcheck(
    fn: Callable[..., Any],
    inputs: Any,
    *,
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    raise_exception: bool = True,
) -> bool:
    """Check the gradients of `fn` at `inputs` against central finite differences."""
    inputs = _as_tuple(inputs)
    wrt = _check_inputs(inputs)
    numerical = _numerical(fn, inputs, wrt, eps)
    analytical = _analytical(fn, inputs, wrt)
    for row, i in enumerate(wrt):
        for col, (num, ana) in enumerate(zip(numerical[row], analytical[row], strict=True)):
            if not np.allclose(ana, num, rtol=rtol, atol=atol):
                if not raise_exception:
                    return False
                raise GradcheckError(
                    f"Jacobian mismatch for output {col} with respect to input {i},\n"
                    f"numerical:{num}\nanalytical:{ana}\n"
                )
    return True


def gradgradcheck(
    fn: Callable[..., Any],
    inputs: Any,
    grad_outputs: Sequence[Tensor] | Tensor | None = None,
    *,
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    raise_exception: bool = True,
    seed: int = 0,
) -> bool:
    """Check second derivatives: gradcheck of the first derivatives built with create_graph=True."""
    inputs = _as_tuple(inputs)
    wrt = _check_inputs(inputs)
    outputs = [o for o in _differentiable_outputs(_as_tuple(fn(*inputs))) if o.requires_grad]
    if grad_outputs is None:
        rng = np.random.default_rng(seed)
        grad_outputs = tuple(
            Tensor(rng.standard_normal(o.shape), dtype=np.float64, device=o.device,
                   requires_grad=True)
            for o in outputs
        )
    grad_outputs = _as_tuple(grad_outputs)
    n = len(inputs)

    def first_derivatives(*args: Any) -> tuple:
        outs = [o for o in _differentiable_outputs(_as_tuple(fn(*args[:n]))) if o.requires_grad]
        grads = grad(outs, [args[i] for i in wrt], args[n:], create_graph=True, allow_unused=True)
        return tuple(g for g in grads if g is not None)

    return gradcheck(
        first_derivatives, inputs + grad_outputs, eps=eps, atol=atol, rtol=rtol,
        raise_exception=raise_exception,
    )
