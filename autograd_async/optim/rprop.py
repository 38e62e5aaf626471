"""`Rprop`: resilient backpropagation, a per-coordinate step size driven by gradient signs."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from ..devices import array_module
from ..grad_mode import no_grad
from ._state import (
    advance_step,
    bump_versions,
    check_hyperparameters,
    filled_like,
    gradients,
    scalar_state,
)
from .optimizer import Optimizer


class Rprop(Optimizer):
    """PyTorch's Rprop update, step for step (`torch.optim.Rprop`'s single-tensor form).

    `foreach`, `differentiable` and `capturable` are accepted and change nothing here.
    """

    def __init__(
        self,
        params: Iterable[Any],
        lr: float = 1e-2,
        etas: tuple[float, float] = (0.5, 1.2),
        step_sizes: tuple[float, float] = (1e-6, 50),
        *,
        capturable: bool = False,
        foreach: bool | None = None,
        maximize: bool = False,
        differentiable: bool = False,
    ) -> None:
        check_hyperparameters(lr=lr)
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        defaults = {
            "lr": lr,
            "etas": etas,
            "step_sizes": step_sizes,
            "foreach": foreach,
            "maximize": maximize,
            "differentiable": differentiable,
            "capturable": capturable,
        }
        super().__init__(params, defaults)

    @no_grad()
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """One Rprop update of every parameter that has a gradient."""
        loss = self._evaluate(closure)
        for group in self.param_groups:
            etaminus, etaplus = group["etas"]
            step_size_min, step_size_max = group["step_sizes"]
            for param, grad in gradients(group):
                state = self.state[param]
                if not state:
                    state["step"] = scalar_state()
                    state["prev"] = filled_like(param)
                    state["step_size"] = filled_like(param, group["lr"])
                advance_step(state)
                xp = array_module(param.device)
                prev = state["prev"]._data
                step_size = state["step_size"]._data
                sign = xp.sign(grad * prev)
                # The factor per coordinate, in the gradient's dtype as PyTorch writes it.
                factor = xp.where(sign > 0, etaplus, xp.where(sign < 0, etaminus, 1)).astype(
                    grad.dtype
                )
                step_size *= factor
                xp.clip(step_size, step_size_min, step_size_max, out=step_size)
                grad = xp.where(sign < 0, 0, grad).astype(grad.dtype)
                param._data -= xp.sign(grad) * step_size
                prev[...] = grad
                bump_versions(state)
                param._bump_version()
        return loss
