"""The compiled core: which core runs, forcing the .py files, stale builds, behaviour kept.

These pass whichever core this checkout runs (built or not): what depends on a build is checked
against what `compiled_core` reports, and the stale-build check fakes a build in a copy.
"""

from __future__ import annotations

import ast
import importlib.machinery
import json
import os
import re
import shutil
import subprocess
import sys
import traceback
from pathlib import Path

import numpy as np
import pytest

import autograd_async as aa
from autograd_async import compiled_core
from autograd_async.core.op import Op

PACKAGE_DIR = Path(compiled_core.__file__).resolve().parent
EXTENSION_SUFFIXES = tuple(importlib.machinery.EXTENSION_SUFFIXES)

# Prints, from a fresh interpreter: aa.compiled, then the file each compiled module loaded from.
REPORT = (
    "import json, sys, autograd_async as aa\n"
    "from autograd_async import compiled_core as c\n"
    "print(json.dumps([aa.compiled, c.describe_compiled_core(),\n"
    "    [sys.modules[m].__file__ for m in c.COMPILED_MODULES]]))\n"
)


def _run_report(pythonpath: Path, **env: str) -> tuple[list, str]:
    full_env = {**os.environ, "PYTHONPATH": str(pythonpath), **env}
    full_env.pop(compiled_core.PURE_PYTHON_VARIABLE, None)
    full_env.update(env)
    done = subprocess.run(
        [sys.executable, "-W", "always", "-c", REPORT],
        capture_output=True,
        text=True,
        env=full_env,
        cwd=pythonpath,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout), done.stderr


def test_the_package_reports_the_core_that_runs():
    loaded = [sys.modules[name] for name in compiled_core.COMPILED_MODULES]
    from_extensions = [module.__file__.endswith(EXTENSION_SUFFIXES) for module in loaded]
    assert aa.compiled is (compiled_core.active_compiled_core() is not None)
    assert from_extensions == [aa.compiled] * len(loaded)
    if aa.compiled:
        assert compiled_core.describe_compiled_core().startswith("yes (Cython ")
    else:
        assert compiled_core.describe_compiled_core().startswith("no (pure Python: ")


def test_the_variable_makes_the_py_files_run_even_beside_a_build():
    (compiled, description, files), _ = _run_report(
        PACKAGE_DIR.parent, **{compiled_core.PURE_PYTHON_VARIABLE: "1"}
    )
    assert compiled is False
    assert all(path.endswith(".py") for path in files), files
    if any(PACKAGE_DIR.rglob("*" + EXTENSION_SUFFIXES[0])):
        assert description == f"no (pure Python: {compiled_core.PURE_PYTHON_VARIABLE}=1)"


def _copy_package(tmp_path: Path) -> Path:
    """The package's sources in `tmp_path` (no build products)."""
    shutil.copytree(
        PACKAGE_DIR,
        tmp_path / "autograd_async",
        ignore=shutil.ignore_patterns("__pycache__", "*.so", "*.pyd", "*.c", "_compiled_core.json"),
    )
    return tmp_path / "autograd_async"


def test_a_build_older_than_its_sources_warns_and_runs_the_py_files(tmp_path):
    copy = _copy_package(tmp_path)
    # A build: an extension beside each module (never loaded here) and its manifest.
    for name in compiled_core.COMPILED_MODULES:
        source = copy.joinpath(*name.split(".")[1:]).with_suffix(".py")
        source.with_name(source.stem + EXTENSION_SUFFIXES[0]).write_bytes(b"not a library")
    manifest = {"cython": "3", "sources": compiled_core.source_hashes(copy)}
    (copy / compiled_core.MANIFEST_NAME).write_text(json.dumps(manifest))
    # ...then an edit of one source, as in an editable install.
    graph = copy / "core" / "graph.py"
    graph.write_text(graph.read_text() + "\n# edited after the build\n")

    (compiled, description, files), stderr = _run_report(tmp_path)

    assert compiled is False
    assert description == "no (pure Python: stale build)"
    assert all(path.endswith(".py") for path in files), files
    assert "StaleCompiledCoreWarning" in stderr
    assert "autograd_async.core.graph changed" in stderr


