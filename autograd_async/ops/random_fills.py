"""In-place random fills: normal_ uniform_ exponential_ random_ geometric_ log_normal_ cauchy_
bernoulli_.

Values are drawn on the tensor's own device by its backend, from the `generator` given or the
default one (`aa.manual_seed`), so a seed gives the same values on every run, and the same on
the cpu and on `sim` devices (which share the host generator). A fill takes the path of every
in-place op (`inplace._recording`, `_snapshot`, `_commit`): it bumps the version counter, refuses
a leaf that requires grad, writes through views into their base, and under grad mode gives the
tensor PyTorch's node (`NormalBackward0`, ...), whose gradient for the old values is zero.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from ..batching import batchable
from ..core.op import Op, torch_type_name
from ..core.tensor import Tensor
from ..creation import Generator, default_generator
from ..devices import Device, enters_device
from ..dtypes import dtype as DType  # noqa: N812
from .dual import xp_of, zeros_like
from .inplace import _commit, _operand, _recording, _snapshot
from .shape import expand

# (device, shape, dtype, *arrays of the other inputs) -> the new values, on the device.
Draw = Callable[..., Any]

# The C++ names PyTorch's range checks print (`to - 1 is out of bounds for signed char`).
_CPP_NAMES = {
    "float16": "c10::Half",
    "float32": "float",
    "float64": "double",
    "int8": "signed char",
    "uint8": "unsigned char",
    "int16": "short",
    "int32": "int",
    "int64": "long int",
    "bool": "bool",
}
P_RANGE_MESSAGE = "Expected p_in >= 0 && p_in <= 1 to be true, but got false."


def device_state(generator: Generator | None, dev: Device) -> tuple[Any, Any]:
    """(backend, generator state) that draw on `dev`: `generator`'s, or the default one's."""
    return (generator or default_generator).state_for(dev)


def require_floating(input: Tensor, kernel: str) -> None:
    """PyTorch's NotImplementedError for a kernel that has no integer or bool version."""
    if input.dtype.kind != "f":
        raise NotImplementedError(
            f"\"{kernel}\" not implemented for '{torch_type_name(input.dtype)}'"
        )


def check_probabilities(p: Any) -> None:
    """Refuse probabilities outside [0, 1] (NaN too), with PyTorch's words (reads them back)."""
    data = p._data
    if data.size and not bool(((data >= 0) & (data <= 1)).all()):
        raise RuntimeError(P_RANGE_MESSAGE)


def scaled_draw(generator: Generator | None, kind: str, scale: float, shift: float) -> Draw:
    """A draw of the backend's standard `kind` (`random_normal`, ...), times `scale` plus
    `shift` (skipped when they change nothing)."""

    def draw(dev: Device, shape: tuple, dtype: Any) -> Any:
        backend, state = device_state(generator, dev)
        values = getattr(backend, kind)(state, shape, dtype)
        return values * scale + shift if (scale, shift) != (1.0, 0.0) else values

    return draw


def uniform_dtype(dtype: Any) -> np.dtype:
    """The float dtype uniform draws are compared in: float64 for float64, else float32."""
    return np.dtype(np.float64 if np.dtype(dtype) == np.float64 else np.float32)


class RandomFill(Op):
    """An in-place fill with drawn values: the old values get a zero gradient (PyTorch's rule)."""

    __slots__ = ()

    def forward(self, a: Any, *arrays: Any, draw: Draw) -> Any:
        a[...] = draw(self.device, a.shape, a.dtype, *arrays)
        return a

    def backward(self, g: Any) -> Any:
        return zeros_like(g)


class NormalBackward0(RandomFill):
    __slots__ = ()
    op_name = "normal_"


class UniformBackward0(RandomFill):
    __slots__ = ()
    op_name = "uniform_"


class ExponentialBackward0(RandomFill):
    __slots__ = ()
    op_name = "exponential_"


class GeometricBackward0(RandomFill):
    __slots__ = ()
    op_name = "geometric_"


class LogNormalBackward0(RandomFill):
    __slots__ = ()
    op_name = "log_normal_"


class CauchyBackward0(RandomFill):
    __slots__ = ()
    op_name = "cauchy_"


class RandomBackward0(RandomFill):
    """`random_(from, to)`."""

    __slots__ = ()
    op_name = "random_"


class RandomBackward1(RandomFill):
    """`random_(to)`."""

    __slots__ = ()
    op_name = "random_"


