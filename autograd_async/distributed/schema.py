"""Strict, declarative validation of frame headers, one spec per message type.

A header is a msgpack map with two keys owned by the wire layer, ``msg`` (the message
type) and ``arrays`` (one ``{"dtype", "shape"}`` map per out-of-band buffer), plus the
fields that the message's spec declares. Anything else is refused: the receiver never
guesses, never imports a name from the wire, and every refusal names the offending part.

Field types are given as plain Python types: ``str``, ``int``, ``float``, ``bool``,
``list[T]``, ``T | None``, ``dict`` (a nested map of simple values), ``NonNegativeInt``
and ``ArrayIndex`` (an int that refers to one of the frame's arrays).
"""

from __future__ import annotations

import math
import reprlib
import types
import typing
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .errors import ProtocolError

__all__ = [
    "ALLOWED_DTYPES",
    "DEFAULT_REGISTRY",
    "MAX_NDIM",
    "ArrayIndex",
    "ArrayMeta",
    "FieldType",
    "Message",
    "MessageRegistry",
    "MessageSpec",
    "NonNegativeInt",
    "SimpleMap",
    "get_message_spec",
    "list_of",
    "register_core_messages",
    "register_message",
    "wire_dtype_name",
]

MAX_NDIM = 32
# Nested kwargs deeper than this are a bug or an attack, not a real call.
MAX_VALUE_DEPTH = 16

# Wire names of the numeric dtypes; the bytes on the wire are always little-endian.
ALLOWED_DTYPES: dict[str, np.dtype] = {
    name: np.dtype(name).newbyteorder("<")
    for name in (
        "bool",
        "int8",
        "int16",
        "int32",
        "int64",
        "uint8",
        "uint16",
        "uint32",
        "uint64",
        "float16",
        "float32",
        "float64",
        "complex64",
        "complex128",
    )
}
_HEADER_KEYS = ("msg", "arrays")


# Both byte orders map to the same wire name (the sender swaps big-endian data). A dict
# lookup, because `dtype.name` is slow Python code inside NumPy and runs for every array.
_WIRE_NAMES: dict[np.dtype, str] = {
    dt: name for name, little in ALLOWED_DTYPES.items() for dt in (little, little.newbyteorder(">"))
}


def wire_dtype_name(dtype: np.dtype) -> str:
    """Return the wire name of a numeric dtype, or raise ProtocolError for any other dtype."""
    name = _WIRE_NAMES.get(dtype)
    if name is None:
        raise ProtocolError(f"dtype {str(dtype)!r} cannot be sent: only numeric dtypes are allowed")
    return name


# Bounded repr for error messages: a hostile value may be huge or deeply nested.
_SHORT_REPR = reprlib.Repr()
_SHORT_REPR.maxlevel = 3
_SHORT_REPR.maxstring = _SHORT_REPR.maxother = _SHORT_REPR.maxlong = 60


def _short(value: Any) -> str:
    """repr(value), bounded in length and depth."""
    return _SHORT_REPR.repr(value)


def _kind(value: Any) -> str:
    """Describe a wire value for an error message, e.g. "int 5" or "list"."""
    text = _short(value)
    if len(text) > 60:
        text = text[:57] + "..."
    return f"{type(value).__name__} {text}"


class FieldType:
    """A validator for one field; subclasses check a value and describe the expected type."""

    def check(self, value: Any, where: str, n_arrays: int) -> None:
        """Raise ProtocolError naming `where` if `value` does not fit this type."""
        raise NotImplementedError

    def describe(self) -> str:
        """Return the type's name as it appears in error messages and docs."""
        raise NotImplementedError


class _Scalar(FieldType):
    def __init__(self, py_type: type) -> None:
        self.py_type = py_type

    def check(self, value: Any, where: str, n_arrays: int) -> None:
        ok = isinstance(value, self.py_type)
        # bool is an int subclass in Python but a distinct type on the wire.
        if self.py_type is not bool and isinstance(value, bool):
            ok = False
        # An integral float sent as an int (e.g. 1 for 1.0) is still a number.
        if self.py_type is float and isinstance(value, int) and not isinstance(value, bool):
            ok = True
        if not ok:
            raise ProtocolError(f"{where} must be {self.describe()}, got {_kind(value)}")

    def describe(self) -> str:
        return self.py_type.__name__


