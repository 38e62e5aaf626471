"""`SparseAdam`: Adam whose moments and parameter change only where the gradient has entries."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any

from ..devices import array_module
from ..grad_mode import no_grad
from ._state import bump_versions, check_betas, filled_like, gradients
from .optimizer import Optimizer


class SparseAdam(Optimizer):
    """PyTorch's SparseAdam update (`torch.optim.SparseAdam`), for gradients given densely.

    Gradients here are dense arrays; PyTorch's SparseAdam refuses those and takes sparse COO
    gradients such as `nn.Embedding(sparse=True)` produces, one entry per touched row. This one
    reads a dense gradient the same way: the rows (slices along the first dimension) whose gradient
    is not all zero are the entries; the other rows' moments and values are left as they are. The
    result equals PyTorch's SparseAdam given `grad.to_sparse(1)`. Unlike Adam, `eps` is added to
    the square root of the uncorrected second moment, and `step` is a plain int, as in PyTorch.
    """

    def __init__(
        self,
        params: Iterable[Any],
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        maximize: bool = False,
    ) -> None:
        if not lr > 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not eps > 0.0:
            raise ValueError(f"Invalid epsilon value: {eps}")
        betas = check_betas(betas)
        defaults = {"lr": lr, "betas": betas, "eps": eps, "maximize": maximize}
        super().__init__(params, defaults)
        complex_params = [
            [i, j]
            for i, group in enumerate(self.param_groups)
            for j, param in enumerate(group["params"])
            if param._data.dtype.kind == "c"
        ]
        if complex_params:
            raise ValueError(
                f"Complex params at indices {complex_params}: SparseAdam does not support "
                "complex parameters"
            )

    @no_grad()
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """One update of the rows of every parameter where its gradient is not zero."""
        loss = self._evaluate(closure)
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            lr, eps = group["lr"], group["eps"]
            for param, grad in gradients(group):
                state = self.state[param]
                if not state:
                    state["step"] = 0
                    state["exp_avg"] = filled_like(param)
                    state["exp_avg_sq"] = filled_like(param)
                state["step"] += 1
                step = state["step"]
                xp = array_module(param.device)
                rows = _touched_rows(xp, grad)
                if rows is not None and not rows.size:
                    continue
                values = grad if rows is None else grad[rows]
                exp_avg, exp_avg_sq = state["exp_avg"]._data, state["exp_avg_sq"]._data
                old_avg = exp_avg if rows is None else exp_avg[rows]
                old_sq = exp_avg_sq if rows is None else exp_avg_sq[rows]
                avg_update = (values - old_avg) * (1 - beta1)
                sq_update = (values * values - old_sq) * (1 - beta2)
                numer = avg_update + old_avg
                denom = xp.sqrt(sq_update + old_sq) + eps
                step_size = lr * math.sqrt(1 - beta2**step) / (1 - beta1**step)
                change = -step_size * (numer / denom)
                if rows is None:
                    exp_avg += avg_update
                    exp_avg_sq += sq_update
                    param._data += change
                else:
                    exp_avg[rows] += avg_update
                    exp_avg_sq[rows] += sq_update
                    param._data[rows] += change
                bump_versions(state)
                param._bump_version()
        return loss


def _touched_rows(xp: Any, grad: Any) -> Any:
    """The indices along the first dimension where the gradient has a non-zero value (None for a
    0-d gradient, which is one entry)."""
    if grad.ndim == 0:
        return None if grad != 0 else xp.zeros(0, dtype=xp.intp)
    nonzero = grad != 0
    if grad.ndim > 1:
        nonzero = nonzero.reshape(grad.shape[0], -1).any(axis=1)
    return xp.flatnonzero(nonzero)
