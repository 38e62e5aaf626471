"""The package as users get it: `python -m build` makes an sdist and a wheel, and the wheel,
installed with its dependencies into a fresh virtual environment (no editable install, no
repository on the path), runs `--version`, `doctor`, a smoke test and the README's example.

Marked `release` (deselect with `-m "not release"`); skips when the package index is unreachable.
"""

from __future__ import annotations

import importlib.metadata
import os
import re
import shutil
import subprocess
import sys
import tarfile
import textwrap
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
VERSION = re.search(
    r'__version__ = "([^"]+)"', (ROOT / "autograd_async" / "_version.py").read_text()
).group(1)
# Top-level names the wheel may hold: the library alone (the worker package is inside it).
WHEEL_TOP_LEVEL = {"autograd_async", f"autograd_async-{VERSION}.dist-info"}
# A hang guard, not a speed bound: build, install and runs took 100-200 s on a loaded 2-core host.
STEP_TIMEOUT = 420
# What the build copy leaves out of the repository (caches, environments, earlier builds).
NOT_SOURCE = shutil.ignore_patterns(
    ".git",
    ".venv",
    "venv",
    "__pycache__",
    "*.egg-info",
    "build",
    "dist",
    ".pytest_cache",
    ".ruff_cache",
    ".hypothesis",
    "out",
    "*.trace.json",
    # The compiled core built in place (setup.py): the build compiles its own.
    "*.so",
    "*.c",
    "_compiled_core.json",
)
pytestmark = [pytest.mark.release, pytest.mark.timeout(2 * STEP_TIMEOUT)]

SMOKE = textwrap.dedent(
    """
    import asyncio
    import importlib.metadata
    import pathlib

    import numpy as np

    import autograd_async as aa

    where = pathlib.Path(aa.__file__).parent
    assert "site-packages" in where.parts, where
    assert (where / "py.typed").is_file() and (where / "core" / "tensor.pyi").is_file()
    assert importlib.metadata.version("autograd-async") == aa.__version__


    async def main():
        for device in ("cpu", "sim:0"):
            values = np.array([0.5, -1.0, 2.0], dtype=np.float32)
            x = aa.tensor(values, requires_grad=True)
            h = (x.to(device) * 2.0).tanh()  # a cross-device edge when device is sim:0
            loss = (h * h).sum().to("cpu")
            await loss.backward_async()
            t = np.tanh(2.0 * values)
            np.testing.assert_allclose(x.grad.numpy(), 4.0 * t * (1.0 - t * t), rtol=1e-5)
            print("backward ok on", device)


    asyncio.run(main())
    """
)


