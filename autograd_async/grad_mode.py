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
inference_enabled: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "autograd_async_inference_mode", default=False
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

    def _settings(self) -> tuple[tuple[contextvars.ContextVar, Any], ...]:
        """The (ContextVar, value) pairs a decorated function runs with."""
        return ((self._var, self._value),)

    def __call__(self, fn: F) -> F:
        var: Any = _Settings(self._settings())
        value = None
        if inspect.isgeneratorfunction(fn):
            return _wrap_generator(fn, var, value)  # type: ignore[return-value]
        if inspect.isasyncgenfunction(fn):
            return _wrap_async_generator(fn, var, value)  # type: ignore[return-value]
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


class _Settings:
    """Several ContextVars set and reset together, with ContextVar's `set`/`reset` interface."""

    __slots__ = ("_pairs",)

    def __init__(self, pairs: tuple[tuple[contextvars.ContextVar, Any], ...]) -> None:
        self._pairs = pairs

    def set(self, _: Any) -> list[contextvars.Token]:
        return [var.set(value) for var, value in self._pairs]

    def reset(self, tokens: list[contextvars.Token]) -> None:
        for (var, _), token in zip(reversed(self._pairs), reversed(tokens), strict=True):
            var.reset(token)


def _wrap_generator(fn: Callable, var: Any, value: Any) -> Callable:
    """A generator function whose body runs with `var` set each time it resumes.

    The mode is set around every `send`/`throw`/`close` and restored when the generator yields,
    so the caller's code between two `next()` calls keeps its own mode (PyTorch's behaviour).
    """

    @functools.wraps(fn)
    def generator_context(*args: Any, **kwargs: Any) -> Any:
        gen = fn(*args, **kwargs)

        def resume(method: Callable, *arg: Any) -> Any:
            token = var.set(value)
            try:
                return method(*arg)
            finally:
                var.reset(token)

        try:
            response = resume(gen.send, None)
            while True:
                try:
                    request = yield response
                except GeneratorExit:
                    resume(gen.close)
                    raise
                except BaseException as exc:  # thrown in by the caller: the generator sees it
                    response = resume(gen.throw, exc)
                else:
                    response = resume(gen.send, request)
        except StopIteration as stop:
            return stop.value

    return generator_context


def _wrap_async_generator(fn: Callable, var: Any, value: Any) -> Callable:
    """An async generator function whose body runs with `var` set each time it resumes."""

    @functools.wraps(fn)
    async def async_generator_context(*args: Any, **kwargs: Any) -> Any:
        gen = fn(*args, **kwargs)

        async def resume(method: Callable, *arg: Any) -> Any:
            token = var.set(value)
            try:
                return await method(*arg)
            finally:
                var.reset(token)

        try:
            response = await resume(gen.asend, None)
            while True:
                try:
                    request = yield response
                except GeneratorExit:
                    await resume(gen.aclose)
                    raise
                except BaseException as exc:
                    response = await resume(gen.athrow, exc)
                else:
                    response = await resume(gen.asend, request)
        except StopAsyncIteration:
            return

    return async_generator_context


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

    def _settings(self) -> tuple[tuple[contextvars.ContextVar, Any], ...]:
        return ((anomaly_enabled, True), (anomaly_check_nan, self._check_nan))


def is_anomaly_enabled() -> bool:
    """True when anomaly mode is on in the current context."""
    return anomaly_enabled.get()


def is_anomaly_check_nan_enabled() -> bool:
    """True when anomaly mode, where on, checks backward's outputs for NaN."""
    return anomaly_check_nan.get()


def set_anomaly_enabled(enabled: bool, check_nan: bool = True) -> None:
    """Turn anomaly mode on or off in the current context (`torch.set_anomaly_enabled`)."""
    anomaly_enabled.set(bool(enabled))
    anomaly_check_nan.set(bool(check_nan))


class inference_mode(_ModeContext):  # noqa: N801 - PyTorch's name
    """Inference mode for a block or a decorated function: no graph is recorded, and tensors made
    inside are inference tensors, which refuse to be saved for backward, to require grad or to be
    changed in place outside inference mode (PyTorch's errors).

    `inference_mode(False)` turns it off inside an enclosing one, with grad mode back on. Usable
    without parentheses as a decorator, as PyTorch's.
    """

    def __new__(cls, mode: Any = True) -> Any:
        if callable(mode):  # @inference_mode
            return cls()(mode)
        return super().__new__(cls)

    def __init__(self, mode: bool = True) -> None:
        super().__init__(bool(mode))
        self._pairs_tokens: list[list[contextvars.Token]] = []

    def _settings(self) -> tuple[tuple[contextvars.ContextVar, Any], ...]:
        return ((inference_enabled, self._value), (grad_enabled, not self._value))

    def __enter__(self) -> None:
        self._pairs_tokens.append(_Settings(self._settings()).set(None))

    def __exit__(self, *exc: object) -> None:
        _Settings(self._settings()).reset(self._pairs_tokens.pop())

    def clone(self) -> inference_mode:
        """A new context with the same mode (PyTorch's)."""
        return type(self)(self._value)


def is_inference_mode_enabled() -> bool:
    """True inside `inference_mode()` in the current context."""
    return inference_enabled.get()
