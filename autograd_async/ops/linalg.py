"""Products and norms: bmm baddbmm addmm mv outer einsum, vector_norm matrix_norm norm.

The batched and fused products check PyTorch's shapes and then reuse matmul's nodes; einsum is
one node whose backward is one einsum per operand. `autograd_async.linalg` re-exports the norms
under PyTorch's `torch.linalg` names.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from ..core.op import Op, torch_type_name
from ..core.tensor import Tensor
from .arithmetic import BmmBackward0, MvBackward0, matmul
from .dual import as_array, data_of, expand, mul_const, quiet, unsqueeze_dims, where, xp_of
from .reduction import amax, amin, normalize_dims
from .reduction import sum as sum_  # noqa: A004


def _need_tensor(name: str, **values: Any) -> None:
    for arg, v in values.items():
        if not isinstance(v, Tensor):
            raise TypeError(f"{name}(): argument '{arg}' must be Tensor, not {type(v).__name__}")


def _need_dims(name: str, expected: int, **values: Tensor) -> None:
    for arg, v in values.items():
        if v.ndim != expected:
            raise RuntimeError(f"{name}: {arg} must be a {expected}D tensor, got {v.ndim}D")


def _same_dtype(name: str, a: Tensor, b: Tensor) -> None:
    if a.dtype != b.dtype:
        raise RuntimeError(
            f"{name}: expected both operands to have the same dtype, but got {a.dtype} and "
            f"{b.dtype}"
        )


def bmm(input: Tensor, mat2: Tensor) -> Tensor:
    """Batched matrix product of (b, n, m) and (b, m, p) tensors."""
    _need_tensor("bmm", input=input, mat2=mat2)
    _need_dims("bmm", 3, batch1=input, batch2=mat2)
    _same_dtype("bmm", input, mat2)
    b, n, m = input.shape
    if mat2.shape[:2] != (b, m):
        raise RuntimeError(
            f"Expected size for first two dimensions of batch2 tensor to be: [{b}, {m}] but got: "
            f"[{mat2.shape[0]}, {mat2.shape[1]}]."
        )
    return BmmBackward0.apply(input, mat2)


def mv(input: Tensor, vec: Tensor) -> Tensor:
    """Matrix-vector product of an (n, m) matrix and an (m,) vector."""
    _need_tensor("mv", input=input, vec=vec)
    if input.ndim != 2 or vec.ndim != 1:
        raise RuntimeError(
            f"mv: expected a 2D matrix and a 1D vector, got {input.ndim}D and {vec.ndim}D"
        )
    if input.shape[1] != vec.shape[0]:
        raise RuntimeError(
            f"size mismatch, got input ({input.shape[0]}), mat ({input.shape[0]}x"
            f"{input.shape[1]}), vec ({vec.shape[0]})"
        )
    _same_dtype("mv", input, vec)
    return MvBackward0.apply(input, vec)


def outer(input: Tensor, vec2: Tensor) -> Tensor:
    """Outer product of two 1-D tensors, shape (n, m)."""
    _need_tensor("outer", input=input, vec2=vec2)
    if input.ndim != 1 or vec2.ndim != 1:
        raise RuntimeError(
            f"outer: expected 1D tensors, but got {input.ndim}D and {vec2.ndim}D tensors"
        )
    return input.reshape(-1, 1) * vec2.reshape(1, -1)


def _scaled_sum(name: str, input: Tensor, product: Tensor, beta: Any, alpha: Any) -> Tensor:
    """beta * input + alpha * product; with beta 0 the input is ignored (nan and inf too)."""
    try:
        np.broadcast_shapes(tuple(input.shape), tuple(product.shape))
    except ValueError:
        raise RuntimeError(
            f"{name}: the input of shape {tuple(input.shape)} cannot be broadcast to the "
            f"product's shape {tuple(product.shape)}"
        ) from None
    scaled = product if alpha == 1 else product * alpha
    if beta == 0:  # PyTorch ignores the input's values, yet gives it a zero gradient
        return scaled + _zero_with_grad(input)
    return scaled + (input if beta == 1 else input * beta)


def addmm(input: Tensor, mat1: Tensor, mat2: Tensor, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
    """beta * input + alpha * (mat1 @ mat2), with input broadcast to the product's shape."""
    _need_tensor("addmm", input=input, mat1=mat1, mat2=mat2)
    if mat1.ndim != 2 or mat2.ndim != 2:
        raise RuntimeError(
            f"addmm: mat1 and mat2 must be 2D matrices, got {mat1.ndim}D and {mat2.ndim}D"
        )
    return _scaled_sum("addmm", input, matmul(mat1, mat2), beta, alpha)


