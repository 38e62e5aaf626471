"""Checkpoints without pickle: `save(obj, f)` and `load(f, map_location=None, *, weights_only=None,
mmap=None)`, with PyTorch's meanings.

A checkpoint is an `.npz` archive: every tensor or array is one member (`a0`, `a1`, ...) and the
structure around them (dicts, lists, tuples, numbers, strings, None) is JSON stored as the bytes of
the member `__structure__`. Loading uses `allow_pickle=False`, so a checkpoint can hold no code.

Each JSON node is a list whose first item names its kind: `["dict", [[key, node], ...]]`,
`["list", [node, ...]]`, `["tuple", [...]]`, `["tensor", member, device, requires_grad, is_param]`,
`["ndarray", member]`, `["int", 3]`, `["float", "0.1"]` (repr, so nan and inf survive), `["bool",
true]`, `["str", "x"]`, `["none"]`, `["odict", [[key, node], ...]]` (an OrderedDict), `["complex",
"re", "im"]`, `["bytes", "hex"]`, `["dtype", "float32"]`, `["device", "sim:0"]`. Dict keys are
strings or ints, kept apart.

Since the archive holds no code, `weights_only` cannot let anything unsafe through; it keeps
PyTorch's meaning of what may come back: with `weights_only=True` (the default, as in PyTorch 2.6
and later) a NumPy array is refused with PyTorch's "Weights only load failed" error, since
`torch.load` refuses those too; `weights_only=False` returns them.
"""

from __future__ import annotations

import io
import json
import mmap as mmap_module
import os
import pickle
import struct
import zipfile
from collections import OrderedDict
from collections.abc import Callable
from typing import IO, Any

import numpy as np

from . import dtypes
from .core.tensor import Tensor
from .devices import CPU, Device, DeviceError, asarray_on, check_available, to_host
from .nn.parameter import Parameter
from .type_names import type_name

FORMAT_VERSION = 1
_STRUCTURE = "__structure__"
_ARRAY_KINDS = "biufc"

MapLocation = str | Device | dict[str, str] | Callable[[Tensor, str], Tensor | None] | None

_WEIGHTS_ONLY_MESSAGE = (
    "Weights only load failed. This file can still be loaded, to do so you have two options: "
    "(1) Re-running `load` with `weights_only` set to `False` will succeed; autograd_async "
    "checkpoints never hold code, so this is safe, and it returns the NumPy arrays the file "
    "holds. (2) Save tensors in place of NumPy arrays.\n\tWeightsUnpickler error: Unsupported "
    "global: GLOBAL numpy.ndarray was not an allowed global by default (found at {path})."
)


