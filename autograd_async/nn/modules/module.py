"""`Module`: the base of every layer. It keeps parameters, buffers and child modules in order.

Assigning a `Parameter` or a `Module` to an attribute registers it (buffers go through
`register_buffer`), so `parameters()`, `state_dict()`, `to()` and `train()` find it, in
registration order.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

from ...core.graph import RemovableHandle
from ...core.tensor import Tensor, as_dtype
from ...devices import Device, DeviceError, check_available, move_array
from ...grad_mode import no_grad
from ...optim.optimizer import reset_grad
from ..parameter import Buffer, Parameter, is_lazy
from .hooks import HookEntry, ModuleHooks, call_with_hooks


class IncompatibleKeys(NamedTuple):
    """What `load_state_dict(strict=False)` could not match."""

    missing_keys: list[str]
    unexpected_keys: list[str]


def _addindent(text: str, spaces: int) -> str:
    lines = text.split("\n")
    if len(lines) == 1:
        return text
    return lines[0] + "\n" + "\n".join(" " * spaces + line for line in lines[1:])


def _is_device(arg: Any) -> bool:
    if isinstance(arg, Device):
        return True
    try:
        Device(arg)
    except (DeviceError, TypeError):
        return False
    return True


def _parse_to(args: tuple, device: Any, dtype: Any) -> tuple[Device | None, Any]:
    for arg in args:
        if isinstance(arg, (str, Device)) and _is_device(arg):
            device = arg
        elif isinstance(arg, Tensor):
            device, dtype = arg.device, arg.dtype
        else:
            dtype = arg
    dev = None if device is None else Device(device)
    if dev is not None:
        check_available(dev)
    dtype = as_dtype(dtype)
    if dtype is not None and dtype.kind not in "fc":
        raise TypeError(f"nn.Module.to only accepts floating point or complex dtypes, got {dtype}")
    return dev, dtype


def _converted(t: Tensor, dev: Device | None, dtype: Any) -> Tensor:
    """`t`'s values on `dev` in `dtype` (floating tensors only change dtype), outside the graph."""
    data = t._data
    target = t.device if dev is None else dev
    if target is not t.device:
        data = move_array(data, t.device, target)
    if dtype is not None and data.dtype.kind in "fc" and data.dtype != dtype:
        data = data.astype(dtype)
    return Tensor._wrap(data, target)


def _copy_into(dst: Tensor, src: Tensor) -> None:
    """Copy `src`'s values into `dst`'s storage (any device, cast to dst's dtype); bump version."""
    data = src._data
    if src.device is not dst.device:
        data = move_array(data, src.device, dst.device)
    dst._data[...] = data
    dst._bump_version()


