"""Weight averaging (PyTorch's `torch.optim.swa_utils`): `AveragedModel` keeps a running
(stochastic-weight or exponential) average of a model's parameters, `SWALR` anneals the rate to a
constant for it, and `update_bn` recomputes batch-norm statistics for the averaged weights."""

from __future__ import annotations

import copy
import itertools
import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Literal

import numpy as np

from ..core.tensor import Tensor
from ..devices import Device, move_array
from ..grad_mode import no_grad
from ..nn.modules.batchnorm import _BatchNorm
from ..nn.modules.module import Module
from .adam import _lerp_
from .optimizer import Optimizer
from .schedules.base import LRScheduler, per_group

AvgFn = Callable[[Tensor, Tensor, Any], Tensor]
MultiAvgFn = Callable[[Sequence[Tensor], Sequence[Tensor], Any], None]


def _is_inexact(tensor: Tensor) -> bool:
    return tensor._data.dtype.kind in "fc"


def _assign(target: Tensor, value: Any) -> None:
    """Write `value` (an array or tensor) into `target` in place, cast to its dtype (integers
    truncate, as PyTorch's `copy_` into an integer tensor does)."""
    data = value._data if isinstance(value, Tensor) else value
    target._data[...] = data.astype(target._data.dtype, copy=False)
    target._bump_version()


_INTEGER_ADDCDIV_MESSAGE = (
    "Integer division with addcdiv is no longer supported, and in a future  release addcdiv "
    "will perform a true division of tensor1 and tensor2. The historic addcdiv behavior can be "
    "implemented as (input + value * torch.trunc(tensor1 / tensor2)).to(input.dtype) for integer "
    "inputs and as (input + value * tensor1 / tensor2) for float inputs. The future addcdiv "
    "behavior is just the latter implementation: (input + value * tensor1 / tensor2), for all "
    "dtypes."
)


def get_ema_multi_avg_fn(decay: float = 0.999) -> MultiAvgFn:
    """An in-place exponential moving average over lists: ema = decay ema + (1 - decay) current."""
    if decay < 0.0 or decay > 1.0:
        raise ValueError(
            f"Invalid decay value {decay} provided. Please provide a value in [0,1] range."
        )

    def ema_update(
        ema_param_list: Sequence[Tensor], current_param_list: Sequence[Tensor], _: Any
    ) -> None:
        for ema, current in zip(ema_param_list, current_param_list, strict=True):
            if _is_inexact(ema):
                _lerp_(ema._data, current._data, 1 - decay)
                ema._bump_version()
            else:
                _assign(ema, ema._data * decay + current._data * (1 - decay))

    return ema_update


def get_swa_multi_avg_fn() -> MultiAvgFn:
    """An in-place equal-weight running average over lists, given how many are averaged so far."""

    def swa_update(
        averaged_param_list: Sequence[Tensor],
        current_param_list: Sequence[Tensor],
        num_averaged: Any,
    ) -> None:
        weight = 1 / (float(num_averaged) + 1)
        if isinstance(num_averaged, Tensor):
            # PyTorch divides by the integer counter tensor: a default-dtype (float32) weight.
            weight = float(np.float32(weight))
        for averaged, current in zip(averaged_param_list, current_param_list, strict=True):
            if _is_inexact(averaged):
                _lerp_(averaged._data, current._data, weight)
                averaged._bump_version()
            elif isinstance(num_averaged, Tensor):
                raise RuntimeError(_INTEGER_ADDCDIV_MESSAGE)
            else:
                _assign(averaged, averaged._data + (current._data - averaged._data) * weight)

    return swa_update


def get_ema_avg_fn(decay: float = 0.999) -> AvgFn:
    """An exponential moving average of one tensor: decay ema + (1 - decay) current."""
    if decay < 0.0 or decay > 1.0:
        raise ValueError(
            f"Invalid decay value {decay} provided. Please provide a value in [0,1] range."
        )

    def ema_update(ema_param: Tensor, current_param: Tensor, num_averaged: Any) -> Tensor:
        with no_grad():
            return decay * ema_param + (1 - decay) * current_param

    return ema_update


