"""Keyed and parameter containers: `ModuleDict`, `ParameterList` and `ParameterDict`.

Their entries are registered under their keys (or list positions), so `state_dict()` names them
`name.key` and `name.0` exactly as PyTorch does, and checkpoints map one to one.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from ...core.tensor import Tensor
from ..parameter import Parameter
from .module import Module


def _items(values: Mapping | Iterable, kind: str) -> Iterable[tuple[str, Any]]:
    if isinstance(values, Mapping):
        return values.items()
    if isinstance(values, Tensor | Module) or not isinstance(values, Iterable):
        raise TypeError(
            f"{kind}.update should be called with an iterable of key/value pairs, but got "
            f"{type(values).__name__}"
        )
    pairs: list[tuple[str, Any]] = []
    for i, pair in enumerate(values):
        if not isinstance(pair, list | tuple) or len(pair) != 2:
            raise ValueError(
                f"{kind} update sequence element #{i} should be a key/value pair of length 2"
            )
        key, value = pair
        pairs.append((key, value))
    return pairs


class ModuleDict(Module):
    """Modules by name, in insertion order, registered as children."""

    def __init__(self, modules: Mapping[str, Module] | None = None) -> None:
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key: str) -> Module:
        return self._modules[key]  # type: ignore[return-value]

    def __setitem__(self, key: str, module: Module) -> None:
        self.add_module(key, module)

    def __delitem__(self, key: str) -> None:
        del self._modules[key]

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[str]:
        return iter(self._modules)

    def __contains__(self, key: object) -> bool:
        return key in self._modules

    def clear(self) -> None:
        """Remove every module."""
        self._modules.clear()

    def pop(self, key: str) -> Module:
        """Remove the module `key` and return it."""
        module = self[key]
        del self[key]
        return module

    def keys(self) -> Iterable[str]:
        """The names."""
        return self._modules.keys()

    def items(self) -> Iterable[tuple[str, Module]]:
        """(name, module) pairs."""
        return self._modules.items()  # type: ignore[return-value]

    def values(self) -> Iterable[Module]:
        """The modules."""
        return self._modules.values()  # type: ignore[return-value]

    def update(self, modules: Mapping[str, Module] | Iterable[tuple[str, Module]]) -> None:
        """Add or replace modules from a mapping or from (name, module) pairs."""
        for key, module in _items(modules, "ModuleDict"):
            self[key] = module

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        """ModuleDict has no forward: index it and call its modules."""
        raise NotImplementedError("ModuleDict is not callable; index it and call its modules")


def _as_parameter(value: Any) -> Any:
    """Tensors become Parameters (as PyTorch's containers convert them); others stay as given."""
    if isinstance(value, Tensor) and not isinstance(value, Parameter):
        return Parameter(value, requires_grad=value.requires_grad or value.is_leaf)
    return value


def _parameter_line(key: str, value: Any) -> str:
    if isinstance(value, Tensor):
        size = "x".join(str(n) for n in value.shape)
        kind = "Parameter containing" if isinstance(value, Parameter) else "Object of type Tensor"
        place = f" ({value.device})" if str(value.device) != "cpu" else ""
        return f"({key}): {kind}: [aa.{value.dtype} of size {size}{place}]"
    return f"({key}): Object of type: {type(value).__name__}"


class ParameterList(Module):
    """Parameters in a list, registered as `0`, `1`, ... (tensors become Parameters)."""

    def __init__(self, values: Iterable[Any] | None = None) -> None:
        super().__init__()
        self._size = 0
        if values is not None:
            self.extend(values)

    def _index(self, idx: int) -> int:
        idx = operator.index(idx)
        if not -len(self) <= idx < len(self):
            raise IndexError(f"index {idx} is out of range")
        return idx % len(self)

    def __getitem__(self, idx: int | slice) -> Any:
        if isinstance(idx, slice):
            return ParameterList([self[i] for i in range(len(self))[idx]])
        return getattr(self, str(self._index(idx)))

    def __setitem__(self, idx: int, value: Any) -> None:
        setattr(self, str(self._index(idx)), _as_parameter(value))

    def __len__(self) -> int:
        return self._size

    def __iter__(self) -> Iterator[Any]:
        return (self[i] for i in range(len(self)))

    def __iadd__(self, values: Iterable[Any]) -> ParameterList:
        return self.extend(values)

    def append(self, value: Any) -> ParameterList:
        """Add a parameter (or any value) at the end; returns self."""
        self._size += 1
        setattr(self, str(self._size - 1), _as_parameter(value))
        return self

    def extend(self, values: Iterable[Any]) -> ParameterList:
        """Add values at the end; returns self."""
        if isinstance(values, Tensor) or not isinstance(values, Iterable):
            raise TypeError(
                f"ParameterList.extend should be called with an iterable, but got "
                f"{type(values).__name__}"
            )
        for value in values:
            self.append(value)
        return self

    def extra_repr(self) -> str:
        """One line per entry: its dtype and size."""
        return "\n".join(_parameter_line(str(i), v) for i, v in enumerate(self))

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        """ParameterList has no forward."""
        raise NotImplementedError("ParameterList is not callable")


class ParameterDict(Module):
    """Parameters by name, in insertion order (tensors become Parameters)."""

    def __init__(self, parameters: Mapping[str, Any] | None = None) -> None:
        super().__init__()
        self._keys: dict[str, None] = {}
        if parameters is not None:
            self.update(parameters)

    def __getitem__(self, key: str) -> Any:
        return getattr(self, key)

    def __setitem__(self, key: str, value: Any) -> None:
        if not isinstance(key, str):
            raise TypeError(f"parameter name should be a string, got {type(key).__name__}")
        self._keys[key] = None
        setattr(self, key, _as_parameter(value))

    def __delitem__(self, key: str) -> None:
        del self._keys[key]
        delattr(self, key)

    def __len__(self) -> int:
        return len(self._keys)

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys)

    def __contains__(self, key: object) -> bool:
        return key in self._keys

    def keys(self) -> Iterable[str]:
        """The names."""
        return self._keys.keys()

    def items(self) -> Iterable[tuple[str, Any]]:
        """(name, parameter) pairs."""
        return [(k, self[k]) for k in self._keys]

    def values(self) -> Iterable[Any]:
        """The parameters."""
        return [self[k] for k in self._keys]

    def get(self, key: str, default: Any = None) -> Any:
        """The parameter `key`, or `default`."""
        return self[key] if key in self else default

    def pop(self, key: str) -> Any:
        """Remove the parameter `key` and return it."""
        value = self[key]
        del self[key]
        return value

    def clear(self) -> None:
        """Remove every parameter."""
        for key in list(self._keys):
            del self[key]

    def update(self, parameters: Mapping[str, Any] | Iterable[tuple[str, Any]]) -> None:
        """Add or replace parameters from a mapping or from (name, value) pairs."""
        for key, value in _items(parameters, "ParameterDict"):
            self[key] = value

    def extra_repr(self) -> str:
        """One line per entry: its dtype and size."""
        return "\n".join(_parameter_line(k, v) for k, v in self.items())

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        """ParameterDict has no forward."""
        raise NotImplementedError("ParameterDict is not callable")


__all__ = ["ModuleDict", "ParameterDict", "ParameterList"]
