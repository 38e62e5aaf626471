"""`swap_in_optimizer_params_and_state`: run an optimizer on other parameter tensors and a
state dict's state for the length of a `with` block, then put its own back (PyTorch's)."""

from __future__ import annotations

import contextlib
from collections import defaultdict
from collections.abc import Iterator
from typing import Any, NamedTuple

from ..core.tensor import Tensor
from .optimizer import Optimizer

_NAME = "swap_in_optimizer_params_and_state"


class _GroupSwapIn(NamedTuple):
    """One live group, the saved group (hyperparameters, packed ids) and the tensors to use."""

    live_group: dict[str, Any]
    swapin_group: dict[str, Any]
    swapin_params: list[Tensor]


def _checked_state(state: Any) -> dict[Any, Any]:
    if not isinstance(state, dict):
        raise RuntimeError(
            f"{_NAME} requires swapin_optim_state['state'] to be a dict mapping packed parameter "
            f"ids to per-param state dicts, got {type(state).__name__}."
        )
    if any(isinstance(k, Tensor) for k in state):
        raise RuntimeError(
            f"{_NAME} requires optimizer.state_dict()-style state keyed by packed parameter ids."
        )
    if any(isinstance(k, int) and not isinstance(v, dict) for k, v in state.items()):
        raise RuntimeError(
            f"{_NAME} requires per-parameter optimizer state entries to be dictionaries."
        )
    return state


def _checked_group(index: int, group: dict[str, Any], swapin_group: Any) -> list[int]:
    if not isinstance(swapin_group, dict):
        raise RuntimeError(f"{_NAME} requires each optimizer param group to be a dictionary.")
    ids = swapin_group.get("params")
    if not isinstance(ids, list) or not all(isinstance(i, int) for i in ids):
        raise RuntimeError(
            f"{_NAME} requires optimizer.state_dict()-style param_groups[*]['params'] entries "
            "keyed by packed parameter ids."
        )
    if len(group["params"]) != len(ids):
        raise RuntimeError(
            f"swapin_optim_state param group {index} has a different number of params than "
            "the live optimizer param group."
        )
    swapin_only = [k for k in swapin_group if k not in group]
    live_only = [k for k in group if k not in swapin_group]
    if swapin_only or live_only:
        raise RuntimeError(
            f"{_NAME} requires optimizer.state_dict()-style param group keys to exactly match "
            f"the live optimizer group keys for group {index}. Keys only in swap-in: "
            f"{swapin_only}. Keys only in live: {live_only}."
        )
    return ids


def _prepare(
    optimizer: Optimizer, parameters: dict[str, Tensor], optim_state: dict[str, Any]
) -> tuple[dict[Any, Any], list[_GroupSwapIn]]:
    if not optimizer.state:
        raise RuntimeError(f"{_NAME} requires initialized optimizer state.")
    if not isinstance(optim_state, dict):
        raise RuntimeError(f"{_NAME} requires a DCP-style optimizer state_dict.")
    state = _checked_state(optim_state.get("state"))
    groups = optim_state.get("param_groups")
    if not isinstance(groups, list):
        raise RuntimeError(
            f"{_NAME} requires swapin_optim_state['param_groups'] to be a list of param-group "
            f"dicts, got {type(groups).__name__}."
        )
    if len(groups) != len(optimizer.param_groups):
        raise RuntimeError(
            "swapin_optim_state has a different number of parameter groups than the live optimizer."
        )
    flat = list(parameters.values())
    offset, seen, infos = 0, set(), []
    for index, (group, swapin_group) in enumerate(zip(optimizer.param_groups, groups, strict=True)):
        ids = _checked_group(index, group, swapin_group)
        seen.update(ids)
        if offset + len(ids) > len(flat):
            raise RuntimeError(
                f"{_NAME} requires the explicit parameter state to match "
                "optimizer.param_groups ordering."
            )
        infos.append(_GroupSwapIn(group, swapin_group, flat[offset : offset + len(ids)]))
        offset += len(ids)
    extra = [k for k in state if k not in seen]
    if extra:
        raise RuntimeError(
            f"{_NAME} requires swapin_optim_state['state'] to be keyed only by packed parameter "
            f"ids from param_groups[*]['params']; got extra keys {extra!r}."
        )
    return state, infos


@contextlib.contextmanager
def swap_in_optimizer_params_and_state(
    optimizer: Optimizer,
    swapin_parameters: dict[str, Tensor],
    swapin_optim_state: dict[str, Any],
) -> Iterator[None]:
    """Inside the block, `optimizer` steps `swapin_parameters` (in its groups' order) with the
    state and hyperparameters of `swapin_optim_state` (an `optimizer.state_dict()`-shaped dict);
    in-place updates reach those tensors and state tensors, and the live optimizer is restored
    on exit."""
    state, infos = _prepare(optimizer, swapin_parameters, swapin_optim_state)
    original_state = optimizer.state
    snapshots = [dict(g) for g in optimizer.param_groups]
    try:
        swapped: defaultdict[Tensor, Any] = defaultdict(dict)
        for info in infos:
            info.live_group["params"] = info.swapin_params
            for key, value in info.swapin_group.items():
                if key != "params":
                    info.live_group[key] = value
            for param, param_id in zip(
                info.swapin_params, info.swapin_group["params"], strict=True
            ):
                swapped[param] = dict(state.get(param_id, {}))
        optimizer.state = swapped
        yield
    finally:
        for group, snapshot in zip(optimizer.param_groups, snapshots, strict=True):
            group.clear()
            group.update(snapshot)
        optimizer.state = original_state


__all__ = ["swap_in_optimizer_params_and_state"]
