"""Convolutions and their adjoints: conv1d/2d/3d, conv_transpose1d/2d, unfold (im2col), fold.

A convolution is im2col (one strided copy) then one batched matmul with the weight; its backward
is one matmul for the weight's gradient and a transposed matmul plus col2im for the input's. With
`create_graph=True` the same rules are built from differentiable pieces (`Im2ColBackward0`,
`Col2ImBackward0` and matmuls), so convolutions have derivatives of every order.
"""

from __future__ import annotations

import math
from typing import Any

from ..core.op import Op
from ..core.tensor import Tensor
from . import conv_items, dual
from .conv_arrays import conv_backward, conv_forward, weight_matrix
from .dual import as_array, swap_last
from .windows import (
    Windows,
    col2im,
    col2im_cf,
    conv_windows,
    from_cols_cf,
    im2col,
    im2col_cf,
    to_cols_cf,
)


class Im2ColBackward0(Op):
    """The windows of an image as columns (N, C * kernel, out): PyTorch's `unfold`."""

    __slots__ = ("_win",)
    op_name = "im2col"

    def forward(self, x: Any, win: Windows) -> Any:
        self._win = win
        return im2col(x, win)

    def backward(self, g: Any) -> Any:
        if isinstance(g, Tensor):
            return Col2ImBackward0.apply(g, win=self._win)
        return col2im(g, self._win)


class Col2ImBackward0(Op):
    """Columns added back into an image, overlaps summed: PyTorch's `fold`."""

    __slots__ = ("_win",)
    op_name = "col2im"

    def forward(self, cols: Any, win: Windows) -> Any:
        self._win = win
        return col2im(cols, win)

    def backward(self, g: Any) -> Any:
        if isinstance(g, Tensor):
            return Im2ColBackward0.apply(g, win=self._win)
        return im2col(g, self._win)


def _bias_shape(channels: int, spatial_dims: int) -> tuple[int, ...]:
    return (1, channels) + (1,) * spatial_dims


def _matrix(a: Any) -> Any:
    """(G, R, M) per-group rows stacked as (G * R, M); a matrix as itself."""
    return a.reshape((math.prod(a.shape[:-1]), a.shape[-1]))


def _bias_grad(g: Any) -> Any:
    return dual.sum_dims(g, (0,) + tuple(range(2, g.ndim)))