class _NonNegativeInt(_Scalar):
    def __init__(self) -> None:
        super().__init__(int)

    def check(self, value: Any, where: str, n_arrays: int) -> None:
        super().check(value, where, n_arrays)
        if value < 0:
            raise ProtocolError(f"{where} must be a non-negative int, got {value}")

    def describe(self) -> str:
        return "non-negative int"


class _ArrayIndex(FieldType):
    def check(self, value: Any, where: str, n_arrays: int) -> None:
        if not isinstance(value, int) or isinstance(value, bool):
            raise ProtocolError(f"{where} must be an array index (int), got {_kind(value)}")
        if not 0 <= value < n_arrays:
            raise ProtocolError(
                f"{where} refers to array {value} but the frame carries {n_arrays} arrays"
            )

    def describe(self) -> str:
        return "array index"


class _Nullable(FieldType):
    def __init__(self, inner: FieldType) -> None:
        self.inner = inner

    def check(self, value: Any, where: str, n_arrays: int) -> None:
        if value is not None:
            self.inner.check(value, where, n_arrays)

    def describe(self) -> str:
        return f"{self.inner.describe()} or null"


class _ListOf(FieldType):
    def __init__(self, item: FieldType) -> None:
        self.item = item

    def check(self, value: Any, where: str, n_arrays: int) -> None:
        if not isinstance(value, list):
            raise ProtocolError(f"{where} must be {self.describe()}, got {_kind(value)}")
        for i, item in enumerate(value):
            self.item.check(item, f"{where}[{i}]", n_arrays)

    def describe(self) -> str:
        return f"list of {self.item.describe()}"


class _SimpleMap(FieldType):
    """A map of str keys to simple values: None, bool, int, float, str, lists and maps."""

    def check(self, value: Any, where: str, n_arrays: int) -> None:
        if not isinstance(value, dict):
            raise ProtocolError(f"{where} must be a map, got {_kind(value)}")
        # Iterative walk: hostile nesting must not hit the recursion limit.
        stack: list[tuple[Any, str, int]] = [(value, where, 1)]
        while stack:
            item, path, depth = stack.pop()
            if depth > MAX_VALUE_DEPTH:
                raise ProtocolError(f"{path} is nested deeper than {MAX_VALUE_DEPTH} levels")
            if isinstance(item, dict):
                for key, sub in item.items():
                    if not isinstance(key, str):
                        raise ProtocolError(f"{path} has a non-str key {_kind(key)}")
                    stack.append((sub, f"{path}.{key}", depth + 1))
            elif isinstance(item, list):
                stack.extend((sub, f"{path}[{i}]", depth + 1) for i, sub in enumerate(item))
            elif item is not None and not isinstance(item, bool | int | float | str):
                raise ProtocolError(f"{path} must be a simple value, got {_kind(item)}")

    def describe(self) -> str:
        return "map of simple values"


SimpleMap: FieldType = _SimpleMap()
ArrayIndex: FieldType = _ArrayIndex()
NonNegativeInt: FieldType = _NonNegativeInt()


def list_of(item: Any) -> FieldType:
    """A list of `item`s, for the items that are FieldTypes (`list_of(NonNegativeInt)`): the
    spelling `list[NonNegativeInt]` works too, but type checkers refuse an object inside []."""
    return _ListOf(as_field_type(item))


def as_field_type(spec: Any) -> FieldType:
    """Turn `str`, `list[int]`, `int | None`, `dict` ... into a FieldType."""
    if isinstance(spec, FieldType):
        return spec
    if spec in (str, int, float, bool):
        return _Scalar(spec)
    if spec is dict:
        return SimpleMap
    origin = typing.get_origin(spec)
    args = typing.get_args(spec)
    if origin is list and len(args) == 1:
        return _ListOf(as_field_type(args[0]))
    if origin in (typing.Union, types.UnionType) and type(None) in args and len(args) == 2:
        (inner,) = (a for a in args if a is not type(None))
        return _Nullable(as_field_type(inner))
    raise TypeError(f"unsupported field type {spec!r}")


