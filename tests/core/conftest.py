"""The `lib` fixture: this library, then PyTorch, for tests that run one program on both."""

from __future__ import annotations

from typing import Any

import pytest

import autograd_async as aa


@pytest.fixture(params=["ours", "torch"])
def lib(request: pytest.FixtureRequest) -> Any:
    """This library, then PyTorch (skipped when it is not installed)."""
    if request.param == "ours":
        return aa
    return pytest.importorskip("torch")
