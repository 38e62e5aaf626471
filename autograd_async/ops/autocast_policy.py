"""Which dtype each op runs in under autocast: PyTorch's op lists, applied in `Op.apply`.

Three policies, as PyTorch's: `LOWER` ops (matmul, linear, convolution, attention) run in the
autocast dtype; `FLOAT32` ops (reductions, softmax, losses, norms, exp/log/pow on cuda) run in
float32; `PROMOTE` ops (cat, stack, index_copy, ...) run in the widest floating dtype among their
inputs. Other ops run in their inputs' dtypes. float64 tensors are never lowered. CPU follows
PyTorch's CPU lists, cuda and sim (which simulates cuda) PyTorch's CUDA lists.

Backends without native half-precision matrix products (NumPy: cpu and sim) compute a `LOWER`
op in float32 on inputs rounded to the lower precision, then round the result: PyTorch's values
and dtypes, without NumPy's slow float16 (and ml_dtypes' bfloat16) loops.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from ..autocast_state import AutocastState, autocast_state
from ..core.op import NOT_ROUTED, Op
from ..core.tensor import Tensor
from ..devices import backend_for
from ..grad_mode import grad_enabled
from .transfer import ToCopyBackward0

LOWER, FLOAT32, PROMOTE, KEEP = "lower", "float32", "promote", "keep"
FLOAT32_DTYPE = np.dtype("float32")
FLOAT64_DTYPE = np.dtype("float64")

_LOWER = (
    "mm",
    "bmm",
    "mv",
    "linear",
    "convolution",
    "convolution_transpose",
    "einsum",
    "scaled_dot_product_attention",
    "multi_head_self_attention",
)
_CPU_FLOAT32 = (
    "binarycrossentropy",
    "prod",
    "mse_loss",
    "nll_loss",
    "cross_entropy",
    "fftc2c",
    "fftr2c",
    "fftc2r",
    "linalg_svdvals",
    "norm",
)
_CUDA_FLOAT32 = (
    "acos",
    "asin",
    "cosh",
    "erfinv",
    "exp",
    "expm1",
    "log",
    "log10",
    "log2",
    "log1p",
    "reciprocal",
    "rsqrt",
    "sinh",
    "tan",
    "pow",
    "softplus",
    "layer_norm",
    "nll_loss",
    "mse_loss",
    "cross_entropy",
    "logsumexp",
    "prod",
    "softmax",
    "log_softmax",
    "cumprod",
    "cumsum",
    "sum",
    "norm",
    "binarycrossentropy",
    "linalg_svdvals",
)
_CPU_PROMOTE = ("cat", "stack", "index_copy")
_CUDA_PROMOTE = ("cat", "stack", "index_copy", "atan2", "dot", "index_put", "scatter_add", "lerp")

POLICIES: dict[str, dict[str, str]] = {
    "cpu": {
        **dict.fromkeys(_LOWER, LOWER),
        **dict.fromkeys(_CPU_FLOAT32, FLOAT32),
        **dict.fromkeys(_CPU_PROMOTE, PROMOTE),
    },
    "cuda": {
        **dict.fromkeys(_LOWER, LOWER),
        **dict.fromkeys(_CUDA_FLOAT32, FLOAT32),
        **dict.fromkeys(_CUDA_PROMOTE, PROMOTE),
    },
}
# Ops PyTorch runs in their input's dtype that NumPy has no half-precision loops for (einsum,
# BLAS): on NumPy backends they compute in float32 and round back, as LOWER ops do there.
_KEEP = (
    "batch_norm",
    "layer_norm",
    "group_norm",
    "softmax",
    "log_softmax",
    "logsumexp",
    "max_pool",
    "cross_entropy",
    "embedding",
)
for _policies in POLICIES.values():
    for _name in _KEEP:
        _policies.setdefault(_name, KEEP)
POLICIES["sim"] = POLICIES["cuda"]


def _floating(x: Any) -> bool:
    return isinstance(x, Tensor) and x._data.dtype.kind in "fV"


def _cast(t: Tensor, dtype: np.dtype) -> Tensor:
    return t if t._data.dtype == dtype else ToCopyBackward0.apply(t, device=t.device, dtype=dtype)


def _lowered(t: Tensor, low: np.dtype, native: bool, state: AutocastState) -> Tensor:
    """`t` for a LOWER op: in `low`, or (without native half matmul) in float32 rounded to it."""
    if t._data.dtype == FLOAT64_DTYPE:
        return t
    # Only leaves that require grad are cached (PyTorch caches weights, not activations).
    cache = state.cache if t._grad_fn is None and t._rg and grad_enabled.get() else None
    if cache is not None:
        hit = cache.get(id(t))
        if hit is not None and hit[0] is t and hit[1] == t._version and hit[2] == low:
            return hit[3]
    out = _cast(t, low)
    if not native:
        out = _cast(out, FLOAT32_DTYPE)
    if cache is not None:
        cache[id(t)] = (t, t._version, low, out)
    return out


def _policy(device: Any, name: str, state: AutocastState) -> tuple[str | None, Any]:
    """The policy for op or function `name` on `device` and its lower precision, if any."""
    low = state.enabled.get(device.type)
    if low is None:
        return None, None
    return POLICIES.get(device.type, POLICIES["cuda"]).get(name), low


def _cast_inputs(values: Any, policy: str, low: Any, native: bool, state: AutocastState) -> Any:
    """Tensor arguments cast as `policy` says (other values as they are)."""
    if policy == LOWER:
        return [_lowered(x, low, native, state) if _floating(x) else x for x in values]
    if policy == FLOAT32:
        return [
            _cast(x, FLOAT32_DTYPE) if _floating(x) and x._data.dtype != FLOAT64_DTYPE else x
            for x in values
        ]
    widest = np.result_type(*[x._data.dtype for x in values if _floating(x)])
    return [_cast(x, widest) if _floating(x) else x for x in values]


def _run(policy: str, low: Any, device: Any, call: Any, values: list, state: AutocastState) -> Any:
    native = policy not in (LOWER, KEEP) or backend_for(device).native_half_matmul
    if policy == KEEP:
        first = next(x for x in values if _floating(x))._data.dtype
        if native or first.itemsize != 2:
            return NOT_ROUTED
        low = first  # the result keeps the input's dtype
        cast = [
            _cast(x, FLOAT32_DTYPE) if _floating(x) and x._data.dtype.itemsize == 2 else x
            for x in values
        ]
    else:
        cast = _cast_inputs(values, policy, low, native, state)
    token = autocast_state.set(None)  # the op itself, and the casts, run as they are
    try:
        out = call(cast)
        if not native:
            out = _round_outputs(out, low)
    finally:
        autocast_state.reset(token)
    return out


def autocast_call(cls: Any, inputs: tuple, kwargs: dict, state: AutocastState) -> Any:
    """Run op `cls` under autocast's policy for it, or return NOT_ROUTED to run it as is."""
    device = next((x.device for x in inputs if isinstance(x, Tensor)), None)
    if device is None:
        return NOT_ROUTED
    policy, low = _policy(device, cls.op_name, state)
    if policy is None or not any(_floating(x) for x in inputs):
        return NOT_ROUTED
    return _run(policy, low, device, lambda cast: cls.apply(*cast, **kwargs), list(inputs), state)