class _Writer:
    """Walks an object, collecting arrays and returning its JSON node."""

    def __init__(self) -> None:
        self.arrays: dict[str, np.ndarray] = {}
        # id(array) -> (member name, array): an array met twice is stored once (kept alive here).
        self._seen: dict[int, tuple[str, Any]] = {}

    def _store(self, array: Any, path: str) -> str:
        seen = self._seen.get(id(array))
        if seen is not None:
            return seen[0]
        host = np.asarray(to_host(array))
        if host.dtype.kind not in _ARRAY_KINDS:
            raise TypeError(f"cannot save an array of dtype {host.dtype} at {path}")
        name = f"a{len(self.arrays)}"
        self.arrays[name] = host
        self._seen[id(array)] = (name, array)
        return name

    def encode(self, obj: Any, path: str) -> list:
        """The JSON node of `obj` (found at `path`, named in errors)."""
        if isinstance(obj, Tensor):
            name = self._store(obj._data, path)
            return ["tensor", name, str(obj.device), obj.requires_grad, isinstance(obj, Parameter)]
        if isinstance(obj, np.ndarray):
            return ["ndarray", self._store(obj, path)]
        if obj is None:
            return ["none"]
        if isinstance(obj, bool | np.bool_):
            return ["bool", bool(obj)]
        if isinstance(obj, int | np.integer):
            return ["int", int(obj)]
        if isinstance(obj, float | np.floating):
            return ["float", repr(float(obj))]
        if isinstance(obj, str):
            return ["str", obj]
        if isinstance(obj, complex | np.complexfloating):
            return ["complex", repr(float(obj.real)), repr(float(obj.imag))]
        if isinstance(obj, bytes):
            return ["bytes", obj.hex()]
        if isinstance(obj, dtypes.dtype):
            return ["dtype", str(obj)]
        if isinstance(obj, Device):
            return ["device", str(obj)]
        if isinstance(obj, dict):
            items = []
            for key, value in obj.items():
                if isinstance(key, bool) or not isinstance(key, str | int):
                    raise TypeError(
                        f"cannot save a dict key of type {type_name(key)} ({key!r}) at {path}; "
                        "keys must be str or int"
                    )
                items.append(
                    [
                        ["int", key] if isinstance(key, int) else ["str", key],
                        self.encode(value, f"{path}[{key!r}]"),
                    ]
                )
            return ["odict" if isinstance(obj, OrderedDict) else "dict", items]
        if isinstance(obj, list | tuple):
            kind = "list" if isinstance(obj, list) else "tuple"
            return [kind, [self.encode(v, f"{path}[{i}]") for i, v in enumerate(obj)]]
        raise TypeError(
            f"cannot save an object of type {type_name(obj)} at {path}: checkpoints hold "
            "autograd_async tensors, NumPy arrays, numbers, strings, bytes, None, dtypes, devices, "
            "and dicts (OrderedDicts too), lists and tuples of them"
        )


def save(
    obj: Any,
    f: str | os.PathLike | IO[bytes],
    pickle_module: Any = None,
    pickle_protocol: int = 2,
    _use_new_zipfile_serialization: bool = True,
) -> None:
    """Write `obj` (a state dict: nested dicts/lists of tensors, numbers, strings) to `f`.

    `pickle_module` and `pickle_protocol` are accepted for PyTorch's signature and unused: the
    format is an uncompressed `.npz` archive with a JSON structure, never a pickle.
    """
    writer = _Writer()
    structure = {
        "format": "autograd_async",
        "version": FORMAT_VERSION,
        "root": writer.encode(obj, "obj"),
    }
    text = json.dumps(structure, allow_nan=False, separators=(",", ":"))
    # Values typed loosely: NumPy's stub would match a member named like one of its keywords
    # (`allow_pickle`) against that keyword's type; ours are named by `_Writer` and never are.
    members: dict[str, Any] = dict(writer.arrays)
    members[_STRUCTURE] = np.frombuffer(text.encode("utf-8"), dtype=np.uint8)
    if isinstance(f, str | os.PathLike):
        with open(f, "wb") as handle:
            np.savez(handle, **members)
    else:
        np.savez(f, **members)


