"""Module hooks (PyTorch's forward pre-/post-hooks and full backward pre-/post-hooks).

A module keeps no hook state until the first registration, so the common hook-free call costs
one attribute test. Backward hooks wrap the module's tensor inputs and outputs in an identity
`Function` whose backward calls them: the output wrapper sees the gradients of the outputs
(`grad_output`), the input wrapper those of the inputs (`grad_input`), as in PyTorch.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ...autograd.function import Function
from ...core.graph import RemovableHandle
from ...core.tensor import Tensor
from ...creation import zeros_like
from ...grad_mode import is_grad_enabled


@dataclass(eq=False, slots=True)
class HookEntry:
    """One registered hook with the flags it was registered with."""

    fn: Callable
    with_kwargs: bool = False
    always_call: bool = False


@dataclass(slots=True)
class ModuleHooks:
    """The hooks of one module, in call order."""

    forward_pre: list[HookEntry] = field(default_factory=list)
    forward: list[HookEntry] = field(default_factory=list)
    backward_pre: list[HookEntry] = field(default_factory=list)
    backward: list[HookEntry] = field(default_factory=list)

    def add(self, kind: str, entry: HookEntry, prepend: bool) -> RemovableHandle:
        """Register `entry` among the hooks of `kind`; the handle removes it."""
        entries = getattr(self, kind)
        if prepend:
            entries.insert(0, entry)
        else:
            entries.append(entry)
        return RemovableHandle(entries, entry)


def call_with_hooks(module: Any, hooks: ModuleHooks, args: tuple, kwargs: dict) -> Any:
    """Run `module.forward` with its hooks, in PyTorch's order."""
    for entry in list(hooks.forward_pre):
        if entry.with_kwargs:
            changed = entry.fn(module, args, kwargs)
            if changed is not None:
                if not (isinstance(changed, tuple) and len(changed) == 2):
                    raise RuntimeError(
                        "forward pre-hook must return None or a tuple of (new_args, new_kwargs), "
                        f"but got {changed}."
                    )
                args, kwargs = changed
        else:
            changed = entry.fn(module, args)
            if changed is not None:
                args = changed if isinstance(changed, tuple) else (changed,)
    backward_hook = None
    if hooks.backward or hooks.backward_pre:
        backward_hook = BackwardHook(module, hooks.backward, hooks.backward_pre)
        args = backward_hook.setup_input_hook(args)
    called = False
    try:
        result = module.forward(*args, **kwargs)
        for entry in list(hooks.forward):
            called = True
            changed = (
                entry.fn(module, args, kwargs, result)
                if entry.with_kwargs
                else entry.fn(module, args, result)
            )
            if changed is not None:
                result = changed
    except Exception:
        if not called:
            for entry in hooks.forward:
                if entry.always_call:
                    try:
                        _ = (
                            entry.fn(module, args, kwargs, None)
                            if entry.with_kwargs
                            else entry.fn(module, args, None)
                        )
                    except Exception as hook_error:
                        warnings.warn(
                            f"forward hook with always_call=True raised an exception that was "
                            f"silenced as another error was raised in forward: {hook_error}",
                            stacklevel=3,
                        )
        raise
    if backward_hook is not None:
        result = backward_hook.setup_output_hook(result)
    return result


class BackwardHookFunction(Function):
    """Identity on tensors; its backward lets a module's backward hooks see the gradients."""

    @staticmethod
    def forward(ctx: Any, *tensors: Tensor) -> tuple:
        # Backward sees missing gradients as None: the pre-hooks get them so, as PyTorch's do;
        # the input side fills them with zeros itself, as PyTorch's materialised ones.
        ctx.mark_non_differentiable(*[t for t in tensors if not t.requires_grad])
        ctx.set_materialize_grads(False)
        ctx.on_backward = None
        return tensors

    @staticmethod
    def backward(ctx: Any, *grads: Any) -> Any:
        on_backward = ctx.on_backward
        return grads if on_backward is None else on_backward(grads)


def _pack_with_none(indices: list[int], values: tuple, size: int) -> tuple:
    packed: list[Any] = [None] * size
    for i, value in zip(indices, values, strict=True):
        packed[i] = value
    return tuple(packed)