def autocast_function(name: str, fn: Any) -> Any:
    """`fn`, a function built of several ops, under the policy autocast has for `name`.

    For the functions PyTorch's lists name but this library composes (`addmm` is a matmul and
    a scaled sum; `l1_loss` a difference, abs and mean), so that the whole runs in one dtype.
    """

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        state = autocast_state.get()
        if state is None or not state.enabled:
            return fn(*args, **kwargs)
        values = [*args, *kwargs.values()]
        device = next((x.device for x in values if isinstance(x, Tensor)), None)
        if device is None:
            return fn(*args, **kwargs)
        policy, low = _policy(device, name, state)
        if policy is None or not any(_floating(x) for x in values):
            return fn(*args, **kwargs)
        keys = list(kwargs)

        def call(cast: list) -> Any:
            return fn(*cast[: len(args)], **dict(zip(keys, cast[len(args) :], strict=True)))

        out = _run(policy, low, device, call, values, state)
        return fn(*args, **kwargs) if out is NOT_ROUTED else out

    return wrapper


COMPOSITES: dict[str, tuple[str, ...]] = {
    "cpu": (
        "addmm",
        "baddbmm",
        "addbmm",
        "l1_loss",
        "smooth_l1_loss",
        "huber_loss",
        "kl_div",
        "binary_cross_entropy_with_logits",
        "cosine_embedding_loss",
        "soft_margin_loss",
        "margin_ranking_loss",
        "hinge_embedding_loss",
        "poisson_nll_loss",
        "triplet_margin_loss",
        "multi_margin_loss",
        "multilabel_margin_loss",
        "cdist",
        "binary_cross_entropy",
    ),
    "cuda": (
        "addmm",
        "baddbmm",
        "addbmm",
        "addmv",
        "addr",
        "l1_loss",
        "smooth_l1_loss",
        "huber_loss",
        "kl_div",
        "binary_cross_entropy_with_logits",
        "cosine_embedding_loss",
        "soft_margin_loss",
        "margin_ranking_loss",
        "hinge_embedding_loss",
        "poisson_nll_loss",
        "triplet_margin_loss",
        "multi_margin_loss",
        "multilabel_margin_loss",
        "cdist",
        "group_norm",
        "cosine_similarity",
        "dist",
        "pdist",
        "renorm",
        "layer_norm",
    ),
}
"""Functions composed of several ops that PyTorch's lists name (their policies: POLICIES)."""
for _name in ("addmm", "baddbmm", "addbmm", "addmv", "addr"):
    POLICIES["cuda"][_name] = LOWER