def baddbmm(
    input: Tensor, batch1: Tensor, batch2: Tensor, *, beta: Any = 1, alpha: Any = 1
) -> Tensor:
    """beta * input + alpha * bmm(batch1, batch2), with input broadcast to the product's shape."""
    _need_tensor("baddbmm", input=input, batch1=batch1, batch2=batch2)
    _need_dims("baddbmm", 3, batch1=batch1, batch2=batch2)  # named here, not as bmm's
    return _scaled_sum("baddbmm", input, bmm(batch1, batch2), beta, alpha)


# ------------------------------------------------------------------ einsum
def _parse_einsum(equation: str, ndims: list[int]) -> tuple[list[str], str]:
    """Explicit subscripts per operand and for the output, with `...` spelled as letters."""
    equation = equation.replace(" ", "")
    lhs, arrow, rhs = equation.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(ndims):
        raise RuntimeError(
            "einsum(): more operands were provided than specified in the equation"
            if len(terms) < len(ndims)
            else "einsum(): fewer operands were provided than specified in the equation"
        )
    used = set(equation) - set(".,->")
    for ch in used:
        if not ch.isalpha():
            raise RuntimeError(
                f"einsum(): invalid subscript given at index {equation.index(ch)} in the equation "
                f"string, subscripts must be in [a-zA-Z]"
            )
    spare = [c for c in "ZYXWVUTSRQPONMLKJIHGFEDCBAzyxwvutsrqponmlkjihgfedcba" if c not in used]
    ellipsis_rank = 0
    for term, ndim in zip(terms, ndims):
        if "..." in term:
            ellipsis_rank = max(ellipsis_rank, ndim - (len(term) - 3))
    batch = "".join(spare[:ellipsis_rank][::-1])
    explicit = []
    for i, (term, ndim) in enumerate(zip(terms, ndims)):
        if "..." in term:
            rank = ndim - (len(term) - 3)
            term = term.replace("...", batch[ellipsis_rank - rank :] if rank else "")
        if len(term) != ndim:
            raise RuntimeError(
                f"einsum(): the number of subscripts in the equation ({len(term)}) does not match "
                f"the number of dimensions ({ndim}) for operand {i}"
                + ("" if "..." in lhs else " and no ellipsis was given")
            )
        explicit.append(term)
    if arrow:
        out = rhs.replace("...", batch)
    else:
        counts = {c: "".join(explicit).count(c) for c in set("".join(explicit))}
        out = batch + "".join(sorted(c for c, n in counts.items() if n == 1 and c not in batch))
    return explicit, out


class EinsumBackward0(Op):
    """One einsum forward; the gradient of each operand is the einsum of g with the others."""

    __slots__ = ("_terms", "_out")
    op_name = "einsum"

    def forward(self, *arrays: Any, terms: tuple[str, ...], out: str) -> Any:
        self._terms, self._out = terms, out
        xp = xp_of(arrays[0])
        return as_array(xp.einsum(",".join(terms) + "->" + out, *arrays))

    def backward(self, g: Any) -> tuple:
        operands = self.saved(g)
        grads: list[Any] = []
        for i, term in enumerate(self._terms):
            if not self.needs_input_grad[i]:
                grads.append(None)
                continue
            others = [(t, x) for j, (t, x) in enumerate(zip(self._terms, operands)) if j != i]
            known = set(self._out).union(*(set(t) for t, _ in others))
            # each letter once, in order of first appearance; letters summed inside this
            # operand alone are left out (their gradient is a broadcast)
            target = "".join(c for c in dict.fromkeys(term) if c in known)
            equation = ",".join([self._out] + [t for t, _ in others]) + "->" + target
            grad = _einsum_any(equation, g, *[x for _, x in others])
            grads.append(_spread(grad, term, target, tuple(operands[i].shape)))
        return tuple(grads)


