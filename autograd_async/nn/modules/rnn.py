"""`RNN`, `LSTM` and `GRU`: multi-layer, optionally bidirectional recurrent layers.

Parameters carry PyTorch's names, shapes and initialisation, so a PyTorch state dict loads. Each
direction of each layer runs as one graph node over the whole sequence (`ops.rnn`), on padded
input or on a `PackedSequence`.
"""

from __future__ import annotations

import math
import numbers
import warnings
from typing import Any, overload

from ... import creation
from ...core.tensor import Tensor
from ...ops.recurrent_layers import run_layers
from ...ops.rnn import GATES
from .. import init
from ..parameter import Parameter
from ..utils.rnn import PackedSequence
from .input_checks import expect_tensor
from .module import Module


def _check_type(name: str, value: Any, kind: type) -> None:
    if not isinstance(value, kind):
        raise TypeError(f"{name} should be of type {kind.__name__}, got: {type(value).__name__}")


@overload
def _permute(hx: Tensor, permutation: Tensor | None) -> Tensor: ...
@overload
def _permute(hx: None, permutation: Tensor | None) -> None: ...
def _permute(hx: Tensor | None, permutation: Tensor | None) -> Tensor | None:
    if hx is None or permutation is None:
        return hx
    return hx.index_select(1, permutation.to(hx.device))


