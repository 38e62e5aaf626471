"""`Adafactor`: second moments kept as row and column averages (factored) for matrices."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from ..core.tensor import Tensor
from ..devices import array_module
from ..grad_mode import no_grad
from ._state import advance_step, bump_versions, filled_like, gradients, scalar_state
from .adam import _lerp_
from .optimizer import Optimizer


class Adafactor(Optimizer):
    """PyTorch's Adafactor update, step for step (`torch.optim.Adafactor`'s single-tensor form).

    A parameter of two or more dimensions keeps `row_var` and `col_var` (its last two dimensions
    averaged away in turn); a vector keeps a full `variance`. `foreach` is accepted and changes
    nothing here.
    """

    def __init__(
        self,
        params: Iterable[Any],
        lr: float = 1e-2,
        beta2_decay: float = -0.8,
        eps: tuple[float | None, float] = (None, 1e-3),
        d: float = 1.0,
        weight_decay: float = 0.0,
        *,
        foreach: bool | None = None,
        maximize: bool = False,
    ) -> None:
        if not lr >= 0.0:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not beta2_decay <= 0.0:
            raise ValueError(f"beta2_decay should be <= 0 but is: {beta2_decay}")
        if eps[0] is not None and not eps[0] >= 0.0:
            raise ValueError(f"epsilon1 should be >= 0 but is: {eps[0]}")
        if not eps[1] >= 0.0:
            raise ValueError(f"epsilon2 should be >= 0 but is: {eps[1]}")
        if not d >= 1.0:
            raise ValueError(f"Clipping threshold d should be >= 1 but is: {d}")
        if not weight_decay >= 0.0:
            raise ValueError(f"weight_decay should be >= 0 but is: {weight_decay}")
        defaults = {
            "lr": lr,
            "beta2_decay": beta2_decay,
            "eps": eps,
            "d": d,
            "weight_decay": weight_decay,
            "foreach": foreach,
            "maximize": maximize,
        }
        super().__init__(params, defaults)

    @staticmethod
    def _new_state(state: dict[str, Any], param: Tensor) -> None:
        state["step"] = scalar_state()
        if param.ndim > 1:
            xp = array_module(param.device)
            shape = param._data.shape
            state["row_var"] = Tensor._wrap(
                xp.zeros((*shape[:-1], 1), param._data.dtype), param.device
            )
            state["col_var"] = Tensor._wrap(
                xp.zeros((*shape[:-2], 1, shape[-1]), param._data.dtype), param.device
            )
        else:
            state["variance"] = filled_like(param)

    @no_grad()
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """One Adafactor update of every parameter that has a gradient."""
        loss = self._evaluate(closure)
        for group in self.param_groups:
            lr, d, weight_decay = group["lr"], group["d"], group["weight_decay"]
            eps1, eps2 = group["eps"]
            for param, grad in gradients(group):
                if param._data.dtype.kind == "c":
                    raise RuntimeError("Adafactor does not support complex parameters")
                state = self.state[param]
                if not state:
                    self._new_state(state, param)
                step = advance_step(state)
                xp = array_module(param.device)
                data = param._data
                floor = np.finfo(data.dtype).eps if eps1 is None else eps1
                one_minus_beta2 = step ** group["beta2_decay"]
                rho = min(lr, 1 / (step**0.5))
                alpha = max(eps2, float(xp.linalg.norm(data)) / (data.size**0.5)) * rho
                if weight_decay != 0:
                    data *= 1 - lr * weight_decay
                if grad.ndim > 1:
                    row_var, col_var = state["row_var"]._data, state["col_var"]._data
                    _lerp_(row_var, _mean_square(xp, grad, -1), one_minus_beta2)
                    _lerp_(col_var, _mean_square(xp, grad, -2), one_minus_beta2)
                    estimate = row_var @ col_var
                    estimate /= xp.maximum(row_var.mean(axis=-2, keepdims=True), floor)
                else:
                    variance = state["variance"]._data
                    _lerp_(variance, grad * grad, one_minus_beta2)
                    estimate = variance.copy()
                update = 1 / xp.sqrt(xp.maximum(estimate, floor * floor))
                update *= grad
                denom = max(1.0, float(xp.linalg.norm(update)) / ((update.size**0.5) * d))
                data += (-alpha / denom) * update
                bump_versions(state)
                param._bump_version()
        return loss


def _mean_square(xp: Any, grad: Any, axis: int) -> Any:
    """The mean of the squares along `axis` (kept), as PyTorch's squared norm over the length."""
    norm = xp.sqrt((grad * grad).sum(axis=axis, keepdims=True))
    return norm * norm / grad.shape[axis]
