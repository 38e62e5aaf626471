"""Neural-network ops as single fused nodes: linear, softmax, log_softmax, cross entropy, gelu, erf,
mse loss and dropout.

`LinearBackward0` and `CrossEntropyLossBackward0` are one node each, with no temporaries beyond what
a hand-written NumPy step needs: a training step of an MLP spends its time in BLAS, not in copies.
"""

from __future__ import annotations

import math
import weakref
from typing import Any

import numpy as np

from ..core.op import Op, require_kernel_dtype, require_tensor
from ..core.tensor import Tensor
from . import dual
from .dual import as_array, exp, mul_const, sum_dims, xp_of
from .promotion import as_float
from .reduction import logsumexp_array, normalize_dim
from .special import special_array

_SQRT_HALF = math.sqrt(0.5)
_INV_SQRT_2PI = 1 / math.sqrt(2 * math.pi)
_TANH_K = math.sqrt(2 / math.pi)


def erf_array(a: Any) -> Any:
    """The error function of an array (SciPy's or CuPy's, through `special.special_array`)."""
    return special_array("erf", a)


class ErfBackward0(Op):
    __slots__ = ()
    saved_inputs = (0,)

    def forward(self, a: Any) -> Any:
        return erf_array(as_float(a))  # integers give the default float dtype, as in PyTorch

    def backward(self, g: Any) -> Any:
        (a,) = self.saved(g)
        return g * (exp(-(a * a)) * (2 / math.sqrt(math.pi)))


def _erf(x: Any) -> Any:
    return ErfBackward0.apply(x) if isinstance(x, Tensor) else erf_array(x)


class LinearBackward0(Op):
    """x @ weight.T + bias in one node: backward is two matmuls and a column sum."""

    __slots__ = ("_new_gx",)
    op_name = "linear"
    saved_inputs = (0, 1)
    saved_for = {0: (1,), 1: (0,)}  # x only for the weight's gradient, the weight for x's

    _new_gx: weakref.ref[Any] | None  # x's gradient, weakly: handed over on release

    def forward(self, x: Any, w: Any, b: Any = None) -> Any:
        self._new_gx = None
        if x.ndim > 2 and x.flags.c_contiguous:
            # one (rows, in) @ (in, out) product: NumPy's batched matmul loops over dim 0
            out = (x.reshape((-1, x.shape[-1])) @ w.T).reshape(x.shape[:-1] + (w.shape[0],))
        else:
            out = x @ w.T
        if b is not None:
            out += b  # `out` is a fresh buffer: adding in place saves a temporary
        return as_array(out)

    def backward(self, g: Any) -> tuple:
        x, w = self.saved(g)[:2]
        need = self.needs_input_grad
        gw = gb = None
        if need[1]:
            if x.ndim == 1:
                gw = dual.unsqueeze(g, -1) * x
            elif x.ndim == 2:
                gw = g.T @ x
            else:
                gw = g.reshape((-1, g.shape[-1])).T @ x.reshape((-1, x.shape[-1]))
        if len(need) > 2 and need[2]:
            gb = sum_dims(g, tuple(range(g.ndim - 1))) if g.ndim > 1 else g
        # x's gradient last: the next node (a ReLU's backward, say) reads it while it is in cache
        gx = None
        if need[0]:
            if g.ndim > 2 and not isinstance(g, Tensor) and g.flags.c_contiguous:
                gx = (g.reshape((-1, g.shape[-1])) @ w).reshape(g.shape[:-1] + (w.shape[1],))
            else:
                gx = g @ w
        if gx is not None and not isinstance(gx, Tensor):
            self._new_gx = weakref.ref(gx)  # handed over on release, see `release_saved`
        return (gx, gw, gb) if len(need) > 2 else (gx, gw)

    def release_saved(self) -> None:
        """Free the saved tensors, then hand x's gradient, a new array, over to x's node.

        Only now: until the saved x is dropped, x is alive here, so x's node could not tell that
        nobody else holds it (its test before writing into the gradient). A graph that is kept
        is never released, and its nodes write into new arrays as usual.
        """
        super().release_saved()
        gx = self._new_gx() if self._new_gx is not None else None
        self._new_gx = None
        if gx is not None:
            self.hand_over(0, gx)


def softmax_array(a: Any, axis: int) -> Any:
    """exp(a) / sum(exp(a)) along `axis`, shifted by the max so exp never overflows."""
    xp = xp_of(a)
    e = xp.exp(a - a.max(axis=axis, keepdims=True))
    e /= e.sum(axis=axis, keepdims=True)
    return as_array(e)