class _Reader:
    """Rebuilds an object from its JSON node and the archive's arrays."""

    def __init__(
        self,
        arrays: Callable[[str], np.ndarray],
        names: frozenset[str],
        map_location: MapLocation,
        weights_only: bool,
    ) -> None:
        self._read_array = arrays
        self._names = names
        self.map_location = map_location
        self.weights_only = weights_only
        self._arrays: dict[str, np.ndarray] = {}

    def _array(self, name: Any, path: str) -> np.ndarray:
        if not isinstance(name, str) or name not in self._names or name == _STRUCTURE:
            raise ValueError(f"corrupt checkpoint: missing array {name!r} for {path}")
        if name not in self._arrays:
            self._arrays[name] = self._read_array(name)
        return self._arrays[name]

    def _device_for(self, saved: str, loc: str | Device | dict[str, str] | None) -> Device:
        """Where a tensor saved on `saved` goes, for a `map_location` other than a function."""
        if isinstance(loc, dict):
            loc = loc.get(saved, saved)
        dev = Device(saved if loc is None else loc)
        try:
            check_available(dev)
        except DeviceError as exc:
            raise DeviceError(
                f"a checkpoint tensor was saved on {saved}, which is not available here ({exc}); "
                "pass map_location='cpu' (or another device) to load()"
            ) from exc
        return dev

    def _tensor(self, node: list, path: str) -> Tensor:
        _, name, saved, requires_grad, is_param = node
        array = self._array(name, path)
        tensor = None
        loc = self.map_location
        if callable(loc):
            # PyTorch's form: called with the cpu copy and the saved location; None keeps the
            # default placement.
            tensor = loc(Tensor._wrap(array, CPU), saved)
            if tensor is not None and not isinstance(tensor, Tensor):
                raise TypeError(f"map_location returned {type(tensor).__name__} at {path}")
            if tensor is None:
                dev = Device(saved)
                check_available(dev)
                tensor = Tensor._wrap(array if dev is CPU else asarray_on(array, dev), dev)
        else:
            dev = self._device_for(saved, loc)
            tensor = Tensor._wrap(array if dev is CPU else asarray_on(array, dev), dev)
        if is_param:
            return Parameter(tensor, requires_grad=requires_grad)
        if requires_grad:
            tensor.requires_grad_(True)
        return tensor

    def decode(self, node: Any, path: str) -> Any:
        """The object a JSON node stands for."""
        if not isinstance(node, list) or not node or not isinstance(node[0], str):
            raise ValueError(f"corrupt checkpoint: malformed entry at {path}")
        kind = node[0]
        if kind == "tensor":
            return self._tensor(node, path)
        if kind == "ndarray":
            if self.weights_only:
                raise pickle.UnpicklingError(_WEIGHTS_ONLY_MESSAGE.format(path=path))
            return self._array(node[1], path)
        if kind == "none":
            return None
        if kind in ("bool", "int", "str"):
            return node[1]
        if kind == "float":
            return float(node[1])
        if kind == "complex":
            return complex(float(node[1]), float(node[2]))
        if kind == "bytes":
            return bytes.fromhex(node[1])
        if kind == "dtype":
            found = getattr(dtypes, "bool_" if node[1] == "bool" else node[1], None)
            if not isinstance(found, dtypes.dtype):
                raise ValueError(f"corrupt checkpoint: unknown dtype {node[1]!r} at {path}")
            return found
        if kind == "device":
            return Device(node[1])
        if kind in ("dict", "odict"):
            out = {} if kind == "dict" else OrderedDict()
            for key_node, value in node[1]:
                key = self.decode(key_node, path)
                out[key] = self.decode(value, f"{path}[{key!r}]")
            return out
        if kind in ("list", "tuple"):
            items = [self.decode(v, f"{path}[{i}]") for i, v in enumerate(node[1])]
            return items if kind == "list" else tuple(items)
        raise ValueError(f"corrupt checkpoint: unknown entry kind {kind!r} at {path}")


def load(
    f: str | os.PathLike | IO[bytes] | bytes,
    map_location: MapLocation = None,
    pickle_module: Any = None,
    *,
    weights_only: bool | None = None,
    mmap: bool | None = None,
    **pickle_load_args: Any,
) -> Any:
    """Read an object written by `save`; tensors go to their saved device or to `map_location`.

    `map_location` is a device ('cpu', 'sim:1', an `aa.device`), a dict from saved to target
    device names, or a callable `(cpu_tensor, saved_device_name) -> Tensor or None` (None: the
    saved device). `weights_only` (default True, as in PyTorch) refuses NumPy arrays; the file
    never holds code either way. `mmap=True` maps the file's tensor data copy-on-write instead of
    reading it: cpu tensors share the file's pages until written, and writes never reach the file.
    `pickle_module` must be None and `pickle_load_args` are ignored: there is no pickle to load.
    """
    if weights_only is None:
        weights_only = True
    if pickle_module is not None:
        if weights_only:
            raise RuntimeError(
                "Can not safely load weights when explicit pickle_module is specified"
            )
        raise ValueError("autograd_async checkpoints are never pickles; pass pickle_module=None")
    if isinstance(f, bytes | bytearray):
        f = io.BytesIO(f)
    if mmap:
        if not isinstance(f, str | os.PathLike):
            raise ValueError("f must be a file path in order to use the mmap argument")
        return _load_mapped(os.fspath(f), map_location, weights_only)
    if isinstance(f, str | os.PathLike):
        # Opened here so that a missing file or a directory raises its own OSError
        # (FileNotFoundError, IsADirectoryError), as open() and torch.load do.
        with open(f, "rb") as handle:
            return _load_archive(handle, map_location, weights_only)
    return _load_archive(f, map_location, weights_only)


