"""`assert_close` and its deprecated predecessor `assert_allclose`, with PyTorch's rules.

Comparing happens in two steps, as PyTorch's does: first the structure is walked (sequences item
by item, mappings key by key) and every structural mismatch is reported before any value is
looked at; then each pair of leaves is compared by its kind (None, bools, numbers, tensors).
"""

from __future__ import annotations

import cmath
import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NoReturn

import numpy as np

from ..core.tensor import Tensor
from ..creation import as_tensor
from ..dtypes import bfloat16

__all__ = ["assert_allclose", "assert_close"]

# Default (rtol, atol) per element type; every other type compares for equality.
_PRECISIONS: dict[np.dtype, tuple[float, float]] = {
    np.dtype(np.float16): (1e-3, 1e-5),
    np.dtype(bfloat16): (1.6e-2, 1e-5),
    np.dtype(np.float32): (1.3e-6, 1e-5),
    np.dtype(np.float64): (1e-7, 1e-7),
    np.dtype(np.complex64): (1.3e-6, 1e-5),
    np.dtype(np.complex128): (1e-7, 1e-7),
}
# Python numbers take the tolerances of the element type they become in a tensor.
_NUMBER_DTYPES = {
    int: np.dtype(np.int64),
    float: np.dtype(np.float64),
    complex: np.dtype(np.complex128),
}

Path = tuple[Any, ...]


class _Failure(Exception):
    """A failed comparison: the exception type to raise, PyTorch's text and where it happened."""

    def __init__(self, kind: type[Exception], text: str, path: Path = ()) -> None:
        super().__init__(text)
        self.kind, self.text, self.path = kind, text, path


def assert_close(
    actual: Any,
    expected: Any,
    *,
    allow_subclasses: bool = True,
    rtol: float | None = None,
    atol: float | None = None,
    equal_nan: bool = False,
    check_device: bool = True,
    check_dtype: bool = True,
    check_layout: bool = True,
    check_stride: bool = False,
    msg: str | Callable[[str], str] | None = None,
) -> None:
    """Assert that `actual` and `expected` are close, as `torch.testing.assert_close` does.

    Tensors compare with tensors (shape, then device, dtype and optionally strides, then values
    within `atol + rtol * |expected|`), numbers with numbers, bools and None with their own kind,
    and sequences and mappings item by item. Without `rtol`/`atol` each dtype's defaults apply
    (float32: 1.3e-6 / 1e-5, float64: 1e-7 / 1e-7, integers and bools: exact). `msg` replaces the
    message, or, as a callable, receives it and returns the one to raise.
    """
    __tracebackhide__ = True
    del check_layout  # every tensor here is strided, so layouts always agree
    options = _Options(allow_subclasses, rtol, atol, equal_nan, check_device, check_dtype)
    try:
        if (rtol is None) != (atol is None):
            missing = "rtol" if rtol is None else "atol"
            raise _Failure(
                ValueError,
                f"Both 'rtol' and 'atol' must be either specified or omitted, but got no {missing}.",
            )
        for path, a, e in _leaf_pairs(actual, expected):
            _compare_leaves(a, e, options, check_stride, path)
    except _Failure as failure:
        raise _error(failure, msg) from None


def assert_allclose(
    actual: Any,
    expected: Any,
    rtol: float | None = None,
    atol: float | None = None,
    equal_nan: bool = True,
    msg: str = "",
) -> None:
    """Deprecated form of `assert_close`: `expected` may be any array-like, dtypes may differ."""
    __tracebackhide__ = True
    warnings.warn(
        "`autograd_async.testing.assert_allclose()` is deprecated, as is PyTorch's. Use "
        "`autograd_async.testing.assert_close()` instead.",
        FutureWarning,
        stacklevel=2,
    )
    if not isinstance(actual, Tensor):
        actual = as_tensor(actual)
    if not isinstance(expected, Tensor):
        expected = as_tensor(expected, dtype=actual.dtype, device=actual.device)
    if rtol is None and atol is None:
        rtol, atol = _tolerances(_array_dtype(actual), _array_dtype(expected))
    assert_close(
        actual,
        expected,
        rtol=rtol,
        atol=atol,
        equal_nan=equal_nan,
        check_device=True,
        check_dtype=False,
        check_stride=False,
        msg=msg or None,
    )


@dataclass(frozen=True, slots=True)
class _Options:
    allow_subclasses: bool
    rtol: float | None
    atol: float | None
    equal_nan: bool
    check_device: bool
    check_dtype: bool


def _error(failure: _Failure, msg: str | Callable[[str], str] | None) -> Exception:
    if isinstance(msg, str):
        return failure.kind(msg)
    text = failure.text
    if failure.path:
        text += "\n\nThe failure occurred for item " + "".join(str([k]) for k in failure.path)
    return failure.kind(msg(text) if msg is not None else text)


def _is_sequence(value: Any) -> bool:
    return isinstance(value, Sequence) and not isinstance(value, str)


