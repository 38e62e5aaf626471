"""Products and running totals along a dim: prod, cumsum, cumprod.

The product rules never divide by the input, so zeros (one or several) give PyTorch's exact
gradients: prod uses the products of the elements before and after each position; cumprod
splits each row at its first zero. Backward on Tensors (create_graph) writes the same rules with
recorded ops.
"""

from __future__ import annotations

from typing import Any

from ..core.op import Op, require_tensor
from ..core.tensor import Tensor
from ..dtypes import int64
from .dual import as_array, data_of, mul_const, sum_dims, unsqueeze, where, xp_of
from .reduction import normalize_dim


def _int_to_long(a: Any, dtype: Any) -> Any:
    """PyTorch's accumulation dtype: integers and bools as int64 unless a dtype is given."""
    if dtype is not None:
        return a.astype(dtype, copy=False)
    if a.dtype.kind in "biu":
        return a.astype("int64")
    return a


def _exclusive_products(xp: Any, a: Any, axis: int) -> Any:
    """For each position, the product of the other elements along `axis` (no division)."""
    n = a.shape[axis]
    if n == 0:
        return a.copy()
    shape = list(a.shape)
    shape[axis] = 1
    ones = xp.ones(shape, a.dtype)
    head = (slice(None),) * axis + (slice(0, n),)
    # before[i] = a[0] ... a[i-1] and after[i] = a[i+1] ... a[n-1], both 1 when empty
    before = xp.cumprod(xp.concatenate([ones, a], axis=axis), axis=axis)[head]
    flipped = xp.flip(a, axis=axis)
    after = xp.cumprod(xp.concatenate([ones, flipped], axis=axis), axis=axis)[head]
    return before * xp.flip(after, axis=axis)


def _others_product(x: Tensor, axis: int) -> Tensor:
    """The product of the other elements at each position, as recorded ops (for create_graph).

    Builds n copies of `x` with position i replaced by 1 in copy i and multiplies each out:
    O(n^2), used only for a differentiable backward over zeros.
    """
    n = x.shape[axis]
    xp = xp_of(x._data)
    eye = xp.eye(n, dtype=bool)
    # copies[i] is x with x[i] along `axis` set to 1: shape (n, *x.shape)
    shape = [1] * (x.ndim + 1)
    shape[0] = shape[axis + 1] = n
    mask = eye.reshape(shape)
    copies = where(mask, 1.0, unsqueeze(x, 0))
    return _move_first_to(ProdBackward1.apply(copies, dim=axis + 1, keepdim=False), axis)


def _move_first_to(t: Tensor, axis: int) -> Tensor:
    order = list(range(1, t.ndim))
    order.insert(axis, 0)
    return t.permute(*order)


class ProdBackward1(Op):
    """Product along one dim (the full product runs over the flattened input)."""

    __slots__ = ("_dim", "_keepdim")
    op_name = "prod"
    saved_inputs = (0,)
    saves_output = True

    def forward(self, a: Any, dim: int, keepdim: bool) -> Any:
        self._dim, self._keepdim = dim, keepdim
        return as_array(a.prod(axis=dim, keepdims=keepdim))

    def backward(self, g: Any) -> Any:
        a, out = self.saved(g)
        axis = self._dim
        if not self._keepdim:
            g, out = unsqueeze(g, axis), unsqueeze(out, axis)
        data = data_of(a)
        if not isinstance(g, Tensor):
            return g * _exclusive_products(xp_of(data), data, axis)
        if not (data == 0).any():
            return g * out / a
        return g * _others_product(a, axis)


class CumsumBackward0(Op):
    __slots__ = ("_dim",)
    op_name = "cumsum"

    def forward(self, a: Any, dim: int, dtype: Any = None) -> Any:
        self._dim = dim
        return as_array(xp_of(a).cumsum(_int_to_long(a, dtype), axis=dim))

    def backward(self, g: Any) -> Any:
        axis = self._dim
        if isinstance(g, Tensor):  # the reversed running sum: total - running + own
            return sum_dims(g, axis, True) - g.cumsum(axis) + g
        xp = xp_of(g)
        return xp.flip(xp.cumsum(xp.flip(g, axis=axis), axis=axis), axis=axis)