@dataclass(frozen=True)
class MessageSpec:
    """The declared shape of one message type."""

    name: str
    required: Mapping[str, FieldType]
    optional: Mapping[str, FieldType]
    carries_arrays: bool

    def check_fields(self, fields: Mapping[str, Any], n_arrays: int) -> None:
        """Raise ProtocolError if `fields` (header minus msg/arrays) do not match this spec."""
        if n_arrays and not self.carries_arrays:
            raise ProtocolError(f"message {self.name!r} carries no arrays, got {n_arrays}")
        for key in fields:
            if key not in self.required and key not in self.optional:
                raise ProtocolError(f"message {self.name!r} has unknown field {_field_name(key)}")
        for key, ftype in self.required.items():
            if key not in fields:
                raise ProtocolError(f"message {self.name!r} is missing required field {key!r}")
            ftype.check(fields[key], f"message {self.name!r}, field {key!r}", n_arrays)
        for key, ftype in self.optional.items():
            if key in fields:
                ftype.check(fields[key], f"message {self.name!r}, field {key!r}", n_arrays)


def _field_name(key: Any) -> str:
    return _short(key) if isinstance(key, str) else _kind(key)


@dataclass(frozen=True)
class ArrayMeta:
    """What the header says about one out-of-band buffer."""

    dtype: np.dtype
    shape: tuple[int, ...]

    @property
    def nbytes(self) -> int:
        """Byte length that this dtype and shape occupy."""
        return math.prod(self.shape) * self.dtype.itemsize


@dataclass(frozen=True)
class Message:
    """A validated header: its type, its fields and the metadata of its arrays."""

    type: str
    fields: dict[str, Any]
    arrays: tuple[ArrayMeta, ...]


def parse_array_meta(index: int, meta: Any, length: int, max_frame_bytes: int) -> ArrayMeta:
    """Validate one ``{"dtype", "shape"}`` entry against the buffer length in the prefix."""
    where = f"array {index}"
    if not isinstance(meta, dict):
        raise ProtocolError(f"{where}: metadata must be a map, got {_kind(meta)}")
    extra = [k for k in meta if k not in ("dtype", "shape")]
    if extra:
        raise ProtocolError(f"{where}: metadata has unknown field {_field_name(extra[0])}")
    if "dtype" not in meta or "shape" not in meta:
        missing = "dtype" if "dtype" not in meta else "shape"
        raise ProtocolError(f"{where}: metadata is missing {missing!r}")
    dtype_name, shape = meta["dtype"], meta["shape"]
    if not isinstance(dtype_name, str) or dtype_name not in ALLOWED_DTYPES:
        raise ProtocolError(
            f"{where}: dtype {_short(dtype_name)} is not allowed "
            f"(allowed: {', '.join(ALLOWED_DTYPES)})"
        )
    if not isinstance(shape, list):
        raise ProtocolError(f"{where}: shape must be a list of ints, got {_kind(shape)}")
    if len(shape) > MAX_NDIM:
        raise ProtocolError(f"{where}: shape has {len(shape)} dimensions, more than {MAX_NDIM}")
    for dim in shape:
        if not isinstance(dim, int) or isinstance(dim, bool):
            raise ProtocolError(
                f"{where}: shape {_short(shape)} has a non-int dimension {_kind(dim)}"
            )
        if dim < 0:
            raise ProtocolError(f"{where}: shape {shape!r} has a negative dimension {dim}")
    result = ArrayMeta(ALLOWED_DTYPES[dtype_name], tuple(shape))
    nbytes = result.nbytes
    if nbytes > max_frame_bytes:
        raise ProtocolError(
            f"{where}: shape {shape!r} of {dtype_name} needs {nbytes} bytes, "
            f"more than the max frame size {max_frame_bytes}"
        )
    if nbytes != length:
        raise ProtocolError(
            f"{where}: shape {shape!r} of {dtype_name} needs {nbytes} bytes "
            f"but the frame declares {length}"
        )
    return result


