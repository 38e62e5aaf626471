"""PyTorch's type promotion for raw arrays and Python scalars (NumPy's differs in a few places).

PyTorch ranks operands: tensors with dimensions, then zero-dim tensors, then Python scalars. A lower
rank only changes the result when its category (bool < int < float < complex) is higher, and a
Python float then means the default float32, not float64. Within one rank a higher category wins
outright (int64 with float16 gives float16, where NumPy gives float64).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..dtypes import default_complex, default_float

FLOAT32 = np.dtype("float32")
INT64 = np.dtype("int64")
COMPLEX64 = np.dtype("complex64")
_CATEGORY = {"b": 0, "u": 1, "i": 1, "f": 2, "V": 2, "c": 3}  # V: ml_dtypes' bfloat16
_SCALAR_CATEGORY = {bool: 0, int: 1, float: 2, complex: 3}


def _group_dtype(dtypes: list) -> np.dtype:
    top = max(_CATEGORY[d.kind] for d in dtypes)
    return np.result_type(*[d for d in dtypes if _CATEGORY[d.kind] == top])


def result_type(*operands: Any) -> np.dtype:
    """The dtype PyTorch gives an op on these arrays and Python scalars."""
    dims, zero_dims, scalars = [], [], []
    for x in operands:
        dtype = getattr(x, "dtype", None)
        if dtype is None:
            scalars.append(_SCALAR_CATEGORY[type(x)])
        elif x.ndim:
            dims.append(dtype)
        else:
            zero_dims.append(dtype)
    result = None
    for group in (dims, zero_dims):
        if not group:
            continue
        dtype = _group_dtype(group)
        if result is None or _CATEGORY[dtype.kind] > _CATEGORY[result.kind]:
            result = dtype
    if scalars:
        top = max(scalars)
        if result is None:
            result = (np.dtype(bool), INT64, default_float(), default_complex())[top]
        elif top > _CATEGORY[result.kind]:
            if top == 1:
                result = INT64
            elif top == 2:
                result = default_float()
            else:
                result = np.dtype("complex128") if result == np.float64 else default_complex()
    if result is None:
        raise TypeError("result_type() needs at least one array or Python scalar")
    return result


def promote(a: Any, b: Any) -> tuple[Any, Any]:
    """`a` and `b` cast so that NumPy computes in PyTorch's result dtype (scalars stay scalars)."""
    da = getattr(a, "dtype", None)
    db = getattr(b, "dtype", None)
    if da is not None and db is not None:
        if da == db:
            return a, b
    elif da is not None:
        if da.kind in "fc" and type(b) is not complex:
            return a, b
    elif db is not None and db.kind in "fc" and type(a) is not complex:
        return a, b
    dtype = result_type(a, b)
    if da is not None and da != dtype:
        a = a.astype(dtype)
    if db is not None and db != dtype:
        b = b.astype(dtype)
    return _wrapped(a, dtype), _wrapped(b, dtype)


def _wrapped(x: Any, dtype: np.dtype) -> Any:
    """A Python int outside an integer dtype's range wrapped into it, as PyTorch's casts do
    (`uint8 tensor - 2`); NumPy would raise OverflowError. Other operands are returned as is."""
    if type(x) is int and dtype.kind in "iu":
        info = np.iinfo(dtype)
        if not info.min <= x <= info.max:
            return np.asarray(x).astype(dtype)
    return x


def as_float(a: Any) -> Any:
    """`a`, or `a` in the default float dtype when it holds integers or bools (exp, log, ...)."""
    return a.astype(default_float()) if a.dtype.kind in "biu" else a


def scalar(x: Any) -> Any:
    """A NumPy scalar as its Python value (NumPy scalars would upcast float32 arrays)."""
    return x.item() if isinstance(x, np.generic) else x