class Module:
    """Base class for all neural-network modules; subclasses define `forward`."""

    training: bool
    _parameters: dict[str, Parameter | None]
    _buffers: dict[str, Tensor | None]
    _non_persistent_buffers: set[str]
    _modules: dict[str, Module | None]

    def __init__(self) -> None:
        object.__setattr__(self, "training", True)
        object.__setattr__(self, "_parameters", {})
        object.__setattr__(self, "_buffers", {})
        object.__setattr__(self, "_non_persistent_buffers", set())
        object.__setattr__(self, "_modules", {})
        object.__setattr__(self, "_module_hooks", None)

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        """Compute the module's output; every subclass overrides it."""
        raise NotImplementedError(
            f'Module [{type(self).__name__}] is missing the required "forward" function'
        )

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        hooks = self.__dict__.get("_module_hooks")
        if hooks is None:
            return self.forward(*args, **kwargs)
        return call_with_hooks(self, hooks, args, kwargs)

    # ------------------------------------------------------------------ hooks
    def _add_hook(self, kind: str, entry: HookEntry, prepend: bool) -> RemovableHandle:
        hooks = self.__dict__.get("_module_hooks")
        if hooks is None:
            hooks = ModuleHooks()
            object.__setattr__(self, "_module_hooks", hooks)
        return hooks.add(kind, entry, prepend)

    def register_forward_pre_hook(
        self, hook: Callable, *, prepend: bool = False, with_kwargs: bool = False
    ) -> RemovableHandle:
        """`hook(module, args)` (or `(module, args, kwargs)`) before forward; may replace them."""
        return self._add_hook("forward_pre", HookEntry(hook, with_kwargs), prepend)

    def register_forward_hook(
        self,
        hook: Callable,
        *,
        prepend: bool = False,
        with_kwargs: bool = False,
        always_call: bool = False,
    ) -> RemovableHandle:
        """`hook(module, args, output)` after forward; may replace the output."""
        return self._add_hook("forward", HookEntry(hook, with_kwargs, always_call), prepend)

    def register_load_state_dict_pre_hook(self, hook: Callable) -> RemovableHandle:
        """`hook(module, state_dict, prefix, local_metadata, strict, missing_keys,
        unexpected_keys, error_msgs)` before `load_state_dict` reads this module's entries."""
        hooks = self.__dict__.get("_load_state_dict_pre_hooks")
        if hooks is None:
            hooks = []
            object.__setattr__(self, "_load_state_dict_pre_hooks", hooks)
        hooks.append(hook)
        return RemovableHandle(hooks, hook)

    def register_full_backward_pre_hook(
        self, hook: Callable, prepend: bool = False
    ) -> RemovableHandle:
        """`hook(module, grad_output)` when the outputs' gradients arrive; may replace them."""
        return self._add_hook("backward_pre", HookEntry(hook), prepend)

    def register_full_backward_hook(self, hook: Callable, prepend: bool = False) -> RemovableHandle:
        """`hook(module, grad_input, grad_output)` once the inputs' gradients are computed."""
        return self._add_hook("backward", HookEntry(hook), prepend)

    # ----------------------------------------------------------- registration
    def _check_ready(self, what: str) -> None:
        if "_parameters" not in self.__dict__:
            raise AttributeError(f"cannot assign {what} before Module.__init__() call")

    def register_parameter(self, name: str, param: Parameter | None) -> None:
        """Register `param` (or None, a placeholder) as the parameter `name`."""
        self._check_ready("parameter")
        self._check_name(name, "parameter", self._parameters)
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(
                f"cannot assign '{type(param).__name__}' object to parameter '{name}' "
                "(nn.Parameter or None required)"
            )
        if param is not None and param.grad_fn is not None:
            raise ValueError(
                f"Cannot assign non-leaf Tensor to parameter '{name}'. Model parameters must be "
                "created explicitly; use nn.Parameter(tensor.detach()) to make one from a result."
            )
        self._parameters[name] = param

    def register_buffer(self, name: str, tensor: Tensor | None, persistent: bool = True) -> None:
        """Register a non-parameter state tensor (in state_dict when persistent)."""
        self._check_ready("buffer")
        self._check_name(name, "buffer", self._buffers)
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(
                f"cannot assign '{type(tensor).__name__}' object to buffer '{name}' "
                "(Tensor or None required)"
            )
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers.discard(name)
        else:
            self._non_persistent_buffers.add(name)

    def add_module(self, name: str, module: Module | None) -> None:
        """Register `module` as the child `name`."""
        self._check_ready("child module")
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{type(module).__name__} is not a Module subclass")
        self._check_name(name, "module", self._modules)
        self._modules[name] = module

    register_module = add_module

    def _check_name(self, name: str, kind: str, own: dict) -> None:
        if not isinstance(name, str):
            raise TypeError(f"{kind} name should be a string, got {type(name).__name__}")
        if name == "" or "." in name:
            raise KeyError(f'{kind} name can\'t be empty or contain ".", got {name!r}')
        if hasattr(self, name) and name not in own:
            raise KeyError(f"attribute '{name}' already exists")

    def __setattr__(self, name: str, value: Any) -> None:
        params = self.__dict__.get("_parameters")
        if isinstance(value, Parameter):
            self._check_ready("parameters")
            self._forget(name)
            self.register_parameter(name, value)
        elif isinstance(value, Buffer):
            self._check_ready("buffer")
            self._forget(name)
            self.register_buffer(name, value, persistent=value.persistent)
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(
                    f"cannot assign '{type(value).__name__}' as parameter '{name}' "
                    "(nn.Parameter or None expected)"
                )
            params[name] = None
        elif isinstance(value, Module):
            self._check_ready("child module")
            self._forget(name)
            self._modules[name] = value
        elif name in self.__dict__.get("_modules", {}):
            if value is not None:
                raise TypeError(
                    f"cannot assign '{type(value).__name__}' as child module '{name}' "
                    "(nn.Module or None expected)"
                )
            self._modules[name] = None
        elif name in self.__dict__.get("_buffers", {}):
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(
                    f"cannot assign '{type(value).__name__}' as buffer '{name}' "
                    "(Tensor or None expected)"
                )
            self._buffers[name] = value
        else:
            object.__setattr__(self, name, value)

    def _forget(self, name: str) -> None:
        self.__dict__.pop(name, None)
        for store in (self._parameters, self._buffers, self._modules):
            store.pop(name, None)
        self._non_persistent_buffers.discard(name)

    def __getattr__(self, name: str) -> Any:
        # Only called when normal lookup fails: look in the registries.
        d = self.__dict__
        for store in ("_parameters", "_buffers", "_modules"):
            found = d.get(store)
            if found is not None and name in found:
                return found[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name: str) -> None:
        for store in (self._parameters, self._buffers, self._modules):
            if name in store:
                del store[name]
                self._non_persistent_buffers.discard(name)
                return
        object.__delattr__(self, name)

    def __dir__(self) -> list[str]:
        names = set(super().__dir__())
        names.update(self._parameters, self._buffers, self._modules)
        return sorted(names)

    # ------------------------------------------------------------- traversal
    def named_modules(
        self, memo: set | None = None, prefix: str = "", remove_duplicate: bool = True
    ) -> Iterator[tuple[str, Module]]:
        """This module and all below it, depth first, with dotted names ('' for this one)."""
        stack: list[tuple[str, Module]] = [(prefix, self)]
        seen = memo if memo is not None else set()
        while stack:
            name, module = stack.pop()
            if remove_duplicate:
                if id(module) in seen:
                    continue
                seen.add(id(module))
            yield name, module
            children = [
                (name + ("." if name else "") + child_name, child)
                for child_name, child in module._modules.items()
                if child is not None
            ]
            stack.extend(reversed(children))

    def modules(self) -> Iterator[Module]:
        """This module and all below it."""
        for _, module in self.named_modules():
            yield module

    def named_children(self) -> Iterator[tuple[str, Module]]:
        """The direct children with their names (each module once)."""
        seen: set[int] = set()
        for name, module in self._modules.items():
            if module is not None and id(module) not in seen:
                seen.add(id(module))
                yield name, module

    def children(self) -> Iterator[Module]:
        """The direct children."""
        for _, module in self.named_children():
            yield module

    def _named_members(
        self, store: str, prefix: str, recurse: bool, remove_duplicate: bool = True
    ) -> Iterator[tuple[str, Tensor]]:
        seen: set[int] = set()
        modules = (
            self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate)
            if recurse
            else [(prefix, self)]
        )
        for module_prefix, module in modules:
            for name, value in getattr(module, store).items():
                if value is None or (remove_duplicate and id(value) in seen):
                    continue
                seen.add(id(value))
                yield module_prefix + ("." if module_prefix else "") + name, value

    def named_parameters(
        self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True
    ) -> Iterator[tuple[str, Parameter]]:
        """Parameters with dotted names, in registration order (shared ones once)."""
        yield from self._named_members("_parameters", prefix, recurse, remove_duplicate)  # type: ignore[misc]

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        """All parameters, in registration order."""
        for _, param in self.named_parameters(recurse=recurse):
            yield param

    def named_buffers(
        self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True
    ) -> Iterator[tuple[str, Tensor]]:
        """Buffers with dotted names."""
        yield from self._named_members("_buffers", prefix, recurse, remove_duplicate)

    def buffers(self, recurse: bool = True) -> Iterator[Tensor]:
        """All buffers."""
        for _, buf in self.named_buffers(recurse=recurse):
            yield buf

    def get_submodule(self, target: str) -> Module:
        """The module at a dotted path ('' is this one)."""
        module: Module = self
        walked: list[str] = []
        for item in target.split(".") if target else []:
            child = module._modules.get(item)
            if child is None:
                where = ".".join(walked) or type(self).__name__
                raise AttributeError(f"{where} has no submodule `{item}`")
            module = child
            walked.append(item)
        return module

    def get_parameter(self, target: str) -> Parameter:
        """The parameter at a dotted path."""
        module_path, _, name = target.rpartition(".")
        module = self.get_submodule(module_path)
        param = module._parameters.get(name)
        if param is None:
            raise AttributeError(f"{type(module).__name__} has no parameter `{name}`")
        return param

    def apply(self, fn: Callable[[Module], Any]) -> Module:
        """Call `fn` on every submodule (children first) and on this module; returns self."""
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    # ------------------------------------------------------------------ modes
    def train(self, mode: bool = True) -> Module:
        """Set training mode (dropout active) on this module and all below; returns self."""
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        object.__setattr__(self, "training", mode)
        for module in self.children():
            module.train(mode)
        return self

    def eval(self) -> Module:
        """Set evaluation mode; returns self."""
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> Module:
        """Set requires_grad on every parameter; returns self."""
        for param in self.parameters():
            param.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the parameters' gradients: to None (default), or to zeros."""
        for param in self.parameters():
            reset_grad(param, set_to_none)

    # ------------------------------------------------------- device and dtype
    def to(self, *args: Any, device: Any = None, dtype: Any = None) -> Module:
        """Move parameters and buffers to a device and/or floating dtype, in place; returns self.

        Parameters keep their identity: their storage is replaced through the `data` setter.
        """
        dev, dtype = _parse_to(args, device, dtype)
        if dev is None and dtype is None:
            return self
        for module in self.modules():
            for param in module._parameters.values():
                if param is None:
                    continue
                moved = _converted(param, dev, dtype)
                if moved._data is param._data:
                    continue
                param.data = moved
                param._grad_accumulator = None  # a fresh accumulator records the new device
                if param.grad is not None:
                    param.grad = _converted(param.grad, dev, dtype)
            for name, buf in module._buffers.items():
                if buf is not None:
                    moved = _converted(buf, dev, dtype)
                    if moved._data is not buf._data:
                        moved.requires_grad_(buf.requires_grad)
                        module._buffers[name] = moved
        return self

    def cpu(self) -> Module:
        """Move everything to the cpu; returns self."""
        return self.to("cpu")

    def cuda(self, device: int | None = None) -> Module:
        """Move everything to a CUDA GPU; returns self."""
        return self.to(Device("cuda", device or 0))

    def float(self) -> Module:
        """Cast floating parameters and buffers to float32; returns self."""
        return self.to(dtype="float32")

    def double(self) -> Module:
        """Cast floating parameters and buffers to float64; returns self."""
        return self.to(dtype="float64")

    def half(self) -> Module:
        """Cast floating parameters and buffers to float16; returns self."""
        return self.to(dtype="float16")

    # ------------------------------------------------------------- state dict
    def state_dict(
        self, destination: dict | None = None, prefix: str = "", keep_vars: bool = False
    ) -> dict[str, Tensor]:
        """Parameters and persistent buffers by dotted name (detached unless keep_vars), in an
        OrderedDict as PyTorch's."""
        out: dict[str, Tensor] = OrderedDict() if destination is None else destination
        modules = self.named_modules(prefix=prefix.rstrip("."), remove_duplicate=False)
        for module_prefix, module in modules:
            dot = module_prefix + ("." if module_prefix else "")
            for name, param in module._parameters.items():
                if param is not None:
                    out[dot + name] = param if keep_vars else param.detach()
            for name, buf in module._buffers.items():
                if buf is not None and name not in module._non_persistent_buffers:
                    out[dot + name] = buf if keep_vars else buf.detach()
        return out

    def load_state_dict(self, state_dict: dict[str, Any], strict: bool = True) -> IncompatibleKeys:
        """Copy values into parameters and buffers in place; strict requires an exact key match."""
        if not isinstance(state_dict, dict):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        for prefix, module in self.named_modules(remove_duplicate=False):
            for hook in list(module.__dict__.get("_load_state_dict_pre_hooks", ())):
                hook(module, state_dict, prefix + "." if prefix else "", {}, strict, [], [], [])
        own = self.state_dict(keep_vars=True)
        missing = [key for key in own if key not in state_dict]
        unexpected = [key for key in state_dict if key not in own]
        errors: list[str] = []
        for key, target in own.items():
            if key not in state_dict:
                continue
            value = state_dict[key]
            if is_lazy(target):  # still uninitialised: a lazy module's hook found no shape
                continue
            if not isinstance(value, Tensor):
                errors.append(
                    f'While copying the parameter named "{key}", expected Tensor from '
                    f"checkpoint but received {type(value)}"
                )
            elif tuple(value.shape) != tuple(target.shape):
                errors.append(
                    f"size mismatch for {key}: copying a param with shape {tuple(value.shape)} "
                    f"from checkpoint, the shape in current model is {tuple(target.shape)}."
                )
        if strict:
            if unexpected:
                keys = ", ".join(f'"{k}"' for k in unexpected)
                errors.insert(0, f"Unexpected key(s) in state_dict: {keys}. ")
            if missing:
                keys = ", ".join(f'"{k}"' for k in missing)
                errors.insert(0, f"Missing key(s) in state_dict: {keys}. ")
        if errors:
            raise RuntimeError(
                f"Error(s) in loading state_dict for {type(self).__name__}:\n\t"
                + "\n\t".join(errors)
            )
        with no_grad():
            for key, target in own.items():
                if key in state_dict and not is_lazy(target):
                    _copy_into(target, state_dict[key])
        return IncompatibleKeys(missing, unexpected)

    # ------------------------------------------------------------------- repr
    def extra_repr(self) -> str:
        """The module's own settings, shown inside the parentheses of its repr."""
        return ""

    def __repr__(self) -> str:
        extra = self.extra_repr()
        extra_lines = extra.split("\n") if extra else []
        child_lines = [
            f"({name}): " + _addindent(repr(module), 2) for name, module in self._modules.items()
        ]
        text = type(self).__name__ + "("
        if len(extra_lines) == 1 and not child_lines:
            text += extra_lines[0]
        elif extra_lines or child_lines:
            text += "\n  " + "\n  ".join(extra_lines + child_lines) + "\n"
        return text + ")"


__all__ = ["IncompatibleKeys", "Module"]