def get_swa_avg_fn() -> AvgFn:
    """An equal-weight running average of one tensor, given how many are averaged so far."""

    def swa_update(averaged_param: Tensor, current_param: Tensor, num_averaged: Any) -> Tensor:
        with no_grad():
            return averaged_param + (current_param - averaged_param) / (float(num_averaged) + 1)

    return swa_update


class AveragedModel(Module):
    """A copy of `model` whose parameters (and, with `use_buffers`, buffers) are a running
    average of the model's, updated by `update_parameters(model)`.

    `avg_fn(averaged, current, n_averaged)` returns one averaged tensor; `multi_avg_fn(averaged
    list, current list, n_averaged)` updates lists in place; without either the average is
    equal-weight (SWA). Without `use_buffers` the buffers are copied from the model.
    """

    def __init__(
        self,
        model: Module,
        device: str | Device | None = None,
        avg_fn: AvgFn | None = None,
        multi_avg_fn: MultiAvgFn | None = None,
        use_buffers: bool = False,
    ) -> None:
        super().__init__()
        if avg_fn is not None and multi_avg_fn is not None:
            raise AssertionError("Only one of avg_fn and multi_avg_fn should be provided")
        self.module = copy.deepcopy(model)
        if device is not None:
            self.module = self.module.to(device)
        counter = Tensor._wrap(np.zeros((), np.int64), Device("cpu"))
        if device is not None:
            counter = counter.to(device)
        self.register_buffer("n_averaged", counter)
        self.avg_fn = avg_fn
        self.multi_avg_fn = multi_avg_fn
        self.use_buffers = use_buffers

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        """Run the averaged copy of the model."""
        return self.module(*args, **kwargs)

    def update_parameters(self, model: Module) -> None:
        """Fold the model's current parameters (and buffers, with `use_buffers`) into the
        average; the first call copies them."""
        if self.use_buffers:
            ours: Iterable[Tensor] = itertools.chain(
                self.module.parameters(), self.module.buffers()
            )
            theirs: Iterable[Tensor] = itertools.chain(model.parameters(), model.buffers())
        else:
            ours, theirs = self.parameters(), model.parameters()
        n_averaged = int(self.n_averaged._data)
        pairs = []
        with no_grad():
            for averaged, current in zip(ours, theirs, strict=False):
                current = current.detach()
                if current.device is not averaged.device:
                    current = Tensor._wrap(
                        move_array(current._data, current.device, averaged.device),
                        averaged.device,
                    )
                pairs.append((averaged, current))
                if n_averaged == 0:
                    _assign(averaged, current)
            if n_averaged > 0:
                self._average(pairs, n_averaged)
            if not self.use_buffers:
                for ours_b, theirs_b in zip(self.module.buffers(), model.buffers(), strict=True):
                    array = theirs_b._data
                    if theirs_b.device is not ours_b.device:
                        array = move_array(array, theirs_b.device, ours_b.device)
                    _assign(ours_b, array)
        self.n_averaged._data += 1
        self.n_averaged._bump_version()

    def _average(self, pairs: list[tuple[Tensor, Tensor]], n_averaged: int) -> None:
        count = Tensor._wrap(np.asarray(n_averaged, np.int64), Device("cpu"))
        if self.multi_avg_fn is None:
            # Without a function, the per-tensor equal-weight average (PyTorch's choice where it
            # has no foreach kernels, the cpu among them).
            avg_fn = self.avg_fn or get_swa_avg_fn()
            for averaged, current in pairs:
                _assign(averaged, avg_fn(averaged.detach(), current, count))
            return
        average = self.multi_avg_fn
        # Grouped by device and dtype, as PyTorch hands its foreach kernels one group at a time.
        groups: dict[tuple[str, str], list[tuple[Tensor, Tensor]]] = {}
        for averaged, current in pairs:
            groups.setdefault((str(averaged.device), str(averaged._data.dtype)), []).append(
                (averaged, current)
            )
        for members in groups.values():
            average([a.detach() for a, _ in members], [c for _, c in members], count)


