"""mkdocs hook: the API reference documents each function under the name users call it by.

The reference is read off the imported package (mkdocstrings with griffe's inspection), and griffe
places a function where its `__module__` and `__qualname__` say it was defined. Many ops are made
by factories (`_compare.<locals>.compare` is `eq`, `ne`, `lt`, ...), and the Tensor methods are
installed on the class by `ops/__init__.py`: their definition sites name no public path, so
griffe would leave them out. Before the build inspects anything, this hook renames, in the build's
own process only, each such function after the public name it is exposed under.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import types
from typing import Any

# The namespaces of docs/api/*.md whose functions are made by factories or installed.
NAMESPACES = (
    "autograd_async",
    "autograd_async.ops",
    "autograd_async.nn.functional",
    "autograd_async.special",
    "autograd_async.fft",
    "autograd_async.linalg",
)


def _exposed(module: types.ModuleType) -> list[str]:
    names = getattr(module, "__all__", None)
    if names is None:
        names = [n for n in vars(module) if not n.startswith("_")]
    return list(names)


def _rename(fn: Any, module: str, qualname: str) -> None:
    """Name `fn`, and the functions it wraps (griffe reads the innermost), `module.qualname`."""
    while fn is not None:
        if _placed_elsewhere(fn, module, qualname):
            fn.__module__ = module
            fn.__qualname__ = qualname
            fn.__name__ = qualname.rpartition(".")[2]
        fn = getattr(fn, "__wrapped__", None)


def _placed_elsewhere(fn: Any, module: str, qualname: str) -> bool:
    """Whether griffe would look for `fn` at a path other than `module.qualname`, where it is
    exposed: the path its own `__module__` and `__qualname__` name does not lead to it."""
    if (fn.__module__, fn.__qualname__) == (module, qualname):
        return False
    found: Any = importlib.import_module(fn.__module__) if fn.__module__ else None
    for part in fn.__qualname__.split("."):
        found = getattr(found, part, None)
    return found is not fn


def _is_shadowed(namespace: str, name: str) -> bool:
    """Whether a package's public `name` is also one of its submodules (`ops.gather` is a
    function, and `ops/gather.py` a module): griffe sees the module under that name."""
    module = importlib.import_module(namespace)
    return hasattr(module, "__path__") and (
        importlib.util.find_spec(f"{namespace}.{name}") is not None
    )


def _shadowed(namespace: str) -> list[str]:
    """Directives documenting each shadowed function where its submodule defines it."""
    if importlib.util.find_spec(namespace) is None:
        return []  # a class (`autograd_async.Tensor`), not a module
    module = importlib.import_module(namespace)
    directives = []
    for name in _exposed(module):
        value = getattr(module, name, None)
        if not callable(value) or isinstance(value, types.ModuleType):
            continue
        if _is_shadowed(namespace, name):
            defined = getattr(importlib.import_module(f"{namespace}.{name}"), name, None)
            target = inspect.unwrap(value)
            if defined is not None and inspect.unwrap(defined) is target:
                directives.append(f"::: {namespace}.{name}.{name}")
            elif not _placed_elsewhere(target, target.__module__, target.__qualname__):
                directives.append(f"::: {target.__module__}.{target.__qualname__}")
    return directives


def on_page_markdown(markdown: str, **kwargs: Any) -> str:
    """After each `::: package` directive, one for each function its submodules shadow."""
    lines = []
    for line in markdown.splitlines():
        lines.append(line)
        if line.startswith("::: "):
            for directive in _shadowed(line.removeprefix("::: ").strip()):
                lines += ["", directive]
    return "\n".join(lines) + "\n"


def on_config(config: Any) -> Any:
    """Rename the factory-made functions and installed methods before the reference is read."""
    tensor_module = importlib.import_module("autograd_async.core.tensor")
    tensor = tensor_module.Tensor
    # The classes name `autograd_async.tensor` (their module's former path, kept as an alias for
    # errors and pickles); griffe reads files, so in the build they name the file they live in.
    tensor.__module__ = tensor_module.InferenceTensor.__module__ = tensor_module.__name__
    for name, value in list(vars(tensor).items()):
        if inspect.isfunction(value) and _placed_elsewhere(
            value, tensor_module.__name__, f"Tensor.{name}"
        ):
            _rename(value, tensor_module.__name__, f"Tensor.{name}")
    for namespace in NAMESPACES:
        module = importlib.import_module(namespace)
        for name in _exposed(module):
            value = getattr(module, name, None)
            if _is_shadowed(namespace, name):
                continue  # documented where its submodule defines it (see _shadowed)
            if inspect.isfunction(value) and _placed_elsewhere(value, namespace, name):
                _rename(value, namespace, name)
    return config