class RandomBackward2(RandomFill):
    """`random_()`."""

    __slots__ = ()
    op_name = "random_"


class BernoulliBackward2(RandomFill):
    """`bernoulli_(p)` with a float `p`."""

    __slots__ = ()
    op_name = "bernoulli_"


class BernoulliBackward1(RandomFill):
    """`bernoulli_(p)` with a tensor `p`: zero gradients for the old values and for `p`."""

    __slots__ = ("_p_meta",)
    op_name = "bernoulli_"

    def forward(self, a: Any, *arrays: Any, draw: Draw) -> Any:
        (p,) = arrays  # the probabilities: `fill_with` passes them as the one other tensor
        self._p_meta = (p.shape, p.dtype)
        return super().forward(a, p, draw=draw)

    def backward(self, g: Any) -> tuple:
        shape, dtype = self._p_meta
        gp = zeros_shaped(g, shape, dtype) if self.needs_input_grad[1] else None
        return (zeros_like(g) if self.needs_input_grad[0] else None), gp


def zeros_shaped(like: Any, shape: tuple, dtype: Any) -> Any:
    """Zeros of `shape` and `dtype` on the device of `like` (a Tensor when `like` is one)."""
    if isinstance(like, Tensor):
        return Tensor._wrap(xp_of(like._data).zeros(shape, dtype), like.device)
    return xp_of(like).zeros(shape, dtype)


@batchable
def fill_with(input: Tensor, node: type[Op], draw: Draw, *others: Tensor) -> Tensor:
    """Write `draw`'s values into `input` in place, recorded as `node` when grad mode needs it.

    The single in-place path: `_recording` refuses what PyTorch refuses (a leaf that requires
    grad, overlapping memory) and `_commit` bumps the version and rebases the history (through
    `CopySlices` for a view).
    """
    if _recording(input, *others):
        return _commit(input, node.apply(_snapshot(input), *others, draw=draw).grad_fn)
    input._data[...] = draw(input.device, input.shape, input.dtype, *(o._data for o in others))
    input._bump_version()
    return input


# ------------------------------------------------------------------ the fills
def _check_float_range(dtype: DType, op: str, low: float, high: float) -> None:
    """PyTorch's bounds check of a float fill's range: `from is out of bounds for float`."""
    limit = float(np.finfo(dtype).max)
    if not -limit <= low <= limit:
        raise RuntimeError(f"from is out of bounds for {_CPP_NAMES[str(dtype)]}")
    if not -limit <= high <= limit:
        raise RuntimeError(f"to is out of bounds for {_CPP_NAMES[str(dtype)]}")
    if high - low > limit:
        raise RuntimeError(
            f"{op} expects to-from <= std::numeric_limits<{torch_type_name(dtype)}>::max(), but "
            f"found to={high:g} and from={low:g} which result in to-from to exceed the limit"
        )


@enters_device
def normal_(
    input: Tensor, mean: float = 0.0, std: float = 1.0, *, generator: Generator | None = None
) -> Tensor:
    """Fill with samples of N(mean, std**2), in place (floating tensors)."""
    require_floating(input, "normal_kernel_cpu")
    mean, std = float(mean), float(std)
    if not std >= 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std:g}")

    return fill_with(input, NormalBackward0, scaled_draw(generator, "random_normal", std, mean))


@enters_device
def uniform_(
    input: Tensor,
    from_: float = 0.0,
    to: float = 1.0,
    *,
    generator: Generator | None = None,
    **kwargs: float,
) -> Tensor:
    """Fill with samples of U[from, to), in place (floating tensors); `from` may be a keyword,
    as in PyTorch (`t.uniform_(**{"from": -1, "to": 1})`)."""
    from_ = _keyword_from(kwargs, from_, "uniform_")
    require_floating(input, "check_uniform_bounds")
    low, high = float(from_), float(to)
    _check_float_range(input.dtype, "uniform_", low, high)
    if not low <= high:
        raise RuntimeError(
            f"uniform_ expects to return a [from, to) range, but found from={low:g} > to={high:g}"
        )
    span = high - low

    return fill_with(input, UniformBackward0, scaled_draw(generator, "random_uniform", span, low))


def _keyword_from(kwargs: dict, default: Any, op: str) -> Any:
    """PyTorch's keyword `from` (a Python keyword, so only reachable through `**kwargs`)."""
    for name in kwargs:
        if name != "from":
            raise TypeError(f"{op}() got an unexpected keyword argument '{name}'")
    return kwargs.get("from", default)


