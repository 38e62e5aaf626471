"""`Adam` and `AdamW` (decoupled weight decay), with optional AMSGrad and maximize."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from ..core.tensor import Tensor
from ..devices import CPU, array_module, each_on_its_device
from ..grad_mode import no_grad
from ._state import check_fused
from .optimizer import Optimizer, grad_array


def _lerp_(start: Any, end: Any, weight: float) -> None:
    """start += weight * (end - start), in place, with PyTorch's two-sided formula."""
    if abs(weight) < 0.5:
        start += weight * (end - start)
    else:
        start[...] = end - (end - start) * (1 - weight)


class Adam(Optimizer):
    """PyTorch's Adam update, step for step (`torch.optim.Adam`'s single-tensor form)."""

    def __init__(
        self,
        params: Iterable[Any],
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.0,
        amsgrad: bool = False,
        *,
        foreach: bool | None = None,
        maximize: bool = False,
        capturable: bool = False,
        differentiable: bool = False,
        fused: bool | None = None,
        decoupled_weight_decay: bool = False,
    ) -> None:
        if lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if eps < 0.0:
            raise ValueError(f"Invalid epsilon value: {eps}")
        for i, beta in enumerate(betas):
            if not 0.0 <= beta < 1.0:
                raise ValueError(f"Invalid beta parameter at index {i}: {beta}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = {
            "lr": lr,
            "betas": tuple(betas),
            "eps": eps,
            "weight_decay": weight_decay,
            "amsgrad": amsgrad,
            "maximize": maximize,
            "foreach": foreach,
            "capturable": capturable,
            "differentiable": differentiable,
            "fused": fused,
            "decoupled_weight_decay": decoupled_weight_decay,
        }
        super().__init__(params, defaults)
        check_fused(fused, foreach, differentiable)

    def _init_state(self, param: Tensor, amsgrad: bool) -> dict[str, Any]:
        state = self.state[param]
        if not state:
            xp = array_module(param.device)
            state["step"] = Tensor._wrap(np.zeros((), dtype=np.float32), CPU)
            state["exp_avg"] = Tensor._wrap(xp.zeros_like(param._data), param.device)
            state["exp_avg_sq"] = Tensor._wrap(xp.zeros_like(param._data), param.device)
            if amsgrad:
                state["max_exp_avg_sq"] = Tensor._wrap(xp.zeros_like(param._data), param.device)
        elif amsgrad and "max_exp_avg_sq" not in state:
            xp = array_module(param.device)
            state["max_exp_avg_sq"] = Tensor._wrap(xp.zeros_like(param._data), param.device)
        return state

    @no_grad()
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """One Adam update of every parameter that has a gradient."""
        loss = self._evaluate(closure)
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            lr, eps, weight_decay = group["lr"], group["eps"], group["weight_decay"]
            amsgrad = group["amsgrad"]
            for param in each_on_its_device(group["params"], "Adam.step"):
                grad = grad_array(param)
                if grad is None:
                    continue
                if group["maximize"]:
                    grad = -grad
                state = self._init_state(param, amsgrad)
                data = param._data
                xp = array_module(param.device)
                step_t = state["step"]
                step_t._data += 1
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
                step = float(step_t._data)
                bias_correction1 = 1 - beta1**step
                bias_correction2 = 1 - beta2**step
                step_size = lr / bias_correction1
                bias_correction2_sqrt = bias_correction2**0.5
                if amsgrad:
                    max_sq = state["max_exp_avg_sq"]._data
                    xp.maximum(max_sq, exp_avg_sq, out=max_sq)
                    denom = xp.sqrt(max_sq) / bias_correction2_sqrt + eps
                else:
                    denom = xp.sqrt(exp_avg_sq) / bias_correction2_sqrt + eps
                data += (-step_size * exp_avg) / denom
                for name in ("exp_avg", "exp_avg_sq", "max_exp_avg_sq", "step"):
                    if name in state:
                        state[name]._bump_version()
                param._bump_version()
        return loss


class AdamW(Adam):
    """Adam with decoupled weight decay (`p *= 1 - lr * weight_decay` before the update)."""

    def __init__(
        self,
        params: Iterable[Any],
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 1e-2,
        amsgrad: bool = False,
        *,
        maximize: bool = False,
        foreach: bool | None = None,
        capturable: bool = False,
        differentiable: bool = False,
        fused: bool | None = None,
    ) -> None:
        super().__init__(
            params,
            lr,
            betas,
            eps,
            weight_decay,
            amsgrad,
            foreach=foreach,
            maximize=maximize,
            capturable=capturable,
            differentiable=differentiable,
            fused=fused,
            decoupled_weight_decay=True,
        )

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """As Optimizer's; AdamW's groups keep decoupled weight decay."""
        super().load_state_dict(state_dict)
        for group in self.param_groups:
            group["decoupled_weight_decay"] = True
