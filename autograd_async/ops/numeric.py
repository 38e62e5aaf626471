"""Elementwise and small numeric functions built from other ops: copysign heaviside fmax fmin
gcd lcm signbit float_power nan_to_num addcmul addcdiv trace diff tensordot take cov corrcoef
trapezoid cumulative_trapezoid cdist conj, the dtype queries result_type promote_types can_cast
is_floating_point is_complex, and `Tensor.unfold`.

Differentiable results are compositions (their gradients follow); integer-only results (gcd,
lcm, signbit, the dtype queries) are computed on the arrays outside the graph.
"""

from __future__ import annotations

import math
from numbers import Number
from typing import Any

import numpy as np

from ..core.op import Op, require_tensor, torch_type_name
from ..core.tensor import Tensor
from ..dtypes import default_float
from ..dtypes import of as dtype_of
from .arithmetic import matmul
from .dual import as_array, xp_of
from .elementwise import where
from .linalg import vector_norm
from .promotion import result_type as array_result_type
from .reduction import normalize_dim
from .shape import cat


def _wrap(array: Any, like: Tensor) -> Tensor:
    return Tensor._wrap(xp_of(like._data).asarray(array), like.device)


def _as_tensor(value: Any, like: Tensor) -> Tensor:
    if isinstance(value, Tensor):
        return value
    return Tensor._wrap(
        xp_of(like._data).asarray(value, dtype=array_result_type(like._data, value)), like.device
    )


# ------------------------------------------------------------- elementwise
def copysign(input: Tensor, other: Any) -> Tensor:
    """|input| with the sign of other (of -0.0 too); floats (integers give the default float)."""
    require_tensor("copysign", input)
    x = input if input.dtype.kind in "fc" else input.to(dtype=default_float())
    xp = xp_of(x._data)
    sign_source = other._data if isinstance(other, Tensor) else other
    negative = xp.signbit(xp.asarray(sign_source))
    magnitude = x.abs()
    result = where(_wrap(negative, x), -magnitude, magnitude)
    if isinstance(other, Tensor) and other.requires_grad:  # a zero gradient, as PyTorch's
        result = where(_wrap(xp.zeros(result.shape, bool), x), other, result)
    return result


def heaviside(input: Tensor, values: Tensor) -> Tensor:
    """0 where input < 0, 1 where input > 0, `values` where input is 0."""
    require_tensor("heaviside", input)
    require_tensor("heaviside", values, "values", 2)
    if input.dtype != values.dtype:
        raise RuntimeError("heaviside is not yet implemented for tensors with different dtypes")
    xp = xp_of(input._data)
    data = input._data
    step = xp.where(data == 0, values._data, data > 0)  # nan is not > 0: 0, as in PyTorch
    return _wrap(step.astype(input.dtype), input)


def fmax(input: Tensor, other: Tensor) -> Tensor:
    """The elementwise maximum, ignoring nan (nan only where both are nan)."""
    require_tensor("fmax", input)
    other = _as_tensor(other, input)
    pick = input._data >= other._data
    if input.dtype.kind == "f":
        pick = pick | xp_of(input._data).isnan(other._data)
    return where(_wrap(pick, input), input, other)


def fmin(input: Tensor, other: Tensor) -> Tensor:
    """The elementwise minimum, ignoring nan (nan only where both are nan)."""
    require_tensor("fmin", input)
    other = _as_tensor(other, input)
    pick = input._data <= other._data
    if input.dtype.kind == "f":
        pick = pick | xp_of(input._data).isnan(other._data)
    return where(_wrap(pick, input), input, other)


def _integer_pair(name: str, ufunc: str) -> Any:
    def compute(input: Tensor, other: Tensor) -> Tensor:
        require_tensor(name, input)
        other = _as_tensor(other, input)
        dtype = array_result_type(input._data, other._data)
        if dtype.kind not in "iu":
            raise NotImplementedError(
                f"\"{name}_cpu\" not implemented for '{torch_type_name(dtype)}'"
            )
        xp = xp_of(input._data)
        return _wrap(getattr(xp, ufunc)(input._data, other._data).astype(dtype), input)

    compute.__name__ = name
    compute.__doc__ = f"The elementwise {ufunc} of integer tensors."
    return compute


gcd = _integer_pair("gcd", "gcd")
lcm = _integer_pair("lcm", "lcm")


def signbit(input: Tensor) -> Tensor:
    """Whether the sign bit is set (True for -0.0 and negative values)."""
    require_tensor("signbit", input)
    return _wrap(xp_of(input._data).signbit(input._data), input)


