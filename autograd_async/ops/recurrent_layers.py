"""ATen's functional recurrent networks: lstm, gru, rnn_tanh, rnn_relu.

Each takes a flat list of weights, per layer and direction `w_ih, w_hh[, b_ih, b_hh][, w_hr]`
(the order `nn.LSTM.all_weights` flattens to), and has two forms, as ATen's:

- padded: `(input, hx, params, has_biases, num_layers, dropout, train, bidirectional,
  batch_first)`;
- packed: `(data, batch_sizes, hx, params, has_biases, num_layers, dropout, train,
  bidirectional)`, the rows of a PackedSequence.

`hx` is `(h0, c0)` for lstm and `h0` for the others. Every direction of every layer is one node
of `recurrent_layer`, the op the nn modules use.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..core.op import require_tensor
from ..core.tensor import Tensor
from .assembling import cat, stack
from .aten_thresholds import dropout as _dropout
from .rnn import recurrent_layer


def run_layers(
    mode: str,
    rows: Tensor,
    batch_sizes: tuple[int, ...],
    h0: Tensor,
    c0: Tensor | None,
    params: Sequence[Tensor],
    has_biases: bool,
    num_layers: int,
    dropout: float,
    train: bool,
    bidirectional: bool,
) -> tuple:
    """Every layer over packed rows: (rows out, h_n, c_n or None)."""
    directions = 2 if bidirectional else 1
    projected = c0 is not None and h0.shape[-1] != c0.shape[-1]
    stride = (4 if has_biases else 2) + (1 if projected else 0)
    if len(params) != stride * num_layers * directions:
        raise RuntimeError(
            f"{mode.lower()}: expected {stride * num_layers * directions} parameter tensors "
            f"({stride} per layer and direction), got {len(params)}"
        )
    h_states = h0.unbind(0)
    c_states = c0.unbind(0) if c0 is not None else None
    h_finals, c_finals = [], []
    for layer in range(num_layers):
        outs = []
        for direction in range(directions):
            index = layer * directions + direction
            w = params[index * stride : (index + 1) * stride]
            b_ih, b_hh = (w[2], w[3]) if has_biases else (None, None)
            result = recurrent_layer(
                mode,
                rows,
                batch_sizes,
                h_states[index],
                c_states[index] if c_states is not None else None,
                w[0],
                w[1],
                b_ih,
                b_hh,
                w[-1] if projected else None,
                reverse=direction == 1,
            )
            outs.append(result[0])
            h_finals.append(result[1])
            if c_states is not None:
                c_finals.append(result[2])
        rows = outs[0] if directions == 1 else cat(outs, 1)
        if dropout > 0 and train and layer < num_layers - 1:
            rows = _dropout(rows, dropout, True)
    return rows, stack(h_finals, 0), stack(c_finals, 0) if c_states is not None else None


def _padded(
    mode: str,
    input: Tensor,
    h0: Tensor,
    c0: Tensor | None,
    params: Sequence[Tensor],
    has_biases: bool,
    num_layers: int,
    dropout: float,
    train: bool,
    bidirectional: bool,
    batch_first: bool,
) -> tuple:
    seq = input.transpose(0, 1) if batch_first else input
    steps, batch = seq.shape[0], seq.shape[1]
    rows = seq.reshape(steps * batch, seq.shape[2])
    out, h_n, c_n = run_layers(
        mode,
        rows,
        (batch,) * steps,
        h0,
        c0,
        params,
        has_biases,
        num_layers,
        dropout,
        train,
        bidirectional,
    )
    out = out.reshape(steps, batch, out.shape[-1])
    return (out.transpose(0, 1) if batch_first else out), h_n, c_n


def _packed(
    mode: str,
    data: Tensor,
    batch_sizes: Tensor,
    h0: Tensor,
    c0: Tensor | None,
    params: Sequence[Tensor],
    has_biases: bool,
    num_layers: int,
    dropout: float,
    train: bool,
    bidirectional: bool,
) -> tuple:
    sizes = tuple(int(b) for b in batch_sizes.tolist())
    return run_layers(
        mode, data, sizes, h0, c0, params, has_biases, num_layers, dropout, train, bidirectional
    )


def lstm(input: Tensor, *args: Any) -> tuple[Tensor, Tensor, Tensor]:
    """(output, h_n, c_n): `lstm(input, (h0, c0), params, has_biases, num_layers, dropout,
    train, bidirectional, batch_first)` or `lstm(data, batch_sizes, (h0, c0), params, ...)`."""
    _require_arguments("lstm", input, args)
    if isinstance(args[0], Tensor):  # the packed form
        batch_sizes, (h0, c0), params, *rest = args
        out, h_n, c_n = _packed("LSTM", input, batch_sizes, h0, c0, params, *rest)
    else:
        (h0, c0), params, *rest = args
        out, h_n, c_n = _padded("LSTM", input, h0, c0, params, *rest)
    return out, h_n, c_n


def _require_arguments(name: str, input: Tensor, args: tuple) -> None:
    require_tensor(name, input)
    if len(args) not in (8, 9):  # packed: 8 after the data, padded: 8 after the input
        raise TypeError(
            f"{name}() received an invalid combination of arguments: expected "
            f"({name}(input, hx, params, has_biases, num_layers, dropout, train, bidirectional, "
            f"batch_first) or {name}(data, batch_sizes, hx, params, has_biases, num_layers, "
            f"dropout, train, bidirectional)), got {1 + len(args)} arguments"
        )


def _single_state(mode: str, input: Tensor, args: tuple) -> tuple[Tensor, Tensor]:
    _require_arguments(mode.lower(), input, args)
    if isinstance(args[1], Tensor):  # (data, batch_sizes, hx, params, ...): the packed form
        batch_sizes, h0, params, *rest = args
        out, h_n, _ = _packed(mode, input, batch_sizes, h0, None, params, *rest)
    else:
        h0, params, *rest = args
        out, h_n, _ = _padded(mode, input, h0, None, params, *rest)
    return out, h_n


def gru(input: Tensor, *args: Any) -> tuple[Tensor, Tensor]:
    """(output, h_n): `gru(input, hx, params, has_biases, num_layers, dropout, train,
    bidirectional, batch_first)` or `gru(data, batch_sizes, hx, params, ...)`."""
    return _single_state("GRU", input, args)


def rnn_tanh(input: Tensor, *args: Any) -> tuple[Tensor, Tensor]:
    """(output, h_n) of an Elman network with tanh; `gru`'s two forms."""
    return _single_state("RNN_TANH", input, args)


def rnn_relu(input: Tensor, *args: Any) -> tuple[Tensor, Tensor]:
    """(output, h_n) of an Elman network with relu; `gru`'s two forms."""
    return _single_state("RNN_RELU", input, args)


FUNCTIONS = {"lstm": lstm, "gru": gru, "rnn_tanh": rnn_tanh, "rnn_relu": rnn_relu}
NOT_METHODS = tuple(FUNCTIONS)
