"""Building tensors out of others: the stacks (vstack hstack dstack column_stack row_stack), the
splits (tensor_split hsplit vsplit dsplit), atleast_1d/2d/3d, meshgrid, cartesian_prod,
combinations, block_diag, broadcast_tensors, broadcast_shapes, tile, kron, rot90, diag_embed,
diagflat, tril_indices, triu_indices.

All are compositions of differentiable ops (reshape, cat, stack, slicing, expand, ...), so their
gradients come from those.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from ..core.op import require_tensor
from ..core.tensor import Tensor
from ..creation import empty, eye
from ..devices import device as as_device
from .reduction import normalize_dim
from .sampling import pad
from .shape import cat, stack


def _tensors(name: str, tensors: Any) -> list[Tensor]:
    if isinstance(tensors, Tensor):
        raise TypeError(
            f"{name}(): argument 'tensors' (position 1) must be tuple of Tensors, not Tensor"
        )
    tensors = list(tensors)
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(
                f"{name}(): argument 'tensors' (position 1) must be tuple of "
                f"Tensors, not {type(t).__name__} at index {i}"
            )
    return tensors


def _unpack(tensors: tuple) -> Any:
    return tensors[0] if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)) else tensors


def atleast_1d(*tensors: Any) -> Any:
    """Each tensor with at least one dim (a 0-d one as shape (1,))."""
    out = [t.reshape(1) if t.ndim == 0 else t for t in _unpack(tensors)]
    return out[0] if len(tensors) == 1 and isinstance(tensors[0], Tensor) else tuple(out)


def atleast_2d(*tensors: Any) -> Any:
    """Each tensor with at least two dims (new leading dims of size 1)."""
    out = [
        t.reshape((1,) * (2 - t.ndim) + tuple(t.shape)) if t.ndim < 2 else t
        for t in _unpack(tensors)
    ]
    return out[0] if len(tensors) == 1 and isinstance(tensors[0], Tensor) else tuple(out)


def atleast_3d(*tensors: Any) -> Any:
    """Each tensor with at least three dims: (1, 1, 1), (1, n, 1), (m, n, 1)."""
    out = []
    for t in _unpack(tensors):
        if t.ndim == 0:
            t = t.reshape(1, 1, 1)
        elif t.ndim == 1:
            t = t.reshape(1, -1, 1)
        elif t.ndim == 2:
            t = t.unsqueeze(-1)
        out.append(t)
    return out[0] if len(tensors) == 1 and isinstance(tensors[0], Tensor) else tuple(out)


def vstack(tensors: Any) -> Tensor:
    """Concatenate along dim 0, 1-D tensors as rows."""
    return cat(atleast_2d(_tensors("vstack", tensors)), 0)


def hstack(tensors: Any) -> Tensor:
    """Concatenate along dim 1 (dim 0 for 1-D tensors)."""
    tensors = atleast_1d(_tensors("hstack", tensors))
    return cat(tensors, 0 if tensors[0].ndim == 1 else 1)


def dstack(tensors: Any) -> Tensor:
    """Concatenate along dim 2 after atleast_3d."""
    return cat(atleast_3d(_tensors("dstack", tensors)), 2)


def column_stack(tensors: Any) -> Tensor:
    """Tensors (0-d, 1-D as columns, or 2-D) side by side as columns."""
    tensors = [t.reshape(-1, 1) if t.ndim <= 1 else t for t in _tensors("column_stack", tensors)]
    return cat(tensors, 1)


def tensor_split(input: Tensor, indices_or_sections: Any, dim: int = 0) -> tuple:
    """Views split along `dim` into n near-equal parts, or at the given indices."""
    require_tensor("tensor_split", input)
    dim = normalize_dim(dim, input.ndim)
    n = input.shape[dim]
    if isinstance(indices_or_sections, Tensor):
        indices_or_sections = indices_or_sections.tolist()
    if isinstance(indices_or_sections, int):
        sections = indices_or_sections
        if sections <= 0:
            raise RuntimeError(f"number of sections must be larger than 0, got {sections}")
        size, extra = divmod(n, sections)
        bounds = [0]
        for i in range(sections):
            bounds.append(bounds[-1] + size + (1 if i < extra else 0))
    else:
        bounds = (
            [0]
            + [min(max(int(i) if i >= 0 else n + int(i), 0), n) for i in indices_or_sections]
            + [n]
        )
    return tuple(
        input.narrow(dim, lo, max(hi - lo, 0)) if hi > lo else input.narrow(dim, min(lo, n), 0)
        for lo, hi in zip(bounds, bounds[1:])
    )


def _split_like_numpy(name: str, input: Tensor, sections: Any, dim: int, min_dim: int) -> tuple:
    if input.ndim < min_dim:
        raise RuntimeError(
            f"torch.{name} requires a tensor with at least {min_dim} dimension, but got a "
            f"tensor with {input.ndim} dimensions!"
        )
    if isinstance(sections, int) and input.shape[dim] % sections:
        raise RuntimeError(
            f"torch.{name} attempted to split along dimension {dim}, but the size of the "
            f"dimension {input.shape[dim]} is not divisible by the split_size {sections}!"
        )
    return tensor_split(input, sections, dim)


def hsplit(input: Tensor, indices_or_sections: Any) -> tuple:
    """Split along dim 1 (dim 0 for 1-D tensors)."""
    return _split_like_numpy("hsplit", input, indices_or_sections, 1 if input.ndim > 1 else 0, 1)


def vsplit(input: Tensor, indices_or_sections: Any) -> tuple:
    """Split along dim 0 of a tensor of 2 or more dims."""
    return _split_like_numpy("vsplit", input, indices_or_sections, 0, 2)


def dsplit(input: Tensor, indices_or_sections: Any) -> tuple:
    """Split along dim 2 of a tensor of 3 or more dims."""
    return _split_like_numpy("dsplit", input, indices_or_sections, 2, 3)


def broadcast_shapes(*shapes: Any) -> tuple:
    """The shape the given shapes broadcast to (PyTorch's error when they do not)."""
    for s in shapes:
        if not isinstance(s, int) and not (
            isinstance(s, tuple | list) and all(isinstance(d, int) for d in s)
        ):
            raise TypeError(
                f"broadcast_shapes(): expected shapes (ints or sequences of ints), got "
                f"{type(s).__name__}"
            )
    as_tuples = [(s,) if isinstance(s, int) else tuple(s) for s in shapes]
    try:
        return tuple(np.broadcast_shapes(*as_tuples))
    except ValueError:
        raise RuntimeError(
            f"Shape mismatch: objects cannot be broadcast to a single shape: {as_tuples}"
        ) from None


def broadcast_tensors(*tensors: Any) -> tuple:
    """The tensors expanded to their common broadcast shape (views)."""
    tensors = _unpack(tensors)
    shape = broadcast_shapes(*[t.shape for t in tensors])
    return tuple(t.expand(*shape) for t in tensors)


def meshgrid(*tensors: Any, indexing: str = "ij") -> tuple:
    """Coordinate grids of 1-D tensors ('ij': matrix indexing; 'xy': Cartesian)."""
    inputs = list(_unpack(tensors))
    if indexing not in ("ij", "xy"):
        raise RuntimeError(
            f'torch.meshgrid: indexing must be one of "xy" or "ij", but received: {indexing}'
        )
    swap = indexing == "xy" and len(inputs) >= 2
    if swap:
        inputs[0], inputs[1] = inputs[1], inputs[0]
    shape = tuple(t.numel() for t in inputs)
    grids = []
    for i, t in enumerate(inputs):
        view = [1] * len(inputs)
        view[i] = -1
        grids.append(t.reshape(*view).expand(*shape))
    if swap:  # the grids of (y, x) in matrix indexing are those of (x, y) in Cartesian
        grids[0], grids[1] = grids[1], grids[0]
    return tuple(grids)


def cartesian_prod(*tensors: Any) -> Tensor:
    """Every combination of one element from each 1-D tensor, as rows."""
    inputs = list(_unpack(tensors))
    for i, t in enumerate(inputs):
        require_tensor("cartesian_prod", t, "tensors", i + 1)
    if len(inputs) == 1:
        return inputs[0]
    return stack([g.reshape(-1) for g in meshgrid(*inputs, indexing="ij")], 1)


def combinations(input: Tensor, r: int = 2, with_replacement: bool = False) -> Tensor:
    """The length-r combinations of a 1-D tensor's elements, as rows."""
    require_tensor("combinations", input)
    n = input.shape[0]
    pick = itertools.combinations_with_replacement if with_replacement else (itertools.combinations)
    rows = list(pick(range(n), r))
    if not rows:
        return input[:0].reshape(0, r) if r else input[:0]
    xp_index = np.asarray(rows, dtype=np.int64).T
    return stack([input[list(column)] for column in xp_index], 1)


def block_diag(*tensors: Tensor) -> Tensor:
    """The tensors (0-, 1- or 2-D) on the diagonal of a block matrix, zeros elsewhere."""
    blocks = [t.reshape(1, -1) if t.ndim < 2 else t for t in tensors]
    if not blocks:
        return empty(1, 0)
    cols = sum(b.shape[1] for b in blocks)

    rows, left = [], 0
    dtype = np.result_type(*[b.dtype for b in blocks])
    for b in blocks:
        width = b.shape[1]
        rows.append(pad(b.to(dtype=dtype), (left, cols - left - width)))
        left += width
    return cat(rows, 0)


def tile(input: Tensor, dims: Any) -> Tensor:
    """The tensor repeated `dims` times along each dim (leading ones added as needed)."""
    dims = tuple(dims) if not isinstance(dims, int) else (dims,)
    if len(dims) < input.ndim:
        dims = (1,) * (input.ndim - len(dims)) + dims
    return input.repeat(*dims)


def kron(input: Tensor, other: Tensor) -> Tensor:
    """The Kronecker product: each element of input times the whole of other."""
    ndim = max(input.ndim, other.ndim)
    a = input.reshape((1,) * (ndim - input.ndim) + tuple(input.shape))
    b = other.reshape((1,) * (ndim - other.ndim) + tuple(other.shape))
    a_shape = [n for pair in zip(a.shape, [1] * ndim) for n in pair]
    b_shape = [n for pair in zip([1] * ndim, b.shape) for n in pair]
    product = a.reshape(*a_shape) * b.reshape(*b_shape)
    return product.reshape(*[m * n for m, n in zip(a.shape, b.shape)])


def rot90(input: Tensor, k: int = 1, dims: Any = (0, 1)) -> Tensor:
    """Rotate by 90 degrees k times in the plane of `dims`, from the first toward the second."""
    dims = tuple(dims)
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    if input.ndim < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {input.ndim}")
    d0, d1 = normalize_dim(dims[0], input.ndim), normalize_dim(dims[1], input.ndim)
    if d0 == d1:
        raise RuntimeError(
            f"expected rotation dims to be different, but got dim0 = {d0} and dim1 = {d1}"
        )
    k %= 4
    if k == 1:
        return input.flip(d1).transpose(d0, d1)
    if k == 2:
        return input.flip(d0, d1)
    if k == 3:
        return input.flip(d0).transpose(d0, d1)
    return input.clone()


def diag_embed(input: Tensor, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """Matrices (in dims dim1, dim2 of the result) with the last dim of input on a diagonal."""
    n = input.shape[-1] + abs(offset)
    ndim = input.ndim + 1
    d1, d2 = normalize_dim(dim1, ndim), normalize_dim(dim2, ndim)

    rows = eye(n, n, dtype=input.dtype, device=input.device)
    # element i of the last dim goes to (i, i + offset) (or (i - offset, i) for offset < 0)
    start_row, start_col = max(-offset, 0), max(offset, 0)
    place = rows[start_row : start_row + input.shape[-1]]  # (m, n): row index one-hot
    col_place = rows[start_col : start_col + input.shape[-1]]  # (m, n)
    matrices = (
        input.unsqueeze(-1).unsqueeze(-1) * place.unsqueeze(-1) * col_place.unsqueeze(-2)
    ).sum(-3)
    order = [d for d in range(ndim) if d not in (d1, d2)]
    result_dims = order + [d1, d2]
    inverse = [result_dims.index(d) for d in range(ndim)]
    return matrices.permute(*inverse)


def diagflat(input: Tensor, offset: int = 0) -> Tensor:
    """A matrix with the flattened input on diagonal `offset`."""
    return diag_embed(input.reshape(-1), offset)


def _triangle_indices(
    row: int, col: int, offset: int, lower: bool, dtype: Any, device: Any
) -> Tensor:
    i, j = np.indices((row, col)).reshape(2, -1)
    keep = (j - i <= offset) if lower else (j - i >= offset)
    out = np.stack([i[keep], j[keep]]).astype(np.dtype(dtype) if dtype is not None else np.int64)
    return Tensor._wrap(np.ascontiguousarray(out), as_device(device or "cpu"))


def tril_indices(
    row: int, col: int, offset: int = 0, *, dtype: Any = None, device: Any = None, **_: Any
) -> Tensor:
    """The (2, N) coordinates of the lower triangle (with diagonal `offset`) of a row x col
    matrix, row by row."""
    out = _triangle_indices(row, col, offset, True, dtype, None)
    return out if device is None else out.to(device)


def triu_indices(
    row: int, col: int, offset: int = 0, *, dtype: Any = None, device: Any = None, **_: Any
) -> Tensor:
    """The (2, N) coordinates of the upper triangle (from diagonal `offset`), row by row."""
    out = _triangle_indices(row, col, offset, False, dtype, None)
    return out if device is None else out.to(device)


FUNCTIONS: dict[str, Any] = {
    "atleast_1d": atleast_1d,
    "atleast_2d": atleast_2d,
    "atleast_3d": atleast_3d,
    "vstack": vstack,
    "row_stack": vstack,
    "hstack": hstack,
    "dstack": dstack,
    "column_stack": column_stack,
    "tensor_split": tensor_split,
    "hsplit": hsplit,
    "vsplit": vsplit,
    "dsplit": dsplit,
    "broadcast_tensors": broadcast_tensors,
    "broadcast_shapes": broadcast_shapes,
    "meshgrid": meshgrid,
    "cartesian_prod": cartesian_prod,
    "combinations": combinations,
    "block_diag": block_diag,
    "tile": tile,
    "kron": kron,
    "rot90": rot90,
    "diag_embed": diag_embed,
    "diagflat": diagflat,
    "tril_indices": tril_indices,
    "triu_indices": triu_indices,
}
# Functions of several tensors or of none, which PyTorch has no Tensor method for.
NOT_METHODS = (
    "vstack",
    "row_stack",
    "hstack",
    "dstack",
    "column_stack",
    "broadcast_tensors",
    "broadcast_shapes",
    "meshgrid",
    "cartesian_prod",
    "block_diag",
    "atleast_1d",
    "atleast_2d",
    "atleast_3d",
    "tril_indices",
    "triu_indices",
)