def _einsum_any(equation: str, *operands: Any) -> Any:
    """einsum of arrays, or of Tensors as a recorded node (for create_graph)."""
    if any(isinstance(x, Tensor) for x in operands):
        return einsum(equation, *operands)
    return as_array(xp_of(operands[0]).einsum(equation, *operands))


def _spread(grad: Any, term: str, target: str, shape: tuple[int, ...]) -> Any:
    """The gradient over `target`'s letters laid out as the operand `term` of `shape`.

    Letters missing from `target` broadcast; a repeated letter (a diagonal such as 'ii') keeps
    the gradient on the diagonal only.
    """
    first = {c: term.index(c) for c in target}
    layout = tuple(shape[k] if first.get(c) == k else 1 for k, c in enumerate(term))
    if layout != tuple(grad.shape):
        grad = grad.reshape(layout)
    grad = expand(grad, shape)
    mask = None
    for k, c in enumerate(term):
        origin = term.index(c)
        if origin != k:  # a repeat: keep the entries where both axes agree
            xp = xp_of(data_of(grad))
            eye = xp.eye(shape[k], dtype=bool).reshape(
                [shape[k] if a in (origin, k) else 1 for a in range(len(term))]
            )
            mask = eye if mask is None else mask & eye
    if mask is None:
        return grad
    return mul_const(grad, mask.astype(grad.dtype))


@functools.cache
def _einsum_node(count: int) -> type[EinsumBackward0]:
    """The einsum node class for `count` operands, all saved (each gradient needs the others)."""
    return type(
        "EinsumBackward0",
        (EinsumBackward0,),
        {"__slots__": (), "saved_inputs": tuple(range(count))},
    )


def einsum(equation: str, *operands: Any) -> Tensor:
    """Einstein summation over `operands` (given inline or as one list), with `...` batches."""
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    if not isinstance(equation, str):
        raise TypeError(f"einsum(): argument 'equation' must be str, not {type(equation).__name__}")
    if not operands:
        raise RuntimeError("einsum(): must provide at least one operand")
    for i, x in enumerate(operands):
        if not isinstance(x, Tensor):
            raise TypeError(f"einsum(): operand {i} must be a Tensor, not {type(x).__name__}")
    terms, out = _parse_einsum(equation, [x.ndim for x in operands])
    sizes: dict[str, int] = {}
    for i, (term, x) in enumerate(zip(terms, operands)):
        for c, n in zip(term, x.shape):
            if sizes.setdefault(c, n) != n:
                raise RuntimeError(
                    f"einsum(): operands do not broadcast with remapped shapes (original->remapped)"
                    f": subscript '{c}' has size {sizes[c]} and size {n} in operand {i}"
                )
    for c in out:
        if c not in sizes:
            raise RuntimeError(
                f"einsum(): output subscript {c} does not appear in the equation for any input "
                "operand"
            )
    dtypes = {x.dtype for x in operands}
    if len(dtypes) > 1:
        raise RuntimeError(
            "einsum(): expected all operands to have the same dtype, got "
            f"{sorted(map(str, dtypes))}"
        )
    return _einsum_node(len(operands)).apply(*operands, terms=tuple(terms), out=out)


# ------------------------------------------------------------------- norms
class NormBackward1(Op):
    """sum(|x| ** p) ** (1 / p) over dims, for a finite p other than 0."""

    __slots__ = ("_ord", "_dims", "_keepdim", "_ndim")
    op_name = "norm"
    saved_inputs = (0,)
    saves_output = True

    def forward(self, a: Any, ord: float, dims: Any, keepdim: bool) -> Any:  # noqa: A002
        self._ord, self._dims, self._keepdim, self._ndim = ord, dims, keepdim, a.ndim
        xp = xp_of(a)
        mag = xp.abs(a)
        if ord == 2:
            out = xp.sqrt((mag * mag).sum(axis=dims, keepdims=keepdim))
        elif ord == 1:
            out = mag.sum(axis=dims, keepdims=keepdim)
        else:
            with quiet():
                out = (mag**ord).sum(axis=dims, keepdims=keepdim) ** (1 / ord)
        return as_array(out.astype(mag.dtype, copy=False))

    def backward(self, g: Any) -> Any:
        x, out = self.saved(g)
        if not self._keepdim:
            dims = self._dims if self._dims is not None else tuple(range(self._ndim))
            g, out = unsqueeze_dims(g, dims), unsqueeze_dims(out, dims)
        p = self._ord
        sgn = xp_of(data_of(x)).sign(data_of(x))
        if p == 1:
            return mul_const(g, sgn)
        zero = data_of(out) == 0
        with quiet():  # a zero norm has a zero gradient, as in PyTorch
            if p == 2:
                return where(zero, 0.0, g / out) * x
            scale = where(zero, 0.0, g / out ** (p - 1))
            slope = mul_const(abs_(x) ** (p - 1), sgn)
            if p < 1:  # |x| ** (p - 1) is inf at 0, where the slope is taken as 0
                slope = where(data_of(x) == 0, 0.0, slope)
            return scale * slope


