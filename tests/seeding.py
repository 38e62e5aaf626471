"""One check that a random draw follows `aa.manual_seed` and `aa.Generator` on a device."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

import autograd_async as aa


def host(t: aa.Tensor) -> np.ndarray:
    """The values of `t`, on the host."""
    return np.asarray(t.cpu())


def assert_follows_the_seed(make: Callable[[str, Any], aa.Tensor], device: str) -> None:
    """`make(device, generator)` repeats under one seed, differs under another, and a
    `Generator` of its own gives the same values twice."""
    aa.manual_seed(7)
    first = host(make(device, None))
    aa.manual_seed(7)
    again = host(make(device, None))
    aa.manual_seed(8)
    other = host(make(device, None))
    np.testing.assert_array_equal(first, again)
    assert not np.array_equal(first, other)
    np.testing.assert_array_equal(
        host(make(device, aa.Generator(5))), host(make(device, aa.Generator(5)))
    )
