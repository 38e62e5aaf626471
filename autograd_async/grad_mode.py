"""Grad mode and anomaly mode, held in ContextVars so each asyncio task and thread has its own."""

from __future__ import annotations

import contextvars
import functools
import inspect
from collections.abc import Callable
from typing import Any, TypeVar

grad_enabled: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "autograd_async_grad_enabled", default=True
)
anomaly_enabled: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "autograd_async_anomaly_enabled", default=False
)
anomaly_check_nan: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "autograd_async_anomaly_check_nan", default=True
)

F = TypeVar("F", bound=Callable[..., Any])


def is_grad_enabled() -> bool:
    """True when operations record the autograd graph in the current context."""
    return grad_enabled.get()


class _ModeContext:
    """A context manager and decorator that sets a ContextVar for its extent."""

    _var: contextvars.ContextVar[bool]

    def __init__(self, value: bool) -> None:
        self._value = value
        self._tokens: list[contextvars.Token] = []

    def __enter__(self) -> None:
        self._tokens.append(self._var.set(self._value))

    def __exit__(self, *exc: object) -> None:
        self._var.reset(self._tokens.pop())

    def __call__(self, fn: F) -> F:
        value, var = self._value, self._var
        if inspect.iscoroutinefunction(fn):

            @functools.wraps(fn)
            async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
                token = var.set(value)
                try:
                    return await fn(*args, **kwargs)
                finally:
                    var.reset(token)

            return async_wrapper  # type: ignore[return-value]

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            token = var.set(value)
            try:
                return fn(*args, **kwargs)
            finally:
                var.reset(token)

        return wrapper  # type: ignore[return-value]


class set_grad_enabled(_ModeContext):  # noqa: N801 - PyTorch's name
    """Enable or disable graph recording: `with set_grad_enabled(False):` or as a decorator."""

    _var = grad_enabled

    def __init__(self, mode: bool) -> None:
        super().__init__(bool(mode))


class no_grad(set_grad_enabled):  # noqa: N801
    """Disable graph recording in a block or a decorated function."""

    def __init__(self) -> None:
        super().__init__(False)


class enable_grad(set_grad_enabled):  # noqa: N801
    """Enable graph recording in a block or a decorated function (inside `no_grad`)."""

    def __init__(self) -> None:
        super().__init__(True)


class set_detect_anomaly(_ModeContext):  # noqa: N801
    """Turn anomaly mode on or off: forward tracebacks on backward errors, NaN checks in backward."""

    _var = anomaly_enabled

    def __init__(self, mode: bool, check_nan: bool = True) -> None:
        super().__init__(bool(mode))
        self._check_nan = check_nan
        self._nan_tokens: list[contextvars.Token] = []

    def __enter__(self) -> None:
        super().__enter__()
        self._nan_tokens.append(anomaly_check_nan.set(self._check_nan))

    def __exit__(self, *exc: object) -> None:
        anomaly_check_nan.reset(self._nan_tokens.pop())
        super().__exit__(*exc)


class detect_anomaly(set_detect_anomaly):  # noqa: N801
    """Anomaly mode on for a block: see `set_detect_anomaly`."""

    def __init__(self, check_nan: bool = True) -> None:
        super().__init__(True, check_nan)


def is_anomaly_enabled() -> bool:
    """True when anomaly mode is on in the current context."""
    return anomaly_enabled.get()
