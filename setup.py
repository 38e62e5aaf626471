"""Build: the package as pyproject.toml describes it, plus the core compiled by Cython.

The modules named by `autograd_async.compiled_core.COMPILED_MODULES` are compiled from their `.py`
files unchanged (pure-Python mode) when Cython, a C compiler and the Python headers are present;
when one is missing, or AUTOGRAD_ASYNC_PURE_PYTHON=1, the build prints one line and the package
installs as pure Python. A successful build writes the manifest (each source's hash) that the
package checks at import, so a build older than its sources never runs.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent
NOTICE = "autograd-async: installing the pure-Python core ({why}); it runs the same, only slower."


def _load_compiled_core():
    """`autograd_async.compiled_core` from the source tree, without importing the package."""
    spec = importlib.util.spec_from_file_location(
        "_autograd_async_compiled_core", ROOT / "autograd_async" / "compiled_core.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


core = _load_compiled_core()


def _notice(why: str) -> None:
    print(NOTICE.format(why=why), file=sys.stderr, flush=True)


class BuildCompiledCore(build_ext):
    """Compiles the core, or falls back to pure Python with one line; writes the manifest."""

    def finalize_options(self) -> None:
        super().finalize_options()
        if not self.parallel:  # one compiler process per core: the modules build independently
            self.parallel = os.cpu_count() or 1

    def build_extension(self, ext) -> None:  # noqa: ANN001 - setuptools' Extension
        if self.compiler.compiler_type == "unix" and "-g0" not in ext.extra_compile_args:
            # No debug information: it takes 40% of the C compiler's time on this generated code,
            # and tracebacks name the .py lines without it.
            ext.extra_compile_args = [*ext.extra_compile_args, "-g0"]
        super().build_extension(ext)

    def run(self) -> None:
        if not self.extensions:
            return
        # setuptools builds with `inplace` off, then copies: a failure leaves it off.
        inplace = bool(self.inplace)
        try:
            super().run()
        except Exception as exc:  # any failure to compile or link: the .py files run instead
            first_line = (str(exc).strip().splitlines() or [""])[0]
            _notice(f"the C build failed, {type(exc).__name__}: {first_line[:120]}")
            self._remove_outputs(inplace)
            return
        manifest = {
            "cython": self._cython_version,
            "sources": core.source_hashes(ROOT / "autograd_async"),
        }
        targets = {Path(self.build_lib) / "autograd_async"}
        if self.inplace:
            targets.add(ROOT / "autograd_async")
        for folder in targets:
            folder.mkdir(parents=True, exist_ok=True)
            (folder / core.MANIFEST_NAME).write_text(json.dumps(manifest, indent=1) + "\n")

    def _remove_outputs(self, inplace: bool) -> None:
        """Leave no part of a failed build behind: the modules that did compile (the others failed
        beside them) and an earlier build's record, so that the package runs its `.py` files
        quietly instead of warning about a build that is half there."""
        for extension in self.extensions:
            paths = {Path(self.get_ext_fullpath(extension.name))}
            if inplace:
                relative = Path(self.get_ext_filename(extension.name))
                paths.add(ROOT / relative)
            for path in paths:
                path.unlink(missing_ok=True)
        if inplace:
            (ROOT / "autograd_async" / core.MANIFEST_NAME).unlink(missing_ok=True)

    _cython_version = "?"


def _extensions() -> list:
    if os.environ.get(core.PURE_PYTHON_VARIABLE, "").strip().lower() in {"1", "true", "yes", "on"}:
        _notice(f"{core.PURE_PYTHON_VARIABLE}=1")
        return []
    try:
        import Cython
        from Cython.Build import cythonize
    except ImportError:
        _notice("Cython is not installed")
        return []
    BuildCompiledCore._cython_version = Cython.__version__
    sources = [str(core.source_path(module).relative_to(ROOT)) for module in core.COMPILED_MODULES]
    return cythonize(
        sources,
        quiet=True,
        compiler_directives={
            "language_level": 3,
            # Functions stay introspectable Python functions (signatures, __wrapped__, pickling).
            "binding": True,
            # Annotations stay documentation: `x: list` must still accept a list subclass.
            "annotation_typing": False,
            "always_allow_keywords": True,
        },
    )


setup(ext_modules=_extensions(), cmdclass={"build_ext": BuildCompiledCore})