def test_a_copy_without_a_build_runs_the_py_files_silently(tmp_path):
    _copy_package(tmp_path)
    (compiled, description, _), stderr = _run_report(tmp_path)
    assert compiled is False
    assert description == "no (pure Python: not built)"
    assert "StaleCompiledCoreWarning" not in stderr


REPOSITORY = PACKAGE_DIR.parent
NOTICE = "autograd-async: installing the pure-Python core ("


def _checkout_copy(tmp_path: Path) -> Path:
    """What a build needs (setup.py, pyproject.toml, the package with any generated C, so Cython
    need not generate it again), without extension modules or a build record."""
    if not (REPOSITORY / "setup.py").exists():
        pytest.skip("an installed package, not a checkout: no setup.py to build with")
    for name in ("setup.py", "pyproject.toml", "README.md"):
        shutil.copy2(REPOSITORY / name, tmp_path / name)
    shutil.copytree(
        PACKAGE_DIR,
        tmp_path / "autograd_async",
        ignore=shutil.ignore_patterns("__pycache__", "*.so", "*.pyd", "_compiled_core.json"),
    )
    return tmp_path


def _build_in_place(checkout: Path, *prelude: str, **env: str) -> subprocess.CompletedProcess:
    """`setup.py build_ext --inplace` in `checkout`, after the Python statements of `prelude`."""
    code = "; ".join(
        [*prelude, "import sys", "sys.argv = ['setup.py', '-q', 'build_ext', '--inplace']"]
        + ["import runpy", "runpy.run_path('setup.py', run_name='__main__')"]
    )
    full_env = {**os.environ, **env}
    if compiled_core.PURE_PYTHON_VARIABLE not in env:
        full_env.pop(compiled_core.PURE_PYTHON_VARIABLE, None)
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=checkout,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def _notices(done: subprocess.CompletedProcess) -> list[str]:
    return [line for line in done.stderr.splitlines() if line.startswith(NOTICE)]


def _extensions_in(checkout: Path) -> list[Path]:
    return [
        p for p in (checkout / "autograd_async").rglob("*") if p.name.endswith(EXTENSION_SUFFIXES)
    ]


def test_without_a_c_compiler_the_build_installs_the_py_files_with_one_line(tmp_path):
    checkout = _checkout_copy(tmp_path)
    # An earlier build stands in place: a failed build must not leave it half replaced.
    for name in compiled_core.COMPILED_MODULES:
        source = checkout.joinpath(*name.split(".")).with_suffix(".py")
        source.with_name(source.stem + EXTENSION_SUFFIXES[0]).write_bytes(b"an older build")
    (checkout / "autograd_async" / compiled_core.MANIFEST_NAME).write_text("{}")

    done = _build_in_place(checkout, CC="false")

    assert done.returncode == 0, done.stderr
    (notice,) = _notices(done)
    assert "the C build failed" in notice and notice.endswith("it runs the same, only slower.")
    assert _extensions_in(checkout) == []
    assert not (checkout / "autograd_async" / compiled_core.MANIFEST_NAME).exists()
    (compiled, description, _), stderr = _run_report(checkout)
    assert (compiled, description) == (False, "no (pure Python: not built)")
    assert "StaleCompiledCoreWarning" not in stderr


def test_the_variable_or_a_missing_cython_builds_nothing_and_says_why(tmp_path):
    checkout = _checkout_copy(tmp_path)

    asked = _build_in_place(checkout, **{compiled_core.PURE_PYTHON_VARIABLE: "1"})
    no_cython = _build_in_place(checkout, "import sys", "sys.modules['Cython'] = None")

    assert asked.returncode == 0 and no_cython.returncode == 0, asked.stderr + no_cython.stderr
    assert _notices(asked) == [
        f"{NOTICE}{compiled_core.PURE_PYTHON_VARIABLE}=1); it runs the same, only slower."
    ]
    assert _notices(no_cython) == [
        f"{NOTICE}Cython is not installed); it runs the same, only slower."
    ]
    assert _extensions_in(checkout) == []


