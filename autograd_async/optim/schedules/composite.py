"""Schedules driven by something other than one curve: a chain of schedulers at milestones
(`SequentialLR`), several composed each epoch (`ChainedScheduler`) and a watched metric that stops
improving (`ReduceLROnPlateau`)."""

from __future__ import annotations

import math
import warnings
from bisect import bisect_right
from collections.abc import Sequence
from typing import Any, Literal, SupportsFloat

from ..optimizer import Optimizer
from .base import LRScheduler, param_values


class ReduceLROnPlateau(LRScheduler):
    """Multiply the rate by `factor` when a metric has not improved for `patience` epochs."""

    def __init__(
        self,
        optimizer: Optimizer,
        mode: Literal["min", "max"] = "min",
        factor: float = 0.1,
        patience: int = 10,
        threshold: float = 1e-4,
        threshold_mode: Literal["rel", "abs"] = "rel",
        cooldown: int = 0,
        min_lr: list[float] | float = 0,
        eps: float = 1e-8,
    ) -> None:
        if factor >= 1.0:
            raise ValueError("Factor should be < 1.0.")
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        self.factor = factor
        self.optimizer = optimizer
        groups = len(optimizer.param_groups)
        if isinstance(min_lr, list | tuple):
            if len(min_lr) != groups:
                raise ValueError(f"expected {groups} min_lrs, got {len(min_lr)}")
            self.default_min_lr = None
            self.min_lrs = list(min_lr)
        else:
            self.default_min_lr = min_lr
            self.min_lrs = [min_lr] * groups
        self.patience = patience
        self.cooldown = cooldown
        self.eps = eps
        self.last_epoch = 0
        self._last_lr = param_values(optimizer, "lr")
        self._set_mode(mode, threshold, threshold_mode)
        self.best = self.mode_worse
        self.cooldown_counter = 0
        self.num_bad_epochs = 0

    def _set_mode(self, mode: str, threshold: float, threshold_mode: str) -> None:
        if mode not in ("min", "max"):
            raise ValueError(f"mode {mode} is unknown!")
        if threshold_mode not in ("rel", "abs"):
            raise ValueError(f"threshold mode {threshold_mode} is unknown!")
        self.mode, self.threshold, self.threshold_mode = mode, threshold, threshold_mode
        self.mode_worse = math.inf if mode == "min" else -math.inf

    @property
    def in_cooldown(self) -> bool:
        """Whether the scheduler is still waiting after its latest reduction."""
        return self.cooldown_counter > 0

    def is_better(self, current: float, best: float) -> bool:
        """Whether `current` improves on `best` by more than the threshold."""
        if self.threshold_mode == "rel":
            if self.mode == "min":
                return current < best * (1.0 - self.threshold)
            return current > best * (self.threshold + 1.0)
        if self.mode == "min":
            return current < best - self.threshold
        return current > best + self.threshold

    def step(self, metrics: SupportsFloat, epoch: int | None = None) -> None:  # type: ignore[override]
        """Record one epoch's metric; reduce the rates once patience runs out."""
        current = float(metrics)
        if epoch is None:
            epoch = self.last_epoch + 1
        else:
            warnings.warn(
                "The epoch parameter in `scheduler.step()` is deprecated; call step() without it",
                UserWarning,
                stacklevel=2,
            )
        self.last_epoch = epoch
        if self.is_better(current, self.best):
            self.best = current
            self.num_bad_epochs = 0
        else:
            self.num_bad_epochs += 1
        if self.in_cooldown:
            self.cooldown_counter -= 1
            self.num_bad_epochs = 0
        if self.num_bad_epochs > self.patience:
            self._reduce_lr()
            self.cooldown_counter = self.cooldown
            self.num_bad_epochs = 0
        self._last_lr = param_values(self.optimizer, "lr")

    def _reduce_lr(self) -> None:
        groups = self.optimizer.param_groups
        if len(groups) != len(self.min_lrs):
            if self.default_min_lr is None:
                raise RuntimeError(
                    f"The number of param groups in the `optimizer` ({len(groups)}) differs "
                    f"from when `ReduceLROnPlateau` was initialized ({len(self.min_lrs)}), "
                    "usually due to a new param group being added to the optimizer. Please "
                    "modify the `min_lrs` field to match the length of the `optimizer` param "
                    "groups."
                )
            self.min_lrs = [self.default_min_lr] * len(groups)
        for group, min_lr in zip(groups, self.min_lrs, strict=True):
            old = float(group["lr"])
            new = max(old * self.factor, min_lr)
            if old - new > self.eps:
                group["lr"] = new

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore attributes saved by `state_dict`."""
        self.__dict__.update(state_dict)
        self._set_mode(self.mode, self.threshold, self.threshold_mode)


class SequentialLR(LRScheduler):
    """Run `schedulers[i]` from `milestones[i - 1]` on; each takes over from a fresh start."""

    def __init__(
        self,
        optimizer: Optimizer,
        schedulers: list[LRScheduler],
        milestones: list[int],
        last_epoch: int = -1,
    ) -> None:
        name = type(self).__name__
        if len(schedulers) < 1:
            raise ValueError(f"{name} expects at least one scheduler, but got no scheduler.")
        _check_members(name, optimizer, schedulers)
        if len(milestones) != len(schedulers) - 1:
            raise ValueError(
                "Sequential Schedulers expects number of schedulers provided to be one more than "
                f"the number of milestone points, but got number of schedulers {len(schedulers)} "
                f"and the number of milestones to be equal to {len(milestones)}"
            )
        self._schedulers = schedulers
        self._milestones = milestones
        self.last_epoch = last_epoch + 1
        self.optimizer = optimizer
        # Each scheduler took its own first step when it was made; undo those, then let the
        # first one in charge take epoch 0 from the initial rates.
        for group in optimizer.param_groups:
            group["lr"] = group["initial_lr"]
        for scheduler in _leaves(schedulers):
            scheduler.last_epoch -= 1
        first = self._schedulers[bisect_right(milestones, 0)]
        first._initial_step()
        self._last_lr = first.get_last_lr()

    def step(self) -> None:  # type: ignore[override]
        """Advance one epoch in the scheduler in charge; a new one starts at its epoch 0."""
        self.last_epoch += 1
        index = bisect_right(self._milestones, self.last_epoch)
        scheduler = self._schedulers[index]
        if index > 0 and self._milestones[index - 1] == self.last_epoch:
            scheduler._update_lr(0)
        else:
            scheduler.step()
        self._last_lr = scheduler.get_last_lr()

    def state_dict(self) -> dict[str, Any]:
        """Attributes, with each wrapped scheduler's own state dict."""
        state = {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "_schedulers")}
        state["_schedulers"] = [s.state_dict() for s in self._schedulers]
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore attributes and every wrapped scheduler's state."""
        state = dict(state_dict)
        saved = state.pop("_schedulers")
        self.__dict__.update(state)
        for scheduler, entry in zip(self._schedulers, saved, strict=True):
            scheduler.load_state_dict(entry)


