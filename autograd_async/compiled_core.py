"""Whether a compiled core runs the graph-task bookkeeping: not yet, the pure-Python core runs.

A compiled core (an extension module taking over the bookkeeping of `graph_task`) will say here
that it is active, so that `python -m autograd_async doctor`, tests and bug reports ask one place.
"""

from __future__ import annotations

__all__ = ["active_compiled_core", "describe_compiled_core"]


def active_compiled_core() -> str | None:
    """The name of the compiled core in use, or None while the pure-Python core runs."""
    return None


def describe_compiled_core() -> str:
    """One line for reports: `no (pure Python)` or `yes (<name>)`."""
    name = active_compiled_core()
    return "no (pure Python)" if name is None else f"yes ({name})"
