"""The older weight and spectral normalisation (PyTorch's `torch.nn.utils.weight_norm` and
`spectral_norm`): the normalised weight is recomputed into a plain attribute by a forward
pre-hook, from parameters named `<name>_g`/`<name>_v` or `<name>_orig` and buffers
`<name>_u`/`<name>_v`, so state dicts saved by PyTorch with these names load."""

from __future__ import annotations

import warnings
from typing import Any

from ...core.graph import RemovableHandle
from ...core.tensor import Tensor
from ...grad_mode import no_grad
from ..functional import normalize
from ..modules.module import Module
from ..parameter import Parameter, UninitializedParameter
from .parametrizations import norm_except_dim, spectral_dim, weight_norm_values

__all__ = ["remove_spectral_norm", "remove_weight_norm", "spectral_norm", "weight_norm"]

# Per module, the normalisation hooks it carries: {(kind, name): (hook, handle)}.
_HOOKS = "_normalization_hooks"


def _hooks(module: Module) -> dict[tuple[str, str], tuple[Any, RemovableHandle]]:
    hooks = module.__dict__.get(_HOOKS)
    if hooks is None:
        hooks = {}
        object.__setattr__(module, _HOOKS, hooks)
    return hooks


def _remove_hook(module: Module, kind: str, name: str) -> Any:
    """Take the `kind` hook of `name` off the module and return it."""
    entry = _hooks(module).pop((kind, name), None)
    if entry is None:
        raise ValueError(f"{kind} of '{name}' not found in {module}")
    hook, handle = entry
    handle.remove()
    return hook


def _take_parameter(module: Module, name: str) -> Parameter:
    weight = module._parameters.get(name)
    if weight is None:
        raise ValueError(f"Module '{type(module).__name__}' has no parameter named '{name}'")
    if isinstance(weight, UninitializedParameter):
        raise ValueError(
            "The module passed to `WeightNorm` can't have uninitialized parameters. "
            "Make sure to run the dummy forward before applying weight normalization"
        )
    del module._parameters[name]
    return weight


class _WeightNormHook:
    def __init__(self, name: str, dim: int) -> None:
        self.name, self.dim = name, dim

    def compute_weight(self, module: Module) -> Tensor:
        g = getattr(module, self.name + "_g")
        v = getattr(module, self.name + "_v")
        return weight_norm_values(v, g, self.dim)

    def __call__(self, module: Module, inputs: Any) -> None:
        setattr(module, self.name, self.compute_weight(module))


def weight_norm(module: Module, name: str = "weight", dim: int | None = 0) -> Module:
    """Deprecated form of `parametrizations.weight_norm`: `<name>_g` and `<name>_v` become the
    parameters, and `<name>` is recomputed from them before each forward."""
    warnings.warn(
        "`nn.utils.weight_norm` is deprecated in favor of `nn.utils.parametrizations.weight_norm`.",
        FutureWarning,
        stacklevel=2,
    )
    hooks = _hooks(module)
    if ("weight_norm", name) in hooks:
        raise RuntimeError(f"Cannot register two weight_norm hooks on the same parameter {name}")
    hook = _WeightNormHook(name, -1 if dim is None else dim)
    weight = _take_parameter(module, name)
    with no_grad():
        module.register_parameter(name + "_g", Parameter(norm_except_dim(weight, 2, hook.dim)))
        module.register_parameter(name + "_v", Parameter(weight.detach()))
    setattr(module, name, hook.compute_weight(module))
    hooks[("weight_norm", name)] = (hook, module.register_forward_pre_hook(hook))
    return module


def remove_weight_norm(module: Module, name: str = "weight") -> Module:
    """Undo `weight_norm`: `<name>` becomes a parameter again holding the normalised weight."""
    hook = _remove_hook(module, "weight_norm", name)
    with no_grad():
        weight = hook.compute_weight(module)
    delattr(module, name)
    del module._parameters[name + "_g"]
    del module._parameters[name + "_v"]
    module.register_parameter(name, Parameter(weight.detach()))
    return module


class _SpectralNormHook:
    def __init__(self, name: str, n_power_iterations: int, dim: int, eps: float) -> None:
        if n_power_iterations <= 0:
            raise ValueError(
                "Expected n_power_iterations to be positive, but got "
                f"n_power_iterations={n_power_iterations}"
            )
        self.name, self.n_power_iterations, self.dim, self.eps = name, n_power_iterations, dim, eps

    def reshape_weight_to_matrix(self, weight: Tensor) -> Tensor:
        if self.dim != 0:
            weight = weight.permute(self.dim, *(d for d in range(weight.dim()) if d != self.dim))
        return weight.reshape(weight.shape[0], -1)

    def compute_weight(self, module: Module, do_power_iteration: bool) -> Tensor:
        weight = getattr(module, self.name + "_orig")
        u = getattr(module, self.name + "_u")
        v = getattr(module, self.name + "_v")
        weight_mat = self.reshape_weight_to_matrix(weight)
        if do_power_iteration:
            with no_grad():
                for _ in range(self.n_power_iterations):
                    v.copy_(normalize(weight_mat.t().mv(u), dim=0, eps=self.eps))
                    u.copy_(normalize(weight_mat.mv(v), dim=0, eps=self.eps))
            u, v = u.clone(), v.clone()
        sigma = u.dot(weight_mat.mv(v))
        return weight / sigma

    def __call__(self, module: Module, inputs: Any) -> None:
        setattr(module, self.name, self.compute_weight(module, module.training))


def spectral_norm(
    module: Module,
    name: str = "weight",
    n_power_iterations: int = 1,
    eps: float = 1e-12,
    dim: int | None = None,
) -> Module:
    """Older form of `parametrizations.spectral_norm`: the weight is kept as `<name>_orig`, the
    power iteration's vectors as buffers `<name>_u` and `<name>_v`, and `<name>` is divided by
    its estimated largest singular value before each forward."""
    hooks = _hooks(module)
    if ("spectral_norm", name) in hooks:
        raise RuntimeError(f"Cannot register two spectral_norm hooks on the same parameter {name}")
    hook = _SpectralNormHook(name, n_power_iterations, spectral_dim(module, dim), eps)
    weight = _take_parameter(module, name)
    with no_grad():
        weight_mat = hook.reshape_weight_to_matrix(weight)
        h, w = weight_mat.shape
        u = normalize(weight.new_empty(h).normal_(0, 1), dim=0, eps=eps)
        v = normalize(weight.new_empty(w).normal_(0, 1), dim=0, eps=eps)
    module.register_parameter(name + "_orig", weight)
    setattr(module, name, weight.detach())
    module.register_buffer(name + "_u", u)
    module.register_buffer(name + "_v", v)
    hooks[("spectral_norm", name)] = (hook, module.register_forward_pre_hook(hook))
    return module


def remove_spectral_norm(module: Module, name: str = "weight") -> Module:
    """Undo `spectral_norm`: `<name>` becomes a parameter holding the normalised weight."""
    hook = _remove_hook(module, "spectral_norm", name)
    with no_grad():
        weight = hook.compute_weight(module, do_power_iteration=False)
    delattr(module, name)
    del module._parameters[name + "_orig"]
    del module._buffers[name + "_u"]
    del module._buffers[name + "_v"]
    module.register_parameter(name, Parameter(weight.detach()))
    return module
