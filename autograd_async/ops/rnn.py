"""Recurrent layers: one direction of one layer over a whole sequence is one graph node.

The input arrives as packed rows: (N, input_size), the rows of time step t being the first
`batch_sizes[t]` sequences of the batch (a padded (T, B, I) input is the case where every batch
size is B). Forward projects every step's input with one matrix product, then loops over time on
arrays, keeping the gate activations; backward loops back over time (BPTT) for the gradients of
the pre-activations and turns them into the weights' and the input's gradients with a few large
products at the end. A sequence that ends early keeps its last state in the rows past the step's
batch size, so the final states are those of the real lengths.

The node's own forward and backward run the in-place loops of `ops.rnn_arrays`. The rules here,
`run_layer` and `backprop_layer`, are the same math written plainly on values that may be arrays
or Tensors: with `create_graph=True` backward recomputes the activations from the saved inputs
with differentiable ops and runs them on Tensors, so higher derivatives still work (a test checks
that both forms agree on arrays).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from ..core.op import Op
from ..core.tensor import Tensor
from . import dual
from .dual import xp_of
from .elementwise import SigmoidBackward0, sigmoid_array
from .rnn_arrays import backward_arrays, forward_arrays

MODES = ("RNN_TANH", "RNN_RELU", "LSTM", "GRU")
GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}


class Activations(NamedTuple):
    """What backward reads, as packed rows (N, ...) in time order."""

    gates: Any  # LSTM: i, f, g, o; GRU: r, z, n; RNN: the outputs h
    hidden_before: Any  # the hidden state each step started from (N, hidden or proj size)
    cell_before: Any  # LSTM: the cell state each step started from; else None
    tanh_cell: Any  # LSTM: tanh of the new cell state; GRU: W_hn h + b_hn; else None


def _sigmoid(x: Any) -> Any:
    return SigmoidBackward0.apply(x) if isinstance(x, Tensor) else sigmoid_array(x)


def _relu(x: Any) -> Any:
    return x.relu() if isinstance(x, Tensor) else xp_of(x).maximum(x, 0)


def _join(parts: list, axis: int) -> Any:
    return parts[0] if len(parts) == 1 else dual.concat(parts, axis)


def _lstm_gates(a: Any, size: int) -> Any:
    """sigmoid of the i, f, o blocks and tanh of the g block of (b, 4 * size) pre-activations."""
    if isinstance(a, Tensor):
        i_f = _sigmoid(a[:, : 2 * size])
        g = a[:, 2 * size : 3 * size].tanh()
        return dual.concat([i_f, g, _sigmoid(a[:, 3 * size :])], 1)
    out = sigmoid_array(a)
    xp_of(a).tanh(a[:, 2 * size : 3 * size], out=out[:, 2 * size : 3 * size])
    return out


def _with_rest(new: Any, state: Any, size: int) -> Any:
    """The state after a step that updated its first `size` rows; the others keep theirs."""
    if new.shape[0] == state.shape[0]:
        return new
    if isinstance(new, Tensor):
        return dual.concat([new, state[size:]], 0)
    out = state.copy()
    out[:size] = new
    return out


def step_spans(batch_sizes: tuple[int, ...]) -> list[tuple[int, int]]:
    """(first row, batch size) of each time step's rows in the packed data."""
    spans = []
    start = 0
    for size in batch_sizes:
        spans.append((start, size))
        start += size
    return spans


