"""What a worker serves: functions, module classes and optimizer classes, by name.

Only names registered here can be called or built by a peer; nothing sent over the wire is ever
imported or evaluated. The operator extends the allow-list with `--load MODULE`, whose import
runs `register_function` / `register_module_class` calls:

    from autograd_async.workers.registry import register_function

    @register_function
    def scaled_tanh(x, *, scale=1.0):
        return x.tanh() * scale

Functions take tensors positionally and simple values by keyword, and return a tensor, a tuple
of tensors (and simple values), or a simple value. They may be `async def`, and may call the
worker's peers through `current_worker().peers` (a `Client`), under the caller's context.
A function whose outputs can be sized from its inputs may say how (`output_nbytes=`, see
`workers/sizing.py`): the worker then refuses a call that would not fit its memory budget before
running it. Whatever it allocates is counted while it runs in any case (`workers/memory.py`).
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable
from typing import Any, TypeVar

import autograd_async as ag
from autograd_async import nn, optim

from .sizing import OutputSize, broadcast_nbytes, elementwise_nbytes, matmul_nbytes

__all__ = [
    "DEFAULT_REGISTRY",
    "Registry",
    "UnknownNameError",
    "current_worker",
    "register_function",
    "register_module_class",
    "register_optimizer_class",
]

F = TypeVar("F", bound=Callable[..., Any])

# The worker serving the current request (set by the server around each handler).
worker_var: contextvars.ContextVar[Any] = contextvars.ContextVar("workers_current", default=None)


def current_worker() -> Any:
    """The `WorkerServer` running the current call (its `name`, `devices`, `peers` client)."""
    server = worker_var.get()
    if server is None:
        raise RuntimeError("current_worker() is only available while a worker serves a call")
    return server


class UnknownNameError(LookupError):
    """A function, module class or optimizer class that the worker does not serve."""

    def __str__(self) -> str:  # not KeyError-style quoting
        return str(self.args[0])


class Registry:
    """Three allow-lists by name: functions, module classes (or builders), optimizer classes."""

    def __init__(self) -> None:
        self.functions: dict[str, Callable[..., Any]] = {}
        self.module_classes: dict[str, Callable[..., nn.Module]] = {}
        self.optimizer_classes: dict[str, Callable[..., optim.Optimizer]] = {}
        self.output_sizes: dict[str, OutputSize] = {}  # by function name

    @staticmethod
    def _add(table: dict, kind: str, obj: Any, name: str | None) -> None:
        key = name or getattr(obj, "__name__", None)
        if not isinstance(key, str) or not key:
            raise ValueError(f"a {kind} needs a name")
        if not callable(obj):
            raise TypeError(f"{kind} {key!r} must be callable, got {type(obj).__name__}")
        table[key] = obj

    def register_function(
        self,
        fn: F | None = None,
        *,
        name: str | None = None,
        output_nbytes: OutputSize | None = None,
    ) -> Any:
        """Serve `fn` under `name` (default: its own); usable as a decorator. `output_nbytes`
        (args, kwargs) -> bytes sizes its outputs before it runs."""
        if fn is None:
            return lambda f: self.register_function(f, name=name, output_nbytes=output_nbytes)
        self._add(self.functions, "function", fn, name)
        key = name or fn.__name__
        if output_nbytes is None:
            self.output_sizes.pop(key, None)
        else:
            self.output_sizes[key] = output_nbytes
        return fn

    def register_module_class(self, cls: F | None = None, *, name: str | None = None) -> Any:
        """Allow peers to build `cls(**kwargs)` (an nn.Module) under `name`; a decorator too."""
        if cls is None:
            return lambda c: self.register_module_class(c, name=name)
        self._add(self.module_classes, "module class", cls, name)
        return cls

    def register_optimizer_class(self, cls: F | None = None, *, name: str | None = None) -> Any:
        """Allow `DistributedOptimizer` to build `cls(params, **kwargs)` under `name`."""
        if cls is None:
            return lambda c: self.register_optimizer_class(c, name=name)
        self._add(self.optimizer_classes, "optimizer class", cls, name)
        return cls

    def function(self, name: str, worker: str) -> Callable[..., Any]:
        """The function registered as `name`; UnknownNameError lists the registered ones."""
        return self._lookup(self.functions, "function", name, worker)

    def output_nbytes(self, name: str, args: list[Any], kwargs: dict[str, Any]) -> int:
        """Bytes of the outputs of function `name` on these arguments, 0 when unknown."""
        size = self.output_sizes.get(name)
        if size is None:
            return 0
        try:
            return int(size(args, kwargs))
        except (TypeError, ValueError, AttributeError, IndexError):
            return 0  # arguments it cannot size: the function raises its own error

    def module_class(self, name: str, worker: str) -> Callable[..., nn.Module]:
        """The module class registered as `name`."""
        return self._lookup(self.module_classes, "module class", name, worker)

    def optimizer_class(self, name: str, worker: str) -> Callable[..., optim.Optimizer]:
        """The optimizer class registered as `name`."""
        return self._lookup(self.optimizer_classes, "optimizer class", name, worker)

    @staticmethod
    def _lookup(table: dict, kind: str, name: str, worker: str) -> Any:
        found = table.get(name)
        if found is None:
            raise UnknownNameError(
                f"worker {worker!r} has no {kind} {name!r}; registered: {', '.join(sorted(table))}"
            )
        return found


DEFAULT_REGISTRY = Registry()
register_function = DEFAULT_REGISTRY.register_function
register_module_class = DEFAULT_REGISTRY.register_module_class
register_optimizer_class = DEFAULT_REGISTRY.register_optimizer_class


# ------------------------------------------------------------------------ defaults
_DEFAULT_FUNCTIONS = (
    "add",
    "sub",
    "mul",
    "div",
    "matmul",
    "tanh",
    "relu",
    "sigmoid",
    "exp",
    "neg",
    "sum",
    "mean",
    "clone",
    "reshape",
    "square",
)
_DEFAULT_OUTPUT_SIZES: dict[str, OutputSize] = {
    **dict.fromkeys(("add", "sub", "mul", "div"), broadcast_nbytes),
    **dict.fromkeys(
        ("tanh", "relu", "sigmoid", "exp", "neg", "clone", "square"), elementwise_nbytes
    ),
    "matmul": matmul_nbytes,
}
_DEFAULT_MODULES = (
    "Linear",
    "Identity",
    "ReLU",
    "Tanh",
    "GELU",
    "Sigmoid",
    "Softmax",
    "LogSoftmax",
    "LayerNorm",
    "Embedding",
    "Dropout",
    "Flatten",
)
_DEFAULT_OPTIMIZERS = ("SGD", "Adam", "AdamW")


def _sequential(*, layers: list, device: Any = None, dtype: Any = None) -> nn.Module:
    """`Sequential` from a list of `[class_name, kwargs]` specs, each from the allow-list."""
    worker = current_worker()
    modules = []
    for i, spec in enumerate(layers):
        if not (
            isinstance(spec, list)
            and len(spec) == 2
            and isinstance(spec[0], str)
            and isinstance(spec[1], dict)
        ):
            raise TypeError(f"Sequential layer {i} must be [class_name, kwargs], got {spec!r}")
        name, kwargs = spec
        if name == "Sequential":
            raise ValueError("Sequential layers cannot nest another Sequential")
        modules.append(worker.build_module(name, kwargs, device=device, dtype=dtype)[0])
    return nn.Sequential(*modules)


def install_defaults(registry: Registry) -> None:
    """Register the default functions, nn layers and optimizers in `registry`."""
    for name in _DEFAULT_FUNCTIONS:
        registry.register_function(
            getattr(ag, name), name=name, output_nbytes=_DEFAULT_OUTPUT_SIZES.get(name)
        )
    for name in _DEFAULT_MODULES:
        registry.register_module_class(getattr(nn, name), name=name)
    registry.register_module_class(_sequential, name="Sequential")
    for name in _DEFAULT_OPTIMIZERS:
        registry.register_optimizer_class(getattr(optim, name), name=name)


install_defaults(DEFAULT_REGISTRY)
