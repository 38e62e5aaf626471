"""The methods a worker serves, each with a strict spec of its kwargs (section 8 of the docs).

Methods travel in the `method` field of `request` frames; their kwargs are checked here with the
same validators as frame headers (`schema.MessageRegistry`), so a malformed call is refused with
a message naming the method and the field, before any of it is used.

Tensors travel as the frame's arrays. Positional arguments are a list of maps, one per argument:
`{"tensor": i}` (array `i` of the frame) or `{"value": v}` (a simple value).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from .errors import ProtocolError
from .schema import MessageRegistry, NonNegativeInt, list_of

__all__ = [
    "BACKWARD",
    "CALL",
    "CONTEXT_GRADIENTS",
    "CONTEXT_RELEASE",
    "METHODS",
    "MODULE_CREATE",
    "MODULE_DELETE",
    "MODULE_FORWARD",
    "MODULE_LOAD_STATE_DICT",
    "MODULE_STATE_DICT",
    "MODULE_TRAIN",
    "OPTIM_CREATE",
    "OPTIM_DELETE",
    "OPTIM_STEP",
    "PEERS_UPDATE",
    "STATS",
    "bind_handlers",
    "check_arg_specs",
    "check_call",
    "handles",
    "method_names",
]

F = TypeVar("F", bound=Callable[..., Any])

# The one table of remote methods: each is declared here, once, with the spec of its kwargs.
# Callers name a method by its constant; a server binds its handlers with `@handles(CONSTANT)`.
METHODS = MessageRegistry()


def _declare(
    name: str,
    *,
    required: Mapping[str, Any] | None = None,
    optional: Mapping[str, Any] | None = None,
    arrays: bool = False,
) -> str:
    METHODS.register(name, required=required, optional=optional, arrays=arrays)
    return name


_FORWARD = {"args": list[dict], "kwargs": dict, "requires_grad": list[bool]}
_IN_CONTEXT = {"context_id": NonNegativeInt, "record": bool}

# Forward calls: a registered function, or the forward of a module created on the worker.
CALL = _declare("call", required={"function": str, **_FORWARD}, optional=_IN_CONTEXT, arrays=True)
MODULE_FORWARD = _declare(
    "module.forward",
    required={"module_id": NonNegativeInt, **_FORWARD},
    optional=_IN_CONTEXT,
    arrays=True,
)
# Backward of one recorded call: gradients for some of its tensor outputs (by position).
BACKWARD = _declare(
    "backward",
    required={
        "context_id": NonNegativeInt,
        "call_id": NonNegativeInt,
        "outputs": list_of(NonNegativeInt),
        "retain_graph": bool,
    },
    arrays=True,
)
CONTEXT_RELEASE = _declare("context.release", required={"context_id": NonNegativeInt})
CONTEXT_GRADIENTS = _declare(
    "context.gradients",
    required={"context_id": NonNegativeInt},
    optional={"module_id": NonNegativeInt},
)
MODULE_CREATE = _declare("module.create", required={"class_name": str, "kwargs": dict})
MODULE_DELETE = _declare("module.delete", required={"module_id": NonNegativeInt})
MODULE_TRAIN = _declare("module.train", required={"module_id": NonNegativeInt, "mode": bool})
MODULE_STATE_DICT = _declare("module.state_dict", required={"module_id": NonNegativeInt})
MODULE_LOAD_STATE_DICT = _declare(
    "module.load_state_dict",
    required={"module_id": NonNegativeInt, "names": list[str], "strict": bool},
    arrays=True,
)
OPTIM_CREATE = _declare(
    "optim.create", required={"class_name": str, "kwargs": dict, "params": list[dict]}
)
OPTIM_STEP = _declare(
    "optim.step", required={"optimizer_id": NonNegativeInt, "context_id": NonNegativeInt}
)
OPTIM_DELETE = _declare("optim.delete", required={"optimizer_id": NonNegativeInt})
STATS = _declare("stats")
# Where the worker's peers are: add or move some (name -> address), forget others.
PEERS_UPDATE = _declare("peers.update", optional={"addresses": dict, "remove": list[str]})


def handles(method: str) -> Callable[[F], F]:
    """Mark a server method as the handler of remote `method` (one of the constants above)."""
    if method not in METHODS:
        raise ValueError(f"{method!r} is not a declared remote method (methods.py)")

    def mark(fn: F) -> F:
        fn.__remote_method__ = method  # type: ignore[attr-defined]
        return fn

    return mark


def bind_handlers(server: object) -> dict[str, Callable[..., Any]]:
    """The bound handlers of `server`, by method; every declared method must have exactly one."""
    found: dict[str, Callable[..., Any]] = {}
    for attr in dir(type(server)):
        method = getattr(getattr(type(server), attr, None), "__remote_method__", None)
        if method is None:
            continue
        if method in found:
            raise TypeError(f"{type(server).__name__} handles {method!r} twice")
        found[method] = getattr(server, attr)
    missing = [m for m in METHODS.names() if m not in found]
    if missing:
        raise TypeError(f"{type(server).__name__} has no handler for {', '.join(missing)}")
    return found


def method_names() -> list[str]:
    """The names of the methods a worker serves."""
    return METHODS.names()


def check_call(method: str, kwargs: Mapping[str, Any], n_arrays: int) -> None:
    """Raise ProtocolError unless `kwargs` fit the spec of `method` (which must exist)."""
    if method not in METHODS:
        raise ProtocolError(
            f"unknown method {method!r}; a worker serves: {', '.join(method_names())}"
        )
    METHODS.get(method).check_fields(kwargs, n_arrays)


def check_arg_specs(specs: list[dict], n_arrays: int) -> None:
    """Each positional argument is exactly `{"tensor": i}` or `{"value": v}`."""
    for i, spec in enumerate(specs):
        if len(spec) != 1 or not ({"tensor", "value"} & spec.keys()):
            raise ProtocolError(
                f"argument {i} must be {{'tensor': index}} or {{'value': v}}, got keys "
                f"{sorted(spec)}"
            )
        index = spec.get("tensor")
        if "tensor" in spec and (
            not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < n_arrays
        ):
            raise ProtocolError(
                f"argument {i} refers to array {index!r} but the frame carries {n_arrays} arrays"
            )
