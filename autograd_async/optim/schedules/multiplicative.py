"""Schedules that multiply the rate: by epoch (`StepLR`, `MultiStepLR`, `ExponentialLR`), by a
user's function (`LambdaLR`, `MultiplicativeLR`) or over a warm-up (`ConstantLR`, `LinearLR`)."""

from __future__ import annotations

import types
from bisect import bisect_right
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any

from ..optimizer import Optimizer
from .base import LRScheduler, param_values


class StepLR(LRScheduler):
    """Multiply the learning rate by `gamma` every `step_size` epochs."""

    def __init__(
        self, optimizer: Optimizer, step_size: int, gamma: float = 0.1, last_epoch: int = -1
    ) -> None:
        self.step_size = step_size
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        """The groups' rates, times gamma on a non-zero multiple of step_size."""
        groups = self.optimizer.param_groups
        if self.last_epoch == 0 or self.last_epoch % self.step_size != 0:
            return [group["lr"] for group in groups]
        return [group["lr"] * self.gamma for group in groups]

    def _get_closed_form_lr(self) -> list[float]:
        return [
            base_lr * self.gamma ** (self.last_epoch // self.step_size) for base_lr in self.base_lrs
        ]


class MultiStepLR(LRScheduler):
    """Multiply the learning rate by `gamma` at each milestone epoch (repeats multiply again)."""

    def __init__(
        self,
        optimizer: Optimizer,
        milestones: Iterable[int],
        gamma: float = 0.1,
        last_epoch: int = -1,
    ) -> None:
        self.milestones = Counter(milestones)
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        """The groups' rates, times gamma once per milestone at this epoch."""
        if self.last_epoch not in self.milestones:
            return param_values(self.optimizer, "lr")
        factor = self.gamma ** self.milestones[self.last_epoch]
        return [group["lr"] * factor for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> list[float]:
        # (a Counter, or the plain dict a checkpoint gives back)
        milestones = sorted(Counter(self.milestones).elements())
        passed = bisect_right(milestones, self.last_epoch)
        return [base_lr * self.gamma**passed for base_lr in self.base_lrs]


class ExponentialLR(LRScheduler):
    """Multiply the learning rate by `gamma` every epoch."""

    def __init__(self, optimizer: Optimizer, gamma: float, last_epoch: int = -1) -> None:
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        """The groups' rates times gamma (unchanged at construction)."""
        if self._is_initial:
            return param_values(self.optimizer, "lr")
        return [group["lr"] * self.gamma for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> list[float]:
        return [base_lr * self.gamma**self.last_epoch for base_lr in self.base_lrs]


class _FunctionSchedule(LRScheduler):
    """A schedule driven by one function of the epoch per parameter group."""

    def __init__(
        self,
        optimizer: Optimizer,
        lr_lambda: Callable[[int], float] | list[Callable[[int], float]],
        last_epoch: int = -1,
    ) -> None:
        groups = len(optimizer.param_groups)
        if isinstance(lr_lambda, list | tuple):
            if len(lr_lambda) != groups:
                raise ValueError(f"Expected {groups} lr_lambdas, but got {len(lr_lambda)}")
            self.lr_lambdas = list(lr_lambda)
        else:
            self.lr_lambdas = [lr_lambda] * groups
        for fn in self.lr_lambdas:
            if not callable(fn):
                raise TypeError(f"lr_lambda should be a function, but got {type(fn).__name__}")
        super().__init__(optimizer, last_epoch)

    def state_dict(self) -> dict[str, Any]:
        """Attributes, with each callable object's own attributes in place of the callable.

        Plain functions and lambdas are not saved (as in PyTorch); a callable object's state is.
        """
        state = {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "lr_lambdas")}
        state["lr_lambdas"] = [
            None if isinstance(fn, types.FunctionType) else dict(fn.__dict__)
            for fn in self.lr_lambdas
        ]
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore attributes and the callable objects' state saved by `state_dict`."""
        state = dict(state_dict)
        saved_lambdas = state.pop("lr_lambdas")
        self.__dict__.update(state)
        for fn, saved in zip(self.lr_lambdas, saved_lambdas, strict=True):
            if saved is not None:
                fn.__dict__.update(saved)


class LambdaLR(_FunctionSchedule):
    """The initial learning rate times `lr_lambda(epoch)`."""

    def get_lr(self) -> list[float]:
        """Each group's initial rate times its function of the epoch."""
        return [
            base_lr * fn(self.last_epoch)
            for fn, base_lr in zip(self.lr_lambdas, self.base_lrs, strict=True)
        ]


class MultiplicativeLR(_FunctionSchedule):
    """Multiply the learning rate by `lr_lambda(epoch)` every epoch."""

    def get_lr(self) -> list[float]:
        """Each group's current rate times its function of the epoch (unchanged at construction)."""
        if self._is_initial:
            return param_values(self.optimizer, "lr")
        return [
            group["lr"] * fn(self.last_epoch)
            for fn, group in zip(self.lr_lambdas, self.optimizer.param_groups, strict=True)
        ]


class ConstantLR(LRScheduler):
    """The learning rate times `factor` until epoch `total_iters`, then the rate itself."""

    def __init__(
        self,
        optimizer: Optimizer,
        factor: float = 1.0 / 3,
        total_iters: int = 5,
        last_epoch: int = -1,
    ) -> None:
        if factor > 1.0 or factor < 0:
            raise ValueError("Constant multiplicative factor expected to be between 0 and 1.")
        self.factor = factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        """Scale down at epoch 0, back up at `total_iters`, unchanged otherwise."""
        groups = self.optimizer.param_groups
        if self.last_epoch == 0:
            return [group["lr"] * self.factor for group in groups]
        if self.last_epoch != self.total_iters:
            return param_values(self.optimizer, "lr")
        return [group["lr"] * (1.0 / self.factor) for group in groups]

    def _get_closed_form_lr(self) -> list[float]:
        done = self.last_epoch >= self.total_iters
        return [base_lr * (self.factor + done * (1 - self.factor)) for base_lr in self.base_lrs]


class LinearLR(LRScheduler):
    """The factor of the learning rate goes linearly from `start_factor` to `end_factor`."""

    def __init__(
        self,
        optimizer: Optimizer,
        start_factor: float = 1.0 / 3,
        end_factor: float = 1.0,
        total_iters: int = 5,
        last_epoch: int = -1,
    ) -> None:
        if start_factor > 1.0 or start_factor <= 0:
            raise ValueError(
                "Starting multiplicative factor expected to be greater than 0 and less or "
                "equal to 1."
            )
        if end_factor > 1.0 or end_factor < 0:
            raise ValueError("Ending multiplicative factor expected to be between 0 and 1.")
        self.start_factor = start_factor
        self.end_factor = end_factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        """PyTorch's recursive form: each epoch's factor over the previous epoch's."""
        groups = self.optimizer.param_groups
        if self.last_epoch == 0:
            return [group["lr"] * self.start_factor for group in groups]
        if self._is_initial or self.last_epoch > self.total_iters:
            return param_values(self.optimizer, "lr")
        span = self.end_factor - self.start_factor
        ratio = 1.0 + span / (self.total_iters * self.start_factor + (self.last_epoch - 1) * span)
        return [group["lr"] * ratio for group in groups]

    def _get_closed_form_lr(self) -> list[float]:
        span = self.end_factor - self.start_factor
        done = min(self.total_iters, self.last_epoch) / self.total_iters
        return [base_lr * (self.start_factor + span * done) for base_lr in self.base_lrs]


class PolynomialLR(LRScheduler):
    """Decay the learning rate by a polynomial of power `power` to zero at `total_iters`."""

    def __init__(
        self,
        optimizer: Optimizer,
        total_iters: int = 5,
        power: float = 1.0,
        last_epoch: int = -1,
    ) -> None:
        self.total_iters = total_iters
        self.power = power
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        """PyTorch's recursive form: each epoch's factor over the previous epoch's."""
        if self._is_initial or self.last_epoch > self.total_iters:
            return param_values(self.optimizer, "lr")
        factor = (
            (1.0 - self.last_epoch / self.total_iters)
            / (1.0 - (self.last_epoch - 1) / self.total_iters)
        ) ** self.power
        return [group["lr"] * factor for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> list[float]:
        done = min(self.total_iters, self.last_epoch) / self.total_iters
        return [base_lr * (1.0 - done) ** self.power for base_lr in self.base_lrs]


__all__ = [
    "ConstantLR",
    "ExponentialLR",
    "LambdaLR",
    "LinearLR",
    "MultiStepLR",
    "MultiplicativeLR",
    "PolynomialLR",
    "StepLR",
]
