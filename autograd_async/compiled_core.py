"""Which core runs: extension modules that Cython compiled from the core's `.py` files, or the files.

The `.py` files stay the source of truth: a build (`pip install -e .`, a wheel) compiles the
modules in `COMPILED_MODULES` unchanged when a C compiler is present and records a hash of each
source beside them (`MANIFEST_NAME`). At import, before any of those modules is loaded, this module
decides which to run and, when it is the `.py` files, puts a finder first on `sys.meta_path` that
loads them even though extension modules stand next to them:

- `AUTOGRAD_ASYNC_PURE_PYTHON=1` asks for the `.py` files;
- a build whose recorded hashes no longer match the sources (an editable install whose `.py`
  files changed after the build) is stale: the `.py` files run, with a `StaleCompiledCoreWarning`,
  so old compiled code never runs in place of the source in front of the user.

This module imports nothing of the package, so the package can import it first.
`python -m autograd_async doctor`, `aa.compiled`, tests and bug reports all ask this one place.
"""

from __future__ import annotations

import hashlib
import importlib.abc
import importlib.machinery
import importlib.util
import inspect
import json
import os
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any, TypeGuard

__all__ = [
    "COMPILED_MODULES",
    "MANIFEST_NAME",
    "PURE_PYTHON_VARIABLE",
    "StaleCompiledCoreWarning",
    "active_compiled_core",
    "describe_compiled_core",
    "is_source_function",
    "pure_python_reason",
    "source_hashes",
]

#: The hot path of recording and backward: the modules a build compiles.
COMPILED_MODULES = (
    "autograd_async.core.graph",
    "autograd_async.core.history",
    "autograd_async.core.recording",
    "autograd_async.core.op",
    "autograd_async.core.saved",
    "autograd_async.core.tensor",
    "autograd_async.graph_task",
    "autograd_async.node_evaluation",
    "autograd_async.engine.device_worker",
    "autograd_async.engine.handoff",
)

#: Written by the build next to the package's `__init__.py`: the compiler and each source's hash.
MANIFEST_NAME = "_compiled_core.json"

#: Set to 1 (at build or at run time) to build or run the pure-Python core.
PURE_PYTHON_VARIABLE = "AUTOGRAD_ASYNC_PURE_PYTHON"

_PACKAGE_DIR = Path(__file__).resolve().parent


class StaleCompiledCoreWarning(RuntimeWarning):
    """The compiled core was built from older sources; the `.py` files run instead."""


def is_source_function(value: object) -> TypeGuard[Callable[..., Any]]:
    """A function written in the package's Python source, run as is or compiled by Cython (whose
    functions are not `FunctionType`, so `inspect.isfunction` says no, but keep `__code__`)."""
    return inspect.isfunction(value) or (
        inspect.isroutine(value) and not inspect.isbuiltin(value) and hasattr(value, "__code__")
    )


def source_path(module: str) -> Path:
    """The `.py` file of one of `COMPILED_MODULES`."""
    parts = module.split(".")[1:]
    return _PACKAGE_DIR.joinpath(*parts[:-1], parts[-1] + ".py")


def source_hashes(package_dir: Path | None = None) -> dict[str, str]:
    """SHA-256 of each compiled module's source (with its `.pxd`, if any), as the build records
    it in the manifest."""
    root = _PACKAGE_DIR if package_dir is None else package_dir
    hashes = {}
    for module in COMPILED_MODULES:
        parts = module.split(".")[1:]
        path = root.joinpath(*parts[:-1], parts[-1] + ".py")
        digest = hashlib.sha256(path.read_bytes())
        declarations = path.with_suffix(".pxd")
        if declarations.exists():  # Cython's declarations compile with it: a change makes it stale
            digest.update(declarations.read_bytes())
        hashes[module] = digest.hexdigest()
    return hashes