class LinalgSvdvalsBackward0(Op):
    """The singular values of each matrix; the gradient is U diag(g) Vh (distinct values).

    A differentiable backward (create_graph) decomposes A again on the graph, so that the
    derivatives of U and Vh enter the second derivative.
    """

    __slots__ = ("_u", "_vh")
    saved_slots = ("_u", "_vh")
    saved_inputs = (0,)
    op_name = "linalg_svdvals"

    def forward(self, a: Any) -> Any:
        u, s, vh = xp_of(a).linalg.svd(a, full_matrices=False)
        self._u, self._vh = u, vh
        return as_array(s.astype(a.dtype, copy=False))

    def backward(self, g: Any) -> Any:
        if isinstance(g, Tensor):
            from .linalg_solvers import svd  # noqa: PLC0415 - built on this module

            (a,) = self.saved(g)
            u, _, vh = svd(a, full_matrices=False)
            return u @ (g[..., :, None] * vh)
        self.check_released()
        return self._u @ (g[..., :, None] * self._vh)


def svdvals(A: Tensor) -> Tensor:
    """The singular values of each matrix in `A` (..., m, n), in descending order."""
    _need_tensor("linalg.svdvals", A=A)
    if A.ndim < 2:
        raise RuntimeError("linalg.svdvals: The input tensor A must have at least 2 dimensions.")
    if A.dtype.kind != "f":
        raise RuntimeError(
            "linalg.svdvals: Expected a floating point tensor as input. Got "
            f"{torch_type_name(A.dtype)}"
        )
    return LinalgSvdvalsBackward0.apply(A)


def _zero_with_grad(x: Tensor) -> Tensor:
    """Zeros shaped like `x` that pass `x` a zero gradient (even where `x` is inf or nan)."""
    return where(xp_of(x._data).zeros(x.shape, bool), x, 0.0)


def abs_(x: Any) -> Any:
    """|x| of an array or a Tensor."""
    return x.abs() if isinstance(x, Tensor) else xp_of(x).abs(x)


def _check_float(name: str, input: Tensor, dtype: Any) -> Tensor:
    if dtype is not None:
        input = input.to(dtype=dtype)
    if input.dtype.kind not in "fc":
        raise RuntimeError(
            f"{name}: Expected a floating point or complex tensor as input. Got "
            f"{torch_type_name(input.dtype)}"
        )
    return input


def vector_norm(
    x: Tensor,
    ord: Any = 2,
    dim: Any = None,
    keepdim: bool = False,
    *,
    dtype: Any = None,  # noqa: A002
) -> Tensor:
    """The vector ord-norm over `dim` (all elements when None): inf, -inf, 0 or any real p."""
    _need_tensor("linalg.vector_norm", x=x)
    x = _check_float("linalg.vector_norm", x, dtype)
    if isinstance(ord, bool) or not isinstance(ord, (int, float)):
        raise RuntimeError(f"linalg.vector_norm: ord must be a number, got {ord!r}")
    dims = normalize_dims(dim, x.ndim)
    if dims == ():
        dims = None
    if x.numel() == 0 and (ord < 0 or ord == math.inf) and dims is None:
        raise RuntimeError(
            f"linalg.vector_norm cannot compute the {ord} norm on an empty tensor because the "
            "operation does not have an identity"
        )
    if ord == math.inf:
        return amax(x.abs(), dims if dims is not None else (), keepdim)
    if ord == -math.inf:
        return amin(x.abs(), dims if dims is not None else (), keepdim)
    if ord == 0:
        # A count of nonzeros: PyTorch still records it, with a zero gradient
        nonzero = (x != 0).to(dtype=x.dtype)
        return sum_(nonzero + _zero_with_grad(x), dims, keepdim)
    return NormBackward1.apply(x, ord=float(ord), dims=dims, keepdim=keepdim)


