"""Element types: `aa.float32` and friends, which answer PyTorch's questions about themselves
(`is_floating_point`, `is_complex`, `is_signed`, `itemsize`) and which NumPy and CuPy accept
wherever they take a dtype (through the `dtype` attribute, NumPy's protocol for dtype-likes).

A dtype compares equal to, and hashes like, its NumPy dtype and NumPy scalar type, so code that
holds either keeps working: `t.dtype == np.float32`, `t.dtype in {np.dtype("float64"), ...}`,
`np.zeros(3, aa.float16)`. Other attributes (`kind`, `name`, `char`, ...) are NumPy's.

The default floating dtype (`set_default_dtype`) is process-wide, as PyTorch's is: one setting
for every thread and task, because tensors made on a loader thread must agree with the rest.
"""

from __future__ import annotations

import threading
from typing import Any, TypeAlias

import ml_dtypes
import numpy as np

# PyTorch's names first: the first name of a NumPy type is the one `repr` shows.
_NAMES = {
    "float16": ("float16", "half"),
    "float32": ("float32", "float"),
    "float64": ("float64", "double"),
    "int8": ("int8",),
    "int16": ("int16", "short"),
    "int32": ("int32", "int"),
    "int64": ("int64", "long"),
    "uint8": ("uint8",),
    "bool": ("bool",),
    "complex64": ("complex64", "cfloat"),
    "complex128": ("complex128", "cdouble"),
}


BFLOAT16 = np.dtype(ml_dtypes.bfloat16)


def _kind(np_dtype: np.dtype) -> str:
    # ml_dtypes' bfloat16 is a NumPy user type (kind 'V'); it is a floating type to PyTorch.
    return "f" if np_dtype == BFLOAT16 else np_dtype.kind


# The class below, by a name its own body can use: there `dtype` is its NumPy-dtype property.
_Dtype: TypeAlias = "dtype"


class dtype:  # noqa: N801 - PyTorch's name
    """An element type: a NumPy dtype with PyTorch's attributes."""

    __slots__ = ("_np", "_name", "is_floating_point", "is_complex", "is_signed", "itemsize")

    def __init__(self, np_dtype: np.dtype, name: str) -> None:
        self._np = np_dtype
        self._name = name
        kind = _kind(np_dtype)
        self.is_floating_point = kind == "f"
        self.is_complex = kind == "c"
        self.is_signed = kind in "ifc"
        self.itemsize = np_dtype.itemsize

    @property
    def dtype(self) -> np.dtype:
        """The NumPy dtype (what NumPy and CuPy read when given this object as a dtype)."""
        return self._np

    @property
    def __numpy_dtype__(self) -> np.dtype:
        """The NumPy dtype, by the protocol NumPy 2.4 asks first for dtype-likes.

        Without it NumPy's question falls to `__getattr__` and fails, raising and catching an
        AttributeError in every conversion and comparison: `np.zeros(3, aa.float32)` took 4 us
        instead of ~1, and comparing an array's dtype with one of ours 8 us instead of 0.3.
        """
        return self._np

    @property
    def kind(self) -> str:
        """NumPy's kind character: 'b', 'i', 'u', 'f' or 'c' ('f' for bfloat16 too)."""
        return _kind(self._np)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._np, name)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, dtype):
            return self._np == other._np
        if isinstance(other, np.dtype) or (
            isinstance(other, type) and issubclass(other, np.generic)
        ):
            return self._np == np.dtype(other)
        return NotImplemented

    def __ne__(self, other: object) -> bool:
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal

    def __hash__(self) -> int:
        return hash(self._np)

    def __repr__(self) -> str:
        return f"aa.{self._name}"

    def __str__(self) -> str:
        # The NumPy name, so messages and names built with f-strings read as before
        # ("float32"); PyTorch's str() is its repr ("torch.float32").
        return self._np.name

    def __reduce__(self) -> tuple:
        return (_by_name, (self._name,))

    def __copy__(self) -> _Dtype:
        return self

    def __deepcopy__(self, memo: dict) -> _Dtype:
        return self

    def to_real(self) -> _Dtype:
        """The real counterpart of a complex dtype (itself otherwise)."""
        if self._np.kind != "c":
            return self
        return of(np.dtype(f"float{self._np.itemsize * 4}"))

    def to_complex(self) -> _Dtype:
        """The complex counterpart of a floating dtype (itself when already complex)."""
        if self._np.kind == "c":
            return self
        return of(np.dtype(f"complex{max(self._np.itemsize, 4) * 16}"))


_BY_NUMPY: dict[np.dtype, dtype] = {}
_BY_NAME: dict[str, dtype] = {}
for _np_name, _aliases in _NAMES.items():
    _canonical = dtype(np.dtype(_np_name), "bool" if _np_name == "bool" else _aliases[0])
    _BY_NUMPY[_canonical._np] = _canonical
    for _alias in _aliases:
        _BY_NAME[_alias] = _canonical
bfloat16 = _BY_NUMPY[BFLOAT16] = _BY_NAME["bfloat16"] = dtype(BFLOAT16, "bfloat16")
_lock = threading.Lock()


def _by_name(name: str) -> dtype:
    return _BY_NAME[name]


def of(np_dtype: Any) -> dtype:
    """The dtype object of a NumPy dtype (made once for types without a PyTorch name)."""
    found = _BY_NUMPY.get(np_dtype)
    if found is not None:
        return found
    key = np.dtype(np_dtype)
    with _lock:
        found = _BY_NUMPY.get(key)
        if found is None:
            found = _BY_NUMPY[key] = dtype(key, key.name)
    return found


float16, float32, float64 = _BY_NAME["float16"], _BY_NAME["float32"], _BY_NAME["float64"]
int8, int16 = _BY_NAME["int8"], _BY_NAME["int16"]
int32, int64 = _BY_NAME["int32"], _BY_NAME["int64"]
uint8, bool_ = _BY_NAME["uint8"], _BY_NAME["bool"]
complex64, complex128 = _BY_NAME["complex64"], _BY_NAME["complex128"]


class _DefaultDtype:
    """The process-wide default floating dtype (see the module docstring for why not per task)."""

    __slots__ = ("float", "complex")

    def __init__(self) -> None:
        self.float = float32._np
        self.complex = complex64._np


_default = _DefaultDtype()


def default_float() -> np.dtype:
    """The NumPy dtype Python floats and float factories use (float32 unless changed)."""
    return _default.float


def default_complex() -> np.dtype:
    """The NumPy dtype Python complex numbers use: complex128 with a float64 default."""
    return _default.complex


def get_default_dtype() -> dtype:
    """The default floating dtype (float32 unless `set_default_dtype` changed it)."""
    return of(_default.float)


def set_default_dtype(d: Any) -> None:
    """Set the default floating dtype for the whole process, as PyTorch's does."""
    np_dtype = np.dtype(d) if isinstance(d, (dtype, np.dtype)) else None
    if np_dtype is None or np_dtype.kind != "f":
        raise TypeError("only floating-point types are supported as the default type")
    _default.float = np_dtype
    _default.complex = np.dtype("complex128") if np_dtype.itemsize == 8 else complex64._np