class BackwardHook:
    """The backward hooks of one call of a module: wraps its inputs, then its outputs."""

    def __init__(self, module: Any, hooks: list[HookEntry], pre_hooks: list[HookEntry]) -> None:
        self.module = module
        self.hooks = list(hooks)
        self.pre_hooks = list(pre_hooks)
        self.grad_outputs: tuple | None = None
        self.n_inputs = -1
        self.n_outputs = -1
        self.input_index: list[int] | None = None
        self.output_index: list[int] | None = None
        self.input_tensors: list[Tensor] = []

    @staticmethod
    def _wrap(values: tuple, on_backward_for: Callable) -> tuple[tuple, list[int] | None]:
        index = [i for i, v in enumerate(values) if isinstance(v, Tensor)]
        tensors = [values[i] for i in index]
        if not (is_grad_enabled() and any(t.requires_grad for t in tensors)):
            return values, None
        wrapped = BackwardHookFunction.apply(*tensors)
        node = next(t.grad_fn for t in wrapped if t.grad_fn is not None)
        node.on_backward = on_backward_for
        replaced = list(values)
        for i, t in zip(index, wrapped, strict=True):
            replaced[i] = t
        return tuple(replaced), index

    def setup_input_hook(self, args: tuple) -> tuple:
        """Wrap the module's tensor arguments so their gradients reach the hooks."""
        self.n_inputs = len(args)
        self.input_tensors = [a for a in args if isinstance(a, Tensor)]
        args, self.input_index = self._wrap(args, self._on_input_grads)
        return args

    def setup_output_hook(self, result: Any) -> Any:
        """Wrap the module's tensor outputs so their gradients reach the pre-hooks first."""
        single = not isinstance(result, tuple)
        outputs = (result,) if single else result
        self.n_outputs = len(outputs)
        outputs, self.output_index = self._wrap(outputs, self._on_output_grads)
        return outputs[0] if single else outputs

    def _on_output_grads(self, grads: tuple) -> tuple:
        assert self.output_index is not None
        self.grad_outputs = _pack_with_none(self.output_index, grads, self.n_outputs)
        for entry in self.pre_hooks:
            changed = entry.fn(self.module, self.grad_outputs)
            if changed is None:
                continue
            if len(changed) != len(self.grad_outputs):
                raise RuntimeError(
                    "Backward pre hook returned an invalid number of grad_output, got "
                    f"{len(changed)}, but expected {len(self.grad_outputs)}"
                )
            self.grad_outputs = tuple(changed)
        passed_on = tuple(self.grad_outputs[i] for i in self.output_index)
        if self.input_index is None:
            warnings.warn(
                "Full backward hook is firing when gradients are computed with respect to module "
                "outputs since no inputs require gradients.",
                stacklevel=2,
            )
            none_inputs = (None,) * self.n_inputs
            for entry in self.hooks:
                changed = entry.fn(self.module, none_inputs, self.grad_outputs)
                if changed is not None and not all(g is None for g in changed):
                    raise RuntimeError(
                        "Backward hook for Modules where no input requires gradient should "
                        "always return None or None for all gradients."
                    )
            self.grad_outputs = None
        return passed_on

    def _on_input_grads(self, grads: tuple) -> tuple:
        assert self.input_index is not None
        grads = tuple(
            zeros_like(t) if g is None else g
            for g, t in zip(grads, self.input_tensors, strict=True)
        )
        if self.grad_outputs is None:
            return grads
        grad_input = _pack_with_none(self.input_index, grads, self.n_inputs)
        for entry in self.hooks:
            changed = entry.fn(self.module, grad_input, self.grad_outputs)
            if changed is None:
                continue
            if len(changed) != len(grad_input):
                raise RuntimeError(
                    "Backward hook returned an invalid number of grad_input, got "
                    f"{len(changed)}, but expected {len(grad_input)}"
                )
            grad_input = tuple(changed)
        self.grad_outputs = None
        return tuple(grad_input[i] for i in self.input_index)
