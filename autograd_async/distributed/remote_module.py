"""`RemoteModule`: an `nn` module built and kept on a worker, called like a local one.

    rm = await RemoteModule.create(client, "w1", "Linear", in_features=8, out_features=4)
    y = await rm(x)                      # x travels, y comes back; y.grad_fn is RecvBackward

The worker builds the module from its allow-list of classes; the parameters never leave it
except through `state_dict`. Their gradients accumulate in the distributed context on the
worker, and a `DistributedOptimizer` steps them there.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..core.tensor import Tensor
from ..creation import as_tensor
from . import methods
from .client import Client
from .codec import check_simple, host_array

__all__ = ["ParameterRef", "RemoteModule"]


@dataclass(frozen=True)
class ParameterRef:
    """Names one parameter of a remote module: its worker, module id and dotted name."""

    worker: str
    module_id: int
    name: str
    client: Client | None = field(default=None, compare=False, repr=False)


class RemoteModule:
    """A handle on a module living on a worker; `await rm(x)` runs its forward there."""

    def __init__(
        self,
        client: Client,
        worker: str,
        module_id: int,
        class_name: str,
        parameters: list[dict[str, Any]],
        text: str,
    ) -> None:
        self.client = client
        self.worker = worker
        self.module_id = module_id
        self.class_name = class_name
        self._parameters = parameters
        self._text = text
        self.closed = False

    @classmethod
    async def create(
        cls, client: Client, worker: str, class_name: str, /, **kwargs: Any
    ) -> RemoteModule:
        """Build `class_name(**kwargs)` from the worker's allow-list; return a handle on it."""
        check_simple(kwargs, f"arguments of {class_name}")
        result, _ = await client.request(
            worker, methods.MODULE_CREATE, {"class_name": class_name, "kwargs": kwargs}
        )
        return cls(
            client, worker, result["module_id"], class_name, result["parameters"], result["repr"]
        )

    async def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Run the module's forward on its worker (see `forward`)."""
        return await self.forward(*args, **kwargs)

    async def forward(self, *args: Any, **kwargs: Any) -> Any:
        """Send the inputs, run forward on the worker, return local tensors."""
        self._check_open()
        return await self.client.forward(
            self.worker, methods.MODULE_FORWARD, {"module_id": self.module_id}, args, kwargs
        )

    def parameter_refs(self) -> list[ParameterRef]:
        """References to the module's parameters, for a `DistributedOptimizer`."""
        return [
            ParameterRef(self.worker, self.module_id, p["name"], self.client)
            for p in self._parameters
        ]

    def parameter_info(self) -> list[dict[str, Any]]:
        """Name, shape, dtype and device of each parameter, as the worker reported them."""
        return [dict(p) for p in self._parameters]

    async def state_dict(self) -> dict[str, Tensor]:
        """Copies of the module's parameters and buffers, as local cpu tensors."""
        self._check_open()
        result, arrays = await self.client.request(
            self.worker, methods.MODULE_STATE_DICT, {"module_id": self.module_id}
        )
        return {name: as_tensor(a) for name, a in zip(result["names"], arrays, strict=True)}

    async def load_state_dict(
        self, state_dict: dict[str, Tensor | np.ndarray], strict: bool = True
    ) -> None:
        """Copy values into the remote module's parameters and buffers."""
        self._check_open()
        names = list(state_dict)
        arrays = [
            host_array(v.detach() if isinstance(v, Tensor) else v) for v in state_dict.values()
        ]
        await self.client.request(
            self.worker,
            methods.MODULE_LOAD_STATE_DICT,
            {"module_id": self.module_id, "names": names, "strict": strict},
            arrays,
        )

    async def train(self, mode: bool = True) -> RemoteModule:
        """Set training mode on the worker (dropout and the like); returns self."""
        self._check_open()
        await self.client.request(
            self.worker, methods.MODULE_TRAIN, {"module_id": self.module_id, "mode": bool(mode)}
        )
        return self

    async def eval(self) -> RemoteModule:
        """Set evaluation mode on the worker; returns self."""
        return await self.train(False)

    async def aclose(self) -> None:
        """Delete the module on its worker."""
        if self.closed:
            return
        self.closed = True
        await self.client.request(self.worker, methods.MODULE_DELETE, {"module_id": self.module_id})

    def _check_open(self) -> None:
        if self.closed:
            raise RuntimeError(f"remote module {self.module_id} on {self.worker!r} was closed")

    def __repr__(self) -> str:
        return f"RemoteModule(worker={self.worker!r}, id={self.module_id}, {self._text})"
