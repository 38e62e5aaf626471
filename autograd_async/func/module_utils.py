"""`functional_call` and `stack_module_state`: a module run with other parameters and buffers."""

from __future__ import annotations

from typing import Any

from ..core.tensor import Tensor
from ..nn.modules.module import Module
from ..ops.shape import stack


def _owner(module: Module, name: str) -> tuple[Module, str]:
    """The submodule holding `name` (dotted) and the attribute's own name."""
    *path, leaf = name.split(".")
    for part in path:
        child = module._modules[part]
        assert child is not None  # `name` is one of the module's own, reached through children
        module = child
    return module, leaf


def functional_call(
    module: Module,
    parameter_and_buffer_dicts: Any,
    args: Any = None,
    kwargs: Any = None,
    *,
    tie_weights: bool = True,
    strict: bool = False,
) -> Any:
    """`module(*args, **kwargs)` with its parameters and buffers replaced by those given."""
    dicts = parameter_and_buffer_dicts
    if isinstance(dicts, dict):
        given = dict(dicts)
    else:
        given = {}
        seen: dict[str, int] = {}
        for d in dicts:
            for k in d:
                seen[k] = seen.get(k, 0) + 1
        repeated = [k for k, n in seen.items() if n > 1]
        if repeated:
            raise ValueError(
                f"{repeated} appeared in multiple dictionaries; behavior of functional call is "
                "ambiguous"
            )
        for d in dicts:
            given.update(d)
    args = () if args is None else args if isinstance(args, tuple) else (args,)
    kwargs = {} if kwargs is None else kwargs
    own: dict[str, Tensor] = dict(module.named_parameters(remove_duplicate=False))
    own.update(dict(module.named_buffers(remove_duplicate=False)))
    if tie_weights:  # a name left out takes the tensor given for a name it is tied to
        by_identity: dict[int, list[str]] = {}
        for name, t in own.items():
            by_identity.setdefault(id(t), []).append(name)
        for names in by_identity.values():
            supplied = [n for n in names if n in given]
            for n in names:
                if n not in given and supplied:
                    given[n] = given[supplied[0]]
    if strict:
        unexpected = [k for k in given if k not in own]
        missing = [k for k in own if k not in given]
        if unexpected or missing:
            lines = []
            if unexpected:
                lines.append("Unexpected key(s): " + ", ".join(f"'{k}'" for k in unexpected) + ".")
            if missing:
                lines.append("Missing key(s): " + ", ".join(f"'{k}'" for k in missing) + ".")
            raise RuntimeError(
                f"Error(s) in reparametrizing for {type(module).__name__}:\n\t" + "\n\t".join(lines)
            )
    swapped = []
    try:
        for name, value in given.items():
            if name not in own:
                continue
            owner, attr = _owner(module, name)
            # Any tensor goes in, as a parameter's stand-in, for the call.
            store: dict[str, Any] = (
                owner._parameters if attr in owner._parameters else owner._buffers
            )
            swapped.append((store, attr, store[attr]))
            store[attr] = value
        return module(*args, **kwargs)
    finally:
        for store, attr, old in reversed(swapped):
            store[attr] = old


def stack_module_state(models: Any) -> tuple[dict[str, Tensor], dict[str, Tensor]]:
    """The parameters and buffers of same-shaped models, each stacked along a new dim 0."""
    models = list(models)
    if not models:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if len({m.training for m in models}) > 1:
        raise RuntimeError(
            "stack_module_state: Expected all models to have the same training/eval mode."
        )
    first = models[0]
    params = {
        name: stack([dict(m.named_parameters())[name].detach() for m in models])
        for name, _ in first.named_parameters()
    }
    for name, p in first.named_parameters():
        params[name].requires_grad_(p.requires_grad)
    buffers = {
        name: stack([dict(m.named_buffers())[name] for m in models])
        for name, _ in first.named_buffers()
    }
    return params, buffers
