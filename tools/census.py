"""Census of PyTorch's public surface against autograd_async.

Lists the public names of the installed torch (2.13) section by section, leaves out the backend
internals that mean nothing on NumPy/CuPy (each rule below says why), and reports which of the rest
`autograd_async` has. `--write` turns the result into docs/torch-coverage.md, the project's
coverage list, which tests/test_torch_coverage.py keeps true without needing torch.

    PYTHONPATH=$PWD python tools/census.py [--write] [--missing SECTION]
"""

from __future__ import annotations

import argparse
import inspect
import re
import sys
import types
import typing
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import torch

import autograd_async as aa

DOC = Path(__file__).resolve().parents[1] / "docs" / "torch-coverage.md"


@dataclass(frozen=True, slots=True)
class Exclusion:
    """Names matching `pattern` (a regex searched in the bare name) are left out, for `reason`."""

    pattern: str
    reason: str
    sections: tuple[str, ...] = ()  # empty: every section

    def applies(self, section: str, name: str) -> bool:
        """Whether this rule leaves `name` of `section` out."""
        in_scope = not self.sections or section in self.sections
        return in_scope and re.search(self.pattern, name) is not None


PRIVATE = Exclusion(r"^_", "private by Python's convention, not public API")
EXCLUSIONS = (
    PRIVATE,
    Exclusion(
        "^(" + "|".join(sorted(typing.__all__)) + ")$",
        "typing's names (Optional, Literal, Callable, ...) that torch's modules import for "
        "their annotations, not functions of theirs",
        (
            "torch functions",
            "torch.linalg",
            "torch.special",
            "torch.fft",
            "nn.functional",
            "nn.init",
        ),  # nn.Container is a (legacy) module, not typing's
    ),
    Exclusion(
        r"^(boolean_dispatch|handle_torch_function|has_torch_function(_unary|_variadic)?)$",
        "the __torch_function__ dispatch helpers nn.functional uses to build its functions",
    ),
    Exclusion(
        r"quantiz|^q_|^qscheme$|^int_repr$|^dequantize$|^choose_qparams|fake_quant",
        "quantized tensors: a storage format of PyTorch's CPU/CUDA kernels, not NumPy's",
    ),
    Exclusion(
        r"sparse|^(c?col|crow|row)_indices|^indices(_copy)?$|^values(_copy)?$|_nnz$"
        r"|coalesce|^(dense|sparse)_dim$|^(d|h|s)?smm$|^saddmm$|^hspmm$|^spmm$|^sspaddmm$"
        r"|^to_dense$|^is_coalesced$",
        "sparse layouts (COO/CSR/CSC/BSR): arrays here are dense only",
        ("torch functions", "Tensor attributes"),  # nn.init.sparse_ fills a dense tensor
    ),
    Exclusion(
        r"(^|_)(cudnn|miopen|mkldnn|mps|xpu|nested|fbgemm|vulkan|ipu|xla|hpu|mtia)(_|$)",
        "a backend library or device type other than cpu/cuda, which NumPy/CuPy do not have",
    ),
    Exclusion(r"^sym_", "symbolic shapes: the tracer's integers, not tensors"),
    Exclusion(
        r"^(compile|compiled_with_cxx11_abi|cond|while_loop|fork|wait|import_ir_module\w*"
        r"|parse_ir|parse_schema|parse_type_comment|merge_type_from_type_comment"
        r"|unify_type_list|classproperty|get_file_path|prepare_multiprocessing_environment"
        r"|profiler_allow_cudagraph_cupti_lazy_reinit_cuda12|autocast_(in|de)crement_nesting"
        r"|clear_autocast_cache|is_autocast_cache_enabled|set_autocast_cache_enabled"
        r"|hash_tensor|slice_inverse|get_device_module|thread_safe_generator)$",
        "torch.compile/jit/fx/export plumbing and the C++ build's own helpers",
        ("torch functions",),
    ),
    Exclusion(
        r"^(alias|as_strided|detach|diagonal|expand|narrow|permute|select|slice|split"
        r"|split_with_sizes|squeeze|t|transpose|unbind|unfold|unsqueeze|view_as_complex"
        r"|view_as_real|view)_copy$",
        "functionalization's copying twins of view ops (alias_copy, view_copy, ...), "
        "emitted by torch.export, not written by programs",
        ("torch functions",),
    ),
    Exclusion(
        r"^native_|^batch_norm_(backward_|elemt|gather_stats|stats|update_stats)"
        r"|^(conv_tbc|norm_except_dim|frobenius_norm|nuclear_norm|constant_pad_nd"
        r"|convolution|embedding_renorm_|segment_reduce|affine_grid_generator"
        r"|grid_sampler(_2d|_3d)?|nonzero_static)$",
        "ATen kernels that torch.nn.functional and torch.linalg call: programs call those",
        ("torch functions",),
    ),
    Exclusion(
        r"^(eig|symeig|lstsq|solve|matrix_rank)$",
        "removed in PyTorch 1.9+: calling them only raises, pointing at torch.linalg",
        ("torch functions",),
    ),
    Exclusion(
        r"^(is_vulkan_available|init_num_threads|set_flush_denormal|get_num_interop_threads"
        r"|set_num_interop_threads|is_distributed|set_default_tensor_type|from_file)$",
        "backend probes and process-level switches of PyTorch's C++ runtime",
        ("torch functions",),
    ),
)


