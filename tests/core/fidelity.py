"""Helpers for running the same program on this library and on PyTorch (the `lib` fixture of
`conftest.py` gives each in turn).

A test asserts that the program's result (plain lists, strings, bools) equals the expected one
on both; so it checks this library even where PyTorch is not installed, and fails where PyTorch
behaves otherwise than the test expects.
"""

from __future__ import annotations

from typing import Any


def error_of(fn: Any) -> tuple[str, str]:
    """The type name and message of what `fn()` raises (("", "") when it does not raise)."""
    try:
        fn()
    except Exception as exc:  # noqa: BLE001 - the type is what the test compares
        return type(exc).__name__, str(exc)
    return "", ""


def before_hint(message: str) -> str:
    """A version-counter error up to its hint, which names each library's own API."""
    return message.split(" Hint:")[0]
