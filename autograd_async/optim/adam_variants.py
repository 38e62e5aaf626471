"""`NAdam` (Nesterov momentum in Adam) and `RAdam` (Adam with a rectified adaptive rate)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

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


class _AdamFamily(Optimizer):
    """What NAdam and RAdam share: the hyperparameter checks and the two moving averages."""

    def __init__(
        self,
        params: Iterable[Any],
        lr: float,
        betas: tuple[float, float],
        eps: float,
        weight_decay: float,
        decoupled_weight_decay: bool,
        flags: dict[str, Any],
        **extra: float,
    ) -> None:
        check_hyperparameters(lr=lr, eps=eps)
        betas = check_betas(betas)
        check_hyperparameters(weight_decay=weight_decay, **extra)
        defaults = {
            "lr": lr,
            "betas": betas,
            "eps": eps,
            "weight_decay": weight_decay,
            **extra,
            "decoupled_weight_decay": decoupled_weight_decay,
            **flags,
        }
        super().__init__(params, defaults)

    def _new_state(self, state: dict[str, Any], param: Any) -> None:
        state["step"] = scalar_state()
        state["exp_avg"] = filled_like(param)
        state["exp_avg_sq"] = filled_like(param)

    def _update(
        self, group: dict[str, Any], param: Any, grad: Any, state: dict[str, Any], step: float
    ) -> None:
        """Apply the variant's update to the parameter's array, the averages already updated."""
        raise NotImplementedError

    @no_grad()
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """One update of every parameter that has a gradient."""
        loss = self._evaluate(closure)
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            lr, weight_decay = group["lr"], group["weight_decay"]
            for param, grad in gradients(group):
                state = self.state[param]
                if not state:
                    self._new_state(state, param)
                step = advance_step(state)
                data = param._data
                if weight_decay != 0:
                    if group["decoupled_weight_decay"]:
                        data *= 1 - lr * weight_decay
                    else:
                        grad = grad + weight_decay * data
                exp_avg = state["exp_avg"]._data
                exp_avg_sq = state["exp_avg_sq"]._data
                _lerp_(exp_avg, grad, 1 - beta1)
                exp_avg_sq *= beta2
                exp_avg_sq += (1 - beta2) * grad * grad
                self._update(group, param, grad, state, step)
                bump_versions(state)
                param._bump_version()
        return loss


class NAdam(_AdamFamily):
    """PyTorch's NAdam update, step for step (`torch.optim.NAdam`'s single-tensor form)."""

    def __init__(
        self,
        params: Iterable[Any],
        lr: float = 2e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.0,
        momentum_decay: float = 4e-3,
        decoupled_weight_decay: bool = False,
        *,
        foreach: bool | None = None,
        maximize: bool = False,
        capturable: bool = False,
        differentiable: bool = False,
    ) -> None:
        flags = {
            "maximize": maximize,
            "foreach": foreach,
            "capturable": capturable,
            "differentiable": differentiable,
        }
        super().__init__(
            params,
            lr,
            betas,
            eps,
            weight_decay,
            decoupled_weight_decay,
            flags,
            momentum_decay=momentum_decay,
        )

    def _new_state(self, state: dict[str, Any], param: Any) -> None:
        super()._new_state(state, param)
        state["mu_product"] = scalar_state(1.0)

    def _update(
        self, group: dict[str, Any], param: Any, grad: Any, state: dict[str, Any], step: float
    ) -> None:
        beta1, beta2 = group["betas"]
        lr, eps, momentum_decay = group["lr"], group["eps"], group["momentum_decay"]
        mu = beta1 * (1.0 - 0.5 * 0.96 ** (step * momentum_decay))
        mu_next = beta1 * (1.0 - 0.5 * 0.96 ** ((step + 1) * momentum_decay))
        # The product is kept in float32, as PyTorch keeps it, so that long runs agree.
        mu_product_t = state["mu_product"]
        mu_product_t._data *= np.float32(mu)
        mu_product = float(mu_product_t._data)
        mu_product_next = mu_product * mu_next
        xp = array_module(param.device)
        denom = xp.sqrt(state["exp_avg_sq"]._data / (1 - beta2**step))
        denom += eps
        data = param._data
        data += (-lr * (1.0 - mu) / (1.0 - mu_product)) * (grad / denom)
        data += ((-lr * mu_next) / (1.0 - mu_product_next)) * (state["exp_avg"]._data / denom)


class RAdam(_AdamFamily):
    """PyTorch's RAdam update, step for step (`torch.optim.RAdam`'s single-tensor form)."""

    def __init__(
        self,
        params: Iterable[Any],
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.0,
        decoupled_weight_decay: bool = False,
        *,
        foreach: bool | None = None,
        maximize: bool = False,
        capturable: bool = False,
        differentiable: bool = False,
    ) -> None:
        flags = {
            "maximize": maximize,
            "foreach": foreach,
            "capturable": capturable,
            "differentiable": differentiable,
        }
        super().__init__(params, lr, betas, eps, weight_decay, decoupled_weight_decay, flags)

    def _update(
        self, group: dict[str, Any], param: Any, grad: Any, state: dict[str, Any], step: float
    ) -> None:
        beta1, beta2 = group["betas"]
        lr, eps = group["lr"], group["eps"]
        bias_correction1 = 1 - beta1**step
        bias_correction2 = 1 - beta2**step
        corrected_avg = state["exp_avg"]._data / bias_correction1
        # The length of the approximated simple moving average; below 5 the adaptive rate's
        # variance is intractable and the step is plain momentum.
        rho_inf = 2 / (1 - beta2) - 1
        rho_t = rho_inf - 2 * step * (beta2**step) / bias_correction2
        data = param._data
        if rho_t > 5.0:
            rect = (
                (rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t)
            ) ** 0.5
            root = array_module(param.device).sqrt(state["exp_avg_sq"]._data)
            root += eps
            adaptive = (bias_correction2**0.5) / root
            data -= corrected_avg * lr * adaptive * rect
        else:
            data -= corrected_avg * lr
