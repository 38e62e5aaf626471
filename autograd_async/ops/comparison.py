"""Comparisons and logical tests: bool tensors that carry no gradient, and other non-graph ops."""

from __future__ import annotations

from numbers import Number
from typing import Any

import numpy as np

from ..batching import batchable
from ..core.op import broadcast_error, require_tensor, torch_type_name
from ..core.tensor import Tensor
from ..devices import DeviceError, launching
from .dual import as_array, xp_of
from .promotion import promote, result_type, scalar
from .reduction import normalize_dims


@batchable
def _no_grad_op(name: str, fn: Any, *inputs: Any) -> Tensor:
    """Apply `fn` to the inputs' arrays and wrap the result outside the graph."""
    dev = None
    arrays = []
    for x in inputs:
        if isinstance(x, Tensor):
            if dev is None:
                dev = x.device
            elif x.device is not dev:
                raise DeviceError(
                    f"{name}: expected all tensors to be on the same device, but found at least "
                    f"two devices, {dev} and {x.device}"
                )
            arrays.append(x._data)
        else:
            arrays.append(scalar(x))
    if dev is None:  # the public functions check their input first: not reached from them
        raise TypeError(f"{name}(): expected at least one Tensor argument")
    if dev._entry is None:
        return Tensor._wrap(as_array(fn(*arrays)), dev)
    with launching(dev, name):
        return Tensor._wrap(as_array(fn(*arrays)), dev)


def _compare(name: str, ufunc: str) -> Any:
    def compare(input: Tensor, other: Any) -> Tensor:
        return _no_grad_op(
            name, lambda a, b: getattr(xp_of(a), ufunc)(*promote(a, b)), input, other
        )

    compare.__name__ = name
    compare.__doc__ = f"Elementwise `{ufunc}` as a bool tensor (no gradient)."
    return compare


eq = _compare("eq", "equal")
ne = _compare("ne", "not_equal")
lt = _compare("lt", "less")
le = _compare("le", "less_equal")
gt = _compare("gt", "greater")
ge = _compare("ge", "greater_equal")


def _unary(name: str, ufunc: str) -> Any:
    def test(input: Tensor) -> Tensor:
        require_tensor(name, input)
        return _no_grad_op(name, lambda a: getattr(xp_of(a), ufunc)(a), input)

    test.__name__ = name
    test.__doc__ = f"Elementwise `{ufunc}` (no gradient)."
    return test


isnan = _unary("isnan", "isnan")
isinf = _unary("isinf", "isinf")
isfinite = _unary("isfinite", "isfinite")


def logical_not(input: Tensor) -> Tensor:
    """Elementwise not, as a bool tensor."""
    return _no_grad_op("logical_not", lambda a: xp_of(a).logical_not(a), input)


def _logical(name: str, ufunc: str) -> Any:
    def logical(input: Tensor, other: Any) -> Tensor:
        return _no_grad_op(name, lambda a, b: getattr(xp_of(a), ufunc)(a, b), input, other)

    logical.__name__ = name
    logical.__doc__ = f"Elementwise `{ufunc}` as a bool tensor."
    return logical


logical_and = _logical("logical_and", "logical_and")
logical_or = _logical("logical_or", "logical_or")
logical_xor = _logical("logical_xor", "logical_xor")


def _bitwise(name: str, ufunc: str, kernel: str, kinds: str = "biu") -> Any:
    def bitwise(input: Any, other: Any) -> Tensor:
        if not isinstance(input, Tensor) and not isinstance(other, Tensor):
            raise TypeError(f"{name}(): expected at least one Tensor argument")
        for value in (input, other):
            if not isinstance(value, (Tensor, Number)):
                raise TypeError(
                    f"{name}(): expected a Tensor or a number, got {type(value).__name__}"
                )
        dtype = result_type(
            *(v._data if isinstance(v, Tensor) else scalar(v) for v in (input, other))
        )
        if dtype.kind not in kinds:
            raise NotImplementedError(
                f"\"{kernel}_cpu\" not implemented for '{torch_type_name(dtype)}'"
            )
        return _no_grad_op(
            name,
            lambda a, b: getattr(xp_of(b if isinstance(a, Number) else a), ufunc)(*promote(a, b)),
            input,
            other,
        )

    bitwise.__name__ = name
    bitwise.__doc__ = f"Elementwise `{ufunc}` of bool or integer tensors and numbers."
    return bitwise


bitwise_and = _bitwise("bitwise_and", "bitwise_and", "bitwise_and")
bitwise_or = _bitwise("bitwise_or", "bitwise_or", "bitwise_or")
bitwise_xor = _bitwise("bitwise_xor", "bitwise_xor", "bitwise_xor")
bitwise_left_shift = _bitwise("bitwise_left_shift", "left_shift", "lshift", "iu")
bitwise_right_shift = _bitwise("bitwise_right_shift", "right_shift", "rshift", "iu")


def bitwise_not(input: Tensor) -> Tensor:
    """Elementwise not of a bool or integer tensor."""
    if input.dtype.kind not in "biu":
        raise RuntimeError(f"\"bitwise_not_cpu\" not implemented for '{input.dtype}'")
    return _no_grad_op("bitwise_not", lambda a: xp_of(a).invert(a), input)


