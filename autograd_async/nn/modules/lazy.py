"""Lazy layers: Linear, convolutions and norms whose input size is read from the first input.

As in PyTorch, a lazy layer's parameters (and running statistics) start as
`UninitializedParameter`s (`UninitializedBuffer`s) without a shape; a forward pre-hook
materialises them from the first input, runs the layer's ordinary initialisation, removes
itself and turns the layer into its eager class (`LazyLinear` becomes `Linear`). Loading a
state dict into an uninitialised layer materialises it with the stored shapes instead.
An optimizer given the parameters before the first forward holds the same objects, which
materialising fills in; PyTorch's advice still holds: build it after the first forward, so
that nothing reads a shape before there is one.
"""

from __future__ import annotations

from typing import Any

from ... import creation
from ...core.tensor import Tensor
from ...dtypes import int64
from ...grad_mode import no_grad
from ..parameter import UninitializedBuffer, UninitializedParameter, is_lazy
from .batchnorm import (
    BatchNorm1d,
    BatchNorm2d,
    BatchNorm3d,
    InstanceNorm1d,
    InstanceNorm2d,
    InstanceNorm3d,
)
from .conv import Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from .linear import Linear


class LazyModuleMixin:
    """Materialise uninitialised parameters on the first forward, or from a state dict."""

    cls_to_become: type | None = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        module: Any = self
        self._load_hook = module.register_load_state_dict_pre_hook(_materialize_from_state)
        self._initialize_hook = module.register_forward_pre_hook(
            _infer_parameters, with_kwargs=True
        )

    def has_uninitialized_params(self) -> bool:
        """Whether a parameter or buffer of this module still has no shape."""
        module: Any = self
        stores = (module._parameters.values(), module._buffers.values())
        return any(is_lazy(t) for store in stores for t in store)

    def initialize_parameters(self, *args: Any, **kwargs: Any) -> None:
        """Give the uninitialised tensors their shapes from the input (each layer's own)."""
        raise NotImplementedError(
            f"initialize_parameters is not implemented for {type(self).__name__}"
        )


def _uninitialized(module: Any, name: str) -> UninitializedParameter:
    """The parameter `name` of a lazy `module`, which its first forward materialises."""
    param = getattr(module, name)
    if not isinstance(param, UninitializedParameter):
        raise AttributeError(
            f"{type(module).__name__}.{name} is already initialized, so the layer's first "
            "forward cannot materialize it"
        )
    return param


def _infer_parameters(module: Any, args: tuple, kwargs: dict) -> None:
    """The forward pre-hook: materialise, then become the eager class."""
    module.initialize_parameters(*args, **kwargs)
    if module.has_uninitialized_params():
        raise RuntimeError(f"module {type(module).__name__} has not been fully initialized")
    module._initialize_hook.remove()
    module._load_hook.remove()
    del module._initialize_hook
    del module._load_hook
    if module.cls_to_become is not None:
        module.__class__ = module.cls_to_become


def _materialize_from_state(module: Any, state_dict: dict, prefix: str, *_: Any) -> None:
    """The load_state_dict pre-hook: uninitialised tensors take the stored tensors' shapes."""
    stores = (module._parameters, module._buffers)
    for store in stores:
        for name, tensor in store.items():
            key = prefix + name
            if tensor is None or not is_lazy(tensor) or key not in state_dict:
                continue
            stored = state_dict[key]
            if isinstance(stored, Tensor) and not is_lazy(stored):
                with no_grad():
                    tensor.materialize(tuple(stored.shape))