def float_power(input: Any, exponent: Any) -> Tensor:
    """input ** exponent computed in double precision (complex128 for complex operands)."""
    wide = (
        np.complex128
        if any(
            (isinstance(v, Tensor) and v.is_complex()) or isinstance(v, complex)
            for v in (input, exponent)
        )
        else np.float64
    )
    cast = [v.to(dtype=wide) if isinstance(v, Tensor) else v for v in (input, exponent)]
    return cast[0] ** cast[1] if isinstance(cast[0], Tensor) else cast[1].__rpow__(cast[0])


def nan_to_num(
    input: Tensor, nan: float = 0.0, posinf: float | None = None, neginf: float | None = None
) -> Tensor:
    """nan, +inf and -inf replaced (by 0 and the dtype's largest and lowest finite values)."""
    require_tensor("nan_to_num", input)
    if input.dtype.kind not in "fc":
        return input.clone()
    info = np.finfo(input.dtype)
    xp = xp_of(input._data)
    data = input._data
    out = where(_wrap(xp.isnan(data), input), float(nan), input)
    out = where(_wrap(xp.isposinf(data), input), float(info.max if posinf is None else posinf), out)
    return where(
        _wrap(xp.isneginf(data), input), float(info.min if neginf is None else neginf), out
    )


def addcmul(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value: Any = 1) -> Tensor:
    """input + value * tensor1 * tensor2."""
    require_tensor("addcmul", input)
    product = tensor1 * tensor2
    return input + (product if value == 1 else product * value)


def addcdiv(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value: Any = 1) -> Tensor:
    """input + value * tensor1 / tensor2 (integer division is refused, as in PyTorch)."""
    require_tensor("addcdiv", input)
    if tensor1.dtype.kind in "biu" and tensor2.dtype.kind in "biu":
        raise RuntimeError(
            "Integer division with addcdiv is no longer supported, and in a future release "
            "addcdiv will perform a true division of tensor1 and tensor2. The historic addcdiv "
            "behavior can be implemented as (input + value * torch.trunc(tensor1 / tensor2))."
            "to(input.dtype) for integer inputs and as (input + value * tensor1 / tensor2) for "
            "float inputs. The future addcdiv behavior is just the latter implementation: "
            "(input + value * tensor1 / tensor2), for all dtypes."
        )
    quotient = tensor1 / tensor2
    return input + (quotient if value == 1 else quotient * value)


class ConjBackward0(Op):
    """The complex conjugate; its gradient is the conjugate of the output's."""

    __slots__ = ()
    op_name = "conj"

    def forward(self, a: Any) -> Any:
        return as_array(xp_of(a).conj(a))

    def backward(self, g: Any) -> Any:
        return g.conj()


def conj(input: Tensor) -> Tensor:
    """The complex conjugate (the tensor itself for real dtypes)."""
    require_tensor("conj", input)
    return ConjBackward0.apply(input) if input.is_complex() else input


# -------------------------------------------------------------- reductions
def trace(input: Tensor) -> Tensor:
    """The sum of the main diagonal of a 2-D tensor."""
    require_tensor("trace", input)
    if input.ndim != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {input.ndim}")
    return input.diagonal().sum()


def diff(
    input: Tensor,
    n: int = 1,
    dim: int = -1,
    prepend: Tensor | None = None,
    append: Tensor | None = None,
) -> Tensor:
    """The n-th forward difference along `dim` (after prepending and appending)."""
    require_tensor("diff", input)
    if input.ndim == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    axis = normalize_dim(dim, input.ndim)
    parts = [t for t in (prepend, input, append) if t is not None]
    x = cat(parts, axis) if len(parts) > 1 else input
    for _ in range(n):
        length = x.shape[axis]
        if length == 0:
            break
        later, earlier = x.narrow(axis, 1, length - 1), x.narrow(axis, 0, length - 1)
        x = later != earlier if x.dtype.kind == "b" else later - earlier
    return x


def tensordot(a: Tensor, b: Tensor, dims: Any = 2, out: Any = None) -> Tensor:
    """The sum of products over `dims` (the last n of a with the first n of b, or two lists)."""
    require_tensor("tensordot", a, "a")
    require_tensor("tensordot", b, "b", 2)
    if isinstance(dims, Tensor):
        dims = dims.tolist()
    if isinstance(dims, int):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        dims_a, dims_b = list(range(a.ndim - dims, a.ndim)), list(range(dims))
    else:
        dims_a, dims_b = ([d] if isinstance(d, int) else list(d) for d in dims)
    dims_a = [normalize_dim(d, a.ndim) for d in dims_a]
    dims_b = [normalize_dim(d, b.ndim) for d in dims_b]
    for da, db in zip(dims_a, dims_b):
        if a.shape[da] != b.shape[db]:
            raise RuntimeError(
                f"contracted dimensions need to match, but first has size {a.shape[da]} in dim "
                f"{da} and second has size {b.shape[db]} in dim {db}"
            )
    free_a = [d for d in range(a.ndim) if d not in dims_a]
    free_b = [d for d in range(b.ndim) if d not in dims_b]
    size = math.prod(a.shape[d] for d in dims_a)
    left = a.permute(*free_a, *dims_a).reshape(-1, size)
    right = b.permute(*dims_b, *free_b).reshape(size, -1)
    shape = [a.shape[d] for d in free_a] + [b.shape[d] for d in free_b]
    return matmul(left, right).reshape(*shape)