def _leaf_pairs(actual: Any, expected: Any) -> list[tuple[Path, Any, Any]]:
    """Walk both structures together (iteratively, in order) and return the pairs of leaves."""
    leaves: list[tuple[Path, Any, Any]] = []
    pending: list[tuple[Path, Any, Any]] = [((), actual, expected)]
    while pending:
        path, a, e = pending.pop()
        if _is_sequence(a) and _is_sequence(e):
            if len(a) != len(e):
                raise _Failure(
                    AssertionError,
                    f"The length of the sequences mismatch: {len(a)} != {len(e)}",
                    path,
                )
            pending.extend((path + (i,), a[i], e[i]) for i in reversed(range(len(a))))
        elif isinstance(a, Mapping) and isinstance(e, Mapping):
            keys = list(a.keys())
            if set(keys) != set(e.keys()):
                missing = [k for k in e if k not in a]
                extra = [k for k in keys if k not in e]
                raise _Failure(
                    AssertionError,
                    "The keys of the mappings do not match:\n"
                    f"Missing keys in the actual mapping: {sorted(missing, key=str)}\n"
                    f"Additional keys in the actual mapping: {sorted(extra, key=str)}",
                    path,
                )
            try:
                keys = sorted(keys)
            except TypeError:
                pass
            pending.extend((path + (k,), a[k], e[k]) for k in reversed(keys))
        else:
            leaves.append((path, a, e))
    return leaves


def _compare_leaves(a: Any, e: Any, options: _Options, check_stride: bool, path: Path) -> None:
    if a is None or e is None:
        if not (a is None and e is None):
            raise _Failure(AssertionError, f"None mismatch: {a} is not {e}", path)
        return
    bools = (bool, np.bool_)
    if isinstance(a, bools) and isinstance(e, bools):
        if bool(a) != bool(e):
            raise _Failure(AssertionError, f"Booleans mismatch: {bool(a)} is not {bool(e)}", path)
        return
    numbers = (int, float, complex, np.number)
    if isinstance(a, numbers) and isinstance(e, numbers):
        _compare_numbers(_python_number(a), _python_number(e), options, path)
        return
    if _tensor_like_pair(a, e, options.allow_subclasses):
        _compare_tensors(_as_tensor(a), _as_tensor(e), options, check_stride, path)
        return
    raise _Failure(
        TypeError,
        f"No comparison pair was able to handle inputs of type {type(a)} and {type(e)}.",
        path,
    )


def _python_number(value: Any) -> int | float | complex:
    return value.item() if isinstance(value, np.number) else value


def _tensor_like_pair(a: Any, e: Any, allow_subclasses: bool) -> bool:
    both = isinstance(a, Tensor) and isinstance(e, Tensor)
    both = both or (isinstance(a, np.ndarray) and isinstance(e, np.ndarray))
    if not both or not (isinstance(a, type(e)) or isinstance(e, type(a))):
        return False
    return allow_subclasses or type(a) is type(e)


def _as_tensor(value: Any) -> Tensor:
    if isinstance(value, Tensor):
        return value
    return as_tensor(value)


def _array_dtype(t: Tensor) -> np.dtype:
    return np.dtype(t._data.dtype)


def _tolerances(*dtypes: np.dtype) -> tuple[float, float]:
    pairs = [_PRECISIONS.get(d, (0.0, 0.0)) for d in dtypes]
    return max(p[0] for p in pairs), max(p[1] for p in pairs)


def _chosen_tolerances(options: _Options, *dtypes: np.dtype) -> tuple[float, float]:
    if options.rtol is not None and options.atol is not None:
        return options.rtol, options.atol
    return _tolerances(*dtypes)


def _compare_numbers(
    a: int | float | complex, e: int | float | complex, options: _Options, path: Path
) -> None:
    if options.check_dtype and type(a) is not type(e):
        raise _Failure(AssertionError, f"The (d)types do not match: {type(a)} != {type(e)}.", path)
    rtol, atol = _chosen_tolerances(
        options,
        _NUMBER_DTYPES.get(type(a), _NUMBER_DTYPES[float]),
        _NUMBER_DTYPES.get(type(e), _NUMBER_DTYPES[float]),
    )
    if not _numbers_close(a, e, rtol, atol, options.equal_nan):
        raise _Failure(AssertionError, _scalar_message(a, e, rtol, atol), path)


def _numbers_close(
    a: int | float | complex, e: int | float | complex, rtol: float, atol: float, equal_nan: bool
) -> bool:
    if a == e:
        return True
    if equal_nan and cmath.isnan(a) and cmath.isnan(e):
        return True
    difference = abs(a - e)
    return cmath.isfinite(difference) and difference <= atol + rtol * abs(e)


def _scalar_message(
    a: int | float | complex, e: int | float | complex, rtol: float, atol: float
) -> str:
    difference = abs(a - e)
    relative = math.inf if e == 0 else difference / abs(e)
    return _mismatch_message(
        "Scalars",
        f"Expected {e} but got {a}.",
        ("Absolute difference", difference, None, atol),
        ("Relative difference", relative, None, rtol),
        equality=rtol == 0 and atol == 0,
    )


