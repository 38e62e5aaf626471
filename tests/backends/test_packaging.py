"""CuPy comes only from the cuda extras: installing the package, or its dev and other extras,
never installs (or reinstalls over a user's own build) CuPy."""

from __future__ import annotations

import tomllib

from .helpers import ROOT


def _project() -> dict:
    with open(ROOT / "pyproject.toml", "rb") as f:
        return tomllib.load(f)["project"]


def test_cupy_only_in_the_cuda_extras():
    project = _project()
    extras = project["optional-dependencies"]
    assert extras["cuda12"] == ["cupy-cuda12x>=13"]
    assert extras["cuda13"] == ["cupy-cuda13x>=14"]
    assert extras["cuda"] == extras["cuda12"]  # the older name stays an alias
    assert not any("cupy" in dep for dep in project.get("dependencies", []))
    for name, deps in extras.items():
        if not name.startswith("cuda"):
            assert not any("cupy" in dep for dep in deps), name


def test_the_library_does_not_import_cupy_until_a_cuda_device_is_used():
    import subprocess
    import sys

    code = (
        "import sys, autograd_async as aa\n"
        "x = aa.ones(3, device='sim:0', requires_grad=True)\n"
        "(x * 2).sum().backward()\n"
        "aa.Tensor.__repr__(x); aa.backends.backends.for_type('cuda')\n"
        "print('cupy' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=True,
        env={"PYTHONPATH": str(ROOT), "PATH": ""},
    )
    assert out.stdout.strip() == "False"
