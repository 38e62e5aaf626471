"""`LRScheduler`, the base of the epoch-driven schedulers, with PyTorch's step protocol.

A scheduler is constructed after its optimizer and stepped after `optimizer.step()`; construction
takes the first step (epoch 0), as PyTorch's does. Subclasses give `get_lr()` in PyTorch's
recursive form (from the groups' current rates) and, where PyTorch has one, a closed form used
when `step(epoch)` jumps.
"""

from __future__ import annotations

import warnings
from typing import Any

from ..optimizer import Optimizer

_STEP_ORDER_MESSAGE = (
    "Detected call of `lr_scheduler.step()` before `optimizer.step()`. In PyTorch 1.1.0 and "
    "later, you should call them in the opposite order: `optimizer.step()` before "
    "`lr_scheduler.step()`.  Failure to do this will result in PyTorch skipping the first value "
    "of the learning rate schedule. See more details at "
    "https://pytorch.org/docs/stable/optim.html#how-to-adjust-learning-rate"
)


class LRScheduler:
    """Base class: sets each group's 'lr' from `get_lr()` every `step()`."""

    _is_initial: bool = False

    def __init__(self, optimizer: Optimizer, last_epoch: int = -1) -> None:
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        self.optimizer = optimizer
        if last_epoch == -1:
            for group in optimizer.param_groups:
                group.setdefault("initial_lr", group["lr"])
        else:
            for i, group in enumerate(optimizer.param_groups):
                if "initial_lr" not in group:
                    raise KeyError(
                        f"param 'initial_lr' is not specified in param_groups[{i}] when resuming "
                        "scheduler with last_epoch >= 0.\nThis typically happens when:\n"
                        "1. You're trying to resume training from a checkpoint but haven't "
                        "properly loaded the optimizer state\n"
                        "2. You're using last_epoch >= 0 for a fresh training run (not "
                        "recommended)"
                    )
        self.base_lrs: list[float] = param_values(optimizer, "initial_lr")
        self.last_epoch = last_epoch
        self._initial_step()

    def _initial_step(self) -> None:
        """Take the construction-time step (PyTorch's `_initial_step`): epoch 0's rates."""
        self._step_count = 0
        self._is_initial = True
        try:
            self.step()
        finally:
            self._is_initial = False

    def get_lr(self) -> list[float]:
        """The learning rates for the epoch `last_epoch` (the recursive form)."""
        raise NotImplementedError

    def get_last_lr(self) -> list[float]:
        """The learning rates set by the latest step."""
        return self._last_lr

    def step(self, epoch: int | None = None) -> None:
        """Advance one epoch (or jump to `epoch`, deprecated) and set the groups' learning rates."""
        if self._step_count == 1 and not getattr(self.optimizer, "_opt_called", False):
            warnings.warn(_STEP_ORDER_MESSAGE, UserWarning, stacklevel=2)
        self._step_count += 1
        if epoch is not None:
            warnings.warn(
                "The epoch parameter in `scheduler.step()` is deprecated; call step() without it",
                UserWarning,
                stacklevel=2,
            )
        self._update_lr(epoch)

    def _update_lr(self, epoch: int | None = None) -> None:
        """Advance to the next epoch (or to `epoch` by the closed form) and set the rates."""
        if epoch is None:
            self.last_epoch += 1
            values = self.get_lr()
        else:
            self.last_epoch = epoch
            values = self._get_closed_form_lr()
        for group, lr in zip(self.optimizer.param_groups, values, strict=True):
            group["lr"] = lr
        self._last_lr = param_values(self.optimizer, "lr")

    def _get_closed_form_lr(self) -> list[float]:
        return self.get_lr()

    def state_dict(self) -> dict[str, Any]:
        """Every attribute except the optimizer."""
        return {key: value for key, value in self.__dict__.items() if key != "optimizer"}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore attributes saved by `state_dict`."""
        self.__dict__.update(state_dict)


def param_values(optimizer: Optimizer, key: str) -> list[Any]:
    """Each parameter group's value of `key`, in group order."""
    return [group[key] for group in optimizer.param_groups]


def per_group(name: str, optimizer: Optimizer, value: Any) -> list[Any]:
    """One value per parameter group: a list of that length, or one value repeated."""
    groups = len(optimizer.param_groups)
    if isinstance(value, list | tuple):
        if len(value) != groups:
            raise ValueError(
                f"{name} must have the same length as optimizer.param_groups. {name} has "
                f"{len(value)} values, param_groups has {groups}."
            )
        return list(value)
    return [value] * groups


__all__ = ["LRScheduler", "param_values", "per_group"]
