"""Containers: `Sequential` (chains its children) and `ModuleList` (holds modules in a list)."""

from __future__ import annotations

import operator
import warnings
from collections.abc import Iterable, Iterator
from typing import Any, cast

from .. import functional as F  # noqa: N812 - PyTorch's alias
from .activation import ReLU
from .linear import Linear
from .module import Module


def _index(idx: int, size: int, kind: str) -> int:
    idx = operator.index(idx)
    if not -size <= idx < size:
        raise IndexError(f"index {idx} is out of range for {kind} of length {size}")
    return idx % size


def _children(module: Module) -> Iterator[Module]:
    """A container's children in order, typed as modules as PyTorch's containers type them:
    a slot set to None (`register_module(name, None)`) comes through as None, as it does there."""
    return cast(Iterator[Module], iter(module._modules.values()))


def _runs_own_forward(module: Any, cls: type) -> bool:
    """`module` is exactly a `cls` with its class's forward (no subclass, no patched instance)."""
    return type(module) is cls and "forward" not in module.__dict__


class Container(Module):
    """Deprecated: a Module holding the modules given by keyword (subclass Module instead)."""

    def __init__(self, **kwargs: Any) -> None:
        warnings.warn(
            "`nn.Container` is deprecated. All of its functionality is now implemented in "
            "`nn.Module`. Subclass that instead.",
            FutureWarning,
            stacklevel=2,
        )
        super().__init__()
        for key, value in kwargs.items():
            self.add_module(key, value)


class Sequential(Module):
    """Calls its modules in order, feeding each one's output to the next."""

    def __init__(self, *args: Any) -> None:
        super().__init__()
        if len(args) == 1 and isinstance(args[0], dict):
            for name, module in args[0].items():
                self.add_module(name, module)
        else:
            for i, module in enumerate(args):
                self.add_module(str(i), module)

    def __getitem__(self, idx: int | slice) -> Any:
        if isinstance(idx, slice):
            return Sequential(dict(list(self._modules.items())[idx]))
        return list(self._modules.values())[_index(idx, len(self), "Sequential")]

    def __setitem__(self, idx: int, module: Module) -> None:
        key = list(self._modules)[_index(idx, len(self), "Sequential")]
        self.add_module(key, module)

    def __delitem__(self, idx: int | slice) -> None:
        keys = list(self._modules)
        doomed = (
            keys[idx] if isinstance(idx, slice) else [keys[_index(idx, len(keys), "Sequential")]]
        )
        for key in doomed:
            del self._modules[key]

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return _children(self)

    def append(self, module: Module) -> Sequential:
        """Add a module at the end; returns self."""
        self.add_module(str(len(self)), module)
        return self

    def forward(self, input: Any) -> Any:
        """Each module applied in turn.

        A ReLU right after a Linear writes over the Linear's output instead of a new array: that
        output is a new array that only this loop holds (Linear keeps its input, not its output),
        so nothing can see the difference, and an MLP's forward saves a pass over fresh memory.
        """
        temporary = False  # whether `input` is a new result that only this loop refers to
        for module in _children(self):
            if temporary and _runs_own_forward(module, ReLU) and not module.inplace:
                input = F.relu_over_temporary(input)
            else:
                input = module(input)
            temporary = _runs_own_forward(module, Linear)
        return input


class ModuleList(Module):
    """A list of modules, registered so that their parameters are found."""

    def __init__(self, modules: Iterable[Module] | None = None) -> None:
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def __getitem__(self, idx: int | slice) -> Any:
        values = list(_children(self))
        if isinstance(idx, slice):
            return ModuleList(values[idx])
        return values[_index(idx, len(values), "ModuleList")]

    def __setitem__(self, idx: int, module: Module) -> None:
        self.add_module(str(_index(idx, len(self), "ModuleList")), module)

    def __delitem__(self, idx: int | slice) -> None:
        values = list(self._modules.values())
        if isinstance(idx, slice):
            del values[idx]
        else:
            del values[_index(idx, len(values), "ModuleList")]
        self._modules.clear()
        for i, module in enumerate(values):
            self.add_module(str(i), module)

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return _children(self)

    def __iadd__(self, modules: Iterable[Module]) -> ModuleList:
        return self.extend(modules)

    def append(self, module: Module) -> ModuleList:
        """Add a module at the end; returns self."""
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules: Iterable[Module]) -> ModuleList:
        """Add modules at the end; returns self."""
        if isinstance(modules, Module) and not isinstance(modules, (ModuleList, Sequential)):
            raise TypeError("ModuleList.extend should be called with an iterable of modules")
        for module in modules:
            self.append(module)
        return self

    def insert(self, index: int, module: Module) -> None:
        """Insert a module before `index`."""
        values = list(self._modules.values())
        values.insert(index, module)
        self._modules.clear()
        for i, item in enumerate(values):
            self.add_module(str(i), item)

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        """ModuleList has no forward: iterate it and call its modules."""
        raise NotImplementedError("ModuleList is not callable; iterate it and call its modules")
