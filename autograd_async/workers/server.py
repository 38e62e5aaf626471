"""`WorkerServer`: serves a worker's methods (docs/wire-protocol.md, section 8) over the transport.

Forward calls run registered functions and module forwards on the worker's compute threads (an
`async def` function runs on the loop: it awaits, e.g. its peers), so the serving loop keeps
answering other peers while one computes. Under a distributed context they are recorded
(received leaves, sent outputs, parameters used). A `backward` request runs the recorded part on
the worker's engine with `grad_async`, keeps the parameters' gradients in the context and
returns the gradients of the received leaves. Receive nodes inside that part (calls the worker
made to its peers) recurse into those peers. What a peer makes the worker hold (frames, replies,
modules, contexts) counts against byte quotas per peer and in total (`ByteBudget`); what its
calls allocate counts against the worker's memory budget (`MemoryBudget`, workers/memory.py).
"""

from __future__ import annotations

import asyncio
import contextvars
import gc
import inspect
import logging
import os
import secrets
import ssl as ssl_module
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any

import numpy as np

from autograd_async import nn
from autograd_async.autograd import grad_async
from autograd_async.core.tensor import Tensor
from autograd_async.devices import Device, check_available
from autograd_async.distributed import Client, methods
from autograd_async.distributed.channel import Transport
from autograd_async.distributed.codec import check_simple, host_array, to_device
from autograd_async.distributed.connection import (
    DEFAULT_FRAME_IDLE_TIMEOUT,
    DEFAULT_MAX_HANDSHAKES,
    ConnectionInfo,
)
from autograd_async.distributed.context import current_context
from autograd_async.distributed.errors import ProtocolError, ResourceExhausted
from autograd_async.distributed.methods import (
    bind_handlers,
    check_arg_specs,
    check_call,
    handles,
)
from autograd_async.distributed.quota import (
    DEFAULT_MAX_PEER_BYTES,
    DEFAULT_MAX_TOTAL_BYTES,
    ByteBudget,
    format_bytes,
)
from autograd_async.distributed.server import Server, serve
from autograd_async.distributed.wire import DEFAULT_MAX_FRAME_BYTES
from autograd_async.grad_mode import enable_grad, no_grad
from autograd_async.graph_task import nodes_run_in_caller_context

from . import allocator
from .contexts import (
    DEFAULT_MAX_CONTEXTS_PER_PEER,
    CallRecord,
    ContextStore,
    ParamKey,
    WorkerContext,
)
from .memory import DEFAULT_MAX_MEMORY, MemoryBudget, MemoryGuard
from .registry import DEFAULT_REGISTRY, Registry, worker_var

__all__ = ["DEFAULT_CONTEXT_TTL", "WorkerServer"]

logger = logging.getLogger("workers")

DEFAULT_CONTEXT_TTL = 300.0
Reply = tuple[dict[str, Any], list[np.ndarray]]

# The authenticated peer whose request is being served: quotas are counted by it.
caller_var: contextvars.ContextVar[str] = contextvars.ContextVar("workers_caller", default="?")


@dataclass
class ModuleEntry:
    """A module built for a peer: the module, its class name and the device its inputs go to."""

    module: nn.Module
    class_name: str
    device: Device
    owner: str = "?"  # the peer that created it
    nbytes: int = 0  # its parameters and buffers, counted against the owner's quota


@dataclass
class OptimizerEntry:
    """An optimizer built for a `DistributedOptimizer`, with the key of each parameter."""

    optimizer: Any
    params: list[tuple[ParamKey, Tensor]]


def _annotate(exc: BaseException, worker: str, context_id: Any) -> None:
    """Give an exception the node, worker and context that its error frame will carry."""
    try:
        if getattr(exc, "node", None) is None and getattr(exc, "node_name", None):
            exc.node = exc.node_name  # type: ignore[attr-defined]
        if getattr(exc, "worker", None) is None:
            exc.worker = worker  # type: ignore[attr-defined]
        if isinstance(context_id, int) and getattr(exc, "context_id", None) is None:
            exc.context_id = context_id  # type: ignore[attr-defined]
    except (AttributeError, TypeError):
        pass


