"""`ASGD`: SGD with a decaying rate and a running average of the iterates (`ax`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

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


class ASGD(Optimizer):
    """PyTorch's averaged SGD update, step for step (`torch.optim.ASGD`'s single-tensor form).

    The state's `step`, `eta` and `mu` are float32 cpu scalars (PyTorch keeps them on the
    parameter's device; their values, float32 rounding included, are the same). `foreach`,
    `differentiable` and `capturable` are accepted and change nothing here.
    """

    def __init__(
        self,
        params: Iterable[Any],
        lr: float = 1e-2,
        lambd: float = 1e-4,
        alpha: float = 0.75,
        t0: float = 1e6,
        weight_decay: float = 0.0,
        foreach: bool | None = None,
        maximize: bool = False,
        differentiable: bool = False,
        capturable: bool = False,
    ) -> None:
        check_hyperparameters(lr=lr, weight_decay=weight_decay)
        defaults = {
            "lr": lr,
            "lambd": lambd,
            "alpha": alpha,
            "t0": t0,
            "weight_decay": weight_decay,
            "foreach": foreach,
            "maximize": maximize,
            "differentiable": differentiable,
            "capturable": capturable,
        }
        super().__init__(params, defaults)

    @no_grad()
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """One ASGD update of every parameter that has a gradient."""
        loss = self._evaluate(closure)
        for group in self.param_groups:
            lr, lambd, alpha, t0 = group["lr"], group["lambd"], group["alpha"], group["t0"]
            weight_decay = group["weight_decay"]
            for param, grad in gradients(group):
                state = self.state[param]
                if not state:
                    state["step"] = scalar_state()
                    state["eta"] = scalar_state(lr)
                    state["mu"] = scalar_state(1.0)
                    state["ax"] = filled_like(param)
                step = advance_step(state)
                data = param._data
                if weight_decay != 0:
                    grad = grad + weight_decay * data
                eta = float(state["eta"]._data)
                data *= 1 - lambd * eta
                data -= eta * grad
                ax = state["ax"]._data
                mu = float(state["mu"]._data)
                if mu != 1:
                    ax += (data - ax) * mu
                else:
                    ax[...] = data
                state["eta"]._data[...] = np.float32(lr / ((1 + lambd * lr * step) ** alpha))
                state["mu"]._data[...] = np.float32(1 / max(1, step - t0))
                bump_versions(state)
                param._bump_version()
        return loss
