"""`gradcheck` and `gradgradcheck`: engine Jacobians against central differences.

As in PyTorch, inputs that require grad should be float64 (or complex128): with float32 the finite
differences are too coarse for the default tolerances, so such inputs get a warning, and the check
runs anyway. `fast_mode` compares `v^T J u` for random `u`, `v` instead of whole Jacobians.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..core.tensor import Tensor
from ..grad_mode import no_grad
from ..node_evaluation import materialize
from .api import grad
from .function import BackwardCFunction, Function
from .functional import jvp


class GradcheckError(RuntimeError):
    """The analytical and numerical derivatives disagree."""


NONDET_MESSAGE = (
    "Backward is not reentrant, i.e., running backward with same input and grad_output multiple "
    "times gives different values, although analytical gradient matches numerical gradient."
    "The tolerance for nondeterminism was {}."
)
UNDEFINED_GRAD_MESSAGE = (
    'Expected backward function to handle undefined output grads. Please look at "Notes about '
    'undefined output gradients" in "tools/autograd/derivatives.yaml"'
)
UNDEFINED_GRAD_NONZERO_MESSAGE = (
    "Expected all input grads to be undefined or zero when all output grads are undefined or "
    'zero. Please look at "Notes about undefined output gradients" in '
    '"tools/autograd/derivatives.yaml"'
)


def _as_tuple(x: Any) -> tuple:
    return x if isinstance(x, tuple) else tuple(x) if isinstance(x, list) else (x,)


def _differentiable_outputs(outputs: tuple) -> list[Tensor]:
    return [o for o in outputs if isinstance(o, Tensor) and o.dtype.kind in "fc"]


def _outputs(fn: Callable, inputs: tuple) -> list[Tensor]:
    return _differentiable_outputs(_as_tuple(fn(*inputs)))


def _host(t: Tensor) -> np.ndarray:
    return np.array(t.__array__(), dtype=np.float64 if t.dtype.kind == "f" else t.dtype)


def _check_inputs(inputs: tuple) -> list[int]:
    """The indices of the inputs to check; warns, as PyTorch, for those not in double precision."""
    wrt = [i for i, x in enumerate(inputs) if isinstance(x, Tensor) and x.requires_grad]
    if not wrt:
        raise ValueError("gradcheck expects at least one input tensor to require gradient")
    for i in wrt:
        if inputs[i].dtype not in (np.float64, np.complex128):
            warnings.warn(
                f"Input #{i} requires gradient and is not a double precision floating point or "
                "complex. This check will likely fail if all the inputs are not of double "
                "precision floating point or complex. ",
                stacklevel=3,
            )
    return wrt


# --------------------------------------------------------------------- slow mode: whole Jacobians
def _numerical(fn: Callable, inputs: tuple, wrt: list[int], eps: float) -> list[list[np.ndarray]]:
    """J[i][o]: (numel of input i, numel of output o), by central differences."""
    base = _outputs(fn, inputs)
    jac = [[np.zeros((inputs[i].numel(), o.numel())) for o in base] for i in wrt]
    for row, i in enumerate(wrt):
        data = inputs[i]._data
        for j in range(data.size):
            index = np.unravel_index(j, data.shape)
            original = data[index].item()
            data[index] = original + eps
            plus = [_host(o).ravel() for o in _outputs(fn, inputs)]
            data[index] = original - eps
            minus = [_host(o).ravel() for o in _outputs(fn, inputs)]
            data[index] = original
            for col, (p, m) in enumerate(zip(plus, minus, strict=True)):
                jac[row][col][j] = (p - m) / (2 * eps)
    return jac


def _analytical(outputs: list[Tensor], targets: list[Tensor]) -> list[list[np.ndarray]]:
    """J[i][o] from one backward pass per output element."""
    jac = [[np.zeros((t.numel(), o.numel())) for o in outputs] for t in targets]
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


def _slow_check(
    fn: Callable,
    inputs: tuple,
    wrt: list[int],
    eps: float,
    atol: float,
    rtol: float,
    nondet_tol: float,
) -> None:
    numerical = _numerical(fn, inputs, wrt, eps)
    outputs = _outputs(fn, inputs)
    targets = [inputs[i] for i in wrt]
    analytical = _analytical(outputs, targets)
    _check_reentrant(analytical, _analytical(outputs, targets), nondet_tol)
    for row, i in enumerate(wrt):
        for col, (num, ana) in enumerate(zip(numerical[row], analytical[row], strict=True)):
            if not np.allclose(ana, num, rtol=rtol, atol=atol):
                raise GradcheckError(
                    f"Jacobian mismatch for output {col} with respect to input {i},\n"
                    f"numerical:{num}\nanalytical:{ana}\n"
                )


def _check_reentrant(first: list, second: list, nondet_tol: float) -> None:
    """Two backward passes over the same graph must agree within `nondet_tol` (PyTorch's test)."""
    for row_a, row_b in zip(first, second, strict=True):
        for a, b in zip(row_a, row_b, strict=True):
            if np.size(a) and np.max(np.abs(np.asarray(a) - np.asarray(b))) > nondet_tol:
                raise GradcheckError(NONDET_MESSAGE.format(nondet_tol))


# ------------------------------------------------------------- fast mode: v^T J u per (in, out)
def _random_unit(shape: tuple, rng: np.random.Generator) -> np.ndarray:
    vec = rng.random(int(np.prod(shape, dtype=np.int64)))
    norm = np.linalg.norm(vec)
    return (vec / norm if norm else vec).reshape(shape)


def _fast_check(
    fn: Callable,
    inputs: tuple,
    wrt: list[int],
    eps: float,
    atol: float,
    rtol: float,
    nondet_tol: float,
) -> None:
    """PyTorch's fast mode: numerical `v . (J u)` by a central difference along `u`, against the
    analytical `(v^T J) . u` from one backward pass per output, with atol scaled by sum(u)sum(v).
    """
    rng = np.random.default_rng(0)
    outputs = _outputs(fn, inputs)
    all_u = [_random_unit(inputs[i].shape, rng) for i in wrt]
    all_v = [_random_unit(o.shape, rng) for o in outputs]
    targets = [inputs[i] for i in wrt]
    for row, i in enumerate(wrt):
        data = inputs[i]._data
        original = data.copy()
        u = all_u[row].astype(data.dtype)
        data[...] = original + eps * u
        plus = [_host(o) for o in _outputs(fn, inputs)]
        data[...] = original - eps * u
        minus = [_host(o) for o in _outputs(fn, inputs)]
        data[...] = original
        for col, out in enumerate(outputs):
            numerical = float(np.sum(all_v[col] * (plus[col] - minus[col]) / (2 * eps)))
            analytical = [_vjp_dot(out, targets, all_v[col], all_u[row], row) for _ in range(2)]
            _check_reentrant([[analytical[0]]], [[analytical[1]]], nondet_tol)
            scaled_atol = atol * float(all_u[row].sum()) * float(all_v[col].sum())
            if not np.isclose(analytical[0], numerical, rtol=rtol, atol=scaled_atol):
                raise GradcheckError(
                    f"Jacobian mismatch for output {col} with respect to input {i},\n"
                    f"numerical:{numerical}\nanalytical:{analytical[0]}\n\n"
                    "The above quantities relating the numerical and analytical jacobians are "
                    "computed in fast mode. See: https://github.com/pytorch/pytorch/issues/53876 "
                    "for more background about fast mode."
                )


def _vjp_dot(out: Tensor, targets: list, v: np.ndarray, u: np.ndarray, row: int) -> float:
    if not out.requires_grad:
        return 0.0
    seed = Tensor(v.astype(out.dtype), device=out.device)
    g = grad(out, targets, seed, retain_graph=True, allow_unused=True)[row]
    return 0.0 if g is None else float(np.sum(_host(g) * u))


def _check_backward_scales_with_grad_output(fn: Callable, inputs: tuple, wrt: list[int]) -> None:
    """Zero output gradients must give zero input gradients of the inputs' dtype, device, shape."""
    outputs = [o for o in _outputs(fn, inputs) if o.requires_grad]
    if not outputs:
        return
    targets = [inputs[i] for i in wrt]
    with no_grad():
        zeros = [o.detach() * 0 for o in outputs]
    for g, t in zip(grad(outputs, targets, zeros, allow_unused=True), targets, strict=True):
        if g is None:
            continue
        if np.any(_host(g) != 0):
            raise GradcheckError("backward not multiplied by grad_output")
        if g.dtype != t.dtype:
            raise GradcheckError("grad is incorrect type")
        if g.device is not t.device:
            raise GradcheckError("grad is incorrect device")
        if tuple(g.shape) != tuple(t.shape):
            raise GradcheckError("grad is incorrect size")


# ------------------------------------------------------------------------ undefined output grads
def _call_with_all_grads_undefined(outputs: list[Tensor]) -> None:
    """Call the custom Functions that made `outputs` with every output gradient undefined.

    PyTorch's engine runs a node even when only undefined gradients reach it; this engine skips
    such a node, so the case is tried on the outputs' own nodes directly. Built-in ops never see
    it here.
    """
    nodes = {id(o.grad_fn): o.grad_fn for o in outputs if isinstance(o.grad_fn, BackwardCFunction)}
    for node in nodes.values():
        if node.is_async:
            continue
        grads: list[Tensor | None] = [None] * len(node._out_meta)
        if node.materialize_grads:
            grads = [Tensor._wrap(g, node.device) for g in materialize(node, grads, False)]
        try:
            node.backward(*grads)
        except RuntimeError as exc:
            raise GradcheckError(UNDEFINED_GRAD_MESSAGE) from exc


class _UndefinedGrad(Function):
    """Identity whose backward sends no gradient: PyTorch's `UndefinedGrad` for the check."""

    @staticmethod
    def forward(ctx: Any, x: Tensor) -> Tensor:
        return x.clone()

    @staticmethod
    def backward(ctx: Any, grad_output: Any) -> None:
        return None


def _check_undefined_grad(fn: Callable, inputs: tuple, wrt: list[int]) -> None:
    """Backward must cope with outputs whose gradient is undefined, all at once or one at a time,
    and give zero (or no) input gradients when every output gradient is zero or undefined."""
    targets = [inputs[i] for i in wrt]
    _call_with_all_grads_undefined(_outputs(fn, inputs))
    cases = [[_UndefinedGrad.apply(o) for o in _outputs(fn, inputs)]]
    if len(cases[0]) > 1:
        for undefined in range(len(cases[0])):
            outs = _outputs(fn, inputs)
            cases.append(
                [_UndefinedGrad.apply(o) if k == undefined else o for k, o in enumerate(outs)]
            )
    for outs in cases:
        outs = [o for o in outs if o.requires_grad]
        if not outs:
            continue
        with no_grad():
            zeros = [o.detach() * 0 for o in outs]
        try:
            grads = grad(outs, targets, zeros, allow_unused=True)
        except RuntimeError as exc:
            raise GradcheckError(UNDEFINED_GRAD_MESSAGE) from exc
        for g in grads:
            if g is not None and np.any(_host(g) != 0):
                raise GradcheckError(UNDEFINED_GRAD_NONZERO_MESSAGE)


# ------------------------------------------------------------------- batched and forward checks
BATCHED_GRAD_MESSAGE = (
    "gradcheck or gradgradcheck failed while testing batched gradient computation. This could "
    "have been invoked in a number of ways (via a test that calls gradcheck/gradgradcheck "
    "directly or via an autogenerated test). The batched gradients (is_grads_batched=True) "
    "differ from the gradients computed one grad_output at a time."
)


def _check_batched_grad(
    fn: Callable, inputs: tuple, wrt: list[int], atol: float, rtol: float
) -> None:
    """Backward with a batch of grad_outputs (`is_grads_batched`) equals one pass per row."""
    outputs = [o for o in _outputs(fn, inputs) if o.requires_grad]
    targets = [inputs[i] for i in wrt]
    rng = np.random.default_rng(1)
    for col, out in enumerate(outputs):
        rows = rng.standard_normal((3, *out.shape)).astype(out.dtype)
        batch = Tensor(rows, device=out.device)
        got = grad(out, targets, batch, retain_graph=True, allow_unused=True, is_grads_batched=True)
        for row, (batched, t) in enumerate(zip(got, targets, strict=True)):
            expected = []
            for k in range(rows.shape[0]):
                seed = Tensor(rows[k], device=out.device)
                g = grad(out, [t], seed, retain_graph=True, allow_unused=True)[0]
                expected.append(np.zeros(t.shape) if g is None else _host(g))
            result = np.zeros((rows.shape[0], *t.shape)) if batched is None else _host(batched)
            if not np.allclose(result, np.stack(expected), rtol=rtol, atol=atol):
                raise GradcheckError(
                    f"For output {col} and input {wrt[row]}:\n\n{BATCHED_GRAD_MESSAGE}\n\n"
                    f"Got:\n{result}\n\nExpected:\n{np.stack(expected)}\n"
                )


def _check_forward_ad(
    fn: Callable, inputs: tuple, wrt: list[int], eps: float, atol: float, rtol: float
) -> None:
    """Jacobian columns from Jacobian-vector products (`autograd.functional.jvp`) against central
    differences; the products come from differentiating backward, as there is no dual mode."""
    numerical = _numerical(fn, inputs, wrt, eps)
    for row, i in enumerate(wrt):
        x = inputs[i]
        for j in range(x.numel()):
            direction = np.zeros(x.numel(), dtype=x.dtype)
            direction[j] = 1
            tangents = tuple(
                Tensor(direction.reshape(x.shape), device=x.device)
                if k == i
                else Tensor(np.zeros(inputs[k].shape, inputs[k].dtype), device=inputs[k].device)
                for k in wrt
            )

            def restricted(*args: Any) -> tuple:
                full = list(inputs)
                for k, a in zip(wrt, args, strict=True):
                    full[k] = a
                return tuple(_outputs(fn, tuple(full)))

            _, products = jvp(restricted, tuple(inputs[k].detach() for k in wrt), tangents)
            for col, product in enumerate(_as_tuple(products)):
                expected = numerical[row][col][j]
                got = _host(product).ravel()
                if not np.allclose(got, expected, rtol=rtol, atol=atol):
                    raise GradcheckError(
                        f"Jacobian computed with forward mode mismatch for output {col} with "
                        f"respect to input {i},\nnumerical:{expected}\nanalytical:{got}\n"
                    )


def _check_no_differentiable_outputs(
    fn: Callable, inputs: tuple, wrt: list[int], eps: float
) -> bool:
    """When no output requires grad, the numerical Jacobian must be zero (PyTorch's check).

    Returns whether that case applied.
    """
    if any(o.requires_grad for o in _outputs(fn, inputs)):
        return False
    for row in _numerical(fn, inputs, wrt, eps):
        for jac in row:
            if np.any(jac != 0):
                raise GradcheckError("Numerical gradient for function expected to be zero")
    return True


# ------------------------------------------------------------------------------------- the API
def gradcheck(
    fn: Callable[..., Any],
    inputs: Any,
    *,
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    raise_exception: bool = True,
    nondet_tol: float = 0.0,
    check_undefined_grad: bool = True,
    check_grad_dtypes: bool = False,
    check_batched_grad: bool = False,
    check_batched_forward_grad: bool = False,
    check_forward_ad: bool = False,
    check_backward_ad: bool = True,
    fast_mode: bool = False,
    masked: bool | None = None,
) -> bool:
    """Check the gradients of `fn` at `inputs` against central finite differences.

    As PyTorch's: `nondet_tol` bounds how much two backward passes over the same graph may differ;
    `check_undefined_grad` also checks that backward copes with undefined output gradients;
    `check_batched_grad` that backward with a batch of grad_outputs equals one pass per row;
    `check_forward_ad` that Jacobian-vector products match (here computed by differentiating
    backward; `check_batched_forward_grad` adds nothing more); `fast_mode` compares random
    projections `v^T J u` instead of whole Jacobians; with `raise_exception=False` a failed check
    returns False instead of raising GradcheckError. Gradients' dtypes are always checked;
    `check_grad_dtypes` and `masked` (there are no sparse tensors) are accepted for PyTorch's
    signature.
    """
    del check_grad_dtypes, check_batched_forward_grad, masked
    inputs = _as_tuple(inputs)
    wrt = _check_inputs(inputs)
    try:
        if _check_no_differentiable_outputs(fn, inputs, wrt, eps):
            return True
        if check_backward_ad:
            check = _fast_check if fast_mode else _slow_check
            check(fn, inputs, wrt, eps, atol, rtol, nondet_tol)
            _check_backward_scales_with_grad_output(fn, inputs, wrt)
            if check_undefined_grad:
                _check_undefined_grad(fn, inputs, wrt)
            if check_batched_grad:
                _check_batched_grad(fn, inputs, wrt, atol, rtol)
        if check_forward_ad:
            _check_forward_ad(fn, inputs, wrt, eps, atol, rtol)
    except GradcheckError:
        if raise_exception:
            raise
        return False
    return True


def gradgradcheck(
    fn: Callable[..., Any],
    inputs: Any,
    grad_outputs: Sequence[Tensor] | Tensor | None = None,
    *,
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    gen_non_contig_grad_outputs: bool = False,
    raise_exception: bool = True,
    nondet_tol: float = 0.0,
    check_undefined_grad: bool = True,
    check_grad_dtypes: bool = False,
    check_batched_grad: bool = False,
    check_fwd_over_rev: bool = False,
    check_rev_over_rev: bool = True,
    fast_mode: bool = False,
    masked: bool = False,
    seed: int = 0,
) -> bool:
    """Check second derivatives: gradcheck of the first derivatives built with create_graph=True.

    Random `grad_outputs` (uniform in [-1, 1), the outputs' dtype) are drawn when not given;
    `gen_non_contig_grad_outputs` makes them non-contiguous views. `check_fwd_over_rev` checks
    the first derivatives' Jacobian-vector products too; `check_rev_over_rev=False` skips the
    reverse-over-reverse check.
    """
    inputs = _as_tuple(inputs)
    wrt = [i for i, x in enumerate(inputs) if isinstance(x, Tensor) and x.requires_grad]
    outputs = [o for o in _outputs(fn, inputs) if o.requires_grad]
    if grad_outputs is None:
        rng = np.random.default_rng(seed)
        grad_outputs = tuple(
            _random_grad_output(rng, o, gen_non_contig_grad_outputs) for o in outputs
        )
    grad_outputs = _as_tuple(grad_outputs)
    n = len(inputs)

    def first_derivatives(*args: Any) -> tuple:
        outs = [o for o in _outputs(fn, args[:n]) if o.requires_grad]
        grads = grad(outs, [args[i] for i in wrt], args[n:], create_graph=True, allow_unused=True)
        return tuple(g for g in grads if g is not None)

    return gradcheck(
        first_derivatives,
        inputs + grad_outputs,
        eps=eps,
        atol=atol,
        rtol=rtol,
        raise_exception=raise_exception,
        nondet_tol=nondet_tol,
        check_undefined_grad=check_undefined_grad,
        check_grad_dtypes=check_grad_dtypes,
        check_batched_grad=check_batched_grad,
        check_forward_ad=check_fwd_over_rev,
        check_backward_ad=check_rev_over_rev,
        fast_mode=fast_mode,
        masked=masked,
    )


def _random_grad_output(rng: np.random.Generator, out: Tensor, non_contiguous: bool) -> Tensor:
    """A random gradient for `out`, uniform in [-1, 1); a strided view when asked."""
    values = rng.uniform(-1.0, 1.0, out.shape)
    if not non_contiguous or out.ndim == 0:
        return Tensor(values, dtype=out.dtype, device=out.device, requires_grad=True)
    # Every other element of a twice-as-wide array along the last dim.
    wide = np.zeros((*out.shape[:-1], 2 * out.shape[-1]))
    wide[..., ::2] = values
    base = Tensor(wide, dtype=out.dtype, device=out.device)
    view = base[..., ::2].detach()
    view.requires_grad_(True)
    return view
