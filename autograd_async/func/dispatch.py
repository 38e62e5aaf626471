"""How an op or function that got batched tensors runs: its rule, or once per example.

`dispatch_op` is what `Op.apply` calls when an input is batched (`autograd_async.batching`);
`dispatch_function` what a `batchable` function calls under vmap. A rule gets the vmap level,
unwraps the inputs batched there (dim 0 the batch), runs ops on the values and wraps what comes
out. Without a rule the op runs once per example and the results are stacked: correct, slower,
and said once per op with PyTorch's warning.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

from ..batching import vmap_levels
from ..core.op import Op
from ..core.tensor import Tensor
from ..ops.shape import stack
from ..ops.views import select
from .batched import BatchedTensor, batched, level_size, top_level, unwrap

# Op class -> rule(cls, level, inputs, kwargs); function name -> rule(fn, level, args, kwargs).
# An op class seen without a rule of its own or of a base is kept with None.
OP_RULES: dict[type, Callable[..., Any] | None] = {}
FUNCTION_RULES: dict[str, Callable[..., Any]] = {}
# The ops that ran per example already, so that each is named once.
_WARNED: set[str] = set()


def op_rule(*classes: type) -> Callable[[Callable], Callable]:
    """Register a batching rule for op classes."""

    def register(rule: Callable) -> Callable:
        for cls in classes:
            OP_RULES[cls] = rule
        return rule

    return register


def function_rule(*names: str) -> Callable[[Callable], Callable]:
    """Register a batching rule for `batchable` functions by name."""

    def register(rule: Callable) -> Callable:
        for name in names:
            FUNCTION_RULES[name] = rule
        return rule

    return register


def wrap_out(out: Any, level: int) -> Any:
    """Op outputs (a tensor or a tuple of them, dim 0 the batch) batched at `level`."""
    if isinstance(out, Tensor):
        return batched(out, level)
    if isinstance(out, tuple):
        items = [wrap_out(o, level) for o in out]
        return type(out)(*items) if hasattr(out, "_fields") else tuple(items)
    return out


def dispatch_op(cls: type[Op], inputs: tuple, kwargs: dict) -> Any:
    """Run op `cls` on inputs of which some are batched."""
    level = top_level(inputs)
    if cls in OP_RULES:
        rule = OP_RULES[cls]
    else:  # a subclass made later (per arity, say) follows its base's rule
        rule = OP_RULES[cls] = next(
            (OP_RULES[base] for base in cls.__mro__[1:] if OP_RULES.get(base)), None
        )
    if rule is not None:
        return rule(cls, level, inputs, kwargs)
    return per_example(cls.op_name, lambda *xs: cls.apply(*xs, **kwargs), level, inputs)


def dispatch_function(name: str, fn: Callable, args: tuple, kwargs: dict) -> Any:
    """Run a `batchable` function under vmap: by its rule when it got batched tensors."""
    level = top_level(tuple(args) + tuple(kwargs.values()))
    if not level:
        return fn(*args, **kwargs)
    rule = FUNCTION_RULES.get(name)
    if rule is not None:
        return rule(fn, level, args, kwargs)
    keys = list(kwargs)
    count = len(args)

    def run(*xs: Any) -> Any:
        return fn(*xs[:count], **dict(zip(keys, xs[count:])))

    return per_example(name, run, level, tuple(args) + tuple(kwargs.values()))


def warn_per_example(name: str) -> None:
    """PyTorch's warning for an op without a batching rule, once per op."""
    if name in _WARNED:
        return
    _WARNED.add(name)
    warnings.warn(
        f"There is a performance drop because we have not yet implemented the batching rule for "
        f"{name}. It runs once per example instead (vmap's per-example fallback).",
        UserWarning,
        stacklevel=4,
    )


def per_example(
    name: str, run: Callable[..., Any], level: int, inputs: tuple, warn: bool = True
) -> Any:
    """`run` once per example of the batch at `level`, its outputs stacked along dim 0."""
    if warn:
        warn_per_example(name)
    size = level_size(level)
    values = [unwrap(x, level) for x in inputs]
    results = []
    for b in range(size):
        results.append(run(*[select(v, 0, b) if is_batched else v for v, is_batched in values]))
    return _stack_results(results, level, name)


def _stack_results(results: list, level: int, name: str) -> Any:
    first = results[0]
    if isinstance(first, Tensor):
        return batched(stack(results), level)
    if isinstance(first, tuple):
        items = [_stack_results([r[i] for r in results], level, name) for i in range(len(first))]
        return type(first)(*items) if hasattr(first, "_fields") else tuple(items)
    if first is None:
        return None
    raise RuntimeError(
        f"vmap: {name} returned {type(first).__name__} per example, which cannot be batched"
    )


def materialize(x: Any, level: int) -> Any:
    """The value of `x` at `level` with dim 0 the batch, expanding it when it is not batched."""
    value, is_batched = unwrap(x, level)
    if is_batched:
        return value
    size = level_size(level)
    return value.unsqueeze(0).expand((size,) + tuple(value.shape))


def current_randomness() -> str:
    """The randomness mode of the innermost active vmap."""
    levels = vmap_levels.get()
    return levels[-1].randomness if levels else "error"


RANDOM_ERROR = (
    "vmap: called random operation while in randomness error mode. Please either use the 'same' "
    "or 'different' randomness flags on vmap or perform the randomness operation out of vmap"
)


def dispatch_draw(draw: Callable[[tuple], Tensor], shape: tuple) -> Tensor:
    """A random factory under vmap: refused, one draw for all examples, or one per example."""
    levels = vmap_levels.get()
    mode = levels[-1].randomness
    if mode == "error":
        raise RuntimeError(RANDOM_ERROR)
    if mode == "same":
        return draw(shape)
    sizes = tuple(active.size for active in levels)
    out = draw(sizes + tuple(shape))
    for active in levels:
        out = batched(out, active.level)
    return out


__all__ = ["BatchedTensor", "dispatch_draw", "dispatch_function", "dispatch_op"]