def run_layer(
    mode: str,
    batch_sizes: tuple[int, ...],
    reverse: bool,
    x: Any,
    h0: Any,
    c0: Any,
    w_ih: Any,
    w_hh: Any,
    b_ih: Any,
    b_hh: Any,
    w_hr: Any,
) -> tuple[Any, Any, Any, Activations]:
    """Outputs (N, H_out), final h (and c) and the activations, on arrays or Tensors."""
    hidden = w_hh.shape[1] if mode != "LSTM" else w_hh.shape[0] // 4
    projected = x @ w_ih.T
    if b_ih is not None:
        projected = projected + b_ih
    if b_hh is not None and mode != "GRU":
        projected = projected + b_hh  # GRU's n gate multiplies b_hn by r: kept per step
    steps = step_spans(batch_sizes)
    count = len(steps)
    outs, gates, before, cells, extra = ([None] * count for _ in range(5))
    h, c = h0, c0
    for t in reversed(range(count)) if reverse else range(count):
        start, size = steps[t]
        h_prev = h if size == h.shape[0] else h[:size]
        a = projected[start : start + size]
        recurrent = h_prev @ w_hh.T
        if mode == "LSTM":
            c_prev = c if size == c.shape[0] else c[:size]
            act = _lstm_gates(a + recurrent, hidden)
            i, f = act[:, :hidden], act[:, hidden : 2 * hidden]
            g, o = act[:, 2 * hidden : 3 * hidden], act[:, 3 * hidden :]
            c_new = f * c_prev + i * g
            tanh_c = dual.tanh(c_new)
            h_new = o * tanh_c
            if w_hr is not None:
                h_new = h_new @ w_hr.T
            cells[t], extra[t] = c_prev, tanh_c
            c = _with_rest(c_new, c, size)
        elif mode == "GRU":
            if b_hh is not None:
                recurrent = recurrent + b_hh
            r_z = _sigmoid(a[:, : 2 * hidden] + recurrent[:, : 2 * hidden])
            r, z = r_z[:, :hidden], r_z[:, hidden:]
            h_n = recurrent[:, 2 * hidden :]
            n = dual.tanh(a[:, 2 * hidden :] + r * h_n)
            h_new = n + z * (h_prev - n)
            act = dual.concat([r_z, n], 1)
            extra[t] = h_n
        else:
            pre = a + recurrent
            h_new = dual.tanh(pre) if mode == "RNN_TANH" else _relu(pre)
            act = h_new
        outs[t], gates[t], before[t] = h_new, act, h_prev
        h = _with_rest(h_new, h, size)
    acts = Activations(
        _join(gates, 0),
        _join(before, 0),
        _join(cells, 0) if mode == "LSTM" else None,
        _join(extra, 0) if mode in ("LSTM", "GRU") else None,
    )
    return _join(outs, 0), h, c, acts


def backprop_layer(
    mode: str,
    batch_sizes: tuple[int, ...],
    reverse: bool,
    acts: Activations,
    need: tuple,
    x: Any,
    w_ih: Any,
    w_hh: Any,
    w_hr: Any,
    g_out: Any,
    g_h: Any,
    g_c: Any,
) -> tuple:
    """Gradients of (x, h0, c0, w_ih, w_hh, b_ih, b_hh, w_hr) through time (None: not needed)."""
    hidden = w_hh.shape[1] if mode != "LSTM" else w_hh.shape[0] // 4
    steps = step_spans(batch_sizes)
    count = len(steps)
    d_in, d_rec, d_out = ([None] * count for _ in range(3))
    dh, dc = g_h, g_c
    for t in range(count) if reverse else reversed(range(count)):
        start, size = steps[t]
        rows = slice(start, start + size)
        dh_t = g_out[rows] + (dh if size == dh.shape[0] else dh[:size])
        act = acts.gates[rows]
        if mode == "LSTM":
            i, f = act[:, :hidden], act[:, hidden : 2 * hidden]
            g, o = act[:, 2 * hidden : 3 * hidden], act[:, 3 * hidden :]
            tanh_c, c_prev = acts.tanh_cell[rows], acts.cell_before[rows]
            if w_hr is not None:
                d_out[t] = dh_t
                dh_t = dh_t @ w_hr
            dc_t = (dc if size == dc.shape[0] else dc[:size]) + dh_t * o * (1 - tanh_c * tanh_c)
            d_pre = dual.concat(
                [
                    dc_t * g * i * (1 - i),
                    dc_t * c_prev * f * (1 - f),
                    dc_t * i * (1 - g * g),
                    dh_t * tanh_c * o * (1 - o),
                ],
                1,
            )
            dc = _with_rest(dc_t * f, dc, size)
            dh_prev = d_pre @ w_hh
        elif mode == "GRU":
            r, z, n = act[:, :hidden], act[:, hidden : 2 * hidden], act[:, 2 * hidden :]
            h_prev, h_n = acts.hidden_before[rows], acts.tanh_cell[rows]
            d_n = dh_t * (1 - z) * (1 - n * n)
            d_r = d_n * h_n * r * (1 - r)
            d_z = dh_t * (h_prev - n) * z * (1 - z)
            d_pre = dual.concat([d_r, d_z, d_n], 1)
            d_rec[t] = dual.concat([d_r, d_z, d_n * r], 1)
            dh_prev = dh_t * z + d_rec[t] @ w_hh
        else:
            if mode == "RNN_TANH":
                d_pre = dh_t * (1 - act * act)
            else:
                d_pre = dual.mul_const(dh_t, dual.data_of(act) > 0)
            dh_prev = d_pre @ w_hh
        d_in[t] = d_pre
        dh = _with_rest(dh_prev, dh, size)
    d_pre_in = _join(d_in, 0)
    d_pre_rec = _join(d_rec, 0) if mode == "GRU" else d_pre_in
    g_x = d_pre_in @ w_ih if need[0] else None
    g_w_ih = d_pre_in.T @ x if need[3] else None
    g_w_hh = d_pre_rec.T @ acts.hidden_before if need[4] else None
    g_b_ih = dual.sum_dims(d_pre_in, 0) if need[5] else None
    g_b_hh = dual.sum_dims(d_pre_rec, 0) if need[6] else None
    g_w_hr = None
    if need[7]:
        outputs = acts.gates[:, 3 * hidden :] * acts.tanh_cell
        g_w_hr = _join(d_out, 0).T @ outputs
    return (
        g_x,
        dh if need[1] else None,
        dc if need[2] else None,
        g_w_ih,
        g_w_hh,
        g_b_ih,
        g_b_hh,
        g_w_hr,
    )