def update_bn(loader: Iterable[Any], model: Module, device: str | Device | None = None) -> None:
    """Recompute every batch-norm layer's running statistics with one pass over `loader`.

    Each batch is a tensor, or a list/tuple whose first item is the input. The statistics are
    reset and averaged with equal weights (momentum None) over the pass.
    """
    momenta = {}
    for module in model.modules():
        if isinstance(module, _BatchNorm):
            module.reset_running_stats()
            momenta[module] = module.momentum
    if not momenta:
        return
    was_training = model.training
    model.train()
    for module in momenta:
        module.momentum = None
    with no_grad():
        for batch in loader:
            if isinstance(batch, list | tuple):
                batch = batch[0]
            if device is not None:
                batch = batch.to(device)
            model(batch)
    for module, momentum in momenta.items():
        module.momentum = momentum
    model.train(was_training)


class SWALR(LRScheduler):
    """Anneal each group's rate to `swa_lr` over `anneal_epochs` epochs, then hold it."""

    def __init__(
        self,
        optimizer: Optimizer,
        swa_lr: float | list[float],
        anneal_epochs: int = 10,
        anneal_strategy: Literal["cos", "linear"] = "cos",
        last_epoch: int = -1,
    ) -> None:
        for value, group in zip(
            per_group("swa_lr", optimizer, swa_lr), optimizer.param_groups, strict=True
        ):
            group["swa_lr"] = value
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(
                f"anneal_strategy must be one of 'cos' or 'linear', instead got {anneal_strategy}"
            )
        self._set_anneal_func(anneal_strategy)
        if not isinstance(anneal_epochs, int) or anneal_epochs < 0:
            raise ValueError(f"anneal_epochs must be equal or greater than 0, got {anneal_epochs}")
        self.anneal_epochs = anneal_epochs
        super().__init__(optimizer, last_epoch)

    @staticmethod
    def _linear_anneal(t: float) -> float:
        return t

    @staticmethod
    def _cosine_anneal(t: float) -> float:
        return (1 - math.cos(math.pi * t)) / 2

    @staticmethod
    def _get_initial_lr(lr: float, swa_lr: float, alpha: float) -> float:
        if alpha == 1:
            return swa_lr
        return (lr - alpha * swa_lr) / (1 - alpha)

    def _set_anneal_func(self, anneal_strategy: str) -> None:
        self._anneal_strategy = anneal_strategy
        self.anneal_func = self._cosine_anneal if anneal_strategy == "cos" else self._linear_anneal

    def get_lr(self) -> list[float]:
        """Each group's rate, moved from the rate it would have started from toward `swa_lr`."""
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        prev_t = max(0, min(1, (step - 1) / max(1, self.anneal_epochs)))
        prev_alpha = self.anneal_func(prev_t)
        groups = self.optimizer.param_groups
        prev_lrs = [self._get_initial_lr(g["lr"], g["swa_lr"], prev_alpha) for g in groups]
        t = max(0, min(1, step / max(1, self.anneal_epochs)))
        alpha = self.anneal_func(t)
        return [
            g["swa_lr"] * alpha + lr * (1 - alpha) for g, lr in zip(groups, prev_lrs, strict=True)
        ]

    def state_dict(self) -> dict[str, Any]:
        """Every attribute except the optimizer and the annealing function."""
        return {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "anneal_func")}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore attributes saved by `state_dict`."""
        self.__dict__.update(state_dict)
        self._set_anneal_func(self._anneal_strategy)


__all__ = [
    "SWALR",
    "AveragedModel",
    "get_ema_avg_fn",
    "get_ema_multi_avg_fn",
    "get_swa_avg_fn",
    "get_swa_multi_avg_fn",
    "update_bn",
]
