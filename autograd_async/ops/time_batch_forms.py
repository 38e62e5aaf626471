"""conv_tbc (a 1-d convolution over time-first input) and native_channel_shuffle, the ATen names
nn.functional also exports; each is the library's existing op over rearranged arguments."""

from __future__ import annotations

from ..core.op import require_tensor
from ..core.tensor import Tensor
from ..grad_mode import no_grad
from .channel_rearrange import channel_shuffle
from .conv import conv1d
from .symmetric_factorizations import NotImplemented


def conv_tbc(input: Tensor, weight: Tensor, bias: Tensor, pad: int = 0) -> Tensor:
    """A 1-d convolution of input (time, batch, in) with weight (kernel, in, out) and bias
    (out), zero-padded by `pad` in time: (time + 2 pad - kernel + 1, batch, out)."""
    require_tensor("conv_tbc", input)
    if input.ndim != 3:
        raise RuntimeError("Input must have 3 dims: time, batch, in_channel")
    if weight.ndim != 3:
        raise RuntimeError(
            "Weight tensor must have 3 dims: kernel_width, in_channels, out_channels."
        )
    if bias.ndim != 1:
        raise RuntimeError("Bias must be 1-D")
    if input.shape[2] != weight.shape[1]:
        raise RuntimeError("Input dim 2 (input channels) is not == dim 1 in the weight tensor")
    if weight.shape[2] != bias.shape[0]:
        raise RuntimeError("Bias size must equal dim 2 in the weight tensor (output channels).")
    out = conv1d(input.permute(1, 2, 0), weight.permute(2, 1, 0), bias, padding=pad)
    return out.permute(2, 0, 1)


def native_channel_shuffle(input: Tensor, groups: int) -> Tensor:
    """`channel_shuffle` under its ATen kernel's name, which PyTorch gives no derivative."""

    with no_grad():
        value = channel_shuffle(input, groups)
    return NotImplemented.apply(input, value=value._data, aten="native_channel_shuffle")


FUNCTIONS = {"conv_tbc": conv_tbc, "native_channel_shuffle": native_channel_shuffle}
NOT_METHODS = tuple(FUNCTIONS)