class MessageRegistry:
    """The set of message types a peer understands; register more with `register`."""

    def __init__(self) -> None:
        self._specs: dict[str, MessageSpec] = {}

    def register(
        self,
        name: str,
        *,
        required: Mapping[str, Any] | None = None,
        optional: Mapping[str, Any] | None = None,
        arrays: bool = False,
    ) -> MessageSpec:
        """Declare a message type with its required/optional field types; return its spec."""
        if not isinstance(name, str) or not name:
            raise ValueError("message name must be a non-empty str")
        if name in self._specs:
            raise ValueError(f"message type {name!r} is already registered")
        req = {k: as_field_type(v) for k, v in (required or {}).items()}
        opt = {k: as_field_type(v) for k, v in (optional or {}).items()}
        for key in (*req, *opt):
            if key in _HEADER_KEYS:
                raise ValueError(f"field name {key!r} is reserved by the wire format")
        if set(req) & set(opt):
            raise ValueError(f"fields {sorted(set(req) & set(opt))} are both required and optional")
        spec = MessageSpec(name, req, opt, arrays)
        self._specs[name] = spec
        return spec

    def get(self, name: Any) -> MessageSpec:
        """Return the spec of message type `name`, or raise ProtocolError if unknown."""
        spec = self._specs.get(name) if isinstance(name, str) else None
        if spec is None:
            raise ProtocolError(f"unknown message type {_short(name)}")
        return spec

    def __contains__(self, name: object) -> bool:
        return name in self._specs

    def names(self) -> list[str]:
        """Return the registered message type names."""
        return list(self._specs)

    def validate(self, header: Any, lengths: Sequence[int], max_frame_bytes: int) -> Message:
        """Check a decoded header against its spec and the buffer lengths of its prefix."""
        if not isinstance(header, dict):
            raise ProtocolError(f"header must be a map, got {_kind(header)}")
        if "msg" not in header:
            raise ProtocolError("header has no 'msg' field (the message type)")
        spec = self.get(header["msg"])
        metas = header.get("arrays", [])
        if not isinstance(metas, list):
            raise ProtocolError(f"header field 'arrays' must be a list, got {_kind(metas)}")
        if len(metas) != len(lengths):
            raise ProtocolError(
                f"header describes {len(metas)} arrays but the frame carries {len(lengths)}"
            )
        arrays = tuple(
            parse_array_meta(i, m, n, max_frame_bytes)
            for i, (m, n) in enumerate(zip(metas, lengths, strict=True))
        )
        fields = {k: v for k, v in header.items() if k not in _HEADER_KEYS}
        spec.check_fields(fields, len(arrays))
        return Message(spec.name, fields, arrays)


DEFAULT_REGISTRY = MessageRegistry()


def register_message(
    name: str,
    *,
    required: Mapping[str, Any] | None = None,
    optional: Mapping[str, Any] | None = None,
    arrays: bool = False,
    registry: MessageRegistry | None = None,
) -> MessageSpec:
    """Register a message type in the default registry (or `registry`); return its spec."""
    target = DEFAULT_REGISTRY if registry is None else registry
    return target.register(name, required=required, optional=optional, arrays=arrays)


def get_message_spec(name: str, registry: MessageRegistry | None = None) -> MessageSpec:
    """Return the spec of a registered message type."""
    return (DEFAULT_REGISTRY if registry is None else registry).get(name)


def register_core_messages(registry: MessageRegistry) -> None:
    """Register the handshake, request/response, error, ping/pong and cancel messages."""
    reg = registry.register
    # Handshake (see auth.py): nonces and proofs travel as lowercase hex strings.
    reg("hello", required={"name": str, "version": NonNegativeInt})
    # The server's name travels in auth_ok only: strangers must not learn it.
    reg("challenge", required={"nonce": str, "version": NonNegativeInt})
    reg("auth", required={"nonce": str, "proof": str})
    reg("auth_ok", required={"name": str, "proof": str})
    reg("request", required={"id": NonNegativeInt, "method": str, "kwargs": SimpleMap}, arrays=True)
    reg("response", required={"id": NonNegativeInt, "result": SimpleMap}, arrays=True)
    reg(
        "error",
        required={"id": _Nullable(NonNegativeInt), "type": str, "message": str},
        optional={"node": str, "worker": str, "context_id": int},
    )
    reg("ping", required={"id": NonNegativeInt})
    reg("pong", required={"id": NonNegativeInt})
    reg("cancel", required={"id": NonNegativeInt})


register_core_messages(DEFAULT_REGISTRY)