def take(input: Tensor, index: Tensor) -> Tensor:
    """The elements at `index` of the flattened input, in index's shape."""
    require_tensor("take", input)
    require_tensor("take", index, "index", 2)
    return input.reshape(-1)[index]


def is_inference(input: Tensor) -> bool:
    """True for a tensor made in inference mode (see `Tensor.is_inference`)."""
    require_tensor("is_inference", input)
    return input.is_inference()


def detach(input: Tensor) -> Tensor:
    """The tensor outside the graph, sharing its data (see `Tensor.detach`)."""
    require_tensor("detach", input)
    return input.detach()


def cov(
    input: Tensor,
    *,
    correction: int = 1,
    fweights: Tensor | None = None,
    aweights: Tensor | None = None,
) -> Tensor:
    """The covariance matrix of the rows of `input` (variables) over its columns."""
    require_tensor("cov", input)
    if input.ndim > 2:
        raise RuntimeError(
            f"cov(): expected input to have two or fewer dimensions but got an "
            f"input with {input.ndim} dimensions"
        )
    x = input.reshape(1, -1) if input.ndim < 2 else input
    if x.dtype.kind not in "fc":
        x = x.to(dtype=default_float())
    weights = None
    if fweights is not None:
        weights = fweights
    if aweights is not None:
        weights = aweights if weights is None else weights * aweights
    if weights is None:
        count = x.shape[1]
        mean = x.mean(1, keepdim=True)
        total = count - correction
        centred = x - mean
        out = matmul(centred, centred.conj().T if x.is_complex() else centred.T) / total
    else:
        w = weights.to(dtype=x.dtype)
        w_sum = w.sum()
        mean = (x * w).sum(1, keepdim=True) / w_sum
        if correction == 0:
            norm = w_sum
        elif aweights is None:
            norm = w_sum - correction
        else:
            norm = w_sum - correction * (w * aweights.to(dtype=x.dtype)).sum() / w_sum
        centred = x - mean
        out = matmul(centred * w, centred.T) / norm
    return out.squeeze() if input.ndim < 2 else out


def corrcoef(input: Tensor) -> Tensor:
    """Pearson correlation coefficients of the rows, clipped to [-1, 1]."""
    c = cov(input)
    if c.ndim == 0:
        return c / c
    d = c.diagonal()
    std = d.sqrt()
    out = c / std.unsqueeze(1) / std.unsqueeze(0)
    return out.clamp(-1, 1)


def trapezoid(y: Tensor, x: Any = None, *, dx: Any = None, dim: int = -1) -> Tensor:
    """The integral of y along `dim` by the trapezoid rule (spacing dx, or sample points x)."""
    require_tensor("trapezoid", y)
    axis = normalize_dim(dim, y.ndim)
    n = y.shape[axis]
    if n == 0:
        return y.sum(axis)
    pairs = y.narrow(axis, 1, n - 1) + y.narrow(axis, 0, n - 1)
    if isinstance(x, Tensor):
        spacing = diff(x, dim=-1 if x.ndim == 1 else dim)
        if x.ndim == 1:
            shape = [1] * y.ndim
            shape[axis] = n - 1
            spacing = spacing.reshape(*shape)
        return (pairs * spacing).sum(axis) / 2
    if dx is None:  # a number in x's place is the spacing too
        dx = x if isinstance(x, Number) else 1
    return pairs.sum(axis) * (dx / 2)


def cumulative_trapezoid(y: Tensor, x: Any = None, *, dx: Any = None, dim: int = -1) -> Tensor:
    """The running trapezoid integral of y along `dim` (one fewer element)."""
    require_tensor("cumulative_trapezoid", y)
    axis = normalize_dim(dim, y.ndim)
    n = y.shape[axis]
    pairs = y.narrow(axis, 1, max(n - 1, 0)) + y.narrow(axis, 0, max(n - 1, 0))
    if isinstance(x, Tensor):
        spacing = diff(x, dim=-1 if x.ndim == 1 else dim)
        if x.ndim == 1:
            shape = [1] * y.ndim
            shape[axis] = n - 1
            spacing = spacing.reshape(*shape)
        return (pairs * spacing).cumsum(axis) / 2
    if dx is None:  # a number in x's place is the spacing too
        dx = x if isinstance(x, Number) else 1
    return pairs.cumsum(axis) * (dx / 2)


