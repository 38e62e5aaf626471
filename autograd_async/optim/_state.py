"""Per-parameter state helpers shared by the optimizers: step counters and zeroed buffers.

PyTorch keeps `step` (and NAdam's `mu_product`) as float32 scalar tensors on the cpu; keeping them
the same way makes the updates match PyTorch's to the last float32 rounding.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from ..core.tensor import Tensor
from ..devices import CPU, array_module, each_on_its_device
from .optimizer import grad_array


def gradients(group: dict[str, Any]) -> Iterator[tuple[Tensor, Any]]:
    """Each parameter of the group that has a gradient, with the gradient's array (checked, and
    negated when the group maximizes)."""
    maximize = group.get("maximize", False)
    for param in each_on_its_device(group["params"], "optimizer step"):
        grad = grad_array(param)
        if grad is not None:
            yield param, (-grad if maximize else grad)


def scalar_state(value: float = 0.0) -> Tensor:
    """A float32 0-d cpu tensor, the form PyTorch gives `step` and similar counters."""
    return Tensor._wrap(np.full((), value, dtype=np.float32), CPU)


def advance_step(state: dict[str, Any]) -> float:
    """Add one to the state's `step` counter and return the new count as a Python float."""
    step_t = state["step"]
    step_t._data += 1
    step_t._bump_version()
    return float(step_t._data)


def filled_like(param: Tensor, value: float = 0.0) -> Tensor:
    """A state buffer of the parameter's shape, dtype and device, filled with `value`."""
    xp = array_module(param.device)
    data = xp.full_like(param._data, value) if value else xp.zeros_like(param._data)
    return Tensor._wrap(data, param.device)


def bump_versions(state: dict[str, Any]) -> None:
    """Mark every tensor of a parameter's state as changed in place."""
    for value in state.values():
        if isinstance(value, Tensor):
            value._bump_version()


def check_hyperparameters(**values: float) -> None:
    """Refuse negative learning rates, epsilons, decays (PyTorch's "Invalid ..." messages)."""
    names = {"lr": "learning rate", "eps": "epsilon value"}
    for key, value in values.items():
        if value < 0.0:
            raise ValueError(f"Invalid {names.get(key, key + ' value')}: {value}")


def check_betas(betas: tuple[float, float]) -> tuple[float, float]:
    """Both betas in [0, 1), as PyTorch requires of Adam's family."""
    for i, beta in enumerate(betas):
        if not 0.0 <= beta < 1.0:
            raise ValueError(f"Invalid beta parameter at index {i}: {beta}")
    return (float(betas[0]), float(betas[1]))


def check_fused(fused: bool | None, foreach: bool | None, differentiable: bool) -> None:
    """PyTorch's refusals of `fused` beside `foreach` or `differentiable`.

    `fused` itself changes nothing here: every update is already one pass over NumPy/CuPy arrays.
    """
    if fused:
        if differentiable:
            raise RuntimeError("`fused` does not support `differentiable`")
        if foreach:
            raise RuntimeError("`fused` and `foreach` cannot be `True` together.")
