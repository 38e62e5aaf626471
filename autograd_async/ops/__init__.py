"""Differentiable ops: module functions, installed as Tensor methods and operators.

Each family module holds its op classes (the math) and public functions (argument handling,
PyTorch's names and errors); this package collects the functions into `__all__` and puts them on
`Tensor`.
"""

from __future__ import annotations

import functools
import inspect
from typing import Any

from ..core.tensor import (
    Tensor,
    bool_,
    complex64,
    complex128,
    float16,
    float32,
    float64,
    int8,
    int16,
    int32,
    int64,
    uint8,
)
from ..dtypes import bfloat16
from . import (
    arithmetic,
    attention,
    comparison,
    conv,
    conversion,
    distance,
    elementwise,
    embedding,
    factory,
    gather,
    indexing,
    inplace,
    nn_ops,
    normalization,
    pooling,
    rearrange,
    reduction,
    sampling,
    shape,
    sorting,
    triangular,
    views,
)
from .transfer import to

# isort: split
from . import (
    activations,
    assembling,
    linalg,
    linalg_solvers,
    losses,
    numeric,
    pointwise,
    scan,
    scatter_reduce,
    special,
    statistics,
)

# isort: split
from . import complex_parts, special_functions

# isort: split
from . import random_draws, random_fills

# isort: split
from . import autocast_policy, distribution_math

# isort: split
from . import (
    diagonal_fill,
    exponents,
    predicates,
    products,
    python_maps,
    restride,
    scatter_copies,
    tensor_facts,
    torch_nn_forms,
    trigonometry,
)

# isort: split
from . import aten_thresholds, composites, histograms, linalg_forms, recurrent_cells, torch_in_place

# isort: split
from . import (
    aten_sequence_forms,
    complex_views,
    householder_forms,
    lowrank,
    recurrent_layers,
    short_time_fourier,
    tensor_odds,
    time_batch_forms,
)

_FAMILIES = (arithmetic, elementwise, reduction, shape, indexing, comparison, inplace, nn_ops)
_FAMILIES += (triangular, factory, rearrange, gather, sorting, conversion)
_FAMILIES += (conv, pooling, sampling, normalization, embedding, distance, attention)
_FAMILIES += (special, pointwise, scan, linalg, activations, losses)
_FAMILIES += (special_functions, complex_parts)
_FAMILIES += (views,)
_FAMILIES += (linalg_solvers, assembling, statistics, numeric, scatter_reduce)
_FAMILIES += (random_fills, random_draws)
_FAMILIES += (distribution_math,)
_FAMILIES += (restride, tensor_facts, python_maps, diagonal_fill)
_FAMILIES += (torch_nn_forms, trigonometry, exponents, predicates, products, scatter_copies)
_FAMILIES += (aten_thresholds, composites, linalg_forms, recurrent_cells, histograms)
_FAMILIES += (complex_views, short_time_fourier, recurrent_layers, aten_sequence_forms)
_FAMILIES += (tensor_odds, householder_forms, time_batch_forms, lowrank)


for _family in _FAMILIES:  # functions that autocast routes as a whole
    autocast_policy.install(_family)
FUNCTIONS: dict[str, Any] = {}
for _family in _FAMILIES:
    FUNCTIONS.update(getattr(_family, "FUNCTIONS", {}))


def _cast(dtype: Any) -> Any:
    def cast(self: Tensor) -> Tensor:
        return to(self, dtype=dtype)

    cast.__doc__ = f"The tensor as {dtype} (itself when it already is)."
    return cast


# Functions of several tensors that PyTorch has no method for.
_NOT_METHODS = ("cat", "concat", "concatenate", "stack")
_NOT_METHODS += ("normal", "poisson")
_NOT_METHODS += ("binomial",)
_NOT_METHODS += assembling.NOT_METHODS + numeric.NOT_METHODS
_NOT_METHODS += torch_nn_forms.NOT_METHODS + predicates.NOT_METHODS + products.NOT_METHODS
_NOT_METHODS += aten_thresholds.NOT_METHODS + linalg_forms.NOT_METHODS + composites.NOT_METHODS
_NOT_METHODS += scatter_copies.NOT_METHODS + recurrent_cells.NOT_METHODS
_NOT_METHODS += histograms.NOT_METHODS + complex_views.NOT_METHODS
_NOT_METHODS += recurrent_layers.NOT_METHODS + aten_sequence_forms.NOT_METHODS
_NOT_METHODS += tensor_odds.NOT_METHODS + time_batch_forms.NOT_METHODS + lowrank.NOT_METHODS


_NUMPY_NAMES = {"axis": "dim", "keepdims": "keepdim"}


def accept_numpy_names(fn: Any) -> Any:
    """`fn` also taking NumPy's `axis=` and `keepdims=` for its `dim` and `keepdim`, as
    PyTorch's argument parser does for every function with those parameters."""
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return fn
    aliases = {k: v for k, v in _NUMPY_NAMES.items() if v in params and k not in params}
    if not aliases:
        return fn

    @functools.wraps(fn)
    def with_aliases(*args: Any, **kwargs: Any) -> Any:
        if kwargs:
            for alias, name in aliases.items():
                if alias in kwargs:
                    if name in kwargs:
                        raise TypeError(
                            f"{fn.__name__}() got an unexpected keyword argument '{alias}'"
                        )
                    kwargs[name] = kwargs.pop(alias)
        return fn(*args, **kwargs)

    return with_aliases


FUNCTIONS = {name: accept_numpy_names(fn) for name, fn in FUNCTIONS.items()}


def _signed_like(form: Any, op: Any) -> Any:
    """An in-place form taking what its out-of-place op takes, as `inspect` (and so the type
    stubs) shows it."""
    try:
        signature = inspect.signature(op)
    except (TypeError, ValueError):
        return form
    form.__signature__ = signature.replace(return_annotation="Tensor")
    return form


def _install() -> None:
    methods = {k: v for k, v in FUNCTIONS.items() if k not in _NOT_METHODS}
    for family in _FAMILIES:
        methods.update(getattr(family, "OPERATORS", {}))
        methods.update(getattr(family, "METHODS", {}))
    methods.update(
        {
            "to": to,
            "float": _cast(float32),
            "double": _cast(float64),
            "half": _cast(float16),
            "bfloat16": _cast(bfloat16),
            "long": _cast(int64),
            "int": _cast(int32),
            "bool": _cast(bool_),
            "byte": _cast(uint8),
            "char": _cast(int8),
            "short": _cast(int16),
            "cfloat": _cast(complex64),
            "cdouble": _cast(complex128),
            "type_as": lambda self, other: to(self, dtype=other.dtype),
            # x.where(condition, y): the tensor is the value where the condition holds.
            "where": lambda self, condition, other: elementwise.where(condition, self, other),
        }
    )
    for name, fn in inplace.IN_PLACE_FORMS.items():
        if name not in methods and name[:-1] in methods:  # only where the op itself exists
            methods[name] = _signed_like(fn, methods[name[:-1]])
    for name, fn in restride.VIEW_FORMS.items():
        methods[name] = _signed_like(fn, methods[name[:-1]])
    for name, fn in methods.items():
        setattr(Tensor, name, accept_numpy_names(fn))
    # `ndarray op tensor` defers to the tensor's reflected operator instead of converting it.
    Tensor.__array_ufunc__ = None


_install()
FUNCTIONS.update(torch_in_place.install())  # after _install: they call the Tensor methods
globals().update(FUNCTIONS)

__all__ = sorted(n for n in FUNCTIONS if n not in ("allclose", "equal")) + ["allclose", "equal"]