def allclose(
    input: Tensor, other: Tensor, rtol: float = 1e-5, atol: float = 1e-8, equal_nan: bool = False
) -> bool:
    """True when all elements are close (|a - b| <= atol + rtol * |b|)."""
    require_tensor("allclose", input)
    require_tensor("allclose", other, "other", 2)
    if input.dtype != other.dtype:  # PyTorch compares within one dtype only
        raise RuntimeError(
            f"{torch_type_name(input.dtype)} did not match {torch_type_name(other.dtype)}"
        )
    a, b = input._data, other._data
    try:
        np.broadcast_shapes(a.shape, b.shape)
    except ValueError:
        raise broadcast_error("allclose", [a, b]) from None
    return bool(xp_of(a).allclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan))


def isclose(
    input: Tensor, other: Any, rtol: float = 1e-5, atol: float = 1e-8, equal_nan: bool = False
) -> Tensor:
    """Elementwise |input - other| <= atol + rtol * |other|, as a bool tensor."""
    if isinstance(other, Tensor) and input.dtype != other.dtype:
        raise RuntimeError(
            f"{input.dtype} did not match {other.dtype}: isclose expects both tensors to have "
            "the same dtype"
        )
    return _no_grad_op(
        "isclose",
        lambda a, b: xp_of(a).isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan),
        input,
        other,
    )


def _all_or_any(name: str, method: str) -> Any:
    def reduce(input: Tensor, dim: Any = None, keepdim: bool = False) -> Tensor:
        if not isinstance(input, Tensor):
            raise TypeError(
                f"{name}(): argument 'input' must be Tensor, not {type(input).__name__}"
            )
        dims = normalize_dims(dim, input.ndim)
        data = input._data
        out = getattr(data.astype(bool, copy=False), method)(axis=dims, keepdims=keepdim)
        if dims is None and keepdim:
            out = out.reshape((1,) * data.ndim)
        # PyTorch keeps uint8 for uint8 inputs; every other dtype gives bool.
        if data.dtype.kind == "u" and data.dtype.itemsize == 1:
            out = out.astype(data.dtype)
        return Tensor._wrap(as_array(out), input.device)

    reduce.__name__ = name
    reduce.__doc__ = f"Whether {method} elements are nonzero, over `dim` (all dims when None)."
    return reduce


all = _all_or_any("all", "all")  # noqa: A001 - PyTorch's name
any = _all_or_any("any", "any")  # noqa: A001


def equal(input: Tensor, other: Tensor) -> bool:
    """True when both tensors have the same shape and elements."""
    require_tensor("equal", input)
    require_tensor("equal", other, "other", 2)
    return input.shape == other.shape and bool((input._data == other._data).all())


def _binary_method(fn: Any) -> Any:
    def method(self: Tensor, other: Any) -> Any:
        if not isinstance(other, (Tensor, Number)):
            return NotImplemented
        return fn(self, other)

    return method


def _reflected(fn: Any) -> Any:
    def method(self: Tensor, other: Any) -> Any:
        if not isinstance(other, (Tensor, Number)):
            return NotImplemented
        return (
            fn(other, self)
            if isinstance(other, Tensor)
            else fn(Tensor._wrap(xp_of(self._data).asarray(other), self.device), self)
        )

    return method


FUNCTIONS = {
    "eq": eq,
    "ne": ne,
    "lt": lt,
    "le": le,
    "gt": gt,
    "ge": ge,
    "not_equal": ne,
    "less": lt,
    "less_equal": le,
    "greater": gt,
    "greater_equal": ge,
    "isnan": isnan,
    "isinf": isinf,
    "isfinite": isfinite,
    "logical_not": logical_not,
    "logical_and": logical_and,
    "logical_or": logical_or,
    "logical_xor": logical_xor,
    "bitwise_and": bitwise_and,
    "bitwise_or": bitwise_or,
    "bitwise_xor": bitwise_xor,
    "bitwise_not": bitwise_not,
    "bitwise_left_shift": bitwise_left_shift,
    "bitwise_right_shift": bitwise_right_shift,
    "allclose": allclose,
    "equal": equal,
    "isclose": isclose,
    "all": all,
    "any": any,
}
METHODS = {
    "__eq__": _binary_method(eq),
    "__ne__": _binary_method(ne),
    "__lt__": _binary_method(lt),
    "__le__": _binary_method(le),
    "__gt__": _binary_method(gt),
    "__ge__": _binary_method(ge),
    "__invert__": bitwise_not,
    "__and__": _binary_method(bitwise_and),
    "__or__": _binary_method(bitwise_or),
    "__xor__": _binary_method(bitwise_xor),
    "__rand__": _binary_method(bitwise_and),
    "__ror__": _binary_method(bitwise_or),
    "__rxor__": _binary_method(bitwise_xor),
    "__lshift__": _binary_method(bitwise_left_shift),
    "__rshift__": _binary_method(bitwise_right_shift),
    "__rlshift__": _reflected(bitwise_left_shift),
    "__rrshift__": _reflected(bitwise_right_shift),
}