def _matrix_dims(name: str, A: Tensor, dim: Any) -> tuple[int, int]:
    if A.ndim < 2:
        raise RuntimeError(f"{name}: The input tensor A must have at least 2 dimensions.")
    dims = normalize_dims(dim, A.ndim)
    if dims is None or len(dims) != 2:
        raise RuntimeError(f"{name}: dim must be a 2-tuple. Got {dim}")
    return dims


def matrix_norm(
    A: Tensor,
    ord: Any = "fro",
    dim: Any = (-2, -1),
    keepdim: bool = False,
    *,  # noqa: A002
    dtype: Any = None,
) -> Tensor:
    """The matrix norm over the two dims `dim`: 'fro', 'nuc', 1, -1, 2, -2, inf or -inf."""
    _need_tensor("linalg.matrix_norm", A=A)
    A = _check_float("linalg.matrix_norm", A, dtype)
    rows, cols = _matrix_dims("linalg.matrix_norm", A, dim)
    if ord == "fro":
        return NormBackward1.apply(A, ord=2.0, dims=(rows, cols), keepdim=keepdim)
    if ord in (1, -1, math.inf, -math.inf):
        # 1: the largest column sum of |A| (rows summed first); inf: the largest row sum.
        summed, other = (rows, cols) if abs(ord) == 1 else (cols, rows)
        sums = A.abs().sum(summed, keepdim=True)
        out = (amax if ord > 0 else amin)(sums, other, True)
        if not keepdim:
            out = out.squeeze(max(rows, cols)).squeeze(min(rows, cols))
        return out
    if ord in ("nuc", 2, -2):
        # the singular values of the matrices moved to the last two dims
        order = [d for d in range(A.ndim) if d not in (rows, cols)] + [rows, cols]
        values = svdvals(A.permute(*order))
        if ord == "nuc":
            out = values.sum(-1)
        else:
            out = (amax if ord == 2 else amin)(values, -1)
        if keepdim:
            for d in sorted((rows, cols)):
                out = out.unsqueeze(d)
        return out
    raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")


def linalg_norm(
    A: Tensor,
    ord: Any = None,
    dim: Any = None,
    keepdim: bool = False,
    *,  # noqa: A002
    dtype: Any = None,
) -> Tensor:
    """torch.linalg.norm: a vector norm, or a matrix norm for a 2-D `dim` or a string `ord`."""
    _need_tensor("linalg.norm", A=A)
    if dim is not None:
        dims = (dim,) if isinstance(dim, int) else tuple(dim)
        if len(dims) == 2:
            return matrix_norm(A, "fro" if ord is None else ord, dims, keepdim, dtype=dtype)
        return vector_norm(A, 2 if ord is None else ord, dims, keepdim, dtype=dtype)
    if ord is None:
        return vector_norm(A, 2, None, keepdim, dtype=dtype)
    if A.ndim == 2 or (A.ndim == 1 and isinstance(ord, str)):  # a 1-D 'fro': matrix_norm's error
        return matrix_norm(A, ord, (-2, -1), keepdim, dtype=dtype)
    if A.ndim == 1:
        return vector_norm(A, ord, None, keepdim, dtype=dtype)
    raise RuntimeError(
        f"linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. Got "
        f"{A.ndim}D."
    )


def norm(
    input: Tensor, p: Any = "fro", dim: Any = None, keepdim: bool = False, dtype: Any = None
) -> Tensor:
    """torch.norm: the p-norm over `dim` ('fro' is the 2-norm of the elements)."""
    _need_tensor("norm", input=input)
    if p == "fro" or p is None:
        if dim is None or isinstance(dim, int) or len(tuple(dim)) <= 2:
            return vector_norm(input, 2, dim, keepdim, dtype=dtype)
    if isinstance(p, str):
        return matrix_norm(input, p, (-2, -1) if dim is None else dim, keepdim, dtype=dtype)
    return vector_norm(input, p, dim, keepdim, dtype=dtype)


FUNCTIONS = {
    "bmm": bmm,
    "baddbmm": baddbmm,
    "addmm": addmm,
    "mv": mv,
    "outer": outer,
    "ger": outer,
    "einsum": einsum,
    "norm": norm,
}