def _open_archive(f: IO[bytes]) -> Any:
    """The `.npz` archive in `f`, checked to be a checkpoint; ValueError when it is not one."""
    try:
        archive = np.load(f, allow_pickle=False)
    except (ValueError, OSError, EOFError, zipfile.BadZipFile) as exc:
        raise ValueError(f"not an autograd_async checkpoint: {exc or type(exc).__name__}") from exc
    if not hasattr(archive, "files") or _STRUCTURE not in archive.files:
        raise ValueError("not an autograd_async checkpoint: the archive has no __structure__")
    return archive


def _structure(archive: Any) -> dict[str, Any]:
    structure = json.loads(archive[_STRUCTURE].tobytes().decode("utf-8"))
    if structure.get("format") != "autograd_async":
        raise ValueError("not an autograd_async checkpoint: unknown format")
    if structure.get("version", 0) > FORMAT_VERSION:
        raise ValueError(
            f"checkpoint format version {structure['version']} is newer than this library's "
            f"({FORMAT_VERSION})"
        )
    return structure


def _load_archive(f: IO[bytes], map_location: MapLocation, weights_only: bool) -> Any:
    """Read a checkpoint from an open binary file, each array read into memory."""
    with _open_archive(f) as archive:
        structure = _structure(archive)
        reader = _Reader(archive.__getitem__, frozenset(archive.files), map_location, weights_only)
        return reader.decode(structure["root"], "obj")


def _load_mapped(path: str, map_location: MapLocation, weights_only: bool) -> Any:
    """Read a checkpoint whose arrays are views of a private (copy-on-write) map of the file."""
    with open(path, "rb") as handle:
        with _open_archive(handle) as archive:
            structure = _structure(archive)
            names = frozenset(archive.files)
        handle.seek(0)
        offsets = _member_offsets(handle)
        mapped = mmap_module.mmap(handle.fileno(), 0, access=mmap_module.ACCESS_COPY)

    def array(name: str) -> np.ndarray:
        offset, dtype, shape, fortran = offsets[name + ".npy"]
        count = int(np.prod(shape, dtype=np.int64))
        flat = np.frombuffer(mapped, dtype=dtype, count=count, offset=offset)
        return flat.reshape(shape, order="F" if fortran else "C")

    return _Reader(array, names, map_location, weights_only).decode(structure["root"], "obj")


def _member_offsets(handle: IO[bytes]) -> dict[str, tuple[int, np.dtype, tuple, bool]]:
    """Where each stored (uncompressed) `.npy` member's data starts in the file, with its dtype,
    shape and order, read from the zip's local headers and the `.npy` headers."""
    found = {}
    with zipfile.ZipFile(handle) as archive:
        for info in archive.infolist():
            if info.compress_type != zipfile.ZIP_STORED:
                raise ValueError(
                    f"cannot map {info.filename}: it is compressed; load without mmap=True"
                )
            handle.seek(info.header_offset)
            local = handle.read(30)
            name_length, extra_length = struct.unpack("<HH", local[26:30])
            start = info.header_offset + 30 + name_length + extra_length
            handle.seek(start)
            version = np.lib.format.read_magic(handle)
            if version == (1, 0):
                shape, fortran, dtype = np.lib.format.read_array_header_1_0(handle)
            else:
                shape, fortran, dtype = np.lib.format.read_array_header_2_0(handle)
            found[info.filename] = (handle.tell(), dtype, shape, fortran)
    return found


__all__ = ["load", "save"]
