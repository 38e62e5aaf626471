"""PyTorch's `torch.autograd.graph` surface: Node, saved-tensor hooks and `save_on_cpu`."""

from __future__ import annotations

from typing import Any

from ..core.graph import Node
from ..core.saved_hooks import disable_saved_tensors_hooks, saved_tensors_hooks
from ..core.tensor import Tensor
from ..devices import CPU, Device

__all__ = ["Node", "disable_saved_tensors_hooks", "save_on_cpu", "saved_tensors_hooks"]


class save_on_cpu(saved_tensors_hooks):  # noqa: N801 - PyTorch's name
    """Tensors saved for backward in this context are copied to host memory and moved back to
    their original device when backward reads them.

    `pin_memory` is accepted for PyTorch's signature; NumPy host arrays are never page-locked, so
    it has no effect. On the CPU the saved tensor is still copied, as PyTorch does.
    """

    def __init__(self, pin_memory: bool = False, device_type: str = "cuda") -> None:
        self.pin_memory = pin_memory

        def pack_to_cpu(tensor: Tensor) -> tuple[Device, Tensor]:
            return tensor.device, tensor.detach().to(CPU, copy=True)

        def unpack_from_cpu(packed: tuple[Device, Any]) -> Tensor:
            device, tensor = packed
            return tensor.to(device)

        super().__init__(pack_to_cpu, unpack_from_cpu)
