# cython: freethreading_compatible=True
"""The autograd graph: nodes, edges, sequence numbers, hooks and the leaf accumulator.

A node is created by the forward pass of an op; its `backward` is a call the engine makes. Nodes
keep few objects each (`__slots__`, hooks and metadata made only when used) because graph building
in a pure-Python engine is bound by allocation and the garbage collector.
"""

from __future__ import annotations

import itertools
import threading
import weakref
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from ..backends.stream_context import stream_overrides

if TYPE_CHECKING:
    from ..devices import Device
    from .tensor import Tensor

# AccumulateGrad outranks every other node in a ready queue, as in PyTorch (UINT64_MAX).
ACCUMULATE_GRAD_SEQUENCE_NR = 2**64 - 1


class _SequenceCounter(threading.local):
    """Sequence numbers count per creating thread from 0, as PyTorch's do."""

    def __init__(self) -> None:
        self.next = itertools.count().__next__


_sequence = _SequenceCounter()


def next_sequence_nr() -> int:
    """Take the next sequence number of the calling thread."""
    return _sequence.next()


NO_EDGE = (None, 0)

# A node of any class: `init_node` gives back the node it was given, its class unchanged.
AnyNode = TypeVar("AnyNode", bound="Node")


def init_node(
    node: AnyNode, device: Device, inputs: Any = (), needs: Any = (), seq: int | None = None
) -> AnyNode:
    """Give a new node its fields: device, sequence number, edges, no hooks or metadata yet.

    One edge per input: where `needs` marks it, the input's grad_fn output or its leaf
    accumulator (`gradient_edge` of `history`, written out here because this runs for every
    input of every recorded op); else no edge. The sequence number is the calling thread's next
    one unless `seq` is given (AccumulateGrad outranks everything with its own). PyTorch takes it
    when the node is constructed: for an op only when the op records, for a custom Function on
    every `apply`; both collect their edges then too, before forward runs.
    """
    # `_sequence.next` directly: one Python call less per recorded node than next_sequence_nr().
    node._seq = _sequence.next() if seq is None else seq
    node.device = device
    # The stream its forward ran on, for its backward (PyTorch's stream semantics); None: the
    # device's default stream, the usual case, which costs this one per-thread read.
    overrides = stream_overrides.get()
    node._stream = None if overrides is None else overrides.get(device)
    node._hooks = None
    node._metadata = None
    node._released = False
    edges: list[Any] = []
    for x, wants in zip(inputs, needs):
        if wants:
            fn = x._grad_fn
            if fn is not None:
                edges.append(fn)
                edges.append(x._output_nr)
            else:
                edges.append(grad_accumulator(x))
                edges.append(0)
        else:
            edges.append(None)
            edges.append(0)
    node._edges = tuple(edges)
    return node


class RemovableHandle:
    """Returned by hook registration; `remove()` unregisters the hook."""

    __slots__ = ("_container", "_hook")

    def __init__(self, container: list, hook: object) -> None:
        # `hook` is whatever the container holds for it: a function, or a module's HookEntry.
        self._container = container
        self._hook = hook

    def remove(self) -> None:
        """Unregister the hook (no-op when already removed)."""
        try:
            self._container.remove(self._hook)
        except ValueError:
            pass

    def __enter__(self) -> RemovableHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.remove()


class NodeHooks:
    """Hooks of one node, created on first registration so hook-free nodes pay nothing."""

    __slots__ = ("tensor_pre", "retains_grad", "pre", "post")

    def __init__(self) -> None:
        self.tensor_pre: dict[int, list[Callable]] = {}
        self.retains_grad: dict[int, weakref.ref] = {}
        self.pre: list[Callable] = []
        self.post: list[Callable] = []


