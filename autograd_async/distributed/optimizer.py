"""`DistributedOptimizer`: one optimizer per worker that owns parameters, stepped from a client.

    opt = DistributedOptimizer(optim.SGD, rm1.parameter_refs() + rm2.parameter_refs(), lr=0.1)
    await opt.step(ctx)     # every owner steps its parameters with the gradients in ctx

Only the class's name travels: the worker builds the optimizer from its own allow-list (SGD,
Adam, AdamW by default), with the given hyperparameters, on first step.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any

from . import methods
from .client import Client
from .codec import check_simple
from .context import ContextBase
from .remote_module import ParameterRef

__all__ = ["DistributedOptimizer"]


class DistributedOptimizer:
    """Steps remote parameters on their owners with the gradients of a distributed context."""

    def __init__(
        self, optimizer_class: type | str, params: Iterable[ParameterRef], **defaults: Any
    ) -> None:
        self.class_name = (
            optimizer_class if isinstance(optimizer_class, str) else (optimizer_class.__name__)
        )
        check_simple(defaults, f"hyperparameters of {self.class_name}")
        self.defaults = defaults
        self._owners: dict[tuple[int, str], tuple[Client, list[ParameterRef]]] = {}
        for ref in params:
            if not isinstance(ref, ParameterRef) or ref.client is None:
                raise TypeError(
                    "DistributedOptimizer takes ParameterRefs from RemoteModule.parameter_refs(),"
                    f" got {type(ref).__name__}"
                )
            key = (id(ref.client), ref.worker)
            self._owners.setdefault(key, (ref.client, []))[1].append(ref)
        if not self._owners:
            raise ValueError("DistributedOptimizer got an empty parameter list")
        self._remote_ids: dict[tuple[int, str], int] = {}
        self._lock = asyncio.Lock()

    @property
    def workers(self) -> list[str]:
        """The workers that own parameters of this optimizer."""
        return [worker for _, worker in self._owners]

    async def _create(self) -> None:
        async def create(key: tuple[int, str], client: Client, refs: list[ParameterRef]) -> None:
            params = [{"module_id": r.module_id, "name": r.name} for r in refs]
            result, _ = await client.request(
                key[1],
                methods.OPTIM_CREATE,
                {"class_name": self.class_name, "kwargs": self.defaults, "params": params},
            )
            self._remote_ids[key] = result["optimizer_id"]

        async with self._lock:
            missing = [(k, c, r) for k, (c, r) in self._owners.items() if k not in self._remote_ids]
            await asyncio.gather(*(create(*item) for item in missing))

    async def step(self, ctx: ContextBase) -> None:
        """Step every owner's parameters with the gradients accumulated in `ctx`."""
        ctx.check_open()
        await self._create()

        async def step_one(key: tuple[int, str], client: Client) -> None:
            await client.request(
                key[1],
                methods.OPTIM_STEP,
                {"optimizer_id": self._remote_ids[key], "context_id": ctx.id},
                context_id=ctx.id,
            )

        await asyncio.gather(*(step_one(k, c) for k, (c, _) in self._owners.items()))

    async def aclose(self) -> None:
        """Delete the optimizers on their workers."""
        ids, self._remote_ids = self._remote_ids, {}
        await asyncio.gather(
            *(
                self._owners[key][0].request(key[1], methods.OPTIM_DELETE, {"optimizer_id": oid})
                for key, oid in ids.items()
            )
        )

    def __repr__(self) -> str:
        return f"DistributedOptimizer({self.class_name}, workers={self.workers}, {self.defaults})"