def cdist(
    x1: Tensor,
    x2: Tensor,
    p: float = 2.0,
    compute_mode: str = "use_mm_for_euclid_dist_if_necessary",
) -> Tensor:
    """The p-norm distance between each row of x1 and each row of x2 (batched)."""
    require_tensor("cdist", x1, "x1")
    require_tensor("cdist", x2, "x2", 2)
    if x1.ndim < 2 or x2.ndim < 2:
        raise RuntimeError(f"cdist only supports at least 2D tensors, X1 got: {x1.ndim}D")
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(
            f"X1 and X2 must have the same number of columns. X1: {x1.shape[-1]} X2: {x2.shape[-1]}"
        )
    if p < 0:
        raise RuntimeError(f"cdist only supports non-negative p values, got {p}")

    differences = x1.unsqueeze(-2) - x2.unsqueeze(-3)
    return vector_norm(differences, p, -1)


# ------------------------------------------------------------ dtype queries
def result_type(tensor1: Any, tensor2: Any) -> Any:
    """The dtype PyTorch's promotion gives an op of these tensors and numbers."""
    values = [v._data if isinstance(v, Tensor) else v for v in (tensor1, tensor2)]
    return dtype_of(array_result_type(*values))


_CATEGORY = {"b": 0, "u": 1, "i": 1, "f": 2, "c": 3}


def promote_types(type1: Any, type2: Any) -> Any:
    """The smallest dtype both dtypes convert to (PyTorch's table)."""
    a, b = np.dtype(type1), np.dtype(type2)
    return dtype_of(array_result_type(np.empty(1, a), np.empty(1, b)))


def can_cast(from_: Any, to: Any) -> bool:
    """Whether PyTorch's casting rule allows `from_` to `to` (no lower category)."""
    return _CATEGORY[np.dtype(from_).kind] <= _CATEGORY[np.dtype(to).kind]


def is_floating_point(input: Tensor) -> bool:
    """True for a floating point dtype."""
    require_tensor("is_floating_point", input)
    return input.dtype.kind == "f"


def is_complex(input: Tensor) -> bool:
    """True for a complex dtype."""
    require_tensor("is_complex", input)
    return input.dtype.kind == "c"


def unfold(input: Tensor, dimension: int, size: int, step: int) -> Tensor:
    """Every window of `size` elements, `step` apart, along `dimension`, as a new last dim."""
    axis = normalize_dim(dimension, max(input.ndim, 1))
    length = input.shape[axis] if input.ndim else 1
    if size > length:
        raise RuntimeError(
            f"maximum size for tensor at dimension {axis} is {length} but size is {size}"
        )
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    count = (length - size) // step + 1
    index = np.arange(count)[:, None] * step + np.arange(size)[None, :]
    moved = input.movedim(axis, -1) if input.ndim else input.reshape(1)
    windows = moved[..., _wrap(index, input)]  # (..., count, size)
    return windows.movedim(-2, axis) if input.ndim else windows.reshape(count, size)


FUNCTIONS: dict[str, Any] = {
    "copysign": copysign,
    "heaviside": heaviside,
    "fmax": fmax,
    "fmin": fmin,
    "gcd": gcd,
    "lcm": lcm,
    "signbit": signbit,
    "float_power": float_power,
    "nan_to_num": nan_to_num,
    "addcmul": addcmul,
    "addcdiv": addcdiv,
    "trace": trace,
    "diff": diff,
    "tensordot": tensordot,
    "take": take,
    "cov": cov,
    "corrcoef": corrcoef,
    "trapezoid": trapezoid,
    "trapz": trapezoid,
    "cumulative_trapezoid": cumulative_trapezoid,
    "cdist": cdist,
    "result_type": result_type,
    "promote_types": promote_types,
    "can_cast": can_cast,
    "is_floating_point": is_floating_point,
    "is_complex": is_complex,
    "conj": conj,
    "is_inference": is_inference,
    "detach": detach,
}
METHODS: dict[str, Any] = {"unfold": unfold}
# Not Tensor methods in PyTorch.
NOT_METHODS = (
    "tensordot",
    "cdist",
    "result_type",
    "promote_types",
    "can_cast",
    "trapezoid",
    "trapz",
    "cumulative_trapezoid",
    "is_inference",
    "detach",
)
