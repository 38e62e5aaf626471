"""PyTorch's `_foreach_*` functions: one op applied over a list of tensors, through the Tensor
method each op installs.

Optimizers and weight averaging (EMA, SWA) written for PyTorch call them directly
(`torch._foreach_lerp_(ema, params, 0.1)`). Here each is the plain op per tensor: NumPy has no
multi-tensor kernels to fuse into, so the list form saves nothing but is there to be called.
The out-of-place forms return a tuple, as PyTorch's do; the in-place forms return their list.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..core.tensor import Tensor

__all__: list[str] = []  # the names are private, as PyTorch's: `aa._foreach_add` and friends

_UNARY = (
    "abs acos asin atan ceil cos cosh erf erfc exp expm1 floor frac lgamma log log10 log1p log2 "
    "neg reciprocal round rsqrt sigmoid sign sin sinh sqrt tan tanh trunc"
).split()
# Binary ops: the second operand is a number, a tensor, a list of tensors or a list of numbers.
_BINARY = "add sub mul div pow maximum minimum clamp_max clamp_min".split()
_ALPHA = {"add", "sub"}  # ops that also take `alpha=`


def _require_list(name: str, tensors: Any) -> Sequence[Tensor]:
    if not isinstance(tensors, (list, tuple)) or not all(isinstance(t, Tensor) for t in tensors):
        raise TypeError(f"{name}(): argument 'self' must be a list of tensors, not {tensors!r}")
    return tensors


def _per_tensor(name: str, count: int, other: Any) -> Sequence[Any]:
    """The second operand for each of `count` tensors: one per tensor, or the same for all."""
    if isinstance(other, (list, tuple)):
        if len(other) != count:
            raise RuntimeError(
                f"{name}(): tensor lists must have the same number of tensors, got {count} and "
                f"{len(other)}"
            )
        return other
    return [other] * count


def _make_unary(op: str) -> tuple[Callable[..., Any], Callable[..., Any]]:
    name = f"_foreach_{op}"

    def out_of_place(self: Sequence[Tensor]) -> tuple[Tensor, ...]:
        return tuple(getattr(t, op)() for t in _require_list(name, self))

    def in_place(self: Sequence[Tensor]) -> Sequence[Tensor]:
        for t in _require_list(name + "_", self):
            getattr(t, op + "_")()
        return self

    out_of_place.__doc__ = f"`{op}` of each tensor."
    in_place.__doc__ = f"`{op}_` on each tensor in place."
    return out_of_place, in_place


def _make_binary(op: str) -> tuple[Callable[..., Any], Callable[..., Any]]:
    name = f"_foreach_{op}"

    def out_of_place(self: Any, other: Any, **kwargs: Any) -> tuple[Tensor, ...]:
        if op == "pow" and not isinstance(self, (list, tuple)):  # a number to each exponent
            return tuple(e.__rpow__(self) for e in _require_list(name, other))
        tensors = _require_list(name, self)
        return tuple(
            getattr(t, _scalar_form(op, o))(o, **kwargs)
            for t, o in zip(tensors, _per_tensor(name, len(tensors), other))
        )

    def in_place(self: Sequence[Tensor], other: Any, **kwargs: Any) -> Sequence[Tensor]:
        tensors = _require_list(name + "_", self)
        for t, o in zip(tensors, _per_tensor(name + "_", len(tensors), other)):
            form = _scalar_form(op, o)
            if form in ("maximum", "minimum"):  # no in-place form of their own
                t.copy_(getattr(t, form)(o))
            else:
                getattr(t, form + "_")(o, **kwargs)
        return self

    extra = ", alpha=" if op in _ALPHA else ""
    out_of_place.__doc__ = f"`{op}(t, other{extra})` for each tensor (other: one or one each)."
    in_place.__doc__ = f"`{op}_` on each tensor in place (other: one or one each)."
    return out_of_place, in_place


def _scalar_form(op: str, other: Any) -> str:
    """maximum/minimum with a number are clamps, as PyTorch's foreach forms treat them."""
    if isinstance(other, Tensor):
        return op
    return {"maximum": "clamp_min", "minimum": "clamp_max"}.get(op, op)