@enters_device
def exponential_(
    input: Tensor, lambd: float = 1.0, *, generator: Generator | None = None
) -> Tensor:
    """Fill with samples of the exponential distribution of rate `lambd`, in place."""
    if input.dtype.kind != "f":
        raise RuntimeError(
            "Exponential distribution is a continuous probability distribution. dtype must be a "
            f"floating point but you specified {torch_type_name(input.dtype)}"
        )
    lambd = float(lambd)
    if not lambd > 0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={lambd:g}")

    def draw(dev: Device, shape: tuple, dtype: Any) -> Any:
        backend, state = device_state(generator, dev)
        values = backend.random_exponential(state, shape, dtype)
        return values / lambd if lambd != 1.0 else values

    return fill_with(input, ExponentialBackward0, draw)


@enters_device
def geometric_(input: Tensor, p: float, *, generator: Generator | None = None) -> Tensor:
    """Fill with the number of Bernoulli(p) trials up to the first success (1, 2, ...)."""
    if input.dtype.kind == "b":
        raise NotImplementedError("\"geometric_cpu\" not implemented for 'Bool'")
    p = float(p)
    if not 0 < p < 1:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={p:g}")

    def draw(dev: Device, shape: tuple, dtype: Any) -> Any:
        backend, state = device_state(generator, dev)
        return backend.random_geometric(state, p, shape, dtype)

    return fill_with(input, GeometricBackward0, draw)


@enters_device
def log_normal_(
    input: Tensor, mean: float = 1.0, std: float = 2.0, *, generator: Generator | None = None
) -> Tensor:
    """Fill with exp(N(mean, std**2)) samples, in place (floating tensors)."""
    require_floating(input, "log_normal_cpu")
    mean, std = float(mean), float(std)
    if not std > 0:
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={std:g}")

    def draw(dev: Device, shape: tuple, dtype: Any) -> Any:
        backend, state = device_state(generator, dev)
        values = backend.random_normal(state, shape, dtype)
        return backend.xp.exp(values * std + mean)

    return fill_with(input, LogNormalBackward0, draw)


@enters_device
def cauchy_(
    input: Tensor,
    median: float = 0.0,
    sigma: float = 1.0,
    *,
    generator: Generator | None = None,
) -> Tensor:
    """Fill with samples of the Cauchy distribution around `median` of scale `sigma`."""
    if input.dtype.kind != "f":
        raise RuntimeError(
            "Cauchy distribution is a continuous probability distribution. dtype must be a "
            f"floating point but you specified {_CPP_NAMES.get(str(input.dtype), input.dtype)}"
        )
    median, sigma = float(median), float(sigma)
    if not sigma > 0:
        raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={sigma:g}")

    return fill_with(input, CauchyBackward0, scaled_draw(generator, "random_cauchy", sigma, median))


# ------------------------------------------------------------------- random_
def _largest(dtype: np.dtype) -> int:
    """The top of `random_`'s default range: the dtype's largest value, or for floats the
    largest integer below which every integer is exact (2**24 for float32)."""
    if dtype.kind == "b":
        return 1
    if dtype.kind == "f":
        return 2 ** (np.finfo(dtype).nmant + 1)
    return int(np.iinfo(dtype).max)


def _random_range(dtype: np.dtype, args: tuple, kwargs: dict) -> tuple[type[Op], int, int]:
    """(node, low, high) of `random_`'s closed range [low, high], by PyTorch's overloads:
    `random_()`, `random_(to)`, `random_(from, to)` (`to` None: up to the dtype's top)."""
    unknown = set(kwargs) - {"from", "to"}
    node: type[Op]
    if unknown or len(args) > 2 or (args and "from" in kwargs) or (len(args) == 2 and kwargs):
        raise TypeError(
            "random_() takes (), (to) or (from, to), positionally or as keywords `from` and "
            f"`to`; got {len(args)} positional and keywords {sorted(kwargs)}"
        )
    if len(args) == 2 or "from" in kwargs:
        low, to = args if len(args) == 2 else (kwargs["from"], kwargs.get("to"))
        node = RandomBackward0
    elif args or "to" in kwargs:
        low, to = 0, args[0] if args else kwargs["to"]
        node = RandomBackward1
    else:
        return RandomBackward2, 0, _largest(dtype)
    if to is None:
        high = _largest(dtype)
        if low > high:
            raise RuntimeError(
                "random_ expects 'from' casted to dtype to be less than or equal to 'to_inc' "
                f"casted to dtype, but got from={low} > to_inc={high}"
            )
        _check_random_bounds(dtype, int(low), high, to_given=False)
        return node, int(low), high
    low, to = int(low), int(to)
    if low >= to:
        raise RuntimeError(
            f"random_ expects 'from' to be less than 'to', but got from={low} >= to={to}"
        )
    _check_random_bounds(dtype, low, to - 1, to_given=True)
    return node, low, to - 1


