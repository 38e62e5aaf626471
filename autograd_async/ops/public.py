"""What every public function of the `autograd_async` namespace shares with PyTorch's: `out=`, and
argument errors that name the function the user called.

The op modules define functions that do the math and check what they need; this module wraps
each one as it is exported, so that neither concern is written again in each op:

- `out=`: PyTorch's functions write their result into a given tensor (cast to its dtype, resized
  when its shape differs, its version bumped) and return it. As in PyTorch, out= refuses to take
  part in autograd: an argument that requires grad is an error.
- Errors: a call that fails because its first argument is not a tensor (`aa.cat(5)`,
  `aa.sum("x")`), or because its arguments do not fit the signature (`aa.ge(x)`), gets PyTorch's
  TypeError naming the public name (`arccos`, not the `acos` it aliases).
"""

from __future__ import annotations

import functools
import inspect
import warnings
from collections.abc import Callable, Iterable
from typing import Any

from ..compiled_core import is_source_function
from ..core.op import torch_type_name
from ..core.tensor import Tensor
from ..grad_mode import grad_enabled, no_grad
from .inplace import copy_

# Parameters that hold several tensors: PyTorch words their errors "tuple of Tensors".
_SEQUENCE_PARAMETERS = frozenset({"tensors", "seq", "inputs", "matrices", "arrays"})

# First parameters that are not tensors: a failure there is not a wrong-typed tensor.
_NOT_TENSOR_PARAMETERS = frozenset(
    {
        "equation",
        "size",
        "sizes",
        "shape",
        "shapes",
        "mean",
        "dtype",
        "type1",
        "from_",
        "row",
        "n",
        "start",
        "end",
        "steps",
        "window_length",
        "data",
        "obj",
        "ndarray",
        "fill_value",
        "low",
        "high",
        "elements",
        "M",
        "N",
    }
)

# Functions PyTorch has no out= for: views, functions returning several views or a list.
OUT_REFUSED = frozenset(
    {
        "reshape",
        "view_as",
        "flatten",
        "unflatten",
        "squeeze",
        "unsqueeze",
        "transpose",
        "swapaxes",
        "swapdims",
        "permute",
        "movedim",
        "moveaxis",
        "t",
        "narrow",
        "select",
        "diagonal",
        "expand",
        "expand_as",
        "broadcast_to",
        "broadcast_tensors",
        "split",
        "chunk",
        "unbind",
        "tensor_split",
        "hsplit",
        "vsplit",
        "dsplit",
        "split_with_sizes",
        "atleast_1d",
        "atleast_2d",
        "atleast_3d",
        "meshgrid",
        "view_as_real",
        "view_as_complex",
        "real",
        "imag",
        "conj",
        "adjoint",
        "detach",
        "unique",
        "unique_consecutive",
        "as_strided",
        "numel",
        "is_tensor",
        "is_floating_point",
        "is_complex",
        "result_type",
        "promote_types",
        "can_cast",
        "allclose",
        "equal",
        "dropout",
        "alpha_dropout",
        "feature_alpha_dropout",
        "softmax",
        "log_softmax",
        "from_numpy",
        "as_tensor",
        "tensor",
        "from_dlpack",
        "zeros_like",
        "ones_like",
        "empty_like",
        "full_like",
        "rand_like",
        "randn_like",
        "randint_like",
        "nonzero_static",
        "broadcast_shapes",
        "is_same_size",
        "is_nonzero",
    }
)

OUT_REQUIRES_GRAD_MESSAGE = (
    "{}(): functions with out=... arguments don't support automatic differentiation, but one of "
    "the arguments requires grad."
)


def torch_function(name: str, fn: Callable, *, with_out: bool = True) -> Callable:
    """`fn` exported as `name`: with PyTorch's `out=` (unless refused) and named errors."""
    first, expected = _first_parameter(fn)
    takes_out = with_out and name not in OUT_REFUSED and not _has_own_out(fn)

    @functools.wraps(fn)
    def public(*args: Any, **kwargs: Any) -> Any:
        if takes_out and "out" in kwargs:
            out = kwargs.pop("out")
            if out is not None:
                return _write_out(name, fn, args, kwargs, out)
        try:
            return fn(*args, **kwargs)
        except (TypeError, AttributeError) as exc:
            better = _named_error(name, first, expected, args, kwargs, exc)
            if better is None:
                raise
            raise better from exc

    return public


def torch_functions(names: Iterable[str], namespace: dict, *, with_out: bool = True) -> dict:
    """The functions of `namespace` called `names`, wrapped by `torch_function`."""
    wrapped = {}
    for name in names:
        fn = namespace.get(name)
        if is_source_function(fn) and not hasattr(fn, "__wrapped_public__"):
            wrapped[name] = torch_function(name, fn, with_out=with_out)
            wrapped[name].__wrapped_public__ = True  # type: ignore[attr-defined]  # a marker on the function
    return wrapped


def _has_own_out(fn: Callable) -> bool:
    try:
        return "out" in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False