class Node:
    """A backward function of the graph (PyTorch's `grad_fn`).

    Subclasses implement `backward(*grad_outputs)` returning one gradient (or None) per input edge.
    """

    __slots__ = (
        "_edges",
        "_seq",
        "device",
        "_out_meta",
        "_hooks",
        "_metadata",
        "_released",
        "_stream",
        "__weakref__",
    )

    # Nodes whose backward is a coroutine run as tasks on their device loop.
    is_async = False
    # Nodes that run even when no gradient reached them (the root of several outputs).
    runs_without_grad = False
    # The event loop whose thread a node's backward needs (a distributed receive sets its
    # client's): a blocking backward on that thread would wait on itself.
    needs_event_loop: Any = None
    # A backward that waits for work on other threads (a collective): kept off callers' threads.
    waits_on_other_threads = False

    # The edges as one flat tuple, `(node, output_nr)` per input laid end to end: one object
    # for the collector to visit while the graph lives, where a tuple per edge would be one
    # more per input (`next_functions` builds the pairs when asked, as PyTorch's does).
    _edges: tuple[Any, ...]
    device: Device
    _out_meta: tuple[tuple[tuple[int, ...], Any], ...]
    _seq: int
    _hooks: NodeHooks | None
    _metadata: dict[str, Any] | None
    _released: bool
    # The backend's handle of the stream forward ran on; None: the device's default stream.
    _stream: Any
    # Each subclass defines it with its own arity: `backward(*grad_outputs)` returns one gradient
    # (or None) per input edge, or a coroutine of them when `is_async`.
    backward: Callable[..., Any]
    # `node(*grad_outputs)`: its backward outside a pass, gradients as Tensors (installed by
    # `node_evaluation`, which sits above the graph).
    __call__: Callable[..., Any]

    @property
    def next_functions(self) -> tuple[tuple[Node | None, int], ...]:
        """`(node, output_nr)` per input: where each input's gradient goes (`(None, 0)`: none)."""
        pairs = iter(self._edges)
        return tuple(zip(pairs, pairs))

    @next_functions.setter
    def next_functions(self, edges: Sequence[tuple[Node | None, int]]) -> None:
        self._edges = tuple(part for nxt, nr in edges for part in (nxt, nr))

    def name(self) -> str:
        """The node's name, e.g. `MulBackward0`."""
        return type(self).__name__

    def _sequence_nr(self) -> int:
        """The node's sequence number (its place in the ready queue's order)."""
        return self._seq

    @property
    def metadata(self) -> dict[str, Any]:
        """A dict for the user's annotations (and the forward traceback in anomaly mode)."""
        if self._metadata is None:
            self._metadata = {}
        return self._metadata

    def _hooks_or_new(self) -> NodeHooks:
        if self._hooks is None:
            self._hooks = NodeHooks()
        return self._hooks

    def register_hook(self, fn: Callable) -> RemovableHandle:
        """Post-hook `fn(grad_inputs, grad_outputs)`; may return replacement grad_inputs."""
        hooks = self._hooks_or_new()
        hooks.post.append(fn)
        return RemovableHandle(hooks.post, fn)

    def register_prehook(self, fn: Callable) -> RemovableHandle:
        """Pre-hook `fn(grad_outputs)`; may return replacement grad_outputs."""
        hooks = self._hooks_or_new()
        hooks.pre.append(fn)
        return RemovableHandle(hooks.pre, fn)

    def _register_tensor_pre_hook(self, output_nr: int, fn: Callable) -> RemovableHandle:
        hooks = self._hooks_or_new()
        bucket = hooks.tensor_pre.setdefault(output_nr, [])
        bucket.append(fn)
        return RemovableHandle(bucket, fn)

    def _retain_grad_of(self, tensor: Tensor) -> None:
        self._hooks_or_new().retains_grad[tensor._output_nr] = weakref.ref(tensor)

    def release_saved(self) -> None:
        """Drop what the node saved for backward (after backward, unless the graph is kept)."""
        self._released = True

    def __repr__(self) -> str:
        return f"<{self.name()} object at {hex(id(self))}>"

    def __lt__(self, other: Node) -> bool:
        # Only for heap ties across tasks that share a key; never expected to decide anything.
        return id(self) < id(other)


class GraphRoot(Node):
    """The root of a backward pass over several outputs: hands each root its starting gradient."""

    __slots__ = ("_grads",)
    runs_without_grad = True

    def __init__(self, edges: Sequence[tuple[Node, int]], grads: Sequence[Any], dev: Device):
        init_node(self, dev)  # PyTorch's GraphRoot takes a sequence number too
        self.next_functions = tuple(edges)
        self._grads = tuple(grads)
        self._out_meta = ()

    def backward(self, *_: Any) -> tuple:
        """The starting gradients."""
        return self._grads


