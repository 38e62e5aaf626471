"""The time loops of the recurrent-layer node on arrays: the path every plain forward and
backward takes.

The rules are those of `ops.rnn` (which runs them on Tensors for `create_graph=True`), written
here to work in place: each step's gates are computed inside the rows of the precomputed input
projection, states are updated in preallocated buffers, and what backward multiplies each step by
(sigmoid and tanh derivatives and their products) is computed for all steps at once before the
loop, so a step costs a matrix product and a few elementwise passes without new arrays.
"""

from __future__ import annotations

from typing import Any

from .dual import xp_of


def _sigmoid_(v: Any, xp: Any) -> None:
    """v <- 1 / (1 + exp(-v)), in place (exp may overflow to inf: the result is then 0)."""
    xp.negative(v, out=v)
    xp.exp(v, out=v)
    v += 1
    xp.reciprocal(v, out=v)


def _tanh_(v: Any, xp: Any) -> None:
    """v <- tanh(v) = 2 / (1 + exp(-2 v)) - 1, in place.

    NumPy's exp is vectorised where its tanh is not (float32 tanh costs three times as much), and
    the time loop spends most of its time in these two functions.
    """
    v *= -2
    xp.exp(v, out=v)
    v += 1
    xp.divide(2, v, out=v)
    v -= 1


def forward_arrays(
    mode: str,
    steps: list[tuple[int, int]],
    reverse: bool,
    x: Any,
    h0: Any,
    c0: Any,
    w_ih: Any,
    w_hh: Any,
    b_ih: Any,
    b_hh: Any,
    w_hr: Any,
) -> tuple[Any, Any, Any, tuple]:
    """Outputs (N, H_out), final h and c, and the activations (see `ops.rnn.Activations`)."""
    xp = xp_of(x)
    lstm, gru = mode == "LSTM", mode == "GRU"
    hidden = w_hh.shape[0] // 4 if lstm else w_hh.shape[1]
    rows_total = x.shape[0]
    gates = x @ w_ih.T  # becomes the activations, step by step
    if b_ih is not None:
        gates += b_ih
    if b_hh is not None and not gru:
        gates += b_hh
    h, c = h0.copy(), (c0.copy() if lstm else None)
    out = xp.empty((rows_total, h0.shape[1]), dtype=x.dtype)
    before = xp.empty_like(out)
    cell_before = xp.empty((rows_total, hidden), dtype=x.dtype) if lstm else None
    extra = xp.empty((rows_total, hidden), dtype=x.dtype) if lstm or gru else None
    w_hh_t = w_hh.T
    for t in reversed(range(len(steps))) if reverse else range(len(steps)):
        start, size = steps[t]
        rows = slice(start, start + size)
        h_prev = h[:size]
        before[rows] = h_prev
        pre = gates[rows]
        recurrent = h_prev @ w_hh_t
        if lstm:
            assert c is not None and cell_before is not None and extra is not None  # LSTM state
            pre += recurrent
            c_prev = c[:size]
            cell_before[rows] = c_prev
            g = pre[:, 2 * hidden : 3 * hidden]
            g *= 2  # tanh(g) = 2 sigmoid(2 g) - 1: one pass of exp over all four gates
            _sigmoid_(pre, xp)
            g *= 2
            g -= 1
            c_prev *= pre[:, hidden : 2 * hidden]  # c <- f * c + i * g, in the state buffer
            c_prev += pre[:, :hidden] * g
            tanh_c = extra[rows]
            tanh_c[...] = c_prev
            _tanh_(tanh_c, xp)
            if w_hr is None:
                xp.multiply(pre[:, 3 * hidden :], tanh_c, out=out[rows])
            else:
                out[rows] = (pre[:, 3 * hidden :] * tanh_c) @ w_hr.T
        elif gru:
            assert extra is not None  # allocated for GRU above
            if b_hh is not None:
                recurrent += b_hh
            r_z = pre[:, : 2 * hidden]
            r_z += recurrent[:, : 2 * hidden]
            _sigmoid_(r_z, xp)
            extra[rows] = recurrent[:, 2 * hidden :]
            n = pre[:, 2 * hidden :]
            n += r_z[:, :hidden] * recurrent[:, 2 * hidden :]
            _tanh_(n, xp)
            h_new = out[rows]
            xp.subtract(h_prev, n, out=h_new)  # h' = n + z * (h - n)
            h_new *= r_z[:, hidden:]
            h_new += n
        else:
            pre += recurrent
            if mode == "RNN_TANH":
                _tanh_(pre, xp)
            else:
                xp.maximum(pre, 0, out=pre)
            out[rows] = pre
        h[:size] = out[rows]
    return out, h, c, (gates, before, cell_before, extra)


