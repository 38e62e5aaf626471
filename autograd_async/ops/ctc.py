"""Connectionist temporal classification loss (Graves et al., 2006): ctc_loss.

One node computes each sequence's negative log likelihood by the forward (alpha) recursion over
the targets extended with blanks, in log space, vectorised over the batch and the extended
targets with one step per time frame. Its backward runs the beta recursion and returns PyTorch's
gradient, exp(log_probs) - exp(log(alpha * beta) + nll - log_probs), which is the gradient with
respect to the logits when `log_probs` is their log_softmax (the usual case, and the only one
where the two agree); frames past a sequence's input length get zero.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..core.op import Op, require_kernel_dtype, require_tensor
from ..core.tensor import Tensor
from .dual import xp_of
from .losses import check_reduction

_NEG_INF = -np.inf


def _shift(a: Any, by: int, xp: Any) -> Any:
    """`a` (N, L) moved right by `by` positions along L, -inf shifted in."""
    out = xp.full(a.shape, _NEG_INF, dtype=a.dtype)
    out[:, by:] = a[:, : a.shape[1] - by]
    return out


class CtcLossBackward0(Op):
    """Per-sequence negative log likelihood (N,) of `targets` under `log_probs` (T, N, C)."""

    __slots__ = ("_alpha", "_emit", "_ext", "_lengths", "_lp", "_nll", "_skip", "_zero_inf")
    saved_slots = ("_alpha", "_emit", "_lp")
    op_name = "ctc_loss"

    def forward(
        self,
        log_probs: Any,
        *,
        ext: Any,
        skip: Any,
        valid: Any,
        input_lengths: Any,
        target_lengths: Any,
        zero_infinity: bool,
    ) -> Any:
        xp = xp_of(log_probs)
        steps, batch, _ = log_probs.shape
        samples = xp.arange(batch)
        emit = log_probs[:, samples[:, None], ext]  # (T, N, L): each extended label's log prob
        emit = xp.where(valid[None], emit, _NEG_INF)
        alpha = xp.full(emit.shape, _NEG_INF, dtype=log_probs.dtype)
        alpha[0, :, :2] = emit[0, :, :2]
        for t in range(1, steps):
            prev = alpha[t - 1]
            paths = xp.logaddexp(prev, _shift(prev, 1, xp))
            paths = xp.where(skip, xp.logaddexp(paths, _shift(prev, 2, xp)), paths)
            alpha[t] = paths + emit[t]
        last = alpha[input_lengths - 1, samples]  # (N, L) at each sequence's last frame
        end = 2 * target_lengths
        final = last[samples, end]
        before = last[samples, xp.maximum(end - 1, 0)]
        nll = -xp.where(target_lengths > 0, xp.logaddexp(final, before), final)
        self._alpha, self._emit, self._lp, self._nll = alpha, emit, log_probs, nll
        self._ext, self._skip = ext, skip
        self._lengths, self._zero_inf = (input_lengths, target_lengths), zero_infinity
        if zero_infinity:
            nll = xp.where(xp.isinf(nll), 0, nll)
        return nll.astype(log_probs.dtype, copy=False)

    def _beta(self, xp: Any) -> Any:
        """The backward recursion: log probability of finishing from (t, s), frame t included."""
        emit, skip = self._emit, self._skip
        input_lengths, target_lengths = self._lengths
        steps, _, width = emit.shape
        s = xp.arange(width)[None]
        end = 2 * target_lengths[:, None]
        at_end = (s == end) | ((s == end - 1) & (target_lengths[:, None] > 0))
        jump = xp.zeros(skip.shape, dtype=bool)  # from s to s + 2: where s + 2 may be skipped to
        jump[:, : width - 2] = skip[:, 2:]
        beta = xp.full(emit.shape, _NEG_INF, dtype=emit.dtype)
        for t in range(steps - 1, -1, -1):
            if t + 1 < steps:
                nxt = beta[t + 1]
                paths = xp.logaddexp(nxt, _shift_left(nxt, 1, xp))
                paths = xp.where(jump, xp.logaddexp(paths, _shift_left(nxt, 2, xp)), paths)
                recursed = paths + emit[t]
            else:
                recursed = beta[t]
            starts = (input_lengths - 1 == t)[:, None]
            beta[t] = xp.where(starts, xp.where(at_end, emit[t], _NEG_INF), recursed)
        return beta

    def _log_paths_per_class(self, both: Any, classes: int, xp: Any) -> Any:
        """log of alpha * beta summed over the extended positions of each class: (T, N, C)."""
        top = xp.max(both, axis=2, keepdims=True)
        top = xp.where(xp.isfinite(top), top, 0)
        one_hot = (self._ext[..., None] == xp.arange(classes)).astype(both.dtype)  # (N, L, C)
        summed = xp.einsum("tnl,nlc->tnc", xp.exp(both - top), one_hot)
        with np.errstate(divide="ignore"):
            return xp.log(summed) + top

    def backward(self, g: Any) -> tuple:
        self.check_released()
        lp = self._lp
        xp = xp_of(lp)
        steps, batch, classes = lp.shape
        lcab = self._log_paths_per_class(self._alpha + self._beta(xp), classes, xp)
        nll = self._nll[None, :, None]
        with np.errstate(invalid="ignore", over="ignore"):
            grad = xp.exp(lp) - xp.exp(lcab + nll - lp)
        frames = xp.arange(steps)[:, None, None] < self._lengths[0][None, :, None]
        grad = xp.where(frames, grad, 0)
        if self._zero_inf:
            grad = xp.where(xp.isinf(nll), 0, grad)
        grad = grad.astype(lp.dtype, copy=False)
        if isinstance(g, Tensor):  # create_graph: the rule itself is a constant, as in PyTorch
            return (g.reshape((1, batch, 1)) * Tensor._wrap(grad, g.device),)
        return (g.reshape((1, batch, 1)) * grad,)


def _shift_left(a: Any, by: int, xp: Any) -> Any:
    """`a` (N, L) moved left by `by` positions along L, -inf shifted in."""
    out = xp.full(a.shape, _NEG_INF, dtype=a.dtype)
    out[:, : a.shape[1] - by] = a[:, by:]
    return out


def _lengths(value: Any, name: str, batch: int) -> np.ndarray:
    if isinstance(value, Tensor):
        array = np.asarray(value.detach().cpu().__array__()).reshape(-1)
    else:
        array = np.asarray(value).reshape(-1)
    if array.shape[0] != batch:
        raise RuntimeError(f"{name} must be of size batch_size")
    return array.astype(np.int64)


def _extended_targets(
    targets: np.ndarray, target_lengths: np.ndarray, blank: int, concatenated: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each sequence's targets with blanks around and between them, (N, 2 S + 1), the mask of
    positions a path may reach by skipping a blank, and the mask of real positions."""
    batch = target_lengths.shape[0]
    longest = int(target_lengths.max()) if batch else 0
    labels = np.full((batch, longest), blank, dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(target_lengths)[:-1]])
    for n in range(batch):
        count = int(target_lengths[n])
        row = targets[offsets[n] : offsets[n] + count] if concatenated else targets[n, :count]
        labels[n, :count] = row
    ext = np.full((batch, 2 * longest + 1), blank, dtype=np.int64)
    ext[:, 1::2] = labels
    skip = np.zeros(ext.shape, dtype=bool)
    skip[:, 2:] = (ext[:, 2:] != blank) & (ext[:, 2:] != ext[:, :-2])
    valid = np.arange(ext.shape[1])[None] < (2 * target_lengths + 1)[:, None]
    return ext, skip, valid