class WorkerServer:
    """One worker: its devices, registry, modules, optimizers, contexts and peer client."""

    def __init__(
        self,
        name: str,
        *,
        token: bytes,
        devices: Sequence[str | Device] = ("cpu",),
        registry: Registry = DEFAULT_REGISTRY,
        peers: Mapping[str, str | tuple[str, int]] | None = None,
        context_ttl: float = DEFAULT_CONTEXT_TTL,
        peer_timeout: float = 30.0,
        ssl: ssl_module.SSLContext | None = None,
        max_frame_bytes: int | None = None,
        peer_ssl: ssl_module.SSLContext | None = None,
        insecure: bool = False,
        max_handshakes: int = DEFAULT_MAX_HANDSHAKES,
        max_peer_bytes: int = DEFAULT_MAX_PEER_BYTES,
        max_total_bytes: int = DEFAULT_MAX_TOTAL_BYTES,
        max_contexts_per_peer: int = DEFAULT_MAX_CONTEXTS_PER_PEER,
        frame_idle_timeout: float = DEFAULT_FRAME_IDLE_TIMEOUT,
        compute_threads: int | None = None,
        peer_transport: Transport | None = None,
        max_memory: int = DEFAULT_MAX_MEMORY,
        max_peer_memory: int | None = None,
        max_call_memory: int | None = None,
    ) -> None:
        self.name = name
        self.devices = [Device(d) for d in devices]
        if not self.devices:
            raise ValueError("a worker needs at least one device")
        for dev in self.devices:
            check_available(dev)
        self.registry = registry
        self.contexts = ContextStore(context_ttl, max_per_peer=max_contexts_per_peer)
        # Bytes held for each peer and in total: frames, replies, modules, contexts.
        self.budget = ByteBudget(max_peer_bytes, max_total_bytes, owner=f"worker {name!r}")
        # Bytes its calls allocate: per call, per peer, in all (default shares: 1/4, 1/2).
        self.memory = MemoryBudget(
            max_memory, per_peer=max_peer_memory, per_call=max_call_memory, owner=f"worker {name!r}"
        )
        self._frame_idle_timeout = frame_idle_timeout
        # Forward calls and other computations run here, never on the serving loop.
        self._compute = ThreadPoolExecutor(
            max_workers=compute_threads or max(2, len(self.devices)),
            thread_name_prefix=f"worker-{name}-compute",
        )
        self._memory_guard = MemoryGuard(self.memory, self._compute)
        # Peers can be added, moved or removed at any time: set_address / remove_address, or
        # remotely through `peers.update`. Without a transport they are reached over TCP.
        self.peers = Client(
            token=token, timeout=peer_timeout, name=name, ssl=peer_ssl, transport=peer_transport
        )
        for peer, address in (peers or {}).items():
            self.peers.set_address(peer, address)
        self.modules: dict[int, ModuleEntry] = {}
        self.optimizers: dict[int, OptimizerEntry] = {}
        self.requests = 0
        self._token = token
        self._ssl = ssl
        self._insecure = insecure
        self._max_handshakes = max_handshakes
        self._max_frame_bytes = max_frame_bytes
        self._incarnation = secrets.randbits(20)
        self._next_id = 0
        self._server: Server | None = None
        self._sweeper: asyncio.Task[None] | None = None
        self._background: set[asyncio.Task[Any]] = set()
        self._handlers = bind_handlers(self)  # @handles(...) below, one per method

    # ---------------------------------------------------------------- lifecycle
    @property
    def default_device(self) -> Device:
        """Where inputs of registered functions go: the first of the worker's devices."""
        return self.devices[0]

    @property
    def address(self) -> tuple[str, int]:
        """(host, port) the worker listens on."""
        if self._server is None:
            raise RuntimeError(f"worker {self.name!r} is not started")
        return self._server.address

    async def start(self, host: str = "127.0.0.1", port: int = 0, *, listen: bool = True) -> None:
        """Listen on host:port (with `listen=False`: serve only connections handed to `accept`,
        e.g. by a `MemoryTransport`) and start expiring idle contexts."""
        await self.peers.start()
        max_frame = (
            DEFAULT_MAX_FRAME_BYTES if self._max_frame_bytes is None else self._max_frame_bytes
        )
        self._server = await serve(
            self.handle,
            host,
            port,
            token=self._token,
            name=self.name,
            ssl=self._ssl,
            insecure=self._insecure,
            max_handshakes=self._max_handshakes,
            budget=self.budget,
            frame_idle_timeout=self._frame_idle_timeout,
            listen=listen,
            max_frame_bytes=max_frame,
        )
        self._sweeper = asyncio.get_running_loop().create_task(self._sweep())

    def accept(self) -> asyncio.BufferedProtocol:
        """The protocol for one new connection from a transport other than the listener's."""
        if self._server is None:
            raise ConnectionRefusedError(f"worker {self.name!r} is not started")
        return self._server.accept()

    async def stop(self, grace: float = 10.0) -> None:
        """Finish in-flight requests (up to `grace` s), release every context, close."""
        if self._sweeper is not None:
            self._sweeper.cancel()
        self._memory_guard.close()
        if self._server is not None:
            await self._server.shutdown(grace)
        released = self.contexts.release_all()
        await asyncio.gather(*(c.release_touched(2.0) for c in released))
        for task in list(self._background):
            task.cancel()
        await self.peers.aclose()
        self.modules.clear()
        self.optimizers.clear()
        self._compute.shutdown(wait=False, cancel_futures=True)
        logger.info("worker %r stopped (%d contexts released)", self.name, len(released))

    async def _sweep(self) -> None:
        period = min(self.contexts.ttl / 4, 5.0)
        while True:
            await asyncio.sleep(period)
            for ctx in self.contexts.expire():
                logger.info("worker %r: context %d expired", self.name, ctx.id)
                self._uncharge_context(ctx)
                self._spawn(ctx.release_touched(min(self.peers.timeout, 10.0)))

    def _spawn(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    def _new_id(self) -> int:
        # Ids of a restarted worker differ, so a stale handle fails instead of hitting another.
        self._next_id += 1
        return (self._incarnation << 32) | self._next_id

    # --------------------------------------------------------------- dispatch
    async def handle(
        self, info: ConnectionInfo, method: str, kwargs: dict[str, Any], arrays: list[np.ndarray]
    ) -> Reply:
        """The transport handler: check the method's kwargs, run it, annotate its errors."""
        check_call(method, kwargs, len(arrays))
        self.requests += 1
        token = worker_var.set(self)
        caller = caller_var.set(info.peer_name)
        try:
            return await self._handlers[method](kwargs, arrays)
        except Exception as exc:
            _annotate(exc, self.name, kwargs.get("context_id"))
            raise
        finally:
            caller_var.reset(caller)
            worker_var.reset(token)

    async def run_compute(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        """Run `fn(*args, **kwargs)` on a compute thread, with the caller's ContextVars (grad
        mode, context, current worker); the serving loop stays free meanwhile."""
        context = contextvars.copy_context()
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._compute, lambda: context.run(fn, *args, **kwargs))

    async def counted(self, what: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
        """`await fn(*args, **kwargs)` with what it allocates counted against the caller's
        memory shares (`MemoryGuard.run`)."""
        return await self._memory_guard.run(caller_var.get(), what, fn, *args, **kwargs)

    # ----------------------------------------------------------------- quotas
    def _charge_context(self, ctx: WorkerContext, *, refuse: bool) -> None:
        """Bring the bytes counted for `ctx` up to date; with `refuse`, growth over a quota
        raises ResourceExhausted (and is not counted)."""
        delta = ctx.nbytes - ctx.charged
        if delta > 0 and refuse:
            self.budget.reserve(ctx.owner, delta, f"more records in context {ctx.id}")
        elif delta > 0:
            self.budget.force(ctx.owner, delta)
        else:
            self.budget.release(ctx.owner, -delta)
        ctx.charged += delta

    def _uncharge_context(self, ctx: WorkerContext) -> None:
        self.budget.release(ctx.owner, ctx.charged)
        ctx.charged = 0

    def check_device(self, device: Any) -> Device:
        """`device` as a Device, refused unless it is one of the worker's."""
        dev = Device(device)
        if dev not in self.devices:
            served = ", ".join(str(d) for d in self.devices)
            raise ValueError(
                f"worker {self.name!r} does not serve device {dev}; its devices: {served}"
            )
        return dev

    # --------------------------------------------------------------- forward
    @handles(methods.CALL)
    async def _call(self, kw: dict[str, Any], arrays: list[np.ndarray]) -> Reply:
        name = kw["function"]
        fn = self.registry.function(name, self.name)
        what = f"call {name!r}"
        check_arg_specs(kw["args"], len(arrays))
        host_args = [arrays[s["tensor"]] if "tensor" in s else s["value"] for s in kw["args"]]
        out_bytes = self.registry.output_nbytes(name, host_args, kw["kwargs"])
        if out_bytes:  # sized before the work: refused before anything is allocated
            self.memory.check(caller_var.get(), what, out_bytes)
            self.budget.ensure_fits(
                caller_var.get(), out_bytes, f"a reply of {format_bytes(out_bytes)} to {what}"
            )
        return await self.counted(what, self._forward, fn, kw, arrays, self.default_device, [])

    @handles(methods.MODULE_FORWARD)
    async def _module_forward(self, kw: dict[str, Any], arrays: list[np.ndarray]) -> Reply:
        module_id = kw["module_id"]
        entry = self._module(module_id)
        params = [
            ((module_id, n), p) for n, p in entry.module.named_parameters() if p.requires_grad
        ]
        return await self.counted(
            f"forward of module {module_id} ({entry.class_name})",
            self._forward,
            entry.module,
            kw,
            arrays,
            entry.device,
            params,
        )

    async def _forward(
        self,
        fn: Any,
        kw: dict[str, Any],
        arrays: list[np.ndarray],
        device: Device,
        params: list[tuple[ParamKey, Tensor]],
    ) -> Reply:
        check_arg_specs(kw["args"], len(arrays))
        flags = kw["requires_grad"]
        if len(flags) != len(arrays):
            raise ProtocolError(f"requires_grad has {len(flags)} flags for {len(arrays)} arrays")
        context_id = kw.get("context_id")
        ctx = (
            self.contexts.get_or_create(context_id, caller_var.get())
            if context_id is not None
            else None
        )
        record = ctx is not None and bool(kw.get("record"))
        tensors = [
            to_device(a, device, record and f and a.dtype.kind in "fc")
            for a, f in zip(arrays, flags, strict=True)
        ]
        args = [tensors[s["tensor"]] if "tensor" in s else s["value"] for s in kw["args"]]
        with self.contexts.using(ctx) if ctx is not None else nullcontext():
            token = current_context.set(ctx)
            try:
                with enable_grad() if record else no_grad():
                    if inspect.iscoroutinefunction(fn):  # it awaits (its peers): on the loop
                        out = fn(*args, **kw["kwargs"])
                    else:  # it computes: on a compute thread, the loop keeps serving
                        out = await self.run_compute(fn, *args, **kw["kwargs"])
                    if inspect.isawaitable(out):
                        out = await out
            finally:
                current_context.reset(token)
        single = not isinstance(out, tuple | list)
        specs: list[dict[str, Any]] = []
        sent: list[np.ndarray] = []
        outputs: list[Tensor] = []
        for i, item in enumerate([out] if single else out):
            if isinstance(item, Tensor):
                specs.append({"tensor": len(sent), "requires_grad": record and item.requires_grad})
                sent.append(host_array(item.detach()))
                outputs.append(item)
            else:
                check_simple(item, f"output {i}")
                specs.append({"value": item})
        result: dict[str, Any] = {"outputs": specs, "single": single}
        if record and any(t.requires_grad for t in outputs):
            leaves = [t for t in tensors if t.requires_grad]
            assert ctx is not None
            call_id = ctx.add_call(CallRecord(leaves, outputs, params))
            try:
                self._charge_context(ctx, refuse=True)
            except ResourceExhausted:
                del ctx.records[call_id]  # not kept: the caller gets the refusal instead
                raise
            result["call_id"] = call_id
        return result, sent

    # -------------------------------------------------------------- backward
    @handles(methods.BACKWARD)
    async def _backward(self, kw: dict[str, Any], arrays: list[np.ndarray]) -> Reply:
        context_id, call_id = kw["context_id"], kw["call_id"]
        ctx = self.contexts.get(context_id)
        if ctx is None:
            raise LookupError(
                f"worker {self.name!r} has no context {context_id}: it was "
                f"released, or expired after {self.contexts.ttl} s idle"
            )
        record = ctx.records.get(call_id)
        if record is None:
            raise RuntimeError(
                f"context {context_id} on worker {self.name!r} holds no call {call_id}: its "
                "graph was freed by an earlier backward (use retain_graph=True to backward "
                "through it twice)"
            )
        slots = kw["outputs"]
        if len(slots) != len(arrays):
            raise ProtocolError(f"backward got {len(arrays)} gradients for {len(slots)} outputs")
        roots, grads = [], []
        for slot, array in zip(slots, arrays, strict=True):
            if slot >= len(record.outputs) or not record.outputs[slot].requires_grad:
                raise ProtocolError(f"call {call_id} has no differentiable output {slot}")
            out = record.outputs[slot]
            if tuple(array.shape) != tuple(out.shape):
                raise ValueError(
                    f"gradient of shape {tuple(array.shape)} for output {slot} of "
                    f"shape {tuple(out.shape)}"
                )
            roots.append(out)
            grads.append(to_device(array.astype(out.dtype, copy=False), out.device))
        retain = kw["retain_graph"]
        if not retain:
            del ctx.records[call_id]
        n_leaves, n_params = len(record.leaves), len(record.params)
        inputs = [*record.leaves, *(p for _, p in record.params), *ctx.anchors()]
        found: Sequence[Tensor | None] = ()
        if roots and inputs:
            with self.contexts.using(ctx):
                ctx.retain_graph = retain
                found = await self.counted(
                    f"backward of call {call_id}", _backward_counted, roots, inputs, grads, retain
                )
        for (key, _), g in zip(record.params, found[n_leaves : n_leaves + n_params]):
            if g is not None:
                ctx.accumulate(key, g._data)
        # Gradients already exist: they are counted, never refused (a freed record usually
        # gives back more than they take).
        self._charge_context(ctx, refuse=False)
        send_slots, sent = [], []
        for i, g in enumerate(found[:n_leaves]):
            if g is not None:
                send_slots.append(i)
                sent.append(host_array(g))
        return {"inputs": send_slots}, sent

    # --------------------------------------------------------------- contexts
    @handles(methods.CONTEXT_RELEASE)
    async def _context_release(self, kw: dict[str, Any], arrays: list[np.ndarray]) -> Reply:
        ctx = self.contexts.release(kw["context_id"])
        if ctx is not None:
            self._uncharge_context(ctx)
            await ctx.release_touched(min(self.peers.timeout, 10.0))
        return {"released": ctx is not None}, []

    @handles(methods.CONTEXT_GRADIENTS)
    async def _context_gradients(self, kw: dict[str, Any], arrays: list[np.ndarray]) -> Reply:
        ctx = self.contexts.get(kw["context_id"])
        wanted = kw.get("module_id")
        if wanted is not None:
            self._module(wanted)
        items = sorted((ctx.grads if ctx is not None else {}).items())
        items = [(k, g) for k, g in items if wanted is None or k[0] == wanted]
        copies = await self.run_compute(lambda: [_host_copy(g) for _, g in items])
        return ({"modules": [k[0] for k, _ in items], "names": [k[1] for k, _ in items]}, copies)

    # ---------------------------------------------------------------- modules
    def _module(self, module_id: int) -> ModuleEntry:
        entry = self.modules.get(module_id)
        if entry is None:
            raise LookupError(
                f"worker {self.name!r} has no module {module_id} (deleted, or "
                "made by an earlier run of the worker)"
            )
        return entry

    def build_module(
        self, class_name: str, kwargs: dict[str, Any], *, device: Any = None, dtype: Any = None
    ) -> tuple[nn.Module, Device]:
        """Build an allow-listed module; a `device` must be one of the worker's."""
        factory = self.registry.module_class(class_name, self.name)
        kwargs = dict(kwargs)
        dev = self.check_device(kwargs.get("device", device) or self.default_device)
        accepted = _parameters(factory)
        if "device" in accepted:
            kwargs["device"] = str(dev)
        if dtype is not None and "dtype" in accepted:
            kwargs.setdefault("dtype", dtype)
        module = factory(**kwargs)
        if not isinstance(module, nn.Module):
            raise TypeError(f"{class_name} built a {type(module).__name__}, not an nn.Module")
        return module, dev

    @handles(methods.MODULE_CREATE)
    async def _module_create(self, kw: dict[str, Any], arrays: list[np.ndarray]) -> Reply:
        owner = caller_var.get()
        self.budget.ensure_room(owner, f"module {kw['class_name']}")  # before building it
        module, device = await self.counted(
            f"module {kw['class_name']}",
            self.run_compute,
            self.build_module,
            kw["class_name"],
            kw["kwargs"],
        )
        nbytes = sum(t._data.nbytes for t in module.state_dict().values())
        # Built already (its size is known only now); refused, it is dropped at once.
        self.budget.reserve(owner, nbytes, f"module {kw['class_name']} of {format_bytes(nbytes)}")
        module_id = self._new_id()
        self.modules[module_id] = ModuleEntry(module, kw["class_name"], device, owner, nbytes)
        params = [
            {"name": n, "shape": list(p.shape), "dtype": str(p.dtype), "device": str(p.device)}
            for n, p in module.named_parameters()
        ]
        return {"module_id": module_id, "parameters": params, "repr": repr(module)}, []

    @handles(methods.MODULE_DELETE)
    async def _module_delete(self, kw: dict[str, Any], arrays: list[np.ndarray]) -> Reply:
        module_id = kw["module_id"]
        entry = self._module(module_id)
        del self.modules[module_id]
        self.budget.release(entry.owner, entry.nbytes)
        for ctx in self.contexts:
            ctx.forget_module(module_id)
        return {"deleted": True}, []

    @handles(methods.MODULE_TRAIN)
    async def _module_train(self, kw: dict[str, Any], arrays: list[np.ndarray]) -> Reply:
        self._module(kw["module_id"]).module.train(kw["mode"])
        return {}, []

    @handles(methods.MODULE_STATE_DICT)
    async def _module_state_dict(self, kw: dict[str, Any], arrays: list[np.ndarray]) -> Reply:
        state = self._module(kw["module_id"]).module.state_dict()
        copies = await self.run_compute(
            lambda: [np.array(host_array(t), copy=True) for t in state.values()]
        )
        return {"names": list(state)}, copies

    @handles(methods.MODULE_LOAD_STATE_DICT)
    async def _module_load_state_dict(self, kw: dict[str, Any], arrays: list[np.ndarray]) -> Reply:
        entry = self._module(kw["module_id"])
        names = kw["names"]
        if len(names) != len(arrays):
            raise ProtocolError(f"load_state_dict got {len(arrays)} arrays for {len(names)} names")
        state = {n: to_device(a, entry.device) for n, a in zip(names, arrays, strict=True)}
        missing, unexpected = await self.run_compute(
            entry.module.load_state_dict, state, strict=kw["strict"]
        )
        return {"missing": list(missing), "unexpected": list(unexpected)}, []

    # ------------------------------------------------------------- optimizers
    @handles(methods.OPTIM_CREATE)
    async def _optim_create(self, kw: dict[str, Any], arrays: list[np.ndarray]) -> Reply:
        factory = self.registry.optimizer_class(kw["class_name"], self.name)
        params: list[tuple[ParamKey, Tensor]] = []
        for i, spec in enumerate(kw["params"]):
            module_id, name = spec.get("module_id"), spec.get("name")
            if not isinstance(module_id, int) or not isinstance(name, str):
                raise ProtocolError(f"params[{i}] must be {{'module_id': int, 'name': str}}")
            found = dict(self._module(module_id).module.named_parameters()).get(name)
            if found is None:
                raise LookupError(
                    f"module {module_id} on worker {self.name!r} has no parameter {name!r}"
                )
            params.append(((module_id, name), found))
        optimizer = factory([p for _, p in params], **kw["kwargs"])
        optimizer_id = self._new_id()
        self.optimizers[optimizer_id] = OptimizerEntry(optimizer, params)
        return {"optimizer_id": optimizer_id}, []

    @handles(methods.OPTIM_STEP)
    async def _optim_step(self, kw: dict[str, Any], arrays: list[np.ndarray]) -> Reply:
        entry = self.optimizers.get(kw["optimizer_id"])
        if entry is None:
            raise LookupError(f"worker {self.name!r} has no optimizer {kw['optimizer_id']}")
        ctx = self.contexts.get(kw["context_id"])
        grads = ctx.grads if ctx is not None else {}
        stepped = 0
        try:
            for key, param in entry.params:
                g = grads.get(key)
                param.grad = None if g is None else Tensor._wrap(g, param.device)
                stepped += g is not None
            if stepped:
                # Its state (Adam's moments) is made here: counted like a call's arrays.
                await self.counted(
                    f"step of optimizer {kw['optimizer_id']}",
                    self.run_compute,
                    entry.optimizer.step,
                )
        finally:
            for _, param in entry.params:
                param.grad = None
        return {"stepped": stepped}, []

    @handles(methods.OPTIM_DELETE)
    async def _optim_delete(self, kw: dict[str, Any], arrays: list[np.ndarray]) -> Reply:
        return {"deleted": self.optimizers.pop(kw["optimizer_id"], None) is not None}, []

    # ------------------------------------------------------------------ peers
    @handles(methods.PEERS_UPDATE)
    async def _peers_update(self, kw: dict[str, Any], arrays: list[np.ndarray]) -> Reply:
        """Add or move peers (name -> address) and forget others, while serving: how a worker
        learns of peers started after it (only an authenticated peer gets this far)."""
        addresses = kw.get("addresses", {})
        for peer, address in addresses.items():
            if not peer or not isinstance(address, str):
                raise ProtocolError(
                    f"peers.update: peer {peer!r} needs a non-empty name and a "
                    f"str address, got {address!r}"
                )
        # Parse every address before changing any: a bad one leaves the peers as they were.
        for address in addresses.values():
            self.peers.transport.parse_address(address)
        for peer in kw.get("remove", []):
            self.peers.remove_address(peer)
        for peer, address in addresses.items():
            self.peers.set_address(peer, address)
        logger.info(
            "worker %r: peers now %s (updated by %r)",
            self.name,
            sorted(self.peers.workers),
            caller_var.get(),
        )
        return {"peers": sorted(self.peers.workers)}, []

    # ------------------------------------------------------------------ stats
    @handles(methods.STATS)
    async def _stats(self, kw: dict[str, Any], arrays: list[np.ndarray]) -> Reply:
        # Arrays that outlived their call (a backward's gradients, sent after it ended, can sit
        # in reference cycles of its graph until the collector runs) are counted until a sweep
        # finds them gone: report what is held now.
        gc.collect()
        allocator.sweep()
        return {
            "name": self.name,
            "pid": os.getpid(),
            "devices": [str(d) for d in self.devices],
            "contexts": len(self.contexts),
            "context_ids": self.contexts.ids(),
            "expired_contexts": self.contexts.expired_total,
            "context_ttl": self.contexts.ttl,
            "modules": len(self.modules),
            "optimizers": len(self.optimizers),
            "requests": self.requests,
            "held_bytes": self.budget.held(),
            "peer_bytes": self.budget.held(caller_var.get()),
            "memory_bytes": self.memory.held(),
            "peer_memory_bytes": self.memory.held(caller_var.get()),
            "memory_limits": {
                "total": self.memory.total,
                "per_peer": self.memory.per_peer,
                "per_call": self.memory.per_call,
            },
            "connections": self._server.connection_count if self._server is not None else 0,
            "peers": self.peers.workers,
            "functions": sorted(self.registry.functions),
            "module_classes": sorted(self.registry.module_classes),
            "optimizer_classes": sorted(self.registry.optimizer_classes),
        }, []


def _parameters(factory: Any) -> set[str]:
    try:
        return set(inspect.signature(factory).parameters)
    except (TypeError, ValueError):
        return set()


def _host_copy(array: Any) -> np.ndarray:
    """A NumPy copy of a device array (a gradient kept in a context must not be shared)."""
    return np.array(array, copy=True) if isinstance(array, np.ndarray) else array.get()


async def _backward_counted(roots: list, inputs: list, grads: list, retain: bool) -> Sequence:
    """The gradients of a backward request, its nodes' allocations counted on the caller's
    share: they run on the engine's device threads, in a copy of this context."""
    with nodes_run_in_caller_context():
        return await grad_async(
            roots, inputs, grad_outputs=grads, retain_graph=retain, allow_unused=True
        )
