"""The worker process of distributed autograd: `python -m workers` (or `autograd-async-worker`).

A worker serves, to peers that know the shared token, the functions, module classes and
optimizers registered in `workers.registry`; it records forward calls made under distributed
contexts and runs its part of their backward passes. See docs/wire-protocol.md, section 8.
"""

from .registry import (
    Registry,
    current_worker,
    register_function,
    register_module_class,
    register_optimizer_class,
)
from .server import DEFAULT_CONTEXT_TTL, WorkerServer

__all__ = [
    "DEFAULT_CONTEXT_TTL",
    "Registry",
    "WorkerServer",
    "current_worker",
    "register_function",
    "register_module_class",
    "register_optimizer_class",
]