def _check_random_bounds(dtype: np.dtype, low: int, high: int, to_given: bool) -> None:
    """PyTorch's checks that [low, high] fits the dtype (floats: a warning past exactness)."""
    name = _CPP_NAMES.get(str(dtype), str(dtype))
    if dtype.kind == "f":
        exact = _largest(dtype)
        limit = float(np.finfo(dtype).max)
        if not -limit <= low <= limit:
            raise RuntimeError(f"from is out of bounds for {name}")
        if to_given and not -limit <= high <= limit:
            raise RuntimeError(f"to - 1 is out of bounds for {name}")
        checked = ((low, "from"), (high, "to - 1")) if to_given else ((low, "from"),)
        for value, what in checked:
            if not -exact <= value <= exact:
                digits = exact.bit_length() - 1
                warnings.warn(
                    f"{what} is out of bounds [-(2^{digits}), 2^{digits}]. Due to precision "
                    f"limitations {name} can support discrete uniform distribution only within "
                    "this range.",
                    UserWarning,
                    stacklevel=4,
                )
        return
    info = (0, 1) if dtype.kind == "b" else (int(np.iinfo(dtype).min), int(np.iinfo(dtype).max))
    if not info[0] <= low <= info[1]:
        raise RuntimeError(f"from is out of bounds for {name}")
    if not info[0] <= high <= info[1]:
        raise RuntimeError(f"to - 1 is out of bounds for {name}")


@enters_device
def random_(
    input: Tensor, *args: int | None, generator: Generator | None = None, **kwargs: int | None
) -> Tensor:
    """Fill with integers drawn uniformly: `random_()` over the dtype's range, `random_(to)`
    from [0, to), `random_(from, to)` from [from, to) (`to` None: up to the dtype's top)."""
    if input.dtype.kind == "c":
        raise NotImplementedError(
            f"\"random_from_to\" not implemented for '{torch_type_name(input.dtype)}'"
        )
    node, low, high = _random_range(np.dtype(input.dtype), args, kwargs)

    def draw(dev: Device, shape: tuple, dtype: Any) -> Any:
        backend, state = device_state(generator, dev)
        return backend.random_integers(state, low, high + 1, shape, dtype)

    return fill_with(input, node, draw)


# ----------------------------------------------------------------- bernoulli_
def bernoulli_values(
    generator: Generator | None, dev: Device, shape: tuple, dtype: Any, p: Any
) -> Any:
    """1 with probability `p` (a float or an array broadcast to `shape`), else 0, in `dtype`."""
    backend, state = device_state(generator, dev)
    compare_in = uniform_dtype(p.dtype) if hasattr(p, "dtype") else uniform_dtype(dtype)
    draws = backend.random_uniform(state, shape, compare_in)
    return (draws < p).astype(dtype)


@enters_device
def bernoulli_(
    input: Tensor, p: float | Tensor = 0.5, *, generator: Generator | None = None
) -> Tensor:
    """Fill with 1 with probability `p` (a float, or a tensor broadcast to this one), else 0."""
    if isinstance(p, Tensor):
        probs: Tensor = _operand(input, p)
        require_floating(probs, "bernoulli_tensor_cpu_p_")

        expand(probs.detach(), *input.shape)
        check_probabilities(probs)

        def draw_tensor(dev: Device, shape: tuple, dtype: Any, probs: Any) -> Any:
            return bernoulli_values(generator, dev, shape, dtype, probs)

        return fill_with(input, BernoulliBackward1, draw_tensor, probs)
    p = float(p)
    if not 0 <= p <= 1:
        raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={p:g}")

    def draw(dev: Device, shape: tuple, dtype: Any) -> Any:
        return bernoulli_values(generator, dev, shape, dtype, p)

    return fill_with(input, BernoulliBackward2, draw)


METHODS = {
    "normal_": normal_,
    "uniform_": uniform_,
    "exponential_": exponential_,
    "geometric_": geometric_,
    "log_normal_": log_normal_,
    "cauchy_": cauchy_,
    "random_": random_,
    "bernoulli_": bernoulli_,
}
