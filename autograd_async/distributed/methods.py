"""The methods a worker serves, each with a strict spec of its kwargs (section 8 of the docs).

Methods travel in the `method` field of `request` frames; their kwargs are checked here with the
same validators as frame headers (`schema.MessageRegistry`), so a malformed call is refused with
a message naming the method and the field, before any of it is used.

Tensors travel as the frame's arrays. Positional arguments are a list of maps, one per argument:
`{"tensor": i}` (array `i` of the frame) or `{"value": v}` (a simple value).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .errors import ProtocolError
from .schema import MessageRegistry, NonNegativeInt

__all__ = ["METHODS", "check_arg_specs", "check_call", "method_names"]

METHODS = MessageRegistry()

_FORWARD = {"args": list[dict], "kwargs": dict, "requires_grad": list[bool]}
_IN_CONTEXT = {"context_id": NonNegativeInt, "record": bool}

# Forward calls: a registered function, or the forward of a module created on the worker.
METHODS.register("call", required={"function": str, **_FORWARD}, optional=_IN_CONTEXT,
                 arrays=True)
METHODS.register("module.forward", required={"module_id": NonNegativeInt, **_FORWARD},
                 optional=_IN_CONTEXT, arrays=True)
# Backward of one recorded call: gradients for some of its tensor outputs (by position).
METHODS.register("backward", required={"context_id": NonNegativeInt, "call_id": NonNegativeInt,
                                       "outputs": list[NonNegativeInt], "retain_graph": bool},
                 arrays=True)
METHODS.register("context.release", required={"context_id": NonNegativeInt})
METHODS.register("context.gradients", required={"context_id": NonNegativeInt},
                 optional={"module_id": NonNegativeInt})
METHODS.register("module.create", required={"class_name": str, "kwargs": dict})
METHODS.register("module.delete", required={"module_id": NonNegativeInt})
METHODS.register("module.train", required={"module_id": NonNegativeInt, "mode": bool})
METHODS.register("module.state_dict", required={"module_id": NonNegativeInt})
METHODS.register("module.load_state_dict",
                 required={"module_id": NonNegativeInt, "names": list[str], "strict": bool},
                 arrays=True)
METHODS.register("optim.create",
                 required={"class_name": str, "kwargs": dict, "params": list[dict]})
METHODS.register("optim.step",
                 required={"optimizer_id": NonNegativeInt, "context_id": NonNegativeInt})
METHODS.register("optim.delete", required={"optimizer_id": NonNegativeInt})
METHODS.register("stats")


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
