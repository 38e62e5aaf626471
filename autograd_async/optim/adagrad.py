"""`Adagrad` and `Adadelta`: per-coordinate rates from accumulated squared gradients."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from ..devices import array_module, each_on_its_device
from ..grad_mode import no_grad
from ._state import (
    advance_step,
    bump_versions,
    check_fused,
    check_hyperparameters,
    filled_like,
    gradients,
    scalar_state,
)
from .optimizer import Optimizer


class Adagrad(Optimizer):
    """PyTorch's Adagrad update (`torch.optim.Adagrad`'s single-tensor form, dense gradients)."""

    def __init__(
        self,
        params: Iterable[Any],
        lr: float = 1e-2,
        lr_decay: float = 0.0,
        weight_decay: float = 0.0,
        initial_accumulator_value: float = 0.0,
        eps: float = 1e-10,
        foreach: bool | None = None,
        *,
        maximize: bool = False,
        differentiable: bool = False,
        fused: bool | None = None,
    ) -> None:
        check_hyperparameters(
            lr=lr,
            lr_decay=lr_decay,
            weight_decay=weight_decay,
            initial_accumulator_value=initial_accumulator_value,
            eps=eps,
        )
        defaults = {
            "lr": lr,
            "lr_decay": lr_decay,
            "eps": eps,
            "weight_decay": weight_decay,
            "initial_accumulator_value": initial_accumulator_value,
            "foreach": foreach,
            "maximize": maximize,
            "differentiable": differentiable,
            "fused": fused,
        }
        super().__init__(params, defaults)
        check_fused(fused, foreach, differentiable)
        # PyTorch creates the state at construction, so a state_dict saved before the first
        # step already holds every parameter's sum.
        for group in self.param_groups:
            for param in each_on_its_device(group["params"], "Adagrad"):
                state = self.state[param]
                state["step"] = scalar_state()
                state["sum"] = filled_like(param, group["initial_accumulator_value"])

    @no_grad()
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """One Adagrad update of every parameter that has a gradient."""
        loss = self._evaluate(closure)
        for group in self.param_groups:
            lr, eps, weight_decay = group["lr"], group["eps"], group["weight_decay"]
            for param, grad in gradients(group):
                state = self.state[param]
                if not state:  # a group added after construction
                    state["step"] = scalar_state()
                    state["sum"] = filled_like(param, group["initial_accumulator_value"])
                step = advance_step(state)
                data = param._data
                if weight_decay != 0:
                    grad = grad + weight_decay * data
                clr = lr / (1 + (step - 1) * group["lr_decay"])
                total = state["sum"]._data
                total += grad * grad
                std = array_module(param.device).sqrt(total)
                std += eps
                data -= clr * (grad / std)
                bump_versions(state)
                param._bump_version()
        return loss


class Adadelta(Optimizer):
    """PyTorch's Adadelta update, step for step (`torch.optim.Adadelta`'s single-tensor form)."""

    def __init__(
        self,
        params: Iterable[Any],
        lr: float = 1.0,
        rho: float = 0.9,
        eps: float = 1e-6,
        weight_decay: float = 0.0,
        foreach: bool | None = None,
        *,
        capturable: bool = False,
        maximize: bool = False,
        differentiable: bool = False,
    ) -> None:
        check_hyperparameters(lr=lr)
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        check_hyperparameters(eps=eps, weight_decay=weight_decay)
        defaults = {
            "lr": lr,
            "rho": rho,
            "eps": eps,
            "weight_decay": weight_decay,
            "maximize": maximize,
            "capturable": capturable,
            "foreach": foreach,
            "differentiable": differentiable,
        }
        super().__init__(params, defaults)

    @no_grad()
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """One Adadelta update of every parameter that has a gradient."""
        loss = self._evaluate(closure)
        for group in self.param_groups:
            lr, rho, eps = group["lr"], group["rho"], group["eps"]
            weight_decay = group["weight_decay"]
            for param, grad in gradients(group):
                state = self.state[param]
                if not state:
                    state["step"] = scalar_state()
                    state["square_avg"] = filled_like(param)
                    state["acc_delta"] = filled_like(param)
                advance_step(state)
                data = param._data
                if weight_decay != 0:
                    grad = grad + weight_decay * data
                xp = array_module(param.device)
                square_avg = state["square_avg"]._data
                acc_delta = state["acc_delta"]._data
                square_avg *= rho
                square_avg += (1 - rho) * grad * grad
                std = xp.sqrt(square_avg + eps)
                delta = xp.sqrt(acc_delta + eps) / std * grad
                acc_delta *= rho
                acc_delta += (1 - rho) * delta * delta
                data -= lr * delta
                bump_versions(state)
                param._bump_version()
        return loss