def is_function(obj: object) -> bool:
    """A plain or builtin function (or callable object), not a class, module or dtype."""
    if isinstance(obj, type) or inspect.ismodule(obj) or isinstance(obj, torch.dtype):
        return False
    if isinstance(obj, (types.FunctionType, types.BuiltinFunctionType, types.BuiltinMethodType)):
        return True
    return callable(obj)


def public_names(module: types.ModuleType) -> set[str]:
    """A module's names from `__all__` and `dir`: what `module.<name>` can reach."""
    return set(getattr(module, "__all__", ())) | set(dir(module))


def functions_of(module: types.ModuleType) -> list[str]:
    """The function names of `module`."""
    return sorted(n for n in public_names(module) if is_function(getattr(module, n, None)))


def tensor_attributes() -> list[str]:
    """torch.Tensor's public attributes: methods, properties and in-place `_` forms."""
    return sorted(n for n in dir(torch.Tensor) if not n.startswith("_"))


def subclasses_in(module: types.ModuleType, base: type) -> list[str]:
    """The public classes of `module` that derive from `base`, `base` included."""
    names = []
    for name in public_names(module):
        obj = getattr(module, name, None)
        if isinstance(obj, type) and issubclass(obj, base):
            names.append(name)
    return sorted(names)


def nn_classes() -> list[str]:
    """torch.nn's public classes: the modules, containers and parameter types."""
    nn = torch.nn
    return sorted(
        n
        for n in public_names(nn)
        if isinstance(getattr(nn, n, None), type)
        and issubclass(getattr(nn, n), (nn.Module, nn.Parameter, torch.Tensor))
    )


@dataclass(frozen=True, slots=True)
class Section:
    """One part of the surface: its title, where names sit (relative to `torch`/`aa`), a lister."""

    title: str
    owner: str  # dotted path under both torch and autograd_async; "" for the top level
    names: Callable[[], Iterable[str]]

    def qualified(self, name: str) -> str:
        """`name` as written in the coverage list, relative to the package."""
        return f"{self.owner}.{name}" if self.owner else name


SECTIONS = (
    Section("torch functions", "", lambda: functions_of(torch)),
    Section("Tensor attributes", "Tensor", tensor_attributes),
    Section("torch.linalg", "linalg", lambda: functions_of(torch.linalg)),
    Section("torch.special", "special", lambda: functions_of(torch.special)),
    Section("torch.fft", "fft", lambda: functions_of(torch.fft)),
    Section("nn", "nn", nn_classes),
    Section("nn.functional", "nn.functional", lambda: functions_of(torch.nn.functional)),
    Section("nn.init", "nn.init", lambda: functions_of(torch.nn.init)),
    Section("optim", "optim", lambda: subclasses_in(torch.optim, torch.optim.Optimizer)),
    Section(
        "optim.lr_scheduler",
        "optim.lr_scheduler",
        lambda: subclasses_in(torch.optim.lr_scheduler, torch.optim.lr_scheduler.LRScheduler),
    ),
)