for _name in ("addmm", "baddbmm", "addbmm"):
    POLICIES["cpu"][_name] = LOWER
for _kind, _names in COMPOSITES.items():
    for _name in _names:
        POLICIES[_kind].setdefault(_name, FLOAT32)
_FUNCTIONS_LOWER = (
    "matmul",
    "mm",
    "bmm",
    "mv",
    "linear",
    "conv1d",
    "conv2d",
    "conv3d",
    "conv_transpose1d",
    "conv_transpose2d",
    "conv_transpose3d",
    "einsum",
    "scaled_dot_product_attention",
    "prelu",
)
for _policies in POLICIES.values():
    _policies.update(dict.fromkeys(_FUNCTIONS_LOWER, LOWER))
WRAPPED = (
    frozenset(COMPOSITES["cpu"])
    | frozenset(COMPOSITES["cuda"])
    | frozenset(_FUNCTIONS_LOWER)
    | {"batch_norm", "instance_norm", "group_norm", "layer_norm"}
)
"""Public functions routed as a whole: those that check their operands' dtypes before their op
runs (`linear` refuses a float16 input with a float32 weight), and the composed ones."""


def install(module: Any) -> None:
    """Route the functions of `module` named in WRAPPED (defined there) under their policies."""
    table = getattr(module, "FUNCTIONS", {})
    for name in WRAPPED:
        fn = getattr(module, name, None)
        if fn is None or getattr(fn, "__module__", None) != module.__name__:
            continue
        wrapped = autocast_function(name, fn)
        setattr(module, name, wrapped)
        for key, value in table.items():
            if value is fn:
                table[key] = wrapped


def _round_outputs(out: Any, low: np.dtype) -> Any:
    if isinstance(out, Tensor):
        return _cast(out, low) if out._data.dtype == FLOAT32_DTYPE else out
    return tuple(_round_outputs(o, low) for o in out)


# Every op's `apply` asks this policy first while autocast is on.
Op.route_autocast = staticmethod(autocast_call)  # type: ignore[method-assign]  # the core's hook