def _mismatch_message(
    what: str,
    extra: str,
    absolute: tuple[str, Any, tuple[int, ...] | None, float],
    relative: tuple[str, Any, tuple[int, ...] | None, float],
    *,
    equality: bool,
) -> str:
    lines = [f"{what} are not {'equal' if equality else 'close'}!", "", extra]
    for label, value, index, tolerance in (absolute, relative):
        line = f"{label}: {value}" if index is None else f"{label}: {value} at index {index}"
        if not equality:
            line += f" (up to {tolerance} allowed)"
        lines.append(line)
    return "\n".join(lines)


def _attribute_mismatch(name: str, a: Any, e: Any, path: Path) -> NoReturn:
    raise _Failure(
        AssertionError, f"The values for attribute '{name}' do not match: {a} != {e}.", path
    )


def _compare_tensors(
    a: Tensor, e: Tensor, options: _Options, check_stride: bool, path: Path
) -> None:
    if a.shape != e.shape:
        _attribute_mismatch("shape", a.shape, e.shape, path)
    if check_stride and a.stride() != e.stride():
        _attribute_mismatch("stride()", a.stride(), e.stride(), path)
    if options.check_device and a.device != e.device:
        _attribute_mismatch("device", a.device, e.device, path)
    if options.check_dtype and a.dtype != e.dtype:
        _attribute_mismatch("dtype", a.dtype, e.dtype, path)
    a_dtype, e_dtype = _array_dtype(a), _array_dtype(e)
    rtol, atol = _chosen_tolerances(options, a_dtype, e_dtype)
    actual, expected = _host_values(a), _host_values(e)
    if a_dtype != e_dtype:
        common = np.promote_types(a_dtype, e_dtype)
        actual, expected = actual.astype(common), expected.astype(common)
    if actual.ndim == 0:
        a_item, e_item = actual.item(), expected.item()
        if not _numbers_close(a_item, e_item, rtol, atol, options.equal_nan):
            raise _Failure(AssertionError, _scalar_message(a_item, e_item, rtol, atol), path)
        return
    matches = _elementwise_close(actual, expected, rtol, atol, options.equal_nan)
    if not matches.all():
        raise _Failure(AssertionError, _tensor_message(actual, expected, matches, rtol, atol), path)


def _host_values(t: Tensor) -> np.ndarray:
    return np.asarray(t.detach().cpu().numpy())


def _elementwise_close(
    a: np.ndarray, e: np.ndarray, rtol: float, atol: float, equal_nan: bool
) -> np.ndarray:
    with np.errstate(invalid="ignore", over="ignore"):
        matches = np.asarray(a == e)
        inexact = a.dtype.kind in "fcV" or (rtol, atol) != (0, 0)
        if not inexact:
            return matches
        if equal_nan and a.dtype.kind in "fcV":
            matches = matches | (np.isnan(a) & np.isnan(e))
        wide_a, wide_e = _for_arithmetic(a), _for_arithmetic(e)
        difference = np.abs(wide_a - wide_e)
        allowed = atol + np.abs(rtol * wide_e)
        return matches | (np.isfinite(difference) & (difference <= allowed))


def _for_arithmetic(values: np.ndarray) -> np.ndarray:
    """Integers and bools widened so differences neither wrap nor refuse to subtract."""
    if values.dtype.kind in "biu":
        return values.astype(np.int64)
    return values


def _tensor_message(
    a: np.ndarray, e: np.ndarray, matches: np.ndarray, rtol: float, atol: float
) -> str:
    count = matches.size
    mismatched = count - int(matches.sum())
    extra = f"Mismatched elements: {mismatched} / {count} ({mismatched / count:.1%})"
    flat_a, flat_e = _for_arithmetic(a.ravel()), _for_arithmetic(e.ravel())
    flat_matches = matches.ravel()
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        difference = np.abs(flat_a - flat_e)
        difference[flat_matches] = 0
        if difference.dtype.kind in "iu":
            # PyTorch divides integers into its default float type.
            relative = np.true_divide(difference, np.abs(flat_e), dtype=np.float32)
        else:
            relative = difference / np.abs(flat_e)
        relative[flat_matches] = 0
    worst_abs, worst_rel = int(np.argmax(difference)), int(np.argmax(relative))
    return _mismatch_message(
        "Tensor-likes",
        extra,
        ("Greatest absolute difference", difference[worst_abs].item(), _index(a, worst_abs), atol),
        ("Greatest relative difference", relative[worst_rel].item(), _index(a, worst_rel), rtol),
        equality=rtol == 0 and atol == 0,
    )


def _index(values: np.ndarray, flat: int) -> tuple[int, ...]:
    return tuple(int(i) for i in np.unravel_index(flat, values.shape))