# ------------------------------------------------------------------ linear
class LazyLinear(LazyModuleMixin, Linear):
    """A Linear layer whose in_features is the last dim of its first input."""

    cls_to_become = Linear

    def __init__(
        self, out_features: int, bias: bool = True, device: Any = None, dtype: Any = None
    ) -> None:
        super().__init__(0, 0, False)
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        self.out_features = out_features
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)

    def reset_parameters(self) -> None:
        """Linear's initialisation, once the shapes are known."""
        if not self.has_uninitialized_params() and self.in_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input: Tensor, *args: Any, **kwargs: Any) -> None:
        """in_features from the input's last dim."""
        if self.has_uninitialized_params():
            with no_grad():
                self.in_features = input.shape[-1]
                _uninitialized(self, "weight").materialize((self.out_features, self.in_features))
                if self.bias is not None:
                    _uninitialized(self, "bias").materialize((self.out_features,))
                self.reset_parameters()


# ------------------------------------------------------------- convolutions
class _LazyConvMixin(LazyModuleMixin):
    """What the lazy convolutions share: in_channels from the first input's channel dim."""

    _dims: int
    _transposed: bool

    def _lazy_parameters(self, out_channels: int, bias: bool, device: Any, dtype: Any) -> None:
        module: Any = self
        module.weight = UninitializedParameter(device=device, dtype=dtype)
        module.out_channels = out_channels
        if bias:
            module.bias = UninitializedParameter(device=device, dtype=dtype)

    def reset_parameters(self) -> None:
        """The convolution's initialisation, once the shapes are known."""
        module: Any = self
        if not self.has_uninitialized_params() and module.in_channels != 0:
            super().reset_parameters()  # type: ignore[misc]

    def _in_channels(self, input: Tensor) -> int:
        unbatched, batched = self._dims + 1, self._dims + 2
        if input.dim() not in (unbatched, batched):
            raise RuntimeError(
                f"Expected {unbatched}D (unbatched) or {batched}D (batched) input to "
                f"{type(self).__name__}, but got input of size: {list(input.shape)}"
            )
        return input.shape[1] if input.dim() == batched else input.shape[0]

    def initialize_parameters(self, input: Tensor, *args: Any, **kwargs: Any) -> None:
        """in_channels from the input's channel dim."""
        module: Any = self
        if not self.has_uninitialized_params():
            return
        module.in_channels = self._in_channels(input)
        if module.in_channels % module.groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        with no_grad():
            per_group = module.out_channels if self._transposed else module.in_channels
            if self._transposed:
                shape = (module.in_channels, per_group // module.groups, *module.kernel_size)
            else:
                shape = (module.out_channels, per_group // module.groups, *module.kernel_size)
            module.weight.materialize(shape)
            if module.bias is not None:
                module.bias.materialize((module.out_channels,))
            self.reset_parameters()


class _LazyConv(_LazyConvMixin):
    def __init__(
        self,
        out_channels: int,
        kernel_size: Any,
        stride: Any = 1,
        padding: Any = 0,
        dilation: Any = 1,
        groups: int = 1,
        bias: bool = True,
        padding_mode: str = "zeros",
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__(
            0,
            0,
            kernel_size,
            stride,
            padding,
            dilation,
            groups,
            False,
            padding_mode,
            device=device,
            dtype=dtype,
        )
        self._lazy_parameters(out_channels, bias, device, dtype)


class _LazyConvTranspose(_LazyConvMixin):
    def __init__(
        self,
        out_channels: int,
        kernel_size: Any,
        stride: Any = 1,
        padding: Any = 0,
        output_padding: Any = 0,
        groups: int = 1,
        bias: bool = True,
        dilation: Any = 1,
        padding_mode: str = "zeros",
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__(
            0,
            0,
            kernel_size,
            stride,
            padding,
            output_padding,
            groups,
            False,
            dilation,
            padding_mode,
            device=device,
            dtype=dtype,
        )
        self._lazy_parameters(out_channels, bias, device, dtype)


class LazyConv1d(_LazyConv, Conv1d):
    """A Conv1d whose in_channels comes from its first input."""

    cls_to_become = Conv1d


class LazyConv2d(_LazyConv, Conv2d):
    """A Conv2d whose in_channels comes from its first input."""

    cls_to_become = Conv2d


class LazyConv3d(_LazyConv, Conv3d):
    """A Conv3d whose in_channels comes from its first input."""

    cls_to_become = Conv3d


class LazyConvTranspose1d(_LazyConvTranspose, ConvTranspose1d):
    """A ConvTranspose1d whose in_channels comes from its first input."""

    cls_to_become = ConvTranspose1d


class LazyConvTranspose2d(_LazyConvTranspose, ConvTranspose2d):
    """A ConvTranspose2d whose in_channels comes from its first input."""

    cls_to_become = ConvTranspose2d


class LazyConvTranspose3d(_LazyConvTranspose, ConvTranspose3d):
    """A ConvTranspose3d whose in_channels comes from its first input."""

    cls_to_become = ConvTranspose3d


# -------------------------------------------------------------------- norms
class _LazyNormBase(LazyModuleMixin):
    """num_features from the first input's dim 1; PyTorch's defaults (affine, running stats)."""

    def __init__(
        self,
        eps: float = 1e-5,
        momentum: float | None = 0.1,
        affine: bool = True,
        track_running_stats: bool = True,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__(0, eps, momentum, False, False, device, dtype)
        module: Any = self
        module.affine = affine
        module.track_running_stats = track_running_stats
        if affine:
            module.weight = UninitializedParameter(device=device, dtype=dtype)
            module.bias = UninitializedParameter(device=device, dtype=dtype)
        if track_running_stats:
            module.running_mean = UninitializedBuffer(device=device, dtype=dtype)
            module.running_var = UninitializedBuffer(device=device, dtype=dtype)
            module.num_batches_tracked = creation.tensor(0, dtype=int64, device=device)

    def reset_parameters(self) -> None:
        """The norm's initialisation, once the shapes are known."""
        module: Any = self
        if not self.has_uninitialized_params() and module.num_features != 0:
            super().reset_parameters()  # type: ignore[misc]

    def initialize_parameters(self, input: Tensor, *args: Any, **kwargs: Any) -> None:
        """num_features from the input's dim 1."""
        module: Any = self
        if not self.has_uninitialized_params():
            return
        module.num_features = input.shape[1]
        with no_grad():
            for name in ("weight", "bias", "running_mean", "running_var"):
                tensor = getattr(module, name)
                if tensor is not None and is_lazy(tensor):
                    tensor.materialize((module.num_features,))
            self.reset_parameters()


class LazyBatchNorm1d(_LazyNormBase, BatchNorm1d):
    """A BatchNorm1d whose num_features comes from its first input."""

    cls_to_become = BatchNorm1d


class LazyBatchNorm2d(_LazyNormBase, BatchNorm2d):
    """A BatchNorm2d whose num_features comes from its first input."""

    cls_to_become = BatchNorm2d


class LazyBatchNorm3d(_LazyNormBase, BatchNorm3d):
    """A BatchNorm3d whose num_features comes from its first input."""

    cls_to_become = BatchNorm3d


class LazyInstanceNorm1d(_LazyNormBase, InstanceNorm1d):
    """An InstanceNorm1d whose num_features comes from its first input."""

    cls_to_become = InstanceNorm1d


class LazyInstanceNorm2d(_LazyNormBase, InstanceNorm2d):
    """An InstanceNorm2d whose num_features comes from its first input."""

    cls_to_become = InstanceNorm2d


class LazyInstanceNorm3d(_LazyNormBase, InstanceNorm3d):
    """An InstanceNorm3d whose num_features comes from its first input."""

    cls_to_become = InstanceNorm3d


__all__ = [
    "LazyBatchNorm1d",
    "LazyBatchNorm2d",
    "LazyBatchNorm3d",
    "LazyConv1d",
    "LazyConv2d",
    "LazyConv3d",
    "LazyConvTranspose1d",
    "LazyConvTranspose2d",
    "LazyConvTranspose3d",
    "LazyInstanceNorm1d",
    "LazyInstanceNorm2d",
    "LazyInstanceNorm3d",
    "LazyLinear",
    "LazyModuleMixin",
]
