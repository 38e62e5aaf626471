"""The library's module-level import cycles and its function-local imports.

    python tools/import_cycles.py [--verbose]

Every module of `autograd_async` and `workers` is parsed with `ast` (nothing is imported). An
import statement at a module's top level - wherever it stands in the file, the bottom included,
and inside a top-level `if`/`try` - is an edge of the module-level import graph; `if
TYPE_CHECKING:` blocks are left out, since they never run. An import inside a function or method
is counted apart: "optional" when it reaches a dependency the library runs without (CuPy, torch,
Ray, MPI, ...), "library" when it reaches another module of the library, "other" otherwise.

The strongly connected components of the module-level graph with more than one module are the
import cycles; they are found by Tarjan's algorithm, run with an explicit stack.
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LIBRARY_PACKAGES = ("autograd_async", "workers")

# Top-level names of the dependencies the library imports only where it needs them.
OPTIONAL_DEPENDENCIES = frozenset(
    {
        "cupy",
        "cupyx",
        "cupy_backends",
        "torch",
        "ray",
        "mpi4py",
        "scipy",
        "ml_dtypes",
        "uvloop",
        "matplotlib",
        "psutil",
        "msgpack",
        "threadpoolctl",
        "IPython",
        "jax",
        "tqdm",
        "nvtx",
        "pynvml",
        "h5py",
        "pandas",
        "sklearn",
    }
)


@dataclass(slots=True)
class LocalImport:
    """An import statement inside a function of `module`, of `target` (a module name)."""

    module: str
    target: str
    line: int

    @property
    def kind(self) -> str:
        top = self.target.split(".")[0]
        if top in LIBRARY_PACKAGES:
            return "library"
        if top in OPTIONAL_DEPENDENCIES:
            return "optional"
        return "other"


@dataclass(slots=True)
class ImportStructure:
    """The module-level import graph of the library and its function-local imports."""

    modules: dict[str, Path]
    edges: dict[str, set[str]] = field(default_factory=dict)
    local_imports: list[LocalImport] = field(default_factory=list)
    # Imports that name a moved module by its old path (`_moved_modules.MOVED`): "module:line old".
    old_paths: list[str] = field(default_factory=list)

    def cycles(self) -> list[list[str]]:
        """The strongly connected components with more than one module, largest first."""
        components = strongly_connected_components(self.modules, self.edges)
        cycles = [sorted(c) for c in components if len(c) > 1]
        return sorted(cycles, key=lambda c: (-len(c), c))

    def local_counts(self) -> dict[str, int]:
        """How many function-local imports there are of each kind."""
        counts = {"library": 0, "optional": 0, "other": 0}
        for item in self.local_imports:
            counts[item.kind] += 1
        return counts


def module_name(path: Path, root: Path = ROOT) -> str:
    """The dotted name of the module at `path` under `root`."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def find_modules(root: Path = ROOT) -> dict[str, Path]:
    """Every module of the library's packages, by dotted name."""
    modules: dict[str, Path] = {}
    for package in LIBRARY_PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            if "__pycache__" not in path.parts:
                modules[module_name(path, root)] = path
    return modules


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _module_level_statements(body: Iterable[ast.stmt]) -> Iterator[ast.stmt]:
    """The statements that run when the module is imported: through `if`/`try`/`with`, not into
    function or class bodies... except class bodies, which do run at import time."""
    pending = list(body)
    while pending:
        node = pending.pop()
        if isinstance(node, ast.If):
            if not _is_type_checking(node.test):
                pending.extend(node.body)
            pending.extend(node.orelse)
        elif isinstance(node, ast.Try | ast.TryStar):
            pending.extend(node.body)
            pending.extend(node.orelse)
            pending.extend(node.finalbody)
            for handler in node.handlers:
                pending.extend(handler.body)
        elif isinstance(node, ast.With | ast.For | ast.While):
            pending.extend(node.body)
            pending.extend(getattr(node, "orelse", []))
        elif isinstance(node, ast.ClassDef):
            pending.extend(node.body)
        else:
            yield node


def _function_bodies(tree: ast.Module) -> Iterator[ast.AST]:
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            yield node


def _resolve(module: str, is_package: bool, level: int, name: str | None) -> str:
    """The absolute module a relative `from` import names."""
    if level == 0:
        return name or ""
    parts = module.split(".")
    if not is_package:
        parts = parts[:-1]
    if level > 1:
        parts = parts[: len(parts) - (level - 1)]
    if name:
        parts.append(name)
    return ".".join(parts)