class _Twice(aa.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        return grad * 2


class _Cube(Op):
    saved_inputs = (0,)

    def forward(self, x):
        return x**3

    def backward(self, grad):
        (x,) = self.saved(grad)
        return (grad * 3 * x**2,)


def test_user_subclasses_of_function_op_and_module_work_on_either_core():
    x = aa.tensor([1.0, 2.0], requires_grad=True)
    layer = aa.nn.Linear(2, 1)

    class Scaled(aa.nn.Module):
        def forward(self, value):
            return layer(value) * 3

    (_Twice.apply(x).sum() + _Cube.apply(x).sum() + Scaled()(x).sum()).backward()

    expected = 2 + 3 * np.array([1.0, 4.0]) + 3 * layer.weight.detach().numpy()[0]
    np.testing.assert_allclose(x.grad.numpy(), expected)
    assert _Cube.op_name == "_cube"


def test_tracebacks_name_the_core_py_files():
    class Failing(aa.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, grad):
            raise ValueError("failing backward")

    x = aa.tensor([1.0], requires_grad=True)
    try:
        Failing.apply(x).sum().backward()
    except ValueError as error:
        frames = traceback.extract_tb(error.__traceback__)
    else:
        raise AssertionError("the backward did not raise")

    core_frames = [f for f in frames if Path(f.filename).name == "graph_task.py"]
    assert core_frames, [f.filename for f in frames]
    assert core_frames[0].line  # the source line is found, as for any .py file


def test_public_functions_are_found_whether_or_not_their_module_is_compiled():
    # Compiled functions are not `FunctionType`; the public wrapping finds both kinds, so an op
    # module can join the compiled ones without losing its PyTorch-worded errors and `out=`.
    from autograd_async.ops import arithmetic

    assert compiled_core.is_source_function(arithmetic.mul)
    assert compiled_core.is_source_function(_Cube.forward)
    assert not compiled_core.is_source_function(len)
    assert not compiled_core.is_source_function(np.add)
    assert not compiled_core.is_source_function(_Cube)
    assert getattr(aa.mul, "__wrapped_public__", False)
    out = aa.empty(2)
    aa.mul(aa.tensor([1.0, 2.0]), 3.0, out=out)  # `out=`: the wrapper's work
    assert out.tolist() == [3.0, 6.0]
    message = "tanh(): argument 'input' (position 1) must be Tensor, not str"
    with pytest.raises(TypeError, match=re.escape(message)):
        aa.tanh("a")  # the wrapper's PyTorch-worded error


@pytest.mark.parametrize(
    ("source", "class_name"),
    [("graph_task.py", "GraphTask"), ("engine/device_worker.py", "DeviceWorker")],
)
def test_each_extension_type_declares_every_field_its_class_sets(source, class_name):
    # A field set in the `.py` but missing from the `.pxd` fails only in the compiled core
    # (AttributeError on an extension type), so the declarations are checked against the source.
    path = PACKAGE_DIR / source
    declarations = path.with_suffix(".pxd").read_text()
    declared = set(re.findall(r"^\s+cdef (?:public )?[\w ]+? (\w+)$", declarations, re.MULTILINE))
    tree = ast.parse(path.read_text())
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == class_name)
    assigned = set()
    for node in ast.walk(cls):
        targets = node.targets if isinstance(node, ast.Assign) else []
        if isinstance(node, (ast.AnnAssign, ast.AugAssign)):
            targets = [node.target]
        for target in targets:
            for part in ast.walk(target):
                if (
                    isinstance(part, ast.Attribute)
                    and isinstance(part.value, ast.Name)
                    and part.value.id == "self"
                ):
                    assigned.add(part.attr)
    assert assigned, "no field assignments found: the check reads the wrong class"
    assert assigned <= declared, f"set in {source} but not declared: {sorted(assigned - declared)}"
