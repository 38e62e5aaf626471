"""`DistributedDataParallel`: one replica of a model per rank, gradients averaged in backward."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from ...distributed.collectives.api import broadcast, resolve_group
from ...distributed.collectives.objects import all_gather_object
from ...grad_mode import is_grad_enabled
from ..modules.module import Module
from .reducer import Reducer

__all__ = ["DistributedDataParallel"]


class DistributedDataParallel(Module):
    """PyTorch's `torch.nn.parallel.DistributedDataParallel` on this package's collectives.

    At construction rank 0's parameters and buffers are copied to every rank. In backward, each
    bucket of gradients is all-reduced the moment its last gradient is accumulated, overlapping
    the rest of backward; `backward()` / `await backward_async()` return with `.grad` holding
    the average over the ranks.
    """

    def __init__(
        self,
        module: Module,
        device_ids: list[Any] | None = None,
        output_device: Any = None,
        dim: int = 0,
        broadcast_buffers: bool = True,
        process_group: Any = None,
        bucket_cap_mb: float | None = None,
        find_unused_parameters: bool = False,
        check_reduction: bool = False,
        gradient_as_bucket_view: bool = False,
        static_graph: bool = False,
        init_sync: bool = True,
    ) -> None:
        super().__init__()
        if not any(p.requires_grad for p in module.parameters()):
            raise RuntimeError(
                "DistributedDataParallel is not needed when a module doesn't have any "
                "parameter that requires a gradient."
            )
        if device_ids is not None and len(device_ids) > 1:
            raise ValueError(
                "device_ids can only be None or contain a single element (one device per rank)."
            )
        self.module = module
        self.process_group = resolve_group(process_group)
        self.device_ids = device_ids
        self.dim = dim
        self.broadcast_buffers = broadcast_buffers
        self.find_unused_parameters = find_unused_parameters
        self.gradient_as_bucket_view = gradient_as_bucket_view
        self.require_backward_grad_sync = True
        self.require_forward_param_sync = True
        self.bucket_bytes_cap = int((25 if bucket_cap_mb is None else bucket_cap_mb) * 1024 * 1024)
        seen: set[int] = set()
        self._params = []
        for p in module.parameters():  # each shared parameter once, in first-seen order
            if p.requires_grad and id(p) not in seen:
                seen.add(id(p))
                self._params.append(p)
        self._buffers_to_sync = [b for _, b in module.named_buffers()]
        self._verify_same_model()
        if init_sync:
            self._sync_states([*(p.detach() for p in module.parameters()), *self._buffers_to_sync])
        self.reducer = Reducer(
            self._params,
            self.process_group,
            self.bucket_bytes_cap,
            find_unused_parameters,
            gradient_as_bucket_view,
        )

    # ------------------------------------------------------------ construction
    def _verify_same_model(self) -> None:
        """PyTorch's check that every rank wraps a model of the same parameter shapes."""
        pg = self.process_group
        mine = [list(p.shape) for p in self._params]
        everyone: list[Any] = [None] * pg.size()
        all_gather_object(everyone, mine, group=pg)
        for r, theirs in enumerate(everyone):
            if len(theirs) != len(mine):
                raise RuntimeError(
                    f"DDP expects same model across all ranks, but Rank {pg.rank()} has "
                    f"{len(mine)} params, while rank {r} has inconsistent {len(theirs)} params."
                )
            for i, (a, b) in enumerate(zip(mine, theirs)):
                if a != b:
                    raise RuntimeError(
                        f"DDP expects same model across all ranks, but Rank {pg.rank()} has "
                        f"parameter {i} of shape {a}, while rank {r} has shape {b}."
                    )

    def _sync_states(self, tensors: list[Any]) -> None:
        """Copy rank 0's values into every rank's tensors (all in flight at once)."""
        if self.process_group.size() == 1:
            return
        works = [
            broadcast(t, group=self.process_group, group_src=0, async_op=True) for t in tensors
        ]
        for work in works:
            work.wait()

    # ----------------------------------------------------------------- forward
    def forward(self, *inputs: Any, **kwargs: Any) -> Any:
        """Run the wrapped module; arm the gradient reduction of the coming backward."""
        syncing = is_grad_enabled() and self.require_backward_grad_sync
        if syncing:
            self.reducer.prepare_for_forward()
        if self.broadcast_buffers and self.require_forward_param_sync and self._buffers_to_sync:
            self._sync_states(self._buffers_to_sync)
        outputs = self.module(*inputs, **kwargs)
        if syncing:
            self.reducer.prepare_for_backward(outputs)
        else:
            self.reducer.expect_hooks = False
        return outputs

    @contextlib.contextmanager
    def no_sync(self) -> Iterator[None]:
        """Accumulate gradients locally (no communication) in the backwards run inside."""
        previous = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = previous

    def __getstate__(self) -> Any:
        raise TypeError("DistributedDataParallel holds a process group and cannot be copied")
