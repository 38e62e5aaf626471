"""Saved-tensor hooks: `pack` what an op or a custom Function saves for backward, `unpack` it there.

The innermost `saved_tensors_hooks(pack_hook, unpack_hook)` active when a tensor is saved decides
how it is stored: `pack_hook(tensor)` returns any object, kept instead of the tensor, and
`unpack_hook(that object)` gives a tensor back when backward reads it. The active hooks live in a
ContextVar, so they follow the thread or asyncio task that set them and nothing else.

As in PyTorch, a tensor saved through hooks is not checked against later in-place changes (the
graph no longer holds it), and the unpacked value takes the saved tensor's place in the graph: it
gets the original's `grad_fn` (or, for a leaf, its gradient accumulator), so double backward
through it reaches the same nodes.
"""

from __future__ import annotations

import contextvars
import weakref
from collections.abc import Callable
from typing import Any

from .graph import Node, grad_accumulator
from .tensor import Tensor

Hooks = tuple[Callable[[Tensor], Any], Callable[[Any], Tensor]]

hooks_stack: contextvars.ContextVar[tuple[Hooks, ...]] = contextvars.ContextVar(
    "autograd_async_saved_tensors_hooks", default=()
)


# While `disable_saved_tensors_hooks(message)` is active, its message: entering hooks then fails.
hooks_disabled: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "autograd_async_saved_tensors_hooks_disabled", default=None
)

PACK_IN_PLACE_MESSAGE = (
    "A saved tensor pack hook is modifying its input in place. Tensors provided as input to pack "
    "hook can not be modified by in-place operations as this can lead to unexpected "
    "side-effects. Please open an issue if you need to perform in-place operations on the input "
    "to a pack hook."
)


def active() -> Hooks | None:
    """The innermost (pack, unpack) pair in the current context, or None: cheap, called per op."""
    stack = hooks_stack.get()
    return stack[-1] if stack else None


class PackedTensor:
    """What a node keeps for one saved tensor while hooks are active."""

    __slots__ = ("value", "unpack_hook", "grad_fn", "output_nr", "accumulator", "requires_grad")

    def __init__(
        self,
        value: Any,
        unpack_hook: Callable,
        grad_fn: Node | None,
        output_nr: int,
        accumulator: Node | None,
        requires_grad: bool,
    ) -> None:
        self.value = value
        self.unpack_hook = unpack_hook
        self.grad_fn = grad_fn
        self.output_nr = output_nr
        self.accumulator = accumulator
        self.requires_grad = requires_grad


def _without_hooks(fn: Callable, arg: Any) -> Any:
    """Run a hook with hooks off: ops it runs save nothing through hooks (no recursion)."""
    token = hooks_stack.set(())
    try:
        return fn(arg)
    finally:
        hooks_stack.reset(token)


def pack(tensor: Tensor, hooks: Hooks | None = None) -> PackedTensor:
    """Store `tensor` through the innermost pack hook (or `hooks`), remembering its graph place."""
    if hooks is None:
        hooks = active()
        if hooks is None:
            raise RuntimeError("pack: no saved-tensor hooks are active")
    pack_hook, unpack_hook = hooks
    grad_fn = tensor.grad_fn
    accumulator = grad_accumulator(tensor) if grad_fn is None and tensor._rg else None
    version = tensor._version
    value = _without_hooks(pack_hook, tensor)
    if tensor._version != version:
        raise RuntimeError(PACK_IN_PLACE_MESSAGE)
    return PackedTensor(value, unpack_hook, grad_fn, tensor._output_nr, accumulator, tensor._rg)


def unpack(packed: PackedTensor) -> Tensor:
    """The saved tensor back from its unpack hook, in the original's place in the graph."""
    value = _without_hooks(packed.unpack_hook, packed.value)
    if not isinstance(value, Tensor):
        raise TypeError(
            "Output of saved tensor unpack_hook expected to be a Tensor but got result of type "
            f"{type(value).__name__}"
        )
    if packed.grad_fn is not None:
        return Tensor._wrap(value._data, value.device, packed.grad_fn, packed.output_nr)
    out = Tensor._wrap(value._data, value.device)
    if packed.accumulator is not None:
        out._rg = True
        out._grad_accumulator = weakref.ref(packed.accumulator)
    return out


def unpack_data(packed: Any) -> Any:
    """The array of an unpacked tensor (None and non-tensors pass through): for plain backward."""
    if type(packed) is not PackedTensor:
        return packed
    value = _without_hooks(packed.unpack_hook, packed.value)
    if not isinstance(value, Tensor):
        raise TypeError(
            "Output of saved tensor unpack_hook expected to be a Tensor but got result of type "
            f"{type(value).__name__}"
        )
    return value._data


class saved_tensors_hooks:  # noqa: N801 - PyTorch's name
    """Within this context, tensors saved for backward are stored as `pack_hook(tensor)` and read
    back in backward as `unpack_hook(packed)`; the innermost pair applies."""

    def __init__(
        self, pack_hook: Callable[[Tensor], Any], unpack_hook: Callable[[Any], Tensor]
    ) -> None:
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook
        self._tokens: list[contextvars.Token] = []

    def __enter__(self) -> saved_tensors_hooks:
        refusal = hooks_disabled.get()
        if refusal is not None:
            raise RuntimeError(refusal)
        pair = (self.pack_hook, self.unpack_hook)
        self._tokens.append(hooks_stack.set(hooks_stack.get() + (pair,)))
        return self

    def __exit__(self, *exc: object) -> None:
        hooks_stack.reset(self._tokens.pop())


class disable_saved_tensors_hooks:  # noqa: N801 - PyTorch's name
    """Within this context, entering `saved_tensors_hooks` raises RuntimeError(error_message):
    for code whose saved tensors must stay as they are (PyTorch's function transforms use it)."""

    def __init__(self, error_message: str) -> None:
        self.error_message = error_message
        self._tokens: list[contextvars.Token] = []

    def __enter__(self) -> disable_saved_tensors_hooks:
        self._tokens.append(hooks_disabled.set(self.error_message))
        return self

    def __exit__(self, *exc: object) -> None:
        hooks_disabled.reset(self._tokens.pop())

    def __call__(self, fn: Callable) -> Callable:
        import functools  # noqa: PLC0415

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with disable_saved_tensors_hooks(self.error_message):
                return fn(*args, **kwargs)

        return wrapper
