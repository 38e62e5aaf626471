"""The `ag` fixture of the port of PyTorch's autograd tests (test_pytorch_autograd_port*.py).

`ag` is the library under test, `autograd_async`. Setting AUTOGRAD_PORT_REFERENCE=torch runs the
same tests against PyTorch instead, which checks that the port asserts what PyTorch does and not
what this library happens to do. As in PyTorch's file, the default dtype is float64 while a
test runs.
"""

from __future__ import annotations

import os

import pytest

import autograd_async as aa


def _library():
    if os.environ.get("AUTOGRAD_PORT_REFERENCE") == "torch":
        return pytest.importorskip("torch")
    return aa


@pytest.fixture
def ag():
    """The library whose autograd the ported tests exercise, with float64 as default dtype."""
    lib = _library()
    previous = lib.get_default_dtype()
    lib.set_default_dtype(lib.float64)
    try:
        yield lib
    finally:
        lib.set_default_dtype(previous)