class SoftmaxBackward0(Op):
    __slots__ = ("_dim",)
    op_name = "softmax"
    saves_output = True

    def forward(self, a: Any, dim: int) -> Any:
        self._dim = dim
        return softmax_array(a, dim)

    def backward(self, g: Any) -> Any:
        (y,) = self.saved(g)
        gy = g * y
        return gy - y * sum_dims(gy, self._dim, True)


class LogSoftmaxBackward0(Op):
    __slots__ = ("_dim",)
    op_name = "log_softmax"
    saves_output = True

    def forward(self, a: Any, dim: int) -> Any:
        self._dim = dim
        if a.ndim == 0:  # a 0-d tensor is its own class: log(1); NumPy has no axis 0 to reduce
            return as_array(xp_of(a).zeros_like(a))
        return as_array(a - logsumexp_array(a, (dim,), True))

    def backward(self, g: Any) -> Any:
        (y,) = self.saved(g)
        return g - exp(y) * sum_dims(g, self._dim, True)


def _class_max(x: Any, axis: int) -> Any:
    """The max over the class axis, kept as a length-1 axis.

    A reduction along a short contiguous axis runs one tiny inner loop per row (15 us for 256 rows
    of 10 classes); over a transposed copy it runs across rows instead (2 us), up to ~32 classes.
    """
    if x.ndim == 2 and axis == 1 and x.shape[1] <= 32 and xp_of(x) is np:
        return np.maximum.reduce(np.ascontiguousarray(x.T), axis=0)[:, None]
    return x.max(axis=axis, keepdims=True)


def _pick(a: Any, index: Any, axis: int) -> Any:
    """`a` at `index` along `axis` (index has length 1 there), as take_along_axis gives it."""
    if a.ndim == 2 and axis == 1:  # (batch, classes): one fancy index, not take_along_axis's
        return a[xp_of(a).arange(a.shape[0]), index[:, 0]][:, None]
    return xp_of(a).take_along_axis(a, index, axis=axis)


class CrossEntropyLossBackward0(Op):
    """log_softmax + nll_loss over class indices in one node; backward is (softmax - onehot) / N."""

    __slots__ = ("_probs", "_hit", "_keep", "_count", "_reduction", "_axis")
    saved_slots = ("_probs", "_hit", "_keep")
    op_name = "cross_entropy"
    saved_inputs = (0,)

    def forward(
        self,
        x: Any,
        target: Any,
        reduction: str,
        ignore_index: int | None,
        kept: int | None = None,
    ) -> Any:
        """`ignore_index` None: the caller found that no target equals it (no mask needed);
        `kept`: how many targets are not ignored, when the caller has counted them already (so
        this forward reads nothing back from the device)."""
        xp = xp_of(x)
        axis = 1 if x.ndim > 1 else 0
        self._axis, self._reduction = axis, reduction
        keep = None if ignore_index is None else target != ignore_index
        if keep is None:
            self._count = target.size
        else:
            self._count = int(keep.sum()) if kept is None else kept
        if self._count == target.size:
            keep = None  # nothing ignored: no masking in the loss or the gradient
        else:
            target = xp.where(keep, target, 0)
        # The class axis inserted by a reshape: expand_dims normalizes its axis argument first,
        # which costs more than the rest of this step on a small batch.
        index = target.reshape(target.shape[:axis] + (1,) + target.shape[axis:])
        shifted = x - _class_max(x, axis)
        e = xp.exp(shifted)
        total = e.sum(axis=axis, keepdims=True)
        # -log softmax at the target, log(total) - shifted[target], in the first array made here
        losses = xp.log(total)
        losses -= _pick(shifted, index, axis)
        losses = xp.squeeze(losses, axis)
        if keep is not None:
            losses *= keep
        e /= total  # the softmax, kept for backward
        self._probs = e
        self._keep = keep
        self._hit = index
        if reduction == "none":
            return as_array(losses)
        out = losses.sum()
        if reduction == "mean":
            out = out / self._count if self._count else out * float("nan")
        return as_array(xp.asarray(out, dtype=x.dtype))

    def _scale(self, g: Any) -> Any:
        """The output gradient, shaped to broadcast against the per-class gradient."""
        divisor = self._count if self._reduction == "mean" and self._count else 1
        if self._keep is None:  # nothing ignored: a scalar factor, or the per-sample gradient
            if self._reduction == "none":
                return dual.unsqueeze(g, self._axis)
            return g / divisor if divisor != 1 else g
        keep = xp_of(self._keep).expand_dims(self._keep, self._axis).astype(g.dtype)
        if self._reduction == "none":
            return mul_const(dual.unsqueeze(g, self._axis), keep)
        return mul_const(g, keep / divisor)

    def backward(self, g: Any, *_: Any) -> tuple:
        self.check_released()
        probs = self._probs
        xp = xp_of(probs)
        classes = probs.shape[self._axis]
        positions = xp.arange(classes).reshape((-1,) + (1,) * (probs.ndim - self._axis - 1))
        onehot = positions == self._hit
        if isinstance(g, Tensor):  # differentiable: recompute the softmax in the graph
            (x,) = self.saved(g)
            probs = softmax(x, self._axis)
            return (probs - Tensor._wrap(onehot.astype(g.dtype), g.device)) * self._scale(g), None
        grad = probs - onehot  # a fresh buffer (probs stays intact for a retained graph)
        grad *= self._scale(g)
        return grad, None


