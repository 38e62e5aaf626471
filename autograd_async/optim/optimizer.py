"""`Optimizer`: parameter groups, per-parameter state, `zero_grad`, state dicts and hooks.

Subclasses implement `step`; their updates work on each parameter's own arrays (NumPy or CuPy, on
its device) in place, outside the graph, and bump the parameter's version afterwards. Every
subclass's `step` is wrapped once, when the class is defined, so that the step pre- and post-hooks
(the optimizer's own and the global ones) run around it, as PyTorch's patched `step` does.
"""

from __future__ import annotations

import copy
import functools
import warnings
from collections import defaultdict
from collections.abc import Callable, Iterable
from typing import Any

from ..core.graph import RemovableHandle
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


class _GlobalStepHooks:
    """The hooks every optimizer's step runs (PyTorch's `register_optimizer_step_*_hook`).

    Process-wide by definition, as in PyTorch: a hook registered here watches every optimizer.
    """

    def __init__(self) -> None:
        self.pre: list[Callable] = []
        self.post: list[Callable] = []


_GLOBAL_HOOKS = _GlobalStepHooks()


def register_optimizer_step_pre_hook(hook: Callable) -> RemovableHandle:
    """Run `hook(optimizer, args, kwargs)` before every optimizer's step, for all optimizers."""
    _GLOBAL_HOOKS.pre.append(hook)
    return RemovableHandle(_GLOBAL_HOOKS.pre, hook)


def register_optimizer_step_post_hook(hook: Callable) -> RemovableHandle:
    """Run `hook(optimizer, args, kwargs)` after every optimizer's step, for all optimizers."""
    _GLOBAL_HOOKS.post.append(hook)
    return RemovableHandle(_GLOBAL_HOOKS.post, hook)


def _with_step_hooks(step: Callable) -> Callable:
    """`step` wrapped to run the step pre-hooks before it and the post-hooks after it.

    A step that calls its parent's (also wrapped) runs the hooks once: the outer call owns them.
    """

    @functools.wraps(step)
    def hooked_step(self: Optimizer, *args: Any, **kwargs: Any) -> Any:
        if self.__dict__.get("_running_step_hooks"):
            return step(self, *args, **kwargs)
        self._running_step_hooks = True
        # Read by the schedulers, which warn when stepped before their optimizer (as PyTorch's).
        self._opt_called = True
        try:
            for hook in [*_GLOBAL_HOOKS.pre, *self._step_pre_hooks]:
                result = hook(self, args, kwargs)
                if result is None:
                    continue
                if not (isinstance(result, tuple) and len(result) == 2):
                    raise RuntimeError(
                        f"{step} must return None or a tuple of (new_args, new_kwargs), but got "
                        f"{result}."
                    )
                args, kwargs = result
            out = step(self, *args, **kwargs)
            for hook in [*self._step_post_hooks, *_GLOBAL_HOOKS.post]:
                hook(self, args, kwargs)
            return out
        finally:
            self._running_step_hooks = False

    hooked_step.hooked = True  # type: ignore[attr-defined]
    return hooked_step


