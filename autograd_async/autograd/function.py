"""Custom differentiable functions: subclass `Function` with static `forward` and `backward`.

`backward` may be `async def`: the engine then runs it as a task on its node's device loop, where it
may await (sleep, I/O, another `backward_async`) while that worker keeps running other nodes.
"""

from __future__ import annotations

import functools
import inspect
import warnings
from collections.abc import Callable
from typing import Any, ClassVar

from ..core.graph import Node
from ..core.history import (
    device_mismatch,
    init_node,
    keep_forward_trace,
    rebase_history,
    refresh_if_stale,
    set_history,
)
from ..core.op import DETACHED_MESSAGE, RELEASED_MESSAGE, version_error
from ..core.saved_hooks import Hooks, pack, unpack
from ..core.saved_hooks import active as active_saved_hooks
from ..core.tensor import INFERENCE_SAVED_MESSAGE, InferenceTensor, Tensor
from ..devices import CPU
from ..grad_mode import anomaly_enabled, grad_enabled, no_grad
from ..ops.inplace import VIEW_OF_LEAF_MESSAGE, rebase_view


class BackwardCFunction(Node):
    """The node of a custom Function's outputs; it is also the `ctx` its methods receive."""

    # No __slots__: ctx takes arbitrary attributes, as in PyTorch.
    _function: ClassVar[type[Function]]

    def __init__(self) -> None:
        # The graph fields (sequence number, device, hooks) come from `init_node`.
        self.needs_input_grad: tuple[bool, ...] = ()
        self._saved: tuple = ()
        # Per saved tensor (version, had a history); None once saved through hooks, unchecked.
        self._saved_versions: tuple | None = ()
        self._non_differentiable: set[int] = set()
        self._non_differentiable_outputs: set[int] = set()  # their positions, once returned
        self._dirty: set[int] = set()
        self._tensor_args: tuple[int, ...] = ()
        self._save_hooks: Hooks | None = None
        self.materialize_grads = True

    # ------------------------------------------------------------ ctx methods
    def save_for_backward(self, *tensors: Any) -> None:
        """Save tensors (or None) for backward; checked against in-place changes."""
        for t in tensors:
            if t is not None and not isinstance(t, Tensor):
                raise TypeError(
                    f"save_for_backward can only save tensors or None, got {type(t).__name__}"
                )
        self._saved = tensors
        # The version, and whether it had a history (a saved non-leaf must not be detach_()ed).
        self._saved_versions = tuple(
            None if t is None else (t._version, t.grad_fn is not None) for t in tensors
        )
        # Packed once the outputs have their place in the graph (see `_pack_saved`).
        self._save_hooks = active_saved_hooks()

    @property
    def saved_tensors(self) -> tuple:
        """The tensors given to `save_for_backward`."""
        if self._released:
            raise RuntimeError(RELEASED_MESSAGE)
        if self._saved_versions is None:  # saved through hooks: no version check, as PyTorch
            return tuple(None if p is None else unpack(p) for p in self._saved)
        for t, saved in zip(self._saved, self._saved_versions, strict=True):
            if t is None:
                continue
            version, had_history = saved
            if t._version != version:
                raise version_error(t, version)
            if had_history and t.grad_fn is None:
                raise RuntimeError(DETACHED_MESSAGE)
        return self._saved

    def _pack_saved(self) -> None:
        """Store the saved tensors through the hooks active at `save_for_backward`."""
        hooks = self._save_hooks
        self._save_hooks = None
        self._saved = tuple(None if t is None else pack(t, hooks) for t in self._saved)
        self._saved_versions = None

    def mark_non_differentiable(self, *tensors: Tensor) -> None:
        """Outputs that never carry a gradient."""
        self._non_differentiable.update(id(t) for t in tensors)

    def mark_dirty(self, *tensors: Tensor) -> None:
        """Inputs that forward changed in place; they must be returned as outputs.

        As PyTorch: each gets one version later and this node as its history (a view's base gets
        CopySlices).
        """
        self._dirty.update(id(t) for t in tensors)

    def set_materialize_grads(self, value: bool) -> None:
        """Whether missing output gradients reach backward as zeros (default) or None."""
        self.materialize_grads = bool(value)

    def release_saved(self) -> None:
        """Drop saved tensors."""
        self._released = True
        self._saved = ()

    # ------------------------------------------------------------ node backward
    def _wrap_grads(self, grads: tuple) -> tuple:
        return tuple(
            g if g is None or isinstance(g, Tensor) else Tensor._wrap(g, self.device) for g in grads
        )

    def backward(self, *grads: Any) -> Any:
        """Call the Function's backward (or its `vjp`) with Tensors."""
        return self._trim(self._function._user_backward(self, *self._wrap_grads(grads)))

    async def backward_async(self, *grads: Any) -> Any:
        """Await the Function's async backward (or its `vjp`) with Tensors."""
        return self._trim(await self._function._user_backward(self, *self._wrap_grads(grads)))

    def _trim(self, result: Any) -> tuple:
        """One gradient per forward argument in, one per edge (tensor argument) out.

        As PyTorch: extra trailing None gradients (for defaulted arguments) are dropped, and an
        argument that was not a tensor must get None.
        """
        result = result if isinstance(result, tuple) else (result,)
        wanted = len(self.needs_input_grad)
        if len(result) > wanted and all(g is None for g in result[wanted:]):
            result = result[:wanted]
        if len(result) != wanted:
            raise RuntimeError(
                f"function {self.name()} returned an incorrect number of gradients "
                f"(expected {wanted}, got {len(result)})"
            )
        positions = self._tensor_args
        if len(positions) == wanted:
            return result
        for i, g in enumerate(result):
            if g is not None and i not in positions:
                raise RuntimeError(
                    f"function {self.name()} returned a gradient different than None at position "
                    f"{i + 1}, but the corresponding forward input was not a Variable"
                )
        return tuple(result[i] for i in positions)