class MseLossBackward0(Op):
    __slots__ = ("_reduction",)
    op_name = "mse_loss"
    saved_inputs = (0, 1)

    def forward(self, a: Any, b: Any, reduction: str) -> Any:
        self._reduction = reduction
        d = a - b
        d *= d
        if reduction == "none":
            return as_array(d)
        return as_array(d.mean() if reduction == "mean" else d.sum())

    def backward(self, g: Any) -> tuple:
        a, b = self.saved(g)
        d = a - b
        scale = 2 / max(math.prod(d.shape), 1) if self._reduction == "mean" else 2
        grad = g * d * scale
        need = self.needs_input_grad
        return (grad if need[0] else None), (-grad if need[1] else None)


class GeluBackward0(Op):
    __slots__ = ("_tanh",)
    op_name = "gelu"
    saved_inputs = (0,)

    def forward(self, a: Any, approximate: str) -> Any:
        self._tanh = approximate == "tanh"
        xp = xp_of(a)
        if self._tanh:
            inner = _TANH_K * (a + 0.044715 * a * a * a)
            return as_array(0.5 * a * (1 + xp.tanh(inner)))
        return as_array(0.5 * a * (1 + erf_array(a * _SQRT_HALF)))

    def backward(self, g: Any) -> Any:
        (x,) = self.saved(g)
        if self._tanh:
            t = dual.tanh(_TANH_K * (x + 0.044715 * x * x * x))
            slope = 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * (_TANH_K * (1 + 0.134145 * x * x))
        else:
            cdf = 0.5 * (1 + _erf(x * _SQRT_HALF))
            slope = cdf + x * exp(x * x * -0.5) * _INV_SQRT_2PI
        return g * slope


class NativeDropoutBackward0(Op):
    __slots__ = ("_mask",)
    saved_slots = ("_mask",)
    op_name = "dropout"

    def forward(self, a: Any, p: float, generator: Any) -> Any:
        # The device's own generator (seeded from the Generator's seed), not the array module's.
        backend, state = generator.state_for(self.device)
        draws = backend.random_uniform(state, a.shape, np.float32)
        mask = draws >= p
        scaled = mask.astype(a.dtype)
        scaled *= 1 / (1 - p)
        self._mask = scaled
        return as_array(a * scaled)

    def backward(self, g: Any) -> Any:
        self.check_released()
        return mul_const(g, self._mask)


def _softmax_input(name: str, input: Tensor, dim: int, dtype: Any) -> tuple[Tensor, int]:
    """The input cast to `dtype`, and `dim` normalised; PyTorch's error for integer inputs."""
    if dtype is not None:
        input = input.to(dtype=dtype)
    dim = normalize_dim(dim, input.ndim)
    last = "_lastdim" if dim == input.ndim - 1 or input.ndim == 0 else ""
    require_kernel_dtype(f"{name}{last}_kernel_impl", input)
    return input, dim


def softmax(input: Tensor, dim: int, dtype: Any = None) -> Tensor:
    """exp(input) / sum(exp(input)) along `dim` (computed in `dtype` when given)."""
    input, dim = _softmax_input("softmax", input, dim, dtype)
    return SoftmaxBackward0.apply(input, dim=dim)


def log_softmax(input: Tensor, dim: int, dtype: Any = None) -> Tensor:
    """input - logsumexp(input) along `dim` (computed in `dtype` when given)."""
    input, dim = _softmax_input("log_softmax", input, dim, dtype)
    return LogSoftmaxBackward0.apply(input, dim=dim)


def erf(input: Tensor) -> Tensor:
    """Elementwise error function."""
    require_tensor("erf", input)
    if input.dtype.kind == "c":  # as the other special functions
        raise RuntimeError(f"erf: complex tensors are not supported, got {input.dtype}")
    return ErfBackward0.apply(input)


FUNCTIONS = {"erf": erf, "softmax": softmax, "log_softmax": log_softmax}