def _extension_path(module: str) -> Path | None:
    """The extension module built for this interpreter next to the module's `.py`, if any."""
    source = source_path(module)
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        candidate = source.with_name(source.stem + suffix)
        if candidate.exists():
            return candidate
    return None


def _wants_pure_python() -> bool:
    return os.environ.get(PURE_PYTHON_VARIABLE, "").strip().lower() in {"1", "true", "yes", "on"}


def _read_manifest() -> dict | None:
    try:
        return json.loads((_PACKAGE_DIR / MANIFEST_NAME).read_text())
    except (OSError, ValueError):
        return None


def _stale_modules(manifest: dict) -> list[str]:
    """The compiled modules whose source changed since the build (or that the build lacks)."""
    recorded = manifest.get("sources", {})
    current = source_hashes()
    return [module for module in COMPILED_MODULES if recorded.get(module) != current[module]]


class _SourceFinder(importlib.abc.MetaPathFinder):
    """Loads the compiled modules from their `.py` files, ahead of the extensions beside them."""

    def find_spec(
        self, fullname: str, path: object = None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in COMPILED_MODULES:
            return None
        return importlib.util.spec_from_file_location(fullname, source_path(fullname))


def _decide() -> tuple[str | None, str]:
    """(name of the compiled core to run or None, why the `.py` files run when they do)."""
    built = [module for module in COMPILED_MODULES if _extension_path(module) is not None]
    if not built:
        return None, "not built"
    if _wants_pure_python():
        return None, f"{PURE_PYTHON_VARIABLE}=1"
    manifest = _read_manifest() or {}
    if len(built) < len(COMPILED_MODULES) or not manifest:
        stale = [module for module in COMPILED_MODULES if module not in built] or [MANIFEST_NAME]
    else:
        stale = _stale_modules(manifest)
    if stale:
        warnings.warn(
            f"autograd_async: the compiled core is older than its source ({', '.join(stale)} "
            "changed or missing since the build); running the pure-Python core. Rebuild with "
            "`pip install -e .`, or set AUTOGRAD_ASYNC_PURE_PYTHON=1 to silence this.",
            StaleCompiledCoreWarning,
            stacklevel=2,
        )
        return None, "stale build"
    return f"Cython {manifest.get('cython', '?')}", ""


def _install() -> tuple[str | None, str]:
    name, reason = _decide()
    if name is None and reason != "not built":
        already = [module for module in COMPILED_MODULES if module in sys.modules]
        if already:
            raise ImportError(f"autograd_async.compiled_core must be imported before {already}")
        if not any(isinstance(finder, _SourceFinder) for finder in sys.meta_path):
            sys.meta_path.insert(0, _SourceFinder())
    return name, reason


# Only as the package's module: setup.py loads this file by path to read the module list.
_CHOSEN, _PURE_REASON = (
    _install() if __name__ == "autograd_async.compiled_core" else (None, "not the package's")
)


def _loaded_compiled(module: str) -> bool:
    loaded = sys.modules.get(module)
    if loaded is None:
        return True  # not imported yet: the finder (or its absence) decides, as chosen
    origin = getattr(loaded.__spec__, "origin", None) or ""
    return origin.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES))


def active_compiled_core() -> str | None:
    """The name of the compiled core in use (`Cython 3.x`), or None while the `.py` files run."""
    if _CHOSEN is None or not all(_loaded_compiled(module) for module in COMPILED_MODULES):
        return None
    return _CHOSEN


def pure_python_reason() -> str:
    """Why the `.py` files run: `not built`, `AUTOGRAD_ASYNC_PURE_PYTHON=1`, `stale build`."""
    return "" if active_compiled_core() is not None else (_PURE_REASON or "mixed build")


def describe_compiled_core() -> str:
    """One line for reports: `no (pure Python: <why>)` or `yes (<name>)`."""
    name = active_compiled_core()
    return f"no (pure Python: {pure_python_reason()})" if name is None else f"yes ({name})"
