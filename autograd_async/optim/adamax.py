"""`Adamax`: Adam with the infinity norm in place of the second moment."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from ..devices import array_module
from ..grad_mode import no_grad
from ._state import (
    advance_step,
    bump_versions,
    check_betas,
    check_hyperparameters,
    filled_like,
    gradients,
    scalar_state,
)
from .adam import _lerp_
from .optimizer import Optimizer


class Adamax(Optimizer):
    """PyTorch's Adamax update, step for step (`torch.optim.Adamax`'s single-tensor form).

    `foreach`, `differentiable` and `capturable` are accepted and kept in the groups; they change
    nothing here (updates are whole-array NumPy/CuPy operations outside the graph).
    """

    def __init__(
        self,
        params: Iterable[Any],
        lr: float = 2e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.0,
        foreach: bool | None = None,
        *,
        maximize: bool = False,
        differentiable: bool = False,
        capturable: bool = False,
    ) -> None:
        check_hyperparameters(lr=lr, eps=eps)
        betas = check_betas(betas)
        check_hyperparameters(weight_decay=weight_decay)
        defaults = {
            "lr": lr,
            "betas": betas,
            "eps": eps,
            "weight_decay": weight_decay,
            "foreach": foreach,
            "maximize": maximize,
            "differentiable": differentiable,
            "capturable": capturable,
        }
        super().__init__(params, defaults)

    @no_grad()
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """One Adamax update of every parameter that has a gradient."""
        loss = self._evaluate(closure)
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            lr, eps, weight_decay = group["lr"], group["eps"], group["weight_decay"]
            for param, grad in gradients(group):
                state = self.state[param]
                if not state:
                    state["step"] = scalar_state()
                    state["exp_avg"] = filled_like(param)
                    state["exp_inf"] = filled_like(param)
                step = advance_step(state)
                data = param._data
                if weight_decay != 0:
                    grad = grad + weight_decay * data
                exp_avg = state["exp_avg"]._data
                exp_inf = state["exp_inf"]._data
                _lerp_(exp_avg, grad, 1 - beta1)
                exp_inf *= beta2
                xp = array_module(param.device)
                xp.maximum(exp_inf, xp.abs(grad) + eps, out=exp_inf)
                clr = lr / (1 - beta1**step)
                data += -clr * (exp_avg / exp_inf)
                bump_versions(state)
                param._bump_version()
        return loss
