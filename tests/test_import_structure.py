"""The library's import structure: no import cycle beyond the core's three modules, each layer
importing only the layers below it, and function-local imports kept for what needs them.

Read with `tools/import_cycles.py` (parsed, nothing imported). Run that script to see the cycles
and the function-local imports when a test here fails.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("import_cycles", ROOT / "tools" / "import_cycles.py")
import_cycles = importlib.util.module_from_spec(_spec)
sys.modules["import_cycles"] = import_cycles  # dataclasses look their module up by name
_spec.loader.exec_module(import_cycles)

# Function-local imports of the library's own modules allowed, at most. Those left break a cycle
# that a layer's design has on purpose (a backend asks `devices` for the Device class, `ops.dual`
# calls ops that themselves use it, the device worker reaches its engine) or keep a higher layer
# unloaded until used (`nn.DataParallel` and `DistributedSampler` load the collectives, the
# profiler's plot loads matplotlib, a process group loads the backend it asks for: MPI, NCCL).
# Lower it when you remove one; never raise it to add one: import at module level from the
# layer below instead.
LIBRARY_LOCAL_IMPORTS_CEILING = 31

# The layers, lowest first: a module may import its own layer and those below, never above.
# Modules in no layer here (dtypes, devices, backends, grad mode, compiled_core, ...) form the base.
LAYERS = (
    ("core",),
    ("ops", "creation", "factories"),
    ("graph_task", "node_evaluation"),
    ("engine",),
    ("autograd",),
)


@pytest.fixture(scope="module")
def structure():
    return import_cycles.analyse(ROOT)


def layer_of(module: str) -> int:
    """0 for the base, then 1.. for LAYERS, and len(LAYERS) + 1 for what is built on them."""
    parts = module.split(".")
    if parts[0] != "autograd_async" or len(parts) == 1:
        return len(LAYERS) + 1
    for level, names in enumerate(LAYERS, start=1):
        if parts[1] in names:
            return level
    if parts[1] in {
        "nn",
        "optim",
        "profiler",
        "utils",
        "func",
        "distributed",
        "distributions",
        "workers",
        "amp",
        "fft",
        "linalg",
        "special",
        "testing",
        "cuda",
        "serialization",
        "doctor",
        "__main__",
        "_stubgen",
        "_moved_modules",
        "cpu",
        "runtime_settings",
    }:
        return len(LAYERS) + 1
    return 0


def test_no_module_level_cycle_beyond_three_modules(structure):
    cycles = structure.cycles()
    assert all(len(cycle) <= 3 for cycle in cycles), import_cycles.report(structure)


def test_the_core_imports_only_the_base(structure):
    for module, targets in structure.edges.items():
        if module.startswith("autograd_async.core."):
            above = sorted(t for t in targets if layer_of(t) > 1)
            assert not above, f"{module} imports {above}: the core may import only the base"


def test_each_layer_imports_only_those_below(structure):
    upward = []
    for module, targets in structure.edges.items():
        level = layer_of(module)
        if level > len(LAYERS):
            continue
        upward += [f"{module} -> {t}" for t in sorted(targets) if layer_of(t) > level]
    assert not upward, "imports from a higher layer:\n" + "\n".join(upward)


def test_the_library_imports_moved_modules_by_their_new_paths(structure):
    assert not structure.old_paths, (
        "import these from their new place (see autograd_async/_moved_modules.py):\n"
        + "\n".join(structure.old_paths)
    )


def test_function_local_imports_of_the_library_stay_under_the_ceiling(structure):
    local = [i for i in structure.local_imports if i.kind == "library"]
    listing = "\n".join(f"{i.module}:{i.line} imports {i.target}" for i in local)
    assert len(local) <= LIBRARY_LOCAL_IMPORTS_CEILING, listing


def test_tarjan_finds_cycles_without_recursion():
    # A chain far longer than the recursion limit, closed into one cycle, plus a separate pair.
    n = sys.getrecursionlimit() * 3
    nodes = [f"m{i}" for i in range(n)] + ["a", "b"]
    edges = {f"m{i}": {f"m{(i + 1) % n}"} for i in range(n)}
    edges.update(a={"b"}, b={"a", "m0"})
    components = import_cycles.strongly_connected_components(nodes, edges)
    sizes = sorted(len(c) for c in components)
    assert sizes == [2, n]


def test_imports_are_read_where_they_run(tmp_path):
    package = tmp_path / "autograd_async"
    package.mkdir()
    (tmp_path / "workers").mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "from . import b\n"
        "if TYPE_CHECKING:\n    from . import c\n"
        "def f():\n    import cupy\n    from .c import x\n"
        "from .d import y  # at the bottom, still at module level\n"
    )
    for name in ("b", "c", "d"):
        (package / f"{name}.py").write_text("x = y = 1\n")
    found = import_cycles.analyse(tmp_path)
    assert found.edges["autograd_async.a"] == {"autograd_async.b", "autograd_async.d"}
    kinds = sorted((i.target, i.kind) for i in found.local_imports)
    assert kinds == [("autograd_async.c", "library"), ("cupy", "optional")]


def test_the_script_reports_counts():
    done = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "import_cycles.py")],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    assert "module-level import cycles:" in done.stdout
    assert "function-local imports:" in done.stdout


def test_the_old_paths_of_moved_modules_name_the_same_modules():
    import autograd_async  # noqa: F401 - registers the old paths
    from autograd_async._moved_modules import MOVED

    for old, new in MOVED.items():
        assert importlib.import_module(old) is importlib.import_module(new)
    from autograd_async.ops.base import Op as OldOp
    from autograd_async.tensor import Tensor

    from autograd_async.core.op import Op

    assert OldOp is Op and Tensor is autograd_async.Tensor
    # No file stands at an old path: the moved files keep their history.
    assert not (ROOT / "autograd_async" / "tensor.py").exists()
    assert not (ROOT / "autograd_async" / "ops" / "base.py").exists()