def run(command: list[str], cwd: Path, what: str) -> subprocess.CompletedProcess:
    """Run `command` outside the repository (no PYTHONPATH, no user site) and return it."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env.update(PYTHONNOUSERSITE="1", PYTHONUNBUFFERED="1", PIP_DISABLE_PIP_VERSION_CHECK="1")
    try:
        return subprocess.run(
            command, cwd=cwd, env=env, capture_output=True, text=True, timeout=STEP_TIMEOUT
        )
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"{what} did not finish in {STEP_TIMEOUT} s: {exc.stdout}\n{exc.stderr}")


def check(done: subprocess.CompletedProcess, what: str) -> str:
    """The output of a run that must have succeeded."""
    assert done.returncode == 0, f"{what} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def skip_if_unreachable(done: subprocess.CompletedProcess, what: str, cwd: Path) -> None:
    """Skip when a failed pip run could not reach the package index, which it could not when
    pip cannot fetch even msgpack (a dependency) from it now; other failures fail."""
    if done.returncode == 0:
        return
    probe = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--quiet",
        "--no-deps",
        "--dest",
        str(cwd / "probe"),
        "msgpack",
    ]
    reached = run(probe, cwd, "pip download msgpack")
    if reached.returncode != 0:
        tail = " ".join((reached.stderr or reached.stdout).split())[-300:]
        pytest.skip(f"{what}: the package index is unreachable (pip download msgpack: {tail})")


def can_build_without_isolation() -> bool:
    """Whether this interpreter has the build backend pyproject asks for (setuptools >= 77), so
    that `python -m build` need not install it into an isolated environment first."""
    try:
        major = int(importlib.metadata.version("setuptools").split(".")[0])
    except importlib.metadata.PackageNotFoundError:
        return False
    return major >= 77


@pytest.fixture(scope="module")
def dists(tmp_path_factory) -> dict[str, Path]:
    """The sdist and the wheel `python -m build` makes of a copy of the repository (so the build
    writes nothing into the checkout); the wheel is built from the sdist, as `build` does."""
    pytest.importorskip("build", reason="python -m build needs the `build` package (dev extra)")
    work = tmp_path_factory.mktemp("release")
    source = work / "source"
    shutil.copytree(ROOT, source, ignore=NOT_SOURCE)
    out = work / "dist"
    command = [sys.executable, "-m", "build", "--outdir", str(out), str(source)]
    if can_build_without_isolation():
        command[3:3] = ["--no-isolation"]
    done = run(command, work, "python -m build")
    skip_if_unreachable(done, "python -m build", work)
    check(done, "python -m build")
    (wheel,) = out.glob("*.whl")
    (sdist,) = out.glob("*.tar.gz")
    return {"wheel": wheel, "sdist": sdist}


@pytest.fixture(scope="module")
def venv(dists, tmp_path_factory) -> Path:
    """The python of a fresh virtual environment holding the wheel (with its `examples` extra)
    and its dependencies from the package index, and nothing of the repository."""
    where = tmp_path_factory.mktemp("venv") / "env"
    # No pip inside: this interpreter's pip installs into it (`pip --python`), which saves the
    # ensurepip step. No --system-site-packages: only what the wheel asks for is there.
    check(
        run([sys.executable, "-m", "venv", "--without-pip", str(where)], where.parent, "venv"),
        "python -m venv",
    )
    python = where / "bin" / "python"
    install = [
        sys.executable,
        "-m",
        "pip",
        "--python",
        str(python),
        "install",
        "--quiet",
        "--no-compile",
        f"{dists['wheel']}[examples]",
    ]
    done = run(install, where.parent, "pip install")
    skip_if_unreachable(done, "pip install of the wheel's dependencies", where.parent)
    check(done, "pip install")
    return python


@pytest.fixture
def outside(tmp_path) -> Path:
    """A working directory with no repository in it or above it."""
    assert ROOT not in tmp_path.parents
    return tmp_path


def compiled_modules(wheel: Path) -> list[str]:
    """The extension modules of the compiled core in the wheel (none when it built without one)."""
    return [n for n in zipfile.ZipFile(wheel).namelist() if n.endswith((".so", ".pyd"))]


def test_a_compiled_wheel_ships_every_core_module_its_source_and_the_manifest(dists):
    names = set(zipfile.ZipFile(dists["wheel"]).namelist())
    built = compiled_modules(dists["wheel"])
    if not built:
        pytest.skip("built without a C compiler or Cython: a pure-Python wheel")
    from autograd_async.compiled_core import COMPILED_MODULES, MANIFEST_NAME

    assert f"autograd_async/{MANIFEST_NAME}" in names
    for module in COMPILED_MODULES:
        stem = module.replace(".", "/")
        assert f"{stem}.py" in names  # the source of truth, for tracebacks and the stale check
        assert [n for n in built if n.startswith(stem + ".")], module
    assert not [n for n in names if n.endswith(".c")]


def test_the_wheel_ships_the_typing_files_and_no_tests(dists):
    names = zipfile.ZipFile(dists["wheel"]).namelist()
    assert "autograd_async/py.typed" in names
    stubs = {p.relative_to(ROOT).as_posix() for p in (ROOT / "autograd_async").rglob("*.pyi")}
    assert stubs and stubs <= set(names), stubs - set(names)
    assert "autograd_async/__main__.py" in names and "autograd_async/_version.py" in names
    top_level = {name.split("/")[0] for name in names}
    assert top_level <= WHEEL_TOP_LEVEL, top_level - WHEEL_TOP_LEVEL
    assert "workers" not in top_level  # a generic name other distributions may claim
    assert {"autograd_async/workers/__main__.py", "autograd_async/workers/ray/__init__.py"} <= set(
        names
    )
    assert not [n for n in names if re.search(r"(^|/)(tests|benchmarks|examples)/", n)]


def test_the_metadata_carries_the_version_and_the_classifiers(dists):
    metadata = (
        zipfile.ZipFile(dists["wheel"])
        .read(f"autograd_async-{VERSION}.dist-info/METADATA")
        .decode()
    )
    assert f"\nVersion: {VERSION}\n" in metadata
    # A wheel holding the compiled core is for one Python and platform; a pure one is for all.
    if compiled_modules(dists["wheel"]):
        assert re.fullmatch(
            rf"autograd_async-{VERSION}-cp3\d+-cp3\d+-\w+\.whl", dists["wheel"].name
        )
    else:
        assert dists["wheel"].name == f"autograd_async-{VERSION}-py3-none-any.whl"
    for line in (
        "Classifier: Typing :: Typed",
        "Classifier: Programming Language :: Python :: 3.13",
        "Classifier: Framework :: AsyncIO",
        "License-Expression: MIT",
        "Project-URL: Changelog, https://github.com/autograd-async/autograd-async/blob/main/"
        "CHANGELOG.md",
    ):
        assert line in metadata


def test_the_sdist_holds_the_sources_and_the_changelog(dists):
    with tarfile.open(dists["sdist"]) as sdist:
        names = {name.split("/", 1)[1] for name in sdist.getnames() if "/" in name}
    assert {
        "pyproject.toml",
        "README.md",
        "CHANGELOG.md",
        "autograd_async/_version.py",
        "autograd_async/py.typed",
        "autograd_async/core/tensor.pyi",
    } <= names


def test_the_installed_package_reports_its_version_and_environment(dists, venv, outside):
    out = check(
        run([str(venv), "-m", "autograd_async", "--version"], outside, "--version"), "--version"
    )
    assert out == f"autograd-async {VERSION}\n"
    report = check(run([str(venv), "-m", "autograd_async", "doctor"], outside, "doctor"), "doctor")
    site = venv.parent.parent
    assert re.search(
        rf"^autograd-async: {re.escape(VERSION)} \({re.escape(str(site))}/", report, re.M
    ), report
    assert "\nCuPy: " in report and "\nsim devices: " in report
    if compiled_modules(dists["wheel"]):
        assert re.search(r"compiled core: yes \(Cython 3[.\d]*\)$", report.rstrip()), report
    else:
        assert report.rstrip().endswith("compiled core: no (pure Python: not built)")


def test_the_wheel_declares_the_worker_console_script(dists):
    names = zipfile.ZipFile(dists["wheel"]).namelist()
    (entry_points,) = [n for n in names if n.endswith(".dist-info/entry_points.txt")]
    text = zipfile.ZipFile(dists["wheel"]).read(entry_points).decode()
    assert "autograd-async-worker = autograd_async.workers.__main__:main" in text


def test_the_worker_console_script_runs_from_the_wheel(venv, outside):
    script = venv.with_name("autograd-async-worker")
    out = check(run([str(script), "--help"], outside, "autograd-async-worker"), "the worker script")
    assert "--token-file" in out and "--listen" in out
    missing = run(
        [str(script), "--name", "w", "--token-file", str(outside / "absent")],
        outside,
        "autograd-async-worker without a token file",
    )
    assert missing.returncode == 1 and "absent" in missing.stderr
    gone = run([str(venv), "-c", "import workers"], outside, "import workers")
    assert gone.returncode != 0 and "No module named 'workers'" in gone.stderr


def test_a_backward_awaited_on_cpu_and_sim_runs_from_the_wheel(venv, outside):
    (outside / "smoke.py").write_text(SMOKE)
    out = check(run([str(venv), "smoke.py"], outside, "the smoke test"), "the smoke test")
    assert out.splitlines() == ["backward ok on cpu", "backward ok on sim:0"]


def test_the_readme_example_trains_from_the_wheel(venv, outside):
    for name in ("async_training.py", "_cli.py", "_data.py"):
        shutil.copy(ROOT / "examples" / name, outside / name)
    command = [str(venv), "async_training.py", "--epochs", "1", "--device", "sim:0", "--quiet"]
    out = check(run(command, outside, "examples/async_training.py"), "async_training.py")
    found = re.search(r"test accuracy ([\d.]+)% after 1 epochs .* on sim:0", out)
    assert found, out
    assert float(found.group(1)) >= 50.0  # 10% is chance; one epoch reaches about 90%
