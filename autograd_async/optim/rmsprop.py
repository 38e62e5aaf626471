"""`RMSprop`: the gradient over a running root mean square, optionally centred, with momentum."""

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
from .adam import _lerp_
from .optimizer import Optimizer


class RMSprop(Optimizer):
    """PyTorch's RMSprop update, step for step (`torch.optim.RMSprop`'s single-tensor form)."""

    def __init__(
        self,
        params: Iterable[Any],
        lr: float = 1e-2,
        alpha: float = 0.99,
        eps: float = 1e-8,
        weight_decay: float = 0.0,
        momentum: float = 0.0,
        centered: bool = False,
        capturable: bool = False,
        foreach: bool | None = None,
        maximize: bool = False,
        differentiable: bool = False,
    ) -> None:
        check_hyperparameters(
            lr=lr, eps=eps, momentum=momentum, weight_decay=weight_decay, alpha=alpha
        )
        defaults = {
            "lr": lr,
            "alpha": alpha,
            "eps": eps,
            "weight_decay": weight_decay,
            "momentum": momentum,
            "centered": centered,
            "capturable": capturable,
            "foreach": foreach,
            "maximize": maximize,
            "differentiable": differentiable,
        }
        super().__init__(params, defaults)

    @no_grad()
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """One RMSprop update of every parameter that has a gradient."""
        loss = self._evaluate(closure)
        for group in self.param_groups:
            lr, alpha, eps = group["lr"], group["alpha"], group["eps"]
            weight_decay, momentum = group["weight_decay"], group["momentum"]
            for param, grad in gradients(group):
                state = self.state[param]
                if not state:
                    state["step"] = scalar_state()
                    state["square_avg"] = filled_like(param)
                    if momentum > 0:
                        state["momentum_buffer"] = filled_like(param)
                    if group["centered"]:
                        state["grad_avg"] = filled_like(param)
                advance_step(state)
                data = param._data
                if weight_decay != 0:
                    grad = grad + weight_decay * data
                square_avg = state["square_avg"]._data
                square_avg *= alpha
                square_avg += (1 - alpha) * grad * grad
                if group["centered"]:
                    grad_avg = state["grad_avg"]._data
                    _lerp_(grad_avg, grad, 1 - alpha)
                    avg = array_module(param.device).sqrt(square_avg - grad_avg * grad_avg)
                else:
                    avg = array_module(param.device).sqrt(square_avg)
                avg += eps
                if momentum > 0:
                    buf = state["momentum_buffer"]._data
                    buf *= momentum
                    buf += grad / avg
                    data -= lr * buf
                else:
                    data -= lr * (grad / avg)
                bump_versions(state)
                param._bump_version()
        return loss
