"""`python -m autograd_async --version` and `doctor`: what they print, and that a broken optional
package is reported rather than raised."""

from __future__ import annotations

import json
import subprocess
import sys
import types
from pathlib import Path

import pytest

import autograd_async as aa
from autograd_async import compiled_core, doctor
from autograd_async.__main__ import main

ROOT = Path(__file__).resolve().parents[1]


def test_version_is_the_one_in_version_py_and_pyproject_reads_it():
    from autograd_async._version import __version__

    assert aa.__version__ == __version__
    assert aa.__version__.count(".") >= 2
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert 'dynamic = ["version"]' in pyproject
    assert 'attr = "autograd_async._version.__version__"' in pyproject


def test_version_flag_prints_the_version(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["--version"])
    assert stop.value.code == 0
    assert capsys.readouterr().out == f"autograd-async {aa.__version__}\n"


def test_doctor_text_names_every_part(capsys):
    assert main(["doctor"]) == 0
    lines = capsys.readouterr().out.splitlines()
    labels = [line.split(":", 1)[0] for line in lines]
    assert labels == [
        "autograd-async",
        "Python",
        "platform",
        "NumPy",
        "SciPy",
        "CuPy",
        "uvloop",
        "Ray",
        "PyTorch (reference)",
        "msgpack",
        "ml_dtypes",
        "mpi4py",
        "sim devices",
        "compiled core",
    ]
    text = "\n".join(lines)
    assert f"autograd-async: {aa.__version__} (" in text
    assert f"Python: {sys.version.split()[0]} (" in text
    assert "NumPy: " + __import__("numpy").__version__ + " (BLAS: " in text
    assert f"sim devices: {aa.sim_device_count()} (mode {aa.sim_mode()})" in text
    assert lines[-1] == "compiled core: " + compiled_core.describe_compiled_core()


def test_doctor_json_holds_the_same_report(capsys):
    assert main(["doctor", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["autograd_async"]["version"] == aa.__version__
    assert report["numpy"]["version"] == __import__("numpy").__version__
    assert report["sim"] == {"mode": aa.sim_mode(), "devices": aa.sim_device_count()}
    assert report["compiled_core"] == {
        "active": aa.compiled,
        "name": compiled_core.active_compiled_core(),
        "description": compiled_core.describe_compiled_core(),
    }
    assert list(report) == list(doctor.collect_report())


def test_doctor_reports_a_compiled_core_through_its_one_function(monkeypatch, capsys):
    monkeypatch.setattr(compiled_core, "active_compiled_core", lambda: "_engine_core")
    assert main(["doctor"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "compiled core: yes (_engine_core)"


def _fake_cupy(count) -> types.ModuleType:
    """A stand-in CuPy whose runtime reports `count` GPUs, or raises `count` when it is one."""

    def get_device_count():
        if isinstance(count, Exception):
            raise count
        return count

    runtime = types.SimpleNamespace(
        getDeviceCount=get_device_count,
        getDeviceProperties=lambda i: {"name": f"GPU {i}".encode()},
    )
    fake = types.ModuleType("cupy")
    fake.__version__ = "99.0"
    fake.cuda = types.SimpleNamespace(runtime=runtime)
    return fake


def test_doctor_lists_the_gpus_cupy_sees(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", _fake_cupy(2))
    assert doctor.collect_report()["cupy"] == {"version": "99.0", "gpus": ["GPU 0", "GPU 1"]}
    line = doctor.format_text(doctor.collect_report()).splitlines()[5]
    assert line == "CuPy: 99.0 (2 GPU(s): GPU 0, GPU 1)"


def test_doctor_reports_a_driver_failure_without_raising(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", _fake_cupy(RuntimeError("no CUDA driver found")))
    section = doctor.collect_report()["cupy"]
    assert section == {"version": "99.0", "gpus": [], "error": "RuntimeError: no CUDA driver found"}


def test_doctor_reports_a_cupy_that_fails_to_import(monkeypatch):
    class BrokenCupy:
        """A meta-path finder whose CuPy raises on import, as one built for another CUDA does."""

        def find_spec(self, name, path=None, target=None):
            if name == "cupy":
                raise OSError("libcudart.so.12: cannot open shared object file")
            return None

    monkeypatch.delitem(sys.modules, "cupy", raising=False)
    monkeypatch.setattr(sys, "meta_path", [BrokenCupy(), *sys.meta_path])
    section = doctor.collect_report()["cupy"]
    assert section["version"] is None
    assert section["error"].startswith("OSError: libcudart.so.12")
    line = doctor.format_text(doctor.collect_report()).splitlines()[5]
    assert line.startswith("CuPy: unavailable (error: OSError: libcudart.so.12")


def test_doctor_runs_as_a_module_and_exits_zero():
    done = subprocess.run(
        [sys.executable, "-m", "autograd_async", "doctor", "--json"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["autograd_async"]["version"] == aa.__version__
