"""`DataParallel`: one module, its batch split over the devices of this process (PyTorch's).

Each forward scatters the inputs along `dim`, runs a replica on every device (each on a thread
that has entered its device), and gathers the outputs on `output_device`. A replica's parameters
are differentiable copies (`.to(device)`) of the module's, so backward runs on every device's
worker thread and the copies' backward sums each replica's gradient into the module's `.grad`:
the gradient of the whole batch, as one device would compute it.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Sequence
from typing import Any

from ...core.tensor import Tensor
from ...devices import Device, backend_for
from ...ops.shape import cat
from ..modules.module import Module

__all__ = ["DataParallel"]


def replicate(module: Module, device: Device) -> Module:
    """A copy of `module` whose parameters are differentiable copies on `device`."""
    copies: dict[int, Module] = {}
    for _, original in module.named_modules():
        clone = copy.copy(original)
        object.__setattr__(
            clone,
            "_parameters",
            {name: None if p is None else p.to(device) for name, p in original._parameters.items()},
        )
        object.__setattr__(
            clone,
            "_buffers",
            {
                name: None if b is None else b.detach().to(device)
                for name, b in original._buffers.items()
            },
        )
        copies[id(original)] = clone
    for _, original in module.named_modules():
        object.__setattr__(
            copies[id(original)],
            "_modules",
            {
                name: None if child is None else copies[id(child)]
                for name, child in original._modules.items()
            },
        )
    return copies[id(module)]


def scatter(value: Any, count: int, dim: int, devices: Sequence[Device]) -> list[Any]:
    """`count` parts of `value`: tensors chunked along `dim` and moved, other values repeated."""
    if isinstance(value, Tensor):
        parts = value.chunk(count, dim)
        return [part.to(devices[i]) for i, part in enumerate(parts)]
    if isinstance(value, list | tuple):
        columns = [scatter(v, count, dim, devices) for v in value]
        return [type(value)(column[i] for column in columns) for i in range(count)]
    if isinstance(value, dict):
        fields = {k: scatter(v, count, dim, devices) for k, v in value.items()}
        return [{k: field[i] for k, field in fields.items()} for i in range(count)]
    return [value] * count


def gather(outputs: list[Any], device: Device, dim: int) -> Any:
    """The replicas' outputs joined along `dim` on `device` (structures joined entry by entry)."""
    first = outputs[0]
    if isinstance(first, Tensor):
        return cat([out.to(device) for out in outputs], dim)
    if isinstance(first, list | tuple):
        return type(first)(
            gather([out[i] for out in outputs], device, dim) for i in range(len(first))
        )
    if isinstance(first, dict):
        return {k: gather([out[k] for out in outputs], device, dim) for k in first}
    return first


class DataParallel(Module):
    """PyTorch's `torch.nn.DataParallel` over the devices of this process."""

    def __init__(
        self,
        module: Module,
        device_ids: Sequence[Any] | None = None,
        output_device: Any = None,
        dim: int = 0,
    ) -> None:
        super().__init__()
        self.module = module
        if not device_ids:
            first = next(iter(module.parameters()), None)
            device_ids = [first.device if first is not None else Device("cpu")]
        self.device_ids = [d if isinstance(d, Device) else Device(d) for d in device_ids]
        out = output_device if output_device is not None else self.device_ids[0]
        self.output_device = out if isinstance(out, Device) else Device(out)
        self.dim = dim
        for name, p in module.named_parameters():
            if p.device != self.device_ids[0]:
                raise RuntimeError(
                    "module must have its parameters and buffers on device "
                    f"{self.device_ids[0]} (device_ids[0]) but found one of them on device: "
                    f"{p.device} ({name})"
                )

    def forward(self, *inputs: Any, **kwargs: Any) -> Any:
        """Scatter, run a replica per device in parallel, gather on `output_device`."""
        devices = self.device_ids
        if len(devices) == 1:
            return self.module(*scatter(inputs, 1, self.dim, devices)[0], **kwargs)
        batch = next((v for v in inputs if isinstance(v, Tensor)), None)
        count = min(len(devices), batch.shape[self.dim]) if batch is not None else len(devices)
        args = scatter(inputs, count, self.dim, devices)
        kw = scatter(kwargs, count, self.dim, devices)
        replicas = [self.module] + [replicate(self.module, devices[i]) for i in range(1, count)]
        outputs: list[Any] = [None] * count
        errors: list[BaseException | None] = [None] * count

        def run(i: int) -> None:
            try:
                with backend_for(devices[i]).device_context(devices[i]):
                    outputs[i] = replicas[i](*args[i], **kw[i])
            except BaseException as exc:  # noqa: BLE001 - re-raised on the caller's thread
                errors[i] = exc

        threads = [
            threading.Thread(target=run, args=(i,), name=f"data-parallel:{devices[i]}")
            for i in range(1, count)
        ]
        for t in threads:
            t.start()
        run(0)  # replica 0 is the module itself, on the caller's thread
        for t in threads:
            t.join()
        for error in errors:
            if error is not None:
                raise error
        return gather(outputs, self.output_device, self.dim)