class RNNBase(Module):
    """The machinery shared by RNN, LSTM and GRU (`mode`: RNN_TANH, RNN_RELU, LSTM, GRU)."""

    def __init__(
        self,
        mode: str,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        bias: bool = True,
        batch_first: bool = False,
        dropout: float = 0.0,
        bidirectional: bool = False,
        proj_size: int = 0,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        if (
            not isinstance(dropout, numbers.Number)
            or isinstance(dropout, bool)
            or not 0 <= dropout <= 1
        ):
            raise ValueError(
                "dropout should be a number in range [0, 1] representing the probability of an "
                "element being zeroed"
            )
        if dropout > 0 and num_layers == 1:
            warnings.warn(
                "dropout option adds dropout after all but last recurrent layer, so non-zero "
                f"dropout expects num_layers greater than 1, but got dropout={dropout} and "
                f"num_layers={num_layers}",
                stacklevel=3,
            )
        _check_type("bias", bias, bool)
        _check_type("batch_first", batch_first, bool)
        _check_type("input_size", input_size, int)
        if input_size <= 0:
            raise ValueError("input_size must be greater than zero")
        _check_type("hidden_size", hidden_size, int)
        if hidden_size <= 0:
            raise ValueError("hidden_size must be greater than zero")
        if num_layers <= 0:
            raise ValueError("num_layers must be greater than zero")
        if proj_size < 0:
            raise ValueError(
                "proj_size should be a positive integer or zero to disable projections"
            )
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        if mode not in GATES:
            raise ValueError("Unrecognized RNN mode: " + mode)
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        directions = 2 if bidirectional else 1
        gate_size = GATES[mode] * hidden_size
        real_hidden = proj_size if proj_size > 0 else hidden_size
        self._flat_weights_names: list[str] = []
        self._all_weights: list[list[str]] = []

        def new(*shape: int) -> Parameter:
            return Parameter(creation.empty(*shape, dtype=dtype, device=device))

        for layer in range(num_layers):
            layer_input = input_size if layer == 0 else real_hidden * directions
            for direction in range(directions):
                suffix = "_reverse" if direction == 1 else ""
                params = {
                    f"weight_ih_l{layer}{suffix}": new(gate_size, layer_input),
                    f"weight_hh_l{layer}{suffix}": new(gate_size, real_hidden),
                }
                if bias:
                    params[f"bias_ih_l{layer}{suffix}"] = new(gate_size)
                    params[f"bias_hh_l{layer}{suffix}"] = new(gate_size)
                if proj_size > 0:
                    params[f"weight_hr_l{layer}{suffix}"] = new(proj_size, hidden_size)
                for name, param in params.items():
                    setattr(self, name, param)
                self._flat_weights_names.extend(params)
                self._all_weights.append(list(params))
        self.reset_parameters()

    @property
    def _flat_weights(self) -> list[Tensor | None]:
        return [getattr(self, name, None) for name in self._flat_weights_names]

    @property
    def all_weights(self) -> list[list[Parameter]]:
        """The parameters of each layer and direction, in PyTorch's order."""
        return [[getattr(self, name) for name in names] for names in self._all_weights]

    def flatten_parameters(self) -> None:
        """A no-op: the weights are always used where they are (PyTorch packs them for cuDNN)."""

    def reset_parameters(self) -> None:
        """Every weight and bias from U(-1/sqrt(hidden_size), 1/sqrt(hidden_size))."""
        bound = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -bound, bound)

    # ------------------------------------------------------------------ checks
    def check_input(self, input: Tensor, batch_sizes: Any) -> None:
        """PyTorch's errors for an input of the wrong dtype, rank or feature size."""
        weight = self.all_weights[0][0]
        if input.dtype != weight.dtype:
            raise ValueError(
                f"RNN input dtype ({input.dtype!r}) does not match weight dtype "
                f"({weight.dtype!r}). Convert input: input.to({weight.dtype!r}), or convert "
                f"model: model.to({input.dtype!r})"
            )
        expected = 2 if batch_sizes is not None else 3
        if input.ndim != expected:
            raise RuntimeError(f"input must have {expected} dimensions, got {input.ndim}")
        if self.input_size != input.shape[-1]:
            raise RuntimeError(
                "input.size(-1) must be equal to input_size. Expected "
                f"{self.input_size}, got {input.shape[-1]}"
            )

    def _state_shape(self, batch: int, size: int) -> tuple[int, int, int]:
        return (self.num_layers * (2 if self.bidirectional else 1), batch, size)

    @staticmethod
    def _check_state(hx: Tensor, expected: tuple, message: str) -> None:
        if tuple(hx.shape) != expected:
            raise RuntimeError(message.format(expected, list(hx.shape)))

    def extra_repr(self) -> str:
        """Sizes and the options that differ from their defaults."""
        text = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size != 0:
            text += f", proj_size={self.proj_size}"
        if self.num_layers != 1:
            text += f", num_layers={self.num_layers}"
        if self.bias is not True:
            text += f", bias={self.bias}"
        if self.batch_first is not False:
            text += f", batch_first={self.batch_first}"
        if self.dropout != 0:
            text += f", dropout={self.dropout}"
        if self.bidirectional is not False:
            text += f", bidirectional={self.bidirectional}"
        return text

    # ----------------------------------------------------------------- forward
    def _run(self, input: Any, hx: Tensor, cx: Tensor | None) -> tuple:
        """The layers over packed rows or a padded batch; returns (output, h_n, c_n)."""
        packed = isinstance(input, PackedSequence)
        if packed:
            data, batch_sizes = input.data, tuple(int(b) for b in input.batch_sizes.tolist())
            rows = data
        else:
            seq = input.transpose(0, 1) if self.batch_first else input
            steps, batch = seq.shape[0], seq.shape[1]
            batch_sizes = (batch,) * steps
            rows = seq.reshape(steps * batch, seq.shape[2])
        directions = 2 if self.bidirectional else 1
        real_hidden = self.proj_size if self.proj_size > 0 else self.hidden_size
        params = [w for layer in self.all_weights for w in layer]
        rows, h_n, c_n = run_layers(
            self.mode,
            rows,
            batch_sizes,
            hx,
            cx,
            params,
            self.bias,
            self.num_layers,
            self.dropout,
            self.training,
            self.bidirectional,
        )
        if packed:
            return rows, h_n, c_n
        output = rows.reshape(steps, batch, directions * real_hidden)
        if self.batch_first:
            output = output.transpose(0, 1)
        return output, h_n, c_n

    def _zeros(self, like: Tensor, batch: int, size: int) -> Tensor:
        return creation.zeros(*self._state_shape(batch, size), dtype=like.dtype, device=like.device)


class _SingleState(RNNBase):
    """RNN and GRU: one state tensor h."""

    _label = "RNN"

    def forward(self, input: Any, hx: Tensor | None = None) -> tuple[Any, Tensor]:
        """(output, h_n) for padded or packed input; h_n of the real lengths."""
        packed = isinstance(input, PackedSequence)
        if packed:
            data = input.data
            batch = int(input.batch_sizes[0])
            hx = _permute(hx, input.sorted_indices)
            batched = True
        else:
            expect_tensor(self, input)
            if input.ndim not in (2, 3):
                tail = "tensor instead" if self._label == "RNN" else "instead"
                raise ValueError(
                    f"{self._label}: Expected input to be 2D or 3D, got {input.ndim}D {tail}"
                )
            batched = input.ndim == 3
            batch_dim = 0 if self.batch_first else 1
            if not batched:
                input = input.unsqueeze(batch_dim)
                if hx is not None:
                    if hx.ndim != 2:
                        raise RuntimeError(
                            "For unbatched 2-D input, hx should also be 2-D but got "
                            f"{hx.ndim}-D tensor"
                        )
                    hx = hx.unsqueeze(1)
            elif hx is not None and hx.ndim != 3:
                raise RuntimeError(
                    f"For batched 3-D input, hx should also be 3-D but got {hx.ndim}-D tensor"
                )
            data = input
            batch = input.shape[0] if self.batch_first else input.shape[1]
        if hx is None:
            hx = self._zeros(data, batch, self.hidden_size)
        self.check_input(data, () if packed else None)
        self._check_state(
            hx, self._state_shape(batch, self.hidden_size), "Expected hidden size {}, got {}"
        )
        output, h_n, _ = self._run(input, hx, None)
        if packed:
            out = PackedSequence(
                output, input.batch_sizes, input.sorted_indices, input.unsorted_indices
            )
            return out, _permute(h_n, input.unsorted_indices)
        if not batched:
            output = output.squeeze(0 if self.batch_first else 1)
            h_n = h_n.squeeze(1)
        return output, h_n