class AccumulateGrad(Node):
    """The node of a leaf that requires grad: adds incoming gradients into `variable.grad`."""

    __slots__ = ("variable", "_owned_grad")

    def __init__(self, variable: Tensor) -> None:
        self.variable = variable
        init_node(self, variable.device, seq=ACCUMULATE_GRAD_SEQUENCE_NR)
        # The array's own shape and NumPy dtype, as every node keeps them: an arriving gradient's
        # dtype compared with the library's dtype object would go through NumPy's slow
        # conversion of the other operand (two attribute errors per comparison).
        data = variable._data
        self._out_meta = ((data.shape, data.dtype),)
        # The array we made by summing, so later gradients may be added to it in place safely.
        self._owned_grad = None

    def release_saved(self) -> None:
        """A leaf's accumulator keeps its variable: it is the graph's handle on the leaf."""

    def backward(self, grad: Any) -> tuple:
        """Add `grad` into the variable's `.grad` (the first one without a copy when unshared).

        The leaf's own hooks (`register_hook`) are this node's tensor pre-hooks: the graph task
        runs them before the node's pre-hooks, as PyTorch does.
        """
        Tensor = tensor_module.Tensor  # noqa: N806 - the class, named as everywhere else
        variable = self.variable
        if isinstance(grad, np.generic):  # 0-d arithmetic gives NumPy scalars; .grad is an array
            grad = np.array(grad)
        current = variable._grad
        if isinstance(grad, Tensor):  # create_graph: keep the gradient's own graph
            # As PyTorch, a differentiable copy: the gradient may be another leaf's too (`x + y`)
            # or the caller's own tensor, and `.grad` must own its memory.
            variable._grad = grad.clone() if current is None else current + grad
            self._owned_grad = None
        elif current is None:
            if not _is_dense_and_writeable(grad) or not claim(grad):
                # Its memory is held elsewhere (another leaf's .grad, the caller's gradient):
                # PyTorch steals a gradient only when nothing else refers to it, so copy.
                grad = grad.copy()
                self._owned_grad = grad
            else:
                self._owned_grad = None
            variable._grad = Tensor._wrap(grad, variable.device)
        elif current.grad_fn is None:
            # As PyTorch's `grad += new`: the same .grad tensor, one version later. Its array is
            # summed into in place when this node made it, else replaced by a sum it then owns.
            if current._data is self._owned_grad:
                current._data += grad
            else:
                current._data = self._owned_grad = current._data + grad
            current._bump_version()
        else:
            summed = current._data + grad
            self._owned_grad = summed
            variable._grad = Tensor._wrap(summed, variable.device)
        for hook in variable._post_acc_hooks or ():
            check_post_accumulate_result(hook(variable), variable)
        return ()


def _is_dense_and_writeable(array: Any) -> bool:
    """False for a read-only array or a broadcast view (a zero stride): `.grad` can't be one."""
    flags = array.flags
    if not getattr(flags, "writeable", True):  # NumPy's broadcast_to views are read-only
        return False
    return array.size <= 1 or 0 not in array.strides


def check_post_accumulate_result(result: Any, variable: Tensor) -> None:
    """A post-accumulate-grad hook returns None (or its tensor): PyTorch's errors otherwise."""
    if result is None or result is variable:
        return
    if isinstance(result, tensor_module.Tensor):
        raise RuntimeError("Tensor post accumulate grad hooks should return None.")
    raise TypeError(f"expected Variable, but hook returned '{type(result).__name__}'")


class HeldArrays:
    """The memory owners of gradient arrays held outside a graph task.

    An owner is held once stored into a leaf's `.grad` without a copy, or given by the caller as a
    starting gradient. A node that passes one gradient to several inputs (`a + b`), or to a view
    (`reshape`), would otherwise make a leaf's `.grad` share memory with another leaf's or with the
    caller's array, and an in-place change of one (gradient clipping, `grad.mul_`) would change the
    other.

    Plain weak references without callbacks keep a claim at a dict insert: a
    `WeakValueDictionary` costs several microseconds per claim plus a callback when each array
    dies, paid once per leaf per backward. Dead entries are swept when the dict has doubled.
    """

    __slots__ = ("_refs", "_sweep_at", "_lock")

    def __init__(self) -> None:
        self._refs: dict[int, weakref.ref] = {}
        self._sweep_at = 1024
        self._lock = threading.Lock()

    def claim(self, array: Any) -> bool:
        """Mark the memory of `array` as held; False when it already was (or can't be tracked)."""
        owner = array.base
        if owner is None:
            owner = array
        key = id(owner)
        try:
            ref = weakref.ref(owner)
        except TypeError:  # not weak-referenceable: never shared without a copy
            return False
        with self._lock:  # workers of several devices claim at once
            refs = self._refs
            held = refs.get(key)
            if held is not None and held() is owner:
                return False
            refs[key] = ref
            if len(refs) >= self._sweep_at:
                self._sweep()
        return True

    def _sweep(self) -> None:
        # A dead entry's id may be reused by a new array: `held() is owner` above already tells
        # them apart, so sweeping only bounds the memory.
        self._refs = {key: ref for key, ref in self._refs.items() if ref() is not None}
        self._sweep_at = max(1024, 2 * len(self._refs))


# One per process: a gradient array can reach a leaf from any graph task on any thread.
held_arrays = HeldArrays()
claim = held_arrays.claim


def grad_accumulator(tensor: Tensor) -> AccumulateGrad:
    """The leaf's AccumulateGrad, shared by every use while alive (held weakly by the leaf)."""
    ref = tensor._grad_accumulator
    node = ref() if ref is not None else None
    if node is None:
        node = AccumulateGrad(tensor)
        if tensor._hooks is not None:  # the leaf's hooks run as the node's tensor pre-hooks
            node._hooks_or_new().tensor_pre[0] = tensor._hooks
        tensor._grad_accumulator = weakref.ref(node)
    return node


# The module, not the class, and last: the tensor module imports this one's names. A name imported
# inside AccumulateGrad.backward instead would cost an import-system lookup per leaf per backward.
from . import tensor as tensor_module  # noqa: E402
