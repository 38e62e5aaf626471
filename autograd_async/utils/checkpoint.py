"""Activation checkpointing: run a function without keeping what its ops save for backward, and
recompute it when backward needs those values (PyTorch's `torch.utils.checkpoint.checkpoint`).

Two forms, as in PyTorch:

- `use_reentrant=True`: the function runs under `no_grad`, so nothing inside it is recorded; a
  custom Function node stands for it, and its backward runs the function again with grad enabled
  and calls `autograd.backward` on that fresh graph: a backward inside backward, which the engine
  runs reentrantly on the worker thread. As in PyTorch it refuses to run inside `grad()` or
  `backward(inputs=...)`.
- `use_reentrant=False`: the function runs with its graph recorded, but every tensor its ops save
  goes through saved-tensor hooks that keep only a handle; the first handle that backward unpacks
  recomputes the function once and hands out the recomputed values.

With `preserve_rng_state=True` the default generator's state is restored for the recomputation,
so dropout draws the same mask. Random numbers drawn on CuPy devices are not restored.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

from ..autograd.api import backward
from ..autograd.function import Function
from ..core.saved_hooks import saved_tensors_hooks
from ..core.tensor import Tensor
from ..creation import default_generator
from ..engine.device_worker import thread_state
from ..grad_mode import enable_grad, no_grad

__all__ = ["checkpoint"]

USE_REENTRANT_WARNING = (
    "autograd_async.utils.checkpoint: the use_reentrant parameter should be passed explicitly. "
    "use_reentrant=False is recommended, but if you need to preserve the current default "
    "behavior, you can pass use_reentrant=True. Refer to docs for more details on the "
    "differences between the two variants."
)


class _RngSnapshot:
    """The default generator's state at forward, restored around a recomputation."""

    def __init__(self, enabled: bool) -> None:
        self._state = default_generator.get_state() if enabled else None
        self._outer: dict | None = None

    def __enter__(self) -> None:
        if self._state is not None:
            self._outer = default_generator.get_state()
            default_generator.set_state(self._state)

    def __exit__(self, *exc: object) -> None:
        if self._outer is not None:  # taken by __enter__ when there is a state to restore
            default_generator.set_state(self._outer)


def _detached(args: tuple) -> tuple:
    """Tensors cut from the outer graph, keeping requires_grad; other arguments as they are."""
    out = []
    for a in args:
        if isinstance(a, Tensor):
            d = a.detach()
            d._rg = a._rg
            a = d
        out.append(a)
    return tuple(out)


# --------------------------------------------------------------------------------- reentrant
def _is_checkpoint_valid() -> bool:
    """False inside a `grad()` or `backward(inputs=...)` pass, which the reentrant form would get
    wrong: its inner backward accumulates into `.grad` instead of what that pass captures."""
    worker = thread_state.worker
    task = worker.running_task if worker is not None else None
    return task is None or task.exec_info is None


class _CheckpointFunction(Function):
    """The node that stands for the checkpointed function in the outer graph."""

    @staticmethod
    def forward(ctx: Any, run_function: Callable, preserve_rng_state: bool, *args: Any) -> Any:
        if not any(isinstance(a, Tensor) and a.requires_grad for a in args):
            warnings.warn(
                "None of the inputs have requires_grad=True. Gradients will be None", stacklevel=5
            )
        ctx.run_function = run_function
        ctx.rng = _RngSnapshot(preserve_rng_state)
        ctx.tensor_indices = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        ctx.inputs = [None if isinstance(a, Tensor) else a for a in args]
        ctx.save_for_backward(*[a for a in args if isinstance(a, Tensor)])
        with no_grad():
            return run_function(*args)

    @staticmethod
    def backward(ctx: Any, *grads: Any) -> tuple:
        if not _is_checkpoint_valid():
            raise RuntimeError(
                "When use_reentrant=True, torch.utils.checkpoint is incompatible with .grad() or "
                "passing an `inputs` parameter to .backward(). To resolve this error, you can "
                "either set use_reentrant=False, or call .backward() without passing the "
                "`inputs` argument."
            )
        inputs = list(ctx.inputs)
        for i, t in zip(ctx.tensor_indices, ctx.saved_tensors, strict=True):
            inputs[i] = t
        detached = _detached(tuple(inputs))
        with ctx.rng, enable_grad():
            outputs = ctx.run_function(*detached)
        if isinstance(outputs, Tensor):
            outputs = (outputs,)
        with_grad = [
            (o, g)
            for o, g in zip(outputs, grads, strict=False)
            if isinstance(o, Tensor) and o.requires_grad
        ]
        if not with_grad:
            raise RuntimeError(
                "none of output has requires_grad=True, this checkpoint() is not necessary"
            )
        backward([o for o, _ in with_grad], [g for _, g in with_grad])
        return (None, None) + tuple(a.grad if isinstance(a, Tensor) else None for a in detached)