def exclusion_for(section: str, name: str) -> Exclusion | None:
    """The first rule that leaves `name` out of `section`, or None when it is counted."""
    return next((rule for rule in EXCLUSIONS if rule.applies(section, name)), None)


def here(qualified: str) -> bool:
    """Whether autograd_async has `qualified` (a dotted path under the package)."""
    target: object = aa
    for part in qualified.split("."):
        try:
            target = getattr(target, part)
        except Exception:  # a lazily failing attribute counts as absent
            return False
    return True


@dataclass(frozen=True, slots=True)
class Count:
    """One section's result: the names counted, which are here, and how many public names the
    rules left out."""

    section: Section
    present: dict[str, bool]
    excluded: int

    @property
    def have(self) -> int:
        """How many of the counted names autograd_async has."""
        return sum(self.present.values())

    @property
    def percent(self) -> float:
        """The share present, in percent."""
        return 100.0 * self.have / max(len(self.present), 1)


def census() -> list[Count]:
    """Every section's count."""
    counts = []
    for section in SECTIONS:
        present: dict[str, bool] = {}
        excluded = 0
        for name in section.names():
            rule = exclusion_for(section.title, name)
            if rule is not None:
                excluded += rule is not PRIVATE
                continue
            qualified = section.qualified(name)
            present[qualified] = here(qualified)
        counts.append(Count(section, present, excluded))
    return counts


def summary_line(count: Count) -> str:
    """`title: have/total (pct%), n left out`."""
    return (
        f"{count.section.title}: {count.have}/{len(count.present)} ({count.percent:.1f}%), "
        f"{count.excluded} public names left out"
    )


def coverage_document(counts: list[Count]) -> str:
    """The text of docs/torch-coverage.md."""
    lines = [
        "# Coverage of PyTorch's public names",
        "",
        f"The public names of torch {torch.__version__.split('+')[0]}, section by section, and "
        "whether `autograd_async` has them",
        "(names are relative to the package: `abs` is `torch.abs` and `autograd_async.abs`).",
        "Written by `python tools/census.py --write`; `tests/test_torch_coverage.py` fails when a",
        "name marked `yes` is missing. Left out, each for the reason given:",
        "",
    ]
    for rule in EXCLUSIONS:
        scope = f" ({', '.join(rule.sections)})" if rule.sections else ""
        lines.append(f"- `{rule.pattern}`{scope}: {rule.reason}.")
    lines += ["", "| section | here | of | share |", "| --- | --- | --- | --- |"]
    for count in counts:
        lines.append(
            f"| {count.section.title} | {count.have} | {len(count.present)} "
            f"| {count.percent:.1f}% |"
        )
    for count in counts:
        lines += ["", f"## {count.section.title}: {count.have} of {len(count.present)}", ""]
        lines += ["| name | here |", "| --- | --- |"]
        for name, present in count.present.items():
            lines.append(f"| `{name}` | {'yes' if present else 'no'} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Print the census; with --write, also write docs/torch-coverage.md."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="write docs/torch-coverage.md")
    parser.add_argument("--missing", metavar="SECTION", help="list the absent names of SECTION")
    args = parser.parse_args(argv)
    counts = census()
    for count in counts:
        print(summary_line(count))
    if args.missing:
        chosen = [c for c in counts if c.section.title == args.missing]
        if not chosen:
            parser.error(f"no section {args.missing!r}; sections: {[s.title for s in SECTIONS]}")
        print(" ".join(n for n, ok in chosen[0].present.items() if not ok))
    if args.write:
        DOC.write_text(coverage_document(counts))
        print(f"wrote {DOC}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
