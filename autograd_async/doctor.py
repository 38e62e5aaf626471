"""`python -m autograd_async doctor`: what this environment holds, for bug reports.

Python, the platform, NumPy and its BLAS, the optional packages (SciPy, CuPy and its GPUs, uvloop,
Ray, mpi4py and its MPI library, PyTorch as the reference, msgpack, ml_dtypes), the sim devices
and whether a compiled core is active. Nothing here raises: a package that fails to load is
reported with its error. Versions come from the installed metadata where importing would be slow
(Ray, PyTorch); CuPy and MPI are imported, here only, to ask for their GPUs and library.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import platform
import sys
from pathlib import Path
from typing import Any

from . import compiled_core
from ._version import __version__
from .backends.sim_mode import sim_mode
from .devices import sim_device_count

__all__ = ["collect_report", "format_json", "format_text"]

Section = dict[str, Any]

# Optional packages reported by version only: (report key, distribution name, label).
_PLAIN_PACKAGES = (
    ("scipy", "scipy", "SciPy"),
    ("uvloop", "uvloop", "uvloop"),
    ("ray", "ray", "Ray"),
    ("torch", "torch", "PyTorch (reference)"),
    ("msgpack", "msgpack", "msgpack"),
    ("ml_dtypes", "ml_dtypes", "ml_dtypes"),
)

_LABELS = {
    "autograd_async": "autograd-async",
    "python": "Python",
    "platform": "platform",
    "numpy": "NumPy",
    "cupy": "CuPy",
    "mpi4py": "mpi4py",
    "sim": "sim devices",
    "compiled_core": "compiled core",
    **{key: label for key, _, label in _PLAIN_PACKAGES},
}


def _error_text(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def installed_version(distribution: str) -> str | None:
    """The installed version of `distribution`, or None when it is not installed."""
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def _numpy_section() -> Section:
    import numpy as np  # noqa: PLC0415 - kept with the section that reports it

    return {"version": np.__version__, "blas": _blas(np)}


def _blas(np: Any) -> str | None:
    """The BLAS NumPy runs: threadpoolctl's view of the loaded library, else NumPy's build."""
    try:
        import threadpoolctl  # noqa: PLC0415 - optional

        found = [lib for lib in threadpoolctl.threadpool_info() if lib.get("user_api") == "blas"]
        if found:
            lib = found[0]
            return f"{lib['internal_api']} {lib.get('version')} ({lib['num_threads']} threads)"
    except Exception:  # noqa: BLE001 - not installed or failing: NumPy's build info below
        pass
    try:
        blas = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
        return f"{blas['name']} {blas.get('version', '')}".strip()
    except Exception:  # noqa: BLE001 - older NumPy without mode="dicts"
        return None


def _cupy_section() -> Section:
    """CuPy's version and the GPUs it sees; an import or driver failure is reported, not raised."""
    try:
        import cupy  # noqa: PLC0415 - optional and slow to import
    except ModuleNotFoundError as exc:
        if exc.name == "cupy":
            return {"version": None}
        return {"version": None, "error": _error_text(exc)}
    except Exception as exc:  # noqa: BLE001 - a broken CUDA install must not stop the report
        return {"version": None, "error": _error_text(exc)}
    section: Section = {"version": cupy.__version__, "gpus": []}
    try:
        runtime = cupy.cuda.runtime
        for index in range(runtime.getDeviceCount()):
            name = runtime.getDeviceProperties(index)["name"]
            section["gpus"].append(name.decode() if isinstance(name, bytes) else str(name))
    except Exception as exc:  # noqa: BLE001 - no driver or no GPU
        section["error"] = _error_text(exc)
    return section


def _mpi_section() -> Section:
    """mpi4py's version and the MPI library under it, asked without initialising MPI."""
    version = installed_version("mpi4py")
    if version is None:
        return {"version": None}
    section: Section = {"version": version}
    try:
        import mpi4py  # noqa: PLC0415 - optional

        if "mpi4py.MPI" not in sys.modules:  # importing MPI would otherwise call MPI_Init
            mpi4py.rc.initialize = False
            mpi4py.rc.finalize = False
        from mpi4py import MPI  # noqa: PLC0415

        first_line = MPI.Get_library_version().strip().splitlines()[0]
        section["mpi_library"] = " ".join(first_line.split())
        section["mpi_standard"] = "{}.{}".format(*MPI.Get_version())
    except Exception as exc:  # noqa: BLE001 - no MPI library: reported
        section["error"] = _error_text(exc)
    return section


def collect_report() -> dict[str, Section]:
    """Everything the doctor reports, as plain data (what `--json` prints)."""
    report: dict[str, Section] = {
        "autograd_async": {"version": __version__, "location": str(Path(__file__).parent)},
        "python": {
            "version": platform.python_version(),
            "implementation": platform.python_implementation(),
            "executable": sys.executable,
        },
        "platform": {
            "system": platform.platform(),
            "machine": platform.machine(),
            "cpus": os.cpu_count(),
        },
        "numpy": _numpy_section(),
    }
    for key, distribution, _ in _PLAIN_PACKAGES:
        report[key] = {"version": installed_version(distribution)}
        if key == "scipy":
            report["cupy"] = _cupy_section()
    report["mpi4py"] = _mpi_section()
    report["sim"] = {"mode": sim_mode(), "devices": sim_device_count()}
    name = compiled_core.active_compiled_core()
    report["compiled_core"] = {
        "active": name is not None,
        "name": name,
        "description": compiled_core.describe_compiled_core(),
    }
    return report


def _section_line(key: str, section: Section) -> str:
    """One `label: ...` line of the text report."""
    if key == "compiled_core":
        return section["description"]
    if key == "sim":
        return f"{section['devices']} (mode {section['mode']})"
    if key == "platform":
        return f"{section['system']} ({section['machine']}, {section['cpus']} CPUs)"
    if key == "python":
        return f"{section['version']} ({section['implementation']}, {section['executable']})"
    if key == "autograd_async":
        return f"{section['version']} ({section['location']})"
    details = []
    if key == "numpy":
        details.append(f"BLAS: {section['blas'] or 'unknown'}")
    if "gpus" in section:
        gpus = section["gpus"]
        details.append(f"{len(gpus)} GPU(s)" + (f": {', '.join(gpus)}" if gpus else ""))
    if "mpi_library" in section:
        details.append(f"MPI {section['mpi_standard']}, {section['mpi_library']}")
    if "error" in section:
        details.append(f"error: {section['error']}")
    head = section["version"] or ("unavailable" if "error" in section else "not installed")
    return f"{head} ({'; '.join(details)})" if details else head


def format_text(report: dict[str, Section]) -> str:
    """The report as `label: value` lines."""
    return "\n".join(f"{_LABELS[key]}: {_section_line(key, sec)}" for key, sec in report.items())


def format_json(report: dict[str, Section]) -> str:
    """The report as indented JSON."""
    return json.dumps(report, indent=2)
