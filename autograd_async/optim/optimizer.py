"""`Optimizer`: parameter groups, per-parameter state, `zero_grad` and state dicts.

Subclasses implement `step`; their updates work on each parameter's own arrays (NumPy or CuPy, on
its device) in place, outside the graph, and bump the parameter's version afterwards.
"""

from __future__ import annotations

import copy
from collections import defaultdict
from collections.abc import Callable, Iterable
from typing import Any

from ..core.tensor import Tensor
from ..devices import array_module, launching, move_array
from ..grad_mode import enable_grad


class _RequiredParameter:
    """The marker of a hyperparameter every group must give (PyTorch's `required`)."""

    def __repr__(self) -> str:
        return "<required parameter>"


required: Any = _RequiredParameter()

_SET_MESSAGE = (
    "optimizer parameters need to be organized in ordered collections, but the ordering of "
    "tensors in sets will change between runs. Please use a list instead."
)


class Optimizer:
    """Base class: holds `param_groups` (dicts with 'params' and hyperparameters) and `state`."""

    def __init__(self, params: Iterable[Any], defaults: dict[str, Any]) -> None:
        self.defaults = defaults
        self.state: defaultdict[Tensor, dict[str, Any]] = defaultdict(dict)
        self.param_groups: list[dict[str, Any]] = []
        if isinstance(params, Tensor):
            raise TypeError(
                "params argument given to the optimizer should be an iterable of Tensors or "
                f"dicts, but got {type(params).__name__}"
            )
        if isinstance(params, set):
            raise TypeError(_SET_MESSAGE)
        groups = list(params)
        if not groups:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for group in groups:
            self.add_param_group(group)

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Add a group of parameters with its own hyperparameters (defaults fill the rest)."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group).__name__}")
        group = dict(param_group)
        params = group["params"]
        if isinstance(params, Tensor):
            group["params"] = [params]
        elif isinstance(params, set):
            raise TypeError(_SET_MESSAGE)
        else:
            group["params"] = list(params)
        for param in group["params"]:
            if not isinstance(param, Tensor):
                raise TypeError(
                    f"optimizer can only optimize Tensors, but one of the params is "
                    f"{type(param).__name__}"
                )
            if not param.is_leaf:
                raise ValueError("can't optimize a non-leaf Tensor")
        for name, default in self.defaults.items():
            if default is required and name not in group:
                raise ValueError(
                    f"parameter group didn't specify a value of required optimization "
                    f"parameter {name}"
                )
            group.setdefault(name, default)
        if len({id(p) for p in group["params"]}) != len(group["params"]):
            raise ValueError("optimizer contains a parameter group with duplicate parameters")
        existing = {id(p) for g in self.param_groups for p in g["params"]}
        if existing & {id(p) for p in group["params"]}:
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(group)

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients of all optimized parameters: to None (default), or to zeros."""
        for group in self.param_groups:
            for param in group["params"]:
                reset_grad(param, set_to_none)

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Update the parameters once; `closure` re-evaluates the loss and returns it."""
        raise NotImplementedError

    def _evaluate(self, closure: Callable[[], Any] | None) -> Any:
        if closure is None:
            return None
        with enable_grad():
            return closure()

    # ------------------------------------------------------------- state dict
    def state_dict(self) -> dict[str, Any]:
        """{'state': {index: {...}}, 'param_groups': [{..., 'params': [indices]}]}, by reference."""
        index: dict[int, int] = {}
        groups = []
        for group in self.param_groups:
            packed = {k: v for k, v in group.items() if k != "params"}
            for p in group["params"]:
                index.setdefault(id(p), len(index))
            packed["params"] = [index[id(p)] for p in group["params"]]
            groups.append(packed)
        state = {index[id(p)]: value for p, value in self.state.items() if id(p) in index}
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore state and hyperparameters saved by `state_dict` (state copied to each param)."""
        if not isinstance(state_dict, dict) or not {"state", "param_groups"} <= set(state_dict):
            raise ValueError("optimizer state_dict must be a dict with 'state' and 'param_groups'")
        saved_groups = state_dict["param_groups"]
        if len(saved_groups) != len(self.param_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        for i, (ours, saved) in enumerate(zip(self.param_groups, saved_groups, strict=True)):
            if len(ours["params"]) != len(saved["params"]):
                raise ValueError(
                    f"loaded state dict contains a parameter group that doesn't match the size of "
                    f"optimizer's group: group {i} has {len(ours['params'])} parameters, the "
                    f"saved one {len(saved['params'])}"
                )
        by_index = {
            saved_id: p
            for ours, saved in zip(self.param_groups, saved_groups, strict=True)
            for saved_id, p in zip(saved["params"], ours["params"], strict=True)
        }
        state: defaultdict[Tensor, dict[str, Any]] = defaultdict(dict)
        for key, value in state_dict["state"].items():
            param = by_index.get(int(key))
            if param is None:
                continue
            state[param] = {
                name: _state_value_for(param, name, item) for name, item in value.items()
            }
        groups = []
        for ours, saved in zip(self.param_groups, saved_groups, strict=True):
            group = copy.deepcopy({k: v for k, v in saved.items() if k != "params"})
            group["params"] = ours["params"]
            groups.append(group)
        self.state = state
        self.param_groups = groups

    def __repr__(self) -> str:
        text = type(self).__name__ + " ("
        for i, group in enumerate(self.param_groups):
            text += f"\nParameter Group {i}"
            for key in sorted(group):
                if key != "params":
                    text += f"\n    {key}: {group[key]}"
        return text + "\n)"


def reset_grad(param: Tensor, set_to_none: bool = True) -> None:
    """Drop a tensor's `.grad`, or zero it (into a fresh array: the old one may be shared)."""
    grad = param.grad
    if grad is None:
        return
    if set_to_none:
        param.grad = None
        return
    if grad.grad_fn is not None:
        grad = grad.detach()
        param.grad = grad
    with launching(grad.device, "zero_grad"):
        grad._data = array_module(grad.device).zeros_like(grad._data)
    grad._bump_version()


def grad_array(param: Tensor) -> Any:
    """The parameter's gradient as an array on its device (checked), or None without one."""
    grad = param.grad
    if grad is None:
        return None
    if grad.device is not param.device:
        raise RuntimeError(
            f"the gradient of a parameter on {param.device} is on {grad.device}; "
            "move the gradient to the parameter's device"
        )
    data = grad._data
    if data.shape != param._data.shape:  # both arrays' shapes are tuples
        raise RuntimeError(
            f"the gradient's shape {tuple(grad.shape)} does not match the parameter's "
            f"{tuple(param.shape)}"
        )
    return data


# State entries that are counters kept as float32 cpu scalars, whatever the parameter's device.
_SCALAR_STATE = frozenset({"step", "mu_product"})


def _state_value_for(param: Tensor, name: str, value: Any) -> Any:
    """A private copy of a saved state value, on the parameter's device and (if float) dtype."""
    if not isinstance(value, Tensor):
        return copy.deepcopy(value)
    data = value._data
    if name not in _SCALAR_STATE:
        if value.device is not param.device:
            data = move_array(data, value.device, param.device)
        if data.dtype.kind in "fc" and data.dtype != param.dtype:
            data = data.astype(param.dtype)
        return Tensor._wrap(data.copy(), param.device)
    return Tensor._wrap(data.copy(), value.device)


__all__ = ["Optimizer", "grad_array", "required", "reset_grad"]