class ConvolutionBackward0(Op):
    """input (N, C, *size) * weight (O, C / groups, *kernel) + bias, via im2col and one matmul.

    The array math is `conv_arrays`: columns laid out (C * kernel, N * positions), so the whole
    batch is one 2-D matmul (per group), and so is the weight's gradient; with unit strides the
    positions run over the padded grid (see `windows`), which makes im2col and col2im long
    contiguous copies and adds. A large NumPy convolution runs by parts of its batch on every
    intra-op thread instead (`conv_items`).
    """

    __slots__ = ("_win", "_groups", "_cols", "_w_shape", "_by_parts")
    saved_slots = ("_cols",)
    op_name = "convolution"
    saved_inputs = (0, 1)
    saved_for = {0: (1,), 1: (0,)}  # x for the weight's gradient, the weight for x's

    def forward(self, x: Any, w: Any, b: Any = None, *, win: Windows, groups: int) -> Any:
        self._win, self._groups, self._w_shape = win, groups, w.shape
        self._by_parts = conv_items.applies(x, win)
        if self._by_parts:
            # Keeps the padded input: backward builds each part's columns again from it.
            out, padded = conv_items.forward(x, w, b, win, groups)
            self._cols = padded if self.needs_input_grad[1] else None
            return out
        # Keep the columns for the weight's gradient (only when it is wanted): recomputing them
        # would cost backward a second copy of the whole input.
        out, self._cols = conv_forward(x, w, b, win, groups, self.needs_input_grad[1])
        return as_array(out)

    def _weight_matrix(self, w: Any) -> Any:
        """The weight as (O, C / G * K), or (G, O / G, C / G * K) with groups."""
        return weight_matrix(w, self._groups)

    def backward(self, g: Any) -> tuple:
        x, w = self.saved(g)
        need = self.needs_input_grad
        if isinstance(g, Tensor):
            gx, gw = self._graph_backward(g, x, w)
            gb = _bias_grad(g) if len(need) > 2 and need[2] else None
        else:
            if need[1]:
                self.check_released()
            rule = conv_items.backward if self._by_parts else conv_backward
            gx, gw, gb = rule(g, w, self._cols, self._win, self._groups, self._w_shape, need)
        if len(need) < 3:
            return gx, gw
        return gx, gw, gb

    def _grouped_per_item(self, rows: Any) -> Any:
        """(N, R, L) as itself, or (N, G, R / G, L) with groups."""
        if self._groups == 1:
            return rows
        n, r = rows.shape[:2]
        return rows.reshape((n, self._groups, r // self._groups, rows.shape[2]))

    def _graph_backward(self, g: Tensor, x: Any, w: Any) -> tuple:
        """The same rules from differentiable ops (im2col, col2im, matmuls): create_graph=True."""
        need = self.needs_input_grad
        win = self._win
        g_cols = self._grouped_per_item(g.reshape(g.shape[:2] + (-1,)))
        gx = gw = None
        if need[0]:
            cols = swap_last(self._weight_matrix(w)) @ g_cols
            gx = Col2ImBackward0.apply(cols.reshape((g.shape[0], -1, win.out_numel)), win=win)
        if need[1]:
            cols = self._grouped_per_item(Im2ColBackward0.apply(x, win=win))
            gw = dual.sum_dims(g_cols @ swap_last(cols), 0).reshape(self._w_shape)
        return gx, gw


class ConvTransposeBackward0(Op):
    """The adjoint of a convolution: input (N, C, *size), weight (C, O / groups, *kernel).

    `win` describes the windows over the output image; there is one per input position. Forward
    is a convolution's input gradient (one matmul, then col2im); backward is a convolution of
    the output's gradient (im2col, then one matmul each for the input and the weight).
    """

    __slots__ = ("_win", "_groups", "_rows", "_x_shape", "_w_shape", "_by_parts")
    saved_slots = ("_rows",)
    op_name = "convolution_transpose"
    saved_inputs = (0, 1)
    saved_for = {0: (1,), 1: (0,)}  # x for the weight's gradient, the weight for x's

    def forward(self, x: Any, w: Any, b: Any = None, *, win: Windows, groups: int) -> Any:
        self._win, self._groups = win, groups
        self._x_shape, self._w_shape = x.shape, w.shape
        self._by_parts = conv_items.applies(x, win, channels=w.shape[1] * groups)
        if self._by_parts:  # backward reads the input's rows again from x, part by part
            self._rows = None
            return conv_items.transposed_forward(x, w, b, win, groups)
        rows = self._grouped(to_cols_cf(x, win))  # (C, N * positions), per group
        self._rows = rows if self.needs_input_grad[1] else None
        cols = swap_last(self._weight_matrix(w)) @ rows
        out = col2im_cf(_matrix(cols), win, x.shape[0])
        if b is not None:
            out += b.reshape(_bias_shape(b.shape[0], len(win.size)))
        return as_array(out)

    def _grouped(self, rows: Any) -> Any:
        """(R, M) as itself, or (G, R / G, M) with groups."""
        if self._groups == 1:
            return rows
        return rows.reshape((self._groups, rows.shape[0] // self._groups, rows.shape[1]))

    def _grouped_per_item(self, a: Any) -> Any:
        """(N, R, ...) as (N, R, L), or (N, G, R / G, L) with groups."""
        n, rows = a.shape[:2]
        length = math.prod(a.shape[2:])
        if self._groups == 1:
            return a.reshape((n, rows, length))
        return a.reshape((n, self._groups, rows // self._groups, length))

    def _weight_matrix(self, w: Any) -> Any:
        """The weight as (C, O / G * K), or (G, C / G, O / G * K) with groups."""
        if self._groups == 1:
            return w.reshape((w.shape[0], -1))
        return w.reshape((self._groups, w.shape[0] // self._groups, -1))

    def backward(self, g: Any) -> tuple:
        x, w = self.saved(g)
        need = self.needs_input_grad
        if isinstance(g, Tensor):
            gx, gw = self._graph_backward(g, x, w)
        else:
            gx, gw = self._array_backward(g, x, w)
        if len(need) < 3:
            return gx, gw
        return gx, gw, (_bias_grad(g) if need[2] else None)

    def _array_backward(self, g: Any, x: Any, w: Any) -> tuple:
        need = self.needs_input_grad
        if self._by_parts:
            return conv_items.transposed_backward(
                g, w, x, self._win, self._groups, self._w_shape, need
            )
        g_cols = self._grouped(im2col_cf(g, self._win))
        gx = gw = None
        if need[0]:
            rows = self._weight_matrix(w) @ g_cols
            gx = from_cols_cf(_matrix(rows), self._win, g.shape[0])
        if need[1]:
            self.check_released()
            gw = (self._rows @ swap_last(g_cols)).reshape(self._w_shape)
        return gx, gw

    def _graph_backward(self, g: Tensor, x: Any, w: Any) -> tuple:
        """The same rules from differentiable ops (im2col, matmuls): create_graph=True."""
        need = self.needs_input_grad
        g_cols = self._grouped_per_item(Im2ColBackward0.apply(g, win=self._win))
        gx = gw = None
        if need[0]:
            gx = (self._weight_matrix(w) @ g_cols).reshape(self._x_shape)
        if need[1]:
            gw = dual.sum_dims(self._grouped_per_item(x) @ swap_last(g_cols), 0)
            gw = gw.reshape(self._w_shape)
        return gx, gw


# ------------------------------------------------------------------ arguments
def expand_param(value: Any, dims: int, name: str, op: str) -> tuple[int, ...]:
    """An int or a sequence of `dims` ints as a tuple, with PyTorch's error otherwise."""
    if isinstance(value, int):
        return (value,) * dims
    values = tuple(int(v) for v in value)
    if len(values) == 1:
        return values * dims
    if len(values) != dims:
        raise RuntimeError(
            f"{op}: expected {name} to be a single integer value or a list of {dims} values to "
            f"match the convolution dimensions, but got {name}={list(values)}"
        )
    return values


def _check_positive(values: tuple[int, ...], name: str) -> None:
    if any(v <= 0 for v in values):
        raise RuntimeError(f"non-positive {name} is not supported")


def check_input_rank(input: Tensor, dims: int, op: str) -> bool:
    """Raise PyTorch's error unless `input` is (C, *size) or (N, C, *size); True when batched."""
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}(): argument 'input' must be Tensor, not {type(input).__name__}")
    if input.ndim not in (dims + 1, dims + 2):
        raise RuntimeError(
            f"Expected {dims + 1}D (unbatched) or {dims + 2}D (batched) input to {op}, but got "
            f"input of size: {list(input.shape)}"
        )
    return input.ndim == dims + 2


def _check_weight(input: Tensor, weight: Tensor, bias: Tensor | None, dims: int, op: str) -> None:
    if not isinstance(weight, Tensor) or weight.ndim != dims + 2:
        size = list(weight.shape) if isinstance(weight, Tensor) else type(weight).__name__
        raise RuntimeError(
            f"{op}: expected a {dims + 2}-D weight (out_channels, in_channels / groups, *kernel), "
            f"but got weight of size {size}"
        )
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and t.dtype != input.dtype:
            raise RuntimeError(
                f"{op}: expected {name} of the input's dtype {input.dtype}, but found {t.dtype}"
            )


def _check_bias(bias: Tensor | None, weight: Tensor, channels: int) -> None:
    if bias is not None and tuple(bias.shape) != (channels,):
        raise RuntimeError(
            f"Given weight of size {list(weight.shape)}, expected bias to be 1-dimensional with "
            f"{channels} elements, but got bias of size {list(bias.shape)} instead"
        )


def _check_groups(groups: int, weight: Tensor) -> None:
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    if weight.shape[0] % groups:
        raise RuntimeError(
            f"Given groups={groups}, expected weight to be divisible by {groups} at dimension 0, "
            f"but got weight of size {list(weight.shape)} instead"
        )


def _check_fits(win: Windows) -> None:
    spans = tuple(d * (k - 1) + 1 for k, d in zip(win.kernel, win.dilation))
    padded = tuple(n + lo + hi for n, lo, hi in zip(win.size, win.pad_lo, win.pad_hi))
    if any(s > p for s, p in zip(spans, padded)):
        raise RuntimeError(
            f"Calculated padded input size per channel: ({' x '.join(map(str, padded))}). Kernel "
            f"size: ({' x '.join(map(str, spans))}). Kernel size can't be greater than actual "
            "input size"
        )


def _conv_padding(
    padding: Any,
    kernel: tuple[int, ...],
    stride: tuple[int, ...],
    dilation: tuple[int, ...],
    op: str,
) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(before, after) padding per spatial dim from an int, a sequence, 'same' or 'valid'."""
    dims = len(kernel)
    if isinstance(padding, str):
        if padding == "valid":
            return (0,) * dims, (0,) * dims
        if padding != "same":
            raise RuntimeError(f"Invalid padding string: {padding!r}")
        if any(s != 1 for s in stride):
            raise RuntimeError("padding='same' is not supported for strided convolutions")
        total = tuple(d * (k - 1) for k, d in zip(kernel, dilation))
        lo = tuple(t // 2 for t in total)
        return lo, tuple(t - low for t, low in zip(total, lo))
    pads = expand_param(padding, dims, "padding", op)
    if any(p < 0 for p in pads):
        raise RuntimeError("negative padding is not supported")
    return pads, pads


def _convolution(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None,
    stride: Any,
    padding: Any,
    dilation: Any,
    groups: int,
    dims: int,
    op: str,
) -> Tensor:
    batched = check_input_rank(input, dims, op)
    _check_weight(input, weight, bias, dims, op)
    stride = expand_param(stride, dims, "stride", op)
    dilation = expand_param(dilation, dims, "dilation", op)
    _check_positive(stride, "stride")
    _check_positive(dilation, "dilation")
    _check_groups(groups, weight)
    x = input if batched else input.unsqueeze(0)
    if x.shape[1] != weight.shape[1] * groups:
        raise RuntimeError(
            f"Given groups={groups}, weight of size {list(weight.shape)}, expected "
            f"input{list(x.shape)} to have {weight.shape[1] * groups} channels, but got "
            f"{x.shape[1]} channels instead"
        )
    _check_bias(bias, weight, weight.shape[0])
    kernel = tuple(weight.shape[2:])
    lo, hi = _conv_padding(padding, kernel, stride, dilation, op)
    win = conv_windows(tuple(x.shape[2:]), kernel, stride, dilation, lo, hi)
    _check_fits(win)
    args = (x, weight) if bias is None else (x, weight, bias)
    out = ConvolutionBackward0.apply(*args, win=win, groups=groups)
    return out if batched else out.squeeze(0)


def conv1d(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride: Any = 1,
    padding: Any = 0,
    dilation: Any = 1,
    groups: int = 1,
) -> Tensor:
    """1-D convolution (cross-correlation) of (N, C, L) with (O, C / groups, K)."""
    return _convolution(input, weight, bias, stride, padding, dilation, groups, 1, "conv1d")


def conv2d(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride: Any = 1,
    padding: Any = 0,
    dilation: Any = 1,
    groups: int = 1,
) -> Tensor:
    """2-D convolution (cross-correlation) of (N, C, H, W) with (O, C / groups, KH, KW)."""
    return _convolution(input, weight, bias, stride, padding, dilation, groups, 2, "conv2d")


def conv3d(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride: Any = 1,
    padding: Any = 0,
    dilation: Any = 1,
    groups: int = 1,
) -> Tensor:
    """3-D convolution (cross-correlation) of (N, C, D, H, W) with (O, C / groups, *kernel)."""
    return _convolution(input, weight, bias, stride, padding, dilation, groups, 3, "conv3d")


def _transposed(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None,
    stride: Any,
    padding: Any,
    output_padding: Any,
    groups: int,
    dilation: Any,
    dims: int,
    op: str,
) -> Tensor:
    batched = check_input_rank(input, dims, op)
    _check_weight(input, weight, bias, dims, op)
    if isinstance(padding, str):
        raise TypeError(f"{op}(): argument 'padding' must be tuple of ints, not str")
    stride = expand_param(stride, dims, "stride", op)
    dilation = expand_param(dilation, dims, "dilation", op)
    pads = expand_param(padding, dims, "padding", op)
    extra = expand_param(output_padding, dims, "output_padding", op)
    _check_positive(stride, "stride")
    _check_positive(dilation, "dilation")
    if any(p < 0 for p in pads + extra):
        raise RuntimeError("negative padding is not supported")
    if any(e >= s and e >= d for e, s, d in zip(extra, stride, dilation)):
        raise RuntimeError(
            "output padding must be smaller than either stride or dilation, but got "
            f"output_padding={list(extra)} stride={list(stride)} dilation={list(dilation)}"
        )
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    x = input if batched else input.unsqueeze(0)
    if x.shape[1] != weight.shape[0] or weight.shape[0] % groups:
        raise RuntimeError(
            f"Given transposed=1, weight of size {list(weight.shape)}, expected input"
            f"{list(x.shape)} to have {weight.shape[0]} channels, but got {x.shape[1]} channels "
            f"instead"
            + (
                f" (and {weight.shape[0]} divisible by groups={groups})"
                if weight.shape[0] % groups
                else ""
            )
        )
    _check_bias(bias, weight, weight.shape[1] * groups)
    kernel = tuple(weight.shape[2:])
    size = tuple(
        (n - 1) * s - 2 * p + d * (k - 1) + e + 1
        for n, s, p, d, k, e in zip(x.shape[2:], stride, pads, dilation, kernel, extra)
    )
    if any(n <= 0 for n in size):
        raise RuntimeError(
            f"{op}: the output size {list(size)} is not positive for input of size "
            f"{list(x.shape)}, kernel {list(kernel)}, stride {list(stride)}, padding {list(pads)}"
        )
    win = Windows(size, kernel, stride, dilation, pads, pads, tuple(x.shape[2:]))
    args = (x, weight) if bias is None else (x, weight, bias)
    out = ConvTransposeBackward0.apply(*args, win=win, groups=groups)
    return out if batched else out.squeeze(0)


def conv_transpose1d(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride: Any = 1,
    padding: Any = 0,
    output_padding: Any = 0,
    groups: int = 1,
    dilation: Any = 1,
) -> Tensor:
    """1-D transposed convolution of (N, C, L) with (C, O / groups, K)."""
    return _transposed(
        input,
        weight,
        bias,
        stride,
        padding,
        output_padding,
        groups,
        dilation,
        1,
        "conv_transpose1d",
    )


def conv_transpose2d(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride: Any = 1,
    padding: Any = 0,
    output_padding: Any = 0,
    groups: int = 1,
    dilation: Any = 1,
) -> Tensor:
    """2-D transposed convolution of (N, C, H, W) with (C, O / groups, KH, KW)."""
    return _transposed(
        input,
        weight,
        bias,
        stride,
        padding,
        output_padding,
        groups,
        dilation,
        2,
        "conv_transpose2d",
    )


def conv_transpose3d(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride: Any = 1,
    padding: Any = 0,
    output_padding: Any = 0,
    groups: int = 1,
    dilation: Any = 1,
) -> Tensor:
    """3-D transposed convolution of (N, C, D, H, W) with (C, O / groups, KD, KH, KW)."""
    return _transposed(
        input,
        weight,
        bias,
        stride,
        padding,
        output_padding,
        groups,
        dilation,
        3,
        "conv_transpose3d",
    )


# ------------------------------------------------------------ unfold / fold
def _pair(value: Any, name: str, op: str) -> tuple[int, int]:
    return expand_param(value, 2, name, op)  # type: ignore[return-value]


def unfold(
    input: Tensor, kernel_size: Any, dilation: Any = 1, padding: Any = 0, stride: Any = 1
) -> Tensor:
    """Sliding blocks of (N, C, H, W) as columns (N, C * KH * KW, L) (im2col)."""
    if input.ndim not in (3, 4):
        raise NotImplementedError(
            f"Input Error: Only 3D or 4D input Tensors are supported (got {input.ndim}D)"
        )
    kernel = _pair(kernel_size, "kernel_size", "unfold")
    dilation, pads, stride = (
        _pair(v, n, "unfold")
        for v, n in ((dilation, "dilation"), (padding, "padding"), (stride, "stride"))
    )
    _check_positive(kernel + stride + dilation, "kernel_size, stride or dilation")
    if any(p < 0 for p in pads):
        raise RuntimeError("negative padding is not supported")
    x = input if input.ndim == 4 else input.unsqueeze(0)
    win = conv_windows(tuple(x.shape[2:]), kernel, stride, dilation, pads, pads)
    if any(o <= 0 for o in win.out):
        raise RuntimeError(
            f"unfold: the input of spatial size {list(x.shape[2:])} padded by {list(pads)} is "
            f"too small for kernel {list(kernel)} with dilation {list(dilation)}: no blocks"
        )
    out = Im2ColBackward0.apply(x, win=win)
    return out if input.ndim == 4 else out.squeeze(0)


def fold(
    input: Tensor,
    output_size: Any,
    kernel_size: Any,
    dilation: Any = 1,
    padding: Any = 0,
    stride: Any = 1,
) -> Tensor:
    """Columns (N, C * KH * KW, L) summed back into (N, C, H, W) (col2im)."""
    if input.ndim not in (2, 3):
        raise NotImplementedError(
            f"Input Error: Only unbatched (2D) or batched (3D) input Tensors are supported "
            f"(got {input.ndim}D)"
        )
    size = _pair(output_size, "output_size", "fold")
    kernel = _pair(kernel_size, "kernel_size", "fold")
    dilation, pads, stride = (
        _pair(v, n, "fold")
        for v, n in ((dilation, "dilation"), (padding, "padding"), (stride, "stride"))
    )
    _check_positive(kernel + stride + dilation, "kernel_size, stride or dilation")
    x = input if input.ndim == 3 else input.unsqueeze(0)
    win = conv_windows(size, kernel, stride, dilation, pads, pads)
    if x.shape[1] % math.prod(kernel):
        raise RuntimeError(
            f"Expected size of input's dimension 1 to be divisible by the product of "
            f"kernel_size, but got input.size(1)={x.shape[1]} and kernel_size={kernel}"
        )
    if x.shape[2] != win.out_numel:
        raise RuntimeError(
            f"Given output_size={size}, kernel_size={kernel}, dilation={dilation}, "
            f"padding={pads}, stride={stride}, expected size of input's dimension 2 to match "
            f"the calculated number of sliding blocks {' * '.join(map(str, win.out))} = "
            f"{win.out_numel}, but got input.size(2)={x.shape[2]}."
        )
    out = Col2ImBackward0.apply(x, win=win)
    return out if input.ndim == 3 else out.squeeze(0)


FUNCTIONS: dict[str, Any] = {}  # none of these is a Tensor method in PyTorch