class RecurrentLayerBackward0(Op):
    """One direction of one recurrent layer over packed rows.

    Inputs: x (N, I), h0 (B, H_out), c0 (B, H) or None, w_ih, w_hh, b_ih, b_hh (or None),
    w_hr (or None). Outputs: (N, H_out) and the final h, plus the final c for LSTM.
    """

    __slots__ = ("_mode", "_batch_sizes", "_reverse", "_acts")
    op_name = "recurrent_layer"
    saved_inputs = (0, 1, 2, 3, 4, 5, 6, 7)
    saved_slots = ("_acts",)

    def forward(
        self,
        x: Any,
        h0: Any,
        c0: Any,
        w_ih: Any,
        w_hh: Any,
        b_ih: Any,
        b_hh: Any,
        w_hr: Any,
        *,
        mode: str,
        batch_sizes: tuple[int, ...],
        reverse: bool,
    ) -> tuple:
        self._mode, self._batch_sizes, self._reverse = mode, batch_sizes, reverse
        with np.errstate(over="ignore"):
            out, h, c, acts = forward_arrays(
                mode, step_spans(batch_sizes), reverse, x, h0, c0, w_ih, w_hh, b_ih, b_hh, w_hr
            )
        self._acts = Activations(*acts)
        if mode == "LSTM":
            return out, h, c
        return out, h

    def backward(self, g_out: Any, g_h: Any, g_c: Any = None) -> tuple:
        x, h0, c0, w_ih, w_hh, b_ih, b_hh, w_hr = self.saved(g_out)
        mode, batch_sizes, reverse = self._mode, self._batch_sizes, self._reverse
        if isinstance(g_out, Tensor):  # create_graph: the activations as functions of inputs
            acts = run_layer(mode, batch_sizes, reverse, x, h0, c0, w_ih, w_hh, b_ih, b_hh, w_hr)
            return backprop_layer(
                mode,
                batch_sizes,
                reverse,
                acts[3],
                self.needs_input_grad,
                x,
                w_ih,
                w_hh,
                w_hr,
                g_out,
                g_h,
                g_c,
            )
        self.check_released()
        return backward_arrays(
            mode,
            step_spans(batch_sizes),
            reverse,
            self._acts,
            self.needs_input_grad,
            x,
            w_ih,
            w_hh,
            w_hr,
            g_out,
            g_h,
            g_c,
        )


def recurrent_layer(
    mode: str,
    x: Tensor,
    batch_sizes: tuple[int, ...],
    h0: Tensor,
    c0: Tensor | None,
    w_ih: Tensor,
    w_hh: Tensor,
    b_ih: Tensor | None = None,
    b_hh: Tensor | None = None,
    w_hr: Tensor | None = None,
    reverse: bool = False,
) -> tuple[Tensor, ...]:
    """One direction of one layer over packed rows: (output, h_n) or (output, h_n, c_n)."""
    if mode not in MODES:
        raise ValueError(f"Unrecognized RNN mode: {mode}")
    return RecurrentLayerBackward0.apply(
        x,
        h0,
        c0,
        w_ih,
        w_hh,
        b_ih,
        b_hh,
        w_hr,
        mode=mode,
        batch_sizes=tuple(batch_sizes),
        reverse=reverse,
    )