class ChainedScheduler(LRScheduler):
    """Step every scheduler of a list each epoch, their changes to the rates composed in order."""

    def __init__(
        self, schedulers: Sequence[LRScheduler], optimizer: Optimizer | None = None
    ) -> None:
        name = type(self).__name__
        if len(schedulers) < 1:
            raise ValueError(
                f"{name} expects at least one scheduler to be chained, but got no scheduler."
            )
        optimizer = optimizer or schedulers[0].optimizer
        _check_members(name, optimizer, schedulers)
        self._schedulers = schedulers
        self.optimizer = optimizer
        self._last_lr = param_values(self._schedulers[-1].optimizer, "lr")

    def step(self) -> None:  # type: ignore[override]
        """Step each scheduler once, in order."""
        for scheduler in self._schedulers:
            scheduler.step()
        self._last_lr = param_values(self._schedulers[-1].optimizer, "lr")

    def state_dict(self) -> dict[str, Any]:
        """Attributes, with each wrapped scheduler's own state dict."""
        state = {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "_schedulers")}
        state["_schedulers"] = [s.state_dict() for s in self._schedulers]
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore attributes and every wrapped scheduler's state."""
        state = dict(state_dict)
        saved = state.pop("_schedulers")
        self.__dict__.update(state)
        for scheduler, entry in zip(self._schedulers, saved, strict=True):
            scheduler.load_state_dict(entry)


def _check_members(name: str, optimizer: Optimizer, schedulers: Sequence[Any]) -> None:
    """PyTorch's checks of the schedulers a composite drives: all of one optimizer, none a
    ReduceLROnPlateau (whose step takes a metric)."""
    for i, scheduler in enumerate(schedulers):
        if not hasattr(scheduler, "optimizer"):
            raise TypeError(f"{name} at index {i} should have `optimizer` as its attribute.")
        if isinstance(scheduler, ReduceLROnPlateau):
            raise ValueError(
                f"{name} does not support `ReduceLROnPlateau` scheduler as it requires "
                "additional kwargs to be specified when calling `step`, but got one at "
                f"index {i} in the given schedulers sequence."
            )
        if scheduler.optimizer is not optimizer:
            raise ValueError(
                f"{name} expects all schedulers to belong to the same optimizer, but got "
                f"scheduler {type(scheduler).__name__} at index {i} has "
                f"{scheduler.optimizer}, which is different from {type(optimizer).__name__}."
            )


def _leaves(schedulers: list[Any]) -> list[Any]:
    """The schedulers that own an epoch counter, nested SequentialLRs looked through."""
    found, pending = [], list(reversed(schedulers))
    while pending:
        scheduler = pending.pop()
        if hasattr(scheduler, "_schedulers"):
            pending.extend(reversed(scheduler._schedulers))
        elif hasattr(scheduler, "last_epoch"):
            found.append(scheduler)
    return found


__all__ = ["ChainedScheduler", "ReduceLROnPlateau", "SequentialLR"]
