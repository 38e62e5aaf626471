"""PyTorch's top-level in-place functions (`torch.relu_(x)`, `torch.sigmoid_(x)`, ...).

Most are the Tensor method called as a function: the function looks the method up when called,
so it always runs the Tensor's own in-place form. Where that method is missing here, it is made
from the out-of-place op (`ops.inplace.in_place_form`: computed from a copy, written back, with
the op's node as the tensor's new history). The dropouts and a few activations are in-place at
the top level only; their forms come from the function itself.
"""

from __future__ import annotations

from typing import Any

from ..core.op import require_tensor
from ..core.tensor import Tensor
from . import aten_thresholds, scatter_copies
from .activations import celu, selu
from .inplace import in_place_form

# PyTorch's `torch.<name>_` functions that are also Tensor methods.
TENSOR_FORMS = (
    "abs",
    "acos",
    "acosh",
    "addmv",
    "arccos",
    "arccosh",
    "arcsin",
    "arcsinh",
    "arctan",
    "arctanh",
    "asin",
    "asinh",
    "atan",
    "atanh",
    "ceil",
    "clamp",
    "clamp_max",
    "clamp_min",
    "clip",
    "conj_physical",
    "cos",
    "cosh",
    "deg2rad",
    "detach",
    "erf",
    "erfc",
    "exp",
    "exp2",
    "expm1",
    "fill",
    "fix",
    "floor",
    "frac",
    "gcd",
    "i0",
    "index_put",
    "lcm",
    "ldexp",
    "log",
    "log10",
    "log1p",
    "log2",
    "logit",
    "nan_to_num",
    "neg",
    "negative",
    "rad2deg",
    "reciprocal",
    "relu",
    "round",
    "rsqrt",
    "sigmoid",
    "sin",
    "sinc",
    "sinh",
    "sqrt",
    "square",
    "tan",
    "tanh",
    "trunc",
    "xlogy",
    "zero",
)

# PyTorch's `torch.<name>_` functions that are not Tensor methods, and what they compute.
FUNCTION_FORMS: dict[str, Any] = {
    "celu": lambda input, alpha=1.0: celu(input, alpha),
    "selu": selu,
    "threshold": aten_thresholds.threshold,
    "rrelu": aten_thresholds.rrelu,
    "dropout": aten_thresholds.dropout,
    "feature_dropout": aten_thresholds.feature_dropout,
    "alpha_dropout": aten_thresholds.alpha_dropout,
    "feature_alpha_dropout": aten_thresholds.feature_alpha_dropout,
}

# Out-of-place functions whose Tensor in-place method is built here (no op family has it).
_OUT_OF_PLACE = {"index_put": scatter_copies.index_put}


def _calling_method(name: str) -> Any:
    """`torch.<name>(input, ...)`: `input.<name>(...)`, the method looked up at the call."""

    def function(input: Tensor, *args: Any, **kwargs: Any) -> Any:
        require_tensor(name, input)
        return getattr(Tensor, name)(input, *args, **kwargs)

    function.__name__ = function.__qualname__ = name
    function.__doc__ = f"`input.{name}(...)`: `{name[:-1]}`, in place."
    return function


def install() -> dict[str, Any]:
    """Give Tensor the in-place methods it lacks; return the top-level functions."""
    functions: dict[str, Any] = {}
    for base in TENSOR_FORMS:
        name = base + "_"
        if not hasattr(Tensor, name):
            if base in _OUT_OF_PLACE:
                setattr(Tensor, name, in_place_form(base, _OUT_OF_PLACE[base]))
            elif hasattr(Tensor, base):
                setattr(Tensor, name, in_place_form(base))
            else:
                continue  # the op itself is missing: no in-place form either
        functions[name] = _calling_method(name)
    for base, compute in FUNCTION_FORMS.items():
        form = in_place_form(base, compute)
        form.__doc__ = f"`{base}`, in place."
        functions[base + "_"] = form
    return functions