# ----------------------------------------------------------------------------- non-reentrant
class _Handle:
    """What the graph keeps for one saved tensor: its frame and its place in saving order."""

    __slots__ = ("frame", "index")

    def __init__(self, frame: _Frame, index: int) -> None:
        self.frame = frame
        self.index = index


class _Frame:
    """One non-reentrant checkpointed call: how to recompute it, and what recomputation gave."""

    def __init__(
        self,
        fn: Callable,
        args: tuple,
        kwargs: dict,
        preserve_rng_state: bool,
        check_metadata: bool,
    ) -> None:
        self.fn = fn
        self.args = args
        self.kwargs = kwargs
        self.rng = _RngSnapshot(preserve_rng_state)
        self.check_metadata = check_metadata
        self.metadata: list[tuple] = []
        self.recomputed: dict[int, Tensor] = {}

    def pack(self, tensor: Tensor) -> _Handle:
        """Forward: keep the tensor's metadata and a handle, not the tensor."""
        self.metadata.append(_metadata(tensor))
        return _Handle(self, len(self.metadata) - 1)

    @staticmethod
    def unpack(handle: _Handle) -> Tensor:
        """Backward: the recomputed value of a saved tensor (recomputing the call if needed)."""
        frame = handle.frame
        if handle.index not in frame.recomputed:
            frame.recompute()
        # Each value is handed out once; a second backward (retain_graph) recomputes again.
        return frame.recomputed.pop(handle.index)

    def recompute(self) -> None:
        saved: list[Tensor] = []

        def record(t: Tensor) -> None:
            saved.append(t.detach())

        def refuse(_: Any) -> Tensor:
            raise RuntimeError("checkpoint: a recomputed value was read before it was recorded")

        with self.rng, enable_grad(), saved_tensors_hooks(record, refuse):
            self.fn(*_detached(self.args), **self.kwargs)
        if len(saved) != len(self.metadata):
            raise RuntimeError(
                "torch.utils.checkpoint: A different number of tensors was saved during the "
                "original forward and recomputation.\n"
                f"Number of tensors saved during forward: {len(self.metadata)}\n"
                f"Number of tensors saved during recomputation: {len(saved)}"
            )
        if self.check_metadata:
            for i, (t, meta) in enumerate(zip(saved, self.metadata, strict=True)):
                if _metadata(t) != meta:
                    raise RuntimeError(
                        "torch.utils.checkpoint: Recomputed values for the following tensors "
                        "have different metadata than during the forward pass.\n"
                        f"tensor at position {i}:\nsaved metadata: {_describe(meta)}\n"
                        f"recomputed metadata: {_describe(_metadata(t))}\n"
                    )
        self.recomputed = dict(enumerate(saved))


def _metadata(t: Tensor) -> tuple:
    return tuple(t.shape), t.dtype, t.device


def _describe(meta: tuple) -> str:
    shape, dtype, device = meta
    return f"{{'shape': {shape}, 'dtype': {dtype}, 'device': {device}}}"


# ---------------------------------------------------------------------------------------- API
def checkpoint(
    function: Callable[..., Any],
    *args: Any,
    use_reentrant: bool | None = None,
    determinism_check: str = "default",
    preserve_rng_state: bool = True,
    **kwargs: Any,
) -> Any:
    """Run `function(*args, **kwargs)` keeping none of its saved activations; recompute in backward.

    `use_reentrant` should be given: without it PyTorch 2.13 warns and uses the reentrant form,
    and so does this. Keyword arguments for `function` are for the non-reentrant form only.
    `determinism_check="default"` compares the shape, dtype and device of each recomputed value
    with the original's; `"none"` skips that.
    """
    if use_reentrant is None:
        warnings.warn(USE_REENTRANT_WARNING, stacklevel=2)
        use_reentrant = True
    if determinism_check not in ("default", "none"):
        raise ValueError(
            f"determinism_check should be one of ['default', 'none'], but got {determinism_check}"
        )
    if use_reentrant:
        if kwargs:
            raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
        return _CheckpointFunction.apply(function, preserve_rng_state, *args)
    frame = _Frame(function, args, kwargs, preserve_rng_state, determinism_check == "default")
    with saved_tensors_hooks(frame.pack, _Frame.unpack):
        return function(*args, **kwargs)
