"""Helpers for the core tests: fresh threads, node names and graph shapes across libraries."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import numpy as np

import autograd_async as aa


def in_fresh_thread(fn: Callable[[], Any]) -> Any:
    """Run `fn` in a new thread (sequence numbers start at 0 there) and return its result."""
    box: list = []
    errors: list = []

    def main() -> None:
        try:
            box.append(fn())
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller
            errors.append(exc)

    thread = threading.Thread(target=main)
    thread.start()
    thread.join(30)
    if errors:
        raise errors[0]
    return box[0]


def node_name(node: Any) -> str | None:
    """A node's name without PyTorch's C++ namespace (`torch::autograd::AccumulateGrad`)."""
    return None if node is None else node.name().rsplit("::", 1)[-1]


def structure(node: Any) -> Any:
    """A node as nested `(name, ((child, input_nr), ...))`, comparable across libraries."""
    if node is None:
        return None
    return (
        node_name(node),
        tuple((structure(nxt), nr) for nxt, nr in node.next_functions),
    )


def values(t: Any) -> np.ndarray:
    """A tensor's values (either library) as a float64 NumPy array."""
    if isinstance(t, aa.Tensor):
        return np.asarray(t.detach().__array__(), dtype=np.float64)
    return t.detach().cpu().double().numpy()