class Optimizer:
    """Base class: holds `param_groups` (dicts with 'params' and hyperparameters) and `state`."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        step = cls.__dict__.get("step")
        if step is not None and not getattr(step, "hooked", False):
            cls.step = _with_step_hooks(step)  # type: ignore[method-assign]

    # PyTorch's name for the wrapper that runs the step hooks around a step function.
    profile_hook_step = staticmethod(_with_step_hooks)
    # Set by the first step (see _with_step_hooks); unset until then.
    _running_step_hooks: bool
    _opt_called: bool

    def __init__(self, params: Iterable[Any], defaults: dict[str, Any]) -> None:
        self.defaults = defaults
        self._step_pre_hooks: list[Callable] = []
        self._step_post_hooks: list[Callable] = []
        self._state_dict_pre_hooks: list[Callable] = []
        self._state_dict_post_hooks: list[Callable] = []
        self._load_state_dict_pre_hooks: list[Callable] = []
        self._load_state_dict_post_hooks: list[Callable] = []
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
        """Add a group of parameters with its own hyperparameters (defaults fill the rest).

        Parameters may be given as tensors or as (name, tensor) pairs; names go to the group's
        'param_names', as in PyTorch.
        """
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group).__name__}")
        group = dict(param_group)
        params = group["params"]
        if isinstance(params, Tensor):
            params = [params]
        elif isinstance(params, set):
            raise TypeError(_SET_MESSAGE)
        tensors, names = [], []
        for item in params:
            if isinstance(item, tuple):
                names.append(item[0])
                tensors.append(item[1])
            else:
                tensors.append(item)
        group["params"] = tensors
        if names:
            if len(names) != len(tensors):
                raise ValueError(
                    "all optimizer params should be with/without names. Some param names are "
                    "missing"
                )
            group["param_names"] = names
        for param in tensors:
            if not isinstance(param, Tensor):
                raise TypeError(
                    f"optimizer can only optimize Tensors, but one of the params is "
                    f"{type(param).__name__}"
                )
            if not self.defaults.get("differentiable") and not (
                param.is_leaf or param.retains_grad
            ):
                raise ValueError("can't optimize a non-leaf Tensor")
        for name, default in self.defaults.items():
            if default is required and name not in group:
                raise ValueError(
                    f"parameter group didn't specify a value of required optimization "
                    f"parameter {name}"
                )
            group.setdefault(name, default)
        if len({id(p) for p in tensors}) != len(tensors):
            warnings.warn(
                "optimizer contains a parameter group with duplicate parameters; in future, this "
                "will cause an error",
                UserWarning,
                stacklevel=3,
            )
        for other in self.param_groups:
            if ("param_names" in group) != ("param_names" in other):
                kind = "with names" if "param_names" in group else "without names"
                raise ValueError(
                    "all optimizer param groups should be with/without names. "
                    f"cannot add param group {kind} to the optimizer"
                )
        existing = {id(p) for g in self.param_groups for p in g["params"]}
        if existing & {id(p) for p in tensors}:
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

    # ------------------------------------------------------------------ hooks
    def register_step_pre_hook(self, hook: Callable) -> RemovableHandle:
        """Run `hook(optimizer, args, kwargs)` before each step; it may return (args, kwargs)."""
        self._step_pre_hooks.append(hook)
        return RemovableHandle(self._step_pre_hooks, hook)

    def register_step_post_hook(self, hook: Callable) -> RemovableHandle:
        """Run `hook(optimizer, args, kwargs)` after each step."""
        self._step_post_hooks.append(hook)
        return RemovableHandle(self._step_post_hooks, hook)

    def register_state_dict_pre_hook(
        self, hook: Callable, prepend: bool = False
    ) -> RemovableHandle:
        """Run `hook(optimizer)` before `state_dict` builds its dict."""
        return _add_hook(self._state_dict_pre_hooks, hook, prepend)

    def register_state_dict_post_hook(
        self, hook: Callable, prepend: bool = False
    ) -> RemovableHandle:
        """Run `hook(optimizer, state_dict)` after `state_dict`; a dict it returns replaces it."""
        return _add_hook(self._state_dict_post_hooks, hook, prepend)

    def register_load_state_dict_pre_hook(
        self, hook: Callable, prepend: bool = False
    ) -> RemovableHandle:
        """Run `hook(optimizer, state_dict)` before loading; a dict it returns is loaded instead."""
        return _add_hook(self._load_state_dict_pre_hooks, hook, prepend)

    def register_load_state_dict_post_hook(
        self, hook: Callable, prepend: bool = False
    ) -> RemovableHandle:
        """Run `hook(optimizer)` after `load_state_dict`."""
        return _add_hook(self._load_state_dict_post_hooks, hook, prepend)

    # ------------------------------------------------------------- state dict
    def state_dict(self) -> dict[str, Any]:
        """{'state': {index: {...}}, 'param_groups': [{..., 'params': [indices]}]}, by reference."""
        for hook in list(self._state_dict_pre_hooks):
            hook(self)
        index: dict[int, int] = {}
        groups = []
        for group in self.param_groups:
            packed = {k: v for k, v in group.items() if k != "params"}
            for p in group["params"]:
                index.setdefault(id(p), len(index))
            packed["params"] = [index[id(p)] for p in group["params"]]
            groups.append(packed)
        state = {
            index[id(p)] if isinstance(p, Tensor) else p: value
            for p, value in self.state.items()
            if not isinstance(p, Tensor) or id(p) in index
        }
        state_dict: dict[str, Any] = {"state": state, "param_groups": groups}
        for hook in list(self._state_dict_post_hooks):
            result = hook(self, state_dict)
            if result is not None:
                state_dict = result
        return state_dict

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore state and hyperparameters saved by `state_dict` (state copied to each param)."""
        if not isinstance(state_dict, dict) or not {"state", "param_groups"} <= set(state_dict):
            raise ValueError("optimizer state_dict must be a dict with 'state' and 'param_groups'")
        state_dict = dict(state_dict)
        for hook in list(self._load_state_dict_pre_hooks):
            result = hook(self, state_dict)
            if result is not None:
                state_dict = result
        saved_groups = state_dict["param_groups"]
        if len(saved_groups) != len(self.param_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        for ours, saved in zip(self.param_groups, saved_groups, strict=True):
            if len(ours["params"]) != len(saved["params"]):
                raise ValueError(
                    "loaded state dict contains a parameter group that doesn't match the size "
                    "of optimizer's group"
                )
        by_index = {
            saved_id: p
            for ours, saved in zip(self.param_groups, saved_groups, strict=True)
            for saved_id, p in zip(saved["params"], ours["params"], strict=True)
        }
        state: defaultdict[Any, dict[str, Any]] = defaultdict(dict)
        for key, value in state_dict["state"].items():
            param = by_index.get(int(key)) if isinstance(key, int | str) else None
            if param is None:
                state[key] = value
                continue
            state[param] = {
                name: _state_value_for(param, name, item) for name, item in value.items()
            }
        groups = []
        for ours, saved in zip(self.param_groups, saved_groups, strict=True):
            group = copy.deepcopy({k: v for k, v in saved.items() if k != "params"})
            group["params"] = ours["params"]
            if "param_names" in ours and "param_names" not in group:
                group["param_names"] = ours["param_names"]
            groups.append(group)
        self.state = state
        self.param_groups = groups
        for hook in list(self._load_state_dict_post_hooks):
            hook(self)

    def __repr__(self) -> str:
        text = type(self).__name__ + " ("
        for i, group in enumerate(self.param_groups):
            text += f"\nParameter Group {i}"
            for key in sorted(group):
                if key != "params":
                    text += f"\n    {key}: {group[key]}"
        return text + "\n)"


def _add_hook(hooks: list[Callable], hook: Callable, prepend: bool) -> RemovableHandle:
    if prepend:
        hooks.insert(0, hook)
    else:
        hooks.append(hook)
    return RemovableHandle(hooks, hook)


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


# State entries that are counters kept as float32 cpu scalars, whatever the parameter's device
# (ASGD's `eta` and `mu` too: their float32 rounding is part of PyTorch's update).
_SCALAR_STATE = frozenset({"step", "mu_product", "eta", "mu"})


def _state_value_for(param: Tensor, name: str, value: Any) -> Any:
    """A private copy of a saved state value, its tensors (inside lists and dicts too) on the
    parameter's device and, if float, dtype; the scalar counters stay as they were saved."""
    if isinstance(value, Tensor):
        data = value._data
        if name in _SCALAR_STATE:
            return Tensor._wrap(data.copy(), value.device)
        if value.device is not param.device:
            data = move_array(data, value.device, param.device)
        if data.dtype.kind in "fc" and data.dtype != param.dtype:
            data = data.astype(param.dtype)
        return Tensor._wrap(data.copy(), param.device)
    if isinstance(value, dict):
        return {key: _state_value_for(param, key, item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(_state_value_for(param, name, item) for item in value)
    return copy.deepcopy(value)


__all__ = [
    "Optimizer",
    "grad_array",
    "register_optimizer_step_post_hook",
    "register_optimizer_step_pre_hook",
    "required",
    "reset_grad",
]
