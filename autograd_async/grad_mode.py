"""Grad mode and anomaly mode, held in ContextVars so each asyncio task and thread has its own."""

from __future__ import annotations

import contextvars
import functools
import inspect
import warnings
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


class _NoArgumentMode(_ModeContext):
    """A mode that also decorates without parentheses (`@no_grad`), as PyTorch's do."""

    def __new__(cls, orig_func: Callable[..., Any] | None = None) -> Any:
        if orig_func is None:
            return super().__new__(cls)
        return cls()(orig_func)


class no_grad(_NoArgumentMode):  # noqa: N801 - PyTorch's name
    """Disable graph recording in a block or a decorated function."""

    _var = grad_enabled

    def __init__(self) -> None:
        super().__init__(False)


class enable_grad(_NoArgumentMode):  # noqa: N801
    """Enable graph recording in a block or a decorated function (inside `no_grad`)."""

    _var = grad_enabled

    def __init__(self) -> None:
        super().__init__(True)


class set_grad_enabled(_ModeContext):  # noqa: N801
    """Enable or disable graph recording.

    As in PyTorch it takes effect when called, so `set_grad_enabled(False)` alone switches the
    mode for the rest of the current context; `with set_grad_enabled(False):` restores the previous
    mode on exit, and as a decorator it leaves the caller's mode alone.
    """

    _var = grad_enabled

    def __init__(self, mode: bool) -> None:
        super().__init__(bool(mode))
        self._call_token: contextvars.Token | None = grad_enabled.set(self._value)

    def _undo_call(self) -> None:
        token, self._call_token = self._call_token, None
        if token is not None:
            try:
                self._var.reset(token)
            except ValueError:  # set in another context: that context keeps the mode
                pass

    def __exit__(self, *exc: object) -> None:
        super().__exit__(*exc)
        self._undo_call()

    def __call__(self, fn: F) -> F:
        self._undo_call()
        return super().__call__(fn)


ANOMALY_ENABLED_WARNING = (
    "Anomaly Detection has been enabled. This mode will increase the runtime and should only be "
    "enabled for debugging."
)


class set_detect_anomaly:  # noqa: N801
    """Turn anomaly mode on or off: forward tracebacks on backward errors, NaN checks in backward.

    As in PyTorch it takes effect when called (`set_detect_anomaly(True)` alone turns it on for the
    current context); used with `with`, the previous mode comes back on exit.
    """

    def __init__(self, mode: bool, check_nan: bool = True) -> None:
        self._tokens = (anomaly_enabled.set(bool(mode)), anomaly_check_nan.set(bool(check_nan)))

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc: object) -> None:
        mode_token, nan_token = self._tokens
        anomaly_check_nan.reset(nan_token)
        anomaly_enabled.reset(mode_token)


class detect_anomaly(_ModeContext):  # noqa: N801
    """Anomaly mode on for a block or a decorated function: see `set_detect_anomaly`."""

    _var = anomaly_enabled

    def __init__(self, check_nan: bool = True) -> None:
        super().__init__(True)
        warnings.warn(ANOMALY_ENABLED_WARNING, UserWarning, stacklevel=2)
        self._check_nan = bool(check_nan)
        self._nan_tokens: list[contextvars.Token] = []

    def __enter__(self) -> None:
        super().__enter__()
        self._nan_tokens.append(anomaly_check_nan.set(self._check_nan))

    def __exit__(self, *exc: object) -> None:
        anomaly_check_nan.reset(self._nan_tokens.pop())
        super().__exit__(*exc)


def is_anomaly_enabled() -> bool:
    """True when anomaly mode is on in the current context."""
    return anomaly_enabled.get()
