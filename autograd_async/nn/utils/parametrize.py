"""Parametrizations (PyTorch's `torch.nn.utils.parametrize`): a module's tensor computed on each
access from the tensors it is parametrized by.

`register_parametrization(module, "weight", P())` moves `module.weight` to
`module.parametrizations.weight.original` (or `original0`, `original1`, ... when `P` has a
`right_inverse` that returns several tensors) and makes `module.weight` a property returning
`P()(original)`. As in PyTorch, the module's class is swapped for a subclass made for it that holds
the property, so other instances of the class are untouched; removing the last parametrization
restores the class.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from contextvars import ContextVar
from typing import Any

from ...core.tensor import Tensor
from ...grad_mode import no_grad
from ..modules.container import ModuleList
from ..modules.containers_dict import ModuleDict
from ..modules.module import Module
from ..parameter import Parameter

__all__ = [
    "ParametrizationList",
    "cached",
    "is_parametrized",
    "register_parametrization",
    "remove_parametrizations",
    "type_before_parametrizations",
]

# Inside `cached()`: the parametrized values computed so far, by (module id, tensor name).
_cache: ContextVar[dict[tuple[int, str], Tensor] | None] = ContextVar(
    "parametrize_cache", default=None
)


@contextlib.contextmanager
def cached() -> Iterator[None]:
    """Compute each parametrized tensor once inside the block and reuse it (as PyTorch's)."""
    token = _cache.set({} if _cache.get() is None else _cache.get())
    try:
        yield
    finally:
        _cache.reset(token)


def _register_original(owner: Module, name: str, value: Tensor, as_parameter: bool) -> None:
    if as_parameter:
        owner.register_parameter(
            name, value if isinstance(value, Parameter) else Parameter(value, value.requires_grad)
        )
    else:
        owner.register_buffer(name, value)


class ParametrizationList(ModuleList):
    """The parametrizations of one tensor, applied in order, and the original tensor(s)."""

    def __init__(self, modules: Sequence[Module], original: Tensor, unsafe: bool = False) -> None:
        if len(modules) == 0:
            raise ValueError("ParametrizationList requires one or more modules.")
        super().__init__(modules)
        self.unsafe = unsafe
        as_parameter = isinstance(original, Parameter)
        with no_grad():
            new = original
            for module in reversed(list(self)):
                if hasattr(module, "right_inverse"):
                    new = module.right_inverse(new)
        if isinstance(new, Tensor):
            self.is_tensor, self.ntensors = True, 1
            if not unsafe:
                _check_same_kind(new, original, "right_inverse")
            with no_grad():
                original.set_(new)  # the same object stays: optimizers keep holding it
            _register_original(self, "original", original, as_parameter)
        elif isinstance(new, Sequence) and all(isinstance(t, Tensor) for t in new):
            self.is_tensor, self.ntensors = False, len(new)
            for i, tensor in enumerate(new):
                copy = tensor.detach().clone().requires_grad_(original.requires_grad)
                _register_original(self, f"original{i}", copy, as_parameter)
        else:
            raise ValueError(
                "'right_inverse' must return a Tensor or a Sequence of tensors (list, tuple...). "
                f"Got {type(new).__name__}"
            )
        if not unsafe:
            _check_same_kind(self(), original, "the parametrization")

    def originals(self) -> tuple[Tensor, ...]:
        """The tensor(s) the parametrized one is computed from."""
        if self.is_tensor:
            return (self.original,)
        return tuple(getattr(self, f"original{i}") for i in range(self.ntensors))

    def right_inverse(self, value: Tensor) -> None:
        """Set the originals so that the parametrized tensor becomes `value`."""
        with no_grad():
            for module in reversed(list(self)):
                if not hasattr(module, "right_inverse"):
                    raise RuntimeError(
                        f"parametrization {type(module).__name__} does not implement right_inverse."
                    )
                value = module.right_inverse(value)
            if self.is_tensor:
                if not isinstance(value, Tensor):
                    raise ValueError(f"`right_inverse` should return a tensor. Got {type(value)}")
                original = self.originals()[0]
                if not self.unsafe:
                    _check_same_kind(value, original, "right_inverse")
                original.set_(value)
            else:
                if not isinstance(value, Sequence) or len(value) != self.ntensors:
                    raise ValueError(
                        f"'right_inverse' must return a sequence of tensors of length "
                        f"{self.ntensors}. Got {type(value).__name__}"
                    )
                for original, tensor in zip(self.originals(), value):
                    original.set_(tensor)

    def forward(self) -> Tensor:
        """The parametrized tensor, computed from the originals."""
        modules = list(self)
        result = modules[0](*self.originals())
        for module in modules[1:]:
            result = module(result)
        return result


def _check_same_kind(new: Any, original: Tensor, source: str) -> None:
    if not isinstance(new, Tensor):
        raise ValueError(f"{source} must return a tensor. Got {type(new).__name__}.")
    if new.dtype != original.dtype:
        raise ValueError(
            f"Registering a parametrization may not change the dtype of the tensor, unless "
            f"`unsafe` flag is enabled.\nunparametrized dtype: {original.dtype}\n"
            f"{source} dtype: {new.dtype}"
        )
    if new.shape != original.shape:
        raise ValueError(
            f"Registering a parametrization may not change the shape of the tensor, unless "
            f"`unsafe` flag is enabled.\nunparametrized shape: {original.shape}\n"
            f"{source} shape: {new.shape}"
        )


def _parametrized_value(module: Module, name: str) -> Tensor:
    parametrization = module.parametrizations[name]
    cache = _cache.get()
    if cache is None:
        return parametrization()
    key = (id(module), name)
    if key not in cache:
        cache[key] = parametrization()
    return cache[key]


def _inject_class(module: Module) -> None:
    cls = module.__class__
    module.__class__ = type(f"Parametrized{cls.__name__}", (cls,), {"__module__": cls.__module__})


def _inject_property(module: Module, name: str) -> None:
    def getter(self: Module) -> Tensor:
        return _parametrized_value(self, name)

    def setter(self: Module, value: Tensor) -> None:
        self.parametrizations[name].right_inverse(value)

    setattr(module.__class__, name, property(getter, setter))


def is_parametrized(module: Module, tensor_name: str | None = None) -> bool:
    """Whether `module` has parametrizations (on `tensor_name`, when given)."""
    parametrizations = module.__dict__.get("_modules", {}).get("parametrizations")
    if not isinstance(parametrizations, ModuleDict):
        return False
    if tensor_name is None:
        return len(parametrizations) > 0
    return tensor_name in parametrizations


def type_before_parametrizations(module: Module) -> type:
    """The module's class as it was before any parametrization was registered."""
    if is_parametrized(module):
        return module.__class__.__bases__[0]
    return type(module)


def register_parametrization(
    module: Module, tensor_name: str, parametrization: Module, *, unsafe: bool = False
) -> Module:
    """Parametrize `module.<tensor_name>` by `parametrization` (appended to any it has)."""
    parametrization.train(module.training)
    if is_parametrized(module, tensor_name):
        existing = module.parametrizations[tensor_name]
        if not (unsafe or existing.unsafe):
            current = getattr(module, tensor_name)
            _check_same_kind(parametrization(current), current, "the parametrization")
        existing.append(parametrization)
        existing.unsafe |= unsafe
        return module
    if tensor_name in module._parameters or tensor_name in module._buffers:
        original = getattr(module, tensor_name)
        if original is None:
            raise ValueError(f"Module '{module}' has '{tensor_name}' set to None")
        parametrizations = ParametrizationList([parametrization], original, unsafe=unsafe)
        delattr(module, tensor_name)
        if not is_parametrized(module):
            _inject_class(module)
            module.parametrizations = ModuleDict()
        module.parametrizations[tensor_name] = parametrizations
        _inject_property(module, tensor_name)
        return module
    raise ValueError(
        f"Module '{module}' does not have a parameter, a buffer, or a parametrized element with "
        f"name '{tensor_name}'"
    )


def remove_parametrizations(
    module: Module, tensor_name: str, leave_parametrized: bool = True
) -> Module:
    """Undo `register_parametrization` on `tensor_name`: keep the current parametrized value
    (`leave_parametrized=True`) or the original tensor."""
    if not is_parametrized(module, tensor_name):
        raise ValueError(f"Module {module} does not have a parametrization on {tensor_name}")
    parametrizations = module.parametrizations[tensor_name]
    if parametrizations.is_tensor:
        original = parametrizations.original
        if leave_parametrized:
            with no_grad():
                value = getattr(module, tensor_name)
            with no_grad():
                if value.dtype == original.dtype:
                    original.set_(value)
                else:
                    original = Parameter(value, original.requires_grad)
    else:
        if not leave_parametrized:
            raise ValueError(
                "Cannot leave unparametrized (`leave_parametrized=False`) a tensor that is "
                "parametrized in terms of a sequence of tensors."
            )
        with no_grad():
            value = getattr(module, tensor_name)
        as_parameter = isinstance(parametrizations.original0, Parameter)
        original = Parameter(value, value.requires_grad) if as_parameter else value
    delattr(module.__class__, tensor_name)
    del module.parametrizations[tensor_name]
    if isinstance(original, Parameter):
        module.register_parameter(tensor_name, original)
    else:
        module.register_buffer(tensor_name, original)
    if not is_parametrized(module):
        delattr(module, "parametrizations")
        module.__class__ = module.__class__.__bases__[0]
    return module