def ctc_loss(
    log_probs: Tensor,
    targets: Tensor,
    input_lengths: Any,
    target_lengths: Any,
    blank: int = 0,
    reduction: str = "mean",
    zero_infinity: bool = False,
) -> Tensor:
    """The CTC loss of `targets` under per-frame class log probabilities (T, N, C)."""
    require_tensor("ctc_loss", log_probs, "log_probs")
    require_tensor("ctc_loss", targets, "targets", 2)
    check_reduction(reduction)
    require_kernel_dtype("ctc_loss_cpu", log_probs)
    unbatched = log_probs.ndim == 2
    lp = log_probs.unsqueeze(1) if unbatched else log_probs
    steps, batch, classes = lp.shape
    if blank < 0 or blank >= classes:
        raise RuntimeError("blank must be in label range")
    inputs = _lengths(input_lengths, "input_lengths", batch)
    lengths = _lengths(target_lengths, "target_lengths", batch)
    target_array = np.asarray(targets.detach().cpu().__array__()).astype(np.int64)
    if unbatched:
        target_array = target_array.reshape((1, -1))
    concatenated = target_array.ndim == 1
    check = "(while checking arguments for ctc_loss_allocate_outputs)"
    if batch and int(inputs.max()) > steps:
        raise RuntimeError(
            f"Expected input_lengths to have value at most {steps}, but got value "
            f"{int(inputs.max())} {check}"
        )
    if not concatenated and batch and int(lengths.max()) > target_array.shape[1]:
        raise RuntimeError(
            f"Expected tensor to have size at least {int(lengths.max())} at dimension 1, but got "
            f"size {target_array.shape[1]} for argument #2 'targets' {check}"
        )
    ext, skip, valid = _extended_targets(target_array, lengths, blank, concatenated)
    xp = xp_of(lp._data)
    nll = CtcLossBackward0.apply(
        lp,
        ext=xp.asarray(ext),
        skip=xp.asarray(skip),
        valid=xp.asarray(valid),
        input_lengths=xp.asarray(inputs),
        target_lengths=xp.asarray(lengths),
        zero_infinity=zero_infinity,
    )
    if reduction == "mean":
        divisor = Tensor._wrap(xp.asarray(np.maximum(lengths, 1), dtype=nll.dtype), nll.device)
        return (nll / divisor).mean()
    if reduction == "sum":
        return nll.sum()
    return nll.squeeze(0) if unbatched else nll
