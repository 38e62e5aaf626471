"""Skip markers for tests that need ops still being written, named so the skip reason says which."""

from __future__ import annotations

import pytest

import autograd_async as aa
from autograd_async.nn import functional as F  # noqa: N812


def has_op(name: str) -> bool:
    """True when the op (`F.linear`, a Tensor method, or `indexing`) exists."""
    if name.startswith("F."):
        return hasattr(F, name[2:])
    if name == "indexing":
        return hasattr(aa.Tensor, "__getitem__")
    return hasattr(aa.Tensor, name)


def needs(*names: str) -> pytest.MarkDecorator:
    """Skip unless every op named exists ('F.linear', 'sum', 'indexing', ...)."""
    missing = [n for n in names if not has_op(n)]
    return pytest.mark.skipif(bool(missing), reason=f"ops not implemented yet: {missing}")
