"""`vmap`: a function of one example run on a batch, with PyTorch's in_dims/out_dims rules."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from ..batching import VmapLevel, vmap_levels
from ..core.tensor import Tensor
from ..ops.shape import cat
from .batched import BatchedTensor, batched, unwrap
from .pytree import broadcast_prefix, tree_flatten, tree_unflatten

RANDOMNESS = ("error", "different", "same")


def _name(func: Callable) -> str:
    return getattr(func, "__name__", repr(func))


def vmap(
    func: Callable,
    in_dims: Any = 0,
    out_dims: Any = 0,
    randomness: str = "error",
    *,
    chunk_size: int | None = None,
) -> Callable:
    """`func` mapped over dim `in_dims` of its inputs, its outputs stacked along `out_dims`."""
    if randomness not in RANDOMNESS:
        raise RuntimeError(
            f"Only allowed values for randomness are 'error', 'different', or 'same'. "
            f"Got {randomness}"
        )
    if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size <= 0):
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. (got {chunk_size})")

    @functools.wraps(func)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        name = _name(func)
        if not args:
            raise ValueError(
                f"vmap({name})(<inputs>): got no inputs. Maybe you forgot to add inputs, or you "
                "are trying to vmap over a function with no inputs. The latter is unsupported."
            )
        flat, spec = tree_flatten(args)
        dims = _in_dims(name, in_dims, args, spec)
        size = _batch_size(name, in_dims, flat, dims)
        if chunk_size is None or chunk_size >= size:
            return _run(func, name, flat, spec, dims, size, kwargs, out_dims, randomness)
        chunks = []
        for start in range(0, size, chunk_size):
            stop = min(start + chunk_size, size)
            part = [
                x.narrow(d, start, stop - start) if d is not None else x for x, d in zip(flat, dims)
            ]
            chunks.append(
                _run(func, name, part, spec, dims, stop - start, kwargs, out_dims, randomness)
            )
        return _join_chunks(chunks, out_dims)

    return wrapped


def _in_dims(name: str, in_dims: Any, args: tuple, spec: Any) -> list:
    if not isinstance(in_dims, (int, tuple)) or isinstance(in_dims, bool):
        raise ValueError(
            f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): expected `in_dims` to be int or a "
            f"(potentially nested) tuple matching the structure of inputs, got: {type(in_dims)}."
        )
    dims = broadcast_prefix(in_dims, spec)
    if dims is None:
        in_spec = tree_flatten(in_dims)[1]
        raise ValueError(
            f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): in_dims is not compatible with the "
            f"structure of `inputs`. in_dims has structure {in_spec} but inputs has structure "
            f"{spec}."
        )
    return dims


def _batch_size(name: str, in_dims: Any, flat: list, dims: list) -> int:
    sizes = []
    for i, (x, d) in enumerate(zip(flat, dims)):
        if d is None:
            continue
        if not isinstance(d, int) or isinstance(d, bool):
            raise ValueError(
                f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): in_dims must be int or None "
                f"for each input, got {d}."
            )
        if not isinstance(x, Tensor):
            raise ValueError(
                f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={d} for an input "
                f"but the input is of type {type(x)}. We cannot vmap over non-Tensor arguments, "
                "please use None as the respective in_dim"
            )
        if not -x.ndim <= d < max(x.ndim, 0) or x.ndim == 0:
            raise ValueError(
                f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={d} for some "
                f"input, but that input is a Tensor of dimensionality {x.ndim} so expected "
                f"in_dim to satisfy -{x.ndim} <= in_dim < {x.ndim}."
            )
        dims[i] = d % x.ndim
        sizes.append(x.shape[d])
    if not sizes:
        raise ValueError(
            f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): at least one input must be a "
            "Tensor with an in_dim that is not None (nothing to map over)."
        )
    if len(set(sizes)) > 1:
        raise ValueError(
            "vmap: Expected all tensors to have the same size in the mapped dimension, got "
            f"sizes {sizes} for the mapped dimension"
        )
    return sizes[0]


def _run(
    func: Callable,
    name: str,
    flat: list,
    spec: Any,
    dims: list,
    size: int,
    kwargs: dict,
    out_dims: Any,
    randomness: str,
) -> Any:
    active = vmap_levels.get()
    level = (active[-1].level if active else 0) + 1
    token = vmap_levels.set(active + (VmapLevel(level, size, randomness),))
    try:
        inputs = [
            x if d is None else batched(x.movedim(d, 0) if d else x, level)
            for x, d in zip(flat, dims)
        ]
        out = func(*tree_unflatten(inputs, spec), **kwargs)
        return _outputs(name, out, out_dims, level, size)
    finally:
        vmap_levels.reset(token)


def _outputs(name: str, out: Any, out_dims: Any, level: int, size: int) -> Any:
    flat, spec = tree_flatten(out)
    if not isinstance(out_dims, (int, tuple, type(None))) or isinstance(out_dims, bool):
        raise ValueError(
            f"vmap({name}, ..., out_dims={out_dims}): expected `out_dims` to be int or a "
            f"(potentially nested) tuple matching the structure of outputs, got: "
            f"{type(out_dims)}."
        )
    dims = broadcast_prefix(out_dims, spec)
    if dims is None:
        raise ValueError(
            f"vmap({name}, ..., out_dims={out_dims})(<inputs>): out_dims is not compatible with "
            f"the structure of `outputs`. out_dims has structure {tree_flatten(out_dims)[1]} but "
            f"outputs has structure {spec}."
        )
    results = []
    for x, d in zip(flat, dims):
        value, is_batched = unwrap(x, level) if isinstance(x, Tensor) else (x, False)
        if d is None:
            if is_batched:
                raise ValueError(
                    f"vmap({name}, ...): `{name}` can not return a BatchedTensor when out_dim is "
                    "None"
                )
            results.append(x)
            continue
        if not isinstance(x, Tensor):
            raise ValueError(
                f"vmap({name}, ...): `{name}` must only return Tensors, got type {type(x)}. Did "
                "you mean to set out_dims= to None for output?"
            )
        if not is_batched:  # the same for every example: broadcast along the new dim
            value = value.unsqueeze(0).expand((size,) + tuple(value.shape))
        ndim = value.ndim
        if not -ndim <= d < ndim:
            raise IndexError(
                f"Dimension out of range (expected to be in range of [{-ndim}, {ndim - 1}], but "
                f"got {d})"
            )
        results.append(value.movedim(0, d) if d % ndim else value)
    return tree_unflatten(results, spec)


def _join_chunks(chunks: list, out_dims: Any) -> Any:
    flats = [tree_flatten(c) for c in chunks]
    spec = flats[0][1]
    dims = broadcast_prefix(out_dims, spec)
    assert dims is not None  # each chunk's outputs passed the check of _outputs
    joined = []
    for i, d in enumerate(dims):
        parts = [f[0][i] for f in flats]
        joined.append(parts[0] if d is None else cat(parts, d))
    return tree_unflatten(joined, spec)


__all__ = ["BatchedTensor", "vmap"]