def backward_arrays(
    mode: str,
    steps: list[tuple[int, int]],
    reverse: bool,
    acts: Any,
    need: tuple,
    x: Any,
    w_ih: Any,
    w_hh: Any,
    w_hr: Any,
    g_out: Any,
    g_h: Any,
    g_c: Any,
) -> tuple:
    """Gradients of (x, h0, c0, w_ih, w_hh, b_ih, b_hh, w_hr) through time."""
    xp = xp_of(x)
    lstm, gru = mode == "LSTM", mode == "GRU"
    hidden = w_hh.shape[0] // 4 if lstm else w_hh.shape[1]
    gates, before, cell_before, extra = acts
    dh = g_h.astype(x.dtype, copy=True)
    dc = g_c.astype(x.dtype, copy=True) if lstm else None
    d_pre = xp.empty_like(gates)
    d_rec = xp.empty_like(gates) if gru else d_pre
    d_out = xp.empty((x.shape[0], w_hr.shape[0]), dtype=x.dtype) if w_hr is not None else None
    # Per-row factors of the chain rule, for every step at once.
    if lstm:
        i, f = gates[:, :hidden], gates[:, hidden : 2 * hidden]
        g, o = gates[:, 2 * hidden : 3 * hidden], gates[:, 3 * hidden :]
        tanh_c = extra
        to_cell = o * (1 - tanh_c * tanh_c)
        factors = xp.empty_like(gates)  # d pre = factors * (dc, dc, dc, dh)
        xp.multiply(g * i, 1 - i, out=factors[:, :hidden])
        xp.multiply(cell_before * f, 1 - f, out=factors[:, hidden : 2 * hidden])
        xp.multiply(i, 1 - g * g, out=factors[:, 2 * hidden : 3 * hidden])
        xp.multiply(tanh_c * o, 1 - o, out=factors[:, 3 * hidden :])
    elif gru:
        r, z, n = gates[:, :hidden], gates[:, hidden : 2 * hidden], gates[:, 2 * hidden :]
        to_n = (1 - z) * (1 - n * n)
        to_r = extra * r * (1 - r)
        to_z = (before - n) * z * (1 - z)
    elif mode == "RNN_TANH":
        slope = 1 - gates * gates
    else:
        slope = (gates > 0).astype(x.dtype)
    for t in range(len(steps)) if reverse else reversed(range(len(steps))):
        start, size = steps[t]
        rows = slice(start, start + size)
        dh_t = dh[:size]  # the state's rows, updated in place
        dh_t += g_out[rows]
        step = d_pre[rows]
        if lstm:
            assert dc is not None  # allocated for LSTM above
            if w_hr is not None:
                assert d_out is not None  # allocated when there is a projection
                d_out[rows] = dh_t
                dh_t = dh_t @ w_hr
            dc_t = dc[:size]
            dc_t += dh_t * to_cell[rows]
            fac = factors[rows]
            three = (size, 3, hidden)  # i, f and g all take dc: one broadcast product
            xp.multiply(
                fac[:, : 3 * hidden].reshape(three),
                dc_t[:, None, :],
                out=step[:, : 3 * hidden].reshape(three),
            )
            xp.multiply(fac[:, 3 * hidden :], dh_t, out=step[:, 3 * hidden :])
            dc_t *= f[rows]
            xp.matmul(step, w_hh, out=dh[:size])
        elif gru:
            rec = d_rec[rows]
            d_n = step[:, 2 * hidden :]
            xp.multiply(dh_t, to_n[rows], out=d_n)
            xp.multiply(d_n, to_r[rows], out=step[:, :hidden])
            xp.multiply(dh_t, to_z[rows], out=step[:, hidden : 2 * hidden])
            rec[:, : 2 * hidden] = step[:, : 2 * hidden]
            xp.multiply(d_n, r[rows], out=rec[:, 2 * hidden :])
            dh_t *= z[rows]
            dh_t += rec @ w_hh
        else:
            xp.multiply(dh_t, slope[rows], out=step)
            xp.matmul(step, w_hh, out=dh[:size])
    g_x = d_pre @ w_ih if need[0] else None
    g_w_ih = d_pre.T @ x if need[3] else None
    g_w_hh = d_rec.T @ before if need[4] else None
    g_b_ih = d_pre.sum(axis=0) if need[5] else None
    g_b_hh = d_rec.sum(axis=0) if need[6] else None
    # need[7] only when there is a projection (w_hr), hence d_out
    g_w_hr = d_out.T @ (gates[:, 3 * hidden :] * extra) if need[7] and d_out is not None else None
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
