"""`autograd_async.func`: PyTorch's function transforms (`torch.func`) on this engine.

`grad`, `grad_and_value`, `vjp`, `jvp`, `linearize`, `jacrev`, `jacfwd`, `hessian`, `vmap`,
`functional_call` and `stack_module_state`. `vmap` runs common ops once on the whole batch by
batching rules (`rules`, `rules_nn`, `function_rules`) and any other op once per example.
"""

from __future__ import annotations

from ..batching import HANDLERS
from . import function_rules, rules, rules_nn  # noqa: F401 - register the batching rules
from .batched import BatchedTensor
from .dispatch import dispatch_draw, dispatch_function, dispatch_op
from .module_utils import functional_call, stack_module_state
from .pytree import tree_flatten, tree_map, tree_unflatten
from .transforms import grad, grad_and_value, hessian, jacfwd, jacrev, jvp, linearize, vjp
from .vmap import vmap

HANDLERS.op = dispatch_op
HANDLERS.function = dispatch_function
HANDLERS.draw = dispatch_draw

__all__ = [
    "BatchedTensor",
    "functional_call",
    "grad",
    "grad_and_value",
    "hessian",
    "jacfwd",
    "jacrev",
    "jvp",
    "linearize",
    "stack_module_state",
    "tree_flatten",
    "tree_map",
    "tree_unflatten",
    "vjp",
    "vmap",
]
