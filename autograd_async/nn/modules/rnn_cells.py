"""`RNNCell`, `LSTMCell` and `GRUCell`: one time step of a recurrent layer.

A step is the recurrent-layer node (`ops.rnn`) over a sequence of length one, so a cell costs one
graph node however many gates it has.
"""

from __future__ import annotations

import math
from typing import Any

from ... import creation
from ...core.op import torch_type_name
from ...core.tensor import Tensor
from ...ops.rnn import recurrent_layer
from .. import init
from ..parameter import Parameter
from .input_checks import expect_tensor
from .module import Module


class RNNCellBase(Module):
    """The parameters shared by the cells: weight_ih, weight_hh, bias_ih, bias_hh."""

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        bias: bool,
        num_chunks: int,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        gates = num_chunks * hidden_size

        def new(*shape: int) -> Parameter:
            return Parameter(creation.empty(*shape, dtype=dtype, device=device))

        self.weight_ih = new(gates, input_size)
        self.weight_hh = new(gates, hidden_size)
        if bias:
            self.bias_ih = new(gates)
            self.bias_hh = new(gates)
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Every weight and bias from U(-1/sqrt(hidden_size), 1/sqrt(hidden_size))."""
        bound = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -bound, bound)

    def extra_repr(self) -> str:
        """Sizes, and bias / nonlinearity when not the default."""
        text = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            text += f", bias={self.bias}"
        if getattr(self, "nonlinearity", "tanh") != "tanh":
            text += f", nonlinearity={self.nonlinearity}"
        return text

    def _prepare(self, input: Any, states: tuple, label: str) -> tuple[Tensor, tuple, bool]:
        """The input and states as batches of rows, checked as PyTorch checks them."""
        expect_tensor(self, input)
        if input.ndim not in (1, 2):
            raise ValueError(f"{label}: Expected input to be 1D or 2D, got {input.ndim}D instead")
        batched = input.ndim == 2
        if not batched:
            input = input.unsqueeze(0)
        if states[0] is None:
            zeros = creation.zeros(
                input.shape[0], self.hidden_size, dtype=input.dtype, device=input.device
            )
            states = (zeros,) * len(states)
        elif not batched:
            states = tuple(s.unsqueeze(0) for s in states)
        if input.shape[1] != self.input_size:
            raise RuntimeError(
                f"input has inconsistent input_size: got {input.shape[1]} expected "
                f"{self.input_size}"
            )
        for index, state in enumerate(states):
            if input.shape[0] != state.shape[0]:
                raise RuntimeError(
                    f"Input batch size {input.shape[0]} doesn't match hidden{index} batch size "
                    f"{state.shape[0]}"
                )
            if state.shape[1] != self.hidden_size:
                raise RuntimeError(
                    f"hidden{index} has inconsistent hidden_size: got {state.shape[1]}, expected "
                    f"{self.hidden_size}"
                )
        if input.dtype != self.weight_ih.dtype:
            raise RuntimeError(
                "mat1 and mat2 must have the same dtype, but got "
                f"{torch_type_name(input.dtype)} and {torch_type_name(self.weight_ih.dtype)}"
            )
        return input, states, batched

    def _step(self, mode: str, input: Tensor, h: Tensor, c: Tensor | None) -> tuple:
        return recurrent_layer(
            mode,
            input,
            (input.shape[0],),
            h,
            c,
            self.weight_ih,
            self.weight_hh,
            self.bias_ih,
            self.bias_hh,
        )


class RNNCell(RNNCellBase):
    """h' = tanh(x W_ihᵀ + b_ih + h W_hhᵀ + b_hh) (or relu)."""

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        bias: bool = True,
        nonlinearity: str = "tanh",
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__(input_size, hidden_size, bias, num_chunks=1, device=device, dtype=dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        """The next hidden state."""
        if hx is not None and hx.ndim not in (1, 2):
            raise ValueError(f"RNNCell: Expected hidden to be 1D or 2D, got {hx.ndim}D instead")
        if self.nonlinearity not in ("tanh", "relu"):
            raise RuntimeError(f"Unknown nonlinearity: {self.nonlinearity}")
        input, (h,), batched = self._prepare(input, (hx,), "RNNCell")
        mode = "RNN_TANH" if self.nonlinearity == "tanh" else "RNN_RELU"
        out = self._step(mode, input, h, None)[0]
        return out if batched else out.squeeze(0)


class LSTMCell(RNNCellBase):
    """One LSTM step: (h', c') from x and (h, c)."""

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        bias: bool = True,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__(input_size, hidden_size, bias, num_chunks=4, device=device, dtype=dtype)

    def forward(
        self, input: Tensor, hx: tuple[Tensor, Tensor] | None = None
    ) -> tuple[Tensor, Tensor]:
        """The next (hidden, cell) states."""
        if hx is not None:
            for index, value in enumerate(hx):
                if value.ndim not in (1, 2):
                    raise ValueError(
                        f"LSTMCell: Expected hx[{index}] to be 1D or 2D, got {value.ndim}D instead"
                    )
        states = (None, None) if hx is None else tuple(hx)
        input, (h, c), batched = self._prepare(input, states, "LSTMCell")
        _, h_new, c_new = self._step("LSTM", input, h, c)
        if not batched:
            return h_new.squeeze(0), c_new.squeeze(0)
        return h_new, c_new


class GRUCell(RNNCellBase):
    """One GRU step: h' from x and h."""

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        bias: bool = True,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__(input_size, hidden_size, bias, num_chunks=3, device=device, dtype=dtype)

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        """The next hidden state."""
        if hx is not None and hx.ndim not in (1, 2):
            raise ValueError(f"GRUCell: Expected hidden to be 1D or 2D, got {hx.ndim}D instead")
        input, (h,), batched = self._prepare(input, (hx,), "GRUCell")
        out = self._step("GRU", input, h, None)[0]
        return out if batched else out.squeeze(0)