class CumprodBackward0(Op):
    __slots__ = ("_dim",)
    op_name = "cumprod"
    saved_inputs = (0,)
    saves_output = True

    def forward(self, a: Any, dim: int, dtype: Any = None) -> Any:
        self._dim = dim
        return as_array(xp_of(a).cumprod(_int_to_long(a, dtype), axis=dim))

    def backward(self, g: Any) -> Any:
        a, out = self.saved(g)
        axis = self._dim
        data = data_of(a)
        if data.size == 0:  # nothing to differentiate (an empty dim, or an empty batch)
            return g * 0
        if not isinstance(g, Tensor):
            return _cumprod_grad(data, data_of(out), g, axis)
        if not (data == 0).any():  # the reversed running sum of g * out, over a
            go = g * out
            return (sum_dims(go, axis, True) - go.cumsum(axis) + go) / a
        # d out_k / d a_i = prod_{j <= k, j != i} a_j: the running products of the copies
        # of a with a_i set to 1, each summed against g.
        n = a.shape[axis]
        xp = xp_of(data)
        shape = [1] * (a.ndim + 1)
        shape[0] = shape[axis + 1] = n
        copies = where(xp.eye(n, dtype=bool).reshape(shape), 1.0, unsqueeze(a, 0))
        runs = CumprodBackward0.apply(copies, dim=axis + 1)
        position = xp.arange(n).reshape([n] + [1] * a.ndim)
        later = xp.arange(n).reshape([1] * (axis + 1) + [n] + [1] * (a.ndim - axis - 1))
        terms = mul_const(runs * unsqueeze(g, 0), (later >= position).astype(g.dtype))
        return _move_first_to(sum_dims(terms, axis + 1), axis)


def _cumprod_grad(a: Any, out: Any, g: Any, axis: int) -> Any:
    """The cumprod VJP on arrays, exact with zeros, in O(n) per row.

    Along a row with its first zero at z: positions before z take sum_{k >= i} g_k out_k / a_i
    (a_i is not 0 there); z itself takes out_{z-1} * sum_{k >= z} g_k prod_{z < j <= k} a_j;
    positions after z take 0.
    """
    xp = xp_of(a)
    a = xp.moveaxis(a, axis, -1)
    out = xp.moveaxis(out, axis, -1)
    g = xp.moveaxis(g, axis, -1)
    n = a.shape[-1]
    index = xp.arange(n)
    zero = a == 0
    first = xp.where(zero.any(axis=-1), zero.argmax(axis=-1), n)[..., None]
    before = index < first
    go = g * out
    tail = xp.flip(xp.cumsum(xp.flip(go, axis=-1), axis=-1), axis=-1)
    grad = xp.where(before, tail / xp.where(before, a, 1), 0)
    if zero.any():
        at_zero = index == first
        # prod_{z < j <= k} a_j: the running product with positions up to z set to 1
        runs = xp.cumprod(xp.where(index <= first, 1, a), axis=-1)
        sums = (g * runs * (index >= first)).sum(axis=-1, keepdims=True)
        previous = xp.take_along_axis(out, xp.maximum(first - 1, 0), axis=-1)
        previous = xp.where(first == 0, 1, previous)
        grad = xp.where(at_zero, previous * sums, grad)
    return as_array(xp.moveaxis(grad, -1, axis).astype(g.dtype, copy=False))


# ---------------------------------------------------------------- functions
def _dim_arg(input: Tensor, dim: Any, name: str) -> int:
    require_tensor(name, input)
    if dim is None:
        raise TypeError(f"{name}() missing required argument 'dim'")
    return normalize_dim(dim, input.ndim)


def prod(input: Tensor, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Tensor:
    """Product of all elements, or along `dim` (zeros get their exact gradient)."""
    if not isinstance(input, Tensor):
        raise TypeError(f"prod(): argument 'input' must be Tensor, not {type(input).__name__}")
    if dtype is not None:
        input = input.to(dtype=dtype)
    elif input.dtype.kind in "biu":
        input = input.to(dtype=int64)
    if dim is None:
        return ProdBackward1.apply(input.reshape(-1), dim=0, keepdim=False)
    axis = normalize_dim(dim, input.ndim)
    if input.ndim == 0:
        return ProdBackward1.apply(input.reshape(1), dim=0, keepdim=False)
    return ProdBackward1.apply(input, dim=axis, keepdim=keepdim)


def cumsum(input: Tensor, dim: Any = None, *, dtype: Any = None) -> Tensor:
    """Running sum along `dim` (integers accumulate in int64)."""
    axis = _dim_arg(input, dim, "cumsum")
    if input.ndim == 0:
        return CumsumBackward0.apply(input.reshape(1), dim=0, dtype=dtype).reshape(())
    return CumsumBackward0.apply(input, dim=axis, dtype=dtype)


def cumprod(input: Tensor, dim: Any = None, *, dtype: Any = None) -> Tensor:
    """Running product along `dim` (zeros get their exact gradient)."""
    axis = _dim_arg(input, dim, "cumprod")
    if input.ndim == 0:
        return CumprodBackward0.apply(input.reshape(1), dim=0, dtype=dtype).reshape(())
    return CumprodBackward0.apply(input, dim=axis, dtype=dtype)


FUNCTIONS = {"prod": prod, "cumsum": cumsum, "cumprod": cumprod}