def _first_parameter(fn: Callable) -> tuple[str | None, str]:
    """The name of `fn`'s first parameter, and how PyTorch words what it expects there."""
    try:
        parameters = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return None, "Tensor"
    if not parameters:
        return None, "Tensor"
    first = parameters[0]
    if first.kind is inspect.Parameter.KEYWORD_ONLY or first.name in _NOT_TENSOR_PARAMETERS:
        return None, "Tensor"
    if first.name in _SEQUENCE_PARAMETERS:
        return first.name, "tuple of Tensors"
    if first.kind is inspect.Parameter.VAR_POSITIONAL:
        # `*tensors` (broadcast_tensors, meshgrid) take tensors; `*size` and the like do not.
        return (first.name, "Tensor") if first.name in ("tensors", "operands") else (None, "")
    return first.name, "Tensor"


def _named_error(
    name: str,
    first: str | None,
    expected: str,
    args: tuple,
    kwargs: dict,
    exc: BaseException,
) -> TypeError | None:
    """PyTorch's TypeError for the failed call, or None when the failure is not the caller's."""
    if isinstance(exc, TypeError) and exc.__traceback__ is not None:
        # The call itself did not bind: the traceback ends in this module's frame.
        if exc.__traceback__.tb_next is None:
            message = str(exc)
            detail = message.split("() ", 1)[1] if "() " in message else message
            return TypeError(f"{name}() {detail}")
    if first is None or f"{name}(" in str(exc):
        return None  # the op's own message already names it
    value = args[0] if args else kwargs.get(first, kwargs.get("input"))
    if value is None and not args:
        return None
    if _fits(value, expected):
        return None
    if expected != "Tensor" and isinstance(value, list | tuple):
        i, item = next((i, v) for i, v in enumerate(value) if not isinstance(v, Tensor))
        return TypeError(
            f"{name}(): expected Tensor as element {i} in argument 0, but got {type(item).__name__}"
        )
    return TypeError(
        f"{name}(): argument '{first}' (position 1) must be {expected}, not {type(value).__name__}"
    )


def _fits(value: Any, expected: str) -> bool:
    if expected == "Tensor":
        return isinstance(value, Tensor)
    return isinstance(value, list | tuple) and all(isinstance(v, Tensor) for v in value)


# ------------------------------------------------------------------------------------------- out=
def _write_out(name: str, fn: Callable, args: tuple, kwargs: dict, out: Any) -> Any:
    """Run `fn` and write its result into `out` (one tensor, or one per result of a tuple)."""
    outs = out if isinstance(out, tuple | list) else (out,)
    for o in outs:
        if not isinstance(o, Tensor):
            raise TypeError(
                f"{name}(): argument 'out' must be Tensor or tuple of Tensors, not "
                f"{type(o).__name__}"
            )
    if grad_enabled.get() and _any_requires_grad((*args, *kwargs.values(), *outs)):
        raise RuntimeError(OUT_REQUIRES_GRAD_MESSAGE.format(name))
    with no_grad():
        result = fn(*args, **kwargs)
        results = result if isinstance(result, tuple) else (result,)
        if len(results) != len(outs) or not isinstance(out, tuple | list) and len(results) > 1:
            raise TypeError(
                f"{name}(): argument 'out' must be a tuple of {len(results)} Tensors, "
                f"got {len(outs)}"
            )
        for o, r in zip(outs, results, strict=True):
            _copy_result(name, o, r)
    if not isinstance(result, tuple):
        return out
    return type(result)(*outs) if hasattr(result, "_fields") else tuple(outs)


def _any_requires_grad(values: tuple) -> bool:
    for v in values:
        if isinstance(v, Tensor) and v.requires_grad:
            return True
        if isinstance(v, list | tuple) and _any_requires_grad(tuple(v)):
            return True
    return False


# bool < integer < floating < complex: PyTorch's `can_cast` refuses a cast down this order.
_KIND_RANK = {"b": 0, "u": 1, "i": 1, "f": 2, "V": 2, "c": 3}


def _copy_result(name: str, out: Tensor, result: Any) -> None:
    """`out` takes `result`'s values: checked for dtype and device, resized like PyTorch."""
    if not isinstance(result, Tensor):
        raise TypeError(f"{name}() does not take out=: it returns {type(result).__name__}")
    if _KIND_RANK.get(result.dtype.kind, 2) > _KIND_RANK.get(out.dtype.kind, 2):
        raise RuntimeError(
            f"result type {torch_type_name(result.dtype)} can't be cast to the desired output "
            f"type {torch_type_name(out.dtype)}"
        )
    if out.device != result.device:
        raise RuntimeError(
            f"Expected out tensor to have device {result.device}, but got {out.device} instead"
        )
    if tuple(out.shape) != tuple(result.shape):
        if out.numel() != 0:
            warnings.warn(
                f"An output with one or more elements was resized since it had shape "
                f"{list(out.shape)}, which does not match the required output shape "
                f"{list(result.shape)}. This behavior is deprecated, and in a future PyTorch "
                "release outputs will not be resized unless they have zero elements. You can "
                "explicitly reuse an out tensor t by resizing it, inplace, to zero elements "
                "with t.resize_(0).",
                UserWarning,
                stacklevel=4,
            )
        resized = result.to(dtype=out.dtype)
        out.data = resized.clone() if resized is result else resized
        out._bump_version()
        return
    copy_(out, result)