def _make_pointwise(op: str) -> tuple[Callable[..., Any], Callable[..., Any]]:
    name = f"_foreach_{op}"

    def out_of_place(
        self: Sequence[Tensor], tensor1: Sequence[Tensor], tensor2: Sequence[Tensor], value: Any = 1
    ) -> tuple[Tensor, ...]:
        tensors = _require_list(name, self)
        values = _per_tensor(name, len(tensors), _listed(value))
        return tuple(
            getattr(t, op)(a, b, value=v) for t, a, b, v in zip(tensors, tensor1, tensor2, values)
        )

    def in_place(
        self: Sequence[Tensor], tensor1: Sequence[Tensor], tensor2: Sequence[Tensor], value: Any = 1
    ) -> Sequence[Tensor]:
        tensors = _require_list(name + "_", self)
        values = _per_tensor(name + "_", len(tensors), _listed(value))
        for t, a, b, v in zip(tensors, tensor1, tensor2, values):
            getattr(t, op + "_")(a, b, value=v)
        return self

    out_of_place.__doc__ = f"`{op}(t, t1, t2, value=)` for each tensor."
    in_place.__doc__ = f"`{op}_` on each tensor in place."
    return out_of_place, in_place


def _listed(value: Any) -> Any:
    """A 1-d tensor of scalars (one per tensor), as PyTorch accepts, read as a list of numbers."""
    if isinstance(value, Tensor) and value.dim() == 1:
        return value.tolist()
    return value


def _foreach_lerp(self: Sequence[Tensor], tensors1: Sequence[Tensor], weight: Any) -> tuple:
    """`lerp(t, end, weight)` for each tensor (weight: a number, or a tensor each)."""
    tensors = _require_list("_foreach_lerp", self)
    weights = _per_tensor("_foreach_lerp", len(tensors), weight)
    return tuple(t.lerp(e, w) for t, e, w in zip(tensors, tensors1, weights))


def _foreach_lerp_(self: Sequence[Tensor], tensors1: Sequence[Tensor], weight: Any) -> Any:
    """`lerp_` on each tensor in place: `t += weight * (end - t)`."""
    tensors = _require_list("_foreach_lerp_", self)
    for t, e, w in zip(tensors, tensors1, _per_tensor("_foreach_lerp_", len(tensors), weight)):
        t.lerp_(e, w)
    return self


def _foreach_norm(self: Sequence[Tensor], ord: Any = 2, dtype: Any = None) -> tuple:  # noqa: A002
    """The vector norm of each tensor."""
    tensors = _require_list("_foreach_norm", self)
    return tuple((t if dtype is None else t.to(dtype)).norm(p=ord) for t in tensors)


def _foreach_max(self: Sequence[Tensor]) -> tuple:
    """The largest element of each tensor."""
    return tuple(t.max() for t in _require_list("_foreach_max", self))


def _foreach_clone(self: Sequence[Tensor]) -> tuple:
    """A copy of each tensor."""
    return tuple(t.clone() for t in _require_list("_foreach_clone", self))


def _foreach_zero_(self: Sequence[Tensor]) -> Any:
    """Zero each tensor in place."""
    for t in _require_list("_foreach_zero_", self):
        t.zero_()
    return self


def _foreach_copy_(
    self: Sequence[Tensor], src: Sequence[Tensor], non_blocking: bool = False
) -> Any:
    """Copy each `src` tensor into the tensor at the same place."""
    tensors = _require_list("_foreach_copy_", self)
    for t, s in zip(tensors, _per_tensor("_foreach_copy_", len(tensors), list(src))):
        t.copy_(s, non_blocking=non_blocking)
    return self


def _foreach_mm(self: Sequence[Tensor], other: Sequence[Tensor]) -> tuple:
    """The matrix product of each pair."""
    tensors = _require_list("_foreach_mm", self)
    return tuple(a.mm(b) for a, b in zip(tensors, _per_tensor("_foreach_mm", len(tensors), other)))


def foreach_functions() -> dict[str, Callable[..., Any]]:
    """Every `_foreach_*` function by its name, for the top-level namespace."""
    functions: dict[str, Callable[..., Any]] = {}
    makers = [
        (_UNARY, _make_unary),
        (_BINARY, _make_binary),
        (("addcmul", "addcdiv"), _make_pointwise),
    ]
    for ops, make in makers:
        for op in ops:
            out_of_place, in_place = make(op)
            for f, suffix in ((out_of_place, ""), (in_place, "_")):
                f.__name__ = f.__qualname__ = f"_foreach_{op}{suffix}"
                functions[f.__name__] = f
    for f in (
        _foreach_lerp,
        _foreach_lerp_,
        _foreach_norm,
        _foreach_max,
        _foreach_clone,
        _foreach_zero_,
        _foreach_copy_,
        _foreach_mm,
    ):
        functions[f.__name__] = f
    return functions
