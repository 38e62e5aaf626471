"""Checkpoints without pickle: `save(obj, path)` and `load(path, map_location=None)`.

A checkpoint is an `.npz` archive: every tensor or array is one member (`a0`, `a1`, ...) and the
structure around them (dicts, lists, tuples, numbers, strings, None) is JSON stored as the bytes of
the member `__structure__`. Loading uses `allow_pickle=False`, so a checkpoint can hold no code.

Each JSON node is a list whose first item names its kind: `["dict", [[key, node], ...]]`,
`["list", [node, ...]]`, `["tuple", [...]]`, `["tensor", member, device, requires_grad, is_param]`,
`["ndarray", member]`, `["int", 3]`, `["float", "0.1"]` (repr, so nan and inf survive), `["bool",
true]`, `["str", "x"]`, `["none"]`. Dict keys are strings or ints, kept apart.
"""

from __future__ import annotations

import io
import json
import os
import zipfile
from collections.abc import Callable
from typing import IO, Any

import numpy as np

from .core.tensor import Tensor
from .devices import CPU, Device, DeviceError, asarray_on, check_available, to_host
from .type_names import type_name

FORMAT_VERSION = 1
_STRUCTURE = "__structure__"
_ARRAY_KINDS = "biufc"

MapLocation = str | Device | dict[str, str] | Callable[[Tensor, str], Tensor] | None


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
            from .nn.parameter import Parameter  # noqa: PLC0415 - nn sits above this module

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
            return ["dict", items]
        if isinstance(obj, list | tuple):
            kind = "list" if isinstance(obj, list) else "tuple"
            return [kind, [self.encode(v, f"{path}[{i}]") for i, v in enumerate(obj)]]
        raise TypeError(
            f"cannot save an object of type {type_name(obj)} at {path}: checkpoints hold "
            "autograd_async tensors, NumPy arrays, numbers, strings, None, and dicts, lists and "
            "tuples of them"
        )


def save(obj: Any, f: str | os.PathLike | IO[bytes]) -> None:
    """Write `obj` (a state dict: nested dicts/lists of tensors, numbers, strings) to `f`."""
    writer = _Writer()
    structure = {
        "format": "autograd_async",
        "version": FORMAT_VERSION,
        "root": writer.encode(obj, "obj"),
    }
    text = json.dumps(structure, allow_nan=False, separators=(",", ":"))
    members = dict(writer.arrays)
    members[_STRUCTURE] = np.frombuffer(text.encode("utf-8"), dtype=np.uint8)
    if isinstance(f, str | os.PathLike):
        with open(f, "wb") as handle:
            np.savez(handle, **members)
    else:
        np.savez(f, **members)


class _Reader:
    """Rebuilds an object from its JSON node and the archive's arrays."""

    def __init__(self, archive: Any, map_location: MapLocation) -> None:
        self.archive = archive
        self.map_location = map_location
        self._arrays: dict[str, np.ndarray] = {}

    def _array(self, name: Any, path: str) -> np.ndarray:
        if not isinstance(name, str) or name not in self.archive.files or name == _STRUCTURE:
            raise ValueError(f"corrupt checkpoint: missing array {name!r} for {path}")
        if name not in self._arrays:
            self._arrays[name] = self.archive[name]
        return self._arrays[name]

    def _device_for(self, saved: str) -> Device:
        loc = self.map_location
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
        if callable(self.map_location):
            tensor = self.map_location(Tensor._wrap(array, CPU), saved)
            if not isinstance(tensor, Tensor):
                raise TypeError(f"map_location returned {type(tensor).__name__} at {path}")
        else:
            dev = self._device_for(saved)
            tensor = Tensor._wrap(array if dev is CPU else asarray_on(array, dev), dev)
        if is_param:
            from .nn.parameter import Parameter  # noqa: PLC0415 - nn sits above this module

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
            return self._array(node[1], path)
        if kind == "none":
            return None
        if kind in ("bool", "int", "str"):
            return node[1]
        if kind == "float":
            return float(node[1])
        if kind == "dict":
            out = {}
            for key_node, value in node[1]:
                key = self.decode(key_node, path)
                out[key] = self.decode(value, f"{path}[{key!r}]")
            return out
        if kind in ("list", "tuple"):
            items = [self.decode(v, f"{path}[{i}]") for i, v in enumerate(node[1])]
            return items if kind == "list" else tuple(items)
        raise ValueError(f"corrupt checkpoint: unknown entry kind {kind!r} at {path}")


def load(f: str | os.PathLike | IO[bytes], map_location: MapLocation = None) -> Any:
    """Read an object written by `save`; tensors go to their saved device or to `map_location`.

    `map_location` is a device ('cpu', 'sim:1'), a dict from saved to target device names, or a
    callable `(cpu_tensor, saved_device_name) -> Tensor`.
    """
    if isinstance(f, bytes | bytearray):
        f = io.BytesIO(f)
    if isinstance(f, str | os.PathLike):
        # Opened here so that a missing file or a directory raises its own OSError
        # (FileNotFoundError, IsADirectoryError), as open() and torch.load do.
        with open(f, "rb") as handle:
            return _load_archive(handle, map_location)
    return _load_archive(f, map_location)


def _load_archive(f: IO[bytes], map_location: MapLocation) -> Any:
    """Read a checkpoint from an open binary file; ValueError when it is not one."""
    try:
        archive = np.load(f, allow_pickle=False)
    except (ValueError, OSError, EOFError, zipfile.BadZipFile) as exc:
        raise ValueError(f"not an autograd_async checkpoint: {exc or type(exc).__name__}") from exc
    if not hasattr(archive, "files") or _STRUCTURE not in archive.files:
        raise ValueError("not an autograd_async checkpoint: the archive has no __structure__")
    with archive:
        structure = json.loads(archive[_STRUCTURE].tobytes().decode("utf-8"))
        if structure.get("format") != "autograd_async":
            raise ValueError("not an autograd_async checkpoint: unknown format")
        if structure.get("version", 0) > FORMAT_VERSION:
            raise ValueError(
                f"checkpoint format version {structure['version']} is newer than this library's "
                f"({FORMAT_VERSION})"
            )
        return _Reader(archive, map_location).decode(structure["root"], "obj")


__all__ = ["load", "save"]