def _imported_modules(
    node: ast.Import | ast.ImportFrom, module: str, is_package: bool, modules: dict[str, Path]
) -> list[str]:
    """The modules an import statement loads, as precisely as the source says: `from a import b`
    names the module `a.b` when there is one, else the module `a`."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    base = _resolve(module, is_package, node.level, node.module)
    targets = []
    for alias in node.names:
        candidate = f"{base}.{alias.name}"
        targets.append(candidate if candidate in modules else base)
    return targets


def _nearest_module(name: str, modules: dict[str, Path]) -> str | None:
    """The library module `name` is, or the nearest enclosing one (`a.b.c` -> `a.b`)."""
    while name:
        if name in modules:
            return name
        name = name.rpartition(".")[0]
    return None


def moved_modules(root: Path = ROOT) -> dict[str, str]:
    """The old name -> new name table of `autograd_async/_moved_modules.py` (read, not run)."""
    path = root / "autograd_async" / "_moved_modules.py"
    if not path.exists():
        return {}
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        target = (
            node.target
            if isinstance(node, ast.AnnAssign)
            else (node.targets[0] if isinstance(node, ast.Assign) else None)
        )
        if isinstance(target, ast.Name) and target.id == "MOVED":
            return ast.literal_eval(node.value)
    return {}


def analyse(root: Path = ROOT) -> ImportStructure:
    """Parse every module of the library and collect its imports.

    An import of a moved module by its old path counts as an import of the module itself (that
    is what it loads), and is listed in `old_paths`.
    """
    modules = find_modules(root)
    moved = moved_modules(root)
    known = {**modules, **dict.fromkeys(moved)}
    structure = ImportStructure(modules, {name: set() for name in modules})

    def targets_of(node: ast.Import | ast.ImportFrom, name: str, is_package: bool) -> list[str]:
        targets = []
        for target in _imported_modules(node, name, is_package, known):
            old = _nearest_module(target, dict.fromkeys(moved))
            if old is not None:
                structure.old_paths.append(f"{name}:{node.lineno} {old}")
                target = moved[old] + target[len(old) :]
            targets.append(target)
        return targets

    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        is_package = path.name == "__init__.py"
        for node in _module_level_statements(tree.body):
            if isinstance(node, ast.Import | ast.ImportFrom):
                for target in targets_of(node, name, is_package):
                    found = _nearest_module(target, modules)
                    if found is not None and found != name:
                        structure.edges[name].add(found)
        for function in _function_bodies(tree):
            for node in ast.walk(function):
                if isinstance(node, ast.Import | ast.ImportFrom):
                    for target in targets_of(node, name, is_package):
                        structure.local_imports.append(LocalImport(name, target, node.lineno))
    # An import inside a function nested in another is seen once per enclosing function: keep one.
    unique = {(item.module, item.target, item.line): item for item in structure.local_imports}
    structure.local_imports = sorted(unique.values(), key=lambda i: (i.module, i.line, i.target))
    structure.old_paths.sort()
    return structure


def strongly_connected_components(
    nodes: Iterable[str], edges: dict[str, set[str]]
) -> list[list[str]]:
    """Tarjan's algorithm with an explicit stack: deep import chains never reach the recursion
    limit."""
    index: dict[str, int] = {}
    lowlink: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    components: list[list[str]] = []
    counter = 0
    for start in nodes:
        if start in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(start, iter(sorted(edges.get(start, ()))))]
        index[start] = lowlink[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, successors = work[-1]
            advanced = False
            for succ in successors:
                if succ not in index:
                    index[succ] = lowlink[succ] = counter
                    counter += 1
                    stack.append(succ)
                    on_stack.add(succ)
                    work.append((succ, iter(sorted(edges.get(succ, ())))))
                    advanced = True
                    break
                if succ in on_stack:
                    lowlink[node] = min(lowlink[node], index[succ])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                lowlink[parent] = min(lowlink[parent], lowlink[node])
            if lowlink[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                components.append(component)
    return components


def report(structure: ImportStructure, verbose: bool = False) -> str:
    """The cycles and the counts, as text."""
    lines = []
    cycles = structure.cycles()
    edges = sum(len(targets) for targets in structure.edges.values())
    lines.append(f"modules: {len(structure.modules)}, module-level import edges: {edges}")
    sizes = ", ".join(str(len(c)) for c in cycles) or "none"
    lines.append(f"module-level import cycles: {len(cycles)} (sizes: {sizes})")
    for cycle in cycles:
        lines.append(f"  cycle of {len(cycle)}: " + " ".join(cycle))
    counts = structure.local_counts()
    lines.append(
        "function-local imports: "
        f"{sum(counts.values())} (library {counts['library']}, optional dependency "
        f"{counts['optional']}, other {counts['other']})"
    )
    if structure.old_paths:
        lines.append(f"imports of moved modules by their old paths: {len(structure.old_paths)}")
        lines.extend(f"  {entry}" for entry in structure.old_paths)
    if verbose:
        for item in structure.local_imports:
            if item.kind == "library":
                lines.append(f"  {item.module}:{item.line} imports {item.target}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--verbose",
        "-v",
        action="store_true",
        help="list each function-local import of a library module",
    )
    args = parser.parse_args(argv)
    print(report(analyse(), verbose=args.verbose))
    return 0


if __name__ == "__main__":
    sys.exit(main())