LEGACY_FUNCTION_MESSAGE = (
    "Legacy autograd function with non-static forward method is deprecated. Please use new-style "
    "autograd function with static forward method. (Example: "
    "https://pytorch.org/docs/stable/autograd.html#torch.autograd.Function)"
)

NO_BACKWARD_MESSAGE = (
    "You must implement either the backward or vjp method for your custom autograd.Function to "
    "use it with backward mode AD."
)


class Function:
    """Base of custom functions: `forward(ctx, *args)` and `backward(ctx, *grads)` are static."""

    _node_class: ClassVar[type[BackwardCFunction]]
    _setup_context_style: ClassVar[bool] = False
    # The subclass's `backward` or `vjp` (see `_user_backward`), set for each subclass.
    _user_backward: ClassVar[Callable[..., Any]]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._user_backward = staticmethod(_user_backward(cls))
        is_async = inspect.iscoroutinefunction(cls._user_backward)
        namespace: dict[str, Any] = {"_function": cls, "is_async": is_async}
        if is_async:
            namespace["backward"] = BackwardCFunction.backward_async
        cls._node_class = type(f"{cls.__name__}Backward", (BackwardCFunction,), namespace)
        cls._setup_context_style = cls.setup_context is not Function.setup_context

    @staticmethod
    def forward(ctx: Any, *args: Any, **kwargs: Any) -> Any:
        """Compute outputs from inputs (runs with grad mode off)."""
        raise NotImplementedError(
            "You must implement the forward function for custom autograd.Function."
        )

    @staticmethod
    def backward(ctx: Any, *grad_outputs: Any) -> Any:
        """Gradients for each forward input (None for non-tensor ones)."""
        raise NotImplementedError(NO_BACKWARD_MESSAGE)

    # PyTorch's other name for backward: a subclass implements one or the other.
    vjp = backward

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        warnings.warn(
            f"{type(self)} should not be instantiated. Methods on autograd functions are all "
            "static, so you should invoke them on the class itself. Instantiating an autograd "
            "function will raise an error in a future version of PyTorch.",
            DeprecationWarning,
            stacklevel=2,
        )

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Refused, as PyTorch: calling an instance is the legacy, non-static style."""
        raise RuntimeError(LEGACY_FUNCTION_MESSAGE)

    @classmethod
    def apply(cls, *args: Any, **kwargs: Any) -> Any:
        """Run forward and, when any input requires grad, record the node."""
        tensors = [a for a in args if isinstance(a, Tensor)]
        dev = tensors[0].device if tensors else CPU
        for t in tensors:
            if t._base is not None:
                refresh_if_stale(t)
            if t.device is not dev:
                raise device_mismatch(cls.__name__, dev, t.device)
        needs = tuple(isinstance(a, Tensor) and a._rg for a in args)
        requires = grad_enabled.get() and any(needs)
        # As PyTorch: the node takes its sequence number before forward runs, needed or not, and
        # its edges (tensor arguments only, as PyTorch's next_functions) when it records.
        wants = [t._rg for t in tensors] if requires else ()
        node = init_node(cls._node_class(), dev, tensors if requires else (), wants)
        node.needs_input_grad = needs
        with no_grad():
            if cls._setup_context_style:  # torch 2: forward(*args), then setup_context
                out = cls.forward(*args, **kwargs)
                cls.setup_context(node, args, out)
            else:
                out = cls.forward(node, *args, **kwargs)
        outputs = out if isinstance(out, tuple) else (out,)
        if node._dirty:
            _check_dirty_outputs(node, outputs, tensors, requires)
        if not requires:
            return out
        node._tensor_args = tuple(i for i, a in enumerate(args) if isinstance(a, Tensor))
        first = next((o for o in outputs if isinstance(o, Tensor)), None)
        if first is not None:
            node.device = first.device
        node._out_meta = tuple(
            (o._data.shape, o._data.dtype) if isinstance(o, Tensor) else ((), None) for o in outputs
        )
        if anomaly_enabled.get():
            keep_forward_trace(node)
        wrapped = _outputs_history(node, outputs, tensors)
        if any(type(t) is InferenceTensor for t in node._saved):
            raise RuntimeError(INFERENCE_SAVED_MESSAGE)
        if node._save_hooks is not None:
            node._pack_saved()
        return tuple(wrapped) if isinstance(out, tuple) else wrapped[0]

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple, output: Any) -> None:
        """Torch 2 style: save what backward needs, after `forward(*args)` ran without ctx."""
        raise NotImplementedError("setup_context is not overridden")


def _user_backward(cls: type[Function]) -> Callable:
    """The subclass's `backward` or its `vjp`, never both (PyTorch's rule)."""
    backward, vjp = cls.backward, cls.vjp
    if backward is not Function.backward and vjp is not Function.vjp:

        def both(*_: Any) -> Any:
            raise RuntimeError(
                "Implementing both 'backward' and 'vjp' for a custom Function is not allowed. "
                "You should only implement one of them."
            )

        return both
    return vjp if vjp is not Function.vjp else backward


DIRTY_VIEW_MESSAGE = (
    "If your Function modifies inplace an input that is a view of another Tensor, your Function "
    "cannot return more than one Tensor. This is not supported by the current autograd engine. "
    "You should either make sure the input is not a view (using .clone() for example) or make "
    "your Function only return one Tensor (potentially splitting it into two Functions: one "
    "doing the inplace that returns a single Tensor and a second one that does the other "
    "operations). You can ask on the forum https://discuss.pytorch.org/ if you need help to do "
    "this change."
)


def _check_dirty_outputs(node: Any, outputs: tuple, inputs: list, requires: bool) -> None:
    """Inputs marked dirty must be outputs; under grad mode a leaf that requires grad refuses."""
    returned = {id(o) for o in outputs}
    if not node._dirty <= returned:
        raise RuntimeError(
            "Some elements marked as dirty during the forward method were not returned as "
            "output. The inputs that are modified inplace must all be outputs of the Function."
        )
    several = sum(isinstance(o, Tensor) for o in outputs) > 1  # a duplicate counts, as PyTorch
    if requires and several and any(id(t) in node._dirty and t._base is not None for t in inputs):
        raise RuntimeError(DIRTY_VIEW_MESSAGE)
    for t in inputs:
        if id(t) not in node._dirty:
            continue
        if requires and t.grad_fn is None and t._rg:
            raise RuntimeError(
                "a leaf Variable that requires grad has been used in an in-place operation."
            )
        base = t._base
        if requires and base is not None and base.grad_fn is None and base._rg:
            raise RuntimeError(VIEW_OF_LEAF_MESSAGE)
        t._bump_version()


def _outputs_history(node: Any, outputs: tuple, inputs: list) -> list:
    """Every output given its place in the graph.

    A tensor returned several times stays one tensor, as in PyTorch: it takes the history of its
    last position, and the earlier ones receive no gradient.
    """
    last = {id(o): i for i, o in enumerate(outputs) if isinstance(o, Tensor)}
    made: dict[int, Any] = {}
    wrapped = []
    for i, o in enumerate(outputs):
        repeated = isinstance(o, Tensor) and last[id(o)] != i and id(o) not in node._dirty
        wrapped.append(None if repeated else _output_history(node, i, o, inputs))
        if not repeated and isinstance(o, Tensor):
            made[id(o)] = wrapped[-1]
    return [
        made[id(o)] if w is None and isinstance(o, Tensor) else w
        for w, o in zip(wrapped, outputs, strict=True)
    ]


def _output_history(node: Any, i: int, o: Any, inputs: list) -> Any:
    """Output `i` of the Function, given its place in the graph."""
    if not isinstance(o, Tensor):
        return o
    if id(o) in node._non_differentiable:
        o._rg = False
        node._non_differentiable_outputs.add(i)
        return o
    if id(o) in node._dirty:  # changed in place: the input itself takes the new history
        if o._base is not None:
            rebase_view(o, node)
        else:
            rebase_history(o, node, i)
        return o
    fresh = o.grad_fn is None and not o._rg and all(o is not t for t in inputs)
    # An input returned as-is becomes a view of it, so the input keeps its own history.
    base = o if o._base is None else o._base
    t = o if fresh else Tensor._wrap(o._data, o.device, None, 0, base)
    set_history(t, node, i)
    return t


class FunctionCtx(BackwardCFunction):
    """The type of `ctx` (for annotations)."""


ONCE_DIFFERENTIABLE_MESSAGE = (
    "trying to differentiate twice a function that was marked with @once_differentiable"
)


class DelayedError(Function):
    """Outputs of a once-differentiable backward: differentiating them again raises."""

    @staticmethod
    def forward(ctx: Any, *tensors: Any) -> Any:
        """The tensors themselves (as views), now with this node as history."""
        return tensors if len(tensors) != 1 else tensors[0]

    @staticmethod
    def backward(ctx: Any, *grads: Any) -> Any:
        """Refuse: the backward that made these outputs cannot be differentiated."""
        raise RuntimeError(ONCE_DIFFERENTIABLE_MESSAGE)


def once_differentiable(fn: Callable) -> Callable:
    """Decorate a Function's `backward` that is not itself differentiable, as PyTorch's.

    It runs with grad mode off; when grad mode was on and a gradient it got requires grad
    (`create_graph=True`), its outputs hang off a node that raises if differentiated.
    """

    @functools.wraps(fn)
    def wrapper(ctx: Any, *args: Any) -> Any:
        with no_grad():
            outputs = fn(ctx, *args)
        if not grad_enabled.get():
            return outputs
        if not any(isinstance(a, Tensor) and a._rg for a in args):
            return outputs
        many = isinstance(outputs, tuple)
        values = outputs if many else (outputs,)
        fake = [_fake_requires_grad(v) for v in values]
        errors = DelayedError.apply(*[v for v in fake if isinstance(v, Tensor)])
        errors = errors if isinstance(errors, tuple) else (errors,)
        out = iter(errors)
        result = tuple(next(out) if isinstance(v, Tensor) else v for v in fake)
        return result if many else result[0]

    return wrapper


def _fake_requires_grad(value: Any) -> Any:
    # As PyTorch: an alias that requires grad, so the DelayedError node records.
    if not isinstance(value, Tensor):
        return value
    alias = value.detach()
    alias.requires_grad_(True)
    return alias