class RNN(_SingleState):
    """Elman RNN: h_t = tanh(x_t W_ihᵀ + b_ih + h_(t-1) W_hhᵀ + b_hh) (or relu)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        if len(args) > 3:
            self.nonlinearity = args[3]
            args = args[:3] + args[4:]
        else:
            self.nonlinearity = kwargs.pop("nonlinearity", "tanh")
        if self.nonlinearity == "tanh":
            mode = "RNN_TANH"
        elif self.nonlinearity == "relu":
            mode = "RNN_RELU"
        else:
            raise ValueError(
                f"Unknown nonlinearity '{self.nonlinearity}'. Select from 'tanh' or 'relu'."
            )
        super().__init__(mode, *args, **kwargs)


class GRU(_SingleState):
    """Gated recurrent unit layers (reset, update and new gates, PyTorch's equations)."""

    _label = "GRU"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        super().__init__("GRU", *args, **kwargs)


class LSTM(RNNBase):
    """Long short-term memory layers, with an optional projection of h (`proj_size`)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__("LSTM", *args, **kwargs)

    def forward(
        self, input: Any, hx: tuple[Tensor, Tensor] | None = None
    ) -> tuple[Any, tuple[Tensor, Tensor]]:
        """(output, (h_n, c_n)) for padded or packed input; states of the real lengths."""
        real_hidden = self.proj_size if self.proj_size > 0 else self.hidden_size
        packed = isinstance(input, PackedSequence)
        if packed:
            data = input.data
            batch = int(input.batch_sizes[0])
            batched = True
            if hx is not None:
                hx = (_permute(hx[0], input.sorted_indices), _permute(hx[1], input.sorted_indices))
        else:
            expect_tensor(self, input)
            if input.ndim not in (2, 3):
                raise ValueError(f"LSTM: Expected input to be 2D or 3D, got {input.ndim}D instead")
            batched = input.ndim == 3
            if not batched:
                input = input.unsqueeze(0 if self.batch_first else 1)
            data = input
            batch = input.shape[0] if self.batch_first else input.shape[1]
            if hx is not None:
                rank = 3 if batched else 2
                if hx[0].ndim != rank or hx[1].ndim != rank:
                    shape = "batched 3-D" if batched else "unbatched 2-D"
                    raise RuntimeError(
                        f"For {shape} input, hx and cx should also be {rank}-D but got "
                        f"({hx[0].ndim}-D, {hx[1].ndim}-D) tensors"
                    )
                if not batched:
                    hx = (hx[0].unsqueeze(1), hx[1].unsqueeze(1))
        if hx is None:
            hx = (self._zeros(data, batch, real_hidden), self._zeros(data, batch, self.hidden_size))
        self.check_input(data, () if packed else None)
        self._check_state(
            hx[0], self._state_shape(batch, real_hidden), "Expected hidden[0] size {}, got {}"
        )
        self._check_state(
            hx[1], self._state_shape(batch, self.hidden_size), "Expected hidden[1] size {}, got {}"
        )
        output, h_n, c_n = self._run(input, hx[0], hx[1])
        if packed:
            out = PackedSequence(
                output, input.batch_sizes, input.sorted_indices, input.unsorted_indices
            )
            unsorted = input.unsorted_indices
            return out, (_permute(h_n, unsorted), _permute(c_n, unsorted))
        if not batched:
            output = output.squeeze(0 if self.batch_first else 1)
            h_n, c_n = h_n.squeeze(1), c_n.squeeze(1)
        return output, (h_n, c_n)
